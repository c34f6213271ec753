"""Hostile input for Fit Spline, Make Cyclic, Blend, Compare and Deformation Transfer.

One table per operator: each row builds a scene that is wrong in one way (non-finite or extreme
values, stray or duplicated keys, a single key, constant curves, huge and tiny ranges, NLA tweak
mode, linked data, shared actions and slots) and says what must happen: a refusal whose message
names the problem with the file unchanged (``assert_refused``), or a run whose result is checked.
Then the failures that happen part-way: data removed or edited while a modal run works
(``StepwiseDriver``), and a write that fails after others succeeded (injected), which must leave
nothing behind.
"""

from __future__ import annotations

import os
import re
import sys

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    IS_SLOTTED,
    StepwiseDriver,
    action_fcurves_all,
    assert_refused,
    assert_same_state,
    event,
    fcurves_of,
    key_array,
    keyed,
    make_object,
    snapshot_all,
)
from conftest import EXT_MODULE
from test_deformation_transfer import (
    bend,
    markers_on_rings,
    select,
    source_cylinder,
    target_cylinder,
)
from test_loop_blend_compare import make_walker

OPS = EXT_MODULE + ".operators"


def op(name: str, **kwargs):
    return lambda: getattr(bpy.ops.anim_signals, name)("EXEC_DEFAULT", **kwargs)


def module(path: str):
    return sys.modules[f"{OPS}.{path}"]


# ----------------------------------------------------------------------------------------------
# Breaking the data
# ----------------------------------------------------------------------------------------------


def curve(ob, path="location", index=0):
    return next(fc for fc in fcurves_of(ob) if fc.data_path == path and fc.array_index == index)


def set_key(fc, i: int, frame: float | None = None, value: float | None = None) -> None:
    """Give key ``i`` another frame and/or value (float32, as Blender stores them)."""
    co = key_array(fc)
    if frame is not None:
        co[i, 0] = frame
    if value is not None:
        co[i, 1] = value
    with np.errstate(over="ignore"):
        fc.keyframe_points.foreach_set("co", co.astype(np.float32).ravel())
    fc.update()


def add_stray_key(ob, frame: float) -> None:
    curve(ob).keyframe_points.insert(frame, 0.3)


def all_keys_on_one_frame(ob, n: int = 6) -> None:
    """Every curve of ``ob``: ``n`` keys, all on frame 1."""
    for fc in fcurves_of(ob):
        kps = fc.keyframe_points
        kps.clear()
        kps.add(n)
        kps.foreach_set("co", np.column_stack([np.ones(n), np.arange(n)]).astype(np.float32).ravel())


def scale_values(ob, factor: float) -> None:
    for fc in fcurves_of(ob):
        co = key_array(fc)
        co[:, 1] *= factor
        with np.errstate(over="ignore", under="ignore"):
            fc.keyframe_points.foreach_set("co", co.astype(np.float32).ravel())
        fc.update()


def enter_tweak_mode(ob) -> None:
    """Push the object's action to an NLA strip and edit it in tweak mode."""
    adt = ob.animation_data
    action = adt.action
    track = adt.nla_tracks.new()
    strip = track.strips.new(action.name, 1, action)
    adt.action = None
    track.select = strip.select = True
    adt.use_tweak_mode = True
    assert adt.use_tweak_mode


def link_action(ob, tmp_path) -> None:
    """Replace the object's action by the same action linked from a library (read-only)."""
    action = ob.animation_data.action
    name, path = action.name, str(tmp_path / "lib.blend")
    bpy.data.libraries.write(path, {action}, fake_user=True)
    ob.animation_data.action = None
    bpy.data.actions.remove(action)
    with bpy.data.libraries.load(path, link=True) as (_src, dst):
        dst.actions = [name]
    ob.animation_data.action = dst.actions[0]
    if IS_SLOTTED:
        ob.animation_data.action_slot = dst.actions[0].slots[0]


def all_handles_finite() -> bool:
    for action in bpy.data.actions:
        for fc in action_fcurves_all(action):
            for prop in ("co", "handle_left", "handle_right"):
                if not np.isfinite(key_array(fc, prop)).all():
                    return False
    return True


# ----------------------------------------------------------------------------------------------
# Fit Spline
# ----------------------------------------------------------------------------------------------

STRAY = r"has a key at frame {}, far from the others \(frames 1-40\)"

FIT_REFUSED = [
    ("nan value", lambda ob: set_key(curve(ob), 5, value=np.nan), r"'location\[0\]'.* value nan at frame 6"),
    ("inf value", lambda ob: set_key(curve(ob), 5, value=np.inf), r"'location\[0\]'.* value inf at frame 6"),
    ("1e308 value (inf in float32)", lambda ob: set_key(curve(ob), 5, value=1e308), "value inf at frame 6"),
    ("key at frame +inf", lambda ob: set_key(curve(ob), 39, frame=np.inf), r"'location\[0\]'.* key at frame inf"),
    ("key at frame nan", lambda ob: set_key(curve(ob), 39, frame=np.nan), "key at frame nan"),
    ("stray key at 1e5", lambda ob: add_stray_key(ob, 1e5), STRAY.format(100000)),
    ("stray key at 3e7", lambda ob: add_stray_key(ob, 3e7), STRAY.format(r"3e\+07")),
    ("stray key at -1e6", lambda ob: add_stray_key(ob, -1e6), r"has a key at frame -1e\+06, far from the others"),
    ("six keys on one frame", all_keys_on_one_frame, "several keys on one frame"),
    ("subnormal values: constant", lambda ob: scale_values(ob, 1e-42), "constant"),
]


@pytest.mark.parametrize("name, spoil, match", FIT_REFUSED, ids=[r[0] for r in FIT_REFUSED])
def test_fit_refuses(scene, name, spoil, match):
    ob, _, _ = make_object(n_frames=40)
    spoil(ob)
    assert_refused(op("fit_latent_spline", mode="LATENT"), match)
    assert_refused(op("fit_latent_spline", mode="PER_CHANNEL", keep_original=False), match)


def test_fit_single_key_and_tiny_range(scene):
    ob, _, _ = make_object(n_frames=40)
    for fc in fcurves_of(ob):
        fc.keyframe_points.clear()
        fc.keyframe_points.insert(7, 1.0)
    assert_refused(op("fit_latent_spline"), "keys on fewer than 2 frames")  # Fewest Keys
    assert_refused(op("fit_latent_spline", mode="LATENT"), "keys on fewer than 4 frames")
    # Keys a fiftieth of a frame apart are distinct frames: fitted, every key kept finite.
    frames = 1.0 + 0.02 * np.arange(6)
    for fc in fcurves_of(ob):
        fc.keyframe_points.clear()
        fc.keyframe_points.add(6)
        fc.keyframe_points.foreach_set("co", np.column_stack([frames, np.arange(6) % 2]).astype(np.float32).ravel())
        fc.update()
    result = op("fit_latent_spline", keep_original=False, max_error_other=1e-3, max_error_location=1e-3)()
    assert result == {"FINISHED"}
    assert all_handles_finite()
    np.testing.assert_allclose(curve(ob).evaluate(1.04), 0.0, atol=1e-3)
    np.testing.assert_allclose(curve(ob).evaluate(1.06), 1.0, atol=1e-3)


def test_fit_huge_values_never_write_non_finite_keys(scene):
    """Values around 1e30: either a clear refusal with nothing changed or finite keys within the max error."""
    make_object(n_frames=40)
    scale_values(bpy.context.active_object, 1e30)
    before = snapshot_all()
    try:
        op("fit_latent_spline", keep_original=False, max_error_location=1e28, max_error_other=1e28,
           max_error_rotation=10.0)()
    except RuntimeError as err:
        assert re.search(r"location\[\d\]|rotation_euler\[\d\]|scale\[\d\]", str(err)), str(err)
        assert re.search(r"not finite|rescale|scale the curve", str(err)), str(err)
        assert_same_state(before, snapshot_all())
    assert all_handles_finite()


def test_fit_in_tweak_mode_linked_and_shared(scene, tmp_path):
    ob, _, _ = make_object("A", n_frames=40)
    enter_tweak_mode(ob)
    assert_refused(op("fit_latent_spline"), r'"A" is in NLA tweak mode: exit tweak mode first')
    bpy.data.objects.remove(ob)

    ob, _, _ = make_object("L", n_frames=40)
    link_action(ob, tmp_path)
    assert_refused(op("fit_latent_spline", keep_original=False), "linked from library")

    # One action played by two objects: a copy for the active one (keep original), the other keeps it.
    ob, _, _ = make_object("S", n_frames=40)
    other = bpy.data.objects.new("S2", None)
    scene.collection.objects.link(other)
    other.animation_data_create()
    other.animation_data.action = ob.animation_data.action
    if IS_SLOTTED:
        other.animation_data.action_slot = ob.animation_data.action_slot
    shared = ob.animation_data.action
    n_keys = len(curve(ob).keyframe_points)
    bpy.context.view_layer.objects.active = ob
    assert op("fit_latent_spline", mode="LATENT")() == {"FINISHED"}
    assert ob.animation_data.action != shared and other.animation_data.action == shared
    assert len(curve(other).keyframe_points) == n_keys > len(curve(ob).keyframe_points)


@pytest.mark.skipif(not IS_SLOTTED, reason="slotted actions exist from Blender 4.4")
def test_fit_one_slot_of_an_action_with_two(scene):
    """Two objects animated by two slots of one action: fitting one rewrites only its slot's curves."""
    a, _, _ = make_object("SlotA", n_frames=40)
    action = a.animation_data.action
    b, _, _ = make_object("SlotB", n_frames=40, seed=7)
    b_action = b.animation_data.action
    b.animation_data.action = action
    b.animation_data.action_slot = action.slots.new(id_type="OBJECT", name="SlotB")
    frames = np.arange(1, 41, dtype=np.float64)
    keyed(b, "location", frames, np.column_stack([np.sin(frames / 5)] * 3))
    bpy.data.actions.remove(b_action)
    b_keys = {(fc.data_path, fc.array_index): key_array(fc) for fc in fcurves_of(b)}
    assert b_keys and len(action.slots) == 2
    bpy.context.view_layer.objects.active = a
    assert op("fit_latent_spline", keep_original=False, mode="LATENT")() == {"FINISHED"}
    assert len(curve(a).keyframe_points) < 40
    for fc in fcurves_of(b):
        np.testing.assert_array_equal(key_array(fc), b_keys[(fc.data_path, fc.array_index)])


def _fit_driver(scene, ob):
    fit_ops = module("fit_spline.operators")
    return StepwiseDriver(fit_ops.ANIM_SIGNALS_OT_fit_latent_spline, bpy.context, mode="LATENT", keep_original=False)


@pytest.mark.parametrize("change, match", [
    ("remove object", "removed during the fit"),
    ("remove curve", r"'?location\[0\]'? of \"Mover\" was removed while fitting"),
    ("edit a key", "were edited while fitting"),
])
def test_fit_data_changed_while_fitting(scene, change, match):
    ob, _, _ = make_object(n_frames=40)
    driver = _fit_driver(scene, ob)
    before = snapshot_all()
    if change == "remove object":
        bpy.data.objects.remove(ob)
        before = snapshot_all()
    elif change == "remove curve":
        action = ob.animation_data.action
        fc = curve(ob)
        if IS_SLOTTED:
            next(cb for layer in action.layers for strip in layer.strips for cb in strip.channelbags).fcurves.remove(fc)
        else:
            action.fcurves.remove(fc)
        before = snapshot_all()
    else:
        set_key(curve(ob), 3, value=5.0)
        before = snapshot_all()
    assert driver.run_to_end(bpy.context) == {"CANCELLED"}
    assert any(level == {"ERROR"} and re.search(match, msg) for level, msg in driver.reports), driver.reports
    assert_same_state(before, snapshot_all())


def test_only_a_modal_fit_watches_for_edits(scene, monkeypatch):
    """The digest that refuses curves edited while fitting is read in a modal run (before and at the
    write), not in a blocking one, where nothing else runs in between."""
    fitting = module("fit_spline.fitting")
    reads = []
    original = fitting.curves_digest
    monkeypatch.setattr(fitting, "curves_digest", lambda curves: reads.append(len(curves)) or original(curves))
    ob, _, _ = make_object(n_frames=40)
    assert op("fit_latent_spline", keep_original=False)() == {"FINISHED"}
    assert reads == []
    other, _, _ = make_object("Other", n_frames=40, seed=3)
    bpy.context.view_layer.objects.active = other
    assert _fit_driver(scene, other).run_to_end(bpy.context) == {"FINISHED"}
    assert len(reads) == 2


# ----------------------------------------------------------------------------------------------
# Make Cyclic
# ----------------------------------------------------------------------------------------------

LOOP_REFUSED = [
    ("nan value", lambda ob: set_key(curve(ob), 5, value=np.nan), {}, r"'location\[0\]'.* value nan at frame 6"),
    ("key at frame -inf", lambda ob: set_key(curve(ob), 0, frame=-np.inf), {}, "key at frame -inf"),
    ("stray key at 1e5", lambda ob: add_stray_key(ob, 1e5), {}, r"has a key at frame 100000, far from the others"),
    ("stray key at 3e7, find cycle", lambda ob: add_stray_key(ob, 3e7), {"range_mode": "AUTO"}, "far from the others"),
    ("custom range of a million frames", lambda ob: None, {"range_mode": "CUSTOM", "frame_start": 1,
                                                            "frame_end": 1_000_000}, "Narrow the frame range"),
    ("six keys on one frame", all_keys_on_one_frame, {}, "too short to loop: 1 frame.*keys sharing a frame"),
    ("a single key", lambda ob: [fc.keyframe_points.clear() or fc.keyframe_points.insert(3, 1.0)
                                 for fc in fcurves_of(ob)], {}, "too short to loop: 1 frame"),
    ("constant", lambda ob: scale_values(ob, 0.0), {}, "Nothing moves"),
    ("empty custom range", lambda ob: None, {"range_mode": "CUSTOM", "frame_start": 10, "frame_end": 2}, "is empty"),
    ("max period below min", lambda ob: None, {"range_mode": "AUTO", "min_period": 20, "max_period": 10},
     r"max period \(10\) is shorter than the min period \(20\)"),
    ("tweak mode", enter_tweak_mode, {}, "NLA tweak mode"),
]


@pytest.mark.parametrize("name, spoil, settings, match", LOOP_REFUSED, ids=[r[0] for r in LOOP_REFUSED])
def test_make_cyclic_refuses(scene, name, spoil, settings, match):
    ob, _ = make_walker(n_frames=40)
    spoil(ob)
    bpy.context.view_layer.objects.active = ob
    assert_refused(op("make_cyclic", **settings), match)
    assert_refused(op("make_cyclic", keep_original=False, **settings), match)


def test_make_cyclic_stray_key_outside_a_manual_range_is_not_read(scene):
    ob, _ = make_walker(n_frames=40)
    add_stray_key(ob, 1e6)
    action = ob.animation_data.action
    action.use_frame_range = True
    action.frame_start, action.frame_end = 1, 40
    assert op("make_cyclic", keep_original=False)() == {"FINISHED"}
    assert scene.anim_signals.last_loop.frame_end == 40


def test_make_cyclic_linked(scene, tmp_path):
    ob, _ = make_walker(n_frames=40)
    link_action(ob, tmp_path)
    assert_refused(op("make_cyclic"), "linked from library")


@pytest.mark.parametrize("keep_original", [True, False])
def test_make_cyclic_failing_write_takes_everything_back(scene, monkeypatch, keep_original):
    """The third curve's write fails: the first two, the Cycles modifiers, the frame range, the
    copy and its assignment are all taken back."""
    ob, _ = make_walker(n_frames=40)
    loop = module("loop_blend_compare.loop")
    real, calls = loop.write_dense, []

    def failing(fc, frames, values):
        calls.append(fc)
        if len(calls) == 3:
            values = np.full_like(values, np.nan)
        real(fc, frames, values)

    monkeypatch.setattr(loop, "write_dense", failing)
    assert_refused(op("make_cyclic", keep_original=keep_original), r"Not writing curve .*not a finite float32")
    assert len(calls) == 3


# ----------------------------------------------------------------------------------------------
# Blend Actions
# ----------------------------------------------------------------------------------------------


def _two_walkers():
    a, _ = make_walker("A", n_frames=40)
    b, _ = make_walker("B", n_frames=40, amp=1.5)
    return a, b, a.animation_data.action.name, b.animation_data.action.name


def test_blend_bad_input(scene):
    a, b, name_a, name_b = _two_walkers()
    bpy.context.view_layer.objects.active = a
    add_stray_key(b, 1e5)
    assert_refused(op("blend_actions", action_a=name_a, action_b=name_b), r"has a key at frame 100000, far from the")
    curve(b).keyframe_points.remove(curve(b).keyframe_points[-1])
    set_key(curve(b), 2, frame=np.nan)
    assert_refused(op("blend_actions", action_a=name_a, action_b=name_b), "key at frame nan")
    assert_refused(op("blend_actions", action_a=name_a, action_b="Nope"), 'No action named "Nope"')


def test_blend_onto_a_target_in_tweak_mode_is_made_but_not_assigned(scene):
    a, b, name_a, name_b = _two_walkers()
    enter_tweak_mode(a)
    bpy.context.view_layer.objects.active = a
    tweaked = a.animation_data.action
    actions_before = set(bpy.data.actions.keys())
    assert op("blend_actions", action_a=name_a, action_b=name_b)() == {"FINISHED"}
    made = set(bpy.data.actions.keys()) - actions_before
    assert made == {f"{name_a}+{name_b} 0.50"}
    assert a.animation_data.action == tweaked and a.animation_data.use_tweak_mode
    assert scene.anim_signals.last_blend.assigned_to == ""


def test_blend_failing_write_leaves_no_action(scene, monkeypatch):
    a, b, name_a, name_b = _two_walkers()
    bpy.context.view_layer.objects.active = a
    blend = module("loop_blend_compare.blend")
    real = blend.write_dense
    calls = []

    def failing(fc, frames, values):
        calls.append(fc)
        real(fc, frames, values if len(calls) < 8 else values * np.inf)

    monkeypatch.setattr(blend, "write_dense", failing)
    assert_refused(op("blend_actions", action_a=name_a, action_b=name_b, count=2), "Not writing curve")
    assert len(calls) == 8  # the first blend (6 curves) was written, the second failed part-way


def test_blend_and_compare_read_linked_actions(scene, tmp_path):
    """Linked actions are only read: a blend of one is a local action; Compare labels the local ones."""
    a, b, name_a, name_b = _two_walkers()
    link_action(a, tmp_path)
    linked = a.animation_data.action
    bpy.context.view_layer.objects.active = b
    assert op("blend_actions", action_a=name_a, action_b=name_b)() == {"FINISHED"}
    made = bpy.data.actions[f"{name_a}+{name_b} 0.50"]
    assert made.library is None and b.animation_data.action == made
    assert op("compare_actions", actions=f"{name_a},{name_b}", image_path=str(tmp_path / "d.png"))() == {"FINISHED"}
    assert "anim_signals_cluster" not in linked.keys() and "anim_signals_cluster" in bpy.data.actions[name_b].keys()


@pytest.mark.skipif(not IS_SLOTTED, reason="slotted actions exist from Blender 4.4")
def test_blend_of_a_two_slot_action_holds_one_slot(scene):
    a, b, name_a, name_b = _two_walkers()
    action = a.animation_data.action
    extra = action.slots.new(id_type="OBJECT", name="Other")
    c = bpy.data.objects.new("C", None)
    scene.collection.objects.link(c)
    c.animation_data_create()
    c.animation_data.action = action
    c.animation_data.action_slot = extra
    keyed(c, "scale", np.arange(1, 41, dtype=np.float64), np.ones((40, 3)))
    bpy.context.view_layer.objects.active = a
    assert op("blend_actions", action_a=name_a, action_b=name_b)() == {"FINISHED"}
    made = bpy.data.actions[f"{name_a}+{name_b} 0.50"]
    paths = {fc.data_path for fc in action_fcurves_all(made)}
    assert paths == {"location", "rotation_euler"}


# ----------------------------------------------------------------------------------------------
# Compare Actions
# ----------------------------------------------------------------------------------------------


def test_compare_names_with_commas(scene, tmp_path):
    a, _ = make_walker("A", n_frames=40)
    b, _ = make_walker("B", n_frames=40, amp=2.0)
    a.animation_data.action.name = "Walk, slow"
    b.animation_data.action.name = 'Walk "fast"'
    png = str(tmp_path / "d.png")
    assert_refused(op("compare_actions", actions='Walk, slow, Walk "fast"', image_path=png),
                   r'No action named "Walk" \(a name holding a comma goes in double quotes')
    assert op("compare_actions", actions='"Walk, slow", Walk "fast"', image_path=png)() == {"FINISHED"}
    assert scene.anim_signals.last_compare.actions == 2
    assert {r.action_name for r in scene.anim_signals.compare_results} == {"Walk, slow", 'Walk "fast"'}


def test_compare_bad_input(scene, tmp_path):
    a, _ = make_walker("A", n_frames=40)
    b, _ = make_walker("B", n_frames=40, amp=2.0)
    names = f"{a.animation_data.action.name},{b.animation_data.action.name}"
    png = str(tmp_path / "d.png")
    rotation = curve(b, "rotation_euler", 0)
    rotation.keyframe_points.insert(3e7, 0.0)
    assert_refused(op("compare_actions", actions=names, image_path=png),
                   r"'rotation_euler\[0\]' of action \"BAction\" has a key at frame 3e\+07, far from the others")
    rotation.keyframe_points.remove(rotation.keyframe_points[-1])
    all_keys_on_one_frame(b)
    assert_refused(op("compare_actions", actions=names, image_path=png), "too short: 1 frame.*keys sharing a frame")


def test_compare_action_removed_while_comparing(scene, tmp_path):
    a, _ = make_walker("A", n_frames=40)
    b, _ = make_walker("B", n_frames=40, amp=2.0)
    names = f"{a.animation_data.action.name},{b.animation_data.action.name}"
    cmp_ops = module("loop_blend_compare.operators")
    driver = StepwiseDriver(cmp_ops.ANIM_SIGNALS_OT_compare_actions, bpy.context, actions=names,
                            image_path=str(tmp_path / "d.png"))
    bpy.data.objects.remove(b)
    bpy.data.actions.remove(bpy.data.actions[names.split(",")[1]])
    before = snapshot_all()
    assert driver.run_to_end(bpy.context) == {"CANCELLED"}
    assert any("removed while comparing" in msg for _, msg in driver.reports), driver.reports
    assert_same_state(before, snapshot_all())


def test_compare_failing_store_restores_cluster_labels_and_results(scene, tmp_path, monkeypatch):
    a, _ = make_walker("A", n_frames=40)
    b, _ = make_walker("B", n_frames=40, amp=2.0)
    png = str(tmp_path / "d.png")
    assert op("compare_actions", image_path=png)() == {"FINISHED"}
    labels = {act.name: act.get("anim_signals_cluster") for act in bpy.data.actions}
    rows = [(r.action_name, r.cluster) for r in scene.anim_signals.compare_results]
    json_before = scene.anim_signals.last_compare.matrix_json
    a.animation_data.action["anim_signals_cluster"] = 99
    labels[a.animation_data.action.name] = 99

    compare = module("loop_blend_compare.compare")

    def failing(*args, **kwargs):
        raise ValueError("the image could not be made")

    monkeypatch.setattr(compare, "write_image", failing)
    with pytest.raises(RuntimeError, match="Compare failed: the image could not be made"):
        op("compare_actions", image_path=png, metric="LINEAR")()
    assert {act.name: act.get("anim_signals_cluster") for act in bpy.data.actions} == labels
    assert [(r.action_name, r.cluster) for r in scene.anim_signals.compare_results] == rows
    assert scene.anim_signals.last_compare.matrix_json == json_before


# ----------------------------------------------------------------------------------------------
# Deformation Transfer
# ----------------------------------------------------------------------------------------------


def _transfer_pair():
    s, t = source_cylinder(), target_cylinder()
    markers_on_rings(s, 12, 9)
    markers_on_rings(t, 16, 11)
    bend(s, [1, 10], [0, 60])
    select(s, t)
    return s, t


TRANSFER = {"method": "CORRESPONDENCE", "range_mode": "CUSTOM"}


def test_transfer_ranges(scene, monkeypatch):
    _transfer_pair()
    assert_refused(op("transfer_deformation", **TRANSFER, frame_start=1, frame_end=200_000),
                   r"frames 1-200000\) has 200000 frames: at most 100000")
    assert_refused(op("transfer_deformation", **TRANSFER, frame_start=1, frame_end=1001, output="SHAPE_KEYS"),
                   "1001 frames are more than 1000; use the PC2 output")
    monkeypatch.setattr(module("deformation_transfer.planning"), "MAX_FRAME_BYTES", 2**20)
    assert_refused(op("transfer_deformation", **TRANSFER, frame_start=1, frame_end=400),
                   r"400 frames of 108 \+ 176 vertices: .* GiB in memory .*narrow the frame range")
    monkeypatch.undo()
    # One frame is a valid range.
    assert op("transfer_deformation", **TRANSFER, frame_start=5, frame_end=5)() == {"FINISHED"}
    assert scene.anim_signals.last_transfer.frames == 1


def test_transfer_result_not_finite_is_refused(scene, monkeypatch):
    """A solve that gives positions beyond float32 (here: made so) is refused before anything is written."""
    _transfer_pair()
    solving = module("deformation_transfer.solving")
    real = solving.CorrespondenceTransfer

    class Overflowing(real):
        def __call__(self, frames):
            out = super().__call__(frames)
            out[-1] *= 1e300
            return out

    monkeypatch.setattr(solving, "CorrespondenceTransfer", Overflowing)
    assert_refused(op("transfer_deformation", **TRANSFER, frame_start=1, frame_end=6, output="PC2"),
                   r"positions that are not finite at frame 4 \(2 frame\(s\)\)")


def test_transfer_failing_after_the_cache_puts_the_earlier_cache_back(scene, monkeypatch):
    """The PC2 is written before the modifier: a failure after it puts the earlier file back (and a
    successful rerun leaves no '.previous' file behind)."""
    _transfer_pair()
    assert op("transfer_deformation", **TRANSFER, frame_start=1, frame_end=4, output="PC2")() == {"FINISHED"}
    path = bpy.path.abspath(scene.anim_signals.last_transfer.cache_path)
    with open(path, "rb") as f:
        first = f.read()
    writing = module("deformation_transfer.writing")

    def failing(*args, **kwargs):
        raise RuntimeError("modifier refused (injected)")

    monkeypatch.setattr(writing, "set_mesh_cache", failing)
    with pytest.raises(RuntimeError, match="injected"):
        op("transfer_deformation", **TRANSFER, frame_start=1, frame_end=6, output="PC2")()
    with open(path, "rb") as f:
        assert f.read() == first
    monkeypatch.undo()
    assert op("transfer_deformation", **TRANSFER, frame_start=1, frame_end=6, output="PC2")() == {"FINISHED"}
    with open(path, "rb") as f:
        assert f.read() != first
    assert not os.path.exists(path + ".previous")


def test_transfer_source_removed_while_transferring(scene):
    s, t = _transfer_pair()
    tr_ops = module("deformation_transfer.operators")
    driver = StepwiseDriver(tr_ops.ANIM_SIGNALS_OT_transfer_deformation, bpy.context, **TRANSFER,
                            frame_start=1, frame_end=8, pairs=[])
    driver.modal(bpy.context, event("TIMER"))
    bpy.data.objects.remove(s)
    before = snapshot_all()
    assert driver.run_to_end(bpy.context) == {"CANCELLED"}
    assert any("removed while transferring" in msg for _, msg in driver.reports), driver.reports
    assert_same_state(before, snapshot_all())


def test_add_marker_pair_failing_second_group_removes_the_first(scene, monkeypatch):
    s, t = source_cylinder(), target_cylinder()
    for ob in (s, t):
        ob.data.vertices.foreach_set("select", np.eye(1, len(ob.data.vertices), 3, dtype=bool).ravel())
    select(s, t)
    markers = module("deformation_transfer.markers")
    real = markers.add_vertex_group

    def failing(ob, name, vertices, weight=1.0):
        if ob == t:
            raise ValueError("no room for another group")
        return real(ob, name, vertices, weight)

    monkeypatch.setattr(markers, "add_vertex_group", failing)
    with pytest.raises(RuntimeError, match="no room"):
        bpy.ops.anim_signals.transfer_add_marker_pair("EXEC_DEFAULT")
    assert [vg.name for vg in s.vertex_groups] == [] and [vg.name for vg in t.vertex_groups] == []
