"""The segment test of :mod:`.segment_fit`, compiled with numba: the same cascade, point by point.

:func:`.segment_fit.fit_segments` runs the cascade on padded ``(segments, pairs, points)`` arrays
with numpy; most of its time goes to those temporaries. This module runs the identical arithmetic
one segment at a time in machine code: the interior points (samples and midpoints) are built on
the fly from the channel's samples, a handle pair's residual loop stops as soon as it cannot beat
the best pair so far, and segments run in threads side by side (the kernel releases the GIL). Results equal the numpy cascade's up to
the order of floating-point sums (``tests/core/test_segment_kernel.py`` compares the two).

numba is an optional dependency (bundled in the extension's zip): importing this module raises
ImportError without it, and :mod:`.segment_fit` falls back to numpy. ``ANIM_SIGNALS_KERNEL=numpy``
forces the fallback.
"""

from __future__ import annotations

import numpy as np

from .compiled import THREADS, compile_lazily
from .compiled import pool as _pool

__all__ = ["REFINE_LEVELS", "REFINE_SHORTEST", "REFINE_STEP", "bezier_values", "fit_segment_batch"]

# The refinement of handle lengths: a pattern search around the table's best pair, along each
# length in turn (the diagonals too keep 0.7 % fewer keys for twice the time), with Lawson at each
# point: the first step, the number of halvings, and the shortest handle tried (fractions of the
# segment). The table's lengths are 0.15 apart and a segment's max error is sharp in them
# (0.5/0.5 -> 1.24 x the limit, 0.5/0.6 -> 0.58, 0.5/0.7 -> 1.20 on a 44-frame segment of
# angry_13_000).
REFINE_STEP = 0.075
REFINE_LEVELS = 3
REFINE_SHORTEST = 0.002

# Midpoint targets, as build_segments computes them (the cubic through four samples; the quadratic
# through three at the clip's ends).


def _points(frames, y, a, length, lim, between, free, u, tgt, inv):  # pragma: no cover - compiled
    x0 = frames[a]
    span = frames[a + length] - x0
    ns = length - 1
    for j in range(ns):
        idx = a + 1 + j
        u[j] = (frames[idx] - x0) / span
        tgt[j] = y[idx]
        inv[j] = 1.0
    count = ns
    if between:
        last = y.shape[0] - 1
        for k in range(length):
            ia = a + k
            ib = ia + 1
            ya = y[ia]
            yb = y[ib]
            before = ia - 1 if ia >= 1 else 0
            after = ib + 1 if ib + 1 <= last else last
            first = ia < 1
            final = ib + 1 > last
            if first and final:
                target = 0.5 * (ya + yb)
            elif first:
                target = (3.0 * ya + 6.0 * yb - y[after]) / 8.0
            elif final:
                target = (6.0 * ya + 3.0 * yb - y[before]) / 8.0
            else:
                target = (9.0 * (ya + yb) - y[before] - y[after]) / 16.0
            spread = 0.25 * abs(yb - ya) + abs(target - 0.5 * (ya + yb))
            p = ns + k
            u[p] = (0.5 * (frames[ia] + frames[ib]) - x0) / span
            tgt[p] = target
            inv[p] = 1.0 / (1.0 + spread / lim)
        count = ns + length
    if free:
        # the end key's own sample, last: with a free end value the key may sit off it, within the limit
        u[count] = 1.0
        tgt[count] = y[a + length]
        inv[count] = 1.0
        count += 1
    return count


def _end_point(npts, tgt, b1, b2, b3, r0):  # pragma: no cover - compiled
    """The free end value's own point (the last): the curve is the end key's value there, exactly."""
    j = npts - 1
    b1[j] = 0.0
    b2[j] = 0.0
    b3[j] = 1.0
    r0[j] = tgt[j]


def _bernstein(j, t, tgt, y0, y1, b1, b2, b3, r0, free):  # pragma: no cover - compiled
    """Point j at curve parameter t: the inner Bernstein values b1, b2 (b3 too with a free end
    value) and the target minus the keys' fixed part r0."""
    s = 1.0 - t
    st = 3.0 * s * t
    b1[j] = st * s
    b2[j] = st * t
    if free:
        b3[j] = t * t * t
        r0[j] = tgt[j] - (s * s * s) * y0
    else:
        r0[j] = tgt[j] - (s * s * s) * y0 - (t * t * t) * y1


def _basis(g, u, tgt, npts, y0, y1, table, b1, b2, b3, r0, free):  # pragma: no cover - compiled
    """For handle pair g: the Bernstein values b1, b2 (b3 with a free end value) and the target
    minus the keys' fixed part r0 at each point."""
    samples = table.shape[1]
    for j in range(npts):
        uj = u[j]
        if g == 0:
            t = uj
        else:
            pos = min(max(uj, 0.0), 1.0) * (samples - 1)
            k = min(int(pos), samples - 2)
            frac = pos - k
            t = table[g, k] * (1.0 - frac) + table[g, k + 1] * frac
        _bernstein(j, t, tgt, y0, y1, b1, b2, b3, r0, free)
    if free:
        _end_point(npts, tgt, b1, b2, b3, r0)


def _gram(npts, b1, b2, b3, r0, inv, weights, use_weights, free):  # pragma: no cover - compiled
    """The least-squares sums (g11, g12, g22, r1, r2, g13, g23, g33, r3; the last four only with a
    free end value), weighted 1 / allowance^2 (times Lawson's weights with ``use_weights``)."""
    g11 = 0.0
    g12 = 0.0
    g22 = 0.0
    r1 = 0.0
    r2 = 0.0
    g13 = 0.0
    g23 = 0.0
    g33 = 0.0
    r3 = 0.0
    for j in range(npts):
        w = inv[j] * inv[j]
        if use_weights:
            w = weights[j] * w
        wb1 = w * b1[j]
        wb2 = w * b2[j]
        g11 += wb1 * b1[j]
        g12 += wb1 * b2[j]
        g22 += wb2 * b2[j]
        r1 += wb1 * r0[j]
        r2 += wb2 * r0[j]
        if free:
            wb3 = w * b3[j]
            g13 += wb1 * b3[j]
            g23 += wb2 * b3[j]
            g33 += wb3 * b3[j]
            r3 += wb3 * r0[j]
    return g11, g12, g22, r1, r2, g13, g23, g33, r3


def _coefficients(sums, alpha, beta, y0, y1, c1_fixed, fixed, ridge, free):  # pragma: no cover
    """Inner control values (c1, c2) and the end value from the sums, with segment_fit's tiny ridge
    towards the line (the end value is the sample's unless ``free``)."""
    g11, g12, g22, r1, r2, g13, g23, g33, r3 = sums
    lin1 = y0 + alpha * (y1 - y0)
    lin2 = y0 + (1.0 - beta) * (y1 - y0)
    lam = ridge * (g11 + g22 + 1e-300)
    r2 = r2 + lam * lin2
    if fixed:
        return c1_fixed, (r2 - c1_fixed * g12) / (g22 + lam), y1
    a11 = g11 + lam
    a22 = g22 + lam
    rr1 = r1 + lam * lin1
    if not free:
        det = a11 * a22 - g12 * g12
        if not abs(det) > 1e-300:
            det = 1e-300
        return (a22 * rr1 - g12 * r2) / det, (a11 * r2 - g12 * rr1) / det, y1
    # the symmetric 3 x 3 system by its adjugate
    k11 = a22 * g33 - g23 * g23
    k12 = g23 * g13 - g12 * g33
    k13 = g12 * g23 - a22 * g13
    k22 = a11 * g33 - g13 * g13
    k23 = g12 * g13 - a11 * g23
    k33 = a11 * a22 - g12 * g12
    det = a11 * k11 + g12 * k12 + g13 * k13
    if not abs(det) > 1e-300:
        det = 1e-300
    return ((k11 * rr1 + k12 * r2 + k13 * r3) / det, (k12 * rr1 + k22 * r2 + k23 * r3) / det,
            (k13 * rr1 + k23 * r2 + k33 * r3) / det)


def _max_error(npts, b1, b2, b3, r0, inv, c1, c2, v, bound, free):  # pragma: no cover - compiled
    """Max |residual| in allowances; stops once it reaches ``bound`` (the result is then >= bound)."""
    worst = 0.0
    for j in range(npts):
        r = r0[j] - b1[j] * c1 - b2[j] * c2
        if free:
            r -= b3[j] * v
        e = abs(r * inv[j])
        if e > worst:
            worst = e
            if worst >= bound:
                return worst
    return worst


def _one_segment(frames, y, a, length, lim, sl, ab, table, between, lawson_iterations, ridge, refine_gate,
                 start_alpha, start_beta, y0, free, u, tgt, inv, b1, b2, b3, r0, weights,
                 res, warm_decides=False):  # pragma: no cover - compiled
    """The cascade for one segment from the value ``y0`` at sample ``a`` (the end value the sample's,
    or with ``free`` (first slope free) any within the limit of it), then the refinement of the
    handle lengths where it missed by at most ``refine_gate`` times the limit: (ok, pair, alpha,
    beta, c1, c2, end value, error).

    With start lengths (not NaN) and a gate, those lengths (the ones that held one sample shorter,
    when the search grows a segment) are tried and refined first, the cascade only where they fail;
    with ``warm_decides``, only where they miss by more than the gate (refined and still failing,
    the segment fails: see :func:`_search_unit`)."""
    free = free and not np.isfinite(sl)
    y1 = y[a + length]
    span = frames[a + length] - frames[a]
    warm = refine_gate > 0.0 and np.isfinite(start_alpha) and np.isfinite(start_beta) and lawson_iterations > 0
    if warm:
        npts = _points(frames, y, a, length, lim, between, free, u, tgt, inv)
        if npts > 0:
            err, c1, c2, v = _lawson_at(start_alpha, start_beta, u, tgt, inv, npts, length - 1, y0, y1, span, sl,
                                        lim, lawson_iterations, ridge, np.inf, b1, b2, b3, r0, weights, res, free)
            ok = err <= lim
            alpha = start_alpha
            beta = start_beta
            if not ok and err <= refine_gate * lim:
                ok, alpha, beta, c1, c2, v, err = _refine(alpha, beta, err, c1, c2, v, u, tgt, inv, npts, length - 1,
                                                          y0, y1, span, sl, lim, lawson_iterations, ridge, b1, b2,
                                                          b3, r0, weights, res, free)
            if ok or (warm_decides and err <= refine_gate * lim):
                return ok, 0, alpha, beta, c1, c2, v, err
    ok, pair, c1, c2, v, err = _cascade(frames, y, a, length, lim, sl, ab, table, between, lawson_iterations,
                                        ridge, y0, free, u, tgt, inv, b1, b2, b3, r0, weights, res)
    alpha = ab[pair, 0]
    beta = ab[pair, 1]
    if ok or not err <= refine_gate * lim or lawson_iterations == 0:
        return ok, pair, alpha, beta, c1, c2, v, err
    # (the points are still those of this segment: the cascade built them)
    npts = length - 1 + (length if between else 0) + (1 if free else 0)
    ok, alpha, beta, c1, c2, v, err = _refine(alpha, beta, err, c1, c2, v, u, tgt, inv, npts, length - 1, y0, y1,
                                              span, sl, lim, lawson_iterations, ridge, b1, b2, b3, r0, weights, res,
                                              free)
    return ok, pair, alpha, beta, c1, c2, v, err


def _refine(alpha, beta, err, c1, c2, v, u, tgt, inv, npts, ns, y0, y1, span, sl, lim, lawson_iterations, ridge,
            b1, b2, b3, r0, weights, res, free):  # pragma: no cover - compiled
    """The pattern search over handle lengths from (alpha, beta) with error ``err``: (ok, alpha,
    beta, c1, c2, end value, error), the best found."""
    step = REFINE_STEP
    for _ in range(REFINE_LEVELS):
        # the four neighbours at this step; the centre moves to the best one that improves on it
        na = alpha
        nb = beta
        ne = err
        n1 = c1
        n2 = c2
        nv = v
        for da in range(-1, 2):
            for db in range(-1, 2):
                if da == 0 and db == 0:
                    continue
                if da != 0 and db != 0:
                    continue
                ta = min(max(alpha + da * step, REFINE_SHORTEST), 1.0)
                tb = min(max(beta + db * step, REFINE_SHORTEST), 1.0)
                e, q1, q2, qv = _lawson_at(ta, tb, u, tgt, inv, npts, ns, y0, y1, span, sl, lim,
                                           lawson_iterations, ridge, ne, b1, b2, b3, r0, weights, res, free)
                if e < ne:
                    na, nb, ne, n1, n2, nv = ta, tb, e, q1, q2, qv
        if ne < err:
            alpha, beta, err, c1, c2, v = na, nb, ne, n1, n2, nv
            if err <= lim:
                return True, alpha, beta, c1, c2, v, err
        step *= 0.5
    return False, alpha, beta, c1, c2, v, err


def _lawson_at(alpha, beta, u, tgt, inv, npts, ns, y0, y1, span, sl, lim, lawson_iterations, ridge, bound,
               b1, b2, b3, r0, weights, res, free):  # pragma: no cover - compiled
    """Lawson's iterations (as the cascade's third stage) for handle lengths (alpha, beta) off the
    table, given up once they cannot beat ``bound``: x(t) = u solved at every point (the samples,
    the first ``ns`` points, and the midpoints each run in increasing u: each solve starts from
    the last; a free end value's point last). Returns (least max error in allowances, c1, c2, end value)."""
    q1 = alpha
    q2 = 1.0 - beta
    t = 0.0
    for j in range(npts):
        if j == 0 or j == ns:
            t = 0.0
        t = _solve_t(u[j], q1, q2, t)
        _bernstein(j, t, tgt, y0, y1, b1, b2, b3, r0, free)
    if free:
        _end_point(npts, tgt, b1, b2, b3, r0)
    fixed = np.isfinite(sl)
    cf = y0 + alpha * (span * sl) if fixed else 0.0
    return _lawson(npts, b1, b2, b3, r0, inv, weights, res, alpha, beta, y0, y1, cf, fixed, ridge, lim,
                   lawson_iterations, np.inf, 0.0, 0.0, y1, bound, free)


def _solve_t(uj, q1, q2, lo):  # pragma: no cover - compiled
    """The t in [lo, 1] where the segment's x(t) = 0, q1, q2, 1 Bezier reaches uj (x is monotone for
    handles within the segment): Newton from ``lo``, kept in the bracket by bisection."""
    hi = 1.0
    t = lo
    for _ in range(60):
        s = 1.0 - t
        x = 3.0 * s * s * t * q1 + 3.0 * s * t * t * q2 + t * t * t
        d = x - uj
        if d == 0.0:
            return t
        if d < 0.0:
            lo = t
        else:
            hi = t
        if hi - lo <= 1e-15:
            return t
        slope = 3.0 * s * s * q1 + 6.0 * s * t * (q2 - q1) + 3.0 * t * t * (1.0 - q2)
        step = d / slope if slope > 0.0 else 2.0
        nt = t - step
        if not (lo < nt < hi):
            nt = 0.5 * (lo + hi)
        elif abs(step) <= 1e-15:
            return nt
        t = nt
    return t


def _holds_between(frames, y, a, length, lim, alpha, beta, c1, c2, v, y0, free, u, tgt, inv, b1, b2, b3,
                   r0):  # pragma: no cover - compiled
    """Whether a segment fitted to its samples (handle lengths ``alpha``, ``beta``, inner values
    ``c1``, ``c2``, end value ``v`` with ``free``) keeps the midpoints between them within their
    allowance, as a test with ``between`` asks; x(t) is solved exactly at each midpoint (the
    cascade's table stages interpolate its inverse: a fit can pass there and miss here by a hair,
    and this is Blender's evaluation)."""
    _points(frames, y, a, length, lim, True, free, u, tgt, inv)
    y1 = y[a + length]
    ns = length - 1
    t = 0.0
    for j in range(ns, ns + length):
        t = _solve_t(u[j], alpha, 1.0 - beta, t)
        _bernstein(j, t, tgt, y0, y1, b1, b2, b3, r0, free)
        r = r0[j] - b1[j] * c1 - b2[j] * c2
        if free:
            r -= b3[j] * v
        if abs(r * inv[j]) > lim:
            return False
    return True


def _lawson(npts, b1, b2, b3, r0, inv, weights, res, alpha, beta, y0, y1, cf, fixed, ridge, lim, lawson_iterations,
            err, c1, c2, v, bound, free):  # pragma: no cover - compiled
    """Lawson's reweighting, w <- w |r|, towards the minimax inner values (and end value, with
    ``free``) for the handle lengths whose basis is in b1, b2 (b3), r0; returns the best (error, c1,
    c2, end value) of these and the given ones. Stops once the minimax error is known to be at
    least ``bound`` (or the limit)."""
    for j in range(npts):
        weights[j] = 1.0
    for _ in range(lawson_iterations):
        sums = _gram(npts, b1, b2, b3, r0, inv, weights, True, free)
        l1, l2, lv = _coefficients(sums, alpha, beta, y0, y1, cf, fixed, ridge, free)
        worst = 0.0
        top = 0.0
        bottom = 0.0
        for j in range(npts):
            r = r0[j] - b1[j] * l1 - b2[j] * l2
            if free:
                r -= b3[j] * lv
            e = r * inv[j]
            res[j] = e
            if abs(e) > worst:
                worst = abs(e)
            top += weights[j] * e * e
            bottom += weights[j]
        if worst < err:
            err, c1, c2, v = worst, l1, l2, lv
        # the weighted RMS is at most the minimax error: past the limit or the bound, these lengths
        # are given up
        rms = np.sqrt(top / bottom)
        if not (worst > lim and rms <= lim and rms < bound):
            break
        biggest = 0.0
        for j in range(npts):
            weights[j] = weights[j] * abs(res[j]) + 1e-300
            if weights[j] > biggest:
                biggest = weights[j]
        for j in range(npts):
            weights[j] /= biggest
    return err, c1, c2, v


def _cascade(frames, y, a, length, lim, sl, ab, table, between, lawson_iterations, ridge, y0, free,
             u, tgt, inv, b1, b2, b3, r0, weights, res):  # pragma: no cover - compiled
    """The cascade for one segment: (ok, pair, c1, c2, end value, error).

    With ``free`` the end value is a third unknown in Lawson's stage (and the refinement after it):
    the thirds and the table keep the sample's value, the end sample's point then leaving no
    residual. Freeing it in the table too kept 0.2 % fewer keys on a 1,500 x 306 clip for 0.35 s more."""
    b = a + length
    y1 = y[b]
    span = frames[b] - frames[a]
    fixed = np.isfinite(sl)
    npts = _points(frames, y, a, length, lim, between, free, u, tgt, inv)
    if npts == 0:
        c1 = y0 + (y1 - y0) / 3.0
        if fixed:
            c1 = y0 + (1.0 / 3.0) * (span * sl)
        return True, 0, c1, y0 + 2.0 * (y1 - y0) / 3.0, y1, 0.0
    n_pairs = ab.shape[0]

    # 1. thirds
    _basis(0, u, tgt, npts, y0, y1, table, b1, b2, b3, r0, False)
    sums = _gram(npts, b1, b2, b3, r0, inv, weights, False, False)
    c1_fixed = y0 + ab[0, 0] * (span * sl) if fixed else 0.0
    c1, c2, v = _coefficients(sums, ab[0, 0], ab[0, 1], y0, y1, c1_fixed, fixed, ridge, False)
    err = _max_error(npts, b1, b2, b3, r0, inv, c1, c2, v, np.inf, False)
    best_pair = 0
    if err <= lim or n_pairs == 1:
        return err <= lim, 0, c1, c2, v, err

    # 2. the table of handle pairs: the least max error (the first on ties), pruned once a pair
    #    cannot beat the best so far
    table_err = np.inf
    table_pair = 1
    table_c1 = 0.0
    table_c2 = 0.0
    table_v = y1
    for g in range(1, n_pairs):
        _basis(g, u, tgt, npts, y0, y1, table, b1, b2, b3, r0, False)
        sums = _gram(npts, b1, b2, b3, r0, inv, weights, False, False)
        cf = y0 + ab[g, 0] * (span * sl) if fixed else 0.0
        g1, g2, gv = _coefficients(sums, ab[g, 0], ab[g, 1], y0, y1, cf, fixed, ridge, False)
        e = _max_error(npts, b1, b2, b3, r0, inv, g1, g2, gv, table_err, False)
        if e < table_err:
            table_err, table_pair, table_c1, table_c2, table_v = e, g, g1, g2, gv
    if table_err < err:
        err, best_pair, c1, c2, v = table_err, table_pair, table_c1, table_c2, table_v
    if err <= lim or lawson_iterations == 0:
        return err <= lim, best_pair, c1, c2, v, err
    # Least squares has the smallest RMS and minimax's RMS is at most its max: the table's best
    # pair with an RMS above the limit rules Lawson out (with a free end value, its least squares).
    _basis(table_pair, u, tgt, npts, y0, y1, table, b1, b2, b3, r0, free)
    if free:
        sums = _gram(npts, b1, b2, b3, r0, inv, weights, False, True)
        table_c1, table_c2, table_v = _coefficients(sums, ab[table_pair, 0], ab[table_pair, 1], y0, y1, 0.0, False,
                                                    ridge, True)
    total = 0.0
    for j in range(npts):
        r = r0[j] - b1[j] * table_c1 - b2[j] * table_c2
        if free:
            r -= b3[j] * table_v
        e = r * inv[j]
        total += e * e
    if not np.sqrt(total / npts) <= lim:
        return False, best_pair, c1, c2, v, err

    # 3. Lawson on the best pair, towards the minimax solution
    _basis(best_pair, u, tgt, npts, y0, y1, table, b1, b2, b3, r0, free)
    alpha = ab[best_pair, 0]
    cf = y0 + alpha * (span * sl) if fixed else 0.0
    err, c1, c2, v = _lawson(npts, b1, b2, b3, r0, inv, weights, res, alpha, ab[best_pair, 1], y0, y1, cf, fixed,
                             ridge, lim, lawson_iterations, err, c1, c2, v, np.inf, free)
    return err <= lim, best_pair, c1, c2, v, err


def _scratch(size):  # pragma: no cover - compiled
    """The per-point work arrays of one segment test: u, targets, inverse allowances, b1, b2, b3,
    r0, Lawson's weights and residuals."""
    return (np.empty(size), np.empty(size), np.empty(size), np.empty(size), np.empty(size), np.empty(size),
            np.empty(size), np.empty(size), np.empty(size))


def _batch(frames, columns, chan, start, length, limit, slope, ab, table, between, lawson_iterations, ridge,
           refine_gate, start_alpha, start_beta, warm_decides, first, step, ok, pair, alpha, beta, c1, c2,
           error):  # pragma: no cover - compiled
    """Segments first, first + step, ... one after another (without the GIL: threads run them side by
    side); each from its start sample's value to its end sample's."""
    stop = chan.shape[0]
    most = 1
    for s in range(first, stop, step):
        if length[s] > most:
            most = length[s]
    size = 2 * most + 2
    u, tgt, inv, b1, b2, b3, r0, weights, res = _scratch(size)
    for s in range(first, stop, step):
        y = columns[chan[s]]
        o, p, va, vb, v1, v2, _, e = _one_segment(frames, y, start[s], length[s], limit[s], slope[s], ab, table,
                                                  between, lawson_iterations, ridge, refine_gate[s], start_alpha[s],
                                                  start_beta[s], y[start[s]], False, u, tgt, inv, b1, b2, b3, r0,
                                                  weights, res, warm_decides[s])
        ok[s] = o
        pair[s] = p
        alpha[s] = va
        beta[s] = vb
        c1[s] = v1
        c2[s] = v2
        error[s] = e


def _fresh_key_search(probes):  # pragma: no cover - compiled
    """The search state a key starts from (:func:`_search_unit`): the length known to pass (1), the
    shortest known to fail (0: none yet), the probes left, probing, refining."""
    return 1, 0, probes, False, False


def _search_unit(frames, columns, chans, lims, ab, table, between, lawson_iterations, ridge, refine_gate, probes,
                 first_length, free_values, key0, last_fit, stop_at, keys, fits):  # pragma: no cover - compiled
    """:func:`.fast_search.greedy`'s search for one unit alone (FREE handles): channels
    ``chans`` (rows of ``columns``) that share their key frames, each within its ``lims``, step for
    step: the same lengths tried in the same order, so the same keys (but see below for units of
    one channel and for midpoints). A length passes when it
    passes for every channel (the test stops at the first that fails). Writes the keys (sample
    indices) to ``keys`` and each channel's segment fits (alpha, beta, c1, c2, end value) to
    ``fits[i, :, s]``; returns the number of keys.

    With ``free_values`` each key after the first may sit off its sample, within the limit: a
    segment's end value is a third unknown of its minimax fit beside c1 and c2 (the end sample one
    more point), and the next segment starts from it. The Python search keeps the samples' values
    (then the keys are its keys).

    A unit of one channel, growing a segment, takes the handle lengths that held one sample shorter
    as the answer once refined (``_one_segment``'s ``warm_decides``): where they still fail, so
    does the segment, without the cascade and a second refinement from the table's best pair (the
    Python search's way). Such a failure ends nearly every key's search, and the cascade rarely
    turned it into a pass: on the 16 mocap clips of the speed benchmark, without it Fewest Keys keeps
    0.7 % more keys (0-1.1 % per clip) in a quarter less time (8.5 -> 6.3 s in all; the 1,500 x 306
    clip 1.9 -> 1.1 s). Units of several channels keep it: any channel's failure fails the unit
    (with every curve sharing its key frames, 0.7 % more keyed frames for little time).

    With ``between``, a key's lengths are tested at the samples alone, and the midpoints between
    them checked once its segment settles (:func:`_holds_between`, each channel's fit as found);
    where one is beyond its allowance, that key's search runs again with every test holding the
    midpoints too (the Python search's way, every length at both). The midpoint points double a
    test's Lawson work, and a segment fitted to its samples alone holds its midpoints nearly always
    (94 % of the segments on the 16 mocap clips of the speed benchmark; 91-92 % on the long ones):
    the same guarantee at 0.7 of the time (6.1 -> 4.4 s on those clips, 0.1 % fewer keys).

    The search starts at key ``key0``, each channel's segment before it ``last_fit`` (k, 5) (its
    end value the key's value; at the first sample: zeros and the sample's value), and returns once
    a key reaches ``stop_at`` (or the last sample): from the state it stopped in (the last key, the
    last segments' fits, their length as ``first_length``) it goes on with the same keys as one call
    would (progress and cancelling between calls)."""
    k = chans.shape[0]
    n = frames.shape[0]
    size = 2 * n + 2
    u, tgt, inv, b1, b2, b3, r0, weights, res = _scratch(size)
    keys[0] = key0
    count = 1
    if key0 >= n - 1:
        return count
    key = key0
    y0 = np.empty(k)
    # each channel's fit at the length known to pass (lo); a refinement that starts before any
    # longer length passed starts from the previous segment's handle lengths
    best = np.empty((k, 5))
    for i in range(k):
        y0[i] = last_fit[i, 4]
        for r in range(5):
            best[i, r] = last_fit[i, r]
    trial_fit = np.zeros((k, 5))
    before = best.copy()  # the fits this key's search started from (restored when it starts again)
    lo, hi, probes_left, probing, refining = _fresh_key_search(probes)
    trial = min(first_length, n - 1 - key0)
    midpoints = False  # whether this key's tests hold the midpoints too (see the docstring)
    while True:
        gate = refine_gate if refining else 0.0
        ok = True
        for i in range(k):
            warm_a = best[i, 0] if refining else np.nan
            o, _, va, vb, v1, v2, vv, _ = _one_segment(frames, columns[chans[i]], key, trial, lims[i], np.nan, ab,
                                                       table, between and midpoints, lawson_iterations, ridge, gate,
                                                       warm_a,
                                                       best[i, 1], y0[i], free_values, u, tgt, inv, b1, b2, b3, r0,
                                                       weights, res, k == 1)
            if not o:
                ok = False
                break
            trial_fit[i, 0] = va
            trial_fit[i, 1] = vb
            trial_fit[i, 2] = v1
            trial_fit[i, 3] = v2
            trial_fit[i, 4] = vv
        probe = probing
        refined = refining
        if ok:
            lo = trial
            best[:, :] = trial_fit
            if probe:
                hi = 0  # a longer segment past an infeasible one: keep growing from it
        elif not probe:
            hi = trial
        probing = False
        room = n - 1 - key
        settled = (lo == room or (hi > 0 and hi - lo <= 1) or (probe and not ok)) and not refined
        ask = settled and not probe and lo < room and probes_left > 0
        if ask:
            probes_left -= 1
            probing = True
            trial = min(room, 2 * hi + 2)
        start_refining = settled and not ask and lo < room and refine_gate > 0.0
        if start_refining:
            refining = True
        refined_done = refined and (not ok or lo == room)
        if refined_done:
            refining = False
        if (settled and not ask and not start_refining) or refined_done:
            if between and not midpoints and lo > 1:
                holds = True
                for i in range(k):
                    if not _holds_between(frames, columns[chans[i]], key, lo, lims[i], best[i, 0], best[i, 1],
                                          best[i, 2], best[i, 3], best[i, 4], y0[i], free_values, u, tgt, inv, b1, b2,
                                          b3, r0):
                        holds = False
                        break
                if not holds:  # this key's search again, every test holding the midpoints too
                    midpoints = True
                    best[:, :] = before
                    lo, hi, probes_left, probing, refining = _fresh_key_search(probes)
                    trial = min(first_length, n - 1 - key)
                    continue
            end = key + lo
            for i in range(k):
                y = columns[chans[i]]
                if lo == 1:  # never tested (one step always passes): fit it now
                    _, _, va, vb, v1, v2, vv, _ = _one_segment(
                        frames, y, key, 1, lims[i], np.nan, ab, table, between, lawson_iterations, ridge, 0.0, np.nan,
                        np.nan, y0[i], False, u, tgt, inv, b1, b2, b3, r0, weights, res)
                    best[i, 0] = va
                    best[i, 1] = vb
                    best[i, 2] = v1
                    best[i, 3] = v2
                    best[i, 4] = vv
                elif free_values and best[i, 4] != y[end]:
                    # the key back on its sample where the segment holds there too (a key on the
                    # captured pose reads better; only lengths that need it keep a value off it):
                    # Lawson at the handle lengths found (a full test again cost 0.3 s on a
                    # 1,500 x 306 clip)
                    npts = _points(frames, y, key, lo, lims[i], between, False, u, tgt, inv)
                    e, v1, v2, vv = _lawson_at(best[i, 0], best[i, 1], u, tgt, inv, npts, lo - 1, y0[i], y[end],
                                               frames[end] - frames[key], np.nan, lims[i], lawson_iterations, ridge,
                                               np.inf, b1, b2, b3, r0, weights, res, False)
                    if e <= lims[i]:
                        best[i, 2] = v1
                        best[i, 3] = v2
                        best[i, 4] = vv
                for r in range(5):
                    fits[i, r, count - 1] = best[i, r]
                y0[i] = best[i, 4]
            key = end
            keys[count] = key
            count += 1
            if key >= n - 1 or key >= stop_at:
                return count
            first_length = max(lo, 2)
            lo, hi, probes_left, probing, refining = _fresh_key_search(probes)
            midpoints = False
            before[:, :] = best
        if not probing:
            room = n - 1 - key
            if refining:
                nxt = min(lo + 1, room)
            elif lo == 1 and hi == 0:
                nxt = min(first_length, room)
            elif hi == 0:
                nxt = min(lo * 2, room)
            else:
                nxt = (lo + hi) // 2
            trial = max(nxt, 1)


def _bezier_values(frames, y0, y1, alpha, beta, c1, c2, out):  # pragma: no cover - compiled
    """Channel i's Bezier segment over ``frames`` (its keys at the first and the last) at the frames
    in between, as Blender evaluates it: x(t) = the frame solved by :func:`_solve_t`, each from the
    last t (the frames increase)."""
    x0 = frames[0]
    last = frames.shape[0] - 1
    span = frames[last] - x0
    for i in range(y0.shape[0]):
        q1 = alpha[i]
        q2 = 1.0 - beta[i]
        t = 0.0
        for j in range(last - 1):
            t = _solve_t((frames[j + 1] - x0) / span, q1, q2, t)
            s = 1.0 - t
            out[j, i] = s * s * s * y0[i] + 3.0 * s * s * t * c1[i] + 3.0 * s * t * t * c2[i] + t * t * t * y1[i]


compile_lazily(globals(), ("_points", "_end_point", "_bernstein", "_basis", "_gram", "_coefficients", "_max_error",
                           "_lawson", "_cascade", "_lawson_at", "_one_segment", "_batch", "_search_unit", "_solve_t",
                           "_refine", "_scratch", "_bezier_values", "_holds_between", "_fresh_key_search"))

# Fewer segments than this run in the calling thread.
_SPLIT_MIN = 16


def fit_segment_batch(frames, columns, chan, start, length, limit, slope, ab, table, between, lawson_iterations,
                      ridge, refine_gate=None, start_alpha=None, start_beta=None, warm_decides=None):
    """Run the cascade on n segments: channel ``chan`` (row of ``columns``, C-contiguous), first sample
    ``start``, ``length`` samples, accepted error ``limit``, fixed first slope ``slope`` (NaN: free).
    Segments the cascade misses by at most ``refine_gate`` (n,) times their limit get their handle
    lengths refined (0 or None: never); where ``start_alpha`` and ``start_beta`` (n,) are not NaN
    (and the gate is not 0), those lengths are tried and refined before the cascade; where
    ``warm_decides`` (n,) is true, refined and still failing, the segment fails without the cascade
    (:func:`_search_unit`'s units of one channel; None: nowhere).

    Returns ``(ok, pair, alpha, beta, c1, c2, error)``, each shape (n,): ``pair`` the table's best
    pair, ``alpha`` and ``beta`` the handle lengths found (the pair's unless refined).
    """
    n = int(np.size(chan))
    ok = np.zeros(n, np.bool_)
    pair = np.zeros(n, np.int64)
    alpha = np.zeros(n)
    beta = np.zeros(n)
    c1 = np.zeros(n)
    c2 = np.zeros(n)
    error = np.zeros(n)
    if not n:
        return ok, pair, c1, c2, error
    args = (np.ascontiguousarray(frames, dtype=np.float64), np.ascontiguousarray(columns, dtype=np.float64),
            np.ascontiguousarray(chan, dtype=np.int64), np.ascontiguousarray(start, dtype=np.int64),
            np.ascontiguousarray(length, dtype=np.int64), np.ascontiguousarray(limit, dtype=np.float64),
            np.ascontiguousarray(slope, dtype=np.float64), np.ascontiguousarray(ab, dtype=np.float64),
            np.ascontiguousarray(table, dtype=np.float64), bool(between), int(lawson_iterations), float(ridge),
            *(np.full(n, fill) if given is None else np.ascontiguousarray(np.broadcast_to(given, (n,)), dtype=np.float64)
              for given, fill in ((refine_gate, 0.0), (start_alpha, np.nan), (start_beta, np.nan))),
            np.zeros(n, np.bool_) if warm_decides is None else np.ascontiguousarray(np.broadcast_to(warm_decides, (n,)),
                                                                                    dtype=np.bool_))
    outputs = (ok, pair, alpha, beta, c1, c2, error)
    parts = 1 if n < _SPLIT_MIN or THREADS == 1 else THREADS
    if parts == 1:
        _batch(*args, 0, 1, *outputs)
        return outputs
    # Every parts-th segment to each thread: the batch mixes short and long segments, so
    # interleaving shares the work out evenly.
    jobs = [_pool().submit(_batch, *args, first, parts, *outputs) for first in range(1, parts)]
    _batch(*args, 0, parts, *outputs)  # the calling thread takes a share too
    for job in jobs:
        job.result()
    return outputs


def bezier_values(frames, y0, y1, alpha, beta, c1, c2) -> np.ndarray:
    """Bezier segments of k channels over the same frames, at the frames in between: (len(frames) - 2, k).

    Channel i's segment runs from ``y0[i]`` at ``frames[0]`` to ``y1[i]`` at ``frames[-1]``, with
    handle lengths ``alpha[i]``, ``beta[i]`` (fractions of the segment) and inner values ``c1[i]``,
    ``c2[i]``; x(t) = the frame is solved to float64's precision, as Blender evaluates a segment.
    """
    frames = np.ascontiguousarray(frames, dtype=np.float64)
    y0, y1, alpha, beta, c1, c2 = (np.ascontiguousarray(a, dtype=np.float64) for a in (y0, y1, alpha, beta, c1, c2))
    out = np.empty((max(frames.size - 2, 0), y0.size))
    if out.size:
        _bezier_values(frames, y0, y1, alpha, beta, c1, c2, out)
    return out
