"""The pose-space data layer: build a pose space from Blender data, store it on Blender data, load it
back, and pose / bake / resample with it (Cashman & Hormann; core in ``anim_signals.posespace``).

Used by the operators of :mod:`.pose_space_ops` (build, resample, bake) and by the canvas
(navigate, sketch, edit time, pin). Everything that touches animation data goes through
:mod:`.bridge`; the maths is the core's.

Sources (``source``; AUTO picks one from the active object)
    ``ACTION``      an armature's action: the pose vector of every animated pose-bone channel
                    (location, Euler / quaternion rotation, scale), rotations made continuous;
                    one value per row (``row_size`` 1).
    ``SHAPE_KEYS``  a mesh's shape-key animation: vertex positions blended from the key blocks
                    with their animated (or driven) values, before modifiers; row size 3.
    ``MESH``        any mesh whose evaluated geometry changes per frame (Mesh Cache PC2 / MDD,
                    Mesh Sequence Cache / Alembic, cloth, modifiers): the depsgraph's vertex
                    positions frame by frame, every modifier applied; row size 3.

Storage (everything survives save / reload; the user's source object is never modified)
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

Public functions (signatures kept stable for the canvas):
    :func:`build_plan`, :func:`iter_build`, :func:`write_build`, :func:`build`
    :func:`space_object`, :func:`load_space`, :func:`save_space`, :func:`space_info`
    :func:`apply_position`, :func:`apply_time`, :func:`bake_space`, :func:`resample_times`,
    :func:`resampled_space`
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import bpy
import numpy as np

from ..anim_signals import posespace
from ..anim_signals.posespace import PoseSpace, TimeSignal
from . import bridge

PROP = "anim_signals_pose_space"
SUFFIX = ".posespace"
KEY_PREFIX = "PoseSpace."
VERSION = 1
SLIDER_RANGE = 10.0  # Blender's widest shape-key slider range
MIN_FRAMES = posespace.MIN_FRAMES
DEFAULT_TOLERANCE_FRACTION = 0.002  # of the bounding-box diagonal (meshes)
DEFAULT_TOLERANCE_DEG = 0.5  # armatures: radians-equivalent channels
SOURCES = ("AUTO", "ACTION", "SHAPE_KEYS", "MESH")
BAKE_MARK = "anim_signals_pose_space_bake"  # on baked actions: the pose-space object's name
STATIC_SPAN = 1e-6  # relative: a sequence whose values change less than this is static


class PoseSpaceInputError(Exception):
    """Bad input: reported to the user, nothing changed."""


class PoseSpaceDataError(ValueError):
    """A stored pose space that cannot be loaded (its shape keys were removed or changed)."""


# ------------------------------------------------------------------------------------------
# Build: plan (checks, no data read for MESH) -> iter_build (read + core) -> write_build
# ------------------------------------------------------------------------------------------


@dataclass
class BuildPlan:
    source_object: Any  # bpy.types.Object
    object_name: str
    source: str  # ACTION | SHAPE_KEYS | MESH (resolved)
    frames: np.ndarray  # (n,) scene frames sampled
    row_size: int
    scene: Any
    k: int | None = None
    l: int | None = None  # noqa: E741  (the seed's name)
    m: int | None = None
    exact: bool = False
    tolerance: float = 0.0  # 0: automatic (meshes: scene units)
    tolerance_deg: float = DEFAULT_TOLERANCE_DEG  # armatures
    pins: dict[int, np.ndarray] = field(default_factory=dict)
    action_name: str = ""
    fcurves: list = field(default_factory=list)  # ACTION: pose-bone curves
    specs: list = field(default_factory=list)  # ACTION: their channel specs
    channel_scale: np.ndarray | None = None  # ACTION: per channel divisor
    fps: float = 24.0
    frame_step: int = 1
    warnings: list[str] = field(default_factory=list)
    # filled by iter_build
    z: np.ndarray | None = None  # (n, d) as read (armatures: continuous channel values)
    tolerance_used: float | None = None  # in the units of the fit (scene units or radians)
    space: PoseSpace | None = None
    error: dict[str, float] = field(default_factory=dict)
    seconds_read: float = 0.0
    seconds_core: float = 0.0


def _is_space_object(ob) -> bool:
    return ob is not None and PROP in ob.keys()


def _read_only(ob) -> str | None:
    reason = bridge.id_read_only_reason(ob)
    if reason:
        return reason
    data = getattr(ob, "data", None)
    if data is not None:
        reason = bridge.id_read_only_reason(data)
    return reason


def _auto_source(ob) -> str:
    if ob.type == "ARMATURE":
        return "ACTION"
    if ob.type != "MESH":
        raise PoseSpaceInputError(
            f'"{ob.name}" is a {ob.type.lower()} object: a pose space is built from a mesh (shape keys, mesh cache, '
            "simulation) or an armature action"
        )
    if any(mod.show_viewport for mod in ob.modifiers):
        return "MESH"
    if bridge.shape_keys_animated(ob):
        return "SHAPE_KEYS"
    extra = " (its object transforms are animated, but a pose space is about its shape)" if bridge.get_action(ob) else ""
    raise PoseSpaceInputError(
        f'"{ob.name}" has no animation to build a pose space from: no animated shape keys, no mesh cache or '
        f"other modifiers{extra}"
    )


def _frames(start: float, end: float, step: int) -> np.ndarray:
    if end < start:
        raise PoseSpaceInputError(f"The frame range {start:g}-{end:g} is empty: the end must come after the start")
    return np.arange(start, end + 0.5, max(1, int(step)), dtype=np.float64)


def _channel_scale(ob, specs) -> np.ndarray:
    """Weights putting channels on the scale of radians (the model is built on channel x weight,
    decoded values are divided by it): quaternion components 2 (a change e is about 2e radians),
    locations 2 / figure height (as Make Cyclic weighs them), the rest 1."""
    height = bridge.figure_height(ob)
    scale = np.ones(len(specs))
    for j, s in enumerate(specs):
        if s.kind == bridge.QUATERNION:
            scale[j] = 2.0
        elif s.kind == bridge.LOCATION and height > 0.0:
            scale[j] = 2.0 / height
    return scale


def build_plan(
    ob,
    scene=None,
    *,
    source: str = "AUTO",
    frame_start: int | None = None,
    frame_end: int | None = None,
    frame_step: int = 1,
    k: int = 0,
    l: int = 0,  # noqa: E741  (the seed's name)
    m: int = 0,
    tolerance: float = 0.0,
    tolerance_deg: float = DEFAULT_TOLERANCE_DEG,
    exact: bool = False,
    pins: Mapping[int, Sequence[float]] | None = None,
    keep_pins: bool = True,
) -> BuildPlan:
    """Check the input and choose the frames. Raises :class:`PoseSpaceInputError`; changes nothing.

    ``ob``: the active object (a pose-space object stands for its source: a rebuild). ``frame_start``
    / ``frame_end`` None: the action's range (ACTION, SHAPE_KEYS), the Mesh Cache file's range or
    the scene range (MESH). ``k``, ``l``, ``m`` 0: automatic, from the tolerance (``tolerance`` in
    scene units, RMS per vertex, 0: 0.2 % of the bounding-box diagonal; ``tolerance_deg`` for
    armatures) or, with ``exact``, the interpolation case k - 2 = l = m + 1 = n (every frame
    reproduced). ``pins``: frame index (0-based row) -> pose-space position; ``keep_pins`` reuses
    the pins of the pose space already stored for this source.
    """
    scene = scene or bpy.context.scene
    if ob is None:
        raise PoseSpaceInputError("No active object: select an animated mesh or armature")
    if source not in SOURCES:
        raise PoseSpaceInputError(f"Unknown source {source!r}: one of {', '.join(SOURCES)}")
    warnings: list[str] = []
    previous = load_info(ob) if _is_space_object(ob) else None
    if previous is not None and previous.get("kind") == "MESH":
        src = bpy.data.objects.get(str(previous.get("source", {}).get("object", "")))
        if src is None:
            raise PoseSpaceInputError(
                f'"{ob.name}" is a pose space whose source object "{previous.get("source", {}).get("object", "")}" '
                "no longer exists: select an animated mesh or armature"
            )
        warnings.append(f'Rebuilt from the source object "{src.name}"')
        ob = src
    for value, name in ((tolerance, "tolerance"), (tolerance_deg, "rotation tolerance")):
        if not (math.isfinite(value) and value >= 0.0):
            raise PoseSpaceInputError(f"The {name} must be zero (automatic) or positive")
    if frame_step < 1:
        raise PoseSpaceInputError("The frame step must be at least 1")
    kind = _auto_source(ob) if source == "AUTO" else source
    fps = float(scene.render.fps) / float(scene.render.fps_base or 1.0)
    plan = BuildPlan(source_object=ob, object_name=ob.name, source=kind, frames=np.empty(0), row_size=3, scene=scene,
                     k=k or None, l=l or None, m=m or None, exact=bool(exact), tolerance=float(tolerance),
                     tolerance_deg=float(tolerance_deg) or DEFAULT_TOLERANCE_DEG, fps=fps, frame_step=int(frame_step),
                     warnings=warnings)

    if kind == "ACTION":
        if ob.type != "ARMATURE":
            raise PoseSpaceInputError(f'The Action source needs an armature: "{ob.name}" is a {ob.type.lower()} object')
        reason = _read_only(ob)
        if reason:
            raise PoseSpaceInputError(f"{reason}: the pose space is stored on the armature")
        action = _source_action(ob)
        if action is None:
            raise PoseSpaceInputError(f'"{ob.name}" has no animation data (no action to build a pose space from)')
        if getattr(ob.animation_data, "use_tweak_mode", False):
            raise PoseSpaceInputError(f'"{ob.name}" is in NLA tweak mode: exit tweak mode first')
        fcurves, specs, skipped = _pose_curves(ob, action)
        if not fcurves:
            raise PoseSpaceInputError(f'The action "{action.name}" has no pose-bone curves (location, rotation, scale)')
        if skipped:
            warnings.append(f"Left out {skipped} curve(s) that are not pose-bone location / rotation / scale")
        plan.action_name, plan.fcurves, plan.specs, plan.row_size = action.name, fcurves, specs, 1
        plan.channel_scale = _channel_scale(ob, specs)
        lo, hi = bridge.action_frame_range(action, fcurves)
    elif kind == "SHAPE_KEYS":
        if ob.type != "MESH":
            raise PoseSpaceInputError(f'The Shape Keys source needs a mesh: "{ob.name}" is a {ob.type.lower()} object')
        key = ob.data.shape_keys
        if key is None or len(key.key_blocks) < 2:
            raise PoseSpaceInputError(f'"{ob.name}" has no shape keys')
        if not key.use_relative:
            raise PoseSpaceInputError(f'"{ob.name}" uses absolute shape keys: use the Mesh source')
        curves = list(bridge.shape_key_fcurves(key).values())
        action = bridge.get_action(key)
        if action is not None and curves:
            lo, hi = bridge.action_frame_range(action, curves)
            plan.action_name = action.name
        elif bridge.shape_keys_animated(ob):  # driven only
            lo, hi = scene.frame_start, scene.frame_end
        else:
            raise PoseSpaceInputError(f'The shape keys of "{ob.name}" are not animated')
    elif kind == "MESH":
        if ob.type != "MESH":
            raise PoseSpaceInputError(f'The Mesh source needs a mesh: "{ob.name}" is a {ob.type.lower()} object')
        rng = bridge.mesh_cache_frame_range(ob)
        lo, hi = rng if rng is not None else (scene.frame_start, scene.frame_end)
    else:  # pragma: no cover - checked above
        raise PoseSpaceInputError(f"Unknown source {kind!r}")

    start = lo if frame_start is None else frame_start
    end = hi if frame_end is None else frame_end
    plan.frames = _frames(float(start), float(end), frame_step)
    n = plan.frames.size
    if n < MIN_FRAMES:
        raise PoseSpaceInputError(
            f"Too few frames: {n} ({start}-{end}, step {frame_step}); a pose space needs at least {MIN_FRAMES}"
        )
    _check_counts(plan, n)
    if pins:
        plan.pins = {int(i): np.asarray(v, dtype=float).reshape(2) for i, v in pins.items()}
    elif keep_pins:
        stored = _stored_pins_for(ob, plan.source)
        plan.pins = {i: v for i, v in stored.items() if i < n}
    for i in plan.pins:
        if not 0 <= i < n:
            raise PoseSpaceInputError(f"Pinned frame index {i} is outside 0..{n - 1}")
    return plan


def _check_counts(plan: BuildPlan, n: int) -> None:
    if plan.m is not None and not 1 <= plan.m <= n - 1:
        raise PoseSpaceInputError(f"m (shape components) must be between 1 and n - 1 = {n - 1}, got {plan.m}")
    if plan.l is not None and not 3 <= plan.l <= n:
        raise PoseSpaceInputError(f"l (RBF sites) must be between 3 and n = {n}, got {plan.l}")
    if plan.k is not None and not 4 <= plan.k <= n + 2:
        raise PoseSpaceInputError(f"k (control points) must be between 4 and n + 2 = {n + 2}, got {plan.k}")


def _source_action(ob):
    """The armature's action to read: its assigned action, or, when that is a bake of this pose
    space, the action the pose space was built from (if it still exists)."""
    action = bridge.get_action(ob)
    if action is not None and action.get(BAKE_MARK):
        info = load_info(ob)
        original = bpy.data.actions.get(str((info or {}).get("source", {}).get("action", "")))
        if original is not None:
            return original
    return action


def _pose_curves(ob, action):
    if action == bridge.get_action(ob):
        return bridge.pose_bone_fcurves(ob)
    # the original action behind a bake: read it without assigning it
    fcurves = bridge.fcurves_of_action(action, ob)
    bones = ob.pose.bones
    used = []
    for fc in fcurves:
        name = bridge.bone_name_of_path(fc.data_path)
        if name is not None and bones.get(name) is not None and fc.data_path.rsplit(".", 1)[-1] in bridge.POSE_PROPERTIES:
            used.append(fc)
    return used, bridge.channel_specs(ob, used), len(fcurves) - len(used)


def _stored_pins_for(ob, source: str) -> dict[int, np.ndarray]:
    holder = ob if ob.type == "ARMATURE" else bpy.data.objects.get(ob.name + SUFFIX)
    info = load_info(holder) if holder is not None and _is_space_object(holder) else None
    if not info or info.get("source", {}).get("object") != ob.name:
        return {}
    rows = np.asarray(info.get("pins", []), dtype=float).reshape(-1, 3)
    return {int(r[0]): r[1:].copy() for r in rows}


def iter_build(plan: BuildPlan) -> Generator[float, None, PoseSpace]:
    """Read the frames and build the model, step by step: yields progress in [0, 1]; returns the
    :class:`PoseSpace` (also in ``plan.space``). Raises :class:`PoseSpaceInputError` (topology
    change, static sequence, core refusal); nothing in Blender is changed."""
    t0 = time.perf_counter()
    ob, n = plan.source_object, plan.frames.size
    if plan.source == "ACTION":
        z, _ = bridge.read_action_matrix(ob, plan.frames, plan.fcurves)
        labels = [f"{s.label}" for s in plan.specs]
    elif plan.source == "SHAPE_KEYS":
        try:
            z = bridge.read_shape_key_matrix(plan.scene, ob, plan.frames)
        except ValueError as err:
            raise PoseSpaceInputError(str(err)) from err
        labels = []
    else:
        rows = []
        gen = bridge.mesh_sequence_rows(plan.scene, ob, plan.frames)
        try:
            for i, row in enumerate(gen):
                rows.append(row)
                yield 0.8 * (i + 1) / n
        except bridge.TopologyChangeError as err:
            raise PoseSpaceInputError(f'Cannot build a pose space from "{ob.name}": {err}') from err
        finally:
            gen.close()
        z = np.array(rows)
        labels = []
        if z.shape[1] == 0:
            raise PoseSpaceInputError(f'"{ob.name}" has no vertices')
    plan.seconds_read = time.perf_counter() - t0
    bad = ~np.isfinite(z)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        what = f"channel {labels[col]}" if labels else f"vertex {col // 3}"
        raise PoseSpaceInputError(f"Cannot build a pose space from non-finite data: frame {plan.frames[row]:g}, {what}")
    plan.z = z
    zs = z * plan.channel_scale if plan.channel_scale is not None else z
    span = float(np.ptp(zs, axis=0).max())
    size = float(np.abs(zs).max()) or 1.0
    if span <= STATIC_SPAN * max(size, 1e-300):
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
        tol = DEFAULT_TOLERANCE_FRACTION * _bbox_diagonal(zs)
    if tol is not None and plan.k is not None and plan.l is not None and plan.m is not None:
        tol = None  # everything given
    plan.tolerance_used = tol
    t1 = time.perf_counter()
    try:
        space = posespace.build_pose_space(
            zs, frames=plan.frames, m=plan.m, l=plan.l, k=plan.k, tolerance=tol, pins=plan.pins or None,
            row_size=plan.row_size,
        )
    except ValueError as err:
        raise PoseSpaceInputError(f"Cannot build the pose space: {err}") from err
    plan.seconds_core = time.perf_counter() - t1
    plan.error = space.reconstruction_error(zs)
    plan.space = space
    yield 1.0
    return space


def _bbox_diagonal(z: np.ndarray) -> float:
    pts = z.mean(axis=0).reshape(-1, 3)
    return float(np.linalg.norm(np.ptp(pts, axis=0))) or 1.0


@dataclass
class BuildSummary:
    object_name: str = ""  # the pose-space object
    source_object: str = ""
    source: str = ""
    frame_start: float = 0.0
    frame_end: float = 0.0
    n: int = 0
    k: int = 0
    l: int = 0  # noqa: E741  (the seed's name)
    m: int = 0
    d: int = 0
    rms_error: float = 0.0
    max_error: float = 0.0
    error_units: str = ""  # "" (scene units, per vertex) or "deg"
    tolerance: float = 0.0  # in error_units; 0: exact
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def message(self) -> str:
        unit = " deg" if self.error_units == "deg" else ""
        per = "channel" if self.error_units == "deg" else "vertex"
        tol = f"tolerance {self.tolerance:.3g}{unit}" if self.tolerance > 0.0 else "exact (interpolation)"
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
                     l=space.l, m=space.m, d=int(plan.z.shape[1]), warnings=list(plan.warnings))
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
        _store(ps_ob, space, extra)
    else:
        ps_ob = _space_mesh_object(plan)
        x = space.latent
        scales = np.max(np.abs(x), axis=0) if x.size else np.ones(space.m)
        scales = np.where(scales > 0.0, scales, 1.0)
        n_vert = space.shape.h0.size // 3
        names = [f"{KEY_PREFIX}{j + 1:02d}" for j in range(space.m)]
        h0 = space.shape.h0.reshape(n_vert, 3)
        keys = [(names[j], h0 + scales[j] * space.shape.H[:, j].reshape(n_vert, 3)) for j in range(space.m)]
        bridge.write_shape_key_basis(ps_ob, h0, keys, slider_min=-SLIDER_RANGE, slider_max=SLIDER_RANGE)
        extra.update({"kind": "MESH", "scales": [float(v) for v in scales], "key_names": names})
        _store(ps_ob, space, extra)
    _forget(ps_ob)
    return ps_ob, _summary(plan, ps_ob)


def _space_mesh_object(plan: BuildPlan):
    """The pose-space object of a mesh source: reused when "<name>.posespace" exists (and is ours),
    with new mesh data; else a copy of the source. The source object is left as it is."""
    ob, scene = plan.source_object, plan.scene
    name = ob.name + SUFFIX
    if plan.source == "MESH":
        mesh = bridge.evaluated_mesh_copy(scene, ob, float(plan.frames[0]), name)
    else:
        mesh = ob.data.copy()
        mesh.name = name
        if mesh.shape_keys is not None:  # the copy's copied Key: removed outright (no orphan left)
            bpy.data.batch_remove([mesh.shape_keys])
    assert plan.z is not None
    if 3 * len(mesh.vertices) != plan.z.shape[1]:  # pragma: no cover - read from the same geometry
        raise PoseSpaceInputError(f"The copy of {ob.name!r} has {len(mesh.vertices)} vertices, the frames "
                                  f"{plan.z.shape[1] // 3}")
    ps_ob = bpy.data.objects.get(name)
    if ps_ob is not None and (ps_ob.library is not None or ps_ob.type != "MESH" or not _is_space_object(ps_ob)):
        ps_ob = None  # not ours: make a new one (Blender picks a free name)
    if ps_ob is not None and ps_ob.data is not None and ps_ob.data.shape_keys is not None:
        ps_ob.shape_key_clear()  # the old mesh's Key goes with it (no orphan Key left behind)
    if ps_ob is None:
        ps_ob = ob.copy()
        ps_ob.name = name
        for key in list(ps_ob.keys()):
            if key == PROP:
                del ps_ob[key]
        ps_ob.animation_data_clear()
        colls = [c for c in ob.users_collection if c.library is None] or [scene.collection]
        for c in colls:
            c.objects.link(ps_ob)
    old = ps_ob.data
    ps_ob.data = mesh
    if old is not None and old != mesh and old.users == 0:
        bpy.data.meshes.remove(old)
    if mesh.shape_keys is not None:
        ps_ob.shape_key_clear()
    for mod in list(ps_ob.modifiers):  # MESH: geometry already evaluated; SHAPE_KEYS: caches only
        if plan.source == "MESH" or mod.type in bridge.CACHE_MODIFIERS:
            ps_ob.modifiers.remove(mod)
    ps_ob.matrix_world = ob.matrix_world.copy()
    return ps_ob


def build(ob, scene=None, **options) -> tuple[Any, PoseSpace, BuildSummary]:
    """Plan, read, build and store in one call (headless scripts): returns the pose-space object,
    the model and the summary. ``options`` as for :func:`build_plan`. Raises PoseSpaceInputError."""
    t0 = time.perf_counter()
    plan = build_plan(ob, scene, **options)
    gen = iter_build(plan)
    while True:
        try:
            next(gen)
        except StopIteration:
            break
    ps_ob, summary = write_build(plan)
    summary.seconds = time.perf_counter() - t0
    assert plan.space is not None
    return ps_ob, plan.space, summary


# ------------------------------------------------------------------------------------------
# Storage: ID properties (+ shape keys for meshes)
# ------------------------------------------------------------------------------------------


def _flat(a) -> list[float]:
    return [float(v) for v in np.asarray(a, dtype=float).ravel()]


def _store(ob, space: PoseSpace, extra: Mapping[str, Any] | None = None) -> None:
    """Write the model (every entry of ``PoseSpace.to_dict()``: arrays flat, with their shapes in
    ``shapes``; scalars as they are) and ``extra`` entries into ``ob[PROP]``, keeping entries not
    given. Meshes leave h0 and H out (they are the shape keys)."""
    old = ob.get(PROP)
    group: dict[str, Any] = old.to_dict() if old is not None and hasattr(old, "to_dict") else {}
    if extra:
        group.update(extra)
    kind = group.get("kind", "MESH")
    shapes: dict[str, list[int]] = {}
    model_keys: list[str] = []
    for name, value in space.to_dict().items():
        if kind == "MESH" and name in ("h0", "H"):
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
    if _is_space_object(ob):
        return ob
    cand = bpy.data.objects.get(ob.name + SUFFIX)
    if cand is not None and _is_space_object(cand):
        return cand
    for other in bpy.data.objects:
        if _is_space_object(other):
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


_CACHE: dict[tuple[int, str], tuple[PoseSpace, _Binding]] = {}
_CACHE_SIZE = 8


@dataclass
class _Binding:
    """What apply_position needs besides the model, resolved once per stored version."""

    kind: str
    scales: np.ndarray  # (m,)
    key_indices: np.ndarray | None = None  # meshes: indices of the component keys in key_blocks
    buffer: np.ndarray | None = None  # meshes: float32 (len(key_blocks),)
    writer: Any = None  # armatures: bridge.PoseWriter
    channel_scale: np.ndarray | None = None
    quat_groups: list[np.ndarray] = field(default_factory=list)


def _arr(group, name: str, shape: tuple[int, ...] | None = None, dtype=float) -> np.ndarray:
    value = group.get(name)
    a = np.asarray(value.to_list() if hasattr(value, "to_list") else (value if value is not None else []), dtype=dtype)
    return a.reshape(shape) if shape is not None else a


def _load_uncached(ob) -> tuple[PoseSpace, _Binding]:
    g = ob[PROP]
    if int(g.get("version", 0)) != VERSION:
        raise PoseSpaceDataError(f'"{ob.name}": unknown pose-space version {g.get("version")}')
    m = int(g["m"])
    kind = str(g.get("kind", "MESH"))
    scales = _arr(g, "scales")
    if scales.size != m:
        raise PoseSpaceDataError(f'"{ob.name}": {scales.size} key scales for m = {m}')
    binding = _Binding(kind=kind, scales=scales)
    if kind == "MESH":
        key = getattr(ob.data, "shape_keys", None)
        names = [str(s) for s in g.get("key_names", [])]
        blocks = key.key_blocks if key is not None else None
        missing = [nm for nm in names if blocks is None or blocks.get(nm) is None]
        if key is None or blocks is None or missing:
            raise PoseSpaceDataError(
                f'"{ob.name}" lost the shape keys of its pose space ({", ".join(missing[:3]) or "Basis"}): rebuild it'
            )
        coords = bridge.read_key_block_coords(key, [key.reference_key.name, *names])
        if coords.shape[1] * 3 != int(g["d"]):
            raise PoseSpaceDataError(f'"{ob.name}" has {coords.shape[1]} vertices, its pose space {int(g["d"]) // 3}: rebuild it')
        h0 = coords[0].reshape(-1)
        h = ((coords[1:] - coords[0]).reshape(m, -1) / scales[:, None]).T
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
            binding.writer = bridge.PoseWriter(ob, paths, indices)
        except ValueError as err:
            raise PoseSpaceDataError(f'"{ob.name}": {err}: rebuild the pose space') from err
        binding.channel_scale = _arr(g, "channel_scale", (d,))
        from ..anim_signals import motion

        binding.quat_groups = motion.quaternion_groups(kinds, owners)
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


def _cached(ob) -> tuple[PoseSpace, _Binding]:
    token = str(ob[PROP].get("token", ""))
    key = (ob.as_pointer(), token)
    hit = _CACHE.get(key)
    if hit is None:
        hit = _load_uncached(ob)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = hit
    return hit


def _forget(ob) -> None:
    ptr = ob.as_pointer()
    for key in [k for k in _CACHE if k[0] == ptr]:
        del _CACHE[key]


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
        _forget(ps)
    return _cached(ps)[0]


def save_space(ob, space: PoseSpace) -> None:
    """Store an edited model (pins, time signal, stroke, resample) on the pose-space object of
    ``ob``. The shape signal is not rewritten for meshes (the edits keep h): ``space.m`` must match
    the stored one. Raises ValueError when there is no pose space or it is read-only."""
    ps = space_object(ob)
    if ps is None:
        raise ValueError(f'"{getattr(ob, "name", ob)}" has no pose space: build one first')
    reason = _read_only(ps)
    if reason:
        raise ValueError(reason)
    g = ps[PROP]
    if int(g.get("m", -1)) != space.m or int(g.get("d", -1)) != space.shape.h0.size:
        raise ValueError(f'The model (m {space.m}) does not match the pose space stored on "{ps.name}" (m {g.get("m")}): '
                         "rebuild instead")
    _store(ps, space)


# ------------------------------------------------------------------------------------------
# Posing (the per-drag update) and baking
# ------------------------------------------------------------------------------------------


def _pose_values(binding: _Binding, space: PoseSpace, weights: np.ndarray) -> np.ndarray:
    """Armature channel values (..., d) from shape coordinates (..., m): decoded, unscaled,
    quaternions normalised."""
    assert binding.channel_scale is not None
    v = space.shape.decode(weights) / binding.channel_scale
    for cols in binding.quat_groups:
        q = v[..., cols]
        norm = np.linalg.norm(q, axis=-1, keepdims=True)
        v[..., cols] = q / np.where(norm > 0.0, norm, 1.0)
    return v


def apply_position(ob, space: PoseSpace, p) -> np.ndarray:
    """Pose the pose-space object at pose-space point ``p`` (x, y): g(p) written as the m component
    shape-key values (meshes, value = g_j(p) / s_j, clipped to the slider range) or as bone
    transforms (armatures, one foreach_set per bone property). Blender blends the vertices itself.
    This is the per-drag update: a handful of floats, well under a millisecond. Returns the
    written values. Raises ValueError when ``ob`` has no pose space."""
    ps = ob if _is_space_object(ob) else space_object(ob)
    if ps is None:
        raise ValueError(f'"{getattr(ob, "name", ob)}" has no pose space')
    _, binding = _cached(ps)
    w = space.weights_at(np.asarray(p, dtype=float).reshape(2))
    if binding.kind == "MESH":
        values = np.clip(w / binding.scales, -SLIDER_RANGE, SLIDER_RANGE)
        key = ps.data.shape_keys
        assert binding.key_indices is not None
        bridge.set_key_values(key, binding.key_indices, values, binding.buffer)
        ps.update_tag(refresh={"DATA"})
        return values
    values = _pose_values(binding, space, w)
    binding.writer.write(ps, values)
    return values


def apply_time(ob, space: PoseSpace, t: float) -> np.ndarray:
    """Pose the object at time ``t`` of the time signal: :func:`apply_position` at f(t)."""
    p = space.time.evaluate(np.array([float(t)]))[0]
    return apply_position(ob, space, p)


@dataclass
class BakeSummary:
    object_name: str = ""
    action_name: str = ""
    frame_start: int = 0
    frame_end: int = 0
    curves: int = 0
    keys: int = 0
    seconds: float = 0.0

    def message(self) -> str:
        return (f'Baked "{self.object_name}": frames {self.frame_start}-{self.frame_end}, {self.curves} curves, '
                f'{self.keys} keys -> action "{self.action_name}"')


def _is_bake(action) -> bool:
    return bool(action is not None and action.get(BAKE_MARK))


def bake_frames(space: PoseSpace) -> np.ndarray:
    """Whole frames covered by the time signal (the frames a bake keys)."""
    frames = space.time.frames
    lo, hi = math.ceil(float(frames[0]) - 1e-6), math.floor(float(frames[-1]) + 1e-6)
    return np.arange(lo, hi + 1, dtype=np.float64)


def bake_space(ob, space: PoseSpace | None = None, scene=None, *, set_scene_range: bool = False) -> BakeSummary:
    """Keyframes for every whole frame of the time signal: the component shape-key values of the
    pose-space object (a new action on its shape keys) or the bone transforms (a new action
    ``"<source action>.posespace"`` assigned to the armature; the original keeps a fake user).
    LINEAR keys, so each frame is exactly psi(frame). ``space`` None: the stored one. Raises
    ValueError (no pose space, read-only data, NLA tweak mode)."""
    scene = scene or bpy.context.scene
    ps = space_object(ob)
    if ps is None:
        raise ValueError(f'"{getattr(ob, "name", ob)}" has no pose space: build one first')
    space = space if space is not None else load_space(ps)
    assert space is not None
    _, binding = _cached(ps)
    reason = _read_only(ps)
    frames = bake_frames(space)
    if frames.size < 1:
        raise ValueError("The time signal covers no whole frame")
    weights = space.weights_at(space.time.evaluate(frames))  # (N, m)
    info = load_info(ps) or {}
    s = BakeSummary(object_name=ps.name, frame_start=int(frames[0]), frame_end=int(frames[-1]))
    if binding.kind == "MESH":
        key = ps.data.shape_keys
        reason = reason or bridge.id_read_only_reason(key)
        if reason:
            raise ValueError(reason)
        if getattr(key.animation_data, "use_tweak_mode", False):
            raise ValueError(f'The shape keys of "{ps.name}" are in NLA tweak mode: exit tweak mode first')
        values = np.clip(weights / binding.scales, -SLIDER_RANGE, SLIDER_RANGE)
        old = bridge.get_action(key)
        action = bridge.new_action(key, f"{ps.name}.bake", keep_previous=not _is_bake(old))
        names = [str(nm) for nm in info.get("key_names", [])]
        for j, name in enumerate(names):
            fc = bridge.new_fcurve(key, action, f'key_blocks["{name}"].value', 0)
            bridge.write_dense_linear(fc, frames, values[:, j])
        s.curves = len(names)
    else:
        if reason:
            raise ValueError(reason)
        if getattr(ps.animation_data, "use_tweak_mode", False):
            raise ValueError(f'"{ps.name}" is in NLA tweak mode: exit tweak mode first')
        values = _pose_values(binding, space, weights)
        old = bridge.get_action(ps)
        base = str(info.get("source", {}).get("action", "")) or ps.name
        action = bridge.new_action(ps, f"{base}.posespace", keep_previous=not _is_bake(old))
        paths = [str(x) for x in info.get("channel_paths", [])]
        indices = [int(i) for i in info.get("channel_indices", [])]
        for j, (path, index) in enumerate(zip(paths, indices, strict=True)):
            fc = bridge.new_fcurve(ps, action, path, index, group=bridge.bone_name_of_path(path))
            bridge.write_dense_linear(fc, frames, values[:, j])
        s.curves = len(paths)
    action[BAKE_MARK] = ps.name
    bridge.set_action_frame_range(action, float(frames[0]), float(frames[-1]), cyclic=False)
    if old is not None and _is_bake(old) and old.users == 0 and old.library is None:
        wanted = old.name
        bpy.data.actions.remove(old)  # a previous bake of this pose space that nothing uses
        action.name = wanted
    s.action_name = action.name
    s.keys = s.curves * int(frames.size)
    if set_scene_range:
        scene.frame_start, scene.frame_end = int(frames[0]), int(frames[-1])
    return s


# ------------------------------------------------------------------------------------------
# Resampling (seed §4.2): new frames sampling the same curve at times tau_i
# ------------------------------------------------------------------------------------------

RESAMPLE_MODES = ("SPEED", "FRAME_COUNT", "FRAME_RATE", "RANGE")


def resample_times(
    time_signal: TimeSignal,
    *,
    mode: str = "SPEED",
    speed: float = 1.0,
    frame_count: int = 0,
    fps_from: float = 24.0,
    fps_to: float = 24.0,
    range_start: float | None = None,
    range_end: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """New frame numbers F' (whole frames from the first frame) and the times tau_i of the current
    time signal they show (seed §4.2): ``SPEED`` plays ``speed`` times as fast (0.5: slow motion),
    ``FRAME_COUNT`` spreads ``frame_count`` frames over the whole range, ``FRAME_RATE`` converts
    ``fps_from`` -> ``fps_to`` (same duration in seconds), ``RANGE`` plays only the frames
    ``range_start``..``range_end`` at ``speed`` (slow down or speed up a part). Raises ValueError."""
    frames = np.asarray(time_signal.frames, dtype=float)
    a, b = float(frames[0]), float(frames[-1])
    if mode == "FRAME_COUNT":
        if frame_count < 2:
            raise ValueError("A resampled sequence needs at least 2 frames")
        taus = np.linspace(a, b, int(frame_count))
        return a + np.arange(taus.size, dtype=float), taus
    if mode == "FRAME_RATE":
        if not (fps_from > 0.0 and fps_to > 0.0):
            raise ValueError("Frame rates must be positive")
        speed, r0, r1 = fps_from / fps_to, a, b
    elif mode == "SPEED":
        r0, r1 = a, b
    elif mode == "RANGE":
        r0 = a if range_start is None else float(range_start)
        r1 = b if range_end is None else float(range_end)
        if not (a <= r0 < r1 <= b):
            raise ValueError(f"The range {r0:g}-{r1:g} must lie inside the frames {a:g}-{b:g} and not be empty")
    else:
        raise ValueError(f"Unknown resample mode {mode!r}: one of {', '.join(RESAMPLE_MODES)}")
    if not (math.isfinite(speed) and speed > 0.0):
        raise ValueError("The speed factor must be positive")
    new_bp = np.array([0.0, r0 - a, r0 - a + (r1 - r0) / speed, r0 - a + (r1 - r0) / speed + (b - r1)])
    old_bp = np.array([a, r0, r1, b])
    count = int(math.floor(new_bp[-1] + 1e-9)) + 1
    if count < 2:
        raise ValueError(f"Resampling leaves {count} frame: slow down less")
    s = np.arange(count, dtype=float)
    taus = np.clip(np.interp(s, new_bp, old_bp), a, b)
    return a + s, taus


def resampled_space(space: PoseSpace, new_frames: np.ndarray, taus: np.ndarray) -> PoseSpace:
    """The same curve and poses with a new time signal: frame F'_i shows psi(tau_i) exactly (the
    monotone reparametrisation now maps F'_i to rho(tau_i)); the curve, g and h are unchanged."""
    new_frames = np.asarray(new_frames, dtype=float)
    params = space.time.rho(np.asarray(taus, dtype=float))
    params = np.maximum.accumulate(params)  # monotone (rounding)
    return replace(space, time=replace(space.time, params=params, frames=new_frames))
