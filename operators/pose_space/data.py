"""Blender data access the pose space needs beyond ``operators.bridge``: read-only checks, the
pose-bone curves of an action that is not assigned, copies of a mesh object, and a snapshot of the
shape-key values and bone transforms a live canvas drag may write.

Candidates for the shared Blender data layer (``operators/blender_data``); nothing here knows the
pose space's storage.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np

from ..blender_data.actions import fcurves_of_action, get_action, id_read_only_reason
from ..blender_data.armatures import POSE_PROPERTIES, pose_bone_fcurves
from ..blender_data.channels import bone_name_of_path, channel_specs

__all__ = [
    "mesh_copy_without_shape_keys",
    "new_object_copy",
    "pose_curves_of_action",
    "read_only_reason",
    "replace_mesh",
    "restore_pose",
    "snapshot_pose",
]

_BONE_ARRAYS = (("location", 3), ("rotation_quaternion", 4), ("rotation_euler", 3), ("scale", 3))


def read_only_reason(ob) -> str | None:
    """Why ``ob`` or its data cannot be written (linked from a library, ...), or None."""
    reason = id_read_only_reason(ob)
    if reason:
        return reason
    data = getattr(ob, "data", None)
    if data is not None:
        reason = id_read_only_reason(data)
    return reason


def pose_curves_of_action(ob, action) -> tuple[list, list, int]:
    """The pose-bone location / rotation / scale F-curves of ``action`` on the armature ``ob``, their
    channel specs, and how many other curves were left out. The action need not be assigned."""
    if action == get_action(ob):
        return pose_bone_fcurves(ob)
    fcurves = fcurves_of_action(action, ob)
    bones = ob.pose.bones
    used = []
    for fc in fcurves:
        name = bone_name_of_path(fc.data_path)
        if name is not None and bones.get(name) is not None and fc.data_path.rsplit(".", 1)[-1] in POSE_PROPERTIES:
            used.append(fc)
    return used, channel_specs(ob, used), len(fcurves) - len(used)


def mesh_copy_without_shape_keys(ob, name: str):
    """A copy of the mesh of ``ob`` named ``name``, its copied shape keys removed outright (no orphan Key)."""
    mesh = ob.data.copy()
    mesh.name = name
    if mesh.shape_keys is not None:
        bpy.data.batch_remove([mesh.shape_keys])
    return mesh


def new_object_copy(ob, name: str, scene, drop_properties: tuple[str, ...] = ()):
    """A copy of ``ob`` named ``name`` without animation data and without the ID properties
    ``drop_properties``, linked to the local collections of ``ob`` (else the scene's collection)."""
    copy = ob.copy()
    copy.name = name
    for key in list(copy.keys()):
        if key in drop_properties:
            del copy[key]
    copy.animation_data_clear()
    colls = [c for c in ob.users_collection if c.library is None] or [scene.collection]
    for c in colls:
        c.objects.link(copy)
    return copy


def replace_mesh(ob, mesh) -> None:
    """Give ``ob`` the mesh data ``mesh``: its old mesh is removed when nothing else uses it, and
    the object keeps no shape keys."""
    old = ob.data
    ob.data = mesh
    if old is not None and old != mesh and old.users == 0:
        bpy.data.meshes.remove(old)
    if mesh.shape_keys is not None:
        ob.shape_key_clear()


def snapshot_pose(ob) -> dict[str, Any]:
    """Shape-key values and pose-bone transforms of ``ob``: what a live pose update may write."""
    snap: dict[str, Any] = {}
    keys = getattr(getattr(ob, "data", None), "shape_keys", None)
    if keys is not None:
        vals = np.empty(len(keys.key_blocks), dtype=np.float32)
        keys.key_blocks.foreach_get("value", vals)
        snap["values"] = vals
    if ob.pose is not None:
        bones = ob.pose.bones
        snap["bones"] = {}
        for attr, size in _BONE_ARRAYS:
            buf = np.empty(len(bones) * size, dtype=np.float32)
            bones.foreach_get(attr, buf)
            snap["bones"][attr] = buf
    return snap


def restore_pose(ob, snap: dict[str, Any]) -> None:
    """Write back a :func:`snapshot_pose` (parts that no longer fit the object are skipped)."""
    keys = getattr(getattr(ob, "data", None), "shape_keys", None)
    vals = snap.get("values")
    if keys is not None and vals is not None and len(vals) == len(keys.key_blocks):
        keys.key_blocks.foreach_set("value", vals)
        keys.update_tag()  # foreach_set tags nothing by itself
    bones = snap.get("bones")
    if ob.pose is not None and bones:
        for attr, buf in bones.items():
            if buf.size == len(ob.pose.bones) * (4 if attr == "rotation_quaternion" else 3):
                ob.pose.bones.foreach_set(attr, buf)
    ob.update_tag()
