"""Triangle meshes for deformation transfer: arrays, input checks, a tiny OBJ reader and markers files.

A mesh is a ``(V, 3)`` float64 vertex array and an ``(F, 3)`` int64 face array (counter-clockwise
seen from outside, zero-based vertex indices).  The checks raise :class:`ValueError` with messages
meant for the user: they name the offending vertices, edges, faces or frames.

The markers format is the one of the public reimplementations of Sumner and Popović,
"Deformation Transfer for Triangle Meshes" (``markers-cat-lion.yml``)::

    source:
      reference: cat-poses/cat-reference.obj
      poses:
        - cat-poses/cat-01.obj
    target:
      reference: lion-poses/lion-reference.obj
    markers:
      - "2653:1316"  # left front paw: source vertex : target vertex, zero-based

Blender ships no YAML library, so :func:`read_markers` parses exactly this structure by hand.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "MarkersFile",
    "TriangleMesh",
    "check_face_areas",
    "check_frames",
    "check_markers",
    "check_topology",
    "edge_faces",
    "parse_markers",
    "read_markers",
    "read_obj",
    "write_obj",
]

_LIST_LIMIT = 8  # items named in one message


def _some(items: Sequence[object] | np.ndarray, limit: int = _LIST_LIMIT) -> str:
    items = list(items)
    text = ", ".join(str(i) for i in items[:limit])
    if len(items) > limit:
        text += f", ... ({len(items)} in all)"
    return text


@dataclass(frozen=True, eq=False)
class TriangleMesh:
    """A triangle mesh: vertices ``(V, 3)`` float64 and faces ``(F, 3)`` int64.

    The constructor converts the arrays and checks what every use needs: shapes, at least one face,
    finite coordinates, face indices in range and no face using a vertex twice.  Topology (loose
    vertices and parts, non-manifold edges, zero-area faces) is checked by :func:`check_topology`,
    which the solvers call for the meshes they solve for.

    Parameters
    ----------
    vertices : array_like, shape (V, 3)
        Positions in scene units.
    faces : array_like of int, shape (F, 3)
        Zero-based vertex indices per triangle.
    name : str, optional
        Used in error messages ("the target has ...").

    Raises
    ------
    ValueError
        On wrong shapes, no faces, NaN/inf coordinates, out-of-range or repeated face indices.

    Examples
    --------
    >>> mesh = TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]], name="tri")
    >>> mesh.n_vertices, mesh.n_faces
    (3, 1)
    >>> TriangleMesh([[0, 0, 0]], [[0, 1, 2]], name="target")
    Traceback (most recent call last):
    ...
    ValueError: the target's faces use vertex indices outside 0..0: 1, 2
    """

    vertices: np.ndarray
    faces: np.ndarray
    name: str = field(default="mesh", compare=False)

    def __post_init__(self) -> None:
        v = np.array(self.vertices, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 3:
            raise ValueError(f"the {self.name}'s vertices must have shape (V, 3), got {v.shape}")
        f = np.asarray(self.faces)
        if f.size == 0:
            raise ValueError(f"the {self.name} has no faces")
        if f.ndim != 2 or f.shape[1] != 3:
            raise ValueError(f"the {self.name}'s faces must be triangles, shape (F, 3), got {f.shape}")
        if not np.issubdtype(f.dtype, np.integer):
            if not np.all(np.asarray(f, dtype=float) == np.round(np.asarray(f, dtype=float))):
                raise ValueError(f"the {self.name}'s face indices must be integers")
        f = np.array(f, dtype=np.int64)
        bad = np.flatnonzero(~np.isfinite(v).all(axis=1))
        if bad.size:
            raise ValueError(f"the {self.name} has NaN or infinite coordinates at vertices {_some(bad)}")
        out = np.unique(f[(f < 0) | (f >= len(v))])
        if out.size:
            raise ValueError(
                f"the {self.name}'s faces use vertex indices outside 0..{len(v) - 1}: {_some(out)}"
            )
        rep = np.flatnonzero((f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 0] == f[:, 2]))
        if rep.size:
            raise ValueError(f"the {self.name} has faces using a vertex twice: faces {_some(rep)}")
        v.setflags(write=False)
        f.setflags(write=False)
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "faces", f)

    @property
    def n_vertices(self) -> int:
        """Number of vertices V."""
        return int(self.vertices.shape[0])

    @property
    def n_faces(self) -> int:
        """Number of triangles F."""
        return int(self.faces.shape[0])

    def with_vertices(self, vertices: np.ndarray) -> TriangleMesh:
        """The same faces with other vertex positions (checked like the constructor)."""
        return TriangleMesh(vertices, self.faces, self.name)

    def named(self, name: str) -> TriangleMesh:
        """This mesh under another name for messages, when it has the default name "mesh"."""
        return self if self.name != "mesh" else TriangleMesh(self.vertices, self.faces, name)

    def bbox_diagonal(self) -> float:
        """Length of the bounding-box diagonal, in scene units."""
        return float(np.linalg.norm(self.vertices.max(axis=0) - self.vertices.min(axis=0)))


def edge_faces(faces: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The undirected edges of a triangle list and the faces around each.

    Parameters
    ----------
    faces : ndarray of int, shape (F, 3)

    Returns
    -------
    edges : ndarray of int64, shape (E, 2)
        Sorted vertex pairs (``edges[:, 0] < edges[:, 1]``), in lexicographic order.
    half_edge_edge : ndarray of int64, shape (3F,)
        For half-edge ``3 f + k`` (from ``faces[f, k]`` to ``faces[f, (k + 1) % 3]``), its edge.
    counts : ndarray of int64, shape (E,)
        Number of faces using each edge (1: boundary, 2: interior, more: non-manifold).

    Examples
    --------
    >>> edges, _, counts = edge_faces(np.array([[0, 1, 2], [0, 2, 3]]))
    >>> edges.tolist(), counts.tolist()
    ([[0, 1], [0, 2], [0, 3], [1, 2], [2, 3]], [1, 2, 1, 1, 1])
    """
    f = np.asarray(faces, dtype=np.int64)
    a = f.reshape(-1)
    b = np.roll(f, -1, axis=1).reshape(-1)
    pairs = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)
    edges, inverse, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    return edges, inverse.reshape(-1), counts


def _components(n_vertices: int, faces: np.ndarray) -> tuple[int, np.ndarray]:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    f = np.asarray(faces, dtype=np.int64)
    rows = np.concatenate([f[:, 0], f[:, 1], f[:, 2]])
    cols = np.concatenate([f[:, 1], f[:, 2], f[:, 0]])
    graph = coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n_vertices, n_vertices))
    count, labels = connected_components(graph, directed=False)
    return int(count), labels


def check_topology(mesh: TriangleMesh, *, area_tolerance: float = 1e-12) -> None:
    """Refuse a mesh that cannot carry a deformation-gradient solve.

    Checks, in this order: loose vertices (in no face), non-manifold edges (used by more than two
    faces), zero-area faces (relative to the mean face area), separate parts (more than one
    connected component: the solve fixes one vertex, so every part would need its own).

    Parameters
    ----------
    mesh : TriangleMesh
    area_tolerance : float, optional
        A face is degenerate when its area is below ``area_tolerance`` times the mean area.

    Raises
    ------
    ValueError
        Naming the loose vertices, the non-manifold edges (as vertex pairs), the degenerate faces,
        or the parts (their sizes and one vertex of each).

    Examples
    --------
    >>> fan = TriangleMesh(np.eye(4, 3), [[0, 1, 2], [0, 1, 3], [1, 0, 2]], name="target")
    >>> check_topology(fan)
    Traceback (most recent call last):
    ...
    ValueError: the target has non-manifold edges (used by more than two faces): (0, 1)
    """
    name = mesh.name
    used = np.zeros(mesh.n_vertices, dtype=bool)
    used[mesh.faces.reshape(-1)] = True
    loose = np.flatnonzero(~used)
    if loose.size:
        raise ValueError(f"the {name} has {loose.size} loose vertices (in no face): {_some(loose)}")
    edges, _, counts = edge_faces(mesh.faces)
    bad = edges[counts > 2]
    if len(bad):
        pairs = [f"({a}, {b})" for a, b in bad]
        raise ValueError(f"the {name} has non-manifold edges (used by more than two faces): {_some(pairs)}")
    check_face_areas(mesh, area_tolerance=area_tolerance)
    count, labels = _components(mesh.n_vertices, mesh.faces)
    if count > 1:
        sizes = np.bincount(labels)
        order = np.argsort(-sizes, kind="stable")
        first = [int(np.flatnonzero(labels == c)[0]) for c in order]
        parts = [f"{sizes[c]} vertices from vertex {v}" for c, v in zip(order, first)]
        raise ValueError(
            f"the {name} has {count} separate parts (loose parts): {_some(parts, 4)}; "
            "join them or separate them into objects"
        )


def check_face_areas(mesh: TriangleMesh, *, area_tolerance: float = 1e-12) -> None:
    """Refuse (near) zero-area faces: their deformation gradients are undefined.

    Parameters
    ----------
    mesh : TriangleMesh
    area_tolerance : float, optional
        A face is degenerate when its area is below ``area_tolerance`` times the mean area.

    Raises
    ------
    ValueError
        Naming the degenerate faces.

    Examples
    --------
    >>> check_face_areas(TriangleMesh([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1, 2]], name="source"))
    Traceback (most recent call last):
    ...
    ValueError: the source has zero-area faces: 0
    """
    p = mesh.vertices[mesh.faces]
    area = 0.5 * np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
    flat = np.flatnonzero(area <= area_tolerance * max(float(area.mean()), float(np.finfo(float).tiny)))
    if flat.size:
        raise ValueError(f"the {mesh.name} has zero-area faces: {_some(flat)}")


def check_frames(frames: np.ndarray | Sequence[np.ndarray], n_vertices: int, *, name: str = "source",
                 frame_numbers: Sequence[int] | None = None) -> np.ndarray:
    """Stack a sequence of vertex arrays into ``(n, V, 3)`` float64, refusing changed topology and NaN.

    Parameters
    ----------
    frames : ndarray, shape (n, V, 3), or sequence of (V, 3) arrays
    n_vertices : int
        The vertex count every frame must have (the mesh's).
    name : str, optional
        Used in messages.
    frame_numbers : sequence of int, optional
        Scene frame numbers to name in messages (default: the indices 0..n-1).

    Returns
    -------
    ndarray of float64, shape (n, V, 3)

    Raises
    ------
    ValueError
        When there are no frames, a frame's vertex count differs from ``n_vertices`` (the topology
        changed: the first such frame is named) or a frame holds NaN / infinite coordinates.

    Examples
    --------
    >>> check_frames([np.zeros((3, 3)), np.zeros((4, 3))], 3, frame_numbers=[10, 11])
    Traceback (most recent call last):
    ...
    ValueError: the source's frame 11 has 4 vertices, the mesh has 3 (its topology changes over time)
    """
    if isinstance(frames, np.ndarray):
        items = list(frames) if frames.ndim == 3 else [frames]
    else:
        items = list(frames)
    if not items:
        raise ValueError(f"the {name} has no frames")
    labels = list(frame_numbers) if frame_numbers is not None else list(range(len(items)))
    if len(labels) != len(items):
        raise ValueError(f"{len(labels)} frame numbers for {len(items)} frames")
    out = np.empty((len(items), n_vertices, 3))
    for i, item in enumerate(items):
        a = np.asarray(item, dtype=np.float64)
        if a.ndim != 2 or a.shape[1] != 3:
            raise ValueError(f"the {name}'s frame {labels[i]} must have shape (V, 3), got {a.shape}")
        if a.shape[0] != n_vertices:
            raise ValueError(
                f"the {name}'s frame {labels[i]} has {a.shape[0]} vertices, the mesh has {n_vertices} "
                "(its topology changes over time)"
            )
        bad = np.flatnonzero(~np.isfinite(a).all(axis=1))
        if bad.size:
            raise ValueError(
                f"the {name}'s frame {labels[i]} has NaN or infinite coordinates at vertices {_some(bad)}"
            )
        out[i] = a
    return out


def check_markers(markers: np.ndarray | Sequence[Sequence[int]], n_source: int, n_target: int) -> np.ndarray:
    """Check marker pairs ``(source vertex, target vertex)``; returns them as ``(K, 2)`` int64.

    Parameters
    ----------
    markers : array_like of int, shape (K, 2)
        Zero-based vertex indices: column 0 on the source, column 1 on the target.
    n_source, n_target : int
        Vertex counts of the two meshes.

    Raises
    ------
    ValueError
        With fewer than 3 markers, markers on missing vertices (named), or one vertex given two
        different partners.

    Examples
    --------
    >>> check_markers([[0, 0], [1, 1], [2, 9]], 3, 5)
    Traceback (most recent call last):
    ...
    ValueError: marker 2 (2:9) is on a missing vertex: the target has 5 vertices (0..4)
    """
    m = np.asarray(markers)
    if m.size == 0:
        m = m.reshape(0, 2)
    if m.ndim != 2 or m.shape[1] != 2:
        raise ValueError(f"markers must be (source vertex, target vertex) pairs, got shape {m.shape}")
    if len(m) < 3:
        raise ValueError(f"at least 3 markers are needed, got {len(m)}")
    m = m.astype(np.int64)
    for k, (s, t) in enumerate(m):
        if not 0 <= s < n_source:
            raise ValueError(
                f"marker {k} ({s}:{t}) is on a missing vertex: the source has {n_source} vertices "
                f"(0..{n_source - 1})"
            )
        if not 0 <= t < n_target:
            raise ValueError(
                f"marker {k} ({s}:{t}) is on a missing vertex: the target has {n_target} vertices "
                f"(0..{n_target - 1})"
            )
    for col, side in ((0, "source"), (1, "target")):
        for v in np.unique(m[:, col]):
            rows = np.flatnonzero(m[:, col] == v)
            partners = np.unique(m[rows, 1 - col])
            if partners.size > 1:
                raise ValueError(
                    f"{side} vertex {v} has markers to different vertices ({_some(partners)}): "
                    f"markers {_some(rows)}"
                )
    return np.unique(m, axis=0)


# ------------------------------------------------------------------------------------------------
# files
# ------------------------------------------------------------------------------------------------


def read_obj(path: str | os.PathLike, *, name: str | None = None) -> TriangleMesh:
    """Read the vertices and faces of a Wavefront OBJ file (polygons are fan-triangulated).

    Only ``v`` and ``f`` lines are read; ``f`` corners may be ``i``, ``i/t``, ``i//n`` or ``i/t/n``,
    with negative indices counting back from the last vertex.  Groups, objects, materials, normals
    and texture coordinates are ignored: all faces form one mesh.

    Parameters
    ----------
    path : str or os.PathLike
    name : str, optional
        The mesh's name for messages (default: the file name).

    Returns
    -------
    TriangleMesh

    Raises
    ------
    ValueError
        On malformed ``v`` / ``f`` lines (with the line number) or a file without faces.
    OSError
        If the file cannot be read.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "quad.obj")
    ...     with open(path, "w") as fh:
    ...         _ = fh.write("v 0 0 0\\nv 1 0 0\\nv 1 1 0\\nv 0 1 0\\nf 1//1 2//1 3//1 4//1\\n")
    ...     mesh = read_obj(path)
    >>> mesh.faces.tolist()
    [[0, 1, 2], [0, 2, 3]]
    """
    label = name if name is not None else Path(path).name
    verts: list[tuple[float, float, float]] = []
    faces: list[tuple[int, int, int]] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            parts = line.split()
            if not parts:
                continue
            key = parts[0]
            if key == "v":
                try:
                    verts.append((float(parts[1]), float(parts[2]), float(parts[3])))
                except (IndexError, ValueError):
                    raise ValueError(f"{path}:{number}: malformed vertex line {line.strip()!r}") from None
            elif key == "f":
                try:
                    corners = [int(c.split("/", 1)[0]) for c in parts[1:]]
                except ValueError:
                    raise ValueError(f"{path}:{number}: malformed face line {line.strip()!r}") from None
                if len(corners) < 3:
                    raise ValueError(f"{path}:{number}: a face needs at least 3 corners")
                idx = [c - 1 if c > 0 else len(verts) + c for c in corners]
                if 0 in corners:
                    raise ValueError(f"{path}:{number}: OBJ vertex indices start at 1")
                for k in range(1, len(idx) - 1):
                    faces.append((idx[0], idx[k], idx[k + 1]))
    if not faces:
        raise ValueError(f"{path}: no faces")
    return TriangleMesh(np.array(verts, dtype=np.float64).reshape(-1, 3), np.array(faces, dtype=np.int64), label)


def write_obj(path: str | os.PathLike, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Write vertices and triangles as a minimal OBJ file (``v`` and one-based ``f`` lines).

    Parameters
    ----------
    path : str or os.PathLike
    vertices : ndarray, shape (V, 3)
    faces : ndarray of int, shape (F, 3)
        Zero-based.
    """
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3) + 1
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(f"v {x:.9g} {y:.9g} {z:.9g}\n" for x, y, z in v)
        fh.writelines(f"f {a} {b} {c}\n" for a, b, c in f)


@dataclass(frozen=True, eq=False)
class MarkersFile:
    """The content of a markers file: mesh paths (resolved against the file's folder) and marker pairs.

    Attributes
    ----------
    source_reference, target_reference : Path or None
    source_poses, target_poses : tuple of Path
    markers : ndarray of int64, shape (K, 2)
        Zero-based ``(source vertex, target vertex)`` pairs, in file order.
    comments : tuple of str
        The comment after each marker ("" when none), e.g. ``"left front paw left side"``.
    """

    source_reference: Path | None
    source_poses: tuple[Path, ...]
    target_reference: Path | None
    target_poses: tuple[Path, ...]
    markers: np.ndarray
    comments: tuple[str, ...]


def _split_comment(line: str) -> tuple[str, str]:
    quote = ""
    for i, ch in enumerate(line):
        if ch in "\"'":
            quote = "" if quote == ch else (quote or ch)
        elif ch == "#" and not quote and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def parse_markers(text: str, base: str | os.PathLike | None = None) -> MarkersFile:
    """Parse the markers YAML structure (see the module docstring) without a YAML library.

    Parameters
    ----------
    text : str
        The file's content.
    base : str or os.PathLike, optional
        Folder the mesh paths are relative to (default: kept relative).

    Returns
    -------
    MarkersFile

    Raises
    ------
    ValueError
        On lines outside the structure, markers that are not ``"source:target"`` integer pairs,
        or a file without markers; the line number is given.

    Examples
    --------
    >>> m = parse_markers('markers:\\n  - "12:7"  # nose\\n  - 3:4\\n')
    >>> m.markers.tolist(), m.comments
    ([[12, 7], [3, 4]], ('nose', ''))
    """
    root = Path(base) if base is not None else None

    def path_of(value: str) -> Path:
        p = Path(_unquote(value))
        return root / p if root is not None and not p.is_absolute() else p

    refs: dict[str, Path | None] = {"source": None, "target": None}
    poses: dict[str, list[Path]] = {"source": [], "target": []}
    markers: list[tuple[int, int]] = []
    comments: list[str] = []
    section = ""  # "source", "target", "markers" or "" (ignored top-level key)
    sub = ""  # "poses" inside source/target
    for number, raw in enumerate(text.splitlines(), 1):
        body, comment = _split_comment(raw)
        if not body.strip() or body.strip() == "---":
            continue
        indent = len(body) - len(body.lstrip(" "))
        item = body.strip()
        if indent == 0 and not item.startswith("-"):
            key, sep, rest = item.partition(":")
            if not sep:
                raise ValueError(f"line {number}: expected 'key:', got {item!r}")
            section, sub = key.strip(), ""
            if section == "markers" and rest.strip() and rest.strip() != "[]":
                raise ValueError(f"line {number}: markers must be a list, one '- \"source:target\"' a line")
            continue
        if section == "markers":
            if not item.startswith("-"):
                raise ValueError(f"line {number}: expected a marker '- \"source:target\"', got {item!r}")
            value = _unquote(item[1:])
            s, sep, t = value.partition(":")
            try:
                if not sep:
                    raise ValueError
                markers.append((int(s), int(t)))
            except ValueError:
                raise ValueError(f"line {number}: a marker must be 'source:target' vertex indices, got {value!r}") from None
            comments.append(comment)
        elif section in ("source", "target"):
            if item.startswith("-"):
                if sub != "poses":
                    raise ValueError(f"line {number}: a list item outside 'poses:'")
                poses[section].append(path_of(item[1:]))
                continue
            key, sep, rest = item.partition(":")
            if not sep:
                raise ValueError(f"line {number}: expected 'key: value', got {item!r}")
            key, rest = key.strip(), rest.strip()
            sub = key
            if key == "reference":
                refs[section] = path_of(rest) if rest else None
            elif key == "poses" and rest and rest != "[]":
                raise ValueError(f"line {number}: poses must be a list, one '- path' a line")
        # other top-level sections are ignored
    if not markers:
        raise ValueError("the markers file has no markers (expected a 'markers:' list)")
    return MarkersFile(
        source_reference=refs["source"],
        source_poses=tuple(poses["source"]),
        target_reference=refs["target"],
        target_poses=tuple(poses["target"]),
        markers=np.array(markers, dtype=np.int64).reshape(-1, 2),
        comments=tuple(comments),
    )


def read_markers(path: str | os.PathLike) -> MarkersFile:
    """Read a markers file (see :func:`parse_markers`); mesh paths are resolved against its folder.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    MarkersFile

    Raises
    ------
    ValueError
        On a malformed file (with the file name and line).
    OSError
        If the file cannot be read.
    """
    p = Path(path)
    try:
        return parse_markers(p.read_text(encoding="utf-8"), p.parent)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None
