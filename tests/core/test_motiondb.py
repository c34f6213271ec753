"""Motion database (Richert 2012): k-NN, online lazy neighbourhood graph, synthesis, streaming.

Written against the API contract in docs/motion_database.md and the seed
(../shared/seeds/richert-animation-database-olng.txt).  Expectations come from a numpy brute-force
k-NN, from a slow reference OLNG written here with plain Python loops over the seed's rules (each
node links to the predecessor of the previous column, same clip, index in [p - b, p - a], that
minimises the cost sum(c) / l^2 of the resulting path over its last l <= T nodes), from walking the
pred pointers and recomputing the costs from scratch, from closed forms (a noiseless query from the
database has cost 0 along one path; the 1-D weighted median), from scipy.optimize on the energy E and
from invariances (streaming = batch, a NaN frame = the frame left out, cost offsets and scales).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from anim_signals.motiondb import (
    MotionDatabase,
    OLNGParams,
    Reconstructor,
    is_eye_channel,
    iter_reconstruct,
    match_names,
    reconstruct,
    synthesize,
)
from anim_signals.steps import run_steps

# ------------------------------------------------------------------------------------------------
# generated data
# ------------------------------------------------------------------------------------------------


def random_walk_clips(lengths=(30, 25, 35), d=4, seed=0, step=0.3):
    """Smooth random walks (one per clip), each starting somewhere else."""
    rng = np.random.default_rng(seed)
    clips = []
    for n in lengths:
        start = rng.normal(scale=2.0, size=(1, d))
        clips.append(start + np.cumsum(rng.normal(scale=step, size=(n, d)), axis=0))
    return clips


def channel_names(d):
    return [f"ch{i}" for i in range(d)]


def make_db(lengths=(30, 25, 35), d=4, seed=0):
    clips = random_walk_clips(lengths, d, seed)
    return MotionDatabase.from_clips(clips, channel_names(d), [f"c{i}" for i in range(len(clips))]), clips


def brute_clip_ids(lengths):
    return np.concatenate([np.full(n, c) for c, n in enumerate(lengths)])


def brute_knn(frames, q, k):
    """Sorted (distance, index) of the k closest rows, by a full numpy scan."""
    d = np.sqrt(((frames - q[None, :]) ** 2).sum(axis=1))
    order = np.argsort(d, kind="stable")[:k]
    return order, d[order]


# ------------------------------------------------------------------------------------------------
# slow reference OLNG (plain loops over the seed's rules)
# ------------------------------------------------------------------------------------------------


class RefOLNG:
    """One column per query frame, kept for ever (no ring); each node remembers its whole path.

    A node is (db index, node cost c, pred row in the previous column or -1, the path's effective
    costs newest first, truncated to T, the path's db indices newest first, truncated to T).
    ``stay``: the node continuing the previous step's best path counts (1 - stay) c, in its path for
    as long as the node is in the window.
    """

    def __init__(self, frames, clip_ids, k, T, a, b, stay=0.0):
        self.frames = np.asarray(frames, dtype=float)
        self.clip_ids = [int(c) for c in clip_ids]
        self.k, self.T, self.a, self.b, self.stay = k, T, a, b, stay
        self.columns = []
        self.prev_best = -1

    def step(self, q):
        n = self.frames.shape[0]
        dist = []
        for i in range(n):
            s = 0.0
            for j in range(q.size):
                s += (self.frames[i, j] - q[j]) ** 2
            dist.append(float(np.sqrt(s)))
        order = sorted(range(n), key=lambda i: (dist[i], i))[: self.k]
        prev = self.columns[-1] if self.columns else []
        column = []
        for p in order:
            c = dist[p]
            best = None
            for row, s_node in enumerate(prev):
                s = s_node["idx"]
                if self.clip_ids[s] != self.clip_ids[p] or not (p - self.b <= s <= p - self.a):
                    continue
                ce = c * (1.0 - self.stay) if (self.stay > 0.0 and row == self.prev_best) else c
                costs = ([ce] + s_node["costs"])[: self.T]
                score = sum(costs) / len(costs) ** 2
                if best is None or score < best[0]:
                    best = (score, row, costs, ([p] + s_node["path"])[: self.T])
            if best is None:
                column.append({"idx": p, "c": c, "pred": -1, "costs": [c], "path": [p]})
            else:
                column.append({"idx": p, "c": c, "pred": best[1], "costs": best[2], "path": best[3]})
        self.columns.append(column)
        scores = [sum(nd["costs"]) / len(nd["costs"]) ** 2 for nd in column]
        ranking = sorted(range(len(column)), key=lambda r: (scores[r], r))
        self.prev_best = ranking[0]
        return column, scores, ranking


def energy(q, poses, w):
    return float(sum(w[i] * np.linalg.norm(poses[i] - q) for i in range(len(poses))))


def energy_grad(q, poses, w):
    g = np.zeros_like(q)
    for i in range(len(poses)):
        r = q - poses[i]
        n = np.linalg.norm(r)
        if n > 0:
            g += w[i] * r / n
    return g


def seed_weights(costs):
    c = np.asarray(costs, dtype=float)
    w = np.array([c.max() - ci for ci in c])
    return w / w.sum()


def data_point_minimiser(poses, w):
    """The data point j minimising E when there is one: |sum_{i != j} w_i u_ij| <= w_j (u unit vectors)."""
    for j in range(len(poses)):
        pull = np.zeros(poses.shape[1])
        for i in range(len(poses)):
            if i != j:
                r = poses[i] - poses[j]
                pull += w[i] * r / np.linalg.norm(r)
        if np.linalg.norm(pull) <= w[j]:
            return j
    return None


def scipy_minimiser(poses, w):
    x0 = (w[:, None] * poses).sum(0)
    res = minimize(energy, x0, args=(poses, w), jac=energy_grad, method="L-BFGS-B",
                   options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-12})
    best = res.x
    # the minimiser may be a data point (E is not smooth there): take the best of the two
    for p in poses:
        if energy(p, poses, w) < energy(best, poses, w):
            best = p.copy()
    return best


# ------------------------------------------------------------------------------------------------
# the database
# ------------------------------------------------------------------------------------------------


def test_database_layout_clip_of_columns_round_trip():
    lengths = (5, 3, 7)
    db, clips = make_db(lengths, d=3, seed=1)
    assert db.n_frames == 15 and db.n_clips == 3
    np.testing.assert_array_equal(db.clip_starts, [0, 5, 8, 15])
    np.testing.assert_array_equal(db.frames, np.vstack(clips))
    np.testing.assert_array_equal(db.clip_of(np.arange(15)), brute_clip_ids(lengths))
    cols, missing = db.columns(["ch2", "nope", "ch0"])
    np.testing.assert_array_equal(cols, [2, 0])
    assert missing == ["nope"]
    back = MotionDatabase.from_dict(db.to_dict())
    np.testing.assert_array_equal(back.frames, db.frames)
    np.testing.assert_array_equal(back.clip_starts, db.clip_starts)
    assert back.channels == db.channels and back.clip_names == db.clip_names


def test_default_params_are_the_seeds():
    p = OLNGParams()
    assert (p.k, p.window, p.paths, p.a, p.b) == (256, 32, 50, 1, 2)


# ------------------------------------------------------------------------------------------------
# k-NN against brute force
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("subset", [None, ["ch3", "ch1"]])
def test_knn_nodes_equal_brute_force(subset):
    lengths = (30, 25, 35)
    db, clips = make_db(lengths, d=4, seed=2)
    k, T = 12, 6
    rec = Reconstructor(db, OLNGParams(k=k, window=T, paths=4), query_channels=subset)
    cols = np.arange(4) if subset is None else np.array([3, 1])
    rng = np.random.default_rng(3)
    queries = clips[1][3:15][:, cols] + rng.normal(scale=0.05, size=(12, cols.size))
    for n, q in enumerate(queries):
        step = rec.step(q)
        order, dist = brute_knn(db.frames[:, cols], q, k)
        col = n % T  # the seed: the nearest neighbours of query t are column t % T
        np.testing.assert_array_equal(rec.nodes[:, col], order)
        if n == 0:  # a first column: every path is the node alone, its cost the k-NN distance
            np.testing.assert_allclose(rec.path_cost[:, 0], dist, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(rec.path_length[:, 0], 1)
            np.testing.assert_array_equal(rec.pred[:, 0], -1)
            assert step.best_index == order[0]
            assert step.best_cost == pytest.approx(dist[0], rel=1e-12)
    assert np.all(rec.nodes >= 0)


# ------------------------------------------------------------------------------------------------
# graph paths: index bounds, clip boundaries, costs recomputed from scratch
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("a,b", [(1, 2), (0, 2), (2, 4), (1, 1)])
def test_paths_respect_bounds_and_clips_and_costs_recompute(a, b):
    lengths = (20, 12, 26, 15)
    db, clips = make_db(lengths, d=3, seed=4)
    clip_ids = brute_clip_ids(lengths)
    k, T = 24, 7
    rec = Reconstructor(db, OLNGParams(k=k, window=T, paths=5, a=a, b=b))
    rng = np.random.default_rng(5)
    # a query crossing clips: the end of clip 0 then clip 2, noisy
    queries = np.vstack([clips[0][8:20], clips[2][0:14]]) + rng.normal(scale=0.1, size=(26, 3))
    seen_long = 0
    for n, q in enumerate(queries):
        step = rec.step(q)
        if n < 4:
            continue
        col = n % T
        for r in range(k):
            length = int(rec.path_length[r, col])
            assert 1 <= length <= min(T, n + 1)
            rr, cc = r, col
            total = 0.0
            for back in range(length):
                p = int(rec.nodes[rr, cc])
                total += float(np.linalg.norm(db.frames[p] - queries[n - back]))  # node cost c
                s_row = int(rec.pred[rr, cc])
                if back == length - 1:
                    if length < T:  # a path shorter than the window starts at a node without predecessor
                        assert s_row == -1
                    break
                assert s_row >= 0
                s = int(rec.nodes[s_row, (cc - 1) % T])
                assert p - b <= s <= p - a, (p, s)
                assert clip_ids[s] == clip_ids[p]
                rr, cc = s_row, (cc - 1) % T
            seen_long += length >= 3
            np.testing.assert_allclose(rec.path_cost[r, col], total, rtol=1e-9, atol=1e-12)
        scores = rec.path_cost[:, col] / rec.path_length[:, col] ** 2
        assert step.best_cost == pytest.approx(scores.min(), rel=1e-12)
        assert step.best_index == rec.nodes[int(np.argmin(scores)), col]
    assert seen_long > 0  # the test did walk real paths


@pytest.mark.parametrize("stay", [0.0, 0.3])
def test_graph_equals_slow_reference_step_by_step(stay):
    lengths = (18, 14, 20)
    db, clips = make_db(lengths, d=3, seed=6)
    k, T, paths = 8, 5, 3
    params = OLNGParams(k=k, window=T, paths=paths, a=1, b=2, stay=stay)
    rec = Reconstructor(db, params)
    ref = RefOLNG(db.frames, brute_clip_ids(lengths), k, T, 1, 2, stay)
    rng = np.random.default_rng(7)
    queries = np.vstack([clips[0][2:14], clips[2][0:12]]) + rng.normal(scale=0.08, size=(24, 3))
    for n, q in enumerate(queries):
        step = rec.step(q)
        column, scores, ranking = ref.step(q)
        col = n % T
        where = f"step {n}"
        np.testing.assert_array_equal(rec.nodes[:, col], [nd["idx"] for nd in column], err_msg=where)
        np.testing.assert_array_equal(rec.pred[:, col], [nd["pred"] for nd in column], err_msg=where)
        np.testing.assert_array_equal(rec.path_length[:, col], [len(nd["costs"]) for nd in column],
                                      err_msg=where)
        np.testing.assert_allclose(rec.path_cost[:, col], [sum(nd["costs"]) for nd in column],
                                   rtol=1e-9, atol=1e-12, err_msg=where)
        top = ranking[0]
        assert step.best_index == column[top]["idx"], where
        assert step.best_length == len(column[top]["costs"]), where
        assert step.best_cost == pytest.approx(scores[top], rel=1e-9), where
        assert step.n_paths == paths
        np.testing.assert_array_equal(step.best, db.frames[column[top]["idx"]])


@pytest.mark.parametrize("at_data_point", [False, True])
def test_step_pose_minimises_energy_over_reference_best_paths(at_data_point):
    """Step.pose = argmin E over the reference's best I paths with the seed's weights.

    Split by where that minimiser lies: inside the hull (E smooth there), or at one path's pose (the
    best path dominating, common when one motion is matched well).
    """
    lengths = (18, 14, 20)
    db, clips = make_db(lengths, d=3, seed=6)
    k, T, paths = 8, 5, 4
    rec = Reconstructor(db, OLNGParams(k=k, window=T, paths=paths))
    ref = RefOLNG(db.frames, brute_clip_ids(lengths), k, T, 1, 2)
    rng = np.random.default_rng(7)
    queries = np.vstack([clips[0][2:14], clips[2][0:12]]) + rng.normal(scale=0.08, size=(24, 3))
    checked = 0
    for n, q in enumerate(queries):
        step = rec.step(q)
        column, scores, ranking = ref.step(q)
        chosen = ranking[:paths]
        poses = db.frames[[column[r]["idx"] for r in chosen]]
        w = seed_weights([scores[r] for r in chosen])
        ref_pose = scipy_minimiser(poses, w)
        if (data_point_minimiser(poses, w) is not None) != at_data_point:
            continue
        checked += 1
        e_ref = energy(ref_pose, poses, w)
        spread = float(np.linalg.norm(poses - poses.mean(0), axis=1).max())
        assert energy(step.pose, poses, w) <= e_ref * (1 + 1e-6) + 1e-12, f"step {n}"
        # 50 Weiszfeld iterations (the default): close to the minimiser, to 0.1 % of the poses' spread
        np.testing.assert_allclose(step.pose, ref_pose, atol=1e-3 * spread, err_msg=f"step {n}")
        if not at_data_point:  # weights sum to 1: the gradient is small against that
            assert np.linalg.norm(energy_grad(step.pose, poses, w)) < 1e-2, f"step {n}"
    assert checked >= 3


def test_stay_modulation_keeps_path_costs_non_negative():
    """Path costs are sums of (modulated) k-NN distances, never negative, however long the run.

    The window drops a path's oldest node cost; with stay > 0 the dropped cost must be the one that
    was added (the modulated (1 - stay) c), or the sums drift below zero within a clip.
    """
    lengths = (40, 30, 45)
    db, clips = make_db(lengths, d=3, seed=24)
    T = 5
    rec = Reconstructor(db, OLNGParams(k=8, window=T, paths=3, stay=0.9))
    rng = np.random.default_rng(25)
    queries = np.vstack([clips[0], clips[2]]) + rng.normal(scale=0.02, size=(85, 3))
    worst = np.inf
    for n, q in enumerate(queries):
        rec.step(q)
        worst = min(worst, float(rec.path_cost[:, n % T].min()))
    assert worst >= 0.0, f"a path cost went down to {worst}"


def test_paths_never_exceed_their_clip():
    """A query longer than any clip: paths (strictly forward, a = 1) fit inside one clip."""
    lengths = (9, 7, 11)
    db, clips = make_db(lengths, d=3, seed=8)
    queries = np.vstack([clips[2], clips[2][::-1], clips[0]])  # 31 frames > every clip
    out = reconstruct(db, queries, OLNGParams(k=10, window=16, paths=4))
    assert np.all(np.isfinite(out.poses)) and out.poses.shape == (31, 3)
    assert out.best_length.max() <= max(lengths)
    assert np.all(out.best_length >= 1)


# ------------------------------------------------------------------------------------------------
# a noiseless query taken from the database
# ------------------------------------------------------------------------------------------------


def test_noiseless_query_recovered_exactly_along_one_path():
    lengths = (40, 30, 45)
    db, clips = make_db(lengths, d=5, seed=9)
    T = 8
    # clip 1 in full, then clip 2 from its start (a cut at a clip start: no predecessor exists there)
    queries = np.vstack([clips[1], clips[2][:20]])
    truth = np.concatenate([np.arange(40, 70), np.arange(70, 90)])
    out = reconstruct(db, queries, OLNGParams(k=16, window=T, paths=6))
    np.testing.assert_array_equal(out.best_index, truth)
    np.testing.assert_array_equal(out.best, queries)
    since_cut = np.concatenate([np.arange(30), np.arange(20)])
    np.testing.assert_array_equal(out.best_length, np.minimum(since_cut + 1, T))
    np.testing.assert_allclose(out.best_cost, 0.0, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# synthesis
# ------------------------------------------------------------------------------------------------


def test_synthesis_minimises_energy_off_data_points():
    rng = np.random.default_rng(10)
    checked = 0
    for trial in range(12):
        poses = rng.normal(size=(7, 4))
        costs = rng.uniform(0.1, 1.0, size=7)
        w = seed_weights(costs)
        if data_point_minimiser(poses, w) is not None:
            continue
        checked += 1
        x = synthesize(poses, costs, iterations=500)
        e = energy(x, poses, w)
        assert np.linalg.norm(energy_grad(x, poses, w)) < 1e-6, trial
        for p in poses:
            assert e <= energy(p, poses, w) + 1e-12
        for _ in range(20):
            assert e <= energy(x + rng.normal(scale=1e-3, size=4), poses, w) + 1e-12
            assert e <= energy(x + rng.normal(scale=0.3, size=4), poses, w) + 1e-12
        ref = scipy_minimiser(poses, w)
        assert e <= energy(ref, poses, w) + 1e-10
        np.testing.assert_allclose(x, ref, atol=1e-5)
    assert checked >= 4


def test_synthesis_default_iterations_near_optimal():
    rng = np.random.default_rng(11)
    poses = rng.normal(size=(50, 6))
    costs = rng.uniform(0.0, 2.0, size=50)
    w = seed_weights(costs)
    x = synthesize(poses, costs)
    ref = scipy_minimiser(poses, w)
    e, e_ref = energy(x, poses, w), energy(ref, poses, w)
    assert e <= e_ref * (1 + 1e-6)
    assert np.linalg.norm(energy_grad(x, poses, w)) < 1e-3
    for p in poses:
        assert e <= energy(p, poses, w)


def test_synthesis_weights_one_dimensional_weighted_median():
    """1-D: argmin sum w_i |q_i - q| is the weighted median, which tells the weighting apart.

    costs (10, 10.2, 12, 13, 13): the seed's weights (max C - c) ∝ (3, 2.8, 1, 0, 0) put the median
    at the pose 1.0; weights 1 / c or uniform weights would put it at 5.0.
    """
    poses = np.array([[0.0], [1.0], [5.0], [9.0], [9.5]])
    costs = np.array([10.0, 10.2, 12.0, 13.0, 13.0])
    x = synthesize(poses, costs, iterations=2000)
    assert x[0] == pytest.approx(1.0, abs=1e-6)


def test_synthesis_weight_invariances():
    rng = np.random.default_rng(12)
    poses = rng.normal(size=(6, 3))
    costs = rng.uniform(0.2, 1.0, size=6)
    x = synthesize(poses, costs, iterations=500)
    # weights depend on costs only through (max C - c) / sum: offsets and positive scales change nothing
    np.testing.assert_allclose(synthesize(poses, 3.0 * costs + 7.0, iterations=500), x, atol=1e-8)
    # the most expensive path has weight 0: moving its pose anywhere changes nothing
    far = poses.copy()
    far[int(np.argmax(costs))] += 100.0
    np.testing.assert_allclose(synthesize(far, costs, iterations=500), x, atol=1e-8)
    # a single path: its pose
    np.testing.assert_array_equal(synthesize(poses[:1], costs[:1]), poses[0])


@pytest.mark.parametrize("costs", [
    [0.0, 0.8, 0.8, 1.0],  # w ∝ (1, 0.2, 0.2, 0): weight 0.714 against a pull of 0.202
    [0.0, 0.45, 0.45, 1.0],  # w ∝ (1, 0.55, 0.55, 0): weight 0.476 against a pull of 0.367
])
def test_synthesis_dominant_weight_returns_data_point(costs):
    """A pose whose weight is at least the pull of all the others is the minimiser (closed form:
    w_j >= |sum_{i != j} w_i u_ij|), with the default iterations as the Reconstructor uses them."""
    poses = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [3.0, 3.0]])
    costs = np.array(costs)
    assert data_point_minimiser(poses, seed_weights(costs)) == 0
    x = synthesize(poses, costs)
    np.testing.assert_allclose(x, [0.0, 0.0], atol=1e-6)
    w = seed_weights(costs)
    rng = np.random.default_rng(13)
    for _ in range(30):
        assert energy(x, poses, w) <= energy(x + rng.normal(scale=0.05, size=2), poses, w)


def test_synthesis_two_paths_returns_the_heavier_pose():
    """Two paths (plus one of weight 0): E is minimised at the heavier path's pose (closed form)."""
    poses = np.array([[0.0, 0.0, 0.0], [0.3, -0.1, 0.2], [5.0, 5.0, 5.0]])
    costs = np.array([0.45, 0.5, 1.0])  # w = (0.55, 0.5) / 1.05: the first pose wins
    x = synthesize(poses, costs)
    np.testing.assert_allclose(x, poses[0], atol=1e-6 * np.linalg.norm(poses[1]))


# ------------------------------------------------------------------------------------------------
# streaming = batch; partial input; NaN frames
# ------------------------------------------------------------------------------------------------


def test_streaming_equals_batch():
    db, clips = make_db((30, 25, 35), d=4, seed=14)
    params = OLNGParams(k=12, window=6, paths=4, stay=0.2)
    rng = np.random.default_rng(15)
    queries = np.vstack([clips[0][5:25], clips[1][:15]]) + rng.normal(scale=0.1, size=(35, 4))
    out = reconstruct(db, queries, params)
    rec = Reconstructor(db, params)
    steps = [rec.step(q) for q in queries]
    np.testing.assert_array_equal(out.poses, np.array([s.pose for s in steps]))
    np.testing.assert_array_equal(out.best, np.array([s.best for s in steps]))
    np.testing.assert_array_equal(out.best_index, [s.best_index for s in steps])
    np.testing.assert_array_equal(out.best_length, [s.best_length for s in steps])
    np.testing.assert_array_equal(out.best_cost, [s.best_cost for s in steps])
    assert out.seconds.shape == (35, 3) and np.all(out.seconds >= 0)
    # reset: a second pass gives the same as a fresh reconstructor
    rec.reset()
    again = [rec.step(q) for q in queries]
    np.testing.assert_array_equal(np.array([s.pose for s in again]), out.poses)


def test_partial_input_full_pose_and_noiseless_recovery():
    lengths = (40, 30, 45)
    db, clips = make_db(lengths, d=6, seed=16)
    subset = ["ch4", "ch0", "ch2"]  # given out of database order: the query follows this order
    cols = np.array([4, 0, 2])
    queries = clips[2][5:35][:, cols]
    truth = np.arange(70 + 5, 70 + 35)
    out = reconstruct(db, queries, OLNGParams(k=16, window=8, paths=5), query_channels=subset)
    assert out.poses.shape == (30, 6) and out.best.shape == (30, 6)
    np.testing.assert_array_equal(out.best_index, truth)
    np.testing.assert_array_equal(out.best, clips[2][5:35])  # the missing channels rebuilt exactly
    np.testing.assert_array_equal(out.best_length, np.minimum(np.arange(30) + 1, 8))
    rec = Reconstructor(db, OLNGParams(k=16, window=8, paths=5), query_channels=subset)
    s = rec.step(queries[0])
    assert s.pose.shape == (6,) and s.best.shape == (6,)
    order, _ = brute_knn(db.frames[:, cols], queries[0], 16)
    np.testing.assert_array_equal(rec.nodes[:, 0], order)


def test_nan_frames_are_held_and_skip_the_graph():
    db, clips = make_db((30, 25, 35), d=4, seed=17)
    params = OLNGParams(k=12, window=6, paths=4)
    rng = np.random.default_rng(18)
    queries = clips[1][:20] + rng.normal(scale=0.1, size=(20, 4))
    holed = queries.copy()
    holed[[0, 1, 7, 8, 13]] = np.nan
    holed[13, 1:] = 0.0  # a partly NaN frame counts as dropped too
    keep = np.array([i for i in range(20) if i not in (0, 1, 7, 8, 13)])
    out = reconstruct(db, holed, params)
    ref = reconstruct(db, queries[keep], params)  # the frames left out altogether
    np.testing.assert_array_equal(out.poses[keep], ref.poses)
    np.testing.assert_array_equal(out.best_index[keep], ref.best_index)
    np.testing.assert_array_equal(out.best_index[[0, 1, 7, 8, 13]], -1)
    for i in (7, 8, 13):  # held: the previous output
        np.testing.assert_array_equal(out.poses[i], out.poses[i - 1])
        np.testing.assert_array_equal(out.best[i], out.best[i - 1])
    for i in (0, 1):  # before any valid frame: the first valid output
        np.testing.assert_array_equal(out.poses[i], out.poses[2])
        np.testing.assert_array_equal(out.best[i], out.best[2])
    assert np.all(np.isfinite(out.poses)) and np.all(np.isfinite(out.best))


def test_iter_reconstruct_yields_progress_and_returns_the_batch():
    """The generator behind reconstruct(): one progress value (i + 1) / n per query frame, and as its
    return value the outputs of a plain Reconstructor loop (NaN frames held, leading ones filled)."""
    db, clips = make_db((30, 25, 35), d=4, seed=21)
    params = OLNGParams(k=10, window=5, paths=3, stay=0.1)
    rng = np.random.default_rng(22)
    queries = clips[2][3:20] + rng.normal(scale=0.1, size=(17, 4))
    queries[[0, 6, 7]] = np.nan
    progress, batch = run_steps(iter_reconstruct(db, queries, params))
    assert progress == [(i + 1) / 17 for i in range(17)]
    rec = Reconstructor(db, params)
    expected_pose, expected_best = np.full((17, 4), np.nan), np.full((17, 4), np.nan)
    for i, q in enumerate(queries):
        if np.isnan(q).any():
            expected_pose[i], expected_best[i] = expected_pose[i - 1], expected_best[i - 1]
            continue
        s = rec.step(q)
        expected_pose[i], expected_best[i] = s.pose, s.best
        assert batch.best_index[i] == s.best_index and batch.best_cost[i] == s.best_cost
    expected_pose[0], expected_best[0] = expected_pose[1], expected_best[1]
    np.testing.assert_array_equal(batch.poses, expected_pose)
    np.testing.assert_array_equal(batch.best, expected_best)
    np.testing.assert_array_equal(batch.best_index[[0, 6, 7]], -1)
    np.testing.assert_array_equal(batch.seconds[[0, 6, 7]], 0.0)
    again = reconstruct(db, queries, params)
    for name in ("poses", "best", "best_index", "best_length", "best_cost"):
        np.testing.assert_array_equal(getattr(again, name), getattr(batch, name))


def test_iter_reconstruct_without_frames_and_all_nan():
    db, _ = make_db((30, 25, 35), d=4, seed=23)
    params = OLNGParams(k=8, window=4, paths=2)
    empty = reconstruct(db, np.empty((0, 4)), params)
    assert empty.poses.shape == (0, 4) and empty.best_index.shape == (0,)
    held = reconstruct(db, np.full((3, 4), np.nan), params)
    assert np.isnan(held.poses).all() and np.all(held.best_index == -1)
    with pytest.raises(ValueError, match=r"queries must be \(frames, 4\)"):
        iter_reconstruct(db, np.zeros((2, 3)), params)  # refused when called, before any step


def test_match_names_exact_first_then_case_insensitive():
    have = ["eyeBlinkLeft", "JawOpen", "jawopen", "MouthClose"]
    got = match_names(["EyeBlinkLeft", "JawOpen", "Nose", "MOUTHCLOSE"], have)
    assert got == {"EyeBlinkLeft": "eyeBlinkLeft", "JawOpen": "JawOpen", "MOUTHCLOSE": "MouthClose"}
    assert list(got) == ["EyeBlinkLeft", "JawOpen", "MOUTHCLOSE"]  # wanted's order, missing left out
    assert match_names([], have) == {} and match_names(["a"], []) == {}


def test_eye_channels():
    from anim_signals.motiondb.livelink import CHANNELS, EYE_CHANNELS

    assert [n for n in CHANNELS if is_eye_channel(n)] == list(EYE_CHANNELS)  # the 14 + 6 Live Link ones
    assert is_eye_channel('pose.bones["eye.L"].rotation_euler') and not is_eye_channel("HeadYaw")


# ------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------


def test_empty_database_raises():
    with pytest.raises(ValueError, match="empty"):
        MotionDatabase.from_clips([], channel_names(3))
    with pytest.raises(ValueError, match="empty"):
        MotionDatabase.from_clips([np.zeros((0, 3)), np.zeros((0, 3))], channel_names(3))


def test_clips_with_different_channel_counts_raise():
    with pytest.raises(ValueError, match="channels"):
        MotionDatabase.from_clips([np.zeros((4, 3)), np.zeros((5, 4))], channel_names(3))
    with pytest.raises(ValueError):
        MotionDatabase.from_clips([np.zeros((4, 3))], channel_names(4))


def test_clip_with_nan_raises():
    bad = np.zeros((4, 3))
    bad[2, 1] = np.nan
    with pytest.raises(ValueError):
        MotionDatabase.from_clips([np.zeros((4, 3)), bad], channel_names(3))


def test_query_width_mismatch_raises():
    db, _ = make_db((10, 10), d=4, seed=19)
    rec = Reconstructor(db, OLNGParams(k=4, window=4, paths=2))
    with pytest.raises(ValueError):
        rec.step(np.zeros(5))
    with pytest.raises(ValueError):
        rec.step(np.zeros(3))
    with pytest.raises(ValueError):
        reconstruct(db, np.zeros((6, 3)), OLNGParams(k=4, window=4, paths=2))
    part = Reconstructor(db, OLNGParams(k=4, window=4, paths=2), query_channels=["ch1", "ch3"])
    with pytest.raises(ValueError):
        part.step(np.zeros(4))


def test_nan_query_frame_in_step_raises():
    db, _ = make_db((10, 10), d=4, seed=20)
    rec = Reconstructor(db, OLNGParams(k=4, window=4, paths=2))
    with pytest.raises(ValueError):
        rec.step(np.array([0.0, np.nan, 0.0, 0.0]))


def test_unknown_query_channels_are_named():
    db, _ = make_db((10, 10), d=4, seed=21)
    with pytest.raises(ValueError) as err:
        Reconstructor(db, OLNGParams(k=4, window=4, paths=2), query_channels=["ch1", "eyeBlinkLeft", "jawOpen"])
    assert "eyeBlinkLeft" in str(err.value) and "jawOpen" in str(err.value)
    assert "ch1" not in str(err.value)
    with pytest.raises(ValueError):
        reconstruct(db, np.zeros((3, 1)), OLNGParams(k=4, window=4, paths=2), query_channels=["zzz"])


def test_k_larger_than_database_raises():
    db, _ = make_db((6, 5), d=3, seed=22)
    with pytest.raises(ValueError):
        Reconstructor(db, OLNGParams(k=12, window=4, paths=2))
    Reconstructor(db, OLNGParams(k=11, window=4, paths=2))  # exactly the database is fine


def test_bad_index_bounds_raise():
    db, _ = make_db((10, 10), d=3, seed=23)
    with pytest.raises(ValueError):
        Reconstructor(db, OLNGParams(k=4, window=4, paths=2, a=3, b=2))
    with pytest.raises(ValueError):
        reconstruct(db, np.zeros((3, 3)), OLNGParams(k=4, window=4, paths=2, a=3, b=2))
    with pytest.raises(ValueError):
        Reconstructor(db, OLNGParams(k=4, window=4, paths=2, a=-1, b=2))
