"""Fit-spline benchmark: ours vs Blender's Decimate, a uniform B-spline and scipy FITPACK, side by side.

Run from the repository root with the project's venv python (bpy as a module)::

    .venv/bin/python scripts/benchmark_fit.py            # every clip in ../shared/data/mocap + 1D curves
    .venv/bin/python scripts/benchmark_fit.py --quick    # two short clips + 1D curves + timing anchors
    .venv/bin/python scripts/benchmark_fit.py --clips cmu_131_01,angry   # substring filter
    .venv/bin/python scripts/benchmark_fit.py --rows issue17   # just the Fewest Keys rows (issue 17)

Writes ``out/benchmark_fit.md`` and ``out/benchmark_fit.json`` and prints the markdown.

Methods, per clip, on the same data in one run:

* ``ours FEWEST`` (the operator's default mode; ``ours EDITABLE`` too where the operator has that mode) /
  ``ours LATENT`` / ``ours PER_CHANNEL`` / ``ours AUTO``: the extension's operator
  ``bpy.ops.anim_signals.fit_latent_spline`` on the imported action (1D curves: ``anim_signals.fit_channels``),
  rotation 0.5 deg, location 0.01 (1D curves: 1 % of the range).
* ``Decimate``: Blender's Graph Editor Decimate (ERROR mode) run headless; its error margin is searched
  separately for rotation and location channels until the max value error measured with
  ``fcurve.evaluate`` at every original frame is within the same tolerances. Keys kept.
* ``ours EXACT``: ``anim_signals.fewest_keys(..., search='EXACT')`` on the same fit input, written to a copy
  of the action (clips of at most 400 frames, the core's limit).
* ``Decimate at equal keys``: Decimate's margins scaled by one factor, searched so that its keys come closest
  to ours FEWEST's at or above; its errors at that count.
* ``Blender Clean Keyframes``: ``graph.clean``, its threshold searched per kind like Decimate's margin.
* ``uniform B-spline``: ``anim_signals.fit_uniform_spline`` with ours-LATENT's internal knot count.
* ``scipy make_splprep`` (``make_splrep`` in 1D): FITPACK's adaptive knots (``s=0``, ``nest``) with the
  same number of distinct knots as ours LATENT (1D: ours AUTO), channels scaled by their tolerance.

All errors are measured by this script, independently of the code under test: Bezier-key methods through
Blender's own ``fcurve.evaluate`` at every original frame, B-spline models by their ``evaluate``. The
peers are in ``benchmarking/fit_peers.py``, the clip and its result rows in ``benchmarking/fit_measure.py``,
what the four benchmarks share to report in ``benchmarking/report.py``; this file runs ours, drives each
clip and writes the tables. How the fit's time and memory grow with the clip's length (up to 10k frames x
100 curves, 100k x 3): ``benchmarking/fit_scaling.py``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blender_env as be  # noqa: E402
import numpy as np  # noqa: E402
from benchmarking import fit_fewest, report  # noqa: E402
from benchmarking.fit_measure import (  # noqa: E402
    BEZIER_FLOATS,
    CORE_ERROR,
    Clip,
    anim_signals,
    bpy,
    fit_input,
    measure,
    na_row,
)
from benchmarking.fit_peers import (  # noqa: E402
    decimate_peer,
    decimate_peer_1d,
    scipy_peer,
    seed_method_row,
    spline_row,
    uniform_peer,
)

log = report.log
fmt = functools.partial(report.fmt, digits_from_one=4)

DATA_DIR = be.REPO_ROOT.parent / "shared" / "data" / "mocap"
QUICK_CLIPS = ("angry_13_000", "depressed_18_000")
ANCHOR_CLIP = "cmu_131_03"  # 1102 frames x 96 channels, cropped to 1000 frames
GOAL_KEYS_RATIO = 0.7
GOAL_ED_RATIO = 0.6
GOAL_1D_MS = 19.0
GOAL_CLIP_S = 5.0
TOLERANCE_METHODS = ("ours LATENT", "ours PER_CHANNEL", "ours AUTO", "ours FEWEST", "ours EDITABLE", "ours EXACT",
                     "Blender Decimate", "Decimate, margin per F-curve",
                     "Blender Clean Keyframes")  # rows marked ✗ when a frame is outside the tolerance
ROW_GROUPS = ("latent", "auto", "fewest", "exact", "decimate", "decimate_per_curve", "clean", "1d", "anchors")
ROW_ALIASES = {"all": ROW_GROUPS, "issue17": ("auto", "fewest", "exact", "decimate", "clean")}
SEED_SETUP = dict(internal_knots=4, population=100, max_iterations=12)  # the seed's 1D timing setup


# --------------------------------------------------------------------------------------------------
# generated 1D curves (Yoshimoto et al. 2003 / Galvez & Iglesias 2011 test functions), x in [0, 1]


def _discontinuity(x):
    # Piecewise rational function with a jump at x = 0.6 (the discontinuous test function as used by
    # Galvez & Iglesias 2011 after Yoshimoto et al. 2003, as we recall it): two Lorentzian peaks,
    # 1/(0.01+(x-0.3)^2) left of 0.6 and 1/(0.015+(x-0.65)^2) from 0.6 on.
    return np.where(x < 0.6, 1.0 / (0.01 + (x - 0.3) ** 2), 1.0 / (0.015 + (x - 0.65) ** 2))


GENERATED = {
    "cliff": lambda x: 90.0 / (1.0 + np.exp(-100.0 * (x - 0.4))),
    "big_spike": lambda x: 100.0 * np.exp(-np.abs(10.0 * x - 5.0)) + (10.0 * x - 5.0) ** 5 / 500.0,
    "discontinuity": _discontinuity,
    "smooth_peak": lambda x: np.sin(x) + 2.0 * np.exp(-30.0 * x**2),
}


def generated_curve(name: str):
    frames = np.arange(101, dtype=float)  # one key per frame, x = frame / 100
    return frames, GENERATED[name](frames / 100.0)


# --------------------------------------------------------------------------------------------------
# ours


def ours_operator(clip: Clip, mode: str, args):
    ob, orig = clip.ob, clip.action
    be.assign_action(ob, orig)
    ctx = be.object_override(ob)
    t0 = time.perf_counter()
    with bpy.context.temp_override(**ctx):
        res = bpy.ops.anim_signals.fit_latent_spline(
            channels='ALL', mode=mode, max_error_rotation=args.rot, max_error_location=args.loc,
            max_error_other=args.other, keep_original=True, seed=0, **continuity_kw(args, operator=True))
    secs = time.perf_counter() - t0
    if 'FINISHED' not in res:
        be.assign_action(ob, orig)
        return na_row(clip, f"ours {mode}", f"operator returned {res}"), None
    fitted = ob.animation_data.action
    fcs = be.action_fcurves(ob)
    # match F-curves by (data_path, index): the operator may reorder
    by_key = {be.channel_key(fc): fc for fc in fcs}
    orig_keys = [be.channel_key(fc) for fc in be.action_fcurves(ob, orig)]
    sub = [by_key.get(k) for k in orig_keys]
    if any(fc is None for fc in sub):
        be.assign_action(ob, orig)
        return na_row(clip, f"ours {mode}", "fitted action lacks some F-curves"), None
    approx = be.sample_fcurves(sub, clip.frames)
    counts = [len(fc.keyframe_points) for fc in sub]
    keys = sum(counts)
    be.assign_action(ob, orig)
    note = "operator" + (" (its default mode)" if mode == OPERATOR_DEFAULT_MODE[0] else "")
    row = measure(clip, approx, method=f"ours {mode}", keys=keys, floats=keys * BEZIER_FLOATS,
                  seconds=secs, action=fitted, note=note, args=args, fcurves=sub)
    row["load_average_1min"] = os.getloadavg()[0]  # other processes on the machine slow the timing
    if mode == "FEWEST" and anim_signals is not None:  # the fit alone, for where the operator's time goes
        t0 = time.perf_counter()
        anim_signals.fit_channels(fit_input(clip), clip.frames, clip.tol, mode=mode)
        row["core_seconds"] = time.perf_counter() - t0
        row["note"] += f"; fit_channels alone {row['core_seconds']:.2f} s"
    last = getattr(getattr(bpy.context.scene, "anim_signals", None), "last_fit", None)
    for name in ("keyed_frames", "broken_keys"):
        if last is not None and hasattr(last, name):
            row[f"{name}_reported"] = int(getattr(last, name))
    if row.get("broken_keys_reported") not in (None, row["broken_keys"]):
        row["note"] += f"; the operator reports {row['broken_keys_reported']} broken handles"
    if row.get("keyed_frames_reported") not in (None, row["keyed_frames"]):
        row["note"] += f"; the operator reports {row['keyed_frames_reported']} keyed frames"
    if fitted is not orig and fitted is not None:
        bpy.data.actions.remove(fitted)
    return row, np.asarray(counts)


def ours_core(clip: Clip, mode: str, args, note="anim_signals.fit_channels"):
    if anim_signals is None:
        return na_row(clip, f"ours {mode}", f"core not importable: {CORE_ERROR}"), None
    values = fit_input(clip)
    t0 = time.perf_counter()
    fit = anim_signals.fit_channels(values, clip.frames, clip.tol, mode=mode, seed=0, **continuity_kw(args))
    secs = time.perf_counter() - t0
    approx = fit.evaluate(clip.frames)
    counts = np.asarray(fit.knot_counts) if len(fit.knot_counts) else np.array([c.n_keys for c in fit.curves])
    extra = f" (used {fit.mode_used})" if mode == "AUTO" else ""
    row = measure(clip, approx, method=f"ours {mode}", keys=fit.n_keys, floats=fit.n_keys * BEZIER_FLOATS,
                  seconds=secs, note=note + extra, args=args)
    return row, counts


def continuity_kw(args, operator=False):
    """``continuity=`` for the operator / core, if they have that setting (older versions do not)."""
    if not args.continuity_resolved:
        return {}
    if operator and "continuity" not in OPERATOR_PROPS:
        return {}
    return {"continuity": args.continuity_resolved}


OPERATOR_PROPS: set = set()
OPERATOR_MODES: set = set()
OPERATOR_DEFAULT_MODE = [""]


def resolve_continuity(args, use_operator):
    """The key continuity used for every 'ours' row: --continuity, else the operator's default."""
    import inspect

    core_has = anim_signals is not None and "continuity" in inspect.signature(anim_signals.fit_channels).parameters
    if use_operator:
        rna = bpy.ops.anim_signals.fit_latent_spline.get_rna_type()
        OPERATOR_PROPS.update(p.identifier for p in rna.properties)
        if "mode" in OPERATOR_PROPS:
            OPERATOR_MODES.update(e.identifier for e in rna.properties["mode"].enum_items)
            OPERATOR_DEFAULT_MODE[0] = rna.properties["mode"].default
    if args.continuity != "default":
        return args.continuity
    if use_operator and "continuity" in OPERATOR_PROPS:
        return rna.properties["continuity"].default
    if core_has:
        return inspect.signature(anim_signals.fit_channels).parameters["continuity"].default
    return ""


def latent_keys_per_channel(counts):
    """Keys per channel of a LATENT fit (the shared count, ignoring constant channels (1 key) and
    channels that fell back to a key per frame)."""
    counts = np.asarray(counts)
    moving = counts[counts > 1]
    if moving.size == 0:
        return 2
    vals, freq = np.unique(moving, return_counts=True)
    return int(vals[np.argmax(freq)])


def latent_internal_knots(counts, args):
    """Internal knots, with multiplicity, of ours LATENT: the same number of control points per channel
    (C1 keys are double knots)."""
    distinct = max(latent_keys_per_channel(counts) - 2, 0)
    return distinct * (2 if args.continuity_resolved == "C1" else 1)


# --------------------------------------------------------------------------------------------------
# per-clip drivers


def run_clip_bvh(path: Path, args, use_operator: bool):
    be.clear_scene()
    ob = be.import_bvh(path)
    frames, values, fcs, kinds = be.signal_from_object(ob)
    tol = be.tolerance_vector(kinds, args.rot, args.loc, args.other)
    clip = Clip(path.stem, frames, values, kinds, tol, ob=ob, action=ob.animation_data.action,
                is_armature=ob.type == 'ARMATURE')
    clip.labels = [f"{fc.data_path}[{fc.array_index}]" for fc in fcs]
    if clip.is_armature and not args.no_world:
        clip.world_frames = be.spread_frames(frames, args.world_frames)
        clip.world_ref = be.bone_world_positions(ob, clip.world_frames, clip.action)
    rows = []
    original_keys = be.count_keys(fcs)
    rows.append(measure(clip, values, method="original", keys=original_keys,
                        floats=original_keys * 2, seconds=0.0, args=None,
                        note="one key per frame (co only)" + (
                            f"; skeleton height {np.ptp(clip.world_ref[0, :, 2]):.3g} units"
                            if clip.world_ref is not None else "")))
    latent_counts = None
    rows_on = args.row_groups
    modes = [m for m, g in (("LATENT", "latent"), ("PER_CHANNEL", "latent"), ("AUTO", "auto"), ("FEWEST", "fewest"),
                            ("EDITABLE", "fewest")) if g in rows_on]
    if not use_operator or "EDITABLE" not in OPERATOR_MODES:
        modes = [m for m in modes if m != "EDITABLE"]
    for mode in modes:
        log(f"  {clip.name}: ours {mode}")
        if use_operator:
            row, counts = ours_operator(clip, mode, args)
        else:
            row, counts = ours_core(clip, mode, args, note="core (operator not registered)")
        rows.append(row)
        if mode == "LATENT":
            latent_counts = counts
    if "exact" in rows_on:
        log(f"  {clip.name}: ours EXACT")
        t0 = time.perf_counter()
        rows.append(fit_fewest.exact_row(clip, args))
        log(f"    {time.perf_counter() - t0:.1f} s")
    if not args.no_decimate and "decimate" in rows_on:
        log(f"  {clip.name}: Blender Decimate (margin search)")
        dec = decimate_peer(clip, args, per_curve_row="decimate_per_curve" in rows_on)
        rows.extend(dec)
        fewest = next((r for r in rows if r["method"] == "ours FEWEST" and r.get("keys")), None)
        if fewest is not None:
            log(f"  {clip.name}: Decimate at {fewest['keys']} keys (margin search)")
            rows.append(fit_fewest.decimate_equal_keys(clip, args, fewest["keys"],
                                                       dec[0]["decimate_search"]["margins"]))
    if "clean" in rows_on:
        log(f"  {clip.name}: Blender Clean Keyframes (threshold search)")
        rows.append(fit_fewest.clean_peer(clip, args))
    if latent_counts is not None:
        k_int = latent_internal_knots(latent_counts, args)
        log(f"  {clip.name}: uniform B-spline ({k_int} internal knots), scipy")
        rows.append(uniform_peer(clip, k_int, args))
        log(f"  {clip.name}: seed method ({k_int} internal knots)")
        rows.append(seed_method_row(clip, k_int, args))
        rows.append(scipy_peer(clip, latent_keys_per_channel(latent_counts), args))
    return clip, rows


def run_clip_1d(name: str, args):
    be.clear_scene()
    frames, y = generated_curve(name)
    tol = 0.01 * (y.max() - y.min())
    clip = Clip(name, frames, y[:, None], ["other"], [tol])
    rows = [measure(clip, y[:, None], method="original", keys=len(y), floats=2 * len(y), seconds=0.0,
                    note=f"101 samples, tolerance {tol:.4g} (1% of range)")]
    counts_by_mode = {}
    for mode in ("LATENT", "PER_CHANNEL", "AUTO"):
        row, counts = ours_core(clip, mode, args)
        rows.append(row)
        counts_by_mode[mode] = counts
    if not args.no_decimate:
        rows.extend(decimate_peer_1d(clip, args))
    if counts_by_mode.get("LATENT") is not None:
        k_int = latent_internal_knots(counts_by_mode["LATENT"], args)
        rows.append(uniform_peer(clip, k_int, args))
        auto_keys = int(np.sum(counts_by_mode["AUTO"]))
        rows.append(scipy_peer(clip, auto_keys, args))
    # the seed's own setup: 4 internal knots, population 100, 12 iterations vs uniform 4 knots
    rows.append(spline_row(clip, "ours latent, seed setup (4 IK)",
                           lambda v, f: anim_signals.fit_latent_spline(v, f, **SEED_SETUP, seed=0), knots_stored=4,
                           describe=lambda _m: "fit_latent_spline(internal_knots=4, population=100, max_iterations=12)"))
    rows.append(spline_row(clip, "uniform B-spline (4 IK)",
                           lambda v, f: anim_signals.fit_uniform_spline(v, f, internal_knots=4), knots_stored=0,
                           describe=lambda _m: "seed comparison"))
    return clip, rows


# --------------------------------------------------------------------------------------------------
# timing anchors


def anchor_1d(args):
    out = {}
    if anim_signals is None:
        return out
    for name in ("cliff", "big_spike", "smooth_peak"):
        _frames, y = generated_curve(name)
        median, runs, _ = report.timed(lambda y=y: anim_signals.fit_latent_spline(y[:, None], **SEED_SETUP), args.repeats)
        out[name] = {"median_ms": median * 1000.0, "runs_ms": [r * 1000.0 for r in runs]}
    out["pycma alone"] = pycma_floor(args.repeats)
    out["batched CMA-ES alone"] = batched_floor(args.repeats)
    return out


def pycma_floor(repeats):
    """pycma's own cost in the seed's setting: ask/tell on 5 increments (4 knots), population 100,
    12 iterations, with an objective that costs nothing (the floor of any pycma-based search)."""
    import cma

    def run():
        es = cma.CMAEvolutionStrategy(np.full(5, 0.2), 0.05, {"popsize": 100, "maxiter": 12, "seed": 1,
                                                               "verbose": -9, "verb_log": 0})
        for _ in range(12):
            asked = es.ask()
            es.tell(asked, [float(np.sum(np.square(x - 0.3))) for x in asked])

    median, runs, _ = report.timed(run, repeats)
    return {"median_ms": median * 1000.0, "runs_ms": [r * 1000.0 for r in runs]}


def batched_floor(repeats):
    """The same for the knot searches' own CMA-ES (``anim_signals.splines.cma_es.BatchedCMAES``)."""
    from anim_signals.splines.cma_es import BatchedCMAES

    def run():
        es = BatchedCMAES(np.full((1, 5), 0.2), [0.05], seeds=[1], popsize=100, max_iterations=12)
        runs = np.zeros(1, dtype=int)
        for _ in range(12):
            asked = es.ask(runs)
            es.tell(runs, np.square(asked - 0.3).sum(axis=2))

    median, runs, _ = report.timed(run, repeats)
    return {"median_ms": median * 1000.0, "runs_ms": [r * 1000.0 for r in runs]}


def anchor_clip(args, use_operator: bool):
    path = Path(args.data) / f"{ANCHOR_CLIP}.bvh"
    res = {}
    if path.is_file():
        be.clear_scene()
        ob = be.import_bvh(path, max_frames=1000)
        frames, values, fcs, kinds = be.signal_from_object(ob)
        src = f"{ANCHOR_CLIP} cropped to {len(frames)} frames x {values.shape[1]} channels"
    else:
        frames, values, kinds = synthetic_clip(1000, 96)
        ob = None
        src = "generated 1000 x 96 (shared data absent)"
    tol = be.tolerance_vector(kinds, args.rot, args.loc, args.other)
    res["source"] = src
    if anim_signals is not None:
        clip = Clip("anchor", frames, values, kinds, tol)
        t0 = time.perf_counter()
        fit = anim_signals.fit_channels(fit_input(clip), frames, tol, mode="LATENT", seed=0, **continuity_kw(args))
        res["core_LATENT_s"] = time.perf_counter() - t0
        res["core_LATENT_keys"] = fit.n_keys
        res["core_LATENT_within_tolerance"] = bool(fit.within_tolerance)
    if use_operator and ob is not None:
        orig = ob.animation_data.action
        for mode in ("LATENT", "AUTO") if not args.quick else ("LATENT",):
            be.assign_action(ob, orig)
            with bpy.context.temp_override(**be.object_override(ob)):
                t0 = time.perf_counter()
                r = bpy.ops.anim_signals.fit_latent_spline(channels='ALL', mode=mode, max_error_rotation=args.rot,
                                                           max_error_location=args.loc, keep_original=True,
                                                           **continuity_kw(args, operator=True))
                res[f"operator_{mode}_s"] = time.perf_counter() - t0
                res[f"operator_{mode}_result"] = sorted(r)
                res[f"operator_{mode}_keys"] = be.count_keys(be.action_fcurves(ob))
    return res


def synthetic_clip(n, m):
    rng = np.random.default_rng(0)
    t = np.arange(n, dtype=float)
    cols = []
    kinds = []
    for j in range(m):
        f = rng.uniform(0.005, 0.03)
        a = rng.uniform(0.1, 0.8)
        burst = np.exp(-((t - 0.6 * n) / 15.0) ** 2) * rng.uniform(-0.5, 0.5)
        cols.append(a * np.sin(2 * np.pi * f * t + rng.uniform(0, 6)) + burst)
        kinds.append("location" if j < 3 else "rotation")
    return t + 1, np.column_stack(cols), kinds


# --------------------------------------------------------------------------------------------------
# report


def fmt_kind(d):
    if not d:
        return "—"
    parts = []
    for k in ("rotation", "quaternion", "location", "other"):
        if k in d:
            unit = "°" if k == "rotation" else ""
            label = {"rotation": "", "quaternion": "q ", "location": "loc ", "other": ""}[k]
            parts.append(f"{label}{fmt(d[k])}{unit}")
    return " / ".join(parts)


def markdown(results, anchors, args, meta):
    lines = ["# Fit-spline benchmark", ""]
    lines.append(f"Run: {meta['date']}, commit {meta['commit']}, Blender {meta['blender']}, {meta['cpu']}, {meta['threads']}; "
                 f"tolerances rotation {args.rot}°, location {args.loc} (1D curves: 1 % of range). "
                 f"Ours via {meta['ours_via']}; key continuity {meta['continuity']}.")
    lines.append("")
    lines.append("Keys: Bezier keys written (B-spline rows: distinct knots × channels). Floats: Bezier key = 6 "
                 "(co + 2 handles), original = 2 per key, B-spline = control points × channels + internal knots "
                 "(uniform: no knots stored). E_D: seed eq. 5 over all channels in Blender's native units "
                 "(radians, scene units). RMS / max error: rotation in degrees, location in scene units. "
                 "World cm: max distance of bone heads/tails in world space (scene units taken as metres)"
                 f"{'' if args.no_world else f', on up to {args.world_frames} frames'}. "
                 "Seconds: fit time (Decimate: one run at the found margins, search excluded). "
                 "✗ = some frame outside tolerance.")
    lines.append("")
    cells = ((clip_name, f"{shape[0]}×{shape[1]}", r["method"], fmt(r["keys"]), fmt(r.get("keyed_frames")),
              fmt(r.get("broken_keys")), fmt(r["floats"]), fmt(r["E_D"]),
              fmt_kind(r["rms"]), fmt_kind(r["max_error"]) + outside_tolerance_mark(r), fmt(r["world_cm"]),
              fmt(r["seconds"]), r["note"] + outside_note(r))
             for clip_name, shape, rows in results for r in rows)
    lines += report.table(("clip", "frames × ch", "method", "keys", "keyed frames", "broken", "floats", "E_D", "RMS",
                           "max error", "world cm", "s", "notes"), "lllrrrrrllrrl", cells)
    lines.append("")
    lines.append("Keyed frames: distinct frames holding a key on any curve. Broken: inner keys whose handles are "
                 "more than 0.5° from a straight line through the key, in (frame, value) units; both counted here "
                 "from Blender's F-curves after the write (— : not Bezier keys).")
    lines.append("")
    lines += fit_fewest.summary_lines(results)
    lines += summary_lines(results, anchors)
    return "\n".join(lines) + "\n"


def outside_tolerance_mark(row) -> str:
    """The mark after the max error of a tolerance-driven method that leaves some frame outside: " ✗"."""
    return " ✗" if row["method"] in TOLERANCE_METHODS and row["within_tolerance"] is False else ""


def outside_note(row) -> str:
    """For a tolerance-driven row: where it leaves the tolerance (strictly, no slack), if anywhere."""
    o = row.get("outside")
    if not o or row["method"] not in TOLERANCE_METHODS or row["method"] == "original":
        return ""
    return (f"; {o['count']} frame×curve samples over the tolerance on {o['curves']} curves, worst "
            f"{o['worst_curve']} at frame {o['worst_frame']:g}: {o['worst_error']:.4g} (tolerance {o['tolerance']:.4g})")


def goal_row(clip_name, rows):
    """(cells of the goals table, keys ratio ours AUTO / Decimate, E_D ratio seed method / uniform)."""
    by = {r["method"]: r for r in rows}
    a = by.get("ours AUTO", {}).get("keys")
    d = by.get("Blender Decimate", {}).get("keys")
    dp = by.get("Decimate, margin per F-curve", {}).get("keys")
    eu = by.get("uniform B-spline", {}).get("E_D")
    es = by.get("seed method (RMS knots)", {}).get("E_D")
    eu_same_knots = eu
    if es is None:  # 1D curves: the seed's own setup, 4 internal knots vs uniform 4
        es = by.get("ours latent, seed setup (4 IK)", {}).get("E_D")
        eu_same_knots = by.get("uniform B-spline (4 IK)", {}).get("E_D")
    el = by.get("ours LATENT", {}).get("E_D")
    k = a / d if a and d else None
    e = es / eu_same_knots if es is not None and eu_same_knots else None
    cells = (clip_name, fmt(a), fmt(d), fmt(k) + (" ✓" if k is not None and k <= GOAL_KEYS_RATIO else ""), fmt(dp),
             fmt(a / dp if a and dp else None), fmt(es), fmt(eu_same_knots),
             fmt(e) + (" ✓" if e is not None and e <= GOAL_ED_RATIO else ""),
             fmt(el / eu if el is not None and eu else None))
    return cells, k, e


def summary_lines(results, anchors):
    results = [r for r in results if any(x["method"] == "ours LATENT" for x in r[2])]
    goals = [goal_row(clip_name, rows) for clip_name, _shape, rows in results]
    kr = [k for _, k, _ in goals if k is not None]
    er = [e for _, _, e in goals if e is not None]
    lines = ["## Goals (AUTO, first round)", ""] if goals else []
    if not goals:
        return lines + timing_lines(anchors)
    lines += report.table(("clip", "ours AUTO keys", "Decimate keys", f"keys ratio (goal ≤ {GOAL_KEYS_RATIO})",
                           "Decimate per-curve keys", "ratio", "E_D seed method", "E_D uniform",
                           f"E_D ratio (goal ≤ {GOAL_ED_RATIO})", "E_D ours LATENT (tolerance) / uniform"),
                          "lrrrrrrrrr", (cells for cells, _, _ in goals))
    lines.append("")
    lines.append("E_D columns: the seed's method (RMS-optimal free knots, `fit_latent_spline(internal_knots=K)`) vs a "
                 "uniform B-spline with the same K (K = ours LATENT's knot count; 1D curves: the seed's 4 internal "
                 "knots). The last column compares our tolerance-driven LATENT keys (which minimise the max error, "
                 "not RMS) with the uniform least-squares fit.")
    lines.append("")
    if kr:
        lines.append(f"Keys ours AUTO / Decimate: median {statistics.median(kr):.2f}, worst {max(kr):.2f}, "
                     f"{sum(k <= GOAL_KEYS_RATIO for k in kr)}/{len(kr)} clips meet ≤ {GOAL_KEYS_RATIO}.")
    if er:
        lines.append(f"E_D seed method / uniform (same knots): median {statistics.median(er):.2f}, "
                     f"{sum(e <= GOAL_ED_RATIO for e in er)}/{len(er)} clips meet ≤ {GOAL_ED_RATIO}.")
    lines.append("")
    return lines + timing_lines(anchors)


def timing_lines(anchors):
    if not anchors.get("1d") and not anchors.get("clip"):
        return []
    lines = ["## Timing anchors", ""]
    for name, d in anchors.get("1d", {}).items():
        if name == "pycma alone":
            lines.append(f"- pycma alone in the same setting (5 increments, population 100, 12 iterations, an "
                         f"objective that costs nothing): median {d['median_ms']:.1f} ms, the floor of any "
                         f"pycma-based search (seed goal 19 ms).")
            continue
        if name == "batched CMA-ES alone":
            lines.append(f"- the knot searches' batched CMA-ES (`cma_es.BatchedCMAES`) in the same setting: median "
                         f"{d['median_ms']:.1f} ms.")
            continue
        lines.append(f"- 101-sample 1D `{name}`, 4 internal knots, population 100, 12 iterations: median "
                     f"{d['median_ms']:.1f} ms over {len(d['runs_ms'])} runs (seed: 19 ms, C++ on 16 threads; "
                     f"ratio {d['median_ms'] / GOAL_1D_MS:.2f}).")
    c = anchors.get("clip")
    if c:
        if "core_LATENT_s" in c:
            lines.append(f"- {c['source']}, 0.5° / 0.01, LATENT via `anim_signals.fit_channels`: "
                         f"{c['core_LATENT_s']:.2f} s ({c['core_LATENT_keys']} keys; goal 5 s, ratio "
                         f"{c['core_LATENT_s'] / GOAL_CLIP_S:.2f}).")
        for mode in ("LATENT", "AUTO"):
            if f"operator_{mode}_s" in c:
                lines.append(f"- same clip through the operator, {mode} (read, fit, write keys): "
                             f"{c[f'operator_{mode}_s']:.2f} s, {c.get(f'operator_{mode}_keys')} keys "
                             f"(ratio {c[f'operator_{mode}_s'] / GOAL_CLIP_S:.2f}).")
    return lines


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_CLIPS)} and the 1D curves")
    p.add_argument("--clips", default="", help="comma-separated substrings of BVH file names to include")
    p.add_argument("--data", default=str(DATA_DIR), help="folder of BVH clips (default ../shared/data/mocap)")
    p.add_argument("--out", default=str(be.REPO_ROOT / "out"), help="output folder")
    p.add_argument("--rot", type=float, default=0.5, help="rotation tolerance in degrees")
    p.add_argument("--loc", type=float, default=0.01, help="location tolerance in scene units")
    p.add_argument("--other", type=float, default=0.01, help="tolerance of other channels")
    p.add_argument("--no-decimate", action="store_true", help="skip Blender's Decimate (slow on big clips)")
    p.add_argument("--decimate-steps", type=int, default=9, help="Decimate margin trials per channel kind")
    p.add_argument("--no-world", action="store_true", help="skip world-space joint errors")
    p.add_argument("--world-frames", type=int, default=300, help="frames sampled for world-space errors")
    p.add_argument("--no-1d", action="store_true", help="skip the generated 1D curves")
    p.add_argument("--no-anchors", action="store_true", help="skip the timing anchors")
    p.add_argument("--repeats", type=int, default=7, help="runs of the 1D timing anchor")
    p.add_argument("--continuity", default="default", choices=("default", "C2", "C1", "AUTO"),
                   help="key continuity for every 'ours' row (default: the operator's default)")
    p.add_argument("--resume", action="store_true", help="keep the clips already in OUT/benchmark_fit.json")
    p.add_argument("--merge", default="", help="comma-separated output folders of earlier runs to combine; "
                   "computes nothing")
    p.add_argument("--core-only", action="store_true", help="fit through anim_signals.fit_channels, not the operator")
    p.add_argument("--rows", default="all",
                   help="comma-separated row groups: " + ", ".join(ROW_GROUPS) + "; or 'all' (default) or 'issue17' "
                   "(= auto, fewest, exact, decimate, clean: ours AUTO / FEWEST / EDITABLE, EXACT, Decimate at the "
                   "tolerance and at FEWEST's key count, Clean Keyframes; no 1D curves, no anchors)")
    p.add_argument("--exact-timeout", type=float, default=0.0,
                   help="stop ours EXACT on a clip after this many seconds (0: no limit)")
    p.add_argument("--exact-max-frames", type=int, default=0,
                   help="run ours EXACT only on clips of at most this many frames (0: the core's limit, 400)")
    args = p.parse_args(argv)
    groups = []
    for g in (w.strip() for w in args.rows.split(",") if w.strip()):
        if g in ROW_ALIASES:
            groups += ROW_ALIASES[g]
        elif g in ROW_GROUPS:
            groups.append(g)
        else:
            p.error(f"unknown row group {g!r}")
    args.row_groups = sorted(set(groups), key=ROW_GROUPS.index)
    if "1d" not in args.row_groups:
        args.no_1d = True
    if "anchors" not in args.row_groups:
        args.no_anchors = True
    if args.quick:
        args.decimate_steps = min(args.decimate_steps, 7)
        args.repeats = min(args.repeats, 5)
        args.world_frames = min(args.world_frames, 120)
    return args


def run_meta(use_operator: bool, continuity: str) -> dict:
    return {
        "commit": report.source_commit(("anim_signals", "operators")),
        "continuity": continuity or "(not a setting)",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "blender": bpy.app.version_string,
        "cpu": platform.processor() or platform.machine(),
        "threads": f"{os.cpu_count()} cores",
        "ours_via": "the operator bpy.ops.anim_signals.fit_latent_spline (BVH) and anim_signals.fit_channels (1D)"
        if use_operator else "anim_signals.fit_channels",
        "python": sys.version.split()[0],
        "load_average_at_start": os.getloadavg()[0],
    }


def bvh_clips(args) -> list[Path]:
    """The BVH clips to measure, smallest first (--quick: QUICK_CLIPS; --clips: a substring filter)."""
    clips = sorted(Path(args.data).glob("*.bvh"), key=lambda q: q.stat().st_size)
    if args.quick and not args.clips:
        clips = [c for c in clips if c.stem in QUICK_CLIPS]
    if args.clips:
        wanted = [w.strip() for w in args.clips.split(",") if w.strip()]
        clips = [c for c in clips if any(w in c.stem for w in wanted)]
    return clips


def main(argv=None):
    args = parse_args(argv)
    if args.merge:
        return merge([d for d in args.merge.split(",") if d], args)
    use_operator = False
    extension = None
    if not args.core_only:
        try:
            extension = be.enable_extension()
            use_operator = True
        except Exception as ex:
            log(f"note: the extension's operator is not available ({ex}); fitting BVH clips through the core")
    args.continuity_resolved = resolve_continuity(args, use_operator)
    meta = run_meta(use_operator, args.continuity_resolved)
    # The kernel's one-time load (its compile in a checkout numba has not cached yet) is not a fit's
    # time: Blender's UI does the same at startup (operators/fit_spline/warm_up.py).
    t0 = time.perf_counter()
    anim_signals.splines.key_reduction.warm_up()
    if extension:  # the operator's own copy of the core (its own numba dispatchers)
        sys.modules[f"{extension}.anim_signals.splines.key_reduction"].warm_up()
    meta["kernel_warm_up_s"] = round(time.perf_counter() - t0, 2)
    log(f"kernel warm-up (load or compile, not timed in the rows): {meta['kernel_warm_up_s']} s")

    out = be.ensure_dir(args.out)
    results, notes, anchors = [], [], {}
    done = set()
    if args.resume and (out / "benchmark_fit.json").is_file():
        prev = json.loads((out / "benchmark_fit.json").read_text())
        results = [(r["clip"], tuple(r["shape"]), r["rows"]) for r in prev["results"]]
        anchors = prev.get("anchors", {})
        notes = [n for n in prev.get("notes", []) if "failed" not in n]
        done = {r[0] for r in results}
        log(f"resuming: {len(done)} clips already measured in {out / 'benchmark_fit.json'}")
    if Path(args.data).is_dir():
        for c in bvh_clips(args):
            if c.stem in done:
                continue
            log(f"clip {c.name}")
            t0 = time.perf_counter()
            try:
                clip, rows = run_clip_bvh(c, args, use_operator)
            except Exception as ex:  # keep going: report the failure in the table
                import traceback

                traceback.print_exc()
                notes.append(f"{c.name}: failed: {ex!r}")
                continue
            results.append((clip.name, clip.shape, rows))
            log(f"  done in {time.perf_counter() - t0:.1f} s")
            report.write_report(out, "benchmark_fit", *fit_report(results, anchors, notes, args, meta, partial=True))
    else:
        notes.append(f"BVH clips skipped: {args.data} not found")
        log(notes[-1])
    if not args.no_1d:
        for name in GENERATED:
            if name in done:
                continue
            log(f"1D {name}")
            clip, rows = run_clip_1d(name, args)
            results.append((clip.name, clip.shape, rows))
        report.write_report(out, "benchmark_fit", *fit_report(results, anchors, notes, args, meta, partial=True))
    if not args.no_anchors:
        log("timing anchors")
        anchors["1d"] = anchor_1d(args)
        anchors["clip"] = anchor_clip(args, use_operator)
    report.publish(out, "benchmark_fit", *fit_report(results, anchors, notes, args, meta))
    return 0


def fit_report(results, anchors, notes, args, meta, partial=False) -> tuple[str, dict]:
    """The markdown and the JSON payload (written after every clip too: a long run that dies keeps its results)."""
    md = markdown(results, anchors, args, meta)
    if notes:
        md += "\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    if partial:
        md = "> partial: the run is still going (or died); rerun with --resume to complete\n\n" + md
    payload = {"meta": meta, "args": vars(args), "notes": notes, "anchors": anchors, "partial": partial,
               "results": [{"clip": n, "shape": list(s), "rows": r} for n, s, r in results]}
    return md, payload


METHOD_ORDER = ("original", "ours FEWEST", "ours EDITABLE", "ours EXACT", "ours LATENT", "ours PER_CHANNEL", "ours AUTO",
                "Blender Decimate", "Decimate, margin per F-curve", "Decimate at equal keys", "Blender Clean Keyframes")


def method_rank(row) -> int:
    """Rows of a clip merged from several runs in the order of one run (others after, as they came)."""
    return METHOD_ORDER.index(row["method"]) if row["method"] in METHOD_ORDER else len(METHOD_ORDER)


def merge(dirs, args):
    """Combine the JSON of several runs (e.g. clips split over two processes) into one table."""
    results, anchors, notes, metas = {}, {}, [], []
    for d in dirs:
        prev = json.loads((Path(d) / "benchmark_fit.json").read_text())
        metas.append(prev["meta"])
        for r in prev["results"]:  # rows of one clip from several runs combined; a later run's row replaces
            if r["clip"] in results:
                rows = {x["method"]: x for x in results[r["clip"]][2]}
                for x in r["rows"]:
                    old = rows.get(x["method"])
                    if old is not None and x["method"] != "original" and old.get("keys") != x.get("keys"):
                        notes.append(f"{r['clip']} {x['method']}: {x.get('keys')} keys in {d}, "
                                     f"{old.get('keys')} in an earlier run (the later one is shown)")
                    rows[x["method"]] = x
                results[r["clip"]] = (r["clip"], tuple(r["shape"]), sorted(rows.values(), key=method_rank))
            else:
                results[r["clip"]] = (r["clip"], tuple(r["shape"]), r["rows"])
        for k, v in prev.get("anchors", {}).items():
            if v:
                anchors[k] = v
        notes += prev.get("notes", [])
        for k in ("rot", "loc", "other", "no_world", "world_frames"):
            setattr(args, k, prev["args"][k])
    sizes = {p.stem: p.stat().st_size for p in Path(args.data).glob("*.bvh")} if Path(args.data).is_dir() else {}
    order = sorted(results.values(), key=lambda r: (r[0] not in sizes, sizes.get(r[0], 0),
                                                    list(GENERATED).index(r[0]) if r[0] in GENERATED else 0))
    meta = dict(metas[0])
    meta.setdefault("continuity", "?")
    meta["commit"] = ", ".join(sorted({m.get("commit", "unknown") for m in metas}))
    meta["date"] = ", ".join(sorted({m.get("date", "?") for m in metas}))
    report.publish(args.out, "benchmark_fit", *fit_report(order, anchors, notes, args, meta))
    log(f"merged {len(dirs)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
