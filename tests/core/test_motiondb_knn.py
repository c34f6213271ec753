"""k-NN backends of the motion database (issue 18) and the sparse OLNG graph update.

Expectations are independent of the code under test: a numpy brute-force k-NN (argsort of every
distance), the dense K x K graph update as it was before (kept here as a slow reference), exhaustive
search settings that must reproduce exact search, and explicit size / target rules for AUTO.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from anim_signals.motiondb import MotionDatabase, OLNGParams, Reconstructor, knn
from anim_signals.motiondb.knn import (
    IndexBuildCancelled,
    IndexOptions,
    IndexTooLarge,
    NeighbourIndex,
    build_index,
    choose_backend,
    exact_knn,
    measure_recall,
)

# ------------------------------------------------------------------------------------------------
# data and references
# ------------------------------------------------------------------------------------------------


def walk_clips(n_clips=12, length=150, d=8, seed=0, speed=0.05):
    """Smooth random walks (velocity an AR(1) process) reflected into [0, 1]: frames along chains."""
    rng = np.random.default_rng(seed)
    clips = []
    for _ in range(n_clips):
        vel = np.zeros((length, d))
        for t in range(1, length):
            vel[t] = 0.9 * vel[t - 1] + speed * np.sqrt(1 - 0.81) * rng.standard_normal(d)
        x = rng.random(d) * 2.0 + np.cumsum(vel, axis=0)
        clips.append(np.abs(((x % 2.0) + 2.0) % 2.0 - 1.0))
    return clips


def make_db(n_clips=12, length=150, d=8, seed=0):
    return MotionDatabase.from_clips(walk_clips(n_clips, length, d, seed), [f"c{i}" for i in range(d)])


def noisy_queries(db, n=60, level=0.2, seed=1):
    """A stretch of one clip then of another, with Gaussian noise of level x each channel's std."""
    rng = np.random.default_rng(seed)
    rows = np.concatenate([np.arange(db.clip_starts[2] + 10, db.clip_starts[2] + 10 + n // 2),
                           np.arange(db.clip_starts[7] + 40, db.clip_starts[7] + 40 + n - n // 2)])
    std = db.frames.std(axis=0)
    return rows, db.frames[rows] + level * std * rng.standard_normal((rows.size, db.frames.shape[1]))


def brute(points, q, k):
    d = np.sqrt(((points - q[None, :]) ** 2).sum(axis=1))
    order = np.argsort(d, kind="stable")[:k]
    return d[order], order


class DenseReconstructor(Reconstructor):
    """The graph update before issue 18: a dense K x K predecessor matrix and a T-step pred walk."""

    def _walk_oldest_cost(self, rows, col):
        t_len = self.params.window
        r = rows.copy()
        c = col
        for _ in range(t_len - 1):
            r = np.where(r >= 0, self.pred[np.maximum(r, 0), c], -1)
            c = (c - 1) % t_len
        return np.where(r >= 0, self.cost[np.maximum(r, 0), c], 0.0)

    def step(self, query):
        p = self.params
        q = np.asarray(query, dtype=float).reshape(-1)
        dist, idx = self.index.search(q, p.k)
        self.t += 1
        col = self.t % p.window
        prev = (col - 1) % p.window
        cost_sum = dist.copy()
        node_cost = dist.copy()
        length = np.ones(p.k, dtype=np.int64)
        pred = np.full(p.k, -1, dtype=np.int64)
        if self.t > 0:
            prev_nodes = self.nodes[:, prev]
            ok_prev = prev_nodes >= 0
            if ok_prev.any():
                pn = prev_nodes[ok_prev]
                rows = np.flatnonzero(ok_prev)
                gap = idx[:, None] - pn[None, :]
                valid = (gap >= p.a) & (gap <= p.b) & (self.clip_ids[idx][:, None] == self.clip_ids[pn][None, :])
                if valid.any():
                    prev_sum = self.path_cost[rows, prev]
                    prev_len = self.path_length[rows, prev]
                    full = prev_len >= p.window
                    drop = np.where(full, self._walk_oldest_cost(rows, prev), 0.0)
                    edge = np.broadcast_to(dist[:, None], valid.shape).copy()
                    if p.stay > 0.0 and self._prev_best_row >= 0:
                        edge[:, rows == self._prev_best_row] *= (1.0 - p.stay)
                    new_sum = prev_sum[None, :] - drop[None, :] + edge
                    new_len = np.minimum(prev_len + 1, p.window)[None, :]
                    score = np.where(valid, new_sum / new_len**2, np.inf)
                    j = np.argmin(score, axis=1)
                    better = np.isfinite(score[np.arange(p.k), j])
                    node_cost = np.where(better, edge[np.arange(p.k), j], node_cost)
                    cost_sum = np.where(better, new_sum[np.arange(p.k), j], cost_sum)
                    length = np.where(better, np.broadcast_to(new_len, valid.shape)[np.arange(p.k), j], length)
                    pred = np.where(better, rows[j], -1)
        self.nodes[:, col] = idx
        self.cost[:, col] = node_cost
        self.path_cost[:, col] = cost_sum
        self.path_length[:, col] = length
        self.pred[:, col] = pred
        scores = cost_sum / length**2
        top = int(np.argsort(scores, kind="stable")[0])
        self._prev_best_row = top
        return int(idx[top])


# ------------------------------------------------------------------------------------------------
# the graph update
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k,window,a,b,stay", [(32, 8, 1, 2, 0.0), (48, 5, 0, 3, 0.3), (64, 1, 1, 2, 0.0),
                                                (40, 2, 2, 4, 0.5), (24, 16, 1, 1, 0.1)])
def test_graph_update_equals_dense_reference(k, window, a, b, stay):
    db = make_db(n_clips=6, length=60, d=3, seed=4)
    params = OLNGParams(k=k, window=window, paths=5, a=a, b=b, stay=stay, backend="KDTREE")
    new, old = Reconstructor(db, params), DenseReconstructor(db, params)
    rng = np.random.default_rng(9)
    # coarse noise: many ties of structure (several paths per clip), crossings between clips
    rows = np.concatenate([np.arange(3, 50), np.arange(db.clip_starts[3], db.clip_starts[3] + 45)])
    queries = db.frames[rows] + rng.normal(scale=0.05, size=(rows.size, 3))
    for q in queries:
        best = new.step(q).best_index
        assert best == old.step(q)
        for name in ("nodes", "pred", "path_length"):
            np.testing.assert_array_equal(getattr(new, name), getattr(old, name))
        np.testing.assert_array_equal(new.path_cost, old.path_cost)  # same arithmetic: bit for bit
        np.testing.assert_array_equal(new.cost, old.cost)
    assert (new.path_length == window).any() or window > 40  # the oldest-cost drop was exercised


def test_graph_ties_take_the_lowest_previous_row():
    # a database whose frames repeat: equal distances, equal path costs, many equal scores
    clip = np.repeat(np.arange(6.0)[:, None], 4, axis=0)[:, :1]
    db = MotionDatabase.from_clips([clip, clip.copy()], ["x"])
    params = OLNGParams(k=12, window=3, paths=2, a=0, b=3, backend="KDTREE")
    new, old = Reconstructor(db, params), DenseReconstructor(db, params)
    for v in (1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 3.0):
        assert new.step([v]).best_index == old.step([v])
        np.testing.assert_array_equal(new.pred, old.pred)
        np.testing.assert_array_equal(new.path_cost, old.path_cost)


# ------------------------------------------------------------------------------------------------
# backends
# ------------------------------------------------------------------------------------------------


def test_exact_knn_equals_argsort():
    rng = np.random.default_rng(0)
    x = rng.random((700, 5))
    q = rng.random((9, 5))
    d, i = exact_knn(x, q, 17, chunk=128)  # several chunks
    for r in range(9):
        bd, bi = brute(x, q[r], 17)
        np.testing.assert_array_equal(i[r], bi)
        np.testing.assert_allclose(d[r], bd, rtol=1e-12)


@pytest.mark.parametrize("backend,extra", [("KDTREE", {}), ("FLAT", {}), ("HNSW", {"ef_search": 1024}),
                                           ("HNSW", {"ef_search": 1024, "storage": "FLOAT16"}),
                                           ("IVF", {"nlist": 16, "nprobe": 16, "storage": "FLOAT32"}),
                                           ("IVF", {"nlist": 16, "nprobe": 16, "storage": "FLOAT16"})])
def test_backend_search_equals_brute_force(backend, extra):
    db = make_db(n_clips=10, length=100, d=6, seed=1)
    index = build_index(db.frames, options=IndexOptions(backend=backend, k=20, recall_target=0.5, **extra))
    assert index.backend == backend and index.message == ""
    assert index.settings.get("storage", "FLOAT32") == extra.get("storage", "FLOAT32")
    rng = np.random.default_rng(2)
    for q in db.frames[rng.choice(db.n_frames, 8)] + rng.normal(scale=0.05, size=(8, 6)):
        d, i = index.search(q, 20)
        bd, bi = brute(db.frames, q, 20)
        assert d.shape == (20,) and i.dtype == np.int64
        np.testing.assert_array_equal(i, bi)
        np.testing.assert_allclose(d, bd, rtol=1e-12)
    d2, i2 = index.search(db.frames[:3], 5)  # a batch
    assert d2.shape == (3, 5) and np.all(np.diff(d2, axis=1) >= 0)


def test_approximate_backends_at_high_effort_give_the_exact_olng_output():
    db = make_db(n_clips=12, length=150, d=8, seed=3)
    rows, queries = noisy_queries(db)
    params = dict(k=48, window=16, paths=6)
    exact = Reconstructor(db, OLNGParams(**params, backend="KDTREE"))
    ref = [exact.step(q).best_index for q in queries]
    assert np.mean(np.asarray(ref) == rows) > 0.3  # the scenario is meaningful
    for opts in (IndexOptions(backend="HNSW", k=48, ef_search=2048, recall_target=0.5),
                 IndexOptions(backend="IVF", k=48, nlist=20, nprobe=20, storage="FLOAT32", recall_target=0.5),
                 IndexOptions(backend="IVF", k=48, nlist=20, nprobe=20, storage="FLOAT16", recall_target=0.5)):
        index = db.index(options=opts)
        assert index.backend == opts.backend and index.recall is not None and index.recall > 0.99
        rec = Reconstructor(db, OLNGParams(**params, backend=opts.backend), index=index)
        assert [rec.step(q).best_index for q in queries] == ref


def test_reconstruct_searches_the_index_it_is_given():
    """``reconstruct(..., index=)`` (what the Blender tools pass after loading an index file) searches
    that index, not one of the database's own, and gives the streaming Reconstructor's output."""
    from anim_signals.motiondb import reconstruct

    db = make_db(n_clips=9, length=120, d=6, seed=4)
    rows, queries = noisy_queries(db, n=40)
    params = OLNGParams(k=24, window=8, paths=4, backend="KDTREE")
    given = build_index(db.frames, options=IndexOptions(backend="FLAT", k=24))
    calls = []
    original = given.search

    def counting(q, k):
        calls.append(k)
        return original(q, k)

    given.search = counting
    batch = reconstruct(db, queries, params, index=given)
    assert len(calls) == len(queries) and set(calls) == {24}
    rec = Reconstructor(db, params)  # the database's own exact kd-tree: the same neighbours
    assert batch.best_index.tolist() == [rec.step(q).best_index for q in queries]


def test_recall_counts_a_repeated_frame_for_its_copy():
    """A library of copies (windows or duplicates of the same takes) holds each frame twice: an index
    that answers with the other copy has found the true neighbours; one a frame off has not."""
    clips = walk_clips(n_clips=4, length=100, d=5, seed=8)
    db = MotionDatabase.from_clips(clips + clips, [f"c{i}" for i in range(5)])
    n, k = 400, 11  # odd k: the k-th true neighbour's copy is outside the true set, at the same distance

    class Answer(NeighbourIndex):
        def __init__(self, points, remap):
            super().__init__("FLAT", points, None, {"impl": "stub"})
            self.remap = remap

        def search(self, queries, k):
            d, i = exact_knn(db.frames, np.atleast_2d(queries), k)
            return d, self.remap(i)

    other_copy = Answer(db.frames, lambda i: np.where(i < n, i + n, i - n))
    assert measure_recall(other_copy, db.frames, k) == 1.0
    one_off = Answer(db.frames, lambda i: np.where(i % 100 < 99, i + 1, i - 1))
    assert measure_recall(one_off, db.frames, k) < 0.9


def test_recall_is_measured_against_brute_force():
    db = make_db(n_clips=20, length=150, d=8, seed=5)
    k = 40
    flat = build_index(db.frames, backend="FLAT", k=k)
    assert flat.recall == 1.0 and measure_recall(flat, db.frames, k) == 1.0

    class FirstRows(NeighbourIndex):  # an "index" that always answers rows 0..k-1
        def search(self, queries, k):
            q = np.atleast_2d(queries)
            return np.zeros((q.shape[0], k)), np.tile(np.arange(k), (q.shape[0], 1))

    stub = FirstRows("FLAT", db.frames, None, {"impl": "stub"})
    rng = np.random.default_rng(0)  # the documented sample: seeded rows, noise x the channel std
    sample_rows = np.sort(rng.choice(db.n_frames, size=30, replace=False))
    q = db.frames[sample_rows] + 0.2 * db.frames.std(axis=0) * rng.standard_normal((30, 8))
    expected = np.mean([np.isin(brute(db.frames, x, k)[1], np.arange(k)).sum() / k for x in q])
    assert measure_recall(stub, db.frames, k, noise=0.2, sample=30, seed=0) == pytest.approx(expected, abs=1e-12)

    # a weak IVF start is tuned up until the target is met, and the recall it reports is real
    opts = IndexOptions(backend="IVF", k=k, nlist=48, nprobe=1, storage="FLOAT32", recall_target=0.9)
    ivf = build_index(db.frames, options=opts)
    assert ivf.backend == "IVF" and ivf.settings["nprobe"] > 1 and ivf.recall >= 0.9
    assert measure_recall(ivf, db.frames, k) == pytest.approx(ivf.recall, abs=1e-12)
    tuned = ivf.settings["nprobe"]  # and little more effort than needed (IVF-Flat: recall grows with nprobe)
    less = tuned - max(1, tuned // 10) - 1
    if less >= 1:
        ivf.set_effort(less)
        assert measure_recall(ivf, db.frames, k) < 0.9
    low = build_index(db.frames, options=IndexOptions(backend="IVF", k=k, nlist=48, nprobe=1, storage="FLOAT32",
                                                      recall_target=0.01))
    assert low.settings["nprobe"] == 1 and low.recall < ivf.recall


def test_pq_index_recall_and_rerank():
    db = make_db(n_clips=20, length=150, d=8, seed=6)
    index = build_index(db.frames, options=IndexOptions(backend="IVF", k=32, recall_target=0.9))
    assert index.settings["storage"] == "PQ" and index.settings["rerank"] == 2
    assert index.recall >= 0.9
    d, i = index.search(db.frames[5] + 0.01, 32)
    np.testing.assert_allclose(d, np.linalg.norm(db.frames[i] - (db.frames[5] + 0.01), axis=1), rtol=1e-12)
    assert np.unique(i).size == 32 and np.all(np.diff(d) >= 0)


def test_unreachable_recall_target_falls_back_to_exact(monkeypatch):
    monkeypatch.setattr(knn, "MAX_EF_SEARCH", 30)  # no room to raise efSearch above k
    db = make_db(n_clips=10, length=100, d=6, seed=7)
    opts = IndexOptions(backend="HNSW", k=30, hnsw_m=2, ef_construction=1, ef_search=30, recall_target=1.0)
    index = build_index(db.frames, options=opts)
    assert index.backend == "FLAT" and index.recall == 1.0
    assert "HNSW reached recall@30" in index.message and "exact search instead" in index.message
    q = db.frames[11] + 0.02
    np.testing.assert_array_equal(index.search(q, 30)[1], brute(db.frames, q, 30)[1])


def test_auto_tries_hnsw_where_ivf_misses_the_target(monkeypatch):
    """AUTO's IVF-PQ can miss the target even searching every cell (facial weights near 0 blur in 4-bit
    codes): HNSW is tried next, and exact search only when both miss; the message says what was missed."""
    monkeypatch.setattr(knn, "choose_backend", lambda *a, **kw: "IVF")
    real_tune = knn._tune_effort
    capped: dict[str, float] = {}

    def tune(index, *args):
        real_tune(index, *args)
        if index.backend in capped:
            index.recall = capped[index.backend]

    monkeypatch.setattr(knn, "_tune_effort", tune)
    db = make_db(n_clips=10, length=100, d=6, seed=7)
    opts = IndexOptions(k=20, recall_target=0.9, ef_search=400)
    capped["IVF"] = 0.5
    index = build_index(db.frames, options=opts)
    assert index.backend == "HNSW" and index.recall >= 0.9
    assert "IVF reached recall@20 0.500" in index.message and "HNSW instead" in index.message
    capped["HNSW"] = 0.6
    index = build_index(db.frames, options=opts)
    assert index.backend == "FLAT" and index.recall == 1.0
    assert "IVF reached recall@20 0.500" in index.message and "HNSW reached recall@20 0.600" in index.message
    assert "exact search instead" in index.message
    explicit = build_index(db.frames, options=IndexOptions(backend="IVF", k=20, recall_target=0.9))
    assert explicit.backend == "FLAT" and "HNSW" not in explicit.message  # asked for IVF: no other approximate


def test_backend_choice_follows_size_and_recall_target():
    full = ("KDTREE", "FLAT", "HNSW", "IVF")
    assert choose_backend(knn.KDTREE_MAX_FRAMES, 39, available=full) == "KDTREE"
    assert choose_backend(16_623, 39, available=full) == "FLAT"
    assert choose_backend(knn.EXACT_MAX_FRAMES, 39, available=full) == "FLAT"
    assert choose_backend(knn.EXACT_MAX_FRAMES + 1, 39, available=full) == "IVF"
    assert choose_backend(1_000_000, 39, available=full) == "IVF"
    assert choose_backend(1_000_000, 39, recall_target=1.0, available=full) == "FLAT"
    assert choose_backend(1_000_000, 39, recall_target=0.5, available=full) == "IVF"
    no_faiss = ("KDTREE", "FLAT")
    assert choose_backend(knn.NUMPY_FLAT_ABOVE, 39, available=no_faiss) == "KDTREE"
    assert choose_backend(knn.NUMPY_FLAT_ABOVE + 1, 39, available=no_faiss) == "FLAT"
    assert choose_backend(1_000_000, 39, available=no_faiss) == "FLAT"
    assert choose_backend(1_000_000, 3, available=full) == "KDTREE"  # kd-trees stay fast in 3-D
    # the policy is what build_index and Reconstructor follow
    db = make_db(n_clips=4, length=50, d=3)
    assert Reconstructor(db, OLNGParams(k=8)).index.backend == "KDTREE"
    assert Reconstructor(db, OLNGParams(k=8, backend="FLAT")).index.backend == "FLAT"


def test_missing_faiss_falls_back_to_exact_with_a_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss -> ImportError
    assert knn.available_backends() == ("KDTREE", "FLAT")
    db = make_db(n_clips=8, length=100, d=6, seed=8)
    for backend in ("HNSW", "IVF"):
        index = build_index(db.frames, backend=backend, k=16)
        assert index.backend == "FLAT" and index.settings["impl"] == "numpy"
        assert "faiss is not available" in index.message and index.message in index.describe()
        q = db.frames[17] + 0.03
        d, i = index.search(q, 16)
        bd, bi = brute(db.frames, q, 16)
        np.testing.assert_array_equal(i, bi)
        np.testing.assert_allclose(d, bd, rtol=1e-12)
    flat = build_index(db.frames, backend="FLAT", k=16)
    assert flat.settings["impl"] == "numpy" and flat.message == ""
    # AUTO at a size where IVF would be chosen: the exact scan, and the reason
    big = np.random.default_rng(0).random((knn.EXACT_MAX_FRAMES + 1, 9))
    auto = build_index(big, k=8)
    assert auto.backend == "FLAT" and "faiss is not available" in auto.message and auto.recall == 1.0
    assert build_index(big[:knn.NUMPY_FLAT_ABOVE], k=8).backend == "KDTREE"


def test_nan_and_bad_queries_are_refused():
    db = make_db(n_clips=4, length=50, d=3)
    index = build_index(db.frames, backend="FLAT", k=4)
    with pytest.raises(ValueError, match="NaN"):
        index.search([0.1, np.nan, 0.2], 4)
    with pytest.raises(ValueError, match="NaN"):
        index.search([[0.1, 0.2, np.inf]], 4)
    with pytest.raises(ValueError, match=r"\(3,\)"):
        index.search([0.1, 0.2], 4)
    with pytest.raises(ValueError, match="k = 999"):
        index.search([0.1, 0.2, 0.3], 999)
    with pytest.raises(ValueError, match="NaN"):
        build_index(np.array([[0.0, 1.0], [np.nan, 2.0]]))
    with pytest.raises(ValueError, match="backend"):
        build_index(db.frames, backend="ANNOY")
    with pytest.raises(ValueError, match="recall_target"):
        build_index(db.frames, recall_target=1.5)
    with pytest.raises(ValueError, match="backend"):
        OLNGParams(k=4, backend="annoy").checked(100)
    with pytest.raises(ValueError, match="recall_target"):
        OLNGParams(k=4, recall_target=0.0).checked(100)
    with pytest.raises(ValueError, match="eps"):
        OLNGParams(k=4, eps=1.0, backend="IVF").checked(100)
    other = build_index(db.frames[:, :2], backend="FLAT", k=4)
    with pytest.raises(ValueError, match="index covers"):
        Reconstructor(db, OLNGParams(k=4), index=other)


def test_builds_are_deterministic():
    db = make_db(n_clips=12, length=120, d=8, seed=9)
    opts = IndexOptions(backend="IVF", k=24, recall_target=0.8)
    a, b = build_index(db.frames, options=opts), build_index(db.frames, options=opts)
    q = db.frames[::97] + 0.02
    assert a.settings == b.settings and a.recall == b.recall
    for x, y in zip(a.search(q, 24), b.search(q, 24)):
        np.testing.assert_array_equal(x, y)


def test_progress_and_cancel():
    db = make_db(n_clips=12, length=150, d=8, seed=10)
    seen = []
    build_index(db.frames, options=IndexOptions(backend="IVF", k=16, nlist=16, storage="FLOAT32"),
                progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions[0] == 0.0 and fractions[-1] == 1.0 and fractions == sorted(fractions)
    assert "IVF" in seen[-1][1]
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(IndexBuildCancelled):
        build_index(db.frames, options=IndexOptions(backend="HNSW", k=16), cancel=cancel)


def test_index_too_large_is_refused_with_the_size(monkeypatch):
    monkeypatch.setattr(knn, "available_memory", lambda: 2_000)
    db = make_db(n_clips=4, length=50, d=3)
    with pytest.raises(IndexTooLarge, match=r"needs about .* GiB"):
        build_index(db.frames, backend="FLAT", k=4)


def test_database_index_is_cached_per_columns_and_options():
    db = make_db(n_clips=4, length=50, d=3)
    a = db.index([0, 2], backend="FLAT", k=8)
    assert db.index([0, 2], backend="FLAT", k=8) is a
    assert db.index([0, 1], backend="FLAT", k=8) is not a
    assert db.index([0, 2], backend="KDTREE", k=8) is not a
    assert db.tree(np.array([0, 2])) is db.tree(np.array([0, 2]))  # the cKDTree accessor still works
    rec = Reconstructor(db, OLNGParams(k=8, backend="FLAT"), query_channels=["c0", "c2"])
    assert rec.index is a
    assert a.describe().startswith("FLAT (faiss") and a.nbytes == 200 * 2 * 4
