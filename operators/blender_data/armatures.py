"""Armatures: bones, pose-bone channels and world-space joints.

Owns the rest skeleton (:func:`bone_hierarchy`, :func:`figure_height`), which armatures play an
action or have its bones (:func:`armatures_using`, :func:`animated_bones`,
:func:`armature_with_bones`), joints in world space over time (:func:`bone_heads_world`, with a
not-assigned action: :func:`bone_heads_with_action`; in cm: :func:`cm_per_unit`), the pose-bone
channels of an armature's action (:func:`pose_bone_fcurves`, read as a frame matrix by
:func:`read_action_matrix`, written live by :class:`PoseWriter`), the pose-bone transforms as they
are (:func:`read_bone_transforms`, :func:`restore_bone_transforms`), bones' locations keyed as they
are (:func:`key_held_locations`), the root channels a loop keeps travelling
(:func:`travel_channels`), and the rest rig with its virtual vertices in world space over time
(:func:`rest_rig`, :func:`virtual_vertices`: ACL's shell points and the tails, for Fit Spline's
object-space errors; of an armature and its :func:`playing_copy` in one pass: :func:`virtual_vertices_of`). Pose-bone transforms are read and written with one
``foreach_get`` / ``foreach_set`` per property.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import bpy
import numpy as np

from ...anim_signals.splines.pose_kinematics import VIRTUAL_VERTICES, matrix_vertex_rows, shell_points
from .actions import (
    action_slot_identifier,
    assign_action,
    assigned_action,
    fcurves_of_action,
    find_fcurve,
    get_action,
    get_slot,
    list_fcurves,
    new_fcurve,
    objects_using_action,
)
from .channels import (
    LOCATION,
    ChannelSpec,
    bone_name_of_path,
    bone_path,
    channel_specs,
    continuous_values,
    property_of_path,
)
from .fcurves import sample_curves, write_dense_linear
from .frames import evaluation_scene, visiting_frames

POSE_PROPERTY_SIZE = {"location": 3, "rotation_euler": 3, "rotation_quaternion": 4, "scale": 3}
"""Pose-bone properties a pose vector is made of, and their number of components (channels)."""
POSE_PROPERTIES = tuple(POSE_PROPERTY_SIZE)


def bone_hierarchy(ob: bpy.types.Object) -> tuple[list[str], list[int]]:
    """Pose bone names (in ``ob.pose.bones`` order, the order of :func:`bone_heads_world`) and the
    index of each bone's parent (-1 for roots); empty lists for other objects."""
    if ob.type != "ARMATURE" or ob.pose is None:
        return [], []
    names = [pb.name for pb in ob.pose.bones]
    index = {n: i for i, n in enumerate(names)}
    parents = [index[pb.parent.name] if pb.parent is not None else -1 for pb in ob.pose.bones]
    return names, parents


def figure_height(ob: bpy.types.Object) -> float:
    """An armature's size in its own units: the largest extent of its rest-pose bones (0 if none).

    Pose-bone locations are in these units (BVH imports keep the file's: cm or inches), so the
    tools scale root location by it to weigh travel against rotations in radians.
    """
    bones = getattr(getattr(ob, "data", None), "bones", None) if ob.type == "ARMATURE" else None
    if not bones:
        return 0.0
    n = len(bones)
    heads = np.empty(3 * n, dtype=np.float32)
    tails = np.empty(3 * n, dtype=np.float32)
    bones.foreach_get("head_local", heads)
    bones.foreach_get("tail_local", tails)
    pts = np.concatenate([heads.reshape(n, 3), tails.reshape(n, 3)]).astype(np.float64)
    return float(np.ptp(pts, axis=0).max())


def armatures_using(action: bpy.types.Action) -> list[bpy.types.Object]:
    """The armature objects animated by ``action``."""
    return [o for o in objects_using_action(action) if o.type == "ARMATURE"]


def animated_bones(action: bpy.types.Action) -> set[str]:
    """Names of the bones ``action`` has F-curves for."""
    return {b for fc in fcurves_of_action(action) if (b := bone_name_of_path(fc.data_path))}


def armature_with_bones(bones: set[str], preferred: bpy.types.Object | None = None) -> bpy.types.Object | None:
    """An armature object having every bone in ``bones``: ``preferred`` first, then any; else ``None``."""
    others = [o for o in bpy.data.objects if o.type == "ARMATURE" and o != preferred]
    for arm in ([preferred] if preferred is not None else []) + others:
        pose: Any = arm.pose
        if bones <= set(pose.bones.keys()):
            return arm
    return None


def cm_per_unit(scene: bpy.types.Scene) -> float:
    """Centimetres per Blender unit of ``scene`` (its unit scale): world-space joint distances of
    :func:`bone_heads_world` times this are in cm."""
    return 100.0 * float(scene.unit_settings.scale_length or 1.0)


def bone_heads_world(scene: bpy.types.Scene, ob: bpy.types.Object, frames: Sequence[float]) -> np.ndarray:
    """World-space head positions of every pose bone at ``frames``: (len(frames), n_bones, 3).

    Evaluated through the depsgraph at each frame (fractional frames as subframes), in an
    :func:`.frames.evaluation_scene` holding ``ob`` only (the rest of the user's scene is not
    evaluated at those frames); the current frame is restored afterwards. Objects other than
    armatures give (len(frames), 0, 3).
    """
    if ob.type != "ARMATURE" or ob.pose is None:
        return np.empty((len(frames), 0, 3))
    n_bones = len(ob.pose.bones)
    out = np.empty((len(frames), n_bones, 3), dtype=np.float64)
    heads = np.empty(3 * n_bones, dtype=np.float32)
    with evaluation_scene(scene, [ob]) as where, visiting_frames(where) as go_to:
        for i, f in enumerate(frames):
            ob_eval: Any = ob.evaluated_get(go_to(float(f)))
            ob_eval.pose.bones.foreach_get("head", heads)
            mw = np.array(ob_eval.matrix_world, dtype=np.float64)
            out[i] = heads.reshape(n_bones, 3).astype(np.float64) @ mw[:3, :3].T + mw[:3, 3]
    return out


def rest_rig(ob: bpy.types.Object) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The rest skeleton in armature space, bones in ``ob.pose.bones`` order.

    Returns ``(names, parents (B,) int, -1 for roots, heads (B, 3), tails (B, 3))`` in the
    armature's own units (``bone.head_local`` / ``tail_local``); empty for other objects.
    """
    names, parents = bone_hierarchy(ob)
    heads = np.zeros((len(names), 3))
    tails = np.zeros((len(names), 3))
    if names:
        bones: Any = ob.data.bones  # type: ignore[union-attr]
        for i, name in enumerate(names):
            bone = bones[name]
            heads[i] = bone.head_local
            tails[i] = bone.tail_local
    return names, np.array(parents, dtype=np.int64), heads, tails


def rest_pose_model(ob: bpy.types.Object) -> dict[str, Any]:
    """What :func:`anim_signals.splines.pose_vertices` needs of an armature, bones in ``ob.pose.bones``
    order: ``rest`` (B, 4, 4) the bones' ``matrix_local``, ``lengths`` (B,) their rest lengths,
    ``connected`` (B,) which are connected to their parent (Blender ignores their location),
    ``modes`` their rotation modes, the pose
    bones' current ``location``, ``rotation_quaternion``, ``rotation_euler``, ``rotation_axis_angle``
    and ``scale`` (B, 3 or 4; what curves that are not fitted hold), and ``matrix_world`` (4, 4)."""
    bones: Any = ob.data.bones  # type: ignore[union-attr]
    pose = ob.pose.bones  # type: ignore[union-attr]
    n = len(pose)
    rest = np.empty((n, 4, 4))
    for i, pb in enumerate(pose):
        rest[i] = np.array(bones[pb.name].matrix_local, dtype=np.float64)
    out: dict[str, Any] = {"rest": rest, "modes": [pb.rotation_mode for pb in pose],
                           "lengths": np.array([pb.bone.length for pb in pose], dtype=np.float64),
                           "connected": np.array([pb.bone.use_connect for pb in pose], dtype=bool),
                           "matrix_world": np.array(ob.matrix_world, dtype=np.float64)}
    for prop, size in TRANSFORM_SIZE.items():
        buf = np.empty(n * size, dtype=np.float32)
        pose.foreach_get(prop, buf)
        out[prop] = buf.reshape(n, size).astype(np.float64)
    return out


def object_scale(ob: bpy.types.Object) -> float:
    """The largest scale of ``ob``'s world matrix (armature units -> scene units, an upper bound)."""
    m = np.array(ob.matrix_world, dtype=np.float64)[:3, :3]
    return float(np.linalg.norm(m, axis=0).max()) or 1.0


def virtual_vertices(scene: bpy.types.Scene, ob: bpy.types.Object, frames: Sequence[float] | np.ndarray, shell: float,
                     action: bpy.types.Action | None = None, slot_identifier: str | None = None) -> np.ndarray:
    """World-space virtual vertices of every pose bone at ``frames``: (3, 7, n_bones, len(frames)),
    coordinates first and frames last (the core's pose model's layout: compare with
    :func:`~anim_signals.splines.largest_distances`).

    Each bone's head moved by ``shell`` (armature units) both ways along its local X, Y and Z
    axes, and its tail (the core's :func:`~anim_signals.splines.shell_points`: ACL's shell points,
    which see the bone's roll as well as its direction, on both sides, since a rotation about the
    head combined with the head's own error can move the point behind the head further than the
    one in front). Read from the evaluated pose-bone matrices through the depsgraph (fractional
    frames as subframes). With ``action``, that action is played on ``ob`` meanwhile
    (:func:`.actions.assigned_action`; its slot ``slot_identifier`` when given and present); the
    current frame is restored afterwards.
    """
    if ob.type != "ARMATURE" or ob.pose is None:
        return np.empty((3, VIRTUAL_VERTICES, 0, len(frames)))
    if action is None:
        return virtual_vertices_of(scene, [ob], frames, shell)[0]
    with assigned_action(ob, action):
        _use_slot(ob, action, slot_identifier)
        return virtual_vertices_of(scene, [ob], frames, shell)[0]


def virtual_vertices_of(scene: bpy.types.Scene, armatures: Sequence[bpy.types.Object],
                        frames: Sequence[float] | np.ndarray, shell: float) -> list[np.ndarray]:
    """:func:`virtual_vertices` of armatures with the same bones (an armature and its
    :func:`playing_copy`) as they play, read in one depsgraph pass: each frame change evaluates
    them all (in parallel), about 1.3x one armature's pass on 2 cores rather than 2x; in an
    :func:`.frames.evaluation_scene` of theirs when ``scene`` is the user's. (3, 7, n_bones,
    len(frames)) each."""
    pose = armatures[0].pose.bones  # type: ignore[union-attr]
    n, count = len(pose), len(frames)
    # (the rest length: a pose bone's own ``length`` is its posed length, scale included, as of
    # the last evaluation)
    local = shell_points([pb.bone.length for pb in pose], shell)
    mats = np.empty((len(armatures), count, 16 * n), dtype=np.float32)
    worlds = np.empty((len(armatures), count, 4, 4))
    with evaluation_scene(scene, armatures) as where, visiting_frames(where) as go_to:
        for i, f in enumerate(frames):
            depsgraph = go_to(float(f))
            for k, ob in enumerate(armatures):
                ob_eval: Any = ob.evaluated_get(depsgraph)
                ob_eval.pose.bones.foreach_get("matrix", mats[k, i])
                worlds[k, i] = ob_eval.matrix_world
    # world @ pose matrix @ each bone's points (Blender's matrices column-major: transposed views)
    pose_matrices = mats.reshape(len(armatures), count, n, 4, 4).swapaxes(-1, -2)
    return [matrix_vertex_rows(pose_matrices[k], worlds[k], local) for k in range(len(armatures))]


@contextmanager
def playing_copy(scene: bpy.types.Scene, ob: bpy.types.Object, action: bpy.types.Action,
                 slot_identifier: str | None = None) -> Iterator[bpy.types.Object]:
    """A temporary copy of ``ob`` (its data, parent, pose settings and world matrix shared)
    playing ``action`` (its slot ``slot_identifier`` when given and present), in ``scene``'s own
    collection (hidden, eye: still evaluated, when ``scene`` is the one shown; usually an
    :func:`.frames.evaluation_scene`) and removed afterwards.

    For a plain rig it evaluates as ``ob`` would with ``action`` (constraints and drivers that
    target ``ob`` itself would still target ``ob`` from the copy: callers keep it to rigs without
    them, :func:`has_constraints_or_drivers`).
    """
    copy: Any = ob.copy()
    copy.name = ob.name + ".verify"
    try:
        scene.collection.objects.link(copy)
        if scene == bpy.context.scene:  # (an evaluation scene is not shown: nothing to hide)
            copy.hide_set(True)
        assign_action(copy, action, slot_identifier or action_slot_identifier(action))
        yield copy
    finally:
        bpy.data.objects.remove(copy, do_unlink=True)


def has_constraints_or_drivers(ob: bpy.types.Object) -> bool:
    """Whether constraints or drivers act on ``ob`` or its bones (its own or its armature data's)."""
    if ob.constraints or any(pb.constraints for pb in getattr(ob.pose, "bones", ())):
        return True
    for id_data in (ob, ob.data):
        adt: Any = getattr(id_data, "animation_data", None)
        if adt is not None and len(adt.drivers):
            return True
    return False


def _use_slot(ob: bpy.types.Object, action: bpy.types.Action, slot_identifier: str | None) -> None:
    slots = getattr(action, "slots", None)
    slot = next((sl for sl in slots if sl.identifier == slot_identifier), None) if slots and slot_identifier else None
    if slot is not None:
        ob.animation_data.action_slot = slot  # type: ignore[union-attr]


def bone_heads_with_action(scene: bpy.types.Scene, ob: bpy.types.Object, action: bpy.types.Action,
                           frames: Sequence[float]) -> np.ndarray:
    """:func:`bone_heads_world` with ``action`` played on ``ob`` meanwhile (see
    :func:`.actions.assigned_action`: its action, slot and animation data are restored)."""
    if ob.type != "ARMATURE" or ob.pose is None:
        # Nothing to read; and Blender 5.0 crashes clearing animation data of an armature object
        # not evaluated yet (no pose).
        return bone_heads_world(scene, ob, frames)
    with assigned_action(ob, action):
        return bone_heads_world(scene, ob, frames)


def travel_channels(id_data: Any, specs: Sequence[ChannelSpec], *, max_vertical: float = 0.5) -> list[int]:
    """Indices (into ``specs``) of the root's horizontal location channels, which a loop keeps as
    velocity (the character travels on from cycle to cycle).

    Objects: ``location`` channels whose axis (in the space location applies in: parent and parent
    inverse) is mostly horizontal in world space. Armatures: also the ``location`` channels of
    root bones (no parent), axes from ``bone.matrix_local`` and ``ob.matrix_world``. "Mostly
    horizontal": the world axis' vertical component is below ``max_vertical`` (30 degrees).
    """
    if not isinstance(id_data, bpy.types.Object):
        return []
    out: list[int] = []
    mw = np.array(id_data.matrix_world, dtype=np.float64)[:3, :3]
    try:
        basis_inv = np.linalg.inv(np.array(id_data.matrix_basis, dtype=np.float64))
        space = (np.array(id_data.matrix_world, dtype=np.float64) @ basis_inv)[:3, :3]
    except np.linalg.LinAlgError:
        space = np.eye(3)
    bones = getattr(getattr(id_data, "data", None), "bones", None) if id_data.type == "ARMATURE" else None
    for j, spec in enumerate(specs):
        if spec.kind != LOCATION or property_of_path(spec.data_path) != "location":
            continue
        if not (0 <= spec.array_index < 3):
            continue
        if spec.owner_path == "":
            axis = space[:, spec.array_index]
        else:
            name = bone_name_of_path(spec.data_path)
            if name is None or bones is None:
                continue
            bone = bones.get(name)
            if bone is None or bone.parent is not None:
                continue
            ml = np.array(bone.matrix_local, dtype=np.float64)[:3, :3]
            axis = mw @ ml[:, spec.array_index]
        norm = float(np.linalg.norm(axis))
        if norm > 0.0 and abs(axis[2]) / norm < max_vertical:
            out.append(j)
    return out


def pose_bone_fcurves(ob: bpy.types.Object, action: bpy.types.Action | None = None,
                      ) -> tuple[list[bpy.types.FCurve], list[ChannelSpec], int]:
    """The armature's animated pose-bone channels, in the action's order.

    ``action``: the action to read (need not be assigned: its curves as
    :func:`.actions.fcurves_of_action` reads them for ``ob``); default the assigned one.

    Returns ``(fcurves, specs, skipped)``: the curves of :data:`POSE_PROPERTIES` of bones that
    exist, their specs, and the number of the action's other curves (object transforms,
    axis-angle, custom properties, missing bones, paths nested deeper), which a pose vector
    leaves out.
    """
    if action is None or action == get_action(ob):
        fcurves = list_fcurves(ob)
    else:
        fcurves = fcurves_of_action(action, ob)
    bones = ob.pose.bones if ob.type == "ARMATURE" and ob.pose is not None else None
    used, skipped = [], 0
    for fc in fcurves:
        name = bone_name_of_path(fc.data_path)
        prop = property_of_path(fc.data_path)
        size = POSE_PROPERTY_SIZE.get(prop)
        if (bones is None or name is None or bones.get(name) is None or size is None
                or not 0 <= fc.array_index < size or fc.data_path != bone_path(name, prop)):
            skipped += 1
            continue
        used.append(fc)
    return used, channel_specs(ob, used), skipped


def read_action_matrix(ob: bpy.types.Object, frames: Sequence[float] | np.ndarray,
                       fcurves: Sequence[bpy.types.FCurve] | None = None) -> tuple[np.ndarray, list[ChannelSpec]]:
    """An armature action as a frame matrix: the pose vector of all bones per frame.

    Every animated pose-bone channel (:func:`pose_bone_fcurves`, or ``fcurves``) is sampled at
    ``frames`` (:func:`.fcurves.sample_curves`), then made continuous the way the other tools do
    (:func:`.channels.continuous_values`): Euler triples lose 2 pi wraps and gimbal flips
    (rotation order known), quaternion tracks are sign-continuous.

    Returns
    -------
    z, specs
        ``Z (len(frames), channels)`` (one value per row: row size 1) and the channel specs.
    """
    if fcurves is None:
        fcurves, specs, _ = pose_bone_fcurves(ob)
    else:
        specs = channel_specs(ob, fcurves)
    _, values = sample_curves(list(fcurves), np.asarray(frames, dtype=np.float64))
    return continuous_values(values, specs), specs


# What a tool posing the bones may write (the pose space's channels, and the spatial keyframes'
# rotations in every bone's own mode, axis-angle included): a snapshot holds them all.
TRANSFORM_SIZE = {**POSE_PROPERTY_SIZE, "rotation_axis_angle": 4}


def read_bone_transforms(ob: bpy.types.Object) -> dict[str, np.ndarray] | None:
    """Every pose bone's :data:`POSE_PROPERTIES` and axis-angle rotation as they are now
    (property -> flat float32 array, bones in ``ob.pose.bones`` order); None for objects without
    a pose."""
    if ob.pose is None:
        return None
    bones = ob.pose.bones
    out = {}
    for prop, size in TRANSFORM_SIZE.items():
        buf = np.empty(len(bones) * size, dtype=np.float32)
        bones.foreach_get(prop, buf)
        out[prop] = buf
    return out


def restore_bone_transforms(ob: bpy.types.Object, transforms: dict[str, np.ndarray] | None) -> None:
    """Write back :func:`read_bone_transforms` (properties whose size no longer fits the bones are
    skipped) and tag ``ob``."""
    if ob.pose is not None and transforms:
        bones = ob.pose.bones
        for prop, buf in transforms.items():
            if buf.size == len(bones) * TRANSFORM_SIZE[prop]:
                bones.foreach_set(prop, buf)
    ob.update_tag()


def key_held_locations(ob: bpy.types.Object, action: bpy.types.Action, names: Sequence[str],
                       frames: np.ndarray) -> int:
    """Key each pose bone of ``names`` at its location now on every frame of ``frames`` (one
    LINEAR key per frame: the bone holds still), in ``action``, which must be assigned to ``ob``
    (its slot's curves on 4.4+); missing curves are created. Returns the number of curves written."""
    slot = get_slot(ob)
    frames = np.asarray(frames, dtype=np.float64)
    bones: Any = ob.pose.bones  # type: ignore[union-attr]
    written = 0
    for name in names:
        location = np.array(bones[name].location, dtype=np.float64)
        path = bone_path(name, "location")
        for i in range(3):
            fc = find_fcurve(action, slot, path, i) or new_fcurve(ob, action, path, i, group=name)
            write_dense_linear(fc, frames, np.full(len(frames), location[i]))
            written += 1
    return written


class PoseWriter:
    """Writes pose vectors into an armature's pose bones, fast enough for dragging.

    Built once for channels ``data_paths[i][indices[i]]`` (pose-bone properties of
    :data:`POSE_PROPERTIES`; anything else raises ValueError); :meth:`write` then sets them with
    one ``foreach_get`` / ``foreach_set`` per bone property, no per-bone Python loop.
    """

    def __init__(self, ob: Any, data_paths: Sequence[str], indices: Sequence[int]):
        names = [pb.name for pb in ob.pose.bones]
        bone_index = {n: i for i, n in enumerate(names)}
        self.n_bones = len(names)
        groups: dict[str, tuple[list[int], list[int]]] = {}
        for col, (path, index) in enumerate(zip(data_paths, indices, strict=True)):
            name = bone_name_of_path(path)
            prop = property_of_path(path)
            size = POSE_PROPERTY_SIZE.get(prop)
            if name is None or name not in bone_index or size is None:
                raise ValueError(f"{path}[{index}] is not a pose-bone channel of {ob.name!r}")
            flat, cols = groups.setdefault(prop, ([], []))
            flat.append(bone_index[name] * size + int(index))
            cols.append(col)
        self.groups = {p: (np.array(f, dtype=np.int64), np.array(c, dtype=np.int64)) for p, (f, c) in groups.items()}
        self.buffers = {p: np.empty(self.n_bones * POSE_PROPERTY_SIZE[p], dtype=np.float32) for p in groups}

    def write(self, ob: Any, values: np.ndarray) -> None:
        """Set the channels to ``values`` ((channels,), in the constructor's order) and tag ``ob``."""
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        bones = ob.pose.bones
        for prop, (flat, cols) in self.groups.items():
            buf = self.buffers[prop]
            bones.foreach_get(prop, buf)
            buf[flat] = values[cols]
            bones.foreach_set(prop, buf)
        ob.update_tag()
