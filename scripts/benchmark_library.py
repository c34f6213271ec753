"""Benchmark of the library runner on Dask (``library fit|compare``): speed-up, overhead, memory, recall.

    .venv/bin/python scripts/benchmark_library.py                 # ../shared/data/mocap + windows (long)
    .venv/bin/python scripts/benchmark_library.py --quick         # ~40 clips, LATENT fits (a few minutes)

The library: every BVH of ``../shared/data/mocap`` (linked, never copied into the repository) plus
windows cut from them (``--window`` seconds every ``--stride`` seconds: the file's header and that
range of its motion lines) -> ``OUT/library/``. Then:

1. **fit** with 1 and 2 local workers (a fresh ``LocalCluster`` each, one thread per worker, its start
   not timed): wall time of the task phase (first task submitted to last result: each worker's first
   task includes importing bpy and enabling the extension), speed-up, the median task, the scheduler
   overhead per task (``(workers x wall - sum of the tasks' own seconds) / tasks``, and the same
   for 400 no-op tasks), and every worker's peak memory (``ru_maxrss``).
2. **compare** (body features, as cycles, 100 samples) on the 2-worker cluster: the library command
   with its defaults (k = 10, 15 candidates per clip), then the full matrix of every pair (the same
   exact distances, in blocks on the cluster), and from the two the recall of the true k = 5 and 10
   nearest neighbours for several candidate counts, with the share of pairs each needs.

Writes ``OUT/benchmark_library.md`` and ``.json`` (``benchmarking/report.py``) and prints the markdown.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blender_env as be  # noqa: E402
from benchmarking import report  # noqa: E402
from benchmarking.report import fmt, log  # noqa: E402

be.add_core_to_path()

import numpy as np  # noqa: E402

from anim_signals.library import (  # noqa: E402
    cheap_distances,
    default_candidates,
    embed,
    knn_graph,
    knn_recall,
    pair_blocks,
    propose_pairs,
)

MOCAP = be.REPO_ROOT.parent / "shared" / "data" / "mocap"


# --------------------------------------------------------------------------------------------------
# the library


def cut_window(text: str, start: int, length: int) -> str:
    """A BVH with the same hierarchy and ``length`` motion frames from ``start``."""
    lines = text.splitlines()
    m = next(i for i, ln in enumerate(lines) if ln.strip() == "MOTION")
    frame_time = next(ln for ln in lines[m + 1:m + 3] if ln.strip().lower().startswith("frame time"))
    motion = [ln for ln in lines[m + 3:] if ln.strip()]
    return "\n".join([*lines[:m + 1], f"Frames: {length}", frame_time.strip(), *motion[start:start + length]]) + "\n"


def build_library(mocap: Path, folder: Path, window: float, stride: float, max_clips: int) -> list[Path]:
    """The real clips (symbolic links) and their windows, in ``folder`` (made afresh)."""
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "real").mkdir(parents=True)
    (folder / "windows").mkdir()
    out = []
    for clip in sorted(mocap.glob("*.bvh")):
        link = folder / "real" / clip.name
        link.symlink_to(clip.resolve())
        out.append(link)
    for clip in sorted(mocap.glob("*.bvh")):
        text = clip.read_text(errors="replace")
        fps = 1.0 / be.bvh_frame_time(clip)
        n = int(next(ln for ln in text.splitlines() if ln.strip().startswith("Frames:")).split(":")[1])
        length, step = int(round(window * fps)), max(1, int(round(stride * fps)))
        for w, start in enumerate(range(0, n - length + 1, step)):
            path = folder / "windows" / f"{clip.stem}_w{w:03d}.bvh"
            path.write_text(cut_window(text, start, length))
            out.append(path)
    if max_clips and len(out) > max_clips:  # keep every real clip, thin the windows evenly
        real, windows = out[:15], out[15:]
        keep = set(np.linspace(0, len(windows) - 1, max_clips - len(real)).round().astype(int).tolist())
        for i, p in enumerate(windows):
            if i not in keep:
                p.unlink()
        out = real + [p for i, p in enumerate(windows) if i in keep]
    return out


# --------------------------------------------------------------------------------------------------
# measurements on a cluster


def peak_rss_mb() -> float:
    """This process's peak resident memory (MB; Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def noop(i):
    return i


def noop_overhead(client, workers: int, n: int = 400) -> float:
    """Seconds of scheduling per trivial task: workers x wall / tasks."""
    t0 = time.perf_counter()
    client.gather(client.map(noop, range(n), pure=False))
    return workers * (time.perf_counter() - t0) / n


def local_cluster(workers: int):
    import distributed

    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    return cluster, distributed.Client(cluster)


def quiet(every: int):
    count = [0]

    def echo(line: str) -> None:
        count[0] += 1
        if count[0] % every == 0 or not line.startswith("["):
            log(line)

    return echo


def section_fit(lib: Path, out: Path, workers: int, mode: str) -> dict:
    from cli.library import run_library

    target = out / f"fit_{workers}"
    if target.exists():
        shutil.rmtree(target)
    cluster, client = local_cluster(workers)
    try:
        log(f"fit with {workers} worker(s) ...")
        s = run_library("fit", str(lib), str(target), scheduler=cluster.scheduler_address,
                        options={"mode": mode}, echo=quiet(25))
        rss = client.run(peak_rss_mb)
        overhead_noop = noop_overhead(client, workers)
    finally:
        client.close()
        cluster.close()
    tasks = [e["result"]["seconds"] for e in s.clips.values() if e.get("status") == "done"]
    n = len(s.processed)
    return {"workers": workers, "tasks": n, "failed": len(s.failed), "errors": {k: s.clips[k]["error"] for k in s.failed},
            "wall": s.task_seconds, "task_seconds": tasks, "median_task": statistics.median(tasks),
            "mean_task": statistics.fmean(tasks), "sum_tasks": sum(tasks),
            "overhead_per_task": (workers * s.task_seconds - sum(tasks)) / max(n, 1),
            "noop_overhead_per_task": overhead_noop, "peak_rss_mb": sorted(rss.values()),
            "keys": {k: e["result"]["objects"][0].get("keys_after") for k, e in s.clips.items()
                     if e.get("status") == "done"}}


def section_compare(lib: Path, out: Path, workers: int, samples: int, ks: list[int], candidates: list[int]) -> dict:
    from cli.library import run_library
    from cli.library_compare import dask_mappers, load_features

    from anim_signals.library import Manifest

    target = out / "compare"
    if target.exists():
        shutil.rmtree(target)
    cluster, client = local_cluster(workers)
    try:
        log(f"compare (the library command, k = 10, defaults) with {workers} workers ...")
        t0 = time.perf_counter()
        s = run_library("compare", str(lib), str(target), scheduler=cluster.scheduler_address,
                        options={"k": 10, "n_samples": samples}, echo=quiet(50))
        command_seconds = time.perf_counter() - t0
        step = s.extra["compare"]
        names, curves = load_features(Manifest(target / "manifest.json", "compare"), str(target), "BODY")
        m = len(names)
        t0 = time.perf_counter()
        emb = embed(curves, n_samples=samples, closed=True)
        cheap = cheap_distances(emb)
        cheap = np.minimum(cheap, cheap.T)
        cheap_seconds = time.perf_counter() - t0
        all_pairs = np.array([(i, j) for i in range(m) for j in range(i + 1, m)], dtype=int)
        log(f"the full matrix: {len(all_pairs)} pairs on {workers} workers ...")
        t0 = time.perf_counter()
        values = np.concatenate(dask_mappers(client, quiet(1))[0](emb, pair_blocks(all_pairs)))
        full_seconds = time.perf_counter() - t0
    finally:
        client.close()
        cluster.close()
    full = np.zeros((m, m))
    full[all_pairs[:, 0], all_pairs[:, 1]] = values
    full[all_pairs[:, 1], all_pairs[:, 0]] = values
    np.savez(target / "full_matrix.npz", names=np.array(names), full=full, cheap=cheap)  # for offline analysis
    per_pair = full_seconds * workers / len(all_pairs)
    rows = []
    for c in candidates:
        pairs = propose_pairs(cheap, c)
        g = knn_graph(m, pairs, full[pairs[:, 0], pairs[:, 1]], max(ks))
        rows.append({"candidates": c, "pairs": int(len(pairs)), "pair_fraction": g.pair_fraction,
                     **{f"recall@{k}": knn_recall(g.indices, full, k) for k in ks},
                     "est_seconds": cheap_seconds + len(pairs) * per_pair / workers})
    return {"clips": m, "workers": workers, "samples": samples, "command_seconds": command_seconds,
            "command_candidates": default_candidates(10),
            "command_step": step, "cheap_seconds": cheap_seconds, "full_pairs": int(len(all_pairs)),
            "full_seconds": full_seconds, "seconds_per_pair": per_pair, "rows": rows,
            "features_seconds": [e["result"]["seconds"] for e in s.clips.values() if e.get("status") == "done"]}


# --------------------------------------------------------------------------------------------------
# report


def projection(fit: dict, cmp_: dict | None, n: int = 2500) -> list[list[str]]:
    """Paper projection of an n-clip library from the measured per-task costs (no queueing effects)."""
    rows = []
    best = None
    if cmp_:
        best = next((r for r in cmp_["rows"] if r["recall@10"] >= 0.95), cmp_["rows"][-1])
    for w in (1, 16, 64):
        fit_h = n * (fit["mean_task"] + max(fit["overhead_per_task"], 0.0)) / w / 3600
        row = [str(w), fmt(fit_h)]
        if cmp_ and best:
            per_clip_pairs = best["pairs"] / cmp_["clips"]
            feats = statistics.fmean(cmp_["features_seconds"])
            cand_h = (n * feats + n * per_clip_pairs * cmp_["seconds_per_pair"]) / w / 3600
            full_h = (n * feats + n * (n - 1) / 2 * cmp_["seconds_per_pair"]) / w / 3600
            row += [fmt(cand_h), fmt(full_h)]
        rows.append(row)
    return rows


def markdown(res: dict) -> str:
    md = ["# Library runner benchmark (`scripts/benchmark_library.py`)", "",
          f"Commit {res['commit']}, {res['machine']}; library: {res['clips']} clips ({res['real']} real clips of "
          f"`../shared/data/mocap` + windows of {res['window']} s every {res['stride']} s); load average "
          f"{res['load_before']} before, {res['load_after']} after.", ""]
    fits = res["fit"]
    if fits:
        md += ["## fit (mode " + res["fit_mode"] + ")", ""]
        md += report.table(["workers", "tasks", "failed", "wall s", "speed-up", "median task s", "overhead / task s",
                            "overhead / median task", "no-op overhead / task s", "peak memory per worker MB"],
                           "rrrrrrrrrl",
                           [[f["workers"], f["tasks"], f["failed"], fmt(f["wall"]), fmt(fits[0]["wall"] / f["wall"]),
                             fmt(f["median_task"]), fmt(f["overhead_per_task"]),
                             fmt(f["overhead_per_task"] / f["median_task"]), fmt(f["noop_overhead_per_task"]),
                             ", ".join(fmt(x) for x in f["peak_rss_mb"])] for f in fits])
        same = all(fits[0]["keys"].get(k) == v for f in fits[1:] for k, v in f["keys"].items())
        md += ["", f"Keys written per clip identical across the runs: {'yes' if same else 'NO'}.", ""]
        errors = fits[0]["errors"]
        if errors:
            md += ["Failed clips: " + "; ".join(f"{k}: {v}" for k, v in list(errors.items())[:5]), ""]
    c = res.get("compare")
    if c:
        md += [f"## compare (body features, cycles, {c['samples']} samples, {c['workers']} workers)", "",
               f"The library command (k = 10, {c['command_candidates']} candidates per clip): {fmt(c['command_seconds'])} s in all, its "
               f"compare step {fmt(c['command_step']['seconds'])} s for {c['command_step']['pairs']} exact pairs "
               f"({fmt(100 * c['command_step']['pair_fraction'])} %). The full matrix: {c['full_pairs']} pairs in "
               f"{fmt(c['full_seconds'])} s ({fmt(1000 * c['seconds_per_pair'])} ms per pair per worker); the cheap "
               f"distances of all pairs (FFT shift + coarse time warping) {fmt(c['cheap_seconds'])} s.", ""]
        ks = [k for k in (5, 10) if f"recall@{k}" in c["rows"][0]]
        md += report.table(["candidates per clip", "exact pairs", "share of all pairs"] + [f"recall@{k}" for k in ks]
                           + ["time s (cheap + exact)", "vs full matrix"], "r" * (5 + len(ks)),
                           [[r["candidates"], r["pairs"], fmt(r["pair_fraction"])]
                            + [fmt(r[f"recall@{k}"]) for k in ks]
                            + [fmt(r["est_seconds"]), fmt(r["est_seconds"] / c["full_seconds"])] for r in c["rows"]])
        md += [""]
    if fits:
        used = ""
        if c:
            best = next((r for r in c["rows"] if r["recall@10"] >= 0.95), c["rows"][-1])
            used = f" ({best['candidates']} candidates per clip, {fmt(best['pairs'] / c['clips'])} exact pairs per clip)"
        md += ["## Projection: a CMU-size library (2,500 clips), hours", "",
               "From the measured mean task and overhead (fit) and the measured seconds per exact pair and per feature "
               f"task (compare, at the smallest candidate count reaching recall@10 >= 0.95, else the largest{used}); "
               "no queueing, no start-up.", ""]
        md += report.table(["workers", "fit h", "compare h (candidates)", "compare h (full matrix)"][:2 + 2 * bool(c)],
                           "rrrr"[:2 + 2 * bool(c)], projection(fits[0], c))
    return "\n".join(md) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mocap", default=str(MOCAP))
    ap.add_argument("--out", default=str(be.REPO_ROOT / "out" / "benchmark_library"))
    ap.add_argument("--window", type=float, default=1.5, help="window length, seconds (default 1.5)")
    ap.add_argument("--stride", type=float, default=0.25, help="window start every ... seconds (default 0.25)")
    ap.add_argument("--max-clips", type=int, default=0, help="at most this many clips (0: all)")
    ap.add_argument("--fit-mode", default="AUTO", choices=("AUTO", "LATENT", "PER_CHANNEL"))
    ap.add_argument("--workers", default="1,2", help="worker counts for fit (default 1,2)")
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--candidates", default="5,8,10,12,15,20,30")
    ap.add_argument("--sections", default="fit,compare")
    ap.add_argument("--quick", action="store_true", help="40 clips, LATENT fits, 1 s strides")
    args = ap.parse_args(argv)
    if args.quick:
        args.max_clips, args.fit_mode, args.stride = args.max_clips or 40, "LATENT", 1.0
    mocap = Path(args.mocap)
    if not any(mocap.glob("*.bvh")):
        log(f"no BVH clips in {mocap}: this benchmark needs ../shared/data/mocap")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    be.setup_environment()
    t0 = time.perf_counter()
    files = build_library(mocap, out / "library", args.window, args.stride, args.max_clips)
    log(f"library: {len(files)} clips in {out / 'library'}")
    res: dict = {"commit": report.source_commit(("anim_signals", "scripts")), "machine": report.machine(),
                 "clips": len(files), "real": len(list(mocap.glob("*.bvh"))), "window": args.window,
                 "stride": args.stride, "fit_mode": args.fit_mode, "fit": [], "compare": None,
                 "load_before": fmt(os.getloadavg()[0])}
    sections = args.sections.split(",")
    if "fit" in sections:
        for w in (int(x) for x in args.workers.split(",")):
            res["fit"].append(section_fit(out / "library", out, w, args.fit_mode))
    if "compare" in sections:
        res["compare"] = section_compare(out / "library", out, 2, args.samples, [5, 10],
                                         [int(x) for x in args.candidates.split(",")])
    res["load_after"] = fmt(os.getloadavg()[0])
    res["seconds"] = time.perf_counter() - t0
    report.publish(out, "benchmark_library", markdown(res) + f"\nRun time {res['seconds']:.0f} s.\n", res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
