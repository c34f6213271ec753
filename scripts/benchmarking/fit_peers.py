"""The fit benchmark's peers, each run on the same :class:`~benchmarking.fit_measure.Clip` as ours:

* Blender's Graph Editor Decimate (ERROR mode, run headless with a window/area override), its margin
  searched per channel kind, and the best of those margins per F-curve (an oracle-like Decimate);
* a uniform B-spline with ours LATENT's control points (``anim_signals.fit_uniform_spline``);
* the seed method as published: RMS-optimal shared knots (``fit_latent_spline(internal_knots=K)``);
* scipy FITPACK's adaptive knots at ours' knot count (``make_splrep`` / ``make_splprep``).
"""

from __future__ import annotations

import math
import time

import _blender_env as be
import numpy as np

from .fit_measure import BEZIER_FLOATS, Clip, anim_signals, bpy, fit_input, measure, na_row

S_TINY = 1e-9  # make_splprep refuses s=0 with nest: a negligible s lets nest cap the knot count


def _decimate(override, margin):
    with bpy.context.temp_override(**override):
        res = bpy.ops.graph.decimate('EXEC_DEFAULT', mode='ERROR', remove_error_margin=float(margin))
    if 'FINISHED' not in res:
        raise RuntimeError(f"graph.decimate returned {res}")


def decimate_action_by_kind(ob, rotation_deg: float, location: float) -> tuple[float, int]:
    """Decimate (ERROR mode) a copy of the action ``ob`` plays, each channel kind at its own margin
    (rotation in degrees, location and other in scene units): (Decimate's seconds, keys left). The
    original action is assigned again and the copy removed."""
    orig = ob.animation_data.action
    act = orig.copy()
    be.assign_action(ob, act)
    try:
        fcs = be.action_fcurves(ob)
        kinds = np.array([be.channel_kind(fc) for fc in fcs])
        override = be.graph_editor_override()
        t0 = time.perf_counter()
        for kind, margin in (("rotation", math.radians(rotation_deg)), ("location", location), ("other", location)):
            sel = kinds == kind
            if not sel.any():
                continue
            for fc, on in zip(fcs, sel, strict=True):
                fc.select = bool(on)
                for kp in fc.keyframe_points:
                    kp.select_control_point = bool(on)
            _decimate(override, margin)
        return time.perf_counter() - t0, be.count_keys(fcs)
    finally:
        be.assign_action(ob, orig)
        bpy.data.actions.remove(act)


def _select_cols(fcs, cols):
    cols = set(int(c) for c in cols)
    for j, fc in enumerate(fcs):
        n = len(fc.keyframe_points)
        sel = j in cols
        fc.select = sel
        fc.hide = False
        for attr in ("select_control_point", "select_left_handle", "select_right_handle"):
            fc.keyframe_points.foreach_set(attr, [sel] * n)


def _decimate_copy(clip, override, margin_cols, name, op=None):
    """A decimated copy of the original action: for each (margin, columns), those curves' keys at that margin.
    Returns (action, its F-curves, seconds spent in graph.decimate). ``op(override, margin)``: another
    Graph Editor reducer than Decimate (Clean Keyframes)."""
    op = op or _decimate
    act = clip.action.copy()
    act.name = name
    be.assign_action(clip.ob, act)
    fcs = be.action_fcurves(clip.ob)
    secs = 0.0
    for m, cols in margin_cols:
        if m > 0 and len(cols):
            _select_cols(fcs, cols)
            t0 = time.perf_counter()
            op(override, m)
            secs += time.perf_counter() - t0
    return act, fcs, secs


def _search_margin(clip, override, cols, steps: int, op=None, oracle: bool = True):
    """One Decimate margin for the curves ``cols``: doubling or halving from the smallest tolerance, then
    bisection, ``steps`` trials; keeps the margin with the fewest keys whose every frame is in tolerance
    (margin 0, every key kept, if none is). Then a few larger margins for the per-curve oracle.

    Returns (margin, trials [(margin, all in tolerance, keys)], results [(margin, in tolerance per
    curve, keys per curve)] of every trial). ``op``: the reducer (default Decimate); ``oracle=False``:
    no larger margins after the search.
    """
    ob, orig = clip.ob, clip.action
    tol = clip.tol[cols]
    results = []

    def trial(m):
        act, fcs, _ = _decimate_copy(clip, override, [(m, cols)], "bench_trial", op=op)
        try:
            sub = [fcs[j] for j in cols]
            approx = be.sample_fcurves(sub, clip.frames)
            ok_c = np.all(np.abs(approx - clip.values[:, cols]) <= tol, axis=0)
            keys_c = np.array([len(fc.keyframe_points) for fc in sub])
            results.append((m, ok_c, keys_c))
            return bool(ok_c.all()), int(keys_c.sum())
        finally:
            be.assign_action(ob, orig)
            bpy.data.actions.remove(act)

    trials = []
    best = (0.0, None)
    lo, hi = 0.0, None
    m = float(np.min(tol))
    for _ in range(steps):
        ok, nk = trial(m)
        trials.append((m, ok, nk))
        if ok:
            lo = m
            if best[1] is None or nk <= best[1]:
                best = (m, nk)
        else:
            hi = m
        if hi is None:
            m = m * 2.0
        elif lo == 0.0:
            m = m / 2.0
        else:
            m = math.sqrt(lo * hi)
    base = best[0] if best[0] > 0 else float(np.min(tol))
    for f in (2.0, 4.0, 8.0, 16.0) if oracle else ():
        if not any(abs(r[0] - base * f) < 1e-12 for r in results):
            trial(base * f)
    return best[0], trials, results


def _margin_per_curve(clip, cols, results):
    """For each curve of ``cols``, the tried margin that keeps the fewest of its keys within tolerance."""
    n_all = np.array([len(fc.keyframe_points) for fc in (be.action_fcurves(clip.ob, clip.action)[j] for j in cols)])
    choice = np.zeros(len(cols))
    chosen_keys = n_all.copy()
    for m_r, ok_c, keys_c in results:
        better = ok_c & ((keys_c < chosen_keys) | ((keys_c == chosen_keys) & (m_r > choice)))
        choice[better] = m_r
        chosen_keys[better] = keys_c[better]
    return choice


def _decimate_row(clip, override, plan, name, args, op=None, **row):
    """The row of one timed Decimate (or ``op``) run with ``plan`` [(margin, columns)] on a copy of the action."""
    act, fcs, secs = _decimate_copy(clip, override, plan, name, op=op)
    approx = be.sample_fcurves(fcs, clip.frames)
    keys = be.count_keys(fcs)
    be.assign_action(clip.ob, clip.action)
    out = measure(clip, approx, keys=keys, floats=keys * BEZIER_FLOATS, seconds=secs, action=act, args=args,
                  fcurves=fcs, **row)
    bpy.data.actions.remove(act)
    return out


def decimate_peer(clip: Clip, args, per_curve_row: bool = True):
    """Graph Editor Decimate with its margin searched per channel kind until every frame is in tolerance.

    Returns two rows: one margin per channel kind (what an animator does: select the rotation curves,
    decimate; then the location curves), and the best margin per F-curve among the same trials plus a few
    larger ones (a stronger, oracle-like Decimate: each curve decimated as far as its own tolerance allows;
    ``per_curve_row=False``: not run, nor its larger margins).
    """
    be.set_active(clip.ob)
    override = be.graph_editor_override()
    kinds = np.asarray(clip.kinds)
    margins, search, per_curve = {}, {}, []
    t_search = time.perf_counter()
    for group in [k for k in ("rotation", "location", "quaternion", "other") if (kinds == k).any()]:
        cols = np.flatnonzero(kinds == group)
        margins[group], search[group], results = _search_margin(clip, override, cols, args.decimate_steps,
                                                                oracle=per_curve_row)
        per_curve.append((cols, _margin_per_curve(clip, cols, results)))
    search_s = time.perf_counter() - t_search

    name = clip.action.name
    plan = [(m, np.flatnonzero(kinds == g)) for g, m in margins.items()]
    by_kind = _decimate_row(clip, override, plan, f"{name}_decimated", args, method="Blender Decimate",
                            note="margin per kind: " + ", ".join(f"{g} {m:.4g}" for g, m in margins.items()))
    by_kind["decimate_search"] = {"seconds": search_s, "trials": search, "margins": margins}
    if not per_curve_row:
        return [by_kind]
    plan = [(float(m), cols[choice == m]) for cols, choice in per_curve for m in np.unique(choice)]
    by_curve = _decimate_row(clip, override, plan, f"{name}_decimated_per_curve", args,
                             method="Decimate, margin per F-curve",
                             note=f"best of the searched margins for each curve ({len({m for m, _ in plan})} "
                                  "distinct margins)")
    return [by_kind, by_curve]


def decimate_peer_1d(clip: Clip, args):
    """Decimate on an Empty whose location.x holds the 1D curve, one LINEAR key per frame."""
    ob = bpy.data.objects.new(f"bench_{clip.name}", None)
    bpy.context.scene.collection.objects.link(ob)
    ob.animation_data_create()
    ob.location.x = float(clip.values[0, 0])
    ob.keyframe_insert("location", index=0, frame=float(clip.frames[0]))
    fc = be.action_fcurves(ob)[0]
    kps = fc.keyframe_points
    kps.clear()
    n = len(clip.frames)
    kps.add(n)
    kps.foreach_set("co", np.column_stack([clip.frames, clip.values[:, 0]]).astype(np.float32).ravel())
    for kp in kps:
        kp.interpolation = 'LINEAR'
    fc.update()
    clip.ob, clip.action = ob, ob.animation_data.action
    return decimate_peer(clip, args)


def spline_row(clip: Clip, method: str, fit, *, knots_stored: int, describe, args=None):
    """The row of a core B-spline model ``fit(values, frames)``: keys = its distinct knots x channels,
    floats = control points x channels + ``knots_stored``; ``describe(model)`` is the note."""
    if anim_signals is None:
        return na_row(clip, method, "core not importable")
    values = fit_input(clip)
    t0 = time.perf_counter()
    model = fit(values, clip.frames)
    secs = time.perf_counter() - t0
    n_ctrl = model.control_points.shape[0]
    return measure(clip, model.evaluate(clip.frames), method=method, keys=model.n_keys * clip.shape[1],
                   floats=n_ctrl * clip.shape[1] + knots_stored, seconds=secs, note=describe(model), args=args)


def uniform_peer(clip: Clip, internal_knots: int, args):
    """A uniform B-spline with ``internal_knots`` knots (as many control points as ours LATENT)."""
    k = int(internal_knots)
    return spline_row(clip, "uniform B-spline",
                      lambda v, f: anim_signals.fit_uniform_spline(v, f, internal_knots=k), knots_stored=0,
                      describe=lambda _m: f"{internal_knots} internal knots (= ours LATENT's control points)",
                      args=args)


def seed_method_row(clip: Clip, internal_knots: int, args):
    """The seed's method as published: RMS-optimal shared knots (CMA-ES) with a fixed knot count."""
    k = int(internal_knots)
    return spline_row(clip, "seed method (RMS knots)",
                      lambda v, f: anim_signals.fit_latent_spline(v, f, internal_knots=k, seed=0), knots_stored=k,
                      describe=lambda m: f"fit_latent_spline(internal_knots={internal_knots}), "
                                         f"{m.n_components} PCs, {m.iterations} CMA iterations", args=args)


def scipy_peer(clip: Clip, n_distinct: int, args):
    """FITPACK's adaptive knots (``make_splrep`` / ``make_splprep`` with a negligible ``s`` and ``nest``
    capping the knot vector) with ``n_distinct`` distinct knots, channels scaled by their tolerance;
    control points then by least squares on those knots (``make_lsq_spline``), FITPACK's best fit."""
    import warnings

    from scipy.interpolate import make_lsq_spline, make_splprep, make_splrep

    values = fit_input(clip)
    scale = clip.tol
    mean = values.mean(axis=0)
    y = (values - mean) / scale
    k = 3
    one_d = clip.shape[1] == 1
    name = "scipy make_splrep" if one_d else "scipy make_splprep"
    target = max(int(n_distinct), 2)
    nest = target + 2 * k
    t0 = time.perf_counter()
    knots = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(30):
            if one_d:
                spl = make_splrep(clip.frames, y[:, 0], k=k, s=S_TINY, nest=max(nest, 2 * k + 2))
            else:
                spl, _u = make_splprep([y[:, j] for j in range(y.shape[1])], u=clip.frames, k=k, s=S_TINY,
                                       nest=max(nest, 2 * k + 2))
            knots = spl.t
            got = np.unique(knots).size
            if got <= target or nest <= 2 * k + 2:
                break
            nest -= got - target
        lsq = make_lsq_spline(clip.frames, y, knots, k=k)
    secs = time.perf_counter() - t0
    approx = np.asarray(lsq(clip.frames)).reshape(len(clip.frames), -1) * scale + mean
    distinct = np.unique(knots).size
    n_ctrl = len(knots) - k - 1
    return measure(clip, approx, method=name, keys=distinct * clip.shape[1],
                   floats=n_ctrl * clip.shape[1] + max(len(knots) - 2 * (k + 1), 0), seconds=secs,
                   note=f"{distinct} distinct knots (target {target}), LSQ on FITPACK's knots", args=args)
