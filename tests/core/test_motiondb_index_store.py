"""The motion database's k-NN index on disk (issue 18): round trips, invalidation, damaged files.

Every damaged file is made here byte by byte (cut, flipped, foreign, other version) and must be
refused with :class:`IndexFileError`, then rebuilt by :func:`cached_index`; answers after a round trip
are compared with the index that was saved and with a numpy brute force.
"""

from __future__ import annotations

import os
import struct
import sys

import numpy as np
import pytest

from anim_signals.motiondb import MotionDatabase, OLNGParams, Reconstructor, index_store
from anim_signals.motiondb.index_store import (
    FORMAT_VERSION,
    MAGIC,
    IndexFileError,
    cached_index,
    content_hash,
    load_index,
    save_index,
)
from anim_signals.motiondb.knn import IndexOptions, IndexTooLarge, build_index


def walk_db(n_clips=10, length=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    clips = [rng.random(d) + np.cumsum(rng.normal(scale=0.03, size=(length, d)), axis=0) for _ in range(n_clips)]
    return MotionDatabase.from_clips(clips, [f"c{i}" for i in range(d)]), clips


OPTIONS = {
    "KDTREE": IndexOptions(backend="KDTREE", k=16),
    "FLAT": IndexOptions(backend="FLAT", k=16),
    "HNSW": IndexOptions(backend="HNSW", k=16, recall_target=0.5),
    "IVF": IndexOptions(backend="IVF", k=16, recall_target=0.5),
}


def queries(db, n=12, seed=1):
    rng = np.random.default_rng(seed)
    return db.frames[rng.choice(db.n_frames, n)] + rng.normal(scale=0.02, size=(n, db.frames.shape[1]))


@pytest.mark.parametrize("backend", list(OPTIONS))
def test_save_load_round_trip_gives_identical_answers(tmp_path, backend):
    db, _ = walk_db()
    o = OPTIONS[backend]
    digest = content_hash(db, None, o)
    index = build_index(db.frames, options=o)
    path = tmp_path / "db.asknn"
    written = save_index(index, path, digest)
    assert path.stat().st_size == written and os.listdir(tmp_path) == ["db.asknn"]  # no temp file left
    back = load_index(path, digest, db.frames)
    assert back.backend == index.backend and back.settings == index.settings
    assert back.recall == index.recall and back.recall_k == index.recall_k
    q = queries(db)
    for x, y in zip(index.search(q, 16), back.search(q, 16)):
        np.testing.assert_array_equal(x, y)
    if backend in ("KDTREE", "FLAT"):  # exact: also the brute force
        d = np.linalg.norm(db.frames[None, :, :] - q[:, None, :], axis=2)
        np.testing.assert_array_equal(back.search(q, 16)[1], np.argsort(d, axis=1, kind="stable")[:, :16])


def test_content_hash_follows_clips_columns_and_options():
    db, clips = walk_db()
    o = IndexOptions(k=16)
    h = content_hash(db, None, o)
    assert h == content_hash(walk_db()[0], None, o) and len(h) == 64
    changed = [c.copy() for c in clips]
    changed[3][50, 2] += 1e-9  # one value of one clip
    assert content_hash(MotionDatabase.from_clips(changed, db.channels), None, o) != h
    assert content_hash(db, [0, 1, 2], o) != h
    assert content_hash(db, None, IndexOptions(k=16, recall_target=0.9)) != h
    assert content_hash(db, None, IndexOptions(k=16, backend="FLAT")) != h
    renamed = MotionDatabase.from_clips(clips, [f"x{i}" for i in range(6)])
    assert content_hash(renamed, None, o) != h


def test_cached_index_builds_loads_and_rebuilds_on_changed_clips(tmp_path):
    db, clips = walk_db()
    o = OPTIONS["IVF"]
    path = tmp_path / "scene.asknn"
    index, status = cached_index(db, None, o, path=path)
    assert status.startswith("built") and path.exists()
    again, status = cached_index(walk_db()[0], None, o, path=path)
    assert status.startswith("loaded")
    q = queries(db)
    np.testing.assert_array_equal(index.search(q, 16)[1], again.search(q, 16)[1])
    changed = [c.copy() for c in clips]
    changed[0] = changed[0][:-5]  # a clip got shorter
    db2 = MotionDatabase.from_clips(changed, db.channels)
    index2, status = cached_index(db2, None, o, path=path)
    assert status.startswith("rebuilt") and "content hash differs" in status
    assert index2.n == db2.n_frames
    assert cached_index(db2, None, o, path=path)[1].startswith("loaded")
    # in a cache folder the file is named by the hash: other data, other file
    _, s1 = cached_index(db, None, o, cache_dir=tmp_path / "cache")
    _, s2 = cached_index(db2, None, o, cache_dir=tmp_path / "cache")
    assert s1.startswith("built") and s2.startswith("built") and len(os.listdir(tmp_path / "cache")) == 2
    assert cached_index(db, None, o, cache_dir=tmp_path / "cache")[1].startswith("loaded")


def test_cached_index_is_used_by_the_reconstructor(tmp_path):
    db, _ = walk_db()
    params = OLNGParams(k=16, window=8, paths=4, backend="IVF", recall_target=0.5)
    index, _ = cached_index(db, None, params.index_options(), cache_dir=tmp_path)
    assert Reconstructor(db, params).index is index


def _damage(path, how):
    data = bytearray(path.read_bytes())
    head = struct.calcsize("<8sII32s")
    if how == "truncated":
        data = data[: len(data) - 7]
    elif how == "truncated_header":
        data = data[: head + 10]
    elif how == "tiny":
        data = data[:5]
    elif how == "corrupt_payload":
        data[-20] ^= 0x55
    elif how == "corrupt_header":
        data[head + 5] ^= 0x01
    elif how == "trailing":
        data += b"\0\0\0"
    elif how == "foreign":
        data[:8] = b"PK\x03\x04zzzz"
    elif how == "version":
        data[8:12] = struct.pack("<I", FORMAT_VERSION + 1)
    elif how == "empty":
        data = bytearray()
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how,reason", [
    ("truncated", "truncated"), ("truncated_header", "truncated"), ("tiny", "truncated"), ("empty", "truncated"),
    ("corrupt_payload", "corrupt"), ("corrupt_header", "corrupt"), ("trailing", "corrupt"),
    ("foreign", "foreign"), ("version", "format version"),
])
def test_damaged_files_are_refused_and_rebuilt(tmp_path, how, reason):
    db, _ = walk_db()
    o = OPTIONS["HNSW"]
    path = tmp_path / "x.asknn"
    index, _ = cached_index(db, None, o, path=path)
    _damage(path, how)
    with pytest.raises(IndexFileError, match=reason) as err:
        load_index(path, content_hash(db, None, o), db.frames)
    assert reason in err.value.reason
    rebuilt, status = cached_index(db, None, o, path=path)
    assert status.startswith("rebuilt") and reason in status
    assert load_index(path, content_hash(db, None, o), db.frames).backend == "HNSW"  # the new file is sound
    q = queries(db)
    d = np.linalg.norm(db.frames[None, :, :] - q[:, None, :], axis=2)
    truth = np.argsort(d, axis=1)[:, :16]
    hits = np.mean([np.isin(a, b).mean() for a, b in zip(rebuilt.search(q, 16)[1], truth)])
    assert hits >= 0.5  # a working index (recall target 0.5), not garbage


def test_other_data_and_shape_are_refused(tmp_path):
    db, _ = walk_db()
    o = OPTIONS["FLAT"]
    path = tmp_path / "x.asknn"
    save_index(build_index(db.frames, options=o), path, content_hash(db, None, o))
    with pytest.raises(IndexFileError, match="content hash"):
        load_index(path, "0" * 64, db.frames)
    with pytest.raises(IndexFileError, match="frames"):
        load_index(path, content_hash(db, None, o), db.frames[:-1])
    with pytest.raises(IndexFileError, match="cannot be read|truncated"):
        load_index(tmp_path / "missing.asknn", "0" * 64, db.frames)
    assert MAGIC == path.read_bytes()[:8]


def test_approximate_file_without_faiss_is_refused_then_rebuilt_exact(tmp_path, monkeypatch):
    db, _ = walk_db()
    o = OPTIONS["IVF"]
    path = tmp_path / "x.asknn"
    cached_index(db, None, o, path=path)
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(IndexFileError, match="needs faiss"):
        load_index(path, content_hash(db, None, o), db.frames)
    index, status = cached_index(db, None, o, path=path)
    assert status.startswith("rebuilt") and index.backend == "FLAT" and "faiss" in index.message
    assert cached_index(db, None, o, path=path)[1].startswith("loaded")  # the exact fallback was saved


def test_too_large_to_load_is_refused(tmp_path, monkeypatch):
    db, _ = walk_db()
    o = OPTIONS["HNSW"]
    path = tmp_path / "x.asknn"
    cached_index(db, None, o, path=path)
    monkeypatch.setattr(index_store, "available_memory", lambda: 1000)
    with pytest.raises(IndexTooLarge, match="GiB"):
        load_index(path, content_hash(db, None, o), db.frames)


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    db, _ = walk_db()
    o = OPTIONS["FLAT"]
    index = build_index(db.frames, options=o)

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(index_store.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        save_index(index, tmp_path / "x.asknn", "0" * 64)
    assert os.listdir(tmp_path) == []
    _, status = cached_index(db, None, o, path=tmp_path / "y.asknn")
    assert "not saved: disk full" in status and os.listdir(tmp_path) == []
