"""Deformation Transfer from the 3D Viewport's Signals tab: the Transfer button, Esc, the result.

The transfer tests' pair (tests/blender/test_deformation_transfer.py): an open quad cylinder bent by
a keyed Simple Deform, transferred by marker correspondence (vertex groups on three rings) onto a
differently triangulated cylinder. A long run (300 frames) is cancelled by Esc with nothing
written; the 5-frame run by a real click must give the result object with one shape key per frame,
leave the target untouched, bend the target as Blender's own Simple Deform bends it, and match what
the headless operator (exec, no window) writes for the same inputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import bpy
import numpy as np
from uikit import (
    Wait,
    button_of,
    check,
    click_button,
    click_then_escape,
    ext,
    modal_running,
    region_of,
    scan_buttons,
    screenshot,
    ui_scale,
)

from ._panels import RegionDraws, button_near, open_panel, scroll_to_bottom

TRANSFER, LIVE, BUILD_POSE_SPACE = ("anim_signals.transfer_deformation", "anim_signals.motion_db_live",
                                    "anim_signals.build_pose_space")
SOURCE, TARGET = "TR_Source", "TR_Target"
RESULT = f"{TARGET}.transfer"
RADIUS, LENGTH = 0.3, 2.0
FRAMES, ANGLES = np.arange(1, 6), np.linspace(0.0, 90.0, 5)
LONG_RUN = 300  # frames of the run Esc cancels


def _mesh(name: str, around: int, along: int, *, triangles: bool = False):
    verts, faces = ext("anim_signals.transfer").open_cylinder(around, along, radius=RADIUS, length=LENGTH,
                                                              triangles=triangles)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(map(float, v)) for v in verts], [], faces)
    ob = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(ob)
    return ob


def _markers(ob, around: int, along: int) -> None:
    """Marker vertex groups at 0, 90, 180 and 270 degrees on the bottom, middle and top rings."""
    k = 1
    for ring in (0, (along - 1) // 2, along - 1):
        for quarter in range(4):
            ob.vertex_groups.new(name=f"marker.{k:03d}").add([ring * around + quarter * around // 4], 1.0, "REPLACE")
            k += 1


def _bend(ob, frames, degrees) -> None:
    """A Simple Deform (bend about x) whose angle is keyed on ``frames``."""
    mod = ob.modifiers.new("Bend", "SIMPLE_DEFORM")
    mod.deform_method, mod.deform_axis = "BEND", "X"
    for f, a in zip(frames, degrees):
        mod.angle = math.radians(a)
        ob.keyframe_insert('modifiers["Bend"].angle', frame=float(f))


def _evaluated(ob, frame: int) -> np.ndarray:
    bpy.context.scene.frame_set(int(frame))
    me = ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    buf = np.empty(3 * len(me.vertices), dtype=np.float32)
    me.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def _coords(ob) -> np.ndarray:
    buf = np.empty(3 * len(ob.data.vertices), dtype=np.float32)
    ob.data.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def _bent_by_blender(target, degrees: float) -> np.ndarray:
    """The target's mesh bent by Blender's own Simple Deform (a temporary copy)."""
    tmp = bpy.data.objects.new("_tr_bent", target.data.copy())
    bpy.context.scene.collection.objects.link(tmp)
    mod = tmp.modifiers.new("Bend", "SIMPLE_DEFORM")
    mod.deform_method, mod.deform_axis, mod.angle = "BEND", "X", math.radians(degrees)
    out = _evaluated(tmp, bpy.context.scene.frame_current)
    mesh = tmp.data
    bpy.data.objects.remove(tmp)
    bpy.data.meshes.remove(mesh)
    return out


def _frames_of(name: str) -> np.ndarray:
    ob = bpy.data.objects[name]
    return np.stack([_evaluated(ob, f) for f in FRAMES])


def _select(source, target) -> None:
    for ob in list(bpy.context.selected_objects):
        ob.select_set(False)
    source.select_set(True)
    target.select_set(True)
    bpy.context.view_layer.objects.active = target


def _find_transfer_button(area, sidebar, redraws) -> Iterator[Wait]:
    """Open the Deformation Transfer panel (the sidebar's last) by a click on its header and map its
    button. The Motion Database panel above it is opened first when closed, so that the header
    searched below its last button (Live) is the transfer's."""
    unit = 20 * ui_scale()
    found: dict = {}
    yield from scan_buttons(sidebar, found, stop_at=BUILD_POSE_SPACE)
    above = button_of(found, BUILD_POSE_SPACE)
    if not check("Pose Space's Build button found", above is not None):
        return None
    opened: list = []
    yield from open_panel(area, sidebar, "ANIM_SIGNALS_PT_motion_db", above[1] - 0.9 * unit, redraws, opened)
    if not check("Motion Database panel open (the panel above the transfer's)", opened[0]):
        return None
    yield from scroll_to_bottom(area, sidebar, redraws)
    live = yield from button_near(sidebar, LIVE, 0.3, {})  # just above the transfer's header, at the bottom
    if not check("the Motion Database's last button found", live is not None):
        return None
    opened = []
    yield from open_panel(area, sidebar, "ANIM_SIGNALS_PT_deformation_transfer", live[1] - 0.9 * unit, redraws, opened)
    if not check("Deformation Transfer panel opened by a click on its header", opened[0]):
        return None
    yield from scroll_to_bottom(area, sidebar, redraws)
    button = yield from button_near(sidebar, TRANSFER, 0.4, {})  # the panel's last button
    check("Transfer button found", button is not None)
    return button


def run(area) -> Iterator[Wait]:
    scene = bpy.context.scene
    src, tgt = _mesh(SOURCE, 12, 9), _mesh(TARGET, 16, 11, triangles=True)
    _markers(src, 12, 9)
    _markers(tgt, 16, 11)
    _bend(src, [1, LONG_RUN], [0.0, 90.0])  # the long run's bend, re-keyed for the real run below
    _select(src, tgt)
    settings = scene.anim_signals.transfer
    settings.source, settings.target, settings.method, settings.output = SOURCE, TARGET, "CORRESPONDENCE", "SHAPE_KEYS"
    scene.frame_start, scene.frame_end = 1, LONG_RUN
    scene.frame_set(3)
    target_before = _coords(tgt)
    system = bpy.context.preferences.system
    overlap = system.use_region_overlap
    system.use_region_overlap = False
    redraws = RegionDraws(bpy.types.SpaceView3D)
    yield redraws.after(area, "overlap off")
    sidebar = region_of(area, "UI")
    try:
        yield from scroll_to_bottom(area, sidebar, redraws, up=True)  # an earlier scenario may have scrolled it
        button = yield from _find_transfer_button(area, sidebar, redraws)
        if button is None:
            return
        last = scene.anim_signals.last_transfer
        objects_before = set(bpy.data.objects.keys())
        yield from click_then_escape(sidebar, button, TRANSFER, "the transfer")
        check("Esc cancels the transfer: no result object, no result shown, the frame kept",
              set(bpy.data.objects.keys()) == objects_before and not last.valid and scene.frame_current == 3,
              f"new objects {sorted(set(bpy.data.objects.keys()) - objects_before)}, valid {last.valid}, "
              f"frame {scene.frame_current}")

        # the real run: 5 frames bending 0 -> 90 degrees
        src.animation_data_clear()
        _bend_keys(src)
        scene.frame_start, scene.frame_end = 1, len(FRAMES)
        scene.frame_set(3)
        yield redraws.after(area, "sidebar drawn with the 5-frame range")
        click_button(sidebar, button)
        yield Wait("Transfer finished", lambda: last.valid and not modal_running(TRANSFER), 120.0)
        result = bpy.data.objects.get(RESULT)
        keys = result.data.shape_keys.key_blocks if result is not None and result.data.shape_keys else []
        check("the transfer makes the result object with a shape key per frame", result is not None
              and len(keys) == 1 + len(FRAMES) and last.object_name == RESULT and last.frames == len(FRAMES),
              f"result {last.object_name!r}, {len(keys)} shape keys, {last.frames} frames")
        if result is None:
            return
        check("the target is untouched", np.array_equal(_coords(tgt), target_before) and not tgt.modifiers
              and tgt.data.shape_keys is None)
        check("the frame is where it was", scene.frame_current == 3, f"frame {scene.frame_current}")
        got = _frames_of(RESULT)
        diag = math.dist((-RADIUS, -RADIUS, 0.0), (RADIUS, RADIUS, LENGTH))
        errors = [np.linalg.norm(got[i] - _bent_by_blender(tgt, a), axis=1) / diag for i, a in enumerate(ANGLES)]
        check("the target bends as Blender's Simple Deform bends it", all(e.mean() < 0.01 and e.max() < 0.03
                                                                          for e in errors),
              "relative error mean/max per frame: " + ", ".join(f"{e.mean():.3g}/{e.max():.3g}" for e in errors))
        scene.frame_set(3)
        yield from scroll_to_bottom(area, sidebar, redraws)  # the result's numbers under the button
        screenshot("transfer_done")
        # the same inputs through the headless operator (exec, no window): the same result
        bpy.ops.anim_signals.transfer_deformation("EXEC_DEFAULT", source=SOURCE, target=TARGET,
                                                  method="CORRESPONDENCE", output="SHAPE_KEYS")
        again = _frames_of(RESULT)
        check("the window's run and a headless run write the same frames", again.shape == got.shape
              and np.allclose(again, got, atol=1e-6), f"largest difference {np.abs(again - got).max():.3g}")
        scene.frame_set(3)
        yield from scroll_to_bottom(area, sidebar, redraws, up=True)  # the next scenario starts at the top
    finally:
        redraws.close()
        system.use_region_overlap = overlap


def _bend_keys(src) -> None:
    mod = src.modifiers["Bend"]
    for f, a in zip(FRAMES, ANGLES):
        mod.angle = math.radians(a)
        src.keyframe_insert('modifiers["Bend"].angle', frame=float(f))
