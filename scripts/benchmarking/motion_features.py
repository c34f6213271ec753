"""The motion database with and without the velocity query feature (``anim_signals.motiondb.features``).

For ``benchmark_motion_db.py``: the seed's scenarios #1 (database clip + medium noise), #3 (recording
left out, no noise) and #4 (left out + low noise) on one of its datasets, each run once per feature
setting (None = the plain reconstruction), with the correct hits (output best index == the query
frame's index), hits within 2 frames (same clip, |difference| <= 2), the errors (mean Euclidean
distance to the noiseless pose over all channels: OLNG best frame, synthesis) and the median time per
frame (k-NN + graph + synthesis; the feature doubles the searched dimensions).

:func:`scenario_queries` draws the queries exactly as ``benchmark_motion_db.scenarios`` draws them
(same random stream: #1, then #2's draws, then #3 / #4 per left-out recording), so the rows without the
feature reproduce the benchmark's. The dataset is duck-typed (``clips``, ``owner``, ``std``,
``recordings``, ``database(leave_out=None)``: the benchmark's ``Dataset``).

    rows = compare(ds, OLNGParams(), {"off": None, "on": MotionFeature()}, seed=5)
    print("\\n".join(markdown(rows)))
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from anim_signals.motiondb import MotionDatabase, OLNGParams
from anim_signals.motiondb.features import MotionFeature, reconstruct_with_feature

from .report import fmt, log, table

NOISE = {"none": 0.0, "low": 0.1, "medium": 0.2, "high": 0.6}  # x the channel's std (as the benchmark)
Query = tuple[np.ndarray, np.ndarray, "np.ndarray | None"]  # truth (n, D), noisy (n, D), true rows or None


def _noisy(x: np.ndarray, level: float, std: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return x + level * std * rng.standard_normal(x.shape) if level > 0 else x.copy()


def scenario_queries(ds, seed: int, quick: bool = False) -> dict[str, list[tuple[MotionDatabase, list[Query]]]]:
    """The benchmark's queries of #1, #3 and #4: scenario -> [(database, queries)] (#3 / #4: one per fold)."""
    rng = np.random.default_rng(seed)
    db, _ = ds.database()
    starts = db.clip_starts
    usable = [j for j in range(db.n_clips) if starts[j + 1] - starts[j] >= 20]
    pick = rng.choice(usable, size=min(3 if quick else 12, len(usable)), replace=False)
    q1: list[Query] = []
    for j in pick:
        idx = np.arange(starts[j], starts[j + 1])
        q1.append((db.frames[idx], _noisy(db.frames[idx], NOISE["medium"], ds.std, rng), idx))
    n2, per = (1, 3) if quick else (4, 4)  # #2's draws, to keep the random stream in step
    for _ in range(n2):
        js = rng.choice(usable, size=min(per, len(usable)), replace=False)
        idx = np.concatenate([np.arange(starts[j], starts[j + 1]) for j in js])
        _noisy(db.frames[idx], NOISE["high"], ds.std, rng)
    out: dict[str, list[tuple[MotionDatabase, list[Query]]]] = {"#1": [(db, q1)], "#3": [], "#4": []}
    for scenario, level in (("#3", "none"), ("#4", "low")):
        for f in range(1 if quick else len(ds.recordings)):
            dbf, _ = ds.database(leave_out=f)
            held = [c for c, o in zip(ds.clips, ds.owner) if o == f]
            held = held[:3] if quick else held
            out[scenario].append((dbf, [(c, _noisy(c, NOISE[level], ds.std, rng), None) for c in held]))
    return out


def run(db: MotionDatabase, queries: Sequence[Query], params: OLNGParams, feature: MotionFeature | None,
        db_aug: MotionDatabase | None = None, cols: np.ndarray | None = None) -> dict:
    """Hits, hits within 2 frames and errors of one setting; each query streamed from a reset graph."""
    names = None if cols is None else [db.channels[c] for c in cols]
    if feature is not None and db_aug is None:
        db_aug = feature.database(db)
    olng, synth, noise, seconds = [], [], [], []
    hits = near = total = 0
    for truth, noisy, idx in queries:
        q = noisy if cols is None else noisy[:, cols]
        b = reconstruct_with_feature(db, q, params, feature, names, db_aug=db_aug)
        olng.append(np.linalg.norm(b.best - truth, axis=1))
        synth.append(np.linalg.norm(b.poses - truth, axis=1))
        noise.append(np.linalg.norm(noisy - truth, axis=1))
        seconds.append(b.seconds.sum(axis=1))
        if idx is not None:
            hits += int(np.sum(b.best_index == idx))
            same = db.clip_of(b.best_index) == db.clip_of(idx)
            near += int(np.sum(same & (np.abs(b.best_index - idx) <= 2)))
            total += idx.size
    out = dict(frames=int(sum(o.size for o in olng)), noise=float(np.mean(np.concatenate(noise))),
               olng=float(np.mean(np.concatenate(olng))), synth=float(np.mean(np.concatenate(synth))),
               ms=1000.0 * float(np.median(np.concatenate(seconds))))
    if total:
        out.update(hits=hits, near=near, total=total)
    return out


def compare(ds, params: OLNGParams, features: Mapping[str, MotionFeature | None], seed: int,
            quick: bool = False, scenarios: Sequence[str] = ("#1", "#3", "#4"),
            cols: np.ndarray | None = None, max_folds: int | None = None) -> list[dict]:
    """One row per (scenario, feature setting): the benchmark's queries of ``ds`` (:func:`scenario_queries`).

    ``max_folds``: #3 / #4 on the first left-out recordings only (the same draws: a shorter run).
    """
    plan = scenario_queries(ds, seed, quick)
    rows = []
    for scenario in scenarios:
        for label, feature in features.items():
            t0 = time.perf_counter()
            parts = []
            for db, qs in plan[scenario][:max_folds]:
                parts.append(run(db, qs, params, feature, cols=cols))
            w = np.array([p["frames"] for p in parts], dtype=float)
            row = dict(dataset=getattr(ds, "name", "?"), scenario=scenario, feature=label, folds=len(parts),
                       window=None if feature is None else feature.window,
                       weight=None if feature is None else feature.weight,
                       frames=int(w.sum()), **{k: float(np.average([p[k] for p in parts], weights=w))
                                               for k in ("noise", "olng", "synth", "ms")})
            if "hits" in parts[0]:
                row.update({k: int(sum(p[k] for p in parts)) for k in ("hits", "near", "total")})
            log(f"  {row['dataset']} {scenario} {label}: {time.perf_counter() - t0:.1f} s")
            rows.append(row)
    return rows


def _pct(a: int, n: int) -> str:
    return f"{a} ({100.0 * a / n:.1f} %)"


def markdown(rows: Sequence[dict]) -> list[str]:
    """The with / without table: one line per dataset, scenario and feature setting."""
    return table(("dataset", "scenario", "feature", "window", "weight", "query frames", "correct hits OLNG",
                  "within 2 frames", "error OLNG", "error synthesis", "median ms/frame"), "lllrrrrrrrr",
                 ((r["dataset"], r["scenario"], r["feature"], "–" if r["window"] is None else r["window"],
                   "–" if r["weight"] is None else f"{r['weight']:g}", r["frames"],
                   _pct(r["hits"], r["total"]) if "hits" in r else "–",
                   _pct(r["near"], r["total"]) if "near" in r else "–", fmt(r["olng"]), fmt(r["synth"]), fmt(r["ms"]))
                  for r in rows))
