"""Inputs of the deformation-transfer benchmark: Sumner's cat and lion, the horse gallop, a generated
tube, heuristic horse/lion markers, and the measures (errors relative to a bounding-box diagonal,
triangle rotation angles, the nearest-point baseline).

The measures are written here with numpy only (SVD polar decomposition, k-d tree), independent of
``anim_signals.transfer``; the meshes are read with the core's OBJ / markers / PC2 readers, the same
inputs a user gives the tool.
"""

from __future__ import annotations

import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from anim_signals.meshio.meshcache import read_pc2
from anim_signals.transfer import TriangleMesh, read_markers, read_obj

# --------------------------------------------------------------------------------------------------
# shared data


@dataclass
class CatLion:
    cat: TriangleMesh
    lion: TriangleMesh
    cats: np.ndarray  # (9, 7207, 3) cat poses 1..9
    lions: np.ndarray  # (9, 5000, 3) Sumner's lion poses 1..9 (his transfer results)
    markers: np.ndarray  # (55, 2) cat vertex, lion vertex
    comments: tuple[str, ...]


def cat_lion_paths(root: Path) -> list[Path]:
    folder = root / "cat_lion_poses"
    return [folder / "cat-poses.tgz", folder / "lion-poses.tgz", folder / "markers-cat-lion.yml"]


def load_cat_lion(root: Path) -> CatLion | None:
    """The cat and lion references, the 9 pose pairs and the shipped markers (None when absent)."""
    paths = cat_lion_paths(root)
    if not all(p.is_file() for p in paths):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        for archive in paths[:2]:
            with tarfile.open(archive) as tar:
                tar.extractall(tmp, filter="data")
        folder = Path(tmp)
        cat = read_obj(folder / "cat-poses" / "cat-reference.obj", name="cat")
        lion = read_obj(folder / "lion-poses" / "lion-reference.obj", name="lion")
        cats = np.stack([read_obj(folder / "cat-poses" / f"cat-{i:02d}.obj").vertices for i in range(1, 10)])
        lions = np.stack([read_obj(folder / "lion-poses" / f"lion-{i:02d}.obj").vertices for i in range(1, 10)])
    markers = read_markers(paths[2])
    return CatLion(cat, lion, cats, lions, markers.markers, markers.comments)


def horse_paths(root: Path) -> list[Path]:
    folder = root / "horse_gallop"
    return [folder / "horse_gallop_reference.obj", folder / "horse_gallop.pc2"]


def load_horse(root: Path) -> tuple[TriangleMesh, np.ndarray] | None:
    """The horse (frame 0 as reference) and its 48 gallop frames (None when absent)."""
    obj, pc2 = horse_paths(root)
    if not (obj.is_file() and pc2.is_file()):
        return None
    horse = read_obj(obj, name="horse")
    frames, _, _ = read_pc2(pc2)
    return horse, np.asarray(frames, dtype=np.float64)


# --------------------------------------------------------------------------------------------------
# generated


def tube(around: int, along: int, radius: float = 0.15, length: float = 1.0) -> TriangleMesh:
    """A closed tube along z from 0 to ``length`` (side quads split, caps as fans), outward-facing."""
    ang = 2 * np.pi * np.arange(around) / around
    rings = [np.stack([radius * np.cos(ang), radius * np.sin(ang), np.full(around, length * j / along)], axis=1)
             for j in range(along + 1)]
    verts = np.concatenate(rings + [np.array([[0.0, 0.0, 0.0], [0.0, 0.0, length]])])
    bottom, top = len(verts) - 2, len(verts) - 1
    i = np.arange(around)
    faces = []
    for j in range(along):
        a, b = j * around + i, j * around + (i + 1) % around
        c, d = b + around, a + around
        faces += [np.stack([a, b, c], 1), np.stack([a, c, d], 1)]
    faces += [np.stack([np.full(around, bottom), (i + 1) % around, i], 1),
              np.stack([np.full(around, top), along * around + i, along * around + (i + 1) % around], 1)]
    return TriangleMesh(verts, np.concatenate(faces), name="tube")


def bend(points: np.ndarray, angle: float, twist: float = 0.0, length: float = 1.0) -> np.ndarray:
    """Twist about z by ``twist * z / length`` radians, then bend the z-axis [0, length] into an arc of ``angle``."""
    p = np.asarray(points, dtype=float)
    phi = twist * p[:, 2] / length
    x = p[:, 0] * np.cos(phi) - p[:, 1] * np.sin(phi)
    y = p[:, 0] * np.sin(phi) + p[:, 1] * np.cos(phi)
    if abs(angle) < 1e-12:
        return np.stack([x, y, p[:, 2]], axis=1)
    k = angle / length
    rad = 1.0 / k - x
    a = k * p[:, 2]
    return np.stack([1.0 / k - rad * np.cos(a), y, rad * np.sin(a)], axis=1)


def tube_motion(mesh: TriangleMesh, n: int = 24, max_bend: float = np.radians(150.0),
                max_twist: float = np.radians(60.0)) -> np.ndarray:
    """``n`` frames: a bend swinging between +-``max_bend`` and a slower twist (one cycle)."""
    t = np.arange(n) / n
    return np.stack([bend(mesh.vertices, max_bend * np.sin(2 * np.pi * s), max_twist * np.sin(np.pi * s))
                     for s in t])


# --------------------------------------------------------------------------------------------------
# heuristic markers between quadrupeds (y up, head towards +z)


def quadruped_landmarks(v: np.ndarray) -> dict[str, int]:
    """Ten landmark vertices of a quadruped standing on the xz-plane, y up, head towards +z.

    Nose tip (most forward vertex above 60 % of the height), tail tip (most backward vertex),
    the four feet (lowest vertex among those below 12 % of the height, per side of the median x
    and per half of those low vertices' z range), and in the body slab halfway between front and
    back feet (2 % of the length thick) its top (back), bottom (belly) and two sides (flanks).
    Pose-dependent on purpose: it needs the feet on the ground and the head above the body.
    """
    lo, hi = v.min(axis=0), v.max(axis=0)
    height, length = hi[1] - lo[1], hi[2] - lo[2]
    out: dict[str, int] = {}
    high = np.flatnonzero(v[:, 1] > lo[1] + 0.6 * height)
    out["nose tip"] = int(high[np.argmax(v[high, 2])])
    out["tail tip"] = int(np.argmin(v[:, 2]))
    low = np.flatnonzero(v[:, 1] < lo[1] + 0.12 * height)
    zmid = 0.5 * (v[low, 2].min() + v[low, 2].max())
    xmid = float(np.median(v[:, 0]))
    for side, sx in (("left", 1.0), ("right", -1.0)):
        for end, sz in (("front", 1.0), ("back", -1.0)):
            sel = low[(sx * (v[low, 0] - xmid) > 0) & (sz * (v[low, 2] - zmid) > 0)]
            out[f"{end} {side} foot"] = int(sel[np.argmin(v[sel, 1])])
    front = v[[out["front left foot"], out["front right foot"]], 2].mean()
    back = v[[out["back left foot"], out["back right foot"]], 2].mean()
    slab = np.flatnonzero(np.abs(v[:, 2] - 0.5 * (front + back)) < 0.02 * length)
    out["back"] = int(slab[np.argmax(v[slab, 1])])
    out["belly"] = int(slab[np.argmin(v[slab, 1])])
    out["left flank"] = int(slab[np.argmax(v[slab, 0])])
    out["right flank"] = int(slab[np.argmin(v[slab, 0])])
    return out


# --------------------------------------------------------------------------------------------------
# measures


def centred(x: np.ndarray) -> np.ndarray:
    return x - x.mean(axis=-2, keepdims=True)


def bbox_diagonal(x: np.ndarray) -> np.ndarray:
    """Bounding-box diagonal of each pose ``(..., V, 3)``."""
    return np.linalg.norm(x.max(axis=-2) - x.min(axis=-2), axis=-1)


def relative_distances(got: np.ndarray, truth: np.ndarray, *, centre: bool = True, rotate: bool = False) -> np.ndarray:
    """Per-vertex distances ``(n, V)`` relative to each true pose's bounding-box diagonal.

    ``centre``: both poses moved to their vertex mean first (shapes compared up to translation);
    ``rotate``: also the best rotation of ``got`` onto ``truth`` (Kabsch; up to a rigid motion).
    """
    got = np.asarray(got, dtype=float).reshape(truth.shape)
    if centre or rotate:
        got, truth = centred(got), centred(truth)
    if rotate:
        u, _, vt = np.linalg.svd(np.swapaxes(truth, -1, -2) @ got)
        d = np.sign(np.linalg.det(u @ vt))
        u[..., :, 2] *= d[..., None]
        got = got @ np.swapaxes(u @ vt, -1, -2)
    diag = bbox_diagonal(truth)
    return np.linalg.norm(got - truth, axis=-1) / diag[..., None]


def summary(dist: np.ndarray) -> dict[str, float]:
    """Mean, 99th percentile and max of relative distances, and the share of them above 3 %, in percent."""
    return {"mean_pct": 100.0 * float(dist.mean()), "p99_pct": 100.0 * float(np.percentile(dist, 99)),
            "max_pct": 100.0 * float(dist.max()), "over3_pct": 100.0 * float((dist > 0.03).mean())}


def rotation_angles(reference: np.ndarray, faces: np.ndarray, poses: np.ndarray) -> np.ndarray:
    """Rotation angle (degrees) of each triangle's deformation gradient, ``(n, F)``.

    Gradient from the triangle's two edges and its scaled normal (Sumner and Popović's frame),
    rotation by the SVD polar decomposition (reflection fixed on the smallest singular value).
    """
    def frames(x):
        p = x[..., faces, :]
        e1, e2 = p[..., 1, :] - p[..., 0, :], p[..., 2, :] - p[..., 0, :]
        n = np.cross(e1, e2)
        n = n / np.sqrt(np.linalg.norm(n, axis=-1, keepdims=True))
        return np.stack([e1, e2, n], axis=-1)

    grads = frames(poses) @ np.linalg.inv(frames(reference))
    u, _, vt = np.linalg.svd(grads)
    d = np.sign(np.linalg.det(u @ vt))
    u[..., :, 2] *= d[..., None]
    r = u @ vt
    cos = np.clip(0.5 * (np.trace(r, axis1=-2, axis2=-1) - 1.0), -1.0, 1.0)
    return np.degrees(np.arccos(cos))


def face_areas(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    p = vertices[faces]
    return 0.5 * np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)


def similarity_from_markers(src: np.ndarray, dst: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Least-squares ``dst ~ s R src + t`` (Umeyama): returns s, R (3, 3), t (3,)."""
    ms, md = src.mean(axis=0), dst.mean(axis=0)
    a, b = src - ms, dst - md
    u, sig, vt = np.linalg.svd(b.T @ a)
    d = np.ones(3)
    d[2] = np.sign(np.linalg.det(u @ vt))
    rot = u @ np.diag(d) @ vt
    scale = float((sig * d).sum() / (a**2).sum())
    return scale, rot, md - scale * rot @ ms


class NearestPointBaseline:
    """What a TD would try first ("Data Transfer" of displacements): each target vertex takes the
    displacement of the nearest source vertex, with the references aligned on the markers.

    ``aligned``: the source reference as placed over the target (by default the similarity
    transform fitted to the markers; or any deformation of it onto the target, e.g. the
    correspondence's non-rigid fit). Displacements are rotated and scaled by the marker similarity.
    """

    def __init__(self, source: TriangleMesh, target: TriangleMesh, markers: np.ndarray,
                 aligned: np.ndarray | None = None) -> None:
        self.scale, self.rotation, shift = similarity_from_markers(source.vertices[markers[:, 0]],
                                                                   target.vertices[markers[:, 1]])
        if aligned is None:
            aligned = self.scale * source.vertices @ self.rotation.T + shift
        _, self.nearest = cKDTree(aligned).query(target.vertices)
        self.source, self.target = source, target

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        disp = (np.asarray(frames) - self.source.vertices)[:, self.nearest]
        return self.target.vertices + self.scale * disp @ self.rotation.T
