"""Motion Database from the 3D Viewport's Signals tab: Build and live playback by real clicks and keys.

Two clips of the demo's biped (a walk and the jump) make an armature database, built by a click on
the panel's Build button. The biped plays the walk; Start Live makes the duplicate "<name>.live"
that a frame-change handler poses from the database. Frames are stepped with real Right-arrow
presses and played with Space (Esc stops the playback): on every frame the duplicate's rotations
are the walk's own (the best path of a clip that is in the database is the clip itself), and the
per-frame time the tool reports is positive and small. Stop Live (the same button) removes the
handler: the next frame no longer moves the duplicate.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import bpy
import numpy as np
from uikit import (
    REPO,
    Wait,
    button_of,
    check,
    click_button,
    click_then_escape,
    ext,
    make_active,
    move_mouse,
    press_key,
    region_of,
    scan_buttons,
    screenshot,
    ui_scale,
)

from ._panels import RegionDraws, button_near, open_panel, scroll_to_bottom

BUILD, LIVE, BUILD_POSE_SPACE = ("anim_signals.build_motion_database", "anim_signals.motion_db_live",
                                 "anim_signals.build_pose_space")
RECONSTRUCT = "anim_signals.reconstruct_motion"
CLEAR_INDEX = "anim_signals.clear_motion_db_index"
WALK, JUMP = "MDB_Walk", "MDB_Jump"
STEPS = 6  # frames stepped by Right-arrow presses (each about 1 s: the viewport draws in software)
MAX_MS = 50.0  # a live frame must take less (the issue measured about 1 ms)


def _biped(name: str, action_name: str, motion: dict):
    sys.path.insert(0, str(REPO / "scripts"))
    import demo  # noqa: PLC0415  the demo's generator, unchanged

    ob = demo.build_armature()
    ob.name = name
    demo.animate(ob, motion)
    ob.animation_data.action.name = action_name
    ob.animation_data.action.use_fake_user = True
    return ob


def _rotation_gap(live_ob, action, frame: float) -> float:
    """Largest difference between the duplicate's pose rotations and the action's at ``frame``."""
    worst = 0.0
    for fc in action.fcurves:
        if not fc.data_path.endswith(("rotation_euler", "rotation_quaternion")):
            continue
        bone = fc.data_path.split('"')[1]
        prop = fc.data_path.rsplit(".", 1)[1]
        value = getattr(live_ob.pose.bones[bone], prop)[fc.array_index]
        worst = max(worst, abs(value - fc.evaluate(frame)))
    return worst


def _frame_shown(scene, walker, walk, frame: int) -> Wait:
    """Frame ``frame`` has been evaluated: the scene is on it and the walker (which plays the walk)
    shows its pose. The frame number changes first; the frame's update, with the frame-change
    handlers, runs later in Blender's event loop."""
    return Wait(f"frame {frame} evaluated", lambda: scene.frame_current == frame
                and _rotation_gap(walker, walk, frame) < 1e-6, 10.0)


def _pose(ob) -> np.ndarray:
    return np.array([list(pb.rotation_euler) for pb in ob.pose.bones])


def run(area) -> Iterator[Wait]:
    sys.path.insert(0, str(REPO / "scripts"))
    import demo  # noqa: PLC0415

    motion = demo.generate_motion(200)
    walker = _biped("MDB_Walker", WALK, {k: v[:120] for k, v in motion.items()})
    _biped("MDB_Jumper", JUMP, {k: v[95:195] for k, v in motion.items()})
    make_active(walker)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 120
    scene.frame_set(1)
    settings = scene.anim_signals.motion_db
    # what an animator would pick in the panel: an armature database of these two clips, the best path
    settings.kind, settings.build_actions, settings.output, settings.k = "ARMATURE", f"{WALK}, {JUMP}", "BEST_PATH", 32
    settings.backend = "IVF"  # the approximate index an animator picks for a large library
    live_module = ext("operators.motion_db.live")
    sidebar = region_of(area, "UI")
    view = region_of(area, "WINDOW")
    redraws = RegionDraws(bpy.types.SpaceView3D)
    try:
        yield from scroll_to_bottom(area, sidebar, redraws, up=True)  # an earlier scenario may have scrolled it
        found: dict = {}
        yield from scan_buttons(sidebar, found, stop_at=BUILD_POSE_SPACE)
        above = button_of(found, BUILD_POSE_SPACE)
        if not check("Pose Space's Build button found above the Motion Database panel", above is not None):
            return
        opened: list = []
        yield from open_panel(area, sidebar, "ANIM_SIGNALS_PT_motion_db", above[1] - 0.9 * 20 * ui_scale(),
                              redraws, opened)
        if not check("Motion Database panel opened by a click on its header", opened[0]):
            return
        yield from scroll_to_bottom(area, sidebar, redraws)
        found = {}
        yield from scan_buttons(sidebar, found, stop_at=LIVE)  # Live is the panel's last button
        build, live = button_of(found, BUILD), button_of(found, LIVE)
        if not check("Build and Start Live buttons found", build is not None and live is not None,
                     f"{sorted(c.split('(')[0] for c in found)}"):
            screenshot("motion_db_buttons_missing")
            return

        click_button(sidebar, build)
        yield Wait("the database is built", lambda: len(settings.actions) == 2, 60.0)
        rotations = [fc for fc in bpy.data.actions[WALK].fcurves if "rotation" in fc.data_path]
        check("the database holds both clips, every frame and every rotation channel",
              [a.name for a in settings.actions] == [WALK, JUMP] and settings.n_frames == 120 + 100
              and settings.n_channels == len(rotations),
              f"{[a.name for a in settings.actions]}, {settings.n_frames} frames, {settings.n_channels} channels "
              f"(the walk has {len(rotations)} rotation curves)")
        yield redraws.after(area, "sidebar shows the database")
        index_file = settings.index_path
        check("Build made the k-NN index over every channel (IVF, from faiss) and saved it",
              settings.index_status == "BUILT" and settings.index_backend.startswith("IVF")
              and settings.index_channels == len(rotations) and bool(index_file) and os.path.isfile(index_file),
              f"status {settings.index_status}, {settings.index_backend!r}, {settings.index_channels} channels, "
              f"file {index_file!r}, note {settings.index_note!r}")
        check("the measured recall meets the target", settings.index_recall >= settings.recall_target,
              f"recall {settings.index_recall:.3f} for the target {settings.recall_target}")
        screenshot("motion_db_index")
        yield from scroll_to_bottom(area, sidebar, redraws)
        found = {}
        yield from scan_buttons(sidebar, found, stop_at=CLEAR_INDEX)
        clear = button_of(found, CLEAR_INDEX)
        if check("Clear Index Files button found under the index rows", clear is not None):
            click_button(sidebar, clear)
            yield Wait("the index files are cleared", lambda: not os.path.isfile(index_file), 20.0)
            check("Clear Index Files deletes the file and the sidebar shows no index",
                  not os.path.isfile(index_file) and settings.index_status == "NONE",
                  f"status {settings.index_status}")
        settings.backend = "AUTO"

        # the database's rows pushed the Live box down: scroll to the bottom again (where the Live
        # box was, as the panel ends the sidebar) and map the buttons from just above it
        yield from scroll_to_bottom(area, sidebar, redraws)

        # Esc on a long (modal) reconstruction: nothing is written
        settings.k, settings.window = 1024, 128
        yield redraws.after(area, "the button carries the long run's settings")
        reconstruct = yield from button_near(sidebar, RECONSTRUCT, (live[1] + 6 * 20 * ui_scale()) / sidebar.height, {})
        if not check("Reconstruct Motion button found", reconstruct is not None):
            return
        actions_before = set(bpy.data.actions.keys())
        yield from click_then_escape(sidebar, reconstruct, RECONSTRUCT, "the reconstruction")
        check("Esc cancels the reconstruction: no action written, the walk still assigned",
              set(bpy.data.actions.keys()) == actions_before and walker.animation_data.action.name == WALK
              and not settings.last_action, f"new actions {sorted(set(bpy.data.actions.keys()) - actions_before)}")
        settings.k, settings.window = 32, 32
        yield redraws.after(area, "the buttons carry the live settings")
        live = yield from button_near(sidebar, LIVE, (live[1] + 3 * 20 * ui_scale()) / sidebar.height, {})
        if not check("Start Live button found again below the database", live is not None):
            return
        status = bpy.context.window_manager.anim_signals.motion_db_live
        click_button(sidebar, live)
        yield Wait("live reconstruction started", lambda: status.running, 30.0)
        live_ob = bpy.data.objects.get(f"{walker.name}.live")
        check("Start Live makes the duplicate and installs the frame handler", live_ob is not None
              and live_module._on_frame_change in bpy.app.handlers.frame_change_post
              and status.object_name == f"{walker.name}.live", f"status object {status.object_name!r}")
        if live_ob is None:
            return
        walk = bpy.data.actions[WALK]
        gaps, times = [], []
        move_mouse(view, view.width / 2, view.height / 2)  # keys go to the viewport under the mouse
        for _ in range(STEPS):
            frame = scene.frame_current + 1
            press_key("Right")  # a real key press: next frame
            yield _frame_shown(scene, walker, walk, frame)
            gaps.append(_rotation_gap(live_ob, walk, frame))
            times.append(status.ms)
        check(f"{STEPS} Right-arrow presses step the frames", scene.frame_current == 1 + STEPS,
              f"frame {scene.frame_current}")
        check("every stepped frame's duplicate pose is the walk's (the clip is in the database)",
              max(gaps) < 1e-4, f"largest rotation difference {max(gaps):.2g} rad")
        check("the tool reports a small positive time per live frame", all(0.0 < t < MAX_MS for t in times),
              f"{min(times):.3g}-{max(times):.3g} ms per frame")
        check("consecutive frames grow the best path", status.best_length >= STEPS // 2,
              f"best path {status.best_length} frames after {STEPS} steps")
        yield redraws.after(area, "sidebar shows the live numbers")
        screenshot("motion_db_live")

        # play with Space, stop the playback with Esc
        start_frame = scene.frame_current
        press_key("space")
        yield Wait("playing advances the frames", lambda: scene.frame_current >= start_frame + 4, 30.0)
        played_gap = _rotation_gap(live_ob, walk, scene.frame_current)
        press_key("Escape")
        yield Wait("Esc stops the playback", lambda: not bpy.context.screen.is_animation_playing, 10.0)
        check("during playback the duplicate follows the walk", played_gap < 1e-4,
              f"largest rotation difference {played_gap:.2g} rad")
        check("Esc stops the playback, the live mode stays on", not bpy.context.screen.is_animation_playing
              and status.running)

        # Start Live built the index of its channels: the index rows grew and pushed the Live box
        # down, so find the button again at the bottom of the panel
        yield from scroll_to_bottom(area, sidebar, redraws)
        live = yield from button_near(sidebar, LIVE, 4 * 20 * ui_scale() / sidebar.height, {})
        if not check("Stop Live button found at the bottom of the panel", live is not None):
            return
        click_button(sidebar, live)  # the same button, now "Stop Live"
        yield Wait("live reconstruction stopped", lambda: not status.running, 30.0)
        check("Stop Live removes the frame handler and the live state",
              live_module._on_frame_change not in bpy.app.handlers.frame_change_post
              and live_module.live_state(scene) is None and not status.running)
        pose = _pose(live_ob)
        move_mouse(view, view.width / 2, view.height / 2)
        frame = scene.frame_current + 1
        press_key("Right")
        yield _frame_shown(scene, walker, walk, frame)
        check("after Stop Live a new frame leaves the duplicate alone", np.array_equal(_pose(live_ob), pose))
        yield redraws.after(area, "sidebar shows the live mode off")
        screenshot("motion_db_stopped")
        yield from scroll_to_bottom(area, sidebar, redraws, up=True)  # the next scenario starts at the top
    finally:
        redraws.close()
        if live_module.live_state(scene) is not None:
            live_module.stop_live(scene)
