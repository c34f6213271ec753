"""The batched CMA-ES (anim_signals.splines.cma_es) held against pycma, Hansen's own library.

pycma runs the same algorithm (Hansen, "The CMA Evolution Strategy: A Tutorial") one run at a
time, with its own variants of a few defaults and its own random numbers, so the comparison is of
outcomes over many seeds, not of samples.
"""

import cma
import numpy as np
import pytest

import anim_signals as A
from anim_signals.splines import knots
from anim_signals.splines.cma_es import BatchedCMAES, CMAParameters

X101 = np.linspace(0, 1, 101)
CURVES = {  # Yoshimoto et al. 2003 / Galvez & Iglesias 2011, the seed's 1D test functions
    "cliff": 90 / (1 + np.exp(-100 * (X101 - 0.4))),
    "big_spike": 100 * np.exp(-np.abs(10 * X101 - 5)) + (10 * X101 - 5) ** 5 / 500,
    "smooth_peak": np.sin(X101) + 2 * np.exp(-30 * X101**2),
}


def sphere(x):
    return (x**2).sum(axis=-1)


def ellipsoid(x):
    n = x.shape[-1]
    return (10 ** (6 * np.arange(n) / (n - 1)) * x**2).sum(axis=-1)


def rosenbrock(x):
    return (100 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (1 - x[..., :-1]) ** 2).sum(axis=-1)


def run_to_target(es, f, target):
    """Evaluations each run needed to sample a value below ``target`` (NaN: it stopped first)."""
    evaluations = np.full(es.mean.shape[0], np.nan)
    while not es.stopped.all():
        runs = np.flatnonzero(~es.stopped)
        values = f(es.ask(runs))
        es.tell(runs, values)
        reached = runs[np.nanmin(values, axis=1) < target]
        evaluations[reached] = es.iterations[reached] * es.popsize
        es.stopped[reached] = True
    return evaluations


def pycma_to_target(f, n, seed, target):
    es = cma.CMAEvolutionStrategy(np.full(n, 0.5), 0.5, {"seed": seed, "verbose": -9, "tolfun": 1e-14,
                                                         "tolx": 1e-14, "maxiter": 5000})
    while not es.stop():
        asked = es.ask()
        values = f(np.asarray(asked))
        es.tell(asked, values.tolist())
        if values.min() < target:
            return es.countevals
    return np.nan


@pytest.mark.parametrize("n, popsize", [(1, None), (2, None), (5, None), (5, 100), (12, 20), (4, 2), (4, 3)])
def test_weights_and_rates_are_pycmas(n, popsize):
    # pycma follows the tutorial's Table 1 (with the revised 1/4 in c_mu) for the weights and the
    # covariance rates; its step-size rates are its own variant, so those are checked against the
    # tutorial's formulas here
    ours = CMAParameters.default(n, popsize)
    theirs = cma.CMAEvolutionStrategy(np.zeros(n), 1.0, {"verbose": -9, "popsize": popsize} if popsize
                                      else {"verbose": -9})
    assert ours.popsize == theirs.sp.popsize and ours.mu == theirs.sp.weights.mu
    np.testing.assert_allclose(ours.weights, np.asarray(theirs.sp.weights), rtol=1e-12, atol=1e-15)
    assert ours.mueff == pytest.approx(theirs.sp.weights.mueff, rel=1e-12)
    assert ours.c_c == pytest.approx(theirs.sp.cc, rel=1e-12)
    assert ours.c_mu == pytest.approx(theirs.sp.cmu, rel=1e-12)
    if ours.popsize >= 6:  # pycma scales c1 down below 6 samples
        assert ours.c_1 == pytest.approx(theirs.sp.c1, rel=1e-12)
    assert ours.chi_n == pytest.approx(theirs.const.chiN, rel=1e-12)
    mueff = ours.mueff
    assert ours.c_sigma == pytest.approx((mueff + 2) / (n + mueff + 5))
    assert ours.d_sigma == pytest.approx(1 + 2 * max(0, np.sqrt((mueff - 1) / (n + 1)) - 1) + ours.c_sigma)


def reference_generation(state, x, values, p):
    """One generation of the tutorial's CMA-ES, written out plainly for one run from its samples x
    (popsize, n): explicit C^(-1/2), a loop over the samples."""
    mean, sigma, cov, path_sigma, path_c, g = state
    n = mean.size
    eigenvalues, axes = np.linalg.eigh(cov)
    inv_sqrt = axes @ np.diag(1 / np.sqrt(eigenvalues)) @ axes.T
    order = np.argsort(values, kind="stable")
    y = [(x[k] - mean) / sigma for k in order]
    y_w = sum(p.weights[i] * y[i] for i in range(p.mu))
    new_mean = mean + sigma * y_w
    path_sigma = (1 - p.c_sigma) * path_sigma + np.sqrt(p.c_sigma * (2 - p.c_sigma) * p.mueff) * inv_sqrt @ y_w
    h = float(np.linalg.norm(path_sigma) / np.sqrt(1 - (1 - p.c_sigma) ** (2 * (g + 1)))
              < (1.4 + 2 / (n + 1)) * p.chi_n)
    path_c = (1 - p.c_c) * path_c + h * np.sqrt(p.c_c * (2 - p.c_c) * p.mueff) * y_w
    rank_mu = np.zeros((n, n))
    for i in range(p.popsize):
        w = p.weights[i] if p.weights[i] >= 0 else p.weights[i] * n / np.sum((inv_sqrt @ y[i]) ** 2)
        rank_mu += w * np.outer(y[i], y[i])
    delta = (1 - h) * p.c_c * (2 - p.c_c)
    cov = ((1 + p.c_1 * delta - p.c_1 - p.c_mu * p.weights.sum()) * cov + p.c_1 * np.outer(path_c, path_c)
           + p.c_mu * rank_mu)
    sigma = sigma * np.exp(p.c_sigma / p.d_sigma * (np.linalg.norm(path_sigma) / p.chi_n - 1))
    return new_mean, sigma, cov, path_sigma, path_c, g + 1


@pytest.mark.parametrize("n, popsize", [(3, None), (5, 100), (6, 7)])
def test_generations_are_the_tutorials(n, popsize):
    """Five generations of two batched runs, each step against the plain single-run transcription."""
    es = BatchedCMAES(np.array([np.linspace(0.1, 0.9, n), np.linspace(-1, 1, n)]), [0.3, 0.7], seeds=[3, 4],
                      popsize=popsize, max_iterations=50)
    p = es.params
    states = [(es.mean[r].copy(), es.sigma[r], np.eye(n), np.zeros(n), np.zeros(n), 0) for r in range(2)]
    for _ in range(5):
        runs = np.array([0, 1])
        x = es.ask(runs)
        values = ellipsoid(x - 0.2)
        es.tell(runs, values)
        for r in runs:
            states[r] = reference_generation(states[r], x[r], values[r], p)
            mean, sigma, cov, path_sigma, path_c, _ = states[r]
            np.testing.assert_allclose(es.mean[r], mean, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(es.sigma[r], sigma, rtol=1e-10)
            np.testing.assert_allclose(es.cov[r], cov, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(es.path_sigma[r], path_sigma, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(es.path_c[r], path_c, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name, f, target", [("sphere", sphere, 1e-10), ("ellipsoid", ellipsoid, 1e-8),
                                             ("rosenbrock", rosenbrock, 1e-8)])
def test_converges_as_fast_as_pycma(name, f, target):
    n, seeds = 5, range(1, 21)
    es = BatchedCMAES(np.full((20, n), 0.5), np.full(20, 0.5), list(seeds), max_iterations=5000,
                      tolfun=1e-14, tolx=1e-14)
    ours = run_to_target(es, f, target)
    theirs = np.array([pycma_to_target(f, n, seed, target) for seed in seeds])
    assert not np.isnan(ours).any() and not np.isnan(theirs).any()
    # measured: 780 / 728 (sphere), 1448 / 1372 (ellipsoid), 1720 / 1660 (Rosenbrock)
    assert np.median(ours) <= 1.2 * np.median(theirs), (name, np.median(ours), np.median(theirs))


def test_a_run_is_the_same_alone_or_in_a_batch():
    def trajectory(es, run, generations):
        out = []
        for _ in range(generations):
            runs = np.array([r for r in range(es.mean.shape[0]) if not es.stopped[r]])
            x = es.ask(runs)
            es.tell(runs, rosenbrock(x))
            out.append(x[list(runs).index(run)])
        return np.array(out)

    alone = BatchedCMAES(np.full((1, 3), 0.5), [0.3], seeds=[11], max_iterations=15)
    batch = BatchedCMAES(np.array([[0.1, 0.2, 0.3], [0.5] * 3, [2.0, 1.0, 0.0]]), [0.2, 0.3, 0.5],
                         seeds=[4, 11, 5], max_iterations=15)
    np.testing.assert_array_equal(trajectory(alone, 0, 15), trajectory(batch, 1, 15))
    # and a run is reproducible from its seed
    again = BatchedCMAES(np.full((1, 3), 0.5), [0.3], seeds=[11], max_iterations=15)
    np.testing.assert_array_equal(trajectory(again, 0, 15), trajectory(
        BatchedCMAES(np.full((1, 3), 0.5), [0.3], seeds=[11], max_iterations=15), 0, 15))
    other = BatchedCMAES(np.full((1, 3), 0.5), [0.3], seeds=[12], max_iterations=15)
    reference = BatchedCMAES(np.full((1, 3), 0.5), [0.3], seeds=[11], max_iterations=15)
    assert not np.array_equal(trajectory(other, 0, 15), trajectory(reference, 0, 15))


def test_asking_a_subset_leaves_the_others_untouched():
    es = BatchedCMAES(np.zeros((3, 2)), np.ones(3), seeds=[1, 2, 3], max_iterations=10)
    before = es.mean.copy(), es.sigma.copy(), es.cov.copy()
    x = es.ask(np.array([1]))
    es.tell(np.array([1]), sphere(x - 3.0))
    assert es.iterations.tolist() == [0, 1, 0]
    for now, then in zip((es.mean, es.sigma, es.cov), before, strict=True):
        np.testing.assert_array_equal(now[[0, 2]], then[[0, 2]])
        assert not np.array_equal(now[1], then[1])


def test_stopping_rules():
    # maxiter
    es = BatchedCMAES(np.zeros((2, 2)), np.ones(2), seeds=[1, 2], max_iterations=3)
    for _ in range(3):
        runs = np.flatnonzero(~es.stopped)
        es.tell(runs, sphere(es.ask(runs) - 5))
    assert es.stopped.all() and es.iterations.tolist() == [3, 3]
    # a flat objective: stops at once, as pycma (tolfun: no spread now nor in the history)
    es = BatchedCMAES(np.zeros((1, 2)), [1.0], seeds=[1], max_iterations=50)
    es.tell([0], np.zeros((1, es.popsize)) + 0 * es.ask([0])[..., 0])
    assert es.stopped[0] and es.iterations[0] == 1
    # the best 80 % equal: pycma's tolflatfitness, a second flat generation in a row stops the run
    es = BatchedCMAES(np.zeros((1, 2)), [1.0], seeds=[1], max_iterations=50)
    values = np.where(np.arange(es.popsize) < 0.8 * es.popsize, 0.0, 1.0)[None]
    es.tell([0], values + 0 * es.ask([0])[..., 0])
    assert not es.stopped[0]
    es.tell([0], values + 0 * es.ask([0])[..., 0])
    assert es.stopped[0] and es.iterations[0] == 2
    # tolx: a step far below the tolerance stops at once
    es = BatchedCMAES(np.zeros((1, 2)), [1e-9], seeds=[1], max_iterations=50, tolx=1e-3)
    es.tell([0], sphere(es.ask([0]) - 1))
    assert es.stopped[0]


def test_nan_ranks_last_and_wrong_runs_are_refused():
    # a generation with NaN values is the tutorial's generation with those samples ranked last
    es = BatchedCMAES(np.full((1, 4), 2.0), [0.5], seeds=[3], max_iterations=400, tolfun=1e-14, tolx=1e-14)
    x = es.ask([0])
    values = sphere(x)
    values[:, [0, 3, 5]] = np.nan
    es.tell([0], values)
    state = (np.full(4, 2.0), 0.5, np.eye(4), np.zeros(4), np.zeros(4), 0)
    mean, sigma, cov, *_ = reference_generation(state, x[0], np.nan_to_num(values[0], nan=np.inf), es.params)
    np.testing.assert_allclose(es.mean[0], mean, rtol=1e-12)
    np.testing.assert_allclose(es.cov[0], cov, rtol=1e-10, atol=1e-14)

    def some_nan(x):
        values = sphere(x)
        values[:, ::4] = np.nan
        return values

    assert np.isfinite(run_to_target(es, some_nan, 1e-8)).all()
    # NaN everywhere ranks as flat (the best no better than the 75 % rank): stopped after two
    es = BatchedCMAES(np.zeros((1, 3)), [1.0], seeds=[1], max_iterations=50)
    for _ in range(2):
        assert not es.stopped[0]
        es.tell([0], np.full((1, es.popsize), np.nan) + 0 * es.ask([0])[..., 0])
    assert es.stopped[0] and np.isfinite(es.mean).all()
    es = BatchedCMAES(np.zeros((2, 2)), np.ones(2), seeds=[1, 2])
    es.ask(np.array([0, 1]))
    with pytest.raises(ValueError, match="last ask"):
        es.tell(np.array([1]), np.zeros((1, es.popsize)))
    with pytest.raises(ValueError, match="each run once"):
        es.ask(np.array([1, 1]))
    with pytest.raises(ValueError, match="one seed per run"):
        BatchedCMAES(np.zeros((2, 2)), np.ones(2), seeds=[1])
    with pytest.raises(ValueError, match="population of at least 2"):
        CMAParameters.default(3, 1)


def test_a_step_that_runs_away_stops_the_run(recwarn):
    # a linear slope: the step grows every generation until pycma's tolupsigma ends the run
    es = BatchedCMAES(np.zeros((1, 2)), [1.0], seeds=[5], max_iterations=100_000)
    while not es.stopped.all():
        es.tell([0], es.ask([0])[..., 0])
    assert 1e20 < es.sigma[0] < 1e40 and np.isfinite(es.mean).all() and not recwarn.list


def test_lazy_decomposition_above_the_dimension_limit():
    # the tutorial's O(n^2) schedule: B and D stay between decompositions, C is updated every time
    from anim_signals.splines import cma_es

    n = cma_es.LAZY_EIGEN_DIMENSION + 10
    es = BatchedCMAES(np.ones((1, n)), [0.5], seeds=[1], popsize=20, max_iterations=500)
    assert es.eigen_interval > 1
    axes = es.axes.copy()
    for generation in range(1, es.eigen_interval + 1):
        es.tell([0], ellipsoid(es.ask([0])))
        changed = not np.array_equal(es.axes, axes)
        assert changed == (generation == es.eigen_interval)
        assert not np.allclose(es.cov[0], np.eye(n))
    small = BatchedCMAES(np.ones((1, 5)), [0.5], seeds=[1], max_iterations=5)
    assert small.eigen_interval == 1


@pytest.mark.parametrize("popsize", [2, 3])
def test_the_smallest_populations_run(popsize, recwarn):
    es = BatchedCMAES(np.full((1, 4), 1.0), [0.5], seeds=[2], popsize=popsize, max_iterations=300)
    while not es.stopped.all():
        es.tell([0], sphere(es.ask([0])))
    assert sphere(es.mean[0]) < 1e-3 and not recwarn.list


class PycmaRuns:
    """pycma behind BatchedCMAES's interface: the knot searches driven by Hansen's library."""

    def __init__(self, means, sigmas, seeds, popsize=None, max_iterations=100, tolfun=1e-11, tolx=1e-11):
        tolx = np.broadcast_to(tolx, (len(seeds),))
        self.runs = [cma.CMAEvolutionStrategy(m, s, {"verbose": -9, "seed": int(seed) % (2**31 - 2) + 1,
                                                     "maxiter": max_iterations, "tolfun": tolfun, "tolx": t,
                                                     **({"popsize": popsize} if popsize else {})})
                     for m, s, seed, t in zip(means, sigmas, seeds, tolx, strict=True)]
        self.popsize = self.runs[0].popsize
        self._asked = None

    @property
    def stopped(self):
        return np.array([bool(es.countiter and es.stop()) for es in self.runs])

    def ask(self, runs):
        self._asked = [self.runs[r].ask() for r in runs]
        return np.array(self._asked)

    def tell(self, runs, values):
        for r, asked, v in zip(runs, self._asked, values, strict=True):
            self.runs[r].tell(asked, list(map(float, v)))


def test_the_seed_setting_fits_as_well_as_with_pycma(monkeypatch):
    """Mukai's fixed-count fit in the seed's 1D setting (4 knots, population 100, 12 generations):
    RMS over ten seeds no worse than the same search driven by pycma."""

    def rms_of_seeds(y):
        return np.array([A.fit_latent_spline(y[:, None], internal_knots=4, population=100, max_iterations=12,
                                             seed=seed).rms for seed in range(10)])

    ours = {name: rms_of_seeds(y) for name, y in CURVES.items()}
    monkeypatch.setattr(knots, "BatchedCMAES", PycmaRuns)
    theirs = {name: rms_of_seeds(y) for name, y in CURVES.items()}
    for name in CURVES:
        assert np.median(ours[name]) <= 1.05 * np.median(theirs[name]), (name, ours[name], theirs[name])


def test_lanes_in_one_search_are_the_lanes_alone():
    """KnotProblem.cma_lanes steps runs of different dimensions together: each run's knots must be
    those it finds alone (every run draws from its own seed)."""
    from anim_signals.splines.knots import KnotProblem
    from anim_signals.steps import run_steps

    rng = np.random.default_rng(2)
    tau = np.linspace(0.0, 1.0, 300)
    target = np.column_stack([np.sin(11 * tau), np.cos(17 * tau**2), tau**3]) * 30 + 0.05 * rng.normal(size=(300, 3))
    problem = KnotProblem.lanes(tau, target, 3, 1)
    inits = [np.linspace(0, 1, 9)[1:-1], np.linspace(0, 1, 6)[1:-1], np.linspace(0, 1, 9)[1:-1]]
    windows = [(0, 7), (1, 3), (2, 5)]
    lanes = np.array([0, 1, 2])
    _, together = run_steps(problem.cma_lanes(inits, lanes, "max", 12, 8, [5, 6, 7], windows=windows))
    for k in range(3):
        _, alone = run_steps(problem.cma_lanes([inits[k]], lanes[[k]], "max", 12, 8, [5 + k], windows=[windows[k]]))
        np.testing.assert_array_equal(together[k].knots, alone[0].knots)
        assert together[k].max_error == alone[0].max_error
        assert together[k].max_error < problem.score([inits[k]], lanes[[k]]).max_error[0]
