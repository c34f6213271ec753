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


def _evaluated_state(ob: Any, depsgraph: bpy.types.Depsgraph) -> np.ndarray | None:
    """What an object's evaluation gives: its world matrix, an armature's pose-bone matrices, a
    mesh's evaluated vertex positions; None when the depsgraph does not evaluate it (an object
    disabled in viewports, say: ``evaluated_get`` then hands back the original)."""
    ob_eval: Any = ob.evaluated_get(depsgraph)
    if not ob_eval.is_evaluated:
        return None
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


def _same_state(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return a is not None and b is not None and a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-6, atol=1e-6))


# Modifiers whose result depends on the frames evaluated before (a simulation and its cache) or on
# the scene (a rigid body world): their objects are evaluated in the user's scene. (Collision and
# hair change no vertex of their own object; geometry nodes only with a simulation zone or a bake.)
_SIMULATING_MODIFIERS = frozenset({"CLOTH", "SOFT_BODY", "DYNAMIC_PAINT", "FLUID", "EXPLODE"})
_SIMULATING_NODES = frozenset({"GeometryNodeSimulationInput", "GeometryNodeSimulationOutput", "GeometryNodeBake"})


def _node_tree_simulates(tree: Any, seen: set[int]) -> bool:
    """Whether a geometry node tree (its groups included) holds a simulation zone or a bake node."""
    if tree is None or tree.as_pointer() in seen:
        return False
    seen.add(tree.as_pointer())
    return any(node.bl_idname in _SIMULATING_NODES or _node_tree_simulates(getattr(node, "node_tree", None), seen)
               for node in tree.nodes)


def _simulated(ob: Any) -> bool:
    """Whether ``ob`` simulates over time or takes part in the scene's rigid body world."""
    for modifier in getattr(ob, "modifiers", ()):
        if modifier.type in _SIMULATING_MODIFIERS:
            return True
        if modifier.type == "PARTICLE_SYSTEM" and modifier.particle_system.settings.type != "HAIR":
            return True
        if modifier.type == "NODES" and _node_tree_simulates(modifier.node_group, set()):
            return True
    return getattr(ob, "rigid_body", None) is not None or getattr(ob, "rigid_body_constraint", None) is not None


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


def _scene_bound(ob: Any) -> bool:
    return _reads_the_scene(ob) or _simulated(ob)


# Settings of the scene that change how objects evaluate at a frame, copied to an evaluation scene:
# time (frame rate, remapping) and Simplify (the subdivision levels, particles and volumes it caps).
_RENDER_SETTINGS = ("fps", "fps_base", "frame_map_old", "frame_map_new", "use_simplify", "simplify_subdivision",
                    "simplify_child_particles", "simplify_volumes")

# Objects whose evaluation scene was declined in an enclosing block: nested readers (each chunk of a
# long read) do not try again.
_declined: list[set[int]] = []


def _isolated_scene(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object]) -> Any:
    """A new scene holding ``objects`` that evaluates them as ``scene`` does at its current frame,
    with nothing it pulls in bound to the scene; None (nothing left behind) otherwise."""
    isolated: Any = bpy.data.scenes.new(EVALUATION_SCENE_NAME)
    try:
        for name in _RENDER_SETTINGS:
            if hasattr(scene.render, name):
                setattr(isolated.render, name, getattr(scene.render, name))
        isolated.unit_settings.scale_length = scene.unit_settings.scale_length
        for ob in objects:
            isolated.collection.objects.link(ob)
        isolated.frame_set(scene.frame_current, subframe=scene.frame_subframe)
        here, there = _depsgraph_of(scene), _depsgraph_of(isolated)
        # what the depsgraph brought along (parents, constraint, driver and modifier targets) counts too
        pulled_in = [getattr(i, "original", i) for i in there.ids if isinstance(i, bpy.types.Object)]
        if (all(_same_state(_evaluated_state(ob, here), _evaluated_state(ob, there)) for ob in objects)
                and not any(_scene_bound(ob) for ob in pulled_in)):
            return isolated
    except (RuntimeError, ReferenceError, ValueError):  # a refused link, say: evaluate in the scene
        pass
    bpy.data.scenes.remove(isolated)
    return None


@contextmanager
def evaluation_scene(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object]) -> Iterator[bpy.types.Scene]:
    """A scene in which frame changes evaluate ``objects`` (and what they depend on: parents,
    constraint and driver targets, a modifier's objects) and nothing else of ``scene``.

    Changing frames in the user's scene evaluates all of it: beside two characters' bodies of 31,502
    vertices each, skinned to the rig, a bare rig's 0.5 ms a frame becomes 31 ms
    (``scripts/benchmark_fit_scene.py``). The objects are linked (not copied) into a temporary scene
    with ``scene``'s frame, frame rate, time remapping and Simplify settings, removed on leaving the
    block (normally, by an exception, or by closing a generator suspended inside it); objects linked
    into it meanwhile (:func:`.armatures.playing_copy`) are the caller's to remove.

    Yields ``scene`` itself, as before, when ``scene`` is not the context's scene (an evaluation
    scene among them); when one of the objects, or of those the depsgraph brings along, has a driver
    that may read the scene (:func:`_reads_the_scene`) or simulates (cloth, soft body, emitted
    particles, a geometry-nodes simulation or bake, a rigid body: :func:`_simulated`); when an object
    cannot be linked; or when an object does not evaluate there as in ``scene`` at the current frame
    (its world matrix, pose-bone matrices and evaluated vertex positions compared; an object the
    scene does not evaluate, disabled in viewports, counts as different).

    Not seen by these checks: ``frame_change_pre`` / ``frame_change_post`` handlers of other add-ons
    run with the evaluation scene, and one that reads the user's scene instead of the scene it is
    given may act on the wrong frame.
    """
    pointers = {ob.as_pointer() for ob in objects}
    if (scene != bpy.context.scene or not objects or any(pointers & d for d in _declined)
            or any(_scene_bound(ob) for ob in objects)):
        yield scene
        return
    isolated = _isolated_scene(scene, objects)
    if isolated is None:
        _declined.append(pointers)
        try:
            yield scene
        finally:
            _declined.remove(pointers)
        return
    try:
        yield isolated
    finally:
        try:
            bpy.data.scenes.remove(isolated)
        except ReferenceError:  # (removed already: by a failing operator's rollback, say)
            pass
