"""The scene's time: its frame rate, and visiting other frames and coming back.

Owns :func:`scene_fps`, :func:`visiting_frames`, the one place that moves ``scene.frame_current`` to evaluate the
depsgraph elsewhere in time (world-space bone heads, driven shape-key values, evaluated meshes
frame by frame, a mesh copy at one frame) and restores the frame (and subframe) the user was on,
also when the work fails or a generator using it is closed early, and :func:`evaluation_scene`, where
a few objects are evaluated over time without the rest of the user's scene.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import bpy
import numpy as np

# The scene settings that change how objects evaluate at a frame, copied to an evaluation scene.
_TIME_SETTINGS = ("fps", "fps_base", "frame_map_old", "frame_map_new")
EVALUATION_SCENE_NAME = "Anim Signals evaluation"


def scene_fps(scene: bpy.types.Scene) -> float:
    """The scene's frame rate in frames per second (``fps / fps_base``)."""
    return float(scene.render.fps) / float(scene.render.fps_base or 1.0)


def _depsgraph_of(scene: bpy.types.Scene) -> bpy.types.Depsgraph:
    """The evaluated depsgraph of ``scene``: the context's for the context scene, else its first view layer's."""
    if scene == bpy.context.scene:
        return bpy.context.evaluated_depsgraph_get()
    depsgraph = scene.view_layers[0].depsgraph
    assert depsgraph is not None  # (frame_set made one for every view layer)
    return depsgraph


@contextmanager
def visiting_frames(scene: bpy.types.Scene) -> Iterator[Callable[[float], bpy.types.Depsgraph]]:
    """Go to other frames of ``scene`` and back.

    Yields ``go_to(frame) -> depsgraph``: sets the scene frame (a fractional frame as its subframe)
    and returns the evaluated depsgraph there. Leaving the block (normally, by an exception, or by
    closing a generator suspended inside it) sets the frame and subframe current on entry again.

    Example
    -------
    >>> with visiting_frames(scene) as go_to:  # doctest: +SKIP
    ...     for f in (1.0, 1.5, 2.0):
    ...         ob_eval = ob.evaluated_get(go_to(f))
    """
    frame0, sub0 = scene.frame_current, scene.frame_subframe

    def go_to(frame: float) -> bpy.types.Depsgraph:
        whole = math.floor(frame)
        scene.frame_set(int(whole), subframe=float(frame) - whole)
        return _depsgraph_of(scene)

    try:
        yield go_to
    finally:
        scene.frame_set(frame0, subframe=sub0)


def _evaluated_state(ob: Any, depsgraph: bpy.types.Depsgraph) -> np.ndarray:
    """What an object's evaluation gives: its world matrix, an armature's pose-bone matrices, a
    mesh's evaluated vertex positions."""
    ob_eval: Any = ob.evaluated_get(depsgraph)
    parts = [np.array(ob_eval.matrix_world, dtype=np.float64).ravel()]
    pose = getattr(ob_eval, "pose", None)
    if pose is not None and len(pose.bones):
        matrices = np.empty(16 * len(pose.bones), dtype=np.float32)
        pose.bones.foreach_get("matrix", matrices)
        parts.append(matrices.astype(np.float64))
    if ob_eval.type == "MESH":
        points = np.empty(3 * len(ob_eval.data.vertices), dtype=np.float32)
        ob_eval.data.vertices.foreach_get("co", points)
        parts.append(points.astype(np.float64))
    return np.concatenate(parts)


# Modifiers whose result depends on the frames evaluated before (a simulation and its cache) or on
# the scene (a rigid body world): their objects are evaluated in the user's scene.
_SCENE_BOUND_MODIFIERS = frozenset({"CLOTH", "SOFT_BODY", "COLLISION", "DYNAMIC_PAINT", "FLUID", "PARTICLE_SYSTEM",
                                    "EXPLODE", "NODES"})  # (geometry nodes: a simulation zone, say)


def _simulated(ob: Any) -> bool:
    """Whether ``ob`` simulates over time or takes part in the scene's rigid body world."""
    return (any(m.type in _SCENE_BOUND_MODIFIERS for m in getattr(ob, "modifiers", ()))
            or getattr(ob, "rigid_body", None) is not None or getattr(ob, "rigid_body_constraint", None) is not None)


def _reads_the_scene(ob: Any) -> bool:
    """Whether a driver of ``ob`` (or of its data) may read the scene it is evaluated in, which an
    evaluation scene does not reproduce: a Python expression, a variable of the context's scene or
    view layer, or one reading a scene's property (its frame, say)."""
    data = getattr(ob, "data", None)
    for id_data in (ob, data, getattr(data, "shape_keys", None)):
        adt = getattr(id_data, "animation_data", None)
        for fc in adt.drivers if adt is not None else ():
            driver = fc.driver
            if driver.type == "SCRIPTED" and not driver.is_simple_expression:
                return True
            for var in driver.variables:
                if var.type == "CONTEXT_PROP" or any(t.id_type == "SCENE" for t in var.targets):
                    return True
    return False


@contextmanager
def evaluation_scene(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object]) -> Iterator[bpy.types.Scene]:
    """A scene in which frame changes evaluate ``objects`` (and what they depend on: parents,
    constraint and driver targets, a modifier's objects) and nothing else of ``scene``.

    Changing frames in the user's scene evaluates all of it: beside a character's skinned mesh of 32k
    vertices a bare rig's 0.4 ms a frame becomes 17 ms. The objects are linked (not copied) into a
    temporary scene with ``scene``'s frame, frame rate and time remapping, removed on leaving the
    block (normally, by an exception, or by closing a generator suspended inside it); objects linked
    into it meanwhile (:func:`.armatures.playing_copy`) are the caller's to remove.

    Yields ``scene`` itself, as before, when ``scene`` is not the context's scene (an evaluation
    scene among them), when a driver of an object may read the scene (:func:`_reads_the_scene`),
    when an object simulates (cloth, soft body, particles, geometry nodes, a rigid body:
    :func:`_simulated`), when an object cannot be linked, or when an object does not evaluate there
    as in ``scene`` at the current frame (its world matrix, pose-bone matrices and evaluated vertex
    positions compared).
    """
    if scene != bpy.context.scene or not objects or any(_reads_the_scene(ob) or _simulated(ob) for ob in objects):
        yield scene
        return
    isolated: Any = bpy.data.scenes.new(EVALUATION_SCENE_NAME)
    same = False
    try:
        for name in _TIME_SETTINGS:
            setattr(isolated.render, name, getattr(scene.render, name))
        isolated.unit_settings.scale_length = scene.unit_settings.scale_length
        try:
            for ob in objects:
                isolated.collection.objects.link(ob)
        except RuntimeError:  # a collection or override refusing the link, say: evaluate in the scene
            pass
        else:
            isolated.frame_set(scene.frame_current, subframe=scene.frame_subframe)
            here, there = _depsgraph_of(scene), _depsgraph_of(isolated)
            same = all(np.allclose(_evaluated_state(ob, here), _evaluated_state(ob, there), rtol=1e-6, atol=1e-6)
                       for ob in objects)
    finally:
        if not same:  # (also when setting it up failed)
            bpy.data.scenes.remove(isolated)
    if not same:
        yield scene
        return
    try:
        yield isolated
    finally:
        bpy.data.scenes.remove(isolated)
