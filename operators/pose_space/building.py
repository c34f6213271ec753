"""Building a pose space: the frames of a :class:`~.sources.BuildPlan` through the core
(Cashman and Hormann's time, pose and shape signals), then stored on Blender data.

:func:`iter_build` reads and builds step by step and writes nothing; :func:`write_build` is the
only step that writes (a ``"<source>.posespace"`` mesh object with the shape keys, or the
armature's ID property; see :mod:`.storage`); :func:`build` runs all three for scripts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from ...anim_signals import posespace
from ...anim_signals.posespace import PoseSpace, default_tolerance, is_static, key_scales, key_targets
from ..blender_data.meshes import (
    CACHE_MODIFIERS,
    evaluated_mesh_copy,
    mesh_copy_without_shape_keys,
    new_object_copy,
    replace_mesh,
    set_mesh_vertices,
)
from ..blender_data.shape_keys import write_shape_key_basis
from .gradient import GradientRows
from .sources import BuildPlan, PoseSpaceInputError, build_plan, read_frames
from .storage import KEY_PREFIX, PROP, SLIDER_RANGE, SUFFIX, cached, forget, is_space_object, store

__all__ = ["BuildSummary", "build", "iter_build", "write_build"]


def iter_build(plan: BuildPlan) -> Generator[float, None, PoseSpace]:
    """Read the frames and build the model, step by step: yields progress in [0, 1]; returns the
    :class:`PoseSpace` (also in ``plan.space``). Raises :class:`PoseSpaceInputError` (topology
    change, static sequence, core refusal); nothing in Blender is changed."""
    ob = plan.source_object
    try:
        z, labels = yield from read_frames(plan)
    except ReferenceError as err:  # the source was removed between two steps of a modal build
        raise PoseSpaceInputError(f'The source object "{plan.object_name}" was removed while its frames were '
                                  "read: nothing written") from err
    bad = ~np.isfinite(z)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        what = f"channel {labels[col]}" if labels else f"vertex {col // 3}"
        raise PoseSpaceInputError(f"Cannot build a pose space from non-finite data: frame {plan.frames[row]:g}, {what}")
    plan.z = z
    zs = z * plan.channel_scale if plan.channel_scale is not None else z
    if plan.shape_space == "GRADIENT":
        zs = yield from _encode_gradients(plan, z)
    if is_static(zs):
        raise PoseSpaceInputError(
            f'Nothing moves: every frame of "{ob.name}" ({plan.frames[0]:g}-{plan.frames[-1]:g}) has the same '
            f"{'pose' if plan.source == 'ACTION' else 'shape'} (a static sequence, zero variance)"
        )
    yield 0.85
    if plan.exact:
        tol = None
    elif plan.source == "ACTION":
        tol = math.radians(plan.tolerance_deg)
    elif plan.tolerance > 0.0:
        tol = plan.tolerance
    else:
        tol = default_tolerance(z)
    if tol is not None and plan.k is not None and plan.l is not None and plan.m is not None:
        tol = None  # everything given
    plan.tolerance_used = tol
    t1 = time.perf_counter()
    if plan.gradient is not None:
        space = yield from _build_gradient(plan, zs, z, tol)
    else:
        space = _build_core(plan, zs, tol)
        plan.error = space.reconstruction_error(zs)
    plan.seconds_core = time.perf_counter() - t1
    plan.space = space
    yield 1.0
    return space


def _build_core(plan: BuildPlan, rows: np.ndarray, tol: float | None) -> PoseSpace:
    try:
        return posespace.build_pose_space(
            rows, frames=plan.frames, m=plan.m, l=plan.l, k=plan.k, tolerance=tol, pins=plan.pins or None,
            row_size=plan.row_size,
        )
    except ValueError as err:
        raise PoseSpaceInputError(f"Cannot build the pose space: {err}") from err


GRADIENT_TOLERANCE_ROUNDS = 6
"""Builds a gradient-space pose space may take to meet the vertex tolerance (each one core build
and a decode of every frame)."""


def _build_gradient(plan: BuildPlan, rows: np.ndarray, z: np.ndarray,
                    tol: float | None) -> Generator[float, None, PoseSpace]:
    """A pose space on deformation-gradient rows whose *decoded vertices* meet the vertex tolerance
    ``tol`` (RMS per vertex, scene units), so the Tolerance setting means the same in both shape
    spaces. The core's tolerance is on the rows (dimensionless: radians, stretch); a rotation error
    e moves vertices by about e times the mesh's size, so the first build asks for tol / diagonal
    and each further one tightens it by the measured excess, up to
    :data:`GRADIENT_TOLERANCE_ROUNDS` builds (then the closest is kept, with a warning)."""
    assert plan.gradient is not None
    if tol is None:
        space = _build_core(plan, rows, None)
        plan.error = yield from _decoded_error(plan, space, z)
        return space
    row_tol = tol / plan.gradient.translation_scale
    best: tuple[PoseSpace, dict[str, float], float] | None = None
    for _ in range(GRADIENT_TOLERANCE_ROUNDS):
        space = _build_core(plan, rows, row_tol)
        error = yield from _decoded_error(plan, space, z)
        if best is None or error["rms"] < best[1]["rms"]:
            best = (space, error, row_tol)
        if error["rms"] <= tol:
            break
        row_tol *= min(0.5, max(0.1, 0.8 * tol / error["rms"]))
    assert best is not None
    if best[1]["rms"] > tol:
        plan.warnings.append(f"Deformation gradients: the closest model has an RMS error of {best[1]['rms']:.3g} "
                             f"per vertex, above the tolerance {tol:.3g}")
    plan.gradient_tolerance = best[2]
    plan.error = best[1]
    return best[0]


_ENCODE_BATCH = 64  # frames per step: bounds the per-triangle matrices held at once, and Esc stays responsive


def _encode_gradients(plan: BuildPlan, z: np.ndarray) -> Generator[float, None, np.ndarray]:
    """The frames as deformation-gradient rows (see :mod:`.gradient`), the first frame the reference."""
    assert plan.triangles is not None
    try:
        plan.gradient = GradientRows(z[0], plan.triangles, name=f'mesh "{plan.object_name}"')
    except ValueError as err:
        raise PoseSpaceInputError(f"Cannot use the Deformation Gradients shape space: {err}") from err
    rows = np.empty((len(z), plan.gradient.dimension))
    for i in range(0, len(z), _ENCODE_BATCH):
        rows[i:i + _ENCODE_BATCH] = plan.gradient.encode(z[i:i + _ENCODE_BATCH])
        yield 0.8 + 0.05 * min(1.0, (i + _ENCODE_BATCH) / len(z))
    bad = ~np.isfinite(rows)
    if bad.any():  # a frame with a collapsed triangle has no rotation
        row, col = np.argwhere(bad)[0]
        raise PoseSpaceInputError(f"Cannot use the Deformation Gradients shape space: frame {plan.frames[row]:g} "
                                  f"collapses triangle {col // 9} (zero area)")
    return rows


def _decoded_error(plan: BuildPlan, space: PoseSpace, z: np.ndarray) -> Generator[float, None, dict[str, float]]:
    """Reconstruction error per vertex (scene units) of a gradient-space model: its rows decoded to
    vertex positions and compared with the frames read, so the numbers mean what they mean in
    vertex space."""
    assert plan.gradient is not None
    n, v = len(z), plan.gradient.n_vertices
    sq_sum, worst = 0.0, 0.0
    for i in range(0, n, _ENCODE_BATCH):  # rows evaluated batch by batch: (n, 9F+3) is 6x the frames
        decoded = plan.gradient.decode(space.evaluate(space.frames[i:i + _ENCODE_BATCH]))
        dist = np.linalg.norm(decoded - z[i:i + _ENCODE_BATCH].reshape(-1, v, 3), axis=2)
        sq_sum += float(np.sum(dist**2))
        worst = max(worst, float(dist.max()))
        yield 0.9
    if not math.isfinite(sq_sum):
        raise PoseSpaceInputError("Cannot build the pose space: its deformation gradients decode to non-finite vertices")
    return {"rms": math.sqrt(sq_sum / (n * v)), "max": worst}


@dataclass
class BuildSummary:
    """A finished build's numbers: the counts n, k, l, m, d and the reconstruction error (per
    vertex in scene units, or per channel in degrees for armatures)."""

    object_name: str = ""  # the pose-space object
    source_object: str = ""
    source: str = ""
    frame_start: float = 0.0
    frame_end: float = 0.0
    n: int = 0
    k: int = 0
    l: int = 0  # noqa: E741  (the paper's name)
    m: int = 0
    d: int = 0
    rms_error: float = 0.0
    max_error: float = 0.0
    error_units: str = ""  # "" (scene units, per vertex) or "deg"
    tolerance: float = 0.0  # in error_units (GRADIENT: gradient values, see .gradient); 0: exact
    shape_space: str = "VERTEX"
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def message(self) -> str:
        unit = " deg" if self.error_units == "deg" else ""
        per = "channel" if self.error_units == "deg" else "vertex"
        tol = f"tolerance {self.tolerance:.3g}{unit}" if self.tolerance > 0.0 else "exact (interpolation)"
        if self.shape_space == "GRADIENT":
            tol = "deformation gradients, " + tol
        return (
            f'Pose space "{self.object_name}" from {self.source.replace("_", " ").lower()} of "{self.source_object}" '
            f"(frames {self.frame_start:g}-{self.frame_end:g}): n {self.n}, k {self.k}, l {self.l}, m {self.m}; "
            f"error per {per} RMS {self.rms_error:.3g}{unit}, max {self.max_error:.3g}{unit} ({tol}); "
            f"{self.seconds:.2f} s"
        )


def _summary(plan: BuildPlan, ps_ob) -> BuildSummary:
    space = plan.space
    assert space is not None and plan.z is not None
    s = BuildSummary(object_name=ps_ob.name, source_object=plan.object_name, source=plan.source,
                     frame_start=float(plan.frames[0]), frame_end=float(plan.frames[-1]), n=space.n, k=space.k,
                     l=space.l, m=space.m, d=int(plan.z.shape[1]), warnings=list(plan.warnings),
                     shape_space=plan.shape_space)
    rms, mx = plan.error.get("rms", 0.0), plan.error.get("max", 0.0)
    tol = plan.tolerance_used or 0.0
    if plan.source == "ACTION":
        s.rms_error, s.max_error, s.error_units, s.tolerance = math.degrees(rms), math.degrees(mx), "deg", math.degrees(tol)
    else:
        s.rms_error, s.max_error, s.tolerance = rms, mx, tol
    return s


def write_build(plan: BuildPlan) -> tuple[Any, BuildSummary]:
    """Store the built pose space: a new ``"<source>.posespace"`` mesh object with the shape keys, or
    the armature's ID property. Returns the pose-space object and the summary."""
    space = plan.space
    assert space is not None and plan.z is not None
    ob = plan.source_object
    extra: dict[str, Any] = {
        "source": {
            "object": ob.name, "type": plan.source, "action": plan.action_name,
            "frame_start": float(plan.frames[0]), "frame_end": float(plan.frames[-1]),
            "frame_step": int(plan.frame_step), "fps": float(plan.fps),
            "tolerance": float(plan.tolerance_used or 0.0),
            "tolerance_units": "deg" if plan.source == "ACTION" else "",
            "gradient_tolerance": float(plan.gradient_tolerance or 0.0),  # GRADIENT: the core's, on the rows
        },
        "source_frames": [float(f) for f in plan.frames],
        "error_rms": float(plan.error.get("rms", 0.0)),
        "error_max": float(plan.error.get("max", 0.0)),
    }
    if plan.source == "ACTION":
        ps_ob = ob
        specs = plan.specs
        assert plan.channel_scale is not None
        extra.update({
            "kind": "ARMATURE",
            "scales": [1.0] * space.m,
            "key_names": [],
            "channel_paths": [s.data_path for s in specs],
            "channel_indices": [int(s.array_index) for s in specs],
            "channel_kinds": [s.kind for s in specs],
            "channel_owners": [s.owner_path for s in specs],
            "channel_modes": [s.rotation_mode or "" for s in specs],
            "channel_scale": [float(v) for v in plan.channel_scale],
        })
        store(ps_ob, space, extra)
    elif plan.gradient is not None:
        ps_ob = _space_mesh_object(plan)
        reference = plan.gradient.space.reference
        set_mesh_vertices(ps_ob.data, reference.vertices)
        extra.update({
            "kind": "MESH", "shape_space": "GRADIENT", "scales": [1.0] * space.m, "key_names": [],
            "gradient_reference": [float(v) for v in reference.vertices.ravel()],
            "gradient_faces": [int(i) for i in reference.faces.ravel()],
        })
        store(ps_ob, space, extra)
    else:
        ps_ob = _space_mesh_object(plan)
        scales = key_scales(space.latent)
        names = [f"{KEY_PREFIX}{j + 1:02d}" for j in range(space.m)]
        h0, targets = key_targets(space.shape, scales)
        keys = list(zip(names, targets, strict=True))
        write_shape_key_basis(ps_ob, h0, keys, slider_min=-SLIDER_RANGE, slider_max=SLIDER_RANGE)
        extra.update({"kind": "MESH", "shape_space": "VERTEX", "scales": [float(v) for v in scales], "key_names": names})
        store(ps_ob, space, extra)
    forget(ps_ob)
    if plan.gradient is not None:  # the factorisation made for the build serves the first drag too
        cached(ps_ob)[1].use_gradient_rows(plan.gradient)
    return ps_ob, _summary(plan, ps_ob)


def _space_mesh_object(plan: BuildPlan):
    """The pose-space object of a mesh source: reused when "<name>.posespace" exists (and is ours),
    with new mesh data; else a copy of the source. The source object is left as it is."""
    ob, scene = plan.source_object, plan.scene
    name = ob.name + SUFFIX
    if plan.source == "MESH":
        mesh = evaluated_mesh_copy(scene, ob, float(plan.frames[0]), name)
    else:
        mesh = mesh_copy_without_shape_keys(ob, name)
    assert plan.z is not None
    if 3 * len(mesh.vertices) != plan.z.shape[1]:  # pragma: no cover - read from the same geometry
        raise PoseSpaceInputError(f"The copy of {ob.name!r} has {len(mesh.vertices)} vertices, the frames "
                                  f"{plan.z.shape[1] // 3}")
    ps_ob = bpy.data.objects.get(name)
    if ps_ob is not None and (ps_ob.library is not None or ps_ob.type != "MESH" or not is_space_object(ps_ob)):
        ps_ob = None  # not ours: make a new one (Blender picks a free name)
    if ps_ob is not None and ps_ob.data is not None and ps_ob.data.shape_keys is not None:
        ps_ob.shape_key_clear()  # the old mesh's Key goes with it (no orphan Key left behind)
    if ps_ob is None:
        ps_ob = new_object_copy(ob, name, scene, drop_properties=(PROP,))
    replace_mesh(ps_ob, mesh)
    for mod in list(ps_ob.modifiers):  # MESH: geometry already evaluated; SHAPE_KEYS: caches only
        if plan.source == "MESH" or mod.type in CACHE_MODIFIERS:
            ps_ob.modifiers.remove(mod)
    ps_ob.matrix_world = ob.matrix_world.copy()
    return ps_ob


def build(ob, scene=None, **options) -> tuple[Any, PoseSpace, BuildSummary]:
    """Plan, read, build and store in one call (headless scripts): returns the pose-space object,
    the model and the summary. ``options`` as for :func:`build_plan`. Raises PoseSpaceInputError."""
    t0 = time.perf_counter()
    plan = build_plan(ob, scene, **options)
    for _ in iter_build(plan):
        pass
    ps_ob, summary = write_build(plan)
    summary.seconds = time.perf_counter() - t0
    assert plan.space is not None
    return ps_ob, plan.space, summary


