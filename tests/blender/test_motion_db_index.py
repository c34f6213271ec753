"""The motion database's persisted k-NN index in Blender (``operators/motion_db/index.py``): built once by
Build (modal, Esc), saved beside the .blend (``<blend>_motiondb/knn-<hash>.asknn``) or in the extension's
cache folder, loaded when the file is opened, rebuilt when a clip or a setting changes; unusable files
(truncated, foreign, another hash) are reported and rebuilt, never used.

The expectations are independent of the code under test: files are looked for on disk, "loaded, not
rebuilt" is checked by making any build fail, identical answers by comparing the written keys of two
reconstructions, and the recall against the core's exact kd-tree search where it is asserted.
"""

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
    event,
    ext_module,
    fcurves_of,
    key_array,
    snapshot_all,
)

FPS = 30
ASIDX = ".asknn"


@pytest.fixture
def idx(extension):
    """operators/motion_db/index.py of the installed extension (its session state cleared)."""
    mod = ext_module("operators.motion_db.index")
    mod.clear_session()
    yield mod
    mod.clear_session()


@pytest.fixture
def mdb(extension):
    return ext_module("operators.motion_db.database")


@pytest.fixture
def face(scene, tmp_path, idx, mdb):
    """A generated face with three short expression takes (t0..t2), the .blend saved as tmp/db.blend."""
    ll = ext_module("anim_signals.motiondb.livelink")
    gen = ext_module("anim_signals.motiondb.generated")
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    for i, n in enumerate((60, 50, 40)):
        p = tmp_path / f"t{i}.csv"
        ll.write_csv(p, np.arange(n) / FPS, np.column_stack([gen.generated_expressions(n, seed=20 + i, fps=FPS),
                                                             np.zeros((n, 9))]))
        assert bpy.ops.anim_signals.import_live_link_csv(filepath=str(p)) == {"FINISHED"}
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "db.blend"), check_existing=False)
    mdb.clear_cache()
    return bpy.context.active_object


def beside(tmp_path, name: str = "db") -> list[str]:
    folder = tmp_path / f"{name}_motiondb"
    return sorted(f for f in os.listdir(folder) if f.endswith(ASIDX)) if folder.is_dir() else []


def cache_files(idx) -> list[str]:
    folder = idx.cache_folder(idx.CACHE_NAME)
    return sorted(f for f in os.listdir(folder) if f.endswith(ASIDX))


def use_action(ob, name: str) -> None:
    adt = ob.data.shape_keys.animation_data
    adt.action = bpy.data.actions[name]
    if hasattr(adt, "action_slot"):
        adt.action_slot = bpy.data.actions[name].slots[0]


def reconstruct(ob, query: str = "t1", **kwargs) -> np.ndarray:
    """Reconstruct ``query`` on ``ob``; the written keys (curves x keys x (frame, value))."""
    use_action(ob, query)
    assert bpy.ops.anim_signals.reconstruct_motion(output="BEST_PATH", k=32, window=8, **kwargs) == {"FINISHED"}
    curves = sorted(fcurves_of(ob.data.shape_keys), key=lambda fc: fc.data_path)
    return np.array([key_array(fc) for fc in curves])


def no_build(idx, monkeypatch) -> list:
    """Make any index build fail the test (a loaded index must be used as it is)."""
    calls: list = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the index was rebuilt")

    monkeypatch.setattr(idx, "_build", refuse)
    graph = ext_module("anim_signals.motiondb.graph")  # the core's own on-demand build (MotionDatabase.index)
    monkeypatch.setattr(graph, "build_index", refuse)
    return calls


def reopen(path, idx, mdb) -> None:
    """Forget everything in memory and open the file again (its load handler loads the indexes)."""
    idx.clear_session()
    mdb.clear_cache()
    bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)


@pytest.mark.parametrize("backend", ["KDTREE", "HNSW"])
def test_build_saves_beside_and_reopen_loads_it(face, tmp_path, idx, mdb, monkeypatch, backend):
    s = bpy.context.scene.anim_signals.motion_db
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", backend=backend) == {"FINISHED"}
    files = beside(tmp_path)
    assert len(files) == 1 and s.index_status == "BUILT" and s.index_channels == 52
    assert s.index_path == str(tmp_path / "db_motiondb" / files[0])
    assert backend in s.index_backend and 0.0 < s.index_recall <= 1.0
    assert s.index_mb == pytest.approx(os.path.getsize(s.index_path) / 1e6)
    first = reconstruct(face)
    stamp = os.stat(s.index_path).st_mtime_ns
    bpy.ops.wm.save_mainfile()
    reopen(tmp_path / "db.blend", idx, mdb)
    s = bpy.context.scene.anim_signals.motion_db
    assert s.index_status == "LOADED" and s.index_path.endswith(files[0])  # loaded on open
    calls = no_build(idx, monkeypatch)
    again = reconstruct(bpy.data.objects["ARKit Face"])
    assert not calls and s.index_status == "LOADED"
    np.testing.assert_array_equal(again, first)  # the same answers from the loaded index
    assert beside(tmp_path) == files and os.stat(s.index_path).st_mtime_ns == stamp


def test_changed_clip_or_setting_builds_a_new_index(face, tmp_path, idx):
    s = bpy.context.scene.anim_signals.motion_db
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS") == {"FINISHED"}
    old = beside(tmp_path)
    reconstruct(face)
    assert s.index_status == "BUILT" and beside(tmp_path) == old  # the same index reused in memory
    data = ext_module("operators.blender_data")
    fc = data.named_channels.named_channel_curves(bpy.data.actions["t2"], "SHAPE_KEYS")["JawOpen"]
    fc.keyframe_points[5].co.y += 0.3  # same key count and range: only the content changed
    fc.update()
    reconstruct(face)
    new = beside(tmp_path)
    assert len(new) == 2 and s.index_status == "BUILT" and os.path.basename(s.index_path) not in old
    s.recall_target = 0.9  # another setting: another key
    reconstruct(face)
    assert len(beside(tmp_path)) == 3


def test_unusable_index_files_are_reported_and_rebuilt(face, tmp_path, idx, mdb):
    s = bpy.context.scene.anim_signals.motion_db
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", backend="HNSW") == {"FINISHED"}
    path = s.index_path
    good = open(path, "rb").read()
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", backend="KDTREE") == {"FINISHED"}
    foreign = open(s.index_path, "rb").read()  # a valid file, for another content hash
    s.backend = "HNSW"
    bpy.ops.wm.save_mainfile()
    damaged = {"truncated": good[: len(good) // 2], "garbage": b"not an index at all" * 10, "foreign": foreign,
               "empty": b""}
    for why, content in damaged.items():
        with open(path, "wb") as fh:
            fh.write(content)
        reopen(tmp_path / "db.blend", idx, mdb)
        s = bpy.context.scene.anim_signals.motion_db
        assert s.index_status == "NONE", why  # not loaded on open: never used
        assert not os.path.exists(path), why  # ours, refused every time: deleted
        reconstruct(bpy.data.objects["ARKit Face"])
        assert s.index_status == "BUILT" and s.index_path == path, why
        assert "unusable" in s.index_note and path in s.index_note, why  # found on open, told at the rebuild
        assert open(path, "rb").read() != content, why
        bpy.ops.wm.save_mainfile()
        reopen(tmp_path / "db.blend", idx, mdb)
        assert bpy.context.scene.anim_signals.motion_db.index_status == "LOADED", why  # the rebuilt file loads


def test_unusable_file_found_at_first_use_is_named(face, tmp_path, idx, mdb):
    s = bpy.context.scene.anim_signals.motion_db
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS") == {"FINISHED"}
    path = s.index_path
    idx.clear_session()
    with open(path, "r+b") as fh:
        fh.truncate(16)
    reconstruct(face)
    assert s.index_status == "BUILT" and "unusable" in s.index_note and path in s.index_note


def test_cancel_mid_build_leaves_nothing(face, tmp_path, idx, monkeypatch):
    """Esc while the index is building: no database recorded, no index file anywhere, the build thread
    stopped at its next progress report."""
    before_cache = cache_files(idx)
    state = snapshot_all()
    seen: list = []
    threaded = ext_module("operators.common.threaded")

    def slow_build(points, options, *, progress):
        for i in range(2000):  # about 20 s unless cancelled
            try:
                progress(i / 2000)
            except threaded.Cancelled:
                seen.append(i)
                raise
            import time

            time.sleep(0.01)
        raise AssertionError("not cancelled")

    monkeypatch.setattr(idx, "_build", slow_build)
    op = StepwiseDriver(bpy.types.ANIM_SIGNALS_OT_build_motion_database, bpy.context, kind="SHAPE_KEYS")
    for _ in range(3):
        assert op.modal(bpy.context, event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, event("ESC", "PRESS")) == {"CANCELLED"}
    assert seen, "the build thread did not stop"
    assert any("cancelled" in msg for _, msg in op.reports)
    assert_same_state(state, snapshot_all())
    assert not len(bpy.context.scene.anim_signals.motion_db.actions)
    assert beside(tmp_path) == [] and cache_files(idx) == before_cache


def test_cancel_of_a_reconstruction_that_built_an_index(face, tmp_path, idx):
    """Esc during a reconstruction whose query channels (eyes dropped) needed an index of their own,
    built by the core at its start: the index is not written (only a finished run saves it)."""
    before_cache = cache_files(idx)
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS") == {"FINISHED"}
    assert len(beside(tmp_path)) == 1
    use_action(face, "t1")
    op = StepwiseDriver(bpy.types.ANIM_SIGNALS_OT_reconstruct_motion, bpy.context, output="BEST_PATH", k=16,
                        drop_eyes=True)
    op.modal(bpy.context, event("TIMER"))
    assert op.modal(bpy.context, event("ESC", "PRESS")) == {"CANCELLED"}
    assert len(beside(tmp_path)) == 1 and cache_files(idx) == before_cache  # the drop-eyes index: not written
    assert bpy.ops.anim_signals.reconstruct_motion(output="BEST_PATH", k=16, drop_eyes=True) == {"FINISHED"}
    s = bpy.context.scene.anim_signals.motion_db
    assert len(beside(tmp_path)) == 2 and s.index_channels == 52 - 14


def test_unsaved_or_unwritable_folder_uses_the_cache(face, tmp_path, idx, mdb, monkeypatch):
    monkeypatch.setattr(idx, "writable_folder", lambda folder: False)  # a read-only share (tests run as root)
    s = bpy.context.scene.anim_signals.motion_db
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS") == {"FINISHED"}
    assert beside(tmp_path) == [] and os.path.dirname(s.index_path) == idx.cache_folder(idx.CACHE_NAME)
    name = os.path.basename(s.index_path)
    assert name in cache_files(idx)
    monkeypatch.undo()
    # Saved under a new name in a writable folder: the index moves beside it.
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "moved.blend"), check_existing=False)
    assert beside(tmp_path, "moved") == [name] and name not in cache_files(idx)
    assert s.index_path == str(tmp_path / "moved_motiondb" / name)
    reopen(tmp_path / "moved.blend", idx, mdb)
    assert bpy.context.scene.anim_signals.motion_db.index_status == "LOADED"


def test_live_mode_uses_the_loaded_index(face, tmp_path, idx, mdb, monkeypatch):
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS") == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    reopen(tmp_path / "db.blend", idx, mdb)
    calls = no_build(idx, monkeypatch)
    live = ext_module("operators.motion_db.live")
    ob = bpy.data.objects["ARKit Face"]
    bpy.context.view_layer.objects.active = ob
    use_action(ob, "t0")
    assert bpy.ops.anim_signals.motion_db_live(action="START", output="BEST_PATH", k=16) == {"FINISHED"}
    try:
        state = live.live_state(bpy.context.scene)
        assert state.plan.index.status == "LOADED" and not calls
        for f in range(2, 8):
            bpy.context.scene.frame_set(f)
    finally:
        bpy.ops.anim_signals.motion_db_live(action="STOP")


def test_clear_index_files_and_save_beside(face, tmp_path, idx):
    s = bpy.context.scene.anim_signals.motion_db
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS") == {"FINISHED"}
    assert bpy.ops.anim_signals.save_motion_db_index(filepath=str(tmp_path / "copy.blend")) == {"FINISHED"}
    assert beside(tmp_path, "copy") == beside(tmp_path)
    assert bpy.ops.anim_signals.clear_motion_db_index() == {"FINISHED"}
    assert beside(tmp_path) == [] and not (tmp_path / "db_motiondb").exists()
    assert s.index_status == "NONE"
    reconstruct(face)
    assert s.index_status == "BUILT" and len(beside(tmp_path)) == 1


def _draw_panel(scene) -> list:
    calls: list = []
    panel = bpy.types.ANIM_SIGNALS_PT_motion_db
    ctx = types.SimpleNamespace(scene=scene, window_manager=bpy.context.window_manager)
    panel.draw(types.SimpleNamespace(layout=FakeLayout(calls), **{n: getattr(panel, n) for n in vars(panel)
                                                                  if n.startswith("_draw")}), ctx)
    return calls


def test_panel_shows_the_index(face, tmp_path, idx):
    scene = bpy.context.scene
    calls = _draw_panel(scene)
    assert {("prop", "backend"), ("prop", "recall_target")} <= set(c for c in calls if c[0] == "prop")
    assert ("set", "backend", "AUTO") in calls and ("set", "recall_target", pytest.approx(0.95)) in calls
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", backend="FLAT") == {"FINISHED"}
    s = scene.anim_signals.motion_db
    labels = [c[1] for c in _draw_panel(scene) if c[0] == "label"]
    assert f"Index: {s.index_backend}" in labels
    assert f"Recall {s.index_recall:.3f}, {s.index_mb:.1f} MB, built" in labels
    assert any(t.startswith("File: //db_motiondb/") and t.endswith(ASIDX) for t in labels)
    assert ("operator", "anim_signals.clear_motion_db_index") in _draw_panel(scene)
    for item in s.bl_rna.properties["backend"].enum_items:
        assert len(item.description) > 40  # the tooltips explain each search


def test_recall_shown_is_the_index_s(face, idx):
    """The sidebar's recall: 1 for exact search, the core's measured one for HNSW."""
    s = bpy.context.scene.anim_signals.motion_db
    for backend in ("KDTREE", "FLAT"):
        assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", backend=backend) == {"FINISHED"}
        assert s.index_recall == pytest.approx(1.0)
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", backend="HNSW") == {"FINISHED"}
    entry = next(e for e in idx._SESSION.values() if e.path == s.index_path)
    assert s.index_recall == pytest.approx(float(entry.index.recall)) and 0.0 < s.index_recall <= 1.0


def test_missing_faiss_falls_back_to_exact_and_keeps_the_approximate_file(face, tmp_path, idx, mdb, monkeypatch):
    """Without faiss (sys.modules["faiss"] = None: its import fails) HNSW falls back to exact search, says
    so, and saves nothing under HNSW's key; an HNSW file saved where faiss was is kept for later."""
    s = bpy.context.scene.anim_signals.motion_db
    assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", backend="HNSW") == {"FINISHED"}
    hnsw = s.index_path
    content = open(hnsw, "rb").read()
    bpy.ops.wm.save_mainfile()
    monkeypatch.setitem(sys.modules, "faiss", None)
    reopen(tmp_path / "db.blend", idx, mdb)
    s = bpy.context.scene.anim_signals.motion_db
    assert s.index_status == "NONE"
    reconstruct(bpy.data.objects["ARKit Face"])
    assert s.index_status == "BUILT" and not s.index_backend.startswith("HNSW") and s.index_recall == 1.0
    assert "faiss" in s.index_note and not s.index_path
    assert beside(tmp_path) == [os.path.basename(hnsw)] and open(hnsw, "rb").read() == content
    monkeypatch.undo()
    reopen(tmp_path / "db.blend", idx, mdb)
    assert bpy.context.scene.anim_signals.motion_db.index_status == "LOADED"
    assert bpy.context.scene.anim_signals.motion_db.index_backend.startswith("HNSW")


def test_index_that_does_not_fit_in_memory_is_refused_with_its_size(face, tmp_path, idx, monkeypatch):
    knn = ext_module("anim_signals.motiondb.knn")
    monkeypatch.setattr(knn, "available_memory", lambda: 4096)  # 4 kB free
    before_cache = cache_files(idx)
    state = snapshot_all()
    with pytest.raises(RuntimeError, match=r"does not fit in memory: .*needs about .*GiB"):
        bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", backend="FLAT")
    assert_same_state(state, snapshot_all())
    assert not len(bpy.context.scene.anim_signals.motion_db.actions)
    assert beside(tmp_path) == [] and cache_files(idx) == before_cache


def test_cache_folder_keeps_the_newest_files(face, tmp_path, idx, monkeypatch):
    """Unsaved or unwritable files share the cache folder: it keeps CACHE_FILES index files, the newest."""
    monkeypatch.setattr(idx, "writable_folder", lambda folder: False)
    monkeypatch.setattr(idx, "CACHE_FILES", 2)
    folder = idx.cache_folder(idx.CACHE_NAME)
    for f in cache_files(idx):
        os.remove(os.path.join(folder, f))
    s = bpy.context.scene.anim_signals.motion_db
    made = []
    for target in (0.6, 0.7, 0.8):
        assert bpy.ops.anim_signals.build_motion_database(kind="SHAPE_KEYS", recall_target=target) == {"FINISHED"}
        made.append(os.path.basename(s.index_path))
        os.utime(s.index_path, (1e9 + 10 * len(made),) * 2)  # written in this order, whatever the clock
        idx.clear_session()
    assert len(set(made)) == 3 and cache_files(idx) == sorted(made[1:])
