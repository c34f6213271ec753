"""Spatial-keyframe benchmark (Costa and Esperança): mocap compaction error in the seed's layout,
compressed sizes, time per clip, and the live cursor pose update.

Run from the repository root with the project's venv python (numpy / scipy / scikit-learn, no Blender)::

    .venv/bin/python scripts/benchmark_spatial_keyframes.py                 # every BVH of ../shared/data/mocap
    .venv/bin/python scripts/benchmark_spatial_keyframes.py --jobs 2        # two clips at a time
    .venv/bin/python scripts/benchmark_spatial_keyframes.py --clips angry_13_000,cmu_131_01
    .venv/bin/python scripts/benchmark_spatial_keyframes.py --quick         # 3 shortest clips, fewer schemes
    .venv/bin/python scripts/benchmark_spatial_keyframes.py --quick --generated   # generated clips (no data)
    .venv/bin/python scripts/benchmark_spatial_keyframes.py --live-only     # only the live cursor pose update

Writes ``out/benchmark_spatial_keyframes/benchmark_spatial_keyframes.md`` and ``.json`` (``--out``
changes the folder) and prints the markdown. Clips are read with the core's BVH reader
(``anim_signals.spatialkeys.bvh``) at their own frame rate; without ``../shared/data/mocap`` the
script says so and stops (``--generated`` runs on generated bipeds instead).

Per clip, at a 3 % keyframe ratio (``--ratio``), the seed's grid (§5.1, Figure 7 and Table 1): each
keyframe selection (US, SCS, PB, ROLS) x each temporal scheme (Linear, Hermite, Slerp, 1D-RBF) and
each spatial projection (Force, MDS, PCA, Isomap, LLE, t-SNE, RBFP with MDS as its first step), the
spatial ones without Algorithm 1, with it as printed (each frame moves at most once; a move kept only
when it lowers that frame's error) and with it read as "descend until stuck" (``keep_moving``). The
error is eq. (1) per frame per joint (weighted radians); sizes are eqs. (2)-(4) with h = 0. A
projection that does not depend on the keys is computed once per clip and reused for every selection
(only RBFP depends on them).

The live cursor pose update is one back-projection RBF evaluation from a canvas point to the poses
of a 60-bone rig with 30 markers (median of many calls at random canvas points). With the bpy module
(the project's ``.venv`` python) the Blender side is timed per mouse move too, on a 60-bone armature
with a stored 30-marker model (``benchmarking/spatial_keyframes_live.py``): Navigate's
``pose_from_point``, the same with the depsgraph update before a redraw, and Move Marker's update;
without bpy that part is skipped with the reason printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blender_env as be  # noqa: E402
from benchmarking import report  # noqa: E402
from benchmarking import spatial_keyframes_live as blender_live  # noqa: E402
from benchmarking.report import fmt, log  # noqa: E402

be.add_core_to_path()

import numpy as np  # noqa: E402

from anim_signals import spatialkeys as sk  # noqa: E402

MOCAP_DIR = be.REPO_ROOT.parent / "shared" / "data" / "mocap"

SELECTION_LABELS = {"uniform": "US", "scs": "SCS", "pb": "PB", "rols": "ROLS"}
TEMPORAL_LABELS = {"linear": "Linear", "hermite": "Hermite", "slerp": "Slerp", "rbf": "1D-RBF"}
PROJECTION_LABELS = {"force": "Force", "mds": "MDS", "pca": "PCA", "isomap": "Isomap", "lle": "LLE",
                     "tsne": "t-SNE", "rbfp": "RBFP"}
# Algorithm 1 readings: not applied, as printed (compare_schemes' default), until every frame is stuck
ALGORITHM1_READINGS = ("none", "printed", "keep_moving")
READING_SUFFIX = {"none": "", "printed": " + Alg. 1", "keep_moving": " + Alg. 1 (keep moving)"}

# the seed's Table 1 (uniform sampling, optimised spatial projections, 70 CMU clips, 3 %)
SEED_TABLE1 = {
    "Hermite": (0.25, 0.54, 0.72, 1.0, 1.62, 5), "Linear": (0.24, 0.55, 0.73, 1.03, 1.72, 3),
    "Slerp": (0.22, 0.52, 0.73, 0.96, 1.58, 9), "1D-RBF": (0.22, 0.52, 0.73, 0.96, 1.61, 8),
    "Force": (0.3, 0.46, 0.67, 0.97, 1.61, 1), "Isomap": (0.25, 0.43, 0.54, 0.86, 1.29, 4),
    "LLE": (0.25, 0.4, 0.53, 0.81, 1.24, 2), "MDS": (0.29, 0.43, 0.59, 0.82, 1.32, 2),
    "PCA": (0.26, 0.44, 0.63, 0.97, 1.7, 0), "t-SNE": (0.25, 0.39, 0.52, 0.81, 1.48, 1),
}
SEED_BEST = 0.618  # optimised t-SNE with uniform sampling, mean over 70 clips (Figure 7)
SEED_SLERP_SCS = 0.826  # the seed's best temporal scheme
GOAL_RATIO = 0.75  # our best spatial scheme at least 25 % below slerp + SCS
GOAL_LIVE_MS = 5.0
LIVE_BONES, LIVE_MARKERS = 60, 30


# --------------------------------------------------------------------------------------------------
# clips


def clip_sources(args) -> list[str]:
    """BVH paths (or ``generated:<seed>`` names) to run, shortest first in quick mode."""
    if args.generated:
        return [f"generated:{s}" for s in range(3 if args.quick else 6)]
    folder = Path(args.mocap)
    paths = sorted(folder.glob("*.bvh")) if folder.is_dir() else []
    if args.clips:
        wanted = [c.strip().removesuffix(".bvh") for c in args.clips.split(",") if c.strip()]
        unknown = [c for c in wanted if not any(p.stem == c for p in paths)]
        if unknown:
            raise SystemExit(f"no clip named {', '.join(unknown)} in {folder}")
        paths = [p for p in paths if p.stem in wanted]
    if args.quick:
        paths = sorted(paths, key=lambda p: p.stat().st_size)[:3]
    return [str(p) for p in paths]


def load_clip(source: str, max_frames: int | None) -> tuple[str, np.ndarray, list[int]]:
    """(name, quaternions (N, J, 4), parents) of a BVH path or a ``generated:<seed>`` name."""
    if source.startswith("generated:"):
        seed = int(source.split(":")[1])
        clip = sk.generated_biped(240 + 60 * seed, seed=seed)
        return f"generated_biped_{seed}", clip.quaternions, clip.parents
    clip = sk.read_bvh(source, max_frames)
    return Path(source).stem, clip.quaternions, clip.parents


# --------------------------------------------------------------------------------------------------
# one clip: the grid


def run_clip(source: str, settings: dict) -> dict:
    """Every scheme of the grid on one clip: rows (error, size) and the time spent per stage."""
    t_start = time.perf_counter()
    name, quats, parents = load_clip(source, settings["max_frames"])
    mats = sk.as_matrices(quats)
    n, j = mats.shape[:2]
    w = sk.joint_weights(parents)
    seconds = {"read": time.perf_counter() - t_start}
    t0 = time.perf_counter()
    d = sk.distance_matrix(mats, w)
    vectors = sk.pose_vectors(mats, w)
    seconds["distances"] = time.perf_counter() - t0
    seconds.update(selection=0.0, temporal=0.0, projection=0.0, algorithm1=0.0, reconstruction=0.0)
    frames = np.arange(n)
    full = sk.uncompressed_size(n, j)
    rows: list[dict] = []
    shared_projections: dict[str, np.ndarray] = {}  # projections that ignore the keys, computed once

    def add(kind, scheme, selection, reading, keys, size, rec):
        rows.append(dict(clip=name, kind=kind, scheme=scheme, selection=selection, algorithm1=reading,
                         keys=len(keys), size=size, size_ratio=size / full,
                         error=sk.error_per_frame_per_joint(mats, rec, w)))

    for sel in settings["selections"]:
        t0 = time.perf_counter()
        keys = sk.select_keyframes(sel, mats, ratio=settings["ratio"], weights=w, distances=d)
        seconds["selection"] += time.perf_counter() - t0
        r_kf = len(keys) / n
        t0 = time.perf_counter()
        for scheme in settings["temporal"]:
            with warnings.catch_warnings():  # scipy's gimbal-lock notice from the Euler schemes: part of them
                warnings.filterwarnings("ignore", message="Gimbal lock detected")
                rec = sk.interpolate_temporal(scheme, keys, mats[keys], frames)
            add("temporal", scheme, sel, "none", keys, sk.temporal_size(n, j, r_kf), rec)
        seconds["temporal"] += time.perf_counter() - t0
        for proj in settings["projections"]:
            t0 = time.perf_counter()
            if proj == "rbfp":
                base = sk.project(proj, distances=d, vectors=vectors, seed=settings["seed"], keys=keys)
            else:
                if proj not in shared_projections:
                    shared_projections[proj] = sk.project(proj, distances=d, vectors=vectors, seed=settings["seed"])
                base = shared_projections[proj]
            seconds["projection"] += time.perf_counter() - t0
            for reading in settings["readings"]:
                t0 = time.perf_counter()
                points = base if reading == "none" else sk.optimise_projection(
                    base, keys, mats, w, keep_moving=reading == "keep_moving")[0]
                seconds["algorithm1"] += time.perf_counter() - t0
                t0 = time.perf_counter()
                packed = sk.SpatialKeyframeClip(keys, mats[keys], points)
                add("spatial", proj, sel, reading, keys, packed.size(), packed.reconstruct())
                seconds["reconstruction"] += time.perf_counter() - t0
    seconds["total"] = time.perf_counter() - t_start
    keys_count = rows[0]["keys"] if rows else 0
    sizes = dict(uncompressed=full, temporal=sk.temporal_size(n, j, keys_count / n),
                 spatial=sk.spatial_size(n, j, keys_count / n))
    log(f"  {name}: {n} frames, {j} joints, {keys_count} keys, {seconds['total']:.1f} s")
    return dict(clip=name, source=source, frames=n, joints=j, keys=keys_count, sizes=sizes, seconds=seconds,
                rows=rows)


# --------------------------------------------------------------------------------------------------
# summaries


def scheme_label(row: dict) -> str:
    if row["kind"] == "temporal":
        return TEMPORAL_LABELS[row["scheme"]]
    return PROJECTION_LABELS[row["scheme"]] + READING_SUFFIX[row["algorithm1"]]


def box_stats(values) -> dict:
    """The seed's box plot (Table 1 footnote): whiskers at the furthest data points within 1.5 IQR of
    the quartiles, outliers counted outside them."""
    v = np.sort(np.asarray(values, dtype=float))
    q1, q2, q3 = (float(x) for x in np.percentile(v, [25, 50, 75]))
    iqr = q3 - q1
    inside = v[(v >= q1 - 1.5 * iqr) & (v <= q3 + 1.5 * iqr)]
    return dict(w_bot=float(inside.min()), q1=q1, q2=q2, q3=q3, w_top=float(inside.max()),
                outliers=int(len(v) - len(inside)), mean=float(v.mean()), n=int(len(v)))


def errors_by(clips: list[dict], label: str, selection: str) -> list[float]:
    """One scheme's error on every clip (clip order)."""
    out = []
    for c in clips:
        out += [r["error"] for r in c["rows"] if scheme_label(r) == label and r["selection"] == selection]
    return out


def summarise(clips: list[dict], settings: dict) -> dict:
    rows = [r for c in clips for r in c["rows"]]
    labels = list(dict.fromkeys(scheme_label(r) for r in rows))
    figure7 = {lab: {sel: float(np.mean(errors_by(clips, lab, sel))) for sel in settings["selections"]
                     if errors_by(clips, lab, sel)} for lab in labels}
    table1 = {lab: box_stats(errors_by(clips, lab, "uniform")) for lab in labels
              if errors_by(clips, lab, "uniform") and (lab in TEMPORAL_LABELS.values() or "Alg. 1" in lab)}
    return dict(figure7=figure7, table1=table1, anchor=anchor_and_goals(clips, figure7, table1, settings))


def anchor_and_goals(clips, figure7, table1, settings) -> dict:
    """The seed's anchor pair on our clips, the best spatial scheme, and the goals met or not."""
    out: dict = {}
    slerp_scs = figure7.get("Slerp", {}).get("scs")
    tsne_us = figure7.get("t-SNE + Alg. 1", {}).get("uniform")
    out["slerp_scs"], out["tsne_us"] = slerp_scs, tsne_us
    out["tsne_us_ratio"] = tsne_us / slerp_scs if tsne_us is not None and slerp_scs else None

    def against_slerp_scs(lab: str, sel: str) -> dict:
        """A scheme against slerp + SCS: ratio of the means over clips (the seed's comparison) and per clip."""
        err = figure7[lab][sel]
        per_clip = [a / b for a, b in zip(errors_by(clips, lab, sel), errors_by(clips, "Slerp", "scs"))]
        return dict(scheme=lab, selection=sel, error=err, ratio=err / slerp_scs,
                    wins=int(sum(r < 1 for r in per_clip)), clips=len(per_clip),
                    mean_clip_ratio=float(np.mean(per_clip)), median_clip_ratio=float(np.median(per_clip)))

    if slerp_scs:
        out["seed_pair"] = [against_slerp_scs(lab, "uniform") for lab in
                            ("t-SNE + Alg. 1", "t-SNE + Alg. 1 (keep moving)") if "uniform" in figure7.get(lab, {})]
    spatial = [(err, lab, sel) for lab, per in figure7.items() if lab not in TEMPORAL_LABELS.values()
               for sel, err in per.items()]
    printed = [s for s in spatial if s[1].endswith("+ Alg. 1")]
    for key, pool in (("best_spatial", spatial), ("best_printed", printed)):
        if pool and slerp_scs:
            out[key] = dict(against_slerp_scs(*min(pool)[1:]), variants=len(pool))
    temporal_medians = {lab: b["q2"] for lab, b in table1.items() if lab in TEMPORAL_LABELS.values()}
    goals = []
    for reading, suffix in (("printed", "+ Alg. 1"), ("keep_moving", "+ Alg. 1 (keep moving)")):
        spatial_medians = {lab: b["q2"] for lab, b in table1.items() if lab.endswith(suffix)}
        if temporal_medians and spatial_medians:
            worst = max(spatial_medians.items(), key=lambda kv: kv[1])
            best_t = min(temporal_medians.items(), key=lambda kv: kv[1])
            goals.append(dict(goal=f"seed's ordering (Table 1, US): every spatial median below every temporal "
                                   f"median, Algorithm 1 {reading.replace('_', ' ')}",
                              met=worst[1] < best_t[1],
                              value=f"highest spatial median {worst[0]} {worst[1]:.3g} vs lowest temporal "
                                    f"{best_t[0]} {best_t[1]:.3g}; {sum(m < best_t[1] for m in spatial_medians.values())}"
                                    f" of {len(spatial_medians)} spatial medians below it",
                              beaten=sorted(lab for lab, m in spatial_medians.items() if m < best_t[1])))
    for key, which in (("best_spatial", "any Algorithm 1 reading"), ("best_printed", "Algorithm 1 as printed")):
        best = out.get(key)
        if best:
            goals.append(dict(goal=f"best spatial scheme ({which}) at least 25 % below slerp + SCS, mean over "
                                   f"clips (ratio <= {GOAL_RATIO})",
                              met=best["ratio"] <= GOAL_RATIO,
                              value=f"{best['scheme']} with {SELECTION_LABELS[best['selection']]}: "
                                    f"{best['error']:.3g} / {slerp_scs:.3g} = {best['ratio']:.3f}"))
    out["goals"] = goals
    return out


# --------------------------------------------------------------------------------------------------
# live cursor pose update


def live_pose_update(calls: int, seed: int) -> dict:
    """One back-projection (canvas point -> 60 bone rotations) through 30 markers, timed per call."""
    clip = sk.articulated_chain(300, LIVE_BONES, seed=seed)
    mats = sk.as_matrices(clip.quaternions)
    keys = sk.uniform_keys(len(mats), LIVE_MARKERS)
    w = sk.joint_weights(clip.parents)
    points = sk.classical_mds(sk.distance_matrix(mats[keys], w))
    t0 = time.perf_counter()
    rbf = sk.fit_rotation_rbf(points, mats[keys])
    fit_ms = 1000 * (time.perf_counter() - t0)
    rng = np.random.default_rng(seed)
    lo, hi = points.min(axis=0), points.max(axis=0)
    cursor = lo + rng.random((calls, 2)) * (hi - lo)
    for p in cursor[:20]:  # warm-up
        rbf.evaluate(p[None])
    pose_ms, quat_ms = [], []
    for p in cursor:
        t0 = time.perf_counter()
        poses = rbf.evaluate(p[None])
        t1 = time.perf_counter()
        sk.as_quaternions(poses)  # what the Blender side writes to the pose bones
        t2 = time.perf_counter()
        pose_ms.append(1000 * (t1 - t0))
        quat_ms.append(1000 * (t2 - t0))
    exact = float(np.abs(rbf.evaluate(points) - mats[keys]).max())
    return dict(bones=LIVE_BONES, markers=LIVE_MARKERS, calls=calls, fit_ms=fit_ms,
                median_ms=statistics.median(pose_ms), p95_ms=float(np.percentile(pose_ms, 95)),
                with_quaternions_median_ms=statistics.median(quat_ms), max_error_at_markers=exact,
                met=statistics.median(pose_ms) < GOAL_LIVE_MS)


# --------------------------------------------------------------------------------------------------
# report


def markdown(res: dict) -> str:
    s, an, live = res["settings"], res["summary"]["anchor"], res["live"]
    clips = res["clips"]
    md = ["# Spatial-keyframe benchmark (Costa and Esperança)", "",
          f"Commit {res['commit']}; {res['machine']}; {len(clips)} clip(s) ({res['mode']}); keyframe ratio "
          f"{s['ratio']:g}; selections {', '.join(SELECTION_LABELS[x] for x in s['selections'])}; "
          f"Algorithm 1 readings: {', '.join(s['readings'])}; seed {s['seed']}. Error: eq. (1) per frame "
          "per joint (weighted radians), the seed's measure; clips at their own frame rate.", ""]
    md += ["## Anchor and goals", ""]
    def versus(b: dict) -> str:
        return (f"{fmt(b['error'])}: ratio {b['ratio']:.3f} (per clip: below on {b['wins']}/{b['clips']}, mean ratio "
                f"{b['mean_clip_ratio']:.3f}, median {b['median_clip_ratio']:.3f})")

    rows = [["slerp + SCS (mean over clips)", fmt(an.get("slerp_scs")), fmt(SEED_SLERP_SCS)]]
    for b in an.get("seed_pair", []):
        seed = f"{fmt(SEED_BEST)}: ratio {SEED_BEST / SEED_SLERP_SCS:.3f}" if b["scheme"] == "t-SNE + Alg. 1" else "—"
        rows.append([f"{b['scheme']} + US vs slerp + SCS", versus(b), seed])
    for key, what in (("best_printed", "best spatial, Algorithm 1 as printed"), ("best_spatial", "best spatial, any")):
        b = an.get(key)
        if b:
            rows.append([f"{what} (of {b['variants']} scheme x selection): {b['scheme']} + "
                         f"{SELECTION_LABELS[b['selection']]}", versus(b), "—"])
    rows.append([f"live cursor pose update, {live['bones']} bones, {live['markers']} markers (median)",
                 f"{live['median_ms']:.3f} ms", f"goal < {GOAL_LIVE_MS:g} ms"])
    md += report.table(["", "ours", "seed"], "lrr", rows) + [""]
    goals = [*an["goals"], *live_goals(res)]
    md += report.table(["goal", "met", "measured"], "lcl",
                       [[g["goal"], "met" if g["met"] else "not met", g["value"]] for g in goals]) + [""]
    t1 = res["summary"]["table1"]
    if t1:
        md += ["## Table 1 layout: box plots over clips, uniform sampling", "",
               "Whiskers at the furthest clip within 1.5 IQR of the quartiles, O = clips outside (the seed's "
               "footnote). Seed: its Table 1 (70 CMU clips; optimised projections; it has no RBFP row).", ""]
        body = []
        for lab, b in t1.items():
            seed_row = SEED_TABLE1.get(lab.replace(" + Alg. 1", "")) if lab.endswith("+ Alg. 1") or \
                lab in TEMPORAL_LABELS.values() else None
            body.append([lab, *(fmt(b[k]) for k in ("w_bot", "q1", "q2", "q3", "w_top")), b["outliers"], fmt(b["mean"]),
                         fmt(seed_row[2]) if seed_row else "—", fmt(seed_row[0]) + "–" + fmt(seed_row[4])
                         if seed_row else "—"])
        md += report.table(["scheme", "W_bot", "Q1", "Q2", "Q3", "W_top", "O", "mean", "seed Q2", "seed whiskers"],
                           "lrrrrrrrrr", body) + [""]
    f7 = res["summary"]["figure7"]
    md += ["## Figure 7 layout: mean error per frame per joint over clips, per selection", ""]
    sels = s["selections"]
    md += report.table(["scheme", *(SELECTION_LABELS[x] for x in sels)], "l" + "r" * len(sels),
                       [[lab, *(fmt(per.get(x)) for x in sels)] for lab, per in f7.items()]) + [""]
    md += ["## Per clip: sizes (eqs. 2-4, h = 0), time, best schemes", ""]
    body = []
    for c in clips:
        rows_c = c["rows"]
        best_t = min((r for r in rows_c if r["kind"] == "temporal"), key=lambda r: r["error"], default=None)
        best_s = min((r for r in rows_c if r["kind"] == "spatial"), key=lambda r: r["error"], default=None)
        slerp_scs = next((r["error"] for r in rows_c if r["scheme"] == "slerp" and r["selection"] == "scs"), None)
        tsne_us = next((r["error"] for r in rows_c if r["scheme"] == "tsne" and r["selection"] == "uniform"
                        and r["algorithm1"] == "printed"), None)
        z = c["sizes"]
        body.append([c["clip"], c["frames"], c["joints"], c["keys"],
                     f"{100 * z['temporal'] / z['uncompressed']:.2f} / {100 * z['spatial'] / z['uncompressed']:.2f} %",
                     fmt(slerp_scs), fmt(tsne_us),
                     f"{scheme_label(best_t)} {SELECTION_LABELS[best_t['selection']]} {fmt(best_t['error'])}"
                     if best_t else "—",
                     f"{scheme_label(best_s)} {SELECTION_LABELS[best_s['selection']]} {fmt(best_s['error'])}"
                     if best_s else "—",
                     f"{c['seconds']['total']:.1f}"])
    md += report.table(["clip", "frames", "joints", "keys", "size c_t / c_skf of m", "slerp+SCS", "t-SNE+Alg.1 US",
                        "best temporal", "best spatial", "s"], "lrrrrrrllr", body) + [""]
    tot = {k: sum(c["seconds"][k] for c in clips) for k in clips[0]["seconds"]} if clips else {}
    if tot:
        md += ["Time summed over clips (s): " + ", ".join(f"{k} {v:.1f}" for k, v in tot.items()), ""]
    return "\n".join(md + live_markdown(res))


def live_goals(res: dict) -> list[dict]:
    """The live goal rows: the core's RBF evaluation and, with bpy, Blender's Navigate update."""
    live, bl = res["live"], res.get("live_blender", {})
    goals = [dict(goal=f"live cursor pose update under {GOAL_LIVE_MS:g} ms (core: RBF evaluation)", met=live["met"],
                  value=f"{live['median_ms']:.3f} ms median of {live['calls']} calls")]
    for key, what in (("navigate", "Blender: Navigate's pose_from_point"),
                      ("navigate_depsgraph", "Blender: Navigate + depsgraph update")):
        if key in bl:
            s = bl[key]
            goals.append(dict(goal=f"live cursor pose update under {GOAL_LIVE_MS:g} ms ({what}, median and 95th "
                                   "percentile)", met=s["median_ms"] < GOAL_LIVE_MS and s["p95_ms"] < GOAL_LIVE_MS,
                              value=f"{s['median_ms']:.3f} ms median, {s['p95_ms']:.3f} ms 95th percentile of "
                                    f"{s['moves']} moves"))
    return goals


def live_markdown(res: dict) -> list[str]:
    """The live cursor pose update sections: the core's RBF, then Blender's update per mouse move."""
    live, bl = res["live"], res.get("live_blender", {})
    md = ["## Live cursor pose update", "",
          f"An RBF (φ(r) = r + linear polynomial, log-space blend) through {live['markers']} markers to "
           f"{live['bones']} bone rotations (generated chain, markers by classical MDS); one canvas point per call, "
           f"{live['calls']} calls at random points: median {live['median_ms']:.3f} ms (95th percentile "
           f"{live['p95_ms']:.3f} ms), {live['with_quaternions_median_ms']:.3f} ms with the conversion to "
           f"quaternions; fitting the RBF once {live['fit_ms']:.2f} ms; largest error at the markers "
          f"{live['max_error_at_markers']:.1e}.", ""]
    md += ["## Live cursor pose update in Blender", ""]
    if "skipped" in bl:
        return md + [f"Skipped: {bl['skipped']}.", ""]
    mm = bl["move_marker"]
    md += [f"Blender {bl['blender']} (bpy module, the extension enabled; load average {bl['load_average']:.1f} on "
           f"{os.cpu_count()} cores when it started). A {bl['bones']}-bone chain armature (the "
           f"core's articulated_chain, quaternion bones) with a stored {bl['markers']}-marker model (PCA, uniform "
           f"keys), built as the canvas tests build it; time per mouse move, {bl['warmup']} warm-up moves not "
           "counted. Navigate: the operator's per-move call, pose_from_point (the stored model's RBF at the "
           "cursor, the bones written with foreach_set), along a circle through the markers; + depsgraph: the "
           "same and view_layer.update(), the evaluation Blender does before it redraws. Move Marker: the "
           "operator's per-move work (the clip with marker 7 moved, its canvas preview, the current frame "
           "posed through the RBF refitted to the moved marker), marker 7 dragged round a circle. Wall-clock "
           "times, and the main thread's CPU time (time.thread_time: without the waits for other processes of a "
           "busy machine, and without work on numpy's other BLAS threads).", ""]
    md += report.table(["per mouse move", "median", "95th percentile", "CPU median", "CPU 95th percentile", "goal"],
                       "lrrrrl",
                       blender_live.markdown_rows(bl, GOAL_LIVE_MS)) + [""]
    one = bl.get("move_marker_one_blas_thread")
    md += [f"Move Marker's refit alone: {mm['refit_median_ms']:.2f} ms median, of which {mm['log_map_median_ms']:.2f} "
           f"ms is the log map of the {bl['markers']} key poses, which fit_rotation_rbf recomputes on every move "
           "although moving a marker does not change them"
           + (f"; with numpy's BLAS held to one thread (it used {bl.get('blas_threads')}) the refit takes "
              f"{one['refit_median_ms']:.2f} ms" if one else "")
           + f". Poses after the last move against the core's RBF: Navigate {bl['navigate']['max_error']:.1e}, "
           f"Move Marker {mm['max_error']:.1e} (quaternion components; float32 bones).", ""]
    return md


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mocap", default=str(MOCAP_DIR), help="folder of BVH clips")
    p.add_argument("--clips", default="", help="comma-separated clip names (file stems) of --mocap (default: all)")
    p.add_argument("--quick", action="store_true", help="3 shortest clips; US and SCS; MDS and t-SNE; no keep-moving")
    p.add_argument("--generated", action="store_true", help="generated bipeds instead of BVH clips (no shared data)")
    p.add_argument("--ratio", type=float, default=0.03, help="keyframes per frame (the seed's 3 %%)")
    p.add_argument("--selections", default="", help="comma-separated: uniform,scs,pb,rols (default all)")
    p.add_argument("--projections", default="", help="comma-separated: force,mds,pca,isomap,lle,tsne,rbfp (default all)")
    p.add_argument("--max-frames", type=int, default=None, help="read at most this many frames per clip")
    p.add_argument("--jobs", type=int, default=1, help="clips run at once (processes; the machine has few cores)")
    p.add_argument("--live-calls", type=int, default=2000, help="calls timed for the live pose update")
    p.add_argument("--live-moves", type=int, default=300,
                   help="mouse moves timed per tool for the Blender side of the live update (bpy module)")
    p.add_argument("--live-only", action="store_true",
                   help="only the live cursor pose update (core and Blender), not the grid")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(be.REPO_ROOT / "out" / "benchmark_spatial_keyframes"))
    args = p.parse_args(argv)
    if args.live_only:
        return live_only(args)
    sources = clip_sources(args)
    if not sources:
        log(f"no BVH clips in {args.mocap} (../shared/data absent?): nothing to benchmark; "
            "--generated runs on generated clips")
        return 0
    quick = args.quick
    settings = dict(
        ratio=args.ratio, seed=args.seed, max_frames=args.max_frames, temporal=list(TEMPORAL_LABELS),
        selections=[x for x in args.selections.split(",") if x] or (["uniform", "scs"] if quick else list(SELECTION_LABELS)),
        projections=[x for x in args.projections.split(",") if x] or (["mds", "tsne"] if quick else list(PROJECTION_LABELS)),
        readings=["none", "printed"] if quick else list(ALGORITHM1_READINGS))
    for key, known in (("selections", SELECTION_LABELS), ("projections", PROJECTION_LABELS)):
        bad = [x for x in settings[key] if x not in known]
        if bad:
            p.error(f"unknown {key[:-1]} {', '.join(bad)}; expected {', '.join(known)}")
    if "scs" not in settings["selections"] or "uniform" not in settings["selections"]:
        log("note: the anchor (t-SNE + US vs slerp + SCS) needs both uniform and scs selections")
    log(f"{len(sources)} clip(s), {args.jobs} job(s)")
    t_start = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            clips = list(pool.map(run_clip, sources, [settings] * len(sources)))
    else:
        clips = [run_clip(src, settings) for src in sources]
    log("live cursor pose update")
    res = dict(commit=report.source_commit(), machine=f"{report.machine()}, numpy {np.__version__}",
               mode=("quick, " if quick else "") + ("generated" if args.generated else f"BVH from {args.mocap}"),
               settings=settings, clips=clips)
    res["summary"] = summarise(clips, settings)
    res["live"] = live_pose_update(200 if quick else args.live_calls, args.seed)
    res["live_blender"] = blender_live_update(args.live_moves)
    res["seconds"] = time.perf_counter() - t_start
    report.publish(args.out, "benchmark_spatial_keyframes", markdown(res) + f"\nRun time {res['seconds']:.0f} s.\n",
                   res)
    return 0


def blender_live_update(moves: int) -> dict:
    log("live cursor pose update in Blender")
    out = blender_live.measure(moves)
    if "skipped" in out:
        log(f"Blender side of the live update skipped: {out['skipped']}")
    return out


def live_only(args) -> int:
    """``--live-only``: the core's and Blender's live cursor pose update, nothing of the grid."""
    t_start = time.perf_counter()
    res = dict(commit=report.source_commit(("anim_signals", "operators")),
               machine=f"{report.machine()}, numpy {np.__version__}", mode="live only")
    res["live"] = live_pose_update(args.live_calls, args.seed)
    res["live_blender"] = blender_live_update(args.live_moves)
    res["seconds"] = time.perf_counter() - t_start
    md = ["# Spatial-keyframe benchmark: live cursor pose update", "",
          f"Commit {res['commit']}; {res['machine']}; seed {args.seed}.", "", *live_markdown(res),
          *report.table(["goal", "met", "measured"], "lcl", [[g["goal"], "met" if g["met"] else "not met", g["value"]]
                                                             for g in live_goals(res)]), ""]
    report.publish(args.out, "benchmark_spatial_keyframes_live", "\n".join(md) + f"\nRun time {res['seconds']:.0f} s.\n",
                   res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
