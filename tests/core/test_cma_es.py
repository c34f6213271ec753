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


@pytest.mark.parametrize("n, popsize", [(2, None), (5, None), (5, 100), (12, 20)])
def test_weights_and_rates_are_pycmas(n, popsize):
    # both follow the tutorial's Table 1 for the weights, mueff and the rank-one rates
    ours = CMAParameters.default(n, popsize)
    theirs = cma.CMAEvolutionStrategy(np.zeros(n), 1.0, {"verbose": -9, "popsize": popsize} if popsize
                                      else {"verbose": -9}).sp
    assert ours.popsize == theirs.popsize and ours.mu == theirs.weights.mu
    np.testing.assert_allclose(ours.weights[: ours.mu], np.asarray(theirs.weights)[: ours.mu], rtol=1e-12)
    assert ours.mueff == pytest.approx(theirs.weights.mueff, rel=1e-12)
    assert ours.c_c == pytest.approx(theirs.cc, rel=1e-12)
    if ours.popsize >= 6:  # pycma scales c1 down below 6 samples
        assert ours.c_1 == pytest.approx(theirs.c1, rel=1e-12)
    assert np.all(ours.weights[ours.mu :] <= 0) and ours.weights.sum() < 1
    assert ours.chi_n == pytest.approx(np.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n**2)))


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
    again = BatchedCMAES(np.full((1, 3), 0.5), [0.3], seeds=[11], max_iterations=15)
    np.testing.assert_array_equal(trajectory(again, 0, 15), trajectory(
        BatchedCMAES(np.full((1, 3), 0.5), [0.3], seeds=[11], max_iterations=15), 0, 15))


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
    es = BatchedCMAES(np.full((1, 4), 2.0), [0.5], seeds=[3], max_iterations=400, tolfun=1e-14, tolx=1e-14)

    def half_nan(x):
        values = sphere(x)
        values[:, ::2] = np.nan
        return values

    evaluations = run_to_target(es, half_nan, 1e-8)
    assert np.isfinite(evaluations).all()
    es = BatchedCMAES(np.zeros((2, 2)), np.ones(2), seeds=[1, 2])
    es.ask(np.array([0, 1]))
    with pytest.raises(ValueError, match="last ask"):
        es.tell(np.array([1]), np.zeros((1, es.popsize)))
    with pytest.raises(ValueError, match="one seed per run"):
        BatchedCMAES(np.zeros((2, 2)), np.ones(2), seeds=[1])
    with pytest.raises(ValueError, match="population of at least 2"):
        CMAParameters.default(3, 1)


@pytest.mark.parametrize("popsize", [2, 3])
def test_the_smallest_populations_run(popsize, recwarn):
    # one positive weight: no rank-mu update (c_mu = 0), so no negative weights either
    p = CMAParameters.default(4, popsize)
    assert p.c_mu == 0 and p.weights[0] == 1 and not p.weights[1:].any()
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
