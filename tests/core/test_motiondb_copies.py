"""Repeated frames (anim_signals.motiondb.copies): a library of copies is indexed once per distinct frame.

Expectations: numpy brute force over every row (argsort of all distances), the grouping by an explicit
dictionary of row values, and save / load through the index file.
"""

from __future__ import annotations

import numpy as np
import pytest

from anim_signals.motiondb import MotionDatabase, OLNGParams, Reconstructor
from anim_signals.motiondb.copies import RepeatedFrames, group_copies
from anim_signals.motiondb.index_store import content_hash, load_index, save_index
from anim_signals.motiondb.knn import IndexOptions, NeighbourIndex, build_index


def copies_library(seed=0):
    """Six 60-frame walks, then the same walks again, reversed, and a window of each: each frame 2-3 times."""
    rng = np.random.default_rng(seed)
    walks = [np.cumsum(rng.normal(0.0, 0.05, (60, 4)), axis=0) for _ in range(6)]
    clips = walks + [w[::-1].copy() for w in walks] + [w[10:40].copy() for w in walks]
    return MotionDatabase.from_clips(clips, ["a", "b", "c", "d"])


def brute(points, q, k):
    d = np.linalg.norm(points - q[None, :], axis=1)
    order = np.argsort(d, kind="stable")
    return d[order[:k]], order[:k], d


def test_group_copies_matches_a_dictionary_of_row_values():
    db = copies_library()
    c = group_copies(db.frames)
    assert c is not None
    groups: dict[bytes, list[int]] = {}
    for r, row in enumerate(db.frames):
        groups.setdefault(row.tobytes(), []).append(r)
    assert c.distinct == len(groups) == 360
    for u in range(c.distinct):
        rows = c.order[c.starts[u]: c.starts[u] + c.counts[u]].tolist()
        assert rows == groups[db.frames[c.first[u]].tobytes()] and rows[0] == c.first[u]
    assert c.first.tolist() == sorted(c.first.tolist())
    # few copies: not grouped
    assert group_copies(np.random.default_rng(1).random((100, 3))) is None


@pytest.mark.parametrize("backend", ["AUTO", "KDTREE", "FLAT", "HNSW", "IVF"])
def test_search_over_copies_equals_brute_force(backend):
    db = copies_library()
    k = 25
    index = build_index(db.frames, options=IndexOptions(backend=backend, k=k, recall_target=0.99, ef_search=500,
                                                        nprobe=64, storage="FLOAT32" if backend == "IVF" else "AUTO"))
    assert isinstance(index, RepeatedFrames) and index.n == db.n_frames and index.copies.distinct == 360
    assert "360 distinct" in index.describe()
    q = db.frames[[5, 77, 200, 333]] + np.random.default_rng(2).normal(0.0, 0.02, (4, 4))
    dist, idx = index.search(q, k)
    for r in range(q.shape[0]):
        d_true, _, all_d = brute(db.frames, q[r], k)
        assert len(set(idx[r].tolist())) == k
        np.testing.assert_allclose(all_d[idx[r]], dist[r], rtol=0, atol=1e-12)  # distances are the rows' own
        if index.exact:
            np.testing.assert_allclose(dist[r], d_true, rtol=0, atol=1e-12)
            inside = set(np.flatnonzero(all_d < d_true[-1] - 1e-12).tolist())
            assert inside <= set(idx[r].tolist())  # every frame strictly nearer than the k-th is there
        else:
            assert np.mean(dist[r] <= d_true[-1] + 1e-12) >= 0.9
    one_d, one_i = index.search(q[0], 3)
    assert one_d.shape == (3,) and one_i.tolist() == idx[0, :3].tolist()
    with pytest.raises(ValueError, match="neighbours"):
        index.search(q[0], db.n_frames + 1)


@pytest.mark.parametrize("backend", ["FLAT", "IVF"])
def test_copies_index_round_trips_through_its_file(tmp_path, backend):
    db = copies_library()
    opts = IndexOptions(backend=backend, k=20, recall_target=0.5, storage="FLOAT32" if backend == "IVF" else "AUTO")
    index = build_index(db.frames, options=opts)
    digest = content_hash(db, None, opts)
    save_index(index, tmp_path / "i.asknn", digest)
    loaded = load_index(tmp_path / "i.asknn", digest, db.frames)
    assert isinstance(loaded, RepeatedFrames) and loaded.copies.distinct == index.copies.distinct
    q = db.frames[:9] + 0.01
    for a, b in zip(index.search(q, 20), loaded.search(q, 20)):
        np.testing.assert_array_equal(a, b)


def test_olng_over_copies_finds_the_queried_frames_value():
    db = copies_library()
    rows = np.arange(db.clip_starts[1] + 5, db.clip_starts[1] + 45)
    noisy = db.frames[rows] + np.random.default_rng(3).normal(0.0, 0.01, (rows.size, 4))
    rec = Reconstructor(db, OLNGParams(k=16, window=8, paths=4))
    assert isinstance(rec.index, RepeatedFrames)
    best = np.array([rec.step(q).best_index for q in noisy])
    # the best frame has the queried frame's value (a copy of it counts: the frames are equal)
    assert np.mean(np.all(db.frames[best] == db.frames[rows], axis=1)) > 0.8


def test_a_library_without_copies_gets_the_plain_index():
    x = np.random.default_rng(4).random((500, 3))
    index = build_index(x, k=8)
    assert type(index) is NeighbourIndex
