"""Motion database operators (Richert: k-NN + OLNG) on a generated ARKit face and generated
expressions: ``import_live_link_csv``, ``build_motion_database``, ``reconstruct_motion``,
``motion_db_live``; the shared Live Link Face recordings when present; bad input."""

from __future__ import annotations

import os
import sys
import types

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    FakeLayout,
    StepwiseDriver,
    assert_same_state,
    evaluate,
    event,
    ext_module,
    fcurves_of,
    shared_data,
    snapshot_all,
)
from conftest import EXT_MODULE

EXT = EXT_MODULE
FPS = 30


@pytest.fixture
def mdb(extension):
    """The Motion Database tool's modules (operators/motion_db/...)."""
    names = ("database", "live", "livelink_import", "reconstruct")
    return types.SimpleNamespace(**{n: sys.modules[f"{EXT}.operators.motion_db.{n}"] for n in names})


@pytest.fixture
def data(extension):
    """The Blender data layer (operators/blender_data)."""
    return ext_module("operators.blender_data")


@pytest.fixture
def ll(extension):
    return ext_module("anim_signals.motiondb.livelink")


@pytest.fixture
def gen(extension):
    """The generated face and expressions of the core."""
    return ext_module("anim_signals.motiondb.generated")


@pytest.fixture
def face_scene(gen, scene, ll, tmp_path):
    """A generated face with three imported expression takes (CSV written by the test)."""
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    paths = []
    for i, n in enumerate((90, 70, 80)):
        values = gen.generated_expressions(n, seed=10 + i, fps=FPS)
        values = np.column_stack([values, np.zeros((n, 9))])
        p = tmp_path / f"take{i}.csv"
        ll.write_csv(p, np.arange(n) / FPS, values, start_seconds=3600 + 10 * i)
        paths.append(p)
    for p in paths:
        assert bpy.ops.anim_signals.import_live_link_csv(filepath=str(p)) == {"FINISHED"}
    face = bpy.context.active_object
    return scene, face, paths


def _key_curves(ob) -> dict:
    return {fc.data_path[len('key_blocks["'):-len('"].value')]: fc for fc in fcurves_of(ob.data.shape_keys)}


def test_import_generated_face(face_scene, ll):
    scene, face, paths = face_scene
    assert face.name == "ARKit Face" and len(bpy.data.objects) == 1  # one face, reused for every take
    names = [kb.name for kb in face.data.shape_keys.key_blocks]
    assert names[1:] == list(ll.ARKIT_BLENDSHAPES)
    assert face.data.shape_keys.animation_data.action.name == "take2"
    curves = _key_curves(face)
    assert len(curves) == 52
    rec = ll.read_csv(paths[2])
    jaw = curves["JawOpen"]
    frames = np.arange(1, 81, dtype=float)
    np.testing.assert_allclose(evaluate(jaw, frames), rec.channel("JawOpen"), atol=1e-6)
    assert (scene.frame_start, scene.frame_end) == (1, 80)
    # Older takes kept (fake user) for the database.
    assert all(bpy.data.actions.get(f"take{i}") is not None for i in range(3))


def test_import_resamples_to_scene_fps(gen, scene, ll, tmp_path):
    scene.render.fps = 24
    n = 61
    values = np.column_stack([gen.generated_expressions(n, seed=2, fps=60.0), np.zeros((n, 9))])
    p = tmp_path / "sixty.csv"
    ll.write_csv(p, np.arange(n) / 60.0, values)
    assert bpy.ops.anim_signals.import_live_link_csv(filepath=str(p)) == {"FINISHED"}
    fc = _key_curves(bpy.context.active_object)["MouthSmileLeft"]
    assert len(fc.keyframe_points) == 25  # 1 s at 24 fps
    j = ll.ARKIT_BLENDSHAPES.index("MouthSmileLeft")
    np.testing.assert_allclose(evaluate(fc, [1.0, 13.0, 25.0]), values[[0, 30, 60], j], atol=1e-6)


def test_import_onto_active_arkit_mesh_lowercase(scene, ll, tmp_path):
    """A rig with ARKit's own lower-camel names (eyeBlinkLeft) gets the curves under its names."""
    mesh = bpy.data.meshes.new("Rig")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    ob = bpy.data.objects.new("Rig", mesh)
    scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    ob.shape_key_add(name="Basis")
    for n in ("eyeBlinkLeft", "jawOpen"):
        ob.shape_key_add(name=n)
    p = tmp_path / "t.csv"
    ll.write_csv(p, np.arange(10) / FPS, np.full((10, 61), 0.25))
    assert bpy.ops.anim_signals.import_live_link_csv(filepath=str(p)) == {"FINISHED"}
    assert len(bpy.data.objects) == 1
    assert sorted(_key_curves(ob)) == ["eyeBlinkLeft", "jawOpen"]


def test_csv_gaps_and_nan_rows_reported(gen, scene, ll, tmp_path, mdb):
    scene.render.fps = FPS
    t = np.arange(60) / FPS
    keep = np.ones(60, dtype=bool)
    keep[20:35] = False  # 0.5 s dropped
    values = np.column_stack([gen.generated_expressions(60, seed=1, fps=FPS), np.zeros((60, 9))])[keep]
    values[3] = np.nan
    p = tmp_path / "gappy.csv"
    ll.write_csv(p, t[keep], values)
    s = mdb.livelink_import.import_live_link(bpy.context, str(p))
    text = " ".join(s.messages)
    assert "15 dropped frame(s)" in text and "1 row(s) without tracking data" in text
    assert "gaps longer than" in text
    fc = _key_curves(bpy.context.active_object)["JawOpen"]
    v = evaluate(fc, np.arange(1, 61, dtype=float))
    assert np.isfinite(v).all() and len(fc.keyframe_points) == 60


def test_bad_csv(scene, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(RuntimeError, match="Live Link"):
        bpy.ops.anim_signals.import_live_link_csv(filepath=str(bad))
    with pytest.raises(RuntimeError, match="No such file"):
        bpy.ops.anim_signals.import_live_link_csv(filepath=str(tmp_path / "none.csv"))
    assert len(bpy.data.objects) == 0


def test_build_reconstruct_exact_and_partial(face_scene, data):
    scene, face, _ = face_scene
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS") == {"FINISHED"}
    s = scene.anim_signals.motion_db
    assert [i.name for i in s.actions] == ["take0", "take1", "take2"]
    assert s.n_frames == 240 and s.n_channels == 52
    # A noiseless query from the database (take1) is recovered exactly along the best path.
    key = face.data.shape_keys
    key.animation_data.action = bpy.data.actions["take1"]
    if hasattr(key.animation_data, "action_slot"):
        key.animation_data.action_slot = bpy.data.actions["take1"].slots[0]
    assert bpy.ops.anim_signals.reconstruct_motion(output="BEST_PATH", k=64) == {"FINISHED"}
    out = key.animation_data.action
    assert out.name == "take1.reconstructed" and s.last_action == out.name and s.last_ms > 0
    src = data.named_channels.named_channel_curves(bpy.data.actions["take1"], "SHAPE_KEYS")
    got = _key_curves(face)
    frames = np.arange(1, 71, dtype=float)
    for name in ("JawOpen", "EyeBlinkLeft", "MouthSmileRight"):
        np.testing.assert_allclose(evaluate(got[name], frames), evaluate(src[name], frames), atol=1e-6)
    # Partial input (the seed's example): eyes dropped; the best path still finds the clip, so the
    # eye channels come back exactly; the synthesis rebuilds them approximately.
    for output, tol in (("BEST_PATH", 1e-6), ("SYNTHESIS", 0.15)):
        key.animation_data.action = bpy.data.actions["take1"]
        if hasattr(key.animation_data, "action_slot"):
            key.animation_data.action_slot = bpy.data.actions["take1"].slots[0]
        assert bpy.ops.anim_signals.reconstruct_motion(output=output, drop_eyes=True, k=64) == {"FINISHED"}
        assert s.last_query_channels == 52 - 14
        got = _key_curves(face)
        err = np.abs(evaluate(got["EyeBlinkLeft"], frames) - evaluate(src["EyeBlinkLeft"], frames))
        assert err.mean() < tol, output
        assert key.animation_data.action.name.startswith("take1.reconstructed")


def test_query_channels_subset_and_missing(face_scene, mdb, data):
    """Query with fewer channels than the database (names matched, the missing ones reported)."""
    scene, face, _ = face_scene
    bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", actions="take0,take2")
    key = face.data.shape_keys
    action = key.animation_data.action  # take2
    # Remove 10 curves from a copy used as the query.
    q = action.copy()
    q.name = "query"
    key.animation_data.action = q
    if hasattr(key.animation_data, "action_slot"):
        key.animation_data.action_slot = q.slots[0]
    curves = data.named_channels.named_channel_curves(q, "SHAPE_KEYS", key)
    slot = data.actions.get_slot(key)
    for name in list(curves)[:10]:
        data.actions.remove_fcurve(q, slot, curves[name])
    plan = mdb.reconstruct.plan_query(bpy.context, k=32)
    assert len(plan.query_channels) == 42
    assert any("10 database channel(s) missing from the query" in m for m in plan.warnings)
    assert bpy.ops.anim_signals.reconstruct_motion(k=32, output="BEST_PATH") == {"FINISHED"}
    assert len(_key_curves(face)) == 52  # the full pose comes back
    with pytest.raises(RuntimeError, match="not in the database"):
        bpy.ops.anim_signals.reconstruct_motion(input_channels="JawOpen,NoSuchChannel")
    assert bpy.ops.anim_signals.reconstruct_motion(input_channels="JawOpen,MouthSmileLeft", k=16) == {"FINISHED"}


def _use_action(key, name: str) -> None:
    key.animation_data.action = bpy.data.actions[name]
    if hasattr(key.animation_data, "action_slot"):
        key.animation_data.action_slot = bpy.data.actions[name].slots[0]


def test_unset_properties_take_the_sidebar_settings(face_scene, data):
    """From a menu or F3 (invoke) the properties the caller did not set take the sidebar's values;
    the reconstruct and live operators share the settings. (Headless Blender never calls invoke:
    the fill runs on a stand-in, then the operator with the filled values.)"""
    scene, face, _ = face_scene
    bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS")
    s = scene.anim_signals.motion_db
    s.output, s.k, s.drop_eyes, s.window = "BEST_PATH", 64, True, 16
    fill_unset = ext_module("operators.common").fill_unset
    for cls in (bpy.types.ANIM_SIGNALS_OT_reconstruct_motion, bpy.types.ANIM_SIGNALS_OT_motion_db_live):
        assert cls.stored_settings(bpy.context) == s
        op = types.SimpleNamespace(properties=types.SimpleNamespace(is_property_set=lambda n: n == "window"),
                                   **{n: None for n in cls.SETTINGS})
        op.window = 8  # set by the caller: kept
        fill_unset(op, cls.stored_settings(bpy.context), cls.SETTINGS)
        assert (op.output, op.k, op.drop_eyes, op.window, op.input_channels) == ("BEST_PATH", 64, True, 8, "ALL")
    key = face.data.shape_keys
    _use_action(key, "take1")
    assert bpy.ops.anim_signals.reconstruct_motion(**{n: getattr(op, n) for n in op.__dict__ if n != "properties"}) == {"FINISHED"}
    assert s.last_query_channels == 52 - 14
    assert key.animation_data.action["anim_signals_output"] == "BEST_PATH"
    src = data.named_channels.named_channel_curves(bpy.data.actions["take1"], "SHAPE_KEYS")
    frames = np.arange(1, 71, dtype=float)
    err = np.abs(evaluate(_key_curves(face)["EyeBlinkLeft"], frames) - evaluate(src["EyeBlinkLeft"], frames))
    assert err.mean() < 1e-6


def test_reconstruct_modal_steps_and_escape(face_scene):
    """The modal (UI) path: one query frame per timer event; Esc writes nothing."""
    scene, face, _ = face_scene
    bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS")
    key = face.data.shape_keys
    _use_action(key, "take1")
    cls = bpy.types.ANIM_SIGNALS_OT_reconstruct_motion
    before = snapshot_all()
    op = StepwiseDriver(cls, bpy.context, output="BEST_PATH", k=32)
    assert op.modal(bpy.context, event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, event("ESC", "PRESS")) == {"CANCELLED"}
    assert any("Reconstruction cancelled" in msg for _, msg in op.reports)
    assert_same_state(before, snapshot_all())
    assert not scene.anim_signals.motion_db.last_action
    op = StepwiseDriver(cls, bpy.context, output="BEST_PATH", k=32)
    assert op.modal(bpy.context, event("MOUSEMOVE")) == {"RUNNING_MODAL"}  # other input is blocked
    assert key.animation_data.action.name == "take1"
    assert op.run_to_end(bpy.context) == {"FINISHED"}
    assert key.animation_data.action.name == "take1.reconstructed"
    assert scene.anim_signals.motion_db.last_frames == 70


def test_query_longer_than_any_clip(gen, face_scene, ll, tmp_path):
    scene, face, _ = face_scene
    bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS")
    n = 300  # longer than every clip (90 frames at most)
    p = tmp_path / "long.csv"
    ll.write_csv(p, np.arange(n) / FPS, np.column_stack([gen.generated_expressions(n, seed=99, fps=FPS), np.zeros((n, 9))]))
    bpy.ops.anim_signals.import_live_link_csv(filepath=str(p))
    assert bpy.ops.anim_signals.reconstruct_motion(k=64, window=16) == {"FINISHED"}
    fc = _key_curves(face)["JawOpen"]
    assert len(fc.keyframe_points) == n
    assert np.isfinite(evaluate(fc, np.arange(1, n + 1, dtype=float))).all()


def test_live_mode(face_scene, mdb):
    scene, face, _ = face_scene
    bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS")
    key = face.data.shape_keys
    key.animation_data.action = bpy.data.actions["take0"]
    if hasattr(key.animation_data, "action_slot"):
        key.animation_data.action_slot = bpy.data.actions["take0"].slots[0]
    scene.frame_set(1)
    assert bpy.ops.anim_signals.motion_db_live(action="START", output="BEST_PATH", k=32) == {"FINISHED"}
    live = bpy.data.objects["ARKit Face.live"]
    assert mdb.live._on_frame_change in bpy.app.handlers.frame_change_post
    status = bpy.context.window_manager.anim_signals.motion_db_live
    assert status.running and status.object_name == "ARKit Face.live"
    src = _key_curves(face)
    for f in range(2, 20):
        scene.frame_set(f)
    blocks = live.data.shape_keys.key_blocks
    for name in ("JawOpen", "EyeBlinkLeft", "MouthSmileLeft"):
        assert blocks[name].value == pytest.approx(src[name].evaluate(19.0), abs=1e-5)
    assert status.ms > 0 and status.best_length > 0
    for name in ("live", "live_object", "live_ms", "live_best_length"):  # runtime state: not in the scene
        assert name not in scene.anim_signals.motion_db.bl_rna.properties
    assert live.data.shape_keys.animation_data is None or live.data.shape_keys.animation_data.action is None
    assert bpy.ops.anim_signals.motion_db_live(action="TOGGLE") == {"FINISHED"}
    assert mdb.live._on_frame_change not in bpy.app.handlers.frame_change_post
    assert not status.running
    before = blocks["JawOpen"].value
    scene.frame_set(40)
    assert blocks["JawOpen"].value == before  # no longer driven


def test_save_reload_keeps_database(face_scene, mdb, tmp_path):
    scene, face, _ = face_scene
    bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS")
    # Saved while the live mode runs: the live state is runtime only (not saved, dropped on load).
    assert bpy.ops.anim_signals.motion_db_live(action="START", k=16) == {"FINISHED"}
    path = str(tmp_path / "db.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, check_existing=False)
    mdb.database.clear_cache()
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=True)
    try:
        assert not bpy.context.window_manager.anim_signals.motion_db_live.running
        assert mdb.live.live_state(bpy.context.scene) is None
        assert mdb.live._on_frame_change not in bpy.app.handlers.frame_change_post
        s = bpy.context.scene.anim_signals.motion_db
        assert [i.name for i in s.actions] == ["take0", "take1", "take2"]
        db = mdb.database.stored_database(bpy.context.scene)
        assert db.n_frames == 240 and len(db.channels) == 52
        bpy.context.view_layer.objects.active = bpy.data.objects["ARKit Face"]
        assert bpy.ops.anim_signals.reconstruct_motion(k=16, output="BEST_PATH") == {"FINISHED"}
    finally:
        pass  # the scene fixture clears the data


def test_bad_database_input(gen, scene, mdb, ll, tmp_path):
    scene.render.fps = FPS
    # No active object, no database.
    with pytest.raises(RuntimeError):
        bpy.ops.anim_signals.reconstruct_motion()
    # Empty database: no shape-key actions in the file.
    with pytest.raises(RuntimeError, match="empty"):
        bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS")
    with pytest.raises(RuntimeError, match="No action named"):
        bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", actions="nope")
    p = tmp_path / "a.csv"
    ll.write_csv(p, np.arange(40) / FPS, np.column_stack([gen.generated_expressions(40, seed=5, fps=FPS), np.zeros((40, 9))]))
    bpy.ops.anim_signals.import_live_link_csv(filepath=str(p))
    face = bpy.context.active_object
    # Reconstructing without a database.
    with pytest.raises(RuntimeError, match="No motion database"):
        bpy.ops.anim_signals.reconstruct_motion()
    bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS")
    # A query with no channel in common: an armature-less mesh whose keys have other names.
    mesh = bpy.data.meshes.new("Other")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    other = bpy.data.objects.new("Other", mesh)
    scene.collection.objects.link(other)
    other.shape_key_add(name="Basis")
    kb = other.shape_key_add(name="Smile")
    kb.keyframe_insert("value", frame=1)
    kb.value = 1.0
    kb.keyframe_insert("value", frame=10)
    bpy.context.view_layer.objects.active = other
    with pytest.raises(RuntimeError, match="no channel in common"):
        bpy.ops.anim_signals.reconstruct_motion()
    # The database's action removed: reported, not a crash.
    bpy.context.view_layer.objects.active = face
    bpy.data.actions.remove(bpy.data.actions["a"])
    mdb.database.clear_cache()
    with pytest.raises(RuntimeError, match="gone"):
        bpy.ops.anim_signals.reconstruct_motion()
    with pytest.raises(RuntimeError, match="gone"):
        bpy.ops.anim_signals.motion_db_live(action="START")
    assert mdb.live._on_frame_change not in bpy.app.handlers.frame_change_post


def test_armature_database(scene, data):
    """Armature actions (pose-bone rotations) as a second source: exact recovery of a database clip."""
    from _bl_helpers import make_armature

    ob, frames, _ = make_armature("Rig", n_frames=60, seed=2)
    a1 = ob.animation_data.action
    a1.name = "clipA"
    a2 = a1.copy()
    a2.name = "clipB"
    a1.use_fake_user = True
    a2.use_fake_user = True
    assert bpy.ops.anim_signals.build_motion_database(kind="ARMATURE") == {"FINISHED"}
    s = scene.anim_signals.motion_db
    assert s.n_frames == 120 and s.n_channels == 13  # rotations only: 3 Euler bones x 3 + a quaternion
    assert bpy.ops.anim_signals.reconstruct_motion(output="BEST_PATH", k=16) == {"FINISHED"}
    out = ob.animation_data.action
    assert out.name == "clipA.reconstructed"
    src = data.named_channels.named_channel_curves(a1, "ARMATURE")
    got = data.named_channels.named_channel_curves(out, "ARMATURE", ob)
    assert sorted(src) == sorted(got)
    for name, fc in src.items():
        np.testing.assert_allclose(evaluate(got[name], frames), evaluate(fc, frames), atol=1e-6, err_msg=name)


@pytest.mark.shared_data
def test_shared_recordings(scene):
    folder = shared_data("facial")
    scene.render.fps = 30
    files = sorted(p for p in os.listdir(folder) if p.endswith(".csv"))
    for f in files:
        assert bpy.ops.anim_signals.import_live_link_csv(filepath=str(folder / f)) == {"FINISHED"}
    face = bpy.context.active_object
    names = [os.path.splitext(f)[0] for f in files]
    # Database: all but the last take; query: the last take with eyes dropped (not in the database).
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", actions=",".join(names[:-1])) == {"FINISHED"}
    key = face.data.shape_keys
    assert key.animation_data.action.name == names[-1]
    assert bpy.ops.anim_signals.reconstruct_motion(drop_eyes=True, k=128, window=32, paths=20) == {"FINISHED"}
    out = _key_curves(face)
    assert len(out) == 52
    v = evaluate(out["EyeBlinkLeft"], np.arange(scene.frame_start, scene.frame_start + 50, dtype=float))
    assert np.isfinite(v).all() and v.min() >= -1e-6 and v.max() <= 1.5


def _draw_panel(scene) -> list:
    calls: list = []
    panel = bpy.types.ANIM_SIGNALS_PT_motion_db
    ctx = types.SimpleNamespace(scene=scene, window_manager=bpy.context.window_manager)
    panel.draw(types.SimpleNamespace(layout=FakeLayout(calls), **{n: getattr(panel, n) for n in vars(panel) if n.startswith("_draw")}), ctx)
    return calls


def test_panel_draws_settings_results_and_live(face_scene):
    scene, face, _ = face_scene
    calls = _draw_panel(scene)
    labels = [c[1] for c in calls if c[0] == "label"]
    assert "No database yet" in labels and not any(t.startswith("Last:") for t in labels)
    assert ("operator", "anim_signals.import_live_link_csv") in calls
    set_names = {c[1] for c in calls if c[0] == "set"}
    assert {"kind", "actions", "input_channels", "drop_eyes", "output", "k", "window", "paths", "a", "b", "stay", "action"} <= set_names
    props = {c[1] for c in calls if c[0] == "prop"}
    assert {"kind", "build_actions", "input_channels", "k", "stay"} <= props

    bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS")
    assert bpy.ops.anim_signals.reconstruct_motion(k=16, output="BEST_PATH") == {"FINISHED"}
    _use_action(face.data.shape_keys, "take0")
    assert bpy.ops.anim_signals.motion_db_live(action="START", k=16) == {"FINISHED"}
    try:
        labels = [c[1] for c in _draw_panel(scene) if c[0] == "label"]
    finally:
        bpy.ops.anim_signals.motion_db_live(action="STOP")
    assert "3 clips, 240 frames, 52 channels" in labels and "take2" in labels
    assert "Last: take2.reconstructed" in labels
    assert any(t.startswith("ARKit Face.live: ") and "ms/frame" in t for t in labels)
