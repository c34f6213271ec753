"""Motion database at scale (issue 18): each k-NN backend on databases of 16k to 10M frames.

One *case* is a database size, a data kind and a backend. Each case runs in its own process
(``benchmark_motion_db.py --scale-case JSON``) so that its peak memory is its own: the process
generates the database, builds the index (timed), saves it (size on disk), then streams the same
noisy queries through the OLNG (:class:`anim_signals.motiondb.Reconstructor`) and reports:

* build time, index size in memory and on disk, peak resident memory while building (Linux
  ``VmHWM`` after ``clear_refs``; the database's own frames counted separately);
* per-frame latency split (k-NN, graph, synthesis; median over the streamed frames, the first 5 of
  each clip skipped);
* recall@K of the index on the streamed query frames against brute force, and the recall the build
  measured on its own sample;
* correct hits on scenario #1 (a database clip + medium noise, 0.2 x each channel's standard
  deviation): the best path's frame is the queried one (on the ``shared`` kind: the same source
  frame, since windows of the takes repeat frames).

The exact backend's hits on the same queries are the reference for the approximate ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .report import fmt, log, table

SIZES = (16_623, 100_000, 1_000_000, 10_000_000)
K, WINDOW = 256, 32
NOISE_MEDIUM = 0.2
SKIP_FIRST = 5  # frames per streamed clip left out of the latency medians (the graph fills)
RECALL_QUERIES = 60
# Backends per size: KDTREE is exact today's search (slow past 1M), FLAT the exact reference.
PLAN: dict[int, tuple[str, ...]] = {
    16_623: ("AUTO", "KDTREE", "FLAT", "HNSW", "IVF"),
    100_000: ("AUTO", "KDTREE", "FLAT", "HNSW", "IVF"),
    1_000_000: ("AUTO", "KDTREE", "FLAT", "HNSW", "IVF"),
    10_000_000: ("AUTO", "FLAT", "IVF"),
}
EXACT = ("KDTREE", "FLAT")
GOAL_MS = {1_000_000: 2.0, 10_000_000: 5.0}
RICHERT = {16_623: 5.3, 1_000_000: 22.0}  # the seed's ms per frame (16,623 frames; its large database)


def _clear_peak() -> bool:
    """Reset this process's peak RSS (Linux: ``echo 5 > /proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        return None
    return None


def query_plan(db, n_query: int, seed: int, source: np.ndarray | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Whole database clips (at most ``n_query`` frames in all): (rows, noisy frames) per clip."""
    rng = np.random.default_rng(seed)
    std = db.frames[:: max(1, db.n_frames // 20000)].std(axis=0)
    out, total = [], 0
    while total < n_query:
        j = int(rng.integers(db.n_clips))
        rows = np.arange(db.clip_starts[j], db.clip_starts[j + 1])[: n_query - total]
        noisy = db.frames[rows] + NOISE_MEDIUM * std * rng.standard_normal((rows.size, db.frames.shape[1]))
        out.append((rows, noisy))
        total += rows.size
    return out


def run_case(case: dict, make_clips: Callable[[str, int, int], tuple[list[np.ndarray], list[str], np.ndarray | None]]) -> dict:
    """One case in this process (see the module docstring); ``make_clips(kind, size, seed)`` gives the
    clips, channel names and, per database row, a source-frame id (None: rows are all distinct)."""
    from anim_signals.motiondb import MotionDatabase, OLNGParams, Reconstructor
    from anim_signals.motiondb.knn import IndexOptions, build_index, exact_knn

    size, kind, backend, seed = int(case["size"]), case["kind"], case["backend"], int(case.get("seed", 5))
    t0 = time.perf_counter()
    clips, channels, source = make_clips(kind, size, seed)
    db = MotionDatabase.from_clips(clips, channels)
    del clips
    out: dict = dict(size=db.n_frames, kind=kind, backend=backend, dims=db.frames.shape[1],
                     frames_mb=db.frames.nbytes / 1e6, generate_s=time.perf_counter() - t0)
    points = np.ascontiguousarray(db.frames, dtype=np.float32)
    peak_reset = _clear_peak()
    t0 = time.perf_counter()
    options = IndexOptions(backend=backend, k=K, seed=seed)
    index = build_index(points, options=options)
    out["build_s"] = time.perf_counter() - t0
    out["peak_build_mb"] = _status_mb("VmHWM") if peak_reset else None
    out["rss_mb"] = _status_mb("VmRSS")
    out["chosen"] = index.backend
    out["describe"] = index.describe()
    out["message"] = getattr(index, "message", "") or ""
    out["index_mb"] = index.nbytes / 1e6
    out["build_recall"] = index.recall
    out["disk_mb"] = _disk_mb(db, index, options)

    plan = query_plan(db, int(case["n_query"]), seed + 7, source)
    rec = Reconstructor(db, OLNGParams(k=K, window=WINDOW), index=index)
    seconds, hits, near, frames = [], 0, 0, 0
    for rows, noisy in plan:
        rec.reset()
        for i, q in enumerate(noisy):
            s = rec.step(q)
            if i >= SKIP_FIRST:
                seconds.append((s.seconds["knn"], s.seconds["graph"], s.seconds["synthesis"]))
            truth = int(rows[i])
            if source is None:
                hits += s.best_index == truth
                near += (db.clip_of(np.array([s.best_index]))[0] == db.clip_of(np.array([truth]))[0]
                         and abs(s.best_index - truth) <= 2)
            else:
                hits += source[s.best_index] == source[truth]
                near += abs(int(source[s.best_index]) - int(source[truth])) <= 2
            frames += 1
    sec = 1000.0 * np.asarray(seconds)
    out.update(knn_ms=float(np.median(sec[:, 0])), graph_ms=float(np.median(sec[:, 1])),
               synthesis_ms=float(np.median(sec[:, 2])), total_ms=float(np.median(sec.sum(axis=1))),
               p95_ms=float(np.percentile(sec.sum(axis=1), 95)), frames=frames, hits=hits / frames,
               near=near / frames)
    # recall@K on the streamed queries themselves (a sample), against brute force
    q = np.vstack([noisy for _, noisy in plan])
    pick = np.random.default_rng(seed).choice(q.shape[0], min(RECALL_QUERIES, q.shape[0]), replace=False)
    truth_dist, _ = exact_knn(points, q[pick].astype(np.float32), K)
    found_dist, _ = index.search(q[pick], K)
    # tie-aware: a found frame counts when it is as near as the true K-th neighbour (windows of the
    # takes repeat frames, so equally near frames may stand in for each other)
    kth = truth_dist[:, -1:] * (1.0 + 1e-6) + 1e-9
    out["recall"] = float(np.mean(np.sum(found_dist <= kth, axis=1) / K))
    return out


def _disk_mb(db, index, options) -> float:
    """Size of the saved index file: the persisted form the tools load."""
    from anim_signals.motiondb import index_store

    with tempfile.TemporaryDirectory() as tmp:
        digest = index_store.content_hash(db, None, options)
        return index_store.save_index(index, Path(tmp) / "index.asknn", digest) / 1e6


def run_cases(cases: list[dict], script: Path, timeout_s: float) -> list[dict]:
    """Each case in a fresh process of ``script --scale-case``; failures are rows with an error."""
    rows = []
    for case in cases:
        t0 = time.perf_counter()
        log(f"  scale: {case['kind']} {case['size']:,} frames, {case['backend']} ...")
        try:
            proc = subprocess.run([sys.executable, str(script), "--scale-case", json.dumps(case)],
                                  capture_output=True, text=True, timeout=timeout_s, env=os.environ.copy())
        except subprocess.TimeoutExpired:
            rows.append(dict(case, error=f"over {timeout_s:.0f} s"))
            log(f"    stopped after {timeout_s:.0f} s")
            continue
        last = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not last:
            err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            rows.append(dict(case, error=err))
            log(f"    failed: {err}")
            continue
        row = json.loads(last[-1])
        rows.append(row)
        log(f"    {row['chosen']}: build {row['build_s']:.1f} s, {row['total_ms']:.2f} ms/frame, recall "
            f"{row['recall']:.3f}, hits {row['hits']:.2f} ({time.perf_counter() - t0:.0f} s)")
    return rows


def plan_cases(sizes: tuple[int, ...], kinds: tuple[str, ...], backends: tuple[str, ...] | None,
               n_query: int, seed: int) -> list[dict]:
    cases = []
    for size in sizes:
        for kind in kinds:
            for backend in PLAN.get(size, ("AUTO",)):
                if backends and backend not in backends:
                    continue
                nq = n_query if size < 10_000_000 else max(n_query // 2, 100)
                cases.append(dict(size=size, kind=kind, backend=backend, n_query=nq, seed=seed))
    return cases


def markdown(rows: list[dict]) -> list[str]:
    """The scale table, then what each size's exact search hits for comparison."""
    exact_hits = {(r["size"], r["kind"]): r["hits"] for r in rows if "error" not in r and r["backend"] in EXACT}
    body = []
    for r in rows:
        if "error" in r:
            body.append((r["kind"], f"{r['size']:,}", r["backend"], "—", "—", "—", "—", "—", "—", "—", "—", "—",
                         "—", "—", "—", r["error"]))
            continue
        ref = exact_hits.get((r["size"], r["kind"]))
        goal = GOAL_MS.get(r["size"])
        total = fmt(r["total_ms"]) + ("" if goal is None else (" ✓" if r["total_ms"] <= goal else " ✗"))
        body.append((r["kind"], f"{r['size']:,}", r["backend"] + ("" if r["chosen"] == r["backend"] else f" → {r['chosen']}"),
                     fmt(r["build_s"]), fmt(r["index_mb"]), fmt(r["disk_mb"]), fmt(r["peak_build_mb"]),
                     fmt(r["knn_ms"]), fmt(r["graph_ms"]), fmt(r["synthesis_ms"]), total, fmt(r["recall"]),
                     fmt(r["build_recall"]), fmt(r["hits"]), fmt(ref), r["describe"] + (f"; {r['message']}" if r["message"] and r["message"] not in r["describe"] else "")))
    lines = ["## Scale: k-NN backends from 16k to 10M frames (issue 18)", "",
             f"K x T = {K} x {WINDOW}, one query frame at a time, scenario #1 queries (database clips + noise "
             f"{NOISE_MEDIUM} x each channel's std). Latency: median ms per frame (goal ≤ 2 ms at 1M, ≤ 5 ms at "
             "10M; Richert: 5.3 ms at 16,623 frames, 22 ms at his large database). Recall@256 on the streamed "
             "queries against brute force (a frame as near as the true 256th neighbour counts: ties); build recall: measured by the build on its own sample. Hits: the best "
             "path's frame is the queried one; exact hits: the exact backend's on the same queries. Peak MB: "
             "resident memory while building, database frames included.", ""]
    lines += table(("data", "frames", "backend", "build s", "index MB", "disk MB", "peak MB", "k-NN ms", "graph ms",
                    "synthesis ms", "total ms", "recall@256", "build recall", "hits", "exact hits", "index"),
                   "lrlrrrrrrrrrrrrl", body)
    return lines + [""]
