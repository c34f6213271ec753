"""The pose space stored on Blender data: an ID-property group on the object (plus, for meshes, the
shape keys of the pose-space object), read back into a :class:`PoseSpace` with a cache keyed by
the stored version.

Meshes: a NEW object ``"<source>.posespace"`` (a copy of the source: for MESH a mesh holding the
evaluated geometry and no modifiers, for SHAPE_KEYS a copy without its shape keys and without
cache modifiers). Its shape keys hold the shape signal h so Blender blends vertices natively:
"Basis" = h0, then one relative key per component ``"PoseSpace.01"``, ``"PoseSpace.02"`` ...
with coordinates h0 + s_j H[:, j], where s_j = max_i |x_ij| over the frames so that the key
values of the frames lie in [-1, 1] (sliders widened to [-10, 10] for extrapolation).
Armatures: the pose space is stored on the armature object itself (its pose is what the canvas
drives); h0 and H (channels x m, small) live in the ID property.
Both: ``ob["anim_signals_pose_space"]`` (:data:`PROP`), an ID-property group of plain lists:

========================  ====================================================================
``version``               1
``kind``                  ``"MESH"`` (h in shape keys) or ``"ARMATURE"`` (h in this group)
``shape_space``           meshes: ``"VERTEX"`` (h in shape keys) or ``"GRADIENT"``: h0 and H in
                          this group, rows of deformation gradients (see :mod:`.gradient`),
                          with ``gradient_reference`` (3V,) the reference pose and
                          ``gradient_faces`` (3F,) its triangles; no shape keys, posing writes
                          the decoded vertex positions, the Poisson factorisation is rebuilt
                          on first use and cached with the model
``token``                 random hex, new on every save (cache key of :func:`load_space`)
``source``                group: ``object``, ``type`` (ACTION / SHAPE_KEYS / MESH), ``action``,
                          ``frame_start``, ``frame_end``, ``frame_step``, ``fps``, ``tolerance``
                          (0: exact), ``tolerance_units`` ("" or "deg")
``source_frames``         (n,) the scene frames that were sampled (rows of the latent coords)
``n m l k d``             ints: frames, components, RBF sites, control points, values per frame
``model_keys shapes``     the entries of ``PoseSpace.to_dict()`` stored below, and the shape of
                          each array (arrays are stored flat, doubles; ``site_order`` ints)
model entries             ``latent`` (n, m) x_i (unscaled), ``positions`` (n, 2) p_i,
                          ``site_order`` (n,) (sites = positions[site_order[:l]]), ``sites``
                          (l, 2), ``weights`` (l, m), ``affine`` (3, m) (the thin-plate g),
                          ``control`` (k, 2), ``knots`` (k+4,), ``params`` and ``frames`` (n',)
                          (the time signal: n' = n after a build, other after a resample or a
                          sketch), ``pins`` (q, 3) rows (frame index, x, y), ``orthonormal``,
                          ``residual``, ``row_size``, ``site_count`` ... (whatever the core's
                          ``to_dict`` holds, so new core fields are kept); ``h0`` (d,) and ``H``
                          (d, m) for armatures only (meshes: the shape keys)
``scales``                (m,) s_j: key value = x_j / s_j (meshes); 1 for armatures
``key_names``             (m,) names of the component shape keys (meshes)
``channel_*``             armatures: ``channel_paths``, ``channel_indices``, ``channel_kinds``,
                          ``channel_owners``, ``channel_modes`` (one per value) and
                          ``channel_scale`` (d,): weights; h models channel x weight (location
                          2 / figure height, quaternion components 2, angles 1) so the
                          tolerance is in radians-equivalent; decoded values are divided by it
``error_rms error_max``   reconstruction error of the build (per vertex, or degrees)
========================  ====================================================================
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from ...anim_signals.manifolds.clips import quaternion_groups
from ...anim_signals.posespace import PoseSpace, shape_from_keys
from ..blender_data.actions import id_read_only_reason
from ..blender_data.armatures import PoseWriter
from ..blender_data.shape_keys import read_key_block_coords
from ..common.model_cache import ModelCache
from ..common.transaction import current_transaction
from .gradient import GradientRows

__all__ = [
    "BAKE_MARK",
    "KEY_PREFIX",
    "PROP",
    "SLIDER_RANGE",
    "SUFFIX",
    "Binding",
    "PoseSpaceDataError",
    "cached",
    "forget",
    "is_space_object",
    "load_info",
    "load_space",
    "save_space",
    "space_info",
    "space_object",
    "space_of",
    "space_stamp",
    "store",
]

PROP = "anim_signals_pose_space"
SUFFIX = ".posespace"
KEY_PREFIX = "PoseSpace."
VERSION = 1
SLIDER_RANGE = 10.0  # Blender's widest shape-key slider range
BAKE_MARK = "anim_signals_pose_space_bake"  # on baked actions: the pose-space object's name


class PoseSpaceDataError(ValueError):
    """A stored pose space that cannot be loaded (its shape keys were removed or changed)."""


def is_space_object(ob) -> bool:
    """``ob`` holds a pose space (its ID property)."""
    return ob is not None and PROP in ob.keys()


def _flat(a) -> list[float]:
    return [float(v) for v in np.asarray(a, dtype=float).ravel()]


def store(ob, space: PoseSpace, extra: Mapping[str, Any] | None = None) -> None:
    """Write the model (every entry of ``PoseSpace.to_dict()``: arrays flat, with their shapes in
    ``shapes``; scalars as they are) and ``extra`` entries into ``ob[PROP]``, keeping entries not
    given. Meshes leave h0 and H out (they are the shape keys). The group as it was is recorded on
    the running transaction, so an operator failing later puts it back."""
    current_transaction().keep_item(ob, PROP)
    old = ob.get(PROP)
    group: dict[str, Any] = old.to_dict() if old is not None and hasattr(old, "to_dict") else {}
    if extra:
        group.update(extra)
    kind = group.get("kind", "MESH")
    in_keys = kind == "MESH" and group.get("shape_space", "VERTEX") == "VERTEX"  # h0 and H are the shape keys
    if in_keys:  # what a gradient-space build of this object left behind
        for stale in ("h0", "H", "gradient_reference", "gradient_faces"):
            group.pop(stale, None)
    shapes: dict[str, list[int]] = {}
    model_keys: list[str] = []
    for name, value in space.to_dict().items():
        if in_keys and name in ("h0", "H"):
            continue
        model_keys.append(name)
        if isinstance(value, np.ndarray):
            a = np.asarray(value)
            group[name] = [int(v) for v in a.ravel()] if a.dtype.kind in "iub" else _flat(a)
            shapes[name] = [int(x) for x in a.shape]
        elif isinstance(value, (bool, np.bool_)):
            group[name] = bool(value)
        elif isinstance(value, (int, np.integer)):
            group[name] = int(value)
        else:
            group[name] = float(value)
    group.update({
        "version": VERSION,
        "token": uuid.uuid4().hex,
        "n": space.n, "m": space.m, "l": space.l, "k": space.k, "d": int(space.shape.h0.size),
        "model_keys": model_keys,
        "shapes": shapes,
    })
    ob[PROP] = group


def space_object(ob):
    """The object holding the pose space of ``ob``: ``ob`` itself when it holds one, else the
    ``"<name>.posespace"`` object built from it (or any pose-space object whose source it is), or None."""
    if ob is None:
        return None
    if is_space_object(ob):
        return ob
    cand = bpy.data.objects.get(ob.name + SUFFIX)
    if cand is not None and is_space_object(cand):
        return cand
    for other in bpy.data.objects:
        if is_space_object(other):
            src = other[PROP].get("source")
            if src is not None and src.get("object") == ob.name:
                return other
    return None


def space_stamp(ob) -> str | None:
    """A string that changes whenever the pose space stored for ``ob`` is saved again (the stored
    ``token``; undo brings the old one back), None without a pose space. For caches of the canvas."""
    ps = space_object(ob)
    if ps is None:
        return None
    return f"{ps.name}:{ps[PROP].get('token', '')}"


def load_info(ob) -> dict[str, Any] | None:
    """The stored group as plain Python (lists, dicts), without rebuilding the model; None if absent."""
    if ob is None or PROP not in ob.keys():
        return None
    group = ob[PROP]
    return group.to_dict() if hasattr(group, "to_dict") else dict(group)


def space_info(ob) -> dict[str, Any] | None:
    """Small facts about the pose space of ``ob`` (for panels): kind, source (dict), n, k, l, m,
    frames of the time signal (first, last), error_rms, error_max, pins count. None if absent."""
    ps = space_object(ob)
    if ps is None:
        return None
    g = ps[PROP]
    frames = g.get("frames")
    return {
        "object": ps.name, "kind": g.get("kind"), "source": dict(g.get("source").to_dict()) if g.get("source") else {},
        "n": int(g.get("n", 0)), "k": int(g.get("k", 0)), "l": int(g.get("l", 0)), "m": int(g.get("m", 0)),
        "frame_first": float(frames[0]) if frames is not None and len(frames) else 0.0,
        "frame_last": float(frames[-1]) if frames is not None and len(frames) else 0.0,
        "error_rms": float(g.get("error_rms", 0.0)), "error_max": float(g.get("error_max", 0.0)),
        "pins": len(g.get("pins", [])) // 3,
    }


@dataclass
class Binding:
    """What apply_position needs besides the model, resolved once per stored version."""

    kind: str
    scales: np.ndarray  # (m,)
    key_indices: np.ndarray | None = None  # meshes: indices of the component keys in key_blocks
    buffer: np.ndarray | None = None  # meshes: float32 (len(key_blocks),)
    writer: Any = None  # armatures: PoseWriter
    channel_scale: np.ndarray | None = None
    quat_groups: list[np.ndarray] = field(default_factory=list)
    gradient_reference: np.ndarray | None = None  # GRADIENT meshes: (V, 3)
    gradient_faces: np.ndarray | None = None  # GRADIENT meshes: (F, 3)
    name: str = ""
    _gradient: GradientRows | None = None

    @property
    def is_gradient(self) -> bool:
        return self.gradient_faces is not None

    def gradient_rows(self) -> GradientRows:
        """The decoder of a gradient-space model, factorised on first use (then kept with the
        cached model). Raises :class:`PoseSpaceDataError` when the stored mesh no longer carries it."""
        if self._gradient is None:
            assert self.gradient_reference is not None and self.gradient_faces is not None
            try:
                self._gradient = GradientRows(self.gradient_reference, self.gradient_faces, name=f'mesh "{self.name}"')
            except ValueError as err:
                raise PoseSpaceDataError(f'"{self.name}": the stored gradient reference is unusable ({err}): '
                                         "rebuild it") from err
        return self._gradient

    def use_gradient_rows(self, rows: GradientRows) -> None:
        """Adopt a decoder already factorised for this model's reference and triangles (the build's)."""
        assert self.gradient_faces is not None and np.array_equal(rows.space.reference.faces, self.gradient_faces)
        self._gradient = rows


_CACHE: ModelCache[tuple[PoseSpace, Binding]] = ModelCache()  # (object pointer, token, structure) -> loaded


def _arr(group, name: str, shape: tuple[int, ...] | None = None, dtype=float) -> np.ndarray:
    value = group.get(name)
    a = np.asarray(value.to_list() if hasattr(value, "to_list") else (value if value is not None else []), dtype=dtype)
    return a.reshape(shape) if shape is not None else a


def _load_uncached(ob) -> tuple[PoseSpace, Binding]:
    g = ob[PROP]
    if int(g.get("version", 0)) != VERSION:
        raise PoseSpaceDataError(f'"{ob.name}": unknown pose-space version {g.get("version")}')
    m = int(g["m"])
    kind = str(g.get("kind", "MESH"))
    scales = _arr(g, "scales")
    if scales.size != m:
        raise PoseSpaceDataError(f'"{ob.name}": {scales.size} key scales for m = {m}')
    binding = Binding(kind=kind, scales=scales, name=ob.name)
    if kind == "MESH" and str(g.get("shape_space", "VERTEX")) == "GRADIENT":
        d = int(g["d"])
        h0 = _arr(g, "h0", (d,))
        h = _arr(g, "H", (d, m))
        reference = _arr(g, "gradient_reference")
        faces = _arr(g, "gradient_faces", dtype=np.int64)
        n_vertices = len(getattr(ob.data, "vertices", ()))
        if reference.size != 3 * n_vertices or faces.size % 3 or faces.size == 0 or d != 3 * faces.size + 3 \
                or faces.min() < 0 or faces.max() >= n_vertices:
            raise PoseSpaceDataError(f'"{ob.name}" has {n_vertices} vertices, its gradient pose space '
                                     f"{reference.size // 3}: rebuild it")
        binding.gradient_reference = reference.reshape(-1, 3)
        binding.gradient_faces = faces.reshape(-1, 3)
    elif kind == "MESH":
        key = getattr(ob.data, "shape_keys", None)
        names = [str(s) for s in g.get("key_names", [])]
        blocks = key.key_blocks if key is not None else None
        missing = [nm for nm in names if blocks is None or blocks.get(nm) is None]
        if key is None or blocks is None or missing:
            raise PoseSpaceDataError(
                f'"{ob.name}" lost the shape keys of its pose space ({", ".join(missing[:3]) or "Basis"}): rebuild it'
            )
        coords = read_key_block_coords(key, [key.reference_key.name, *names])
        if coords.shape[1] * 3 != int(g["d"]):
            raise PoseSpaceDataError(f'"{ob.name}" has {coords.shape[1]} vertices, its pose space {int(g["d"]) // 3}: rebuild it')
        h0, h = shape_from_keys(coords[0], coords[1:], scales)
        index = {kb.name: i for i, kb in enumerate(blocks)}
        binding.key_indices = np.array([index[nm] for nm in names], dtype=np.int64)
        binding.buffer = np.empty(len(blocks), dtype=np.float32)
    else:
        d = int(g["d"])
        h0 = _arr(g, "h0", (d,))
        h = _arr(g, "H", (d, m))
        paths = [str(s) for s in g.get("channel_paths", [])]
        indices = [int(i) for i in g.get("channel_indices", [])]
        kinds = [str(s) for s in g.get("channel_kinds", [])]
        owners = [str(s) for s in g.get("channel_owners", [])]
        try:
            binding.writer = PoseWriter(ob, paths, indices)
        except ValueError as err:
            raise PoseSpaceDataError(f'"{ob.name}": {err}: rebuild the pose space') from err
        binding.channel_scale = _arr(g, "channel_scale", (d,))
        binding.quat_groups = quaternion_groups(kinds, owners)
    data: dict[str, Any] = {"h0": h0, "H": h}
    shapes = g.get("shapes", {})
    for name in g.get("model_keys", []):
        name = str(name)
        if name in ("h0", "H"):
            continue
        value = g.get(name)
        if name in shapes:
            dims = tuple(int(x) for x in shapes[name])
            dtype = np.int64 if name == "site_order" else float
            data[name] = _arr(g, name, dims, dtype=dtype)
        elif value is not None:
            data[name] = value
    if h0.size != int(g["d"]) or data.get("latent") is None:
        raise PoseSpaceDataError(f'"{ob.name}": inconsistent pose space: rebuild it')
    try:
        space = PoseSpace.from_dict(data)
    except (KeyError, ValueError, TypeError) as err:
        raise PoseSpaceDataError(f'"{ob.name}": the stored pose space cannot be read ({err}): rebuild it') from err
    return space, binding


def _structure(ob) -> tuple:
    """What a :class:`Binding` depends on besides the stored group: the shape keys' names (their
    indices are bound) and the vertex count, or the pose bones' names and rotation modes. The user
    can rename, reorder or remove those without saving the pose space again; a cache keyed by the
    token alone would then write into the wrong key or bone. Cheap: names only, no coordinates."""
    data = getattr(ob, "data", None)
    if ob.type == "ARMATURE" and ob.pose is not None:
        return tuple((pb.name, pb.rotation_mode) for pb in ob.pose.bones)
    key = getattr(data, "shape_keys", None)
    names = tuple(kb.name for kb in key.key_blocks) if key is not None else ()
    return (len(getattr(data, "vertices", ())), names)


def cached(ob) -> tuple[PoseSpace, Binding]:
    """The model stored on the pose-space object ``ob`` and its :class:`Binding`, loaded once per
    stored version and structure of its keys / bones. Raises :class:`PoseSpaceDataError`."""
    token = str(ob[PROP].get("token", ""))
    key = (ob.as_pointer(), token, _structure(ob))
    return _CACHE.get(key, lambda: _load_uncached(ob))


def forget(ob) -> None:
    """Drop the cached loads of ``ob`` (after it was written anew)."""
    _CACHE.forget(ob.as_pointer())


def load_space(ob, *, use_cache: bool = True) -> PoseSpace | None:
    """The pose space stored for ``ob`` (the pose-space object, or a source that has one), rebuilt
    as a :class:`PoseSpace` (meshes: h0 and H read back from the shape keys, float32 as Blender
    blends them). None when there is none; raises :class:`PoseSpaceDataError` when the stored data
    no longer fits the object (shape keys removed, vertex count changed). Cached per stored version
    (``token``): cheap to call on every redraw; ``use_cache=False`` re-reads."""
    ps = space_object(ob)
    if ps is None:
        return None
    if not use_cache:
        forget(ps)
    return cached(ps)[0]


def space_of(ob) -> PoseSpace | None:
    """The pose space stored for ``ob``, or None: also when there is none or its stored data no
    longer fits the object. Cached (see :func:`load_space`): cheap enough for poll() and redraws."""
    if ob is None:
        return None
    try:
        return load_space(ob)
    except (ValueError, KeyError, TypeError, ReferenceError):
        return None


def save_space(ob, space: PoseSpace) -> None:
    """Store an edited model (pins, time signal, stroke, resample) on the pose-space object of
    ``ob``. The shape signal is not rewritten for meshes (the edits keep h): ``space.m`` must match
    the stored one. Raises ValueError when there is no pose space or it is read-only."""
    ps = space_object(ob)
    if ps is None:
        raise ValueError(f'"{getattr(ob, "name", ob)}" has no pose space: build one first')
    reason = id_read_only_reason(ps, ps.data)
    if reason:
        raise ValueError(reason)
    g = ps[PROP]
    if int(g.get("m", -1)) != space.m or int(g.get("d", -1)) != space.shape.h0.size:
        raise ValueError(f'The model (m {space.m}) does not match the pose space stored on "{ps.name}" (m {g.get("m")}): '
                         "rebuild instead")
    store(ps, space)


