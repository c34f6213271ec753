"""The spatial keyframes' canvas tools (operators/spatial_keyframes/canvas_tools.py, the panel's
buttons) on the generated walk.

Every tool is checked through its ``execute()`` (its result as properties) and through its modal
path driven with stand-in events the way the window manager would (headless Blender has no event
loop; ``fake_op`` and ``ev`` of the pose-space canvas tests). Expected poses come from the core's
compaction of the rotations read independently (scipy, ``_sk_helpers``) or from the original
action; poses are read back through Blender (``PoseBone.matrix_basis``). Every refusal is checked
to change nothing: the file (``assert_refused``) and the bones' transforms.

Undo is checked through the bpy module's own window (``ed.undo`` / ``ed.redo`` after a move pushed
as an undo step): the stored model comes back, and the loaded model with it (its cache is keyed by
the stored token).
"""

from __future__ import annotations

import types

import bpy
import numpy as np
import pytest
from _bl_helpers import FakeLayout, assert_refused, assert_same_state, ext_module, linked_copy, snapshot_all
from _sk_helpers import bone_state, make_walk, pose_matrices, quaternions_of, run
from test_pose_space_canvas import RECT, ev, fake_op

N_FRAMES = 60
COUNT = 6
TOOLS = ("spatial_keyframes_navigate", "spatial_keyframes_move_marker", "spatial_keyframes_add_marker",
         "spatial_keyframes_remove_marker")


@pytest.fixture
def ct(extension):
    """The canvas tools of the spatial keyframes."""
    return ext_module("operators.spatial_keyframes.canvas_tools")


@pytest.fixture
def pc(extension):
    return ext_module("operators.pose_space.canvas_state")


def build(sk, pc, name: str = "Walker", n_frames: int = N_FRAMES, count: int = COUNT):
    """The walk with its spatial keyframes (MDS, uniform keys, not optimised), and the core's own
    compaction of the rotations Blender stores (the independent expectation)."""
    pc.forget_states()
    ob, expected, parents = make_walk(sk, name, n_frames=n_frames)
    assert run("spatial_keyframes_from_action", key_mode="COUNT", count=count, projection="MDS",
               selection="UNIFORM", optimise=False) == {"FINISHED"}
    core = sk.compact_clip(quaternions_of(expected), parents, count=count, selection="uniform", projection="mds",
                           optimise=False)
    return ob, expected, core




def free_point(markers: np.ndarray, trajectory: np.ndarray) -> np.ndarray:
    """A point among the markers, away from all of them (the midpoint of the farthest-apart
    neighbours' gap would do; the grid search is simpler and deterministic)."""
    lo, hi = trajectory.min(axis=0), trajectory.max(axis=0)
    best, best_d = None, -1.0
    for x in np.linspace(lo[0], hi[0], 21):
        for y in np.linspace(lo[1], hi[1], 21):
            d = float(np.min(np.linalg.norm(markers - (x, y), axis=1)))
            if d > best_d:
                best, best_d = np.array([x, y]), d
    return best


def tool(skf, idname: str, ob, **settings):
    """The operator on a plain object, started on ``ob``'s stored model (as ``_start`` does)."""
    model = skf.load_model(ob)
    op = fake_op(idname, ob, model.shown, **settings)
    op._model = model
    return op


def pixel(pc, ob, shown, point) -> tuple[float, float]:
    view = pc.view_for(pc.state_of(ob, pc.SPATIAL_KEYFRAMES), shown, RECT)
    return tuple(float(v) for v in view.to_pixels(np.asarray(point, dtype=float)))


def current_pose_expected(core_clip, trajectory, frame: int) -> np.ndarray:
    """The pose of ``frame`` (1-based, the walk's first frame is 1) through ``core_clip``'s RBF."""
    return core_clip.rbf().evaluate(np.asarray(trajectory)[frame - 1][None])[0]


# ----------------------------------------------------------------------------------------------
# registration
# ----------------------------------------------------------------------------------------------


def test_registered_with_tooltips_and_the_press_handler(scene, ct, pc):
    for name in TOOLS:
        cls = getattr(bpy.types, f"ANIM_SIGNALS_OT_{name}")
        assert {"REGISTER", "UNDO"} <= set(cls.bl_options), name
        assert cls.__doc__ and len(cls.__doc__) > 40, name
        for prop in getattr(bpy.ops.anim_signals, name).get_rna_type().properties:
            if prop.identifier not in {"rna_type", "start_drag"}:
                assert prop.description, f"{name}.{prop.identifier} has no tooltip"
    source = pc._SOURCES[pc.SPATIAL_KEYFRAMES]
    assert source.press is ct.canvas_press


# ----------------------------------------------------------------------------------------------
# navigate
# ----------------------------------------------------------------------------------------------


def test_navigate_poses_the_cores_rbf_and_each_marker_its_key_frame(scene, skf, sk, pc):
    ob, expected, core = build(sk, pc)
    markers = core.markers
    for p in (0.5 * (markers[1] + markers[2]), markers.mean(axis=0) + 0.1 * np.ptp(markers, axis=0)):
        assert run("spatial_keyframes_navigate", position=tuple(p)) == {"FINISHED"}
        np.testing.assert_allclose(pose_matrices(ob), core.rbf().evaluate(p[None])[0], atol=5e-5)
        np.testing.assert_allclose(pc.state_of(ob, pc.SPATIAL_KEYFRAMES).cursor, p)
    for i, key in enumerate(core.keys):  # at a marker: the original action's pose of its key frame
        assert run("spatial_keyframes_navigate", position=tuple(markers[i])) == {"FINISHED"}
        np.testing.assert_allclose(pose_matrices(ob), expected[key], atol=5e-5, err_msg=f"marker {i}")
    assert pc.state_of(ob).cursor is None  # the pose space's canvas state is another one


def test_modal_navigate_drags_and_escape_restores_pose_and_cursor(scene, skf, sk, pc):
    ob, _, core = build(sk, pc)
    shown = skf.load_model(ob).shown
    st = pc.state_of(ob, pc.SPATIAL_KEYFRAMES)
    before, cursor_before = bone_state(ob), st.cursor
    xy0 = pixel(pc, ob, shown, free_point(core.markers, core.trajectory))
    xy1 = (xy0[0] + 30.0, xy0[1] - 20.0)
    op = tool(skf, "spatial_keyframes_navigate", ob)
    assert op.modal(bpy.context, ev("MOUSEMOVE", xy=xy0)) == {"PASS_THROUGH"}  # waiting
    assert op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"} and op._dragging
    assert op.modal(bpy.context, ev("MOUSEMOVE", xy=xy1)) == {"RUNNING_MODAL"}
    view = pc.view_for(st, shown, RECT)
    p1 = view.to_pose(np.array(xy1))
    np.testing.assert_allclose(st.cursor, p1)
    np.testing.assert_allclose(pose_matrices(ob), core.rbf().evaluate(p1[None])[0], atol=5e-5)
    assert op.modal(bpy.context, ev("ESC", "PRESS")) == {"CANCELLED"}
    assert np.array_equal(bone_state(ob), before) and st.cursor is cursor_before

    op = tool(skf, "spatial_keyframes_navigate", ob)
    op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", xy0))
    op.modal(bpy.context, ev("MOUSEMOVE", xy=xy1))
    assert op.modal(bpy.context, ev("LEFTMOUSE", "RELEASE", xy1)) == {"FINISHED"}
    np.testing.assert_allclose(op.position, p1)  # the result is the operator's property (redo)
    np.testing.assert_allclose(pose_matrices(ob), core.rbf().evaluate(p1[None])[0], atol=5e-5)


# ----------------------------------------------------------------------------------------------
# move, add, remove markers
# ----------------------------------------------------------------------------------------------


def test_move_marker_is_stored_exact_and_shows_the_current_frame(scene, skf, sk, pc):
    ob, expected, core = build(sk, pc)
    scene.frame_set(17)
    new = free_point(core.markers, core.trajectory)
    assert run("spatial_keyframes_move_marker", index=2, position=tuple(new)) == {"FINISHED"}
    moved = skf.load_model(ob).clip
    np.testing.assert_allclose(moved.markers[2], new, atol=1e-12)
    np.testing.assert_allclose(np.delete(moved.markers, 2, axis=0), np.delete(core.markers, 2, axis=0), atol=1e-9)
    assert skf.model_info(ob)["edited"]
    edited_core = core.with_marker_moved(2, new)
    # the rig shows the current frame's pose through the moved markers
    np.testing.assert_allclose(pose_matrices(ob), current_pose_expected(edited_core, core.trajectory, 17), atol=5e-5)
    # the RBF is exact at the new position: the key pose of marker 2 is there now
    skf.pose_from_point(ob, new)
    np.testing.assert_allclose(pose_matrices(ob), expected[core.keys[2]], atol=5e-5)


def test_modal_move_marker_escape_restores_everything_and_release_commits(scene, skf, sk, pc):
    ob, expected, core = build(sk, pc)
    scene.frame_set(23)
    model = skf.load_model(ob)
    shown = model.shown
    st = pc.state_of(ob, pc.SPATIAL_KEYFRAMES)
    i = 3
    xy0 = pixel(pc, ob, shown, core.markers[i])
    target = free_point(core.markers, core.trajectory)
    xy1 = pixel(pc, ob, shown, target)
    file_before, bones_before = snapshot_all(), bone_state(ob)

    op = tool(skf, "spatial_keyframes_move_marker", ob)
    assert op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", pixel(pc, ob, shown, target))) == {"RUNNING_MODAL"}
    assert not op._dragging  # missed every marker: still waiting
    assert op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"} and op._dragging
    assert op.index == i
    assert op.modal(bpy.context, ev("MOUSEMOVE", xy=xy1)) == {"RUNNING_MODAL"}
    view = pc.view_for(st, shown, RECT)
    p1 = core.markers[i] + view.to_pose(np.array(xy1)) - view.to_pose(np.array(xy0))
    np.testing.assert_allclose(st.preview.markers[i], p1, atol=1e-9)  # the canvas shows the edit live
    live = core.with_marker_moved(i, p1)
    np.testing.assert_allclose(pose_matrices(ob), current_pose_expected(live, core.trajectory, 23), atol=5e-5)
    # onto another marker: skipped, the marker stays at the last free point
    assert op.modal(bpy.context, ev("MOUSEMOVE", xy=pixel(pc, ob, shown, core.markers[0]))) == {"RUNNING_MODAL"}
    np.testing.assert_allclose(st.preview.markers[i], p1, atol=1e-9)
    np.testing.assert_allclose(op.position, p1, atol=1e-9)
    assert op.modal(bpy.context, ev("ESC", "PRESS")) == {"CANCELLED"}
    assert_same_state(file_before, snapshot_all())
    assert np.array_equal(bone_state(ob), bones_before) and st.preview is None

    op = tool(skf, "spatial_keyframes_move_marker", ob)
    op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", xy0))
    op.modal(bpy.context, ev("MOUSEMOVE", xy=xy1))
    assert op.modal(bpy.context, ev("LEFTMOUSE", "RELEASE", xy1)) == {"FINISHED"}
    assert st.preview is None
    np.testing.assert_allclose(skf.load_model(ob).clip.markers[i], p1, atol=1e-9)
    np.testing.assert_allclose(op.position, p1, atol=1e-9)
    skf.pose_from_point(ob, p1)
    np.testing.assert_allclose(pose_matrices(ob), expected[core.keys[i]], atol=5e-5)


def test_add_marker_from_the_current_pose_at_a_non_key_frame(scene, skf, sk, pc):
    ob, expected, core = build(sk, pc)
    frame = next(f for f in range(5, N_FRAMES) if f - 1 not in set(core.keys.tolist()))
    scene.frame_set(frame)
    pose = pose_matrices(ob)
    np.testing.assert_allclose(pose, expected[frame - 1], atol=5e-5)  # the action's pose there
    p = free_point(core.markers, core.trajectory)
    assert run("spatial_keyframes_add_marker", position=tuple(p)) == {"FINISHED"}
    clip = skf.load_model(ob).clip
    assert len(clip.markers) == COUNT + 1 and clip.keys[-1] == -1
    np.testing.assert_allclose(clip.markers[-1], p, atol=1e-12)
    np.testing.assert_allclose(pose_matrices(ob), pose, atol=1e-6)  # adding does not move the rig
    skf.pose_from_point(ob, core.markers[0])  # elsewhere, then back at the new marker
    skf.pose_from_point(ob, p)
    np.testing.assert_allclose(pose_matrices(ob), pose, atol=5e-5)
    np.testing.assert_allclose(pc.state_of(ob, pc.SPATIAL_KEYFRAMES).cursor, p)


def test_modal_add_marker_places_it_at_the_next_click(scene, skf, sk, pc):
    ob, expected, core = build(sk, pc)
    scene.frame_set(9)
    pose = pose_matrices(ob)
    shown = skf.load_model(ob).shown
    st = pc.state_of(ob, pc.SPATIAL_KEYFRAMES)
    xy = pixel(pc, ob, shown, free_point(core.markers, core.trajectory))
    file_before = snapshot_all()
    op = tool(skf, "spatial_keyframes_add_marker", ob)
    assert "click on the canvas" in op.HINT
    assert op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", xy)) == {"RUNNING_MODAL"}
    assert len(st.preview.markers) == COUNT + 1
    assert op.modal(bpy.context, ev("RIGHTMOUSE", "PRESS", xy)) == {"CANCELLED"}
    assert_same_state(file_before, snapshot_all())
    assert st.preview is None

    op = tool(skf, "spatial_keyframes_add_marker", ob)
    op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", xy))
    assert op.modal(bpy.context, ev("LEFTMOUSE", "RELEASE", xy)) == {"FINISHED"}
    p = pc.view_for(st, shown, RECT).to_pose(np.array(xy))
    clip = skf.load_model(ob).clip
    np.testing.assert_allclose(clip.markers[-1], p, atol=1e-9)
    skf.pose_from_point(ob, core.markers[1])
    skf.pose_from_point(ob, p)
    np.testing.assert_allclose(pose_matrices(ob), pose, atol=5e-5)

    # a click on a marker adds nothing (markers must be distinct points)
    before = snapshot_all()
    op = tool(skf, "spatial_keyframes_add_marker", ob)
    on_marker = pixel(pc, ob, shown, core.markers[2])
    op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", on_marker))
    assert op.modal(bpy.context, ev("LEFTMOUSE", "RELEASE", on_marker)) == {"CANCELLED"}
    assert_same_state(before, snapshot_all())


def test_remove_marker_by_index_and_by_click(scene, skf, sk, pc):
    ob, expected, core = build(sk, pc)
    assert run("spatial_keyframes_remove_marker", index=1) == {"FINISHED"}
    clip = skf.load_model(ob).clip
    np.testing.assert_array_equal(clip.keys, np.delete(core.keys, 1))
    np.testing.assert_allclose(clip.markers, np.delete(core.markers, 1, axis=0), atol=1e-9)
    skf.pose_from_point(ob, clip.markers[1])  # the next marker keeps its key pose
    np.testing.assert_allclose(pose_matrices(ob), expected[core.keys[2]], atol=5e-5)

    model = skf.load_model(ob)
    op = tool(skf, "spatial_keyframes_remove_marker", ob)
    xy = pixel(pc, ob, model.shown, clip.markers[0])
    assert op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", xy)) == {"RUNNING_MODAL"} and op.index == 0
    assert op.modal(bpy.context, ev("LEFTMOUSE", "RELEASE", xy)) == {"FINISHED"}
    np.testing.assert_array_equal(skf.load_model(ob).clip.keys, np.delete(core.keys, [0, 1]))
    assert run("spatial_keyframes_remove_marker", index=0) == {"FINISHED"}
    assert len(skf.load_model(ob).clip.markers) == 3
    assert_refused(lambda: run("spatial_keyframes_remove_marker", index=0), "at least 3 are needed")
    op = tool(skf, "spatial_keyframes_remove_marker", ob)  # a click on one of the last 3: refused, still waiting
    before = snapshot_all()
    xy = pixel(pc, ob, op._space, skf.load_model(ob).clip.markers[1])
    assert op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", xy)) == {"RUNNING_MODAL"} and not op._dragging
    assert any("at least 3 are needed" in message for _, message in op.reports), op.reports
    assert pc.state_of(ob, pc.SPATIAL_KEYFRAMES).preview is None
    assert_same_state(before, snapshot_all())


def test_edited_markers_survive_save_and_reload(scene, skf, sk, pc, tmp_path):
    ob, expected, core = build(sk, pc)
    scene.frame_set(31)
    pose = pose_matrices(ob)
    added = free_point(core.markers, core.trajectory)
    assert run("spatial_keyframes_add_marker", position=tuple(added)) == {"FINISHED"}
    moved = 0.5 * (core.markers[0] + core.markers[1])
    assert run("spatial_keyframes_move_marker", index=4, position=tuple(moved)) == {"FINISHED"}
    edited = skf.load_model(ob).clip
    path = str(tmp_path / "edited_markers.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, check_existing=False)
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    ob = bpy.data.objects["Walker"]
    assert skf.model_info(ob)["edited"] and skf.model_info(ob)["markers"] == COUNT + 1
    clip = skf.load_model(ob).clip
    np.testing.assert_array_equal(clip.keys, edited.keys)
    np.testing.assert_allclose(clip.markers, edited.markers, atol=1e-12)
    bpy.context.view_layer.objects.active = ob
    assert run("spatial_keyframes_navigate", position=tuple(added)) == {"FINISHED"}
    np.testing.assert_allclose(pose_matrices(ob), pose, atol=5e-5)
    assert run("spatial_keyframes_navigate", position=tuple(moved)) == {"FINISHED"}
    np.testing.assert_allclose(pose_matrices(ob), expected[core.keys[4]], atol=5e-5)


# ----------------------------------------------------------------------------------------------
# bad input: a clear message, nothing changed
# ----------------------------------------------------------------------------------------------


def refused(ob, op: str, match: str, **kwargs) -> None:
    """Refused with ``match``: the file and the bones' transforms unchanged (the action applied
    first: any operator call lets a new object's animation reach its bones once)."""
    bpy.context.scene.frame_set(bpy.context.scene.frame_current)
    bones = bone_state(ob) if ob is not None and ob.pose is not None else None
    assert_refused(lambda: run(op, **kwargs), match)
    if bones is not None:
        assert np.array_equal(bone_state(ob), bones), op


def test_bad_input_changes_nothing(scene, skf, sk, pc):
    ob, _, core = build(sk, pc)
    m = core.markers
    refused(ob, "spatial_keyframes_move_marker", "Marker 6 does not exist: the model has 6 markers", index=6,
            position=(0.0, 0.0))
    refused(ob, "spatial_keyframes_remove_marker", "Marker 9 does not exist", index=9)
    for op, kwargs in (("spatial_keyframes_navigate", {}), ("spatial_keyframes_move_marker", {"index": 1}),
                       ("spatial_keyframes_add_marker", {})):
        refused(ob, op, "must be finite numbers", position=(float("nan"), 0.0), **kwargs)
        refused(ob, op, "lies more than 1000 times", position=(1e9, 0.0), **kwargs)
    refused(ob, "spatial_keyframes_move_marker", "Another marker is already at that point", index=1,
            position=tuple(m[2]))
    refused(ob, "spatial_keyframes_add_marker", "Another marker is already at that point", position=tuple(m[0]))


def test_no_model_or_a_model_that_no_longer_fits_is_refused(scene, skf, sk, pc):
    ob, _, _ = make_walk(sk, "Bare", n_frames=20)
    for op in TOOLS:
        assert not getattr(bpy.ops.anim_signals, op).poll(), op
        refused(ob, op, "has no spatial keyframes: build them first")
    ob, _, _ = build(sk, pc, "Renamed", n_frames=30, count=4)
    ob.pose.bones["Head"].name = "Skull"  # the stored model names "Head"
    for op in TOOLS:
        refused(ob, op, 'has no bone .Head.*rebuild the spatial keyframes')
    bpy.context.view_layer.objects.active = None
    assert_refused(lambda: run("spatial_keyframes_navigate"), "No active object")


def test_linked_armature_is_refused(scene, skf, sk, pc, tmp_path):
    ob, _, core = build(sk, pc, "LinkedWalker", n_frames=30, count=4)
    linked = linked_copy(ob, tmp_path, scene)
    p = tuple(core.markers[0])
    refused(linked, "spatial_keyframes_navigate", "linked from library", position=p)
    refused(linked, "spatial_keyframes_move_marker", "linked from library", index=0,
            position=tuple(free_point(core.markers, core.trajectory)))
    refused(linked, "spatial_keyframes_add_marker", "linked from library",
            position=tuple(free_point(core.markers, core.trajectory)))
    refused(linked, "spatial_keyframes_remove_marker", "linked from library", index=0)


def test_a_canvas_showing_the_pose_space_refuses(scene, skf, sk, pc):
    ob, _, core = build(sk, pc, n_frames=30, count=4)
    ext_module("operators.pose_space").build(ob, scene)
    scene.anim_signals.pose_space_canvas.shows = "POSE_SPACE"
    assert not bpy.ops.anim_signals.spatial_keyframes_navigate.poll()
    refused(ob, "spatial_keyframes_navigate", "set Canvas to Spatial Keyframes", position=tuple(core.markers[0]))
    scene.anim_signals.pose_space_canvas.shows = "SPATIAL_KEYFRAMES"
    assert run("spatial_keyframes_navigate", position=tuple(core.markers[0])) == {"FINISHED"}


# ----------------------------------------------------------------------------------------------
# the press on the canvas, the panel
# ----------------------------------------------------------------------------------------------


def test_press_moves_a_marker_navigates_elsewhere_and_shift_records(scene, skf, sk, pc, ct, monkeypatch):
    ob, _, core = build(sk, pc)
    shown = skf.load_model(ob).shown
    started: list = []

    def starter(name):
        return lambda how, **props: started.append((name, how, props)) or {"RUNNING_MODAL"}

    fake_ops = types.SimpleNamespace(anim_signals=types.SimpleNamespace(
        **{name: starter(name) for name in ("spatial_keyframes_move_marker", "spatial_keyframes_navigate",
                                            "spatial_keyframes_record")}))
    monkeypatch.setattr(ct, "bpy", types.SimpleNamespace(ops=fake_ops))
    source = pc._SOURCES[pc.SPATIAL_KEYFRAMES]
    on_marker = pixel(pc, ob, shown, core.markers[4])
    free = pixel(pc, ob, shown, free_point(core.markers, core.trajectory))
    assert source.press(bpy.context, ev("LEFTMOUSE", "PRESS", on_marker), ob, shown, RECT) == {"FINISHED"}
    assert source.press(bpy.context, ev("LEFTMOUSE", "PRESS", free), ob, shown, RECT) == {"FINISHED"}
    source.press(bpy.context, ev("LEFTMOUSE", "PRESS", free, shift=True), ob, shown, RECT)
    assert started == [
        ("spatial_keyframes_move_marker", "INVOKE_DEFAULT", {"index": 4, "start_drag": True}),
        ("spatial_keyframes_navigate", "INVOKE_DEFAULT", {"start_drag": True}),
        ("spatial_keyframes_record", "INVOKE_DEFAULT", {"start_drag": True}),
    ]


def test_the_canvas_press_reaches_the_spatial_keyframes_handler(scene, skf, sk, pc, ct, monkeypatch):
    """The sidebar's press operator hands a press on a canvas showing spatial keyframes to their
    handler, which starts Move Marker on the diamond pressed."""
    ob, _, core = build(sk, pc)
    shown = skf.load_model(ob).shown
    canvas_view = ext_module("operators.pose_space.canvas_view")
    source = pc.shown_on_canvas(bpy.context)[2]
    assert source.kind == pc.SPATIAL_KEYFRAMES and source.press is ct.canvas_press
    started: list = []
    fake_ops = types.SimpleNamespace(anim_signals=types.SimpleNamespace(
        spatial_keyframes_move_marker=lambda how, **props: started.append(props) or {"RUNNING_MODAL"}))
    monkeypatch.setattr(ct, "bpy", types.SimpleNamespace(ops=fake_ops))
    monkeypatch.setattr(canvas_view, "_canvas_under_mouse", lambda context, event: (ob, shown, RECT, source))
    press = canvas_view.ANIM_SIGNALS_OT_pose_space_canvas_press
    event = ev("LEFTMOUSE", "PRESS", pixel(pc, ob, shown, core.markers[5]))
    assert press.invoke(types.SimpleNamespace(), bpy.context, event) == {"FINISHED"}
    assert started == [{"index": 5, "start_drag": True}]


def _draw(scene, ob) -> list:
    panel = bpy.types.ANIM_SIGNALS_PT_spatial_keyframes
    calls: list = []
    me = types.SimpleNamespace(layout=FakeLayout(calls), draw_model=panel.draw_model,
                               draw_comparison=panel.draw_comparison)
    panel.draw(me, types.SimpleNamespace(scene=scene, active_object=ob))
    return calls


def test_panel_shows_the_canvas_tools_and_edited(scene, skf, sk, pc, ct):
    ob, _, _ = make_walk(sk, "Bare", n_frames=20)
    calls = _draw(scene, ob)
    assert not any(c[0] == "operator" and c[1].startswith("anim_signals.spatial_keyframes_navigate") for c in calls)
    ob, _, core = build(sk, pc)
    calls = _draw(scene, ob)
    ops = [c[1] for c in calls if c[0] == "operator"]
    assert {f"anim_signals.{name}" for name in TOOLS} - {"anim_signals.spatial_keyframes_move_marker"} <= set(ops)
    assert {"anim_signals.pose_space_view_all", "anim_signals.pose_space_save_png"} <= set(ops)
    assert {"anim_signals.spatial_keyframes_record", "anim_signals.spatial_keyframes_play_back"} <= set(ops)
    assert ("prop", "record_frames") in calls
    labels = " | ".join(c[1] for c in calls if c[0] == "label")
    assert "diamond: move marker" in labels and "Shift: record" in labels and "edited" not in labels
    assert run("spatial_keyframes_remove_marker", index=0) == {"FINISHED"}
    labels = " | ".join(c[1] for c in _draw(scene, ob) if c[0] == "label")
    assert f"Markers {COUNT - 1} " in labels and "Markers edited on the canvas" in labels, labels


# ----------------------------------------------------------------------------------------------
# a rig of the size for the live cursor: 60 bones and 30 markers
# ----------------------------------------------------------------------------------------------


def test_live_drags_on_60_bones_and_30_markers(scene, skf, sk, pc, capsys):
    """200 mouse moves of Navigate and of Move Marker on a 60-bone chain with 30 markers: after the
    last move the bones hold the core's RBF pose at the cursor (navigate) and at the current frame
    through the moved marker (move marker); Esc puts the rest pose back. The time per move is
    printed, not asserted (the benchmark measures it: scripts/benchmark_spatial_keyframes.py)."""
    import time

    from _bl_helpers import new_armature

    pc.forget_states()
    chain = sk.generated.articulated_chain(300, 60, seed=3)
    names = [f"J{j:02d}" for j in range(60)]
    ob = new_armature("Chain", [(name, (0.0, 0.0, 0.1 * j), (0.0, 0.0, 0.1 * (j + 1)),
                                 names[p] if p >= 0 else None, True)
                                for j, (name, p) in enumerate(zip(names, chain.parents, strict=True))])
    for pb in ob.pose.bones:
        pb.rotation_mode = "QUATERNION"
    clip = sk.compact_clip(chain.quaternions, chain.parents, count=30, projection="pca", optimise=False)
    storage = ext_module("operators.spatial_keyframes.storage")
    storage.store_model(ob, clip, {"action": "", "frame_start": 1, "frame_end": 300, "bones": names,
                                   "parents": list(chain.parents), "modes": ["QUATERNION"] * 60,
                                   "projection": "pca", "selection": "uniform", "optimised": False, "error": 0.0})
    model = skf.load_model(ob)
    view = pc.view_for(pc.state_of(ob, pc.SPATIAL_KEYFRAMES), model.shown, RECT)
    lo, hi = model.shown.positions.min(axis=0), model.shown.positions.max(axis=0)
    path = [tuple(view.to_pixels(lo + (hi - lo) * (0.5 + 0.4 * np.array([np.cos(t), np.sin(t)]))))
            for t in np.linspace(0.0, 2.0 * np.pi, 200)]

    rest = quaternions_now(ob)

    def per_move(op, start, expected) -> float:
        assert op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", start)) == {"RUNNING_MODAL"} and op._dragging
        t0 = time.perf_counter()
        for xy in path:
            op.modal(bpy.context, ev("MOUSEMOVE", xy=xy))
        ms = 1e3 * (time.perf_counter() - t0) / len(path)
        np.testing.assert_allclose(same_hemisphere(quaternions_now(ob), expected(op)), expected(op), atol=2e-5)
        assert op.modal(bpy.context, ev("ESC", "PRESS")) == {"CANCELLED"}
        np.testing.assert_allclose(quaternions_now(ob), rest, atol=0.0)
        return ms

    def at_cursor(op):
        return sk.as_quaternions(model.rbf.evaluate(np.asarray(op.position[:])[None])[0])

    def through_moved_marker(op):
        moved = clip.with_marker_moved(7, op.position[:])
        frame = int(bpy.context.scene.frame_current) - 1
        return sk.as_quaternions(moved.rbf().evaluate(clip.trajectory[frame][None])[0])

    navigate = per_move(tool(skf, "spatial_keyframes_navigate", ob), path[0], at_cursor)
    move = per_move(tool(skf, "spatial_keyframes_move_marker", ob), tuple(view.to_pixels(clip.markers[7])),
                    through_moved_marker)
    with capsys.disabled():
        print(f"\n60 bones, 30 markers: navigate {navigate:.2f} ms, move marker {move:.2f} ms per mouse move")


def quaternions_now(ob) -> np.ndarray:
    """The bones' rotation_quaternion values now, (J, 4)."""
    return np.array([pb.rotation_quaternion[:] for pb in ob.pose.bones])


def same_hemisphere(q: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``q`` with each quaternion's sign chosen to agree with ``reference`` (q and -q are one rotation)."""
    return q * np.where(np.sum(q * reference, axis=-1, keepdims=True) < 0.0, -1.0, 1.0)


def test_undo_of_a_move_restores_the_stored_model(scene, skf, sk, pc):
    """Ctrl+Z after a move: the stored markers (and the model loaded from them) are the build's
    again, redo moves the marker back (Blender's memfile undo in the window the bpy module has)."""
    ob, _, core = build(sk, pc)
    window = bpy.context.window_manager.windows[0]
    new = free_point(core.markers, core.trajectory)
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.undo_push(message="built")
        assert bpy.ops.anim_signals.spatial_keyframes_move_marker("EXEC_DEFAULT", True, index=2,
                                                                  position=tuple(new)) == {"FINISHED"}
        np.testing.assert_allclose(skf.load_model(bpy.data.objects["Walker"]).clip.markers[2], new, atol=1e-12)
        assert bpy.ops.ed.undo() == {"FINISHED"}
        ob = bpy.data.objects["Walker"]
        assert not skf.model_info(ob)["edited"]
        np.testing.assert_allclose(skf.load_model(ob).clip.markers, core.markers, atol=1e-9)
        assert bpy.ops.ed.redo() == {"FINISHED"}
        ob = bpy.data.objects["Walker"]
        assert skf.model_info(ob)["edited"]
        np.testing.assert_allclose(skf.load_model(ob).clip.markers[2], new, atol=1e-12)
