"""Hostile input for the Pose Space and Motion Database operators: each case is refused with a message
naming the problem and nothing changed (every key, assignment, datablock, custom property, mesh and
the frame range compared before/after by ``assert_refused``), or gives a correct, finite result.

Tables per entry point: non-finite and extreme values (nan, inf, 1e30, 1e308, subnormals), damaged
PC2 / MDD / CSV files (truncated, empty, binary, UTF-16, wrong vertex count), stray keys, single
frames, constant data, NLA tweak mode, linked data, objects removed mid-run, failures after a
stored model was changed, and stale derived data (an edited key must reach the database).
"""

from __future__ import annotations

import math
import struct

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    StepwiseDriver,
    assert_refused,
    event,
    ext_module,
    fcurves_of,
    key_array,
    linked_copy,
    make_armature,
    snapshot_all,
)
from test_pose_space import make_cached_cylinder, twist_frames, write_pc2
from test_pose_space_canvas import make_space

FPS = 30
PROP = "anim_signals_pose_space"


def op(name: str, **kwargs):
    return lambda: getattr(bpy.ops.anim_signals, name)("EXEC_DEFAULT", **kwargs)


@pytest.fixture
def psd(extension):
    return ext_module("operators.pose_space")


@pytest.fixture
def mdb(extension):
    return ext_module("operators.motion_db.database")


@pytest.fixture
def ll(extension):
    return ext_module("anim_signals.motiondb.livelink")


@pytest.fixture
def gen(extension):
    return ext_module("anim_signals.motiondb.generated")


def _token(ob) -> str:
    return str(ob[PROP]["token"])


def _stored_finite(ob) -> bool:
    group = ob[PROP].to_dict()
    return all(np.isfinite(np.asarray(group[k], dtype=float)).all() for k in ("control", "positions", "latent"))


def _keys_finite(ob) -> bool:
    key = ob.data.shape_keys
    values = np.array([kb.value for kb in key.key_blocks]) if key is not None else np.zeros(1)
    return bool(np.isfinite(values).all()) and all(np.isfinite(key_array(fc)).all() for fc in fcurves_of(key))


def _tweak(id_data) -> None:
    """Push the ID's action into an NLA strip and enter tweak mode on it."""
    adt = id_data.animation_data
    track = adt.nla_tracks.new()
    strip = track.strips.new("strip", 1, adt.action)
    strip.select = True
    adt.use_tweak_mode = True
    assert adt.use_tweak_mode


# ----------------------------------------------------------------------------------------------
# Build Pose Space: damaged point caches and bad frames
# ----------------------------------------------------------------------------------------------


def _cut(path, keep: float) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: 32 + int((len(raw) - 32) * keep)])


def _mdd(path, frames) -> None:
    n, v, _ = frames.shape
    with open(path, "wb") as fh:
        fh.write(struct.pack(">ii", n, v))
        fh.write(np.arange(n, dtype=">f4").tobytes())
        fh.write(np.ascontiguousarray(frames, dtype=">f4").tobytes())


def _cache_case(kind: str, tmp_path):
    """(object, expected message) for a Mesh Cache whose file is damaged in the way ``kind`` says."""
    frames = twist_frames(12)
    ob, _ = make_cached_cylinder(tmp_path, name="Cached", n=12)
    path = tmp_path / "Cached.pc2"
    mod = ob.modifiers["Cache"]
    if kind == "half":
        _cut(path, 0.5)
        return "truncated: its header promises 12 samples of 48 vertices"
    if kind == "wrong_vertex_count":
        write_pc2(path, np.concatenate([frames, frames], axis=1))
        return "has 96 vertices, the mesh 48"
    if kind == "missing":
        path.unlink()
        return "does not exist"
    if kind == "empty":
        path.write_bytes(b"")
        return "not a PC2 file"
    if kind == "binary":
        path.write_bytes(np.random.default_rng(0).bytes(4000))
        return "not a PC2 file"
    if kind == "damaged_header":
        path.write_bytes(b"POINTCACHE2\0" + struct.pack("<iiffi", 1, -5, 0.0, 1.0, 12))
        return "damaged header"
    if kind == "mdd_truncated":
        mdd = tmp_path / "Cached.mdd"
        _mdd(mdd, frames)
        raw = mdd.read_bytes()
        mdd.write_bytes(raw[: len(raw) // 3])
        mod.cache_format, mod.filepath = "MDD", str(mdd)
        return "MDD file .* is truncated"
    if kind == "nan_sample":
        bad = frames.copy()
        bad[5, 7, 0] = np.nan
        write_pc2(path, bad)
        return "non-finite data: frame 6, vertex 7"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["half", "wrong_vertex_count", "missing", "empty", "binary", "damaged_header",
                                  "mdd_truncated", "nan_sample"])
def test_build_refuses_damaged_point_caches(scene, tmp_path, kind):
    scene.frame_start, scene.frame_end = 1, 12
    match = _cache_case(kind, tmp_path)
    assert_refused(op("build_pose_space"), match)


def test_build_on_extreme_but_finite_caches_is_refused_or_finite(scene, psd, tmp_path):
    """1e30 coordinates (finite in float32) and subnormal motion: a clear refusal, or a model
    whose every stored number is finite."""
    scene.frame_start, scene.frame_end = 1, 12
    for name, scale in (("Huge", 1e30), ("Tiny", 1e-40)):
        frames = twist_frames(12).astype(np.float64)
        frames = (frames - frames[0]) * scale + frames[0] if scale < 1 else frames * scale
        ob, _ = make_cached_cylinder(tmp_path, name=name, n=12, frames=frames.astype(np.float32))
        before = snapshot_all()
        try:
            result = op("build_pose_space")()
        except RuntimeError as err:
            assert "Nothing moves" in str(err) or "non-finite" in str(err) or "Cannot build" in str(err), err
            assert snapshot_all()["ids"] == before["ids"]
            continue
        assert result == {"FINISHED"}
        assert _stored_finite(bpy.data.objects[f"{name}.posespace"])


def test_build_frame_ranges(scene, psd, tmp_path):
    ob, _ = make_cached_cylinder(tmp_path, n=12)
    # a single frame; an end before the start; a range far too long (would sample every frame)
    assert_refused(op("build_pose_space", range_mode="CUSTOM", frame_start=3, frame_end=3), "Too few frames")
    assert_refused(op("build_pose_space", range_mode="CUSTOM", frame_start=9, frame_end=2), "empty")
    assert_refused(op("build_pose_space", range_mode="CUSTOM", frame_start=1, frame_end=2_000_000_000),
                   "at most 5000.*set Step to")
    with pytest.raises(psd.PoseSpaceInputError, match="tolerance must be zero"):
        psd.build_plan(ob, tolerance=math.nan)
    with pytest.raises(psd.PoseSpaceInputError, match="tolerance must be zero"):
        psd.build_plan(ob, tolerance=-1.0)


def test_build_on_an_armature_with_a_stray_key_or_in_tweak_mode(scene, psd):
    ob, _, _ = make_armature("Rig", n_frames=20)
    fc = next(f for f in fcurves_of(ob) if "rotation_euler" in f.data_path)
    fc.keyframe_points.insert(500_000.0, 0.1)
    assert_refused(op("build_pose_space"), "500000 frames; a pose space is built from at most 5000")
    fc.keyframe_points.remove(fc.keyframe_points[-1])
    _tweak(ob)
    assert_refused(op("build_pose_space"), "tweak mode")


def test_build_constant_sequence(scene, tmp_path):
    still = np.repeat(twist_frames(1), 12, axis=0)
    make_cached_cylinder(tmp_path, name="Still", n=12, frames=still)
    scene.frame_start, scene.frame_end = 1, 12
    assert_refused(op("build_pose_space"), "Nothing moves")


def test_source_removed_during_a_modal_build(scene, psd, tmp_path):
    ob, _ = make_cached_cylinder(tmp_path, n=12)
    scene.frame_start, scene.frame_end = 1, 12
    cls = bpy.types.ANIM_SIGNALS_OT_build_pose_space
    before = snapshot_all()
    driver = StepwiseDriver(cls, bpy.context)
    driver.modal(bpy.context, event("TIMER"))
    bpy.data.objects.remove(ob)
    before["ids"]["objects"].remove("Twister")
    before["properties"].pop("Twister")
    assert driver.run_to_end(bpy.context) == {"CANCELLED"}
    assert any("removed while" in message for _, message in driver.reports)
    after = snapshot_all()
    assert after["ids"]["objects"] == before["ids"]["objects"]
    assert after["ids"]["meshes"] == before["ids"]["meshes"]


# ----------------------------------------------------------------------------------------------
# Resample and Bake: bad settings, a bake refused after the model would change
# ----------------------------------------------------------------------------------------------

RESAMPLE_CASES = [
    (dict(speed=math.nan), "Speed must be a finite number"),
    (dict(mode="FRAME_RATE", fps_to=math.nan), "To FPS must be a finite number"),
    (dict(mode="RANGE", range_start=math.nan), "Range Start must be a finite number"),
    (dict(mode="RANGE", range_start=5.0, range_end=2.0), "range"),
    (dict(mode="FRAME_RATE", fps_from=math.inf), "fewer than 2"),  # Blender stores inf as 3.4e38
    (dict(mode="FRAME_RATE", fps_from=1.0, fps_to=1e9), "at most 1000000"),
    (dict(mode="FRAME_COUNT", frame_count=2_000_000_000), "at most 1000000"),
    (dict(speed=1e30), "fewer than 2"),
]


@pytest.mark.parametrize(("settings", "match"), RESAMPLE_CASES)
def test_resample_bad_settings(scene, psd, tmp_path, settings, match):
    ps_ob, _ = make_space(psd, tmp_path)
    token = _token(ps_ob)
    assert_refused(op("pose_space_resample", **settings), match)
    assert _token(ps_ob) == token


def test_resample_whose_bake_is_refused_keeps_the_stored_model(scene, psd, tmp_path):
    ps_ob, _ = make_space(psd, tmp_path)
    assert op("pose_space_bake")() == {"FINISHED"}
    _tweak(ps_ob.data.shape_keys)
    stored = ps_ob[PROP].to_dict()
    assert_refused(op("pose_space_resample", speed=0.5), "tweak mode")
    assert_refused(op("pose_space_bake"), "tweak mode")
    assert ps_ob[PROP].to_dict() == stored  # the resampled time signal was kept before


def test_resample_and_bake_extreme_but_valid(scene, psd, tmp_path):
    ps_ob, _ = make_space(psd, tmp_path)
    assert op("pose_space_resample", mode="FRAME_COUNT", frame_count=2, set_scene_range=True)() == {"FINISHED"}
    assert (scene.frame_start, scene.frame_end) == (1, 2)
    assert op("pose_space_resample", speed=0.01)() == {"FINISHED"}  # 100 x the frames: bounded, finite
    assert _stored_finite(ps_ob) and _keys_finite(ps_ob)


# ----------------------------------------------------------------------------------------------
# Canvas tools: positions and strokes
# ----------------------------------------------------------------------------------------------


def _stroke(*points):
    return [{"name": "", "co": p} for p in points]


CANVAS_CASES = [
    ("pose_space_edit_time", dict(index=2, position=(math.nan, 0.0)), "must be finite"),
    ("pose_space_edit_time", dict(index=2, position=(math.inf, 0.0)), "more than 1000 times"),
    ("pose_space_edit_time", dict(index=2, position=(0.0, 1e30)), "more than 1000 times"),
    ("pose_space_edit_time", dict(index=999, position=(0.0, 0.0)), "outside"),
    ("pose_space_pin", dict(frame=2, position=(math.nan, 0.0)), "must be finite"),
    ("pose_space_pin", dict(frame=2, position=(1e30, 0.0)), "more than 1000 times"),
    ("pose_space_pin", dict(frame=999, position=(0.0, 0.0)), "outside"),
    ("pose_space_sketch", dict(stroke=_stroke((0.0, 0.0), (math.nan, 1.0))), "stroke point 1 .* finite"),
    ("pose_space_sketch", dict(stroke=_stroke((0.0, 0.0), (1e30, 1.0))), "stroke point 1 .* 1000 times"),
    ("pose_space_sketch", dict(stroke=_stroke((0.0, 0.0))), "at least 2"),
    ("pose_space_sketch", dict(stroke=_stroke((0.0, 0.0), (0.1, 0.1)), frames=2_000_000), "at most 1000000"),
    ("pose_space_navigate", dict(position=(math.nan, 0.0)), "must be finite"),
    ("pose_space_navigate", dict(position=(1e308, 0.0)), "more than 1000 times"),
]


@pytest.mark.parametrize(("name", "settings", "match"), CANVAS_CASES)
def test_canvas_tools_refuse_bad_positions(scene, psd, tmp_path, name, settings, match):
    ps_ob, _ = make_space(psd, tmp_path)
    token = _token(ps_ob)
    assert_refused(op(name, **settings), match)
    assert _token(ps_ob) == token and _stored_finite(ps_ob) and _keys_finite(ps_ob)


def test_canvas_tools_take_subnormal_and_small_positions(scene, psd, tmp_path):
    ps_ob, space = make_space(psd, tmp_path)
    tiny = 1e-310
    assert op("pose_space_edit_time", index=2, position=(tiny, -tiny))() == {"FINISHED"}
    assert op("pose_space_navigate", position=(tiny, 0.0))() == {"FINISHED"}
    assert _stored_finite(ps_ob) and _keys_finite(ps_ob)
    np.testing.assert_allclose(np.asarray(ps_ob[PROP]["control"]).reshape(-1, 2)[2], [0.0, 0.0], atol=1e-300)


def test_canvas_edit_on_a_linked_pose_space_is_refused(scene, psd, tmp_path):
    ps_ob, _ = make_space(psd, tmp_path)
    linked_copy(ps_ob, tmp_path, scene)
    for name, settings in (("pose_space_edit_time", dict(index=1, position=(0.1, 0.1))),
                           ("pose_space_pin", dict(frame=1, position=(0.1, 0.1))),
                           ("pose_space_sketch", dict(stroke=_stroke((0.0, 0.0), (0.2, 0.1))))):
        assert_refused(op(name, **settings), "linked from library")


def test_renamed_shape_key_is_not_written_through_a_stale_cache(scene, psd, tmp_path):
    """The model cache binds key indices: renaming a component key must be noticed (reported), not
    write its value into whatever key now sits at that index."""
    ps_ob, _ = make_space(psd, tmp_path)
    assert op("pose_space_navigate", position=(0.1, 0.0))() == {"FINISHED"}
    blocks = ps_ob.data.shape_keys.key_blocks
    blocks[2].name = "Renamed"
    values = [kb.value for kb in blocks]
    with pytest.raises(RuntimeError, match="no pose space|lost the shape keys"):
        op("pose_space_navigate", position=(0.2, 0.0))()
    assert [kb.value for kb in blocks] == values


# ----------------------------------------------------------------------------------------------
# Import Live Link Face CSV
# ----------------------------------------------------------------------------------------------


def _csv(ll, gen, path, n: int = 40, edit=None) -> None:
    values = np.column_stack([gen.generated_expressions(n, seed=5, fps=FPS), np.zeros((n, 9))])
    if edit is not None:
        edit(values)
    ll.write_csv(path, np.arange(n) / FPS, values)


def _set_cell(values):
    values[5, 17] = 1e308  # JawOpen
    values[9, 17] = 50.0  # finite, but no blendshape weight either


def _rewrite_cells(path, fn) -> None:
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0]] + [fn(i, line) for i, line in enumerate(lines[1:])]) + "\n")


def _text_cells(i: int, line: str) -> str:
    cells = line.split(",")
    for j in range(5):
        cells[2 + (i * 5 + j) % 52] = "n/a"
    return ",".join(cells)


def test_live_link_damaged_cells_become_missing_values(scene, ll, gen, tmp_path):
    scene.render.fps = FPS
    p = tmp_path / "big.csv"
    _csv(ll, gen, p, edit=_set_cell)
    imp = ext_module("operators.motion_db.livelink_import")
    s = imp.import_live_link(bpy.context, str(p))
    assert sum("treated as missing" in m for m in s.messages) >= 1
    assert any("beyond +-10" in m and "JawOpen" in m for m in s.messages)  # the 50.0
    face = bpy.context.active_object
    assert _keys_finite(face)
    jaw = next(fc for fc in fcurves_of(face.data.shape_keys) if '"JawOpen"' in fc.data_path)
    for frame in (6, 10):  # the damaged rows 5 and 9, filled from their neighbours
        assert fc_value(jaw, frame) == pytest.approx(0.5 * (fc_value(jaw, frame - 1) + fc_value(jaw, frame + 1)))


def fc_value(fc, frame) -> float:
    return float(fc.evaluate(float(frame)))


def test_live_link_scattered_text_cells_and_text_columns(scene, ll, gen, tmp_path):
    scene.render.fps = FPS
    p = tmp_path / "cells.csv"
    _csv(ll, gen, p)
    _rewrite_cells(p, _text_cells)  # 5 text cells per row, every channel still has data
    assert op("import_live_link_csv", filepath=str(p))() == {"FINISHED"}
    face = bpy.context.active_object
    curves = fcurves_of(face.data.shape_keys)
    assert len(curves) == 52 and _keys_finite(face)
    q = tmp_path / "extra.csv"
    _csv(ll, gen, q)
    lines = q.read_text().splitlines()
    q.write_text("\n".join([lines[0] + ",Note"] + [line + ",hello" for line in lines[1:]]) + "\n")
    imp = ext_module("operators.motion_db.livelink_import")
    s = imp.import_live_link(bpy.context, str(q))
    assert not any("without tracking data" in m for m in s.messages)  # the text column is not ARKit's


def _all_text(i: int, line: str) -> str:
    cells = line.split(",")
    return ",".join(cells[:2] + ["x"] * (len(cells) - 2))


CSV_CASES = [
    ("empty", lambda p: p.write_bytes(b""), "empty"),
    ("binary", lambda p: p.write_bytes(np.random.default_rng(1).bytes(3000)), "not a text CSV|not a Live Link"),
    ("utf16", lambda p: p.write_text("Timecode,BlendShapeCount,JawOpen\n00:00:00:01.000,1,0.5\n", encoding="utf-16"),
     "not a text CSV|not a Live Link"),
    ("header_only", lambda p: p.write_text("Timecode,BlendShapeCount,JawOpen\n"), "no frames"),
    ("no_arkit_columns", lambda p: p.write_text("Timecode,BlendShapeCount,Foo\n00:00:00:01.000,1,0.5\n"),
     "no ARKit blendshape columns"),
    ("bad_timecode", lambda p: p.write_text("Timecode,BlendShapeCount,JawOpen\nnoon,1,0.5\n"), "line 2"),
]


@pytest.mark.parametrize(("case", "write", "match"), CSV_CASES, ids=[c[0] for c in CSV_CASES])
def test_live_link_bad_files_leave_no_face(scene, tmp_path, case, write, match):
    p = tmp_path / f"{case}.csv"
    write(p)
    assert_refused(op("import_live_link_csv", filepath=str(p)), match)
    assert len(bpy.data.objects) == 0 and len(bpy.data.meshes) == 0


def test_live_link_unusable_arkit_columns_named(scene, ll, gen, tmp_path):
    p = tmp_path / "text.csv"
    _csv(ll, gen, p)
    _rewrite_cells(p, _all_text)
    assert_refused(op("import_live_link_csv", filepath=str(p)), "no ARKit blendshape column holds a number .*: EyeBlinkLeft")


def test_live_link_target_in_tweak_mode_or_frames_out_of_range(scene, ll, gen, tmp_path):
    scene.render.fps = FPS
    p = tmp_path / "take.csv"
    _csv(ll, gen, p)
    assert op("import_live_link_csv", filepath=str(p))() == {"FINISHED"}
    assert_refused(op("import_live_link_csv", filepath=str(p), frame_start=2_000_000_000), "outside Blender's frames")
    assert_refused(op("import_live_link_csv", filepath=str(p), max_gap=math.nan), "Max Gap")
    _tweak(bpy.context.active_object.data.shape_keys)
    assert_refused(op("import_live_link_csv", filepath=str(p)), "tweak mode")


# ----------------------------------------------------------------------------------------------
# Motion database: build, reconstruct, live
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def face_db(scene, ll, gen, tmp_path):
    """A generated face with two imported takes and the database built from them."""
    scene.render.fps = FPS
    for i in range(2):
        p = tmp_path / f"t{i}.csv"
        values = np.column_stack([gen.generated_expressions(40, seed=i, fps=FPS), np.zeros((40, 9))])
        ll.write_csv(p, np.arange(40) / FPS, values)
        assert op("import_live_link_csv", filepath=str(p))() == {"FINISHED"}
    assert op("build_motion_database", kind="SHAPE_KEYS")() == {"FINISHED"}
    return bpy.context.active_object


def _curve(ob, name: str):
    return next(fc for fc in fcurves_of(ob.data.shape_keys) if f'"{name}"' in fc.data_path)


def test_database_refuses_non_finite_values_and_stray_keys(face_db):
    fc = _curve(face_db, "JawOpen")
    fc.keyframe_points[7].co.y = math.inf
    fc.update()
    assert_refused(op("build_motion_database", kind="SHAPE_KEYS"),
                   'Action "t1" has a non-finite or extreme value .* "JawOpen" at frame 8')
    fc.keyframe_points[7].co.y = 0.5
    fc.keyframe_points.insert(5_000_000.0, 0.2)
    assert_refused(op("build_motion_database", kind="SHAPE_KEYS"), "at most 2000000 .*stray key")


def test_database_follows_an_edited_key(face_db, mdb):
    scene = bpy.context.scene
    db = mdb.stored_database(scene)
    assert mdb.stored_database(scene) is db  # cached while nothing changed
    fc = _curve(face_db, "JawOpen")
    fc.keyframe_points[3].co.y += 0.25  # same key count, same frame range
    fc.update()
    new = mdb.stored_database(scene)
    assert new is not db
    j = list(new.channels).index("JawOpen")
    row = int(new.clip_starts[list(new.clip_names).index("t1")]) + 3  # frame 4 of the active take
    assert new.frames[row, j] == pytest.approx(float(fc.evaluate(4.0)), abs=1e-6)
    assert db.frames[row, j] != pytest.approx(new.frames[row, j], abs=0.2)


def test_reconstruct_in_tweak_mode_or_read_only_is_refused(face_db):
    _tweak(face_db.data.shape_keys)
    assert_refused(op("reconstruct_motion"), "tweak mode")


def test_reconstruct_with_infinite_query_values(face_db):
    assert op("build_motion_database", kind="SHAPE_KEYS", actions="t0")() == {"FINISHED"}  # the query t1 is not in it
    fc = _curve(face_db, "MouthSmileLeft")
    fc.keyframe_points[4].co.y = math.inf
    fc.update()
    assert fc.keyframe_points[4].co.y > 1e38  # Blender keeps an infinite key as the largest float
    assert op("reconstruct_motion", k=16)() == {"FINISHED"}
    result = bpy.data.actions[bpy.context.scene.anim_signals.motion_db.last_action]
    assert result.name == "t1.reconstructed"
    curves = fcurves_of(face_db.data.shape_keys)
    assert len(curves) == 52 and all(np.isfinite(key_array(f)).all() and np.abs(key_array(f)[:, 1]).max() <= 1.0
                                     for f in curves)


def test_query_with_a_stray_key_far_away(face_db):
    _curve(face_db, "JawOpen").keyframe_points.insert(3_000_000.0, 0.3)
    assert_refused(op("reconstruct_motion"), "span 3000040 frames; a motion database holds at most .*stray key")


def test_live_mode_takes_an_edited_database(face_db, mdb):
    live = ext_module("operators.motion_db.live")
    scene = bpy.context.scene
    assert op("motion_db_live", action="START")() == {"FINISHED"}
    try:
        state = live.live_state(scene)
        db = state.plan.db
        fc = _curve(face_db, "JawOpen")
        fc.keyframe_points[2].co.y += 0.3
        fc.update()
        bpy.context.view_layer.update()  # Blender's depsgraph reports the edited action
        assert state.stale
        scene.frame_set(scene.frame_current + 1)
        assert live.live_state(scene) is state and not state.stale
        assert state.plan.db is not db
    finally:
        op("motion_db_live", action="STOP")()
