"""Issue 17's rows of the fit benchmark: ours EXACT (the core's exhaustive search written to Blender),
Decimate at ours FEWEST's key count, Blender's Clean Keyframes, and the goal lines for the
Fewest Keys mode.

Every row is measured like the others (:func:`~benchmarking.fit_measure.measure`): keys written to a
copy of the clip's action, errors through Blender's ``fcurve.evaluate`` at every original frame, keyed
frames and broken handles counted from the F-curves (:func:`~benchmarking.fit_measure.key_stats`).
"""

from __future__ import annotations

import math
import statistics
import time

import _blender_env as be
import numpy as np

from . import report
from .fit_measure import BEZIER_FLOATS, Clip, anim_signals, bpy, fit_input, key_stats, measure, na_row
from .fit_peers import _decimate_copy, _decimate_row, _search_margin

EXACT_MAX_SAMPLES = 400  # the core's limit for search='EXACT' (read from the core when it has one)
GOAL_FEWEST_RATIO = 0.4  # ours FEWEST keys / Decimate keys
GOAL_FEWEST_S = 2.0  # seconds per clip of up to 1,500 frames x 306 curves
GOAL_MAX_FRAMES, GOAL_MAX_CURVES = 1500, 306


def exact_max_samples() -> int:
    if anim_signals is None:
        return EXACT_MAX_SAMPLES
    try:
        from anim_signals.splines import key_reduction

        return int(getattr(key_reduction, "EXACT_MAX_SAMPLES", EXACT_MAX_SAMPLES))
    except Exception:
        return EXACT_MAX_SAMPLES


# --------------------------------------------------------------------------------------------------
# Bezier keys into a copy of the action


def _enum_ints(prop: str) -> dict[str, int]:
    return {e.identifier: e.value for e in bpy.types.Keyframe.bl_rna.properties[prop].enum_items}


def write_curves(clip: Clip, curves, name: str):
    """A copy of the clip's action whose F-curve j holds ``curves[j]`` (FREE handles, BEZIER), stored
    as Blender stores keys (float32). Returns (action, F-curves in the clip's column order)."""
    act = clip.action.copy()
    act.name = name
    fcs = be.action_fcurves(clip.ob, act)
    if len(fcs) != len(curves):
        bpy.data.actions.remove(act)
        raise ValueError(f"{len(curves)} curves for {len(fcs)} F-curves")
    handle = _enum_ints("handle_left_type")
    bezier = _enum_ints("interpolation")["BEZIER"]
    for fc, c in zip(fcs, curves):
        k = c.n_keys
        kps = fc.keyframe_points
        kps.clear()
        kps.add(k)
        kps.foreach_set("co", np.asarray(c.co, np.float32).ravel())
        kps.foreach_set("handle_left", np.asarray(c.handle_left, np.float32).ravel())
        kps.foreach_set("handle_right", np.asarray(c.handle_right, np.float32).ravel())
        types = [handle[str(t)] for t in np.asarray(c.handle_type).tolist()]
        kps.foreach_set("handle_left_type", types)
        kps.foreach_set("handle_right_type", types)
        kps.foreach_set("interpolation", [bezier] * k)
        fc.update()
    return act, fcs


def exact_row(clip: Clip, args):
    """ours EXACT: ``anim_signals.fewest_keys(..., search='EXACT')`` on the operator's fit input (Euler
    angles unwrapped), written to a copy of the action and measured there. At most the core's sample
    limit; ``args.exact_timeout`` seconds (the search is cancelled through its progress callback)."""
    method = "ours EXACT"
    if anim_signals is None or not hasattr(anim_signals, "fewest_keys"):
        return na_row(clip, method, "n/a: anim_signals.fewest_keys not importable")
    n, limit = len(clip.frames), exact_max_samples()
    if n > limit:
        return na_row(clip, method, f"n/a: EXACT tests every pair of samples (cubic time), at most {limit} "
                                    f"samples; this clip has {n} frames")
    cap = int(getattr(args, "exact_max_frames", 0) or 0)
    if 0 < cap < n:
        return na_row(clip, method, f"n/a: not run on clips over {cap} frames in this run (--exact-max-frames; "
                                    f"this clip has {n}), for time")
    values = fit_input(clip)
    t0 = time.perf_counter()
    timeout = float(getattr(args, "exact_timeout", 0) or 0)

    def progress(_p):
        return timeout > 0 and time.perf_counter() - t0 > timeout

    try:
        fit = anim_signals.fewest_keys(values, clip.frames, clip.tol, search="EXACT", progress=progress)
    except Exception as ex:  # FitCancelled on the timeout
        secs = time.perf_counter() - t0
        if timeout > 0 and secs > timeout:
            return na_row(clip, method, f"n/a: stopped after {secs:.0f} s (--exact-timeout {timeout:g})")
        return na_row(clip, method, f"n/a: {ex!r}")
    secs = time.perf_counter() - t0
    act, fcs = write_curves(clip, fit.curves, f"{clip.action.name}_exact")
    try:
        approx = be.sample_fcurves(fcs, clip.frames)
        keys = be.count_keys(fcs)
        note = f"core fewest_keys(search='EXACT'), fit time only; core within_tolerance={fit.within_tolerance}"
        if getattr(fit, "repaired_segments", 0):
            note += f", {fit.repaired_segments} segments repaired"
        row = measure(clip, approx, method=method, keys=keys, floats=keys * BEZIER_FLOATS, seconds=secs, action=act,
                      note=note, args=args, fcurves=fcs)
        try:
            from anim_signals.splines.bezier import broken_handles

            row["broken_keys_core"] = int(sum(broken_handles(c) for c in fit.curves))
        except Exception:  # pragma: no cover - an older core
            row["broken_keys_core"] = None
        if row["broken_keys_core"] is not None and row["broken_keys_core"] != row["broken_keys"]:
            row["note"] += f"; broken_handles() on the core's curves says {row['broken_keys_core']}"
    finally:
        be.assign_action(clip.ob, clip.action)
        bpy.data.actions.remove(act)
    return row


# --------------------------------------------------------------------------------------------------
# Decimate at ours FEWEST's key count


def decimate_equal_keys(clip: Clip, args, target: int, margins: dict[str, float], steps: int = 9):
    """Decimate with every kind's margin scaled by one factor f (the margins that met the tolerance as
    f = 1), f searched (doubling, then bisection in log f) for the fewest keys at or above ``target``.
    The row's errors are Decimate's at that key count."""
    method = "Decimate at equal keys"
    be.set_active(clip.ob)
    override = be.graph_editor_override()
    kinds = np.asarray(clip.kinds)
    groups = [g for g in ("rotation", "location", "quaternion", "other") if (kinds == g).any()]
    base = {}
    for g in groups:
        m = float(margins.get(g) or 0.0)
        base[g] = m if m > 0 else float(np.min(clip.tol[kinds == g]))

    def plan(f):
        return [(f * base[g], np.flatnonzero(kinds == g)) for g in groups]

    trials = []

    def keys_at(f):
        act, fcs, _ = _decimate_copy(clip, override, plan(f), "bench_equal_keys")
        n = be.count_keys(fcs)
        be.assign_action(clip.ob, clip.action)
        bpy.data.actions.remove(act)
        trials.append((f, n))
        return n

    lo, hi = 1.0, None  # lo: keys >= target, hi: keys < target
    f = 1.0
    if keys_at(f) < target:
        return na_row(clip, method, f"n/a: Decimate at the tolerance margins already keeps fewer than {target} keys")
    for _ in range(steps):
        f = f * 2.0 if hi is None else math.sqrt(lo * hi)
        if keys_at(f) >= target:
            lo = f
        else:
            hi = f
        if hi is not None and hi / lo < 1.02:
            break
    ok = [(n, -f) for f, n in trials if n >= target]
    n_best, neg_f = min(ok)
    f = -neg_f
    row = _decimate_row(clip, override, plan(f), f"{clip.action.name}_decimated_equal", args, method=method,
                        note=f"margins × {f:.3g} ({', '.join(f'{g} {f * base[g]:.4g}' for g in groups)}), "
                             f"target {target} keys (ours FEWEST), {len(trials)} trials")
    row["equal_keys_search"] = {"target": target, "trials": trials, "factor": f}
    return row


# --------------------------------------------------------------------------------------------------
# Clean Keyframes


def _clean(override, threshold):
    with bpy.context.temp_override(**override):
        res = bpy.ops.graph.clean('EXEC_DEFAULT', threshold=float(threshold), channels=False)
    if 'FINISHED' not in res:
        raise RuntimeError(f"graph.clean returned {res}")


def clean_peer(clip: Clip, args):
    """Graph Editor Clean Keyframes (``graph.clean``), its threshold searched per channel kind like
    Decimate's margin until every frame is within tolerance."""
    be.set_active(clip.ob)
    override = be.graph_editor_override()
    kinds = np.asarray(clip.kinds)
    thresholds, search = {}, {}
    t0 = time.perf_counter()
    for g in [k for k in ("rotation", "location", "quaternion", "other") if (kinds == k).any()]:
        cols = np.flatnonzero(kinds == g)
        thresholds[g], search[g], _ = _search_margin(clip, override, cols, args.decimate_steps, op=_clean,
                                                     oracle=False)
    search_s = time.perf_counter() - t0
    plan = [(m, np.flatnonzero(kinds == g)) for g, m in thresholds.items()]
    row = _decimate_row(clip, override, plan, f"{clip.action.name}_cleaned", args, op=_clean,
                        method="Blender Clean Keyframes",
                        note="threshold per kind: " + ", ".join(f"{g} {m:.4g}" for g, m in thresholds.items()))
    row["clean_search"] = {"seconds": search_s, "trials": search, "thresholds": thresholds}
    return row


# --------------------------------------------------------------------------------------------------
# the goals of issue 17


def _by_method(rows):
    return {r["method"]: r for r in rows}


def _ratio(a, b):
    return a / b if a is not None and b else None


def goal_cells(clip_name, shape, rows):
    """One row of the Fewest Keys goals table and its (keys ratio to Decimate, FEWEST seconds)."""
    by = _by_method(rows)
    fw = by.get("ours FEWEST", {})
    k = fw.get("keys")
    dec = by.get("Blender Decimate", {}).get("keys")
    auto = by.get("ours AUTO", {}).get("keys")
    ex = by.get("ours EXACT", {})
    eq = by.get("Decimate at equal keys", {})
    cl = by.get("Blender Clean Keyframes", {}).get("keys")
    secs = fw.get("seconds")
    r = _ratio(k, dec)
    in_goal_size = shape[0] <= GOAL_MAX_FRAMES and shape[1] <= GOAL_MAX_CURVES
    eq_err = eq.get("max_error") or {}
    cells = (
        clip_name, f"{shape[0]}×{shape[1]}", report.fmt(k), report.fmt(fw.get("keyed_frames")),
        report.fmt(fw.get("broken_keys")), report.fmt(dec),
        report.fmt(r) + (" ✓" if r is not None and r <= GOAL_FEWEST_RATIO else ""),
        report.fmt(auto), report.fmt(_ratio(k, auto)),
        report.fmt(ex.get("keys")) if ex.get("keys") is not None else "n/a",
        report.fmt(_ratio(k, ex.get("keys"))),
        report.fmt(secs) + (" ✓" if secs is not None and in_goal_size and secs < GOAL_FEWEST_S else ""),
        report.fmt(eq.get("keys")),
        " / ".join(f"{report.fmt(eq_err[g])}{'°' if g == 'rotation' else ''}" for g in ("rotation", "location")
                   if g in eq_err) or "—",
        report.fmt(cl),
    )
    return cells, r, secs


def summary_lines(results) -> list[str]:
    """The Fewest Keys goals table and lines (clips without an ours FEWEST row are left out)."""
    rows = [(n, s, r) for n, s, r in results if any(x["method"] == "ours FEWEST" and x.get("keys") for x in r)]
    if not rows:
        return []
    goals = [goal_cells(n, s, r) for n, s, r in rows]
    lines = ["## Fewest Keys (issue 17)", ""]
    lines += report.table(
        ("clip", "frames × curves", "FEWEST keys", "keyed frames", "broken", "Decimate keys",
         f"FEWEST / Decimate (goal ≤ {GOAL_FEWEST_RATIO})", "AUTO keys", "FEWEST / AUTO", "EXACT keys",
         "FEWEST / EXACT", f"FEWEST s (goal < {GOAL_FEWEST_S:g})", "Decimate keys at equal count",
         "its max error", "Clean keys"),
        "llrrrrrrrrrrrlr", (c for c, _, _ in goals))
    lines.append("")
    kr = [r for _, r, _ in goals if r is not None]
    ts = [(s, n) for (c, r, s), (n, sh, _) in zip(goals, rows) if s is not None
          and sh[0] <= GOAL_MAX_FRAMES and sh[1] <= GOAL_MAX_CURVES]
    if kr:
        lines.append(f"- Keys ours FEWEST / Blender Decimate: median {statistics.median(kr):.3f}, worst {max(kr):.3f}; "
                     f"{sum(r <= GOAL_FEWEST_RATIO for r in kr)}/{len(kr)} clips meet the goal ≤ {GOAL_FEWEST_RATIO}.")
    if ts:
        worst = max(ts)
        lines.append(f"- ours FEWEST time per clip (operator: read, fit, write): median "
                     f"{statistics.median(s for s, _ in ts):.2f} s, worst {worst[0]:.2f} s ({worst[1]}); "
                     f"{sum(s < GOAL_FEWEST_S for s, _ in ts)}/{len(ts)} clips meet the goal < {GOAL_FEWEST_S:g} s "
                     f"(clips of up to {GOAL_MAX_FRAMES:,} frames × {GOAL_MAX_CURVES} curves).")
    ed = [_ratio(_by_method(r).get("ours EDITABLE", {}).get("keys"), _by_method(r).get("Blender Decimate", {}).get("keys"))
          for _n, _s, r in rows]
    ed = [x for x in ed if x is not None]
    if ed:
        lines.append(f"- Keys ours EDITABLE / Blender Decimate: median {statistics.median(ed):.3f}, worst {max(ed):.3f}; "
                     f"{sum(x <= 0.55 for x in ed)}/{len(ed)} clips meet the goal ≤ 0.55.")
    for kind, unit in (("rotation", "°"), ("location", "")):
        eq = [(_by_method(r).get("Decimate at equal keys", {}).get("max_error") or {}).get(kind) for _n, _s, r in rows]
        ours = [(_by_method(r)["ours FEWEST"].get("max_error") or {}).get(kind) for _n, _s, r in rows]
        pairs = [(a, b) for a, b in zip(eq, ours) if a is not None and b]
        if pairs:
            lines.append(f"- Decimate at ours FEWEST's key count, max {kind} error: median "
                         f"{statistics.median(a for a, _ in pairs):.3g}{unit} (worst {max(a for a, _ in pairs):.3g}{unit}), "
                         f"{statistics.median(a / b for a, b in pairs):.3g}× ours FEWEST's (median).")
    ex = [(n, _by_method(r)["ours FEWEST"]["keys"], _by_method(r)["ours EXACT"]["keys"]) for n, _s, r in rows
          if (_by_method(r).get("ours EXACT") or {}).get("keys")]
    if ex:
        extra = [a / b - 1.0 for _, a, b in ex]
        lines.append(f"- ours FEWEST (FAST search) vs EXACT on {len(ex)} clips: {sum(a for _, a, _ in ex)} vs "
                     f"{sum(b for _, _, b in ex)} keys, FAST keeps {100 * statistics.median(extra):.1f} % more "
                     f"(median; {100 * min(extra):.1f} to {100 * max(extra):.1f} %).")
    bad = [(n, x["method"]) for n, _s, r in rows for x in r
           if x["method"] in ("ours FEWEST", "ours EXACT", "ours EDITABLE") and x.get("outside")]
    lines.append("- Frames outside the tolerance (strict, under fcurve.evaluate) in ours FEWEST / EXACT / EDITABLE: "
                 + ("none." if not bad else "; ".join(f"{n} {m}" for n, m in bad) + " (see the rows' notes)."))
    mism = [(n, x["method"]) for n, _s, r in rows for x in r
            if x.get("broken_keys_reported") is not None and x.get("broken_keys") is not None
            and x["broken_keys_reported"] != x["broken_keys"]]
    mism += [(n, x["method"]) for n, _s, r in rows for x in r
             if x.get("broken_keys_core") is not None and x["broken_keys_core"] != x.get("broken_keys")]
    lines.append("- Broken handles counted here from Blender's F-curves vs the operator's report "
                 "(last_fit.broken_keys) and broken_handles() on the core's curves: "
                 + ("they agree on every clip." if not mism else "differ on " + ", ".join(f"{n} {m}" for n, m in mism)
                    + "."))
    lines.append("")
    return lines


__all__ = ["clean_peer", "decimate_equal_keys", "exact_row", "key_stats", "summary_lines", "write_curves"]
