"""Where a pose space's frames come from: checking the active object and choosing the frames
(:func:`build_plan`), then reading them as an (n, d) array (:func:`read_frames`).

Sources (``source``; AUTO picks one from the active object)
    ``ACTION``      an armature's action: the pose vector of every animated pose-bone channel
                    (location, Euler / quaternion rotation, scale), rotations made continuous;
                    one value per row (``row_size`` 1).
    ``SHAPE_KEYS``  a mesh's shape-key animation: vertex positions blended from the key blocks
                    with their animated (or driven) values, before modifiers; row size 3.
    ``MESH``        any mesh whose evaluated geometry changes per frame (Mesh Cache PC2 / MDD,
                    Mesh Sequence Cache / Alembic, cloth, modifiers): the depsgraph's vertex
                    positions frame by frame, every modifier applied; row size 3.

Everything that touches animation data goes through :mod:`operators.blender_data`; nothing here writes.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from ...anim_signals import posespace
from ...anim_signals.channels import radian_weights
from ...anim_signals.meshio import read_cache_header
from ...anim_signals.posespace import PoseSpace
from ..blender_data.actions import action_frame_range, get_action, id_read_only_reason, tweak_mode_reason
from ..blender_data.armatures import figure_height, pose_bone_fcurves, read_action_matrix
from ..blender_data.frames import scene_fps
from ..blender_data.meshes import (
    TopologyChangeError,
    evaluated_triangles,
    mesh_cache_frame_range,
    mesh_sequence_rows,
    mesh_triangles,
)
from ..blender_data.shape_keys import read_shape_key_matrix, shape_key_fcurves, shape_keys_animated
from ..common import InputError
from .gradient import SHAPE_SPACES
from .storage import BAKE_MARK, SUFFIX, is_space_object, load_info

__all__ = [
    "DEFAULT_TOLERANCE_DEG",
    "SOURCES",
    "BuildPlan",
    "PoseSpaceInputError",
    "build_plan",
    "read_frames",
]

MIN_FRAMES = posespace.MIN_FRAMES
MAX_FRAMES = 5000
"""Frames a pose space is built from. The core's build is close to linear in frames for a fixed
tolerance except its layout (MDS over every pair of frames: an n x n distance matrix, 200 MB at
5000) and, on noisy armature data, a site count that grows with the frames (measured: 2000 frames in
about 10 s, 5000 in about a minute; scripts/benchmarking/pose_space_scaling.py). Longer sequences are
read with a frame step."""
MAX_VALUES = 100_000_000
"""Numbers read (frames x values per frame, 800 MB as doubles): a mesh sequence is held in memory."""
DEFAULT_TOLERANCE_DEG = 0.5  # armatures: radians-equivalent channels
SOURCES = ("AUTO", "ACTION", "SHAPE_KEYS", "MESH")


class PoseSpaceInputError(InputError):
    """Bad input: reported to the user, nothing changed."""


@dataclass
class BuildPlan:
    """What a build reads and how (from :func:`build_plan`), and what the build found (filled by
    ``building.iter_build``)."""

    source_object: Any  # bpy.types.Object
    object_name: str
    source: str  # ACTION | SHAPE_KEYS | MESH (resolved)
    frames: np.ndarray  # (n,) scene frames sampled
    row_size: int
    scene: Any
    k: int | None = None
    l: int | None = None  # noqa: E741  (the paper's name)
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
    shape_space: str = "VERTEX"  # VERTEX | GRADIENT (meshes)
    triangles: np.ndarray | None = None  # GRADIENT: (F, 3) the source's triangles
    # filled by iter_build
    z: np.ndarray | None = None  # (n, d) as read (armatures: continuous channel values)
    tolerance_used: float | None = None  # in the units of the fit (scene units, radians, gradient values)
    gradient: Any = None  # GRADIENT: the gradient.GradientRows the rows were encoded with
    gradient_tolerance: float | None = None  # GRADIENT: the core's tolerance on the rows that met tolerance_used
    space: PoseSpace | None = None
    error: dict[str, float] = field(default_factory=dict)
    seconds_read: float = 0.0
    seconds_core: float = 0.0


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
    if shape_keys_animated(ob):
        return "SHAPE_KEYS"
    extra = " (its object transforms are animated, but a pose space is about its shape)" if get_action(ob) else ""
    raise PoseSpaceInputError(
        f'"{ob.name}" has no animation to build a pose space from: no animated shape keys, no mesh cache or '
        f"other modifiers{extra}"
    )


def _mesh_cache_problem(ob) -> str | None:
    """What keeps the object's Mesh Cache modifiers from playing their file, or None. Blender's
    modifier only prints a warning and leaves the mesh at rest: a missing, damaged or truncated
    file or one made for another vertex count would silently build a pose space of rest poses."""
    for i, mod in enumerate(ob.modifiers):
        if mod.type != "MESH_CACHE" or not mod.show_viewport or mod.cache_format not in ("PC2", "MDD"):
            continue
        path = bpy.path.abspath(mod.filepath)
        label = f'The {mod.cache_format} file "{mod.filepath}" of "{ob.name}" (modifier "{mod.name}")'
        if not mod.filepath or not os.path.isfile(path):
            return f"{label} does not exist"
        try:
            header = read_cache_header(path, mod.cache_format)
        except (OSError, ValueError) as err:
            return f"{label} {err}"
        n_vert, n_samples = header.n_vertices, header.n_samples
        if header.actual_bytes < header.expected_bytes:
            return (f"{label} is truncated: its header promises {n_samples} samples of {n_vert} vertices "
                    f"({header.expected_bytes} bytes), the file has {header.actual_bytes} bytes "
                    f"({header.whole_samples} whole samples)")
        mesh_vertices = len(ob.data.vertices)
        if i == 0 and n_vert != mesh_vertices:
            return f"{label} has {n_vert} vertices, the mesh {mesh_vertices}: Blender plays it only on a mesh of as many"
    return None


def _frames(start: float, end: float, step: int) -> np.ndarray:
    if not (math.isfinite(start) and math.isfinite(end)):
        raise PoseSpaceInputError(f"The frame range {start:g}-{end:g} is not finite")
    if end < start:
        raise PoseSpaceInputError(f"The frame range {start:g}-{end:g} is empty: the end must come after the start")
    step = max(1, int(step))
    count = int((end - start + 0.5) // step) + 1
    if count > MAX_FRAMES:
        raise PoseSpaceInputError(
            f"The frames {start:g}-{end:g} (step {step}) are {count} frames; a pose space is built from at most "
            f"{MAX_FRAMES} (its layout grows faster than the frame count): set Step to {math.ceil(count / MAX_FRAMES) * step} "
            "or more, or pick a shorter Custom range"
        )
    return np.arange(start, end + 0.5, step, dtype=np.float64)


def _channel_scale(ob, specs) -> np.ndarray:
    """Weights putting channels on the scale of radians (the model is built on channel x weight,
    decoded values are divided by it): :func:`anim_signals.channels.radian_weights`, quaternion
    components 2 (a change e is about 2e radians), locations 2 / figure height (as Make Cyclic
    weighs them), the rest 1."""
    return radian_weights([s.kind for s in specs], figure_height(ob))


def build_plan(
    ob,
    scene=None,
    *,
    source: str = "AUTO",
    frame_start: int | None = None,
    frame_end: int | None = None,
    frame_step: int = 1,
    k: int = 0,
    l: int = 0,  # noqa: E741  (the paper's name)
    m: int = 0,
    tolerance: float = 0.0,
    tolerance_deg: float = DEFAULT_TOLERANCE_DEG,
    exact: bool = False,
    pins: Mapping[int, Sequence[float]] | None = None,
    keep_pins: bool = True,
    shape_space: str = "VERTEX",
) -> BuildPlan:
    """Check the input and choose the frames. Raises :class:`PoseSpaceInputError`; changes nothing.

    ``ob``: the active object (a pose-space object stands for its source: a rebuild). ``frame_start``
    / ``frame_end`` None: the action's range (ACTION, SHAPE_KEYS), the Mesh Cache file's range or
    the scene range (MESH). ``k``, ``l``, ``m`` 0: automatic, from the tolerance (``tolerance`` in
    scene units, RMS per vertex, 0: 0.2 % of the bounding-box diagonal; ``tolerance_deg`` for
    armatures) or, with ``exact``, the interpolation case k - 2 = l = m + 1 = n (every frame
    reproduced). ``pins``: frame index (0-based row) -> pose-space position; ``keep_pins`` reuses
    the pins of the pose space already stored for this source. ``shape_space`` ``"GRADIENT"``
    (meshes only): the shape signal blends deformation gradients (see :mod:`.gradient`).
    """
    scene = scene or bpy.context.scene
    if ob is None:
        raise PoseSpaceInputError("No active object: select an animated mesh or armature")
    if source not in SOURCES:
        raise PoseSpaceInputError(f"Unknown source {source!r}: one of {', '.join(SOURCES)}")
    if shape_space not in SHAPE_SPACES:
        raise PoseSpaceInputError(f"Unknown shape space {shape_space!r}: one of {', '.join(SHAPE_SPACES)}")
    warnings: list[str] = []
    previous = load_info(ob) if is_space_object(ob) else None
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
    fps = scene_fps(scene)
    plan = BuildPlan(source_object=ob, object_name=ob.name, source=kind, frames=np.empty(0), row_size=3, scene=scene,
                     k=k or None, l=l or None, m=m or None, exact=bool(exact), tolerance=float(tolerance),
                     tolerance_deg=float(tolerance_deg) or DEFAULT_TOLERANCE_DEG, fps=fps, frame_step=int(frame_step),
                     warnings=warnings, shape_space=shape_space)
    if kind == "ACTION" and shape_space == "GRADIENT":
        raise PoseSpaceInputError(
            f'The Deformation Gradients shape space needs a mesh: "{ob.name}" is an armature, whose action channels '
            "are blended as they are: use Shape Space Vertices"
        )

    if kind == "ACTION":
        if ob.type != "ARMATURE":
            raise PoseSpaceInputError(f'The Action source needs an armature: "{ob.name}" is a {ob.type.lower()} object')
        reason = id_read_only_reason(ob, ob.data)
        if reason:
            raise PoseSpaceInputError(f"{reason}: the pose space is stored on the armature")
        action = _source_action(ob)
        if action is None:
            raise PoseSpaceInputError(f'"{ob.name}" has no animation data (no action to build a pose space from)')
        reason = tweak_mode_reason(ob)
        if reason:
            raise PoseSpaceInputError(reason)
        fcurves, specs, skipped = pose_bone_fcurves(ob, action)
        if not fcurves:
            raise PoseSpaceInputError(f'The action "{action.name}" has no pose-bone curves (location, rotation, scale)')
        if skipped:
            warnings.append(f"Left out {skipped} curve(s) that are not pose-bone location / rotation / scale")
        plan.action_name, plan.fcurves, plan.specs, plan.row_size = action.name, fcurves, specs, 1
        plan.channel_scale = _channel_scale(ob, specs)
        lo, hi = action_frame_range(action, fcurves)
    elif kind == "SHAPE_KEYS":
        if ob.type != "MESH":
            raise PoseSpaceInputError(f'The Shape Keys source needs a mesh: "{ob.name}" is a {ob.type.lower()} object')
        key = ob.data.shape_keys
        if key is None or len(key.key_blocks) < 2:
            raise PoseSpaceInputError(f'"{ob.name}" has no shape keys')
        if not key.use_relative:
            raise PoseSpaceInputError(f'"{ob.name}" uses absolute shape keys: use the Mesh source')
        curves = list(shape_key_fcurves(key).values())
        action = get_action(key)
        if action is not None and curves:
            lo, hi = action_frame_range(action, curves)
            plan.action_name = action.name
        elif shape_keys_animated(ob):  # driven only
            lo, hi = scene.frame_start, scene.frame_end
        else:
            raise PoseSpaceInputError(f'The shape keys of "{ob.name}" are not animated')
    elif kind == "MESH":
        if ob.type != "MESH":
            raise PoseSpaceInputError(f'The Mesh source needs a mesh: "{ob.name}" is a {ob.type.lower()} object')
        problem = _mesh_cache_problem(ob)
        if problem:
            raise PoseSpaceInputError(problem)
        rng = mesh_cache_frame_range(ob)
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
    if shape_space == "GRADIENT":
        plan.triangles = evaluated_triangles(ob) if kind == "MESH" else mesh_triangles(ob.data)
        if len(plan.triangles) == 0:
            raise PoseSpaceInputError(f'The Deformation Gradients shape space needs faces: "{ob.name}" has none')
        values = n * (9 * len(plan.triangles) + 3)
        if values > MAX_VALUES:
            raise PoseSpaceInputError(
                f'{n} frames of the {len(plan.triangles)} triangles of "{ob.name}" are {values} deformation-gradient '
                f"values; a pose space holds at most {MAX_VALUES}: raise Step or pick a shorter Custom range"
            )
    if plan.row_size == 3 and n * 3 * len(ob.data.vertices) > MAX_VALUES:
        raise PoseSpaceInputError(
            f'{n} frames of the {len(ob.data.vertices)} vertices of "{ob.name}" are {n * 3 * len(ob.data.vertices)} '
            f"numbers; a pose space reads at most {MAX_VALUES}: raise Step or pick a shorter Custom range"
        )
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
    action = get_action(ob)
    if action is not None and action.get(BAKE_MARK):
        info = load_info(ob)
        original = bpy.data.actions.get(str((info or {}).get("source", {}).get("action", "")))
        if original is not None:
            return original
    return action


def _stored_pins_for(ob, source: str) -> dict[int, np.ndarray]:
    holder = ob if ob.type == "ARMATURE" else bpy.data.objects.get(ob.name + SUFFIX)
    info = load_info(holder) if holder is not None and is_space_object(holder) else None
    if not info or info.get("source", {}).get("object") != ob.name:
        return {}
    rows = np.asarray(info.get("pins", []), dtype=float).reshape(-1, 3)
    return {int(r[0]): r[1:].copy() for r in rows}


def read_frames(plan: BuildPlan) -> Generator[float, None, tuple[np.ndarray, list[str]]]:
    """Read the planned frames, step by step (MESH: one frame per step, progress up to 0.8).

    Returns
    -------
    z : ndarray, shape (n, d)
        One row per frame: armature channel values (continuous rotations), or vertex positions
        (x, y, z per vertex).
    labels : list of str
        The channel labels of an armature (empty for meshes), to name a bad value.

    Raises :class:`PoseSpaceInputError` (topology change, no vertices, a bad shape-key setup).
    Closing the generator restores the scene frame.
    """
    t0 = time.perf_counter()
    ob, n = plan.source_object, plan.frames.size
    labels: list[str] = []
    if plan.source == "ACTION":
        z, _ = read_action_matrix(ob, plan.frames, plan.fcurves)
        labels = [f"{s.label}" for s in plan.specs]
    elif plan.source == "SHAPE_KEYS":
        try:
            z = read_shape_key_matrix(plan.scene, ob, plan.frames)
        except ValueError as err:
            raise PoseSpaceInputError(str(err)) from err
    else:
        rows = []
        gen = mesh_sequence_rows(plan.scene, ob, plan.frames)
        try:
            for i, row in enumerate(gen):
                rows.append(row)
                yield 0.8 * (i + 1) / n
        except TopologyChangeError as err:
            raise PoseSpaceInputError(f'Cannot build a pose space from "{ob.name}": {err}') from err
        finally:
            gen.close()
        z = np.array(rows)
        if z.shape[1] == 0:
            raise PoseSpaceInputError(f'"{ob.name}" has no vertices')
    plan.seconds_read = time.perf_counter() - t0
    return z, labels
