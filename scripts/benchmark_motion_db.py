"""Motion-database benchmark (Richert): the seed's four scenarios, partial input, per-frame latency.

Run from the repository root with the project's venv python (numpy/scipy only, no Blender)::

    .venv/bin/python scripts/benchmark_motion_db.py              # ../shared/data facial CSVs + BVH, full latency
    .venv/bin/python scripts/benchmark_motion_db.py --quick      # fewer queries, small databases, no 1M
    .venv/bin/python scripts/benchmark_motion_db.py --quick --synthetic   # generated data only (smoke test)

Writes ``out/benchmark_motion_db/benchmark_motion_db.md`` and ``.json`` (``--out`` changes the folder)
and prints the markdown. The core is called directly: ``anim_signals.motiondb`` (``MotionDatabase``,
``OLNGParams``, ``reconstruct``); the Live Link Face CSVs and the BVH MOTION sections are parsed here
with numpy/csv (no bpy; the ARKit blendshape names and timecodes from ``anim_signals.motiondb.livelink``).

1. **Scenarios** (seed section 4.2) on the facial recordings (52 ARKit blendshape weights, frames with
   empty/NaN cells dropped, recordings split at time gaps and into clips of about 3 s) and on the BVH
   clips of the CMU skeleton (each joint's rotation as 6 rotation-matrix values, root dropped): #1 a database clip + medium
   noise, #2 a sequence of database clips + high noise, #3 a recording left out of the database (no
   noise), #4 the same + low noise. Noise is Gaussian with a per-channel standard deviation equal to a
   fraction (low 0.1, medium 0.2, high 0.6: the seed's ratio 0.107 : 0.186 : 0.562) of that channel's
   standard deviation over the data. Errors are the mean over frames of the Euclidean distance of the
   output pose to the true (noiseless) query pose over all channels, as the seed's table. Correct hit:
   the output frame's database index equals the query frame's index (#1, #2).
2. **Partial input**: the 14 eye channels (eyeBlink*, eyeLook*, eyeSquint*, eyeWide*) dropped from the
   query; the output is the full 52-channel pose; error against the full-input run (#1, #3).
3. **Latency** (median ms per frame from ``Step.seconds``: k-NN, graph update, synthesis, total) for
   K x T in {128, 256, 512, 1024} x 32 on a 16,623-frame database of smooth random-walk data (39
   channels, as the seed's), and for 16k / 100k / 1M-frame databases at 256 x 32 (cKDTree build time
   too), next to the seed's numbers (i7 620M, C++/ANN).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blender_env as be  # noqa: E402
from benchmarking import motion_db_scale, report  # noqa: E402
from benchmarking.report import fmt, log  # noqa: E402

be.add_core_to_path()

import numpy as np  # noqa: E402
from benchmarking import motion_features  # noqa: E402  (imports the core: after add_core_to_path)

from anim_signals.motiondb import MotionDatabase, OLNGParams, reconstruct  # noqa: E402
from anim_signals.motiondb.features import MotionFeature  # noqa: E402
from anim_signals.motiondb.livelink import ARKIT_BLENDSHAPES, EYE_BLENDSHAPES, timecode_seconds  # noqa: E402

FACIAL_DIR = be.REPO_ROOT.parent / "shared" / "data" / "facial"
MOCAP_DIR = be.REPO_ROOT.parent / "shared" / "data" / "mocap"
NOISE = {"none": 0.0, "low": 0.1, "medium": 0.2, "high": 0.6}  # x the channel's standard deviation
CLIP_SECONDS = 3.0
TARGET_FPS = 30.0
BVH_SKELETON_CHANNELS = 96  # the CMU skeleton (cmu_131_*, Xia walks); other rigs are left out
BVH_STEP = 2  # 120 -> 60 fps

SEED_SCENARIOS = {  # seed section 4.2 (39 control points, 16,623 frames)
    "#1": dict(noise=0.186, nn=0.009, olng=0.016, synth=0.149, length=29, hits_nn=0.67, hits_olng=0.81),
    "#2": dict(noise=0.562, nn=0.079, olng=0.093, synth=0.204, length=28, hits_nn=0.44, hits_olng=0.54),
    "#3": dict(noise=0.0, nn=0.36, olng=0.503, synth=0.463, length=12),
    "#4": dict(noise=0.107, nn=0.53, olng=0.556, synth=0.486, length=11),
}
SEED_KT = {128: (0.85, 0.09, 4.11, 5.05), 256: (0.90, 0.29, 4.10, 5.29), 512: (1.04, 1.13, 4.22, 6.37),
           1024: (4.6, 4.41, 4.25, 13.26)}  # ms: kd-tree, OLNG update, synthesis, total (16,623 frames)
SEED_SIZES = {"5 MB": 5.0, "30 MB": 8.0, "100 MB": 22.0}  # ms total at 256 x 32, random data
GOAL_16K_MS = 5.3
GOAL_1M_MS = 22.0
GOAL_HITS = 0.81
APPROX_EPS = 2.0  # cKDTree.query(eps=...): every neighbour within (1 + eps) x the true k-th distance


# --------------------------------------------------------------------------------------------------
# data


class Recording:
    def __init__(self, name: str, segments: list[np.ndarray], fps: float, note: str = ""):
        self.name, self.segments, self.fps, self.note = name, segments, fps, note

    @property
    def n_frames(self) -> int:
        return sum(s.shape[0] for s in self.segments)

    def clips(self, seconds: float = CLIP_SECONDS) -> list[np.ndarray]:
        """Each gap-free segment split evenly into clips of about ``seconds`` (2-4 s; shorter segments whole)."""
        out = []
        n_target = max(2, round(seconds * self.fps))
        for s in self.segments:
            parts = max(1, round(s.shape[0] / n_target))
            out += [p for p in np.array_split(s, parts) if p.shape[0] > 0]
        return out


def read_live_link_csv(path: Path, min_seconds: float = 1.0) -> Recording:
    """52 ARKit blendshape columns; frames with empty/NaN cells dropped; split at time gaps (> 1.5 x median).

    Gap-free segments shorter than ``min_seconds`` are dropped; 60/s recordings keep every other frame.
    """
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    header = [h.strip() for h in rows[0]]
    where = {h.lower(): i for i, h in enumerate(header)}
    missing = [n for n in ARKIT_BLENDSHAPES if n.lower() not in where]
    if missing:
        raise ValueError(f"{path.name}: no column for {', '.join(missing[:5])}")
    cols = [where[n.lower()] for n in ARKIT_BLENDSHAPES]
    codes, values, dropped = [], [], 0
    for r in rows[1:]:
        if not r or len(r) < len(header):
            dropped += 1
            continue
        try:
            v = np.array([float(r[c]) if r[c].strip() else np.nan for c in cols])
        except ValueError:
            v = np.full(len(cols), np.nan)
        if not np.all(np.isfinite(v)):
            dropped += 1
            continue
        codes.append(r[0].strip())
        values.append(v)
    frames_field = [float(c.split(":")[3]) for c in codes]
    top = max(frames_field) if frames_field else 0.0
    rate = next((r for r in (24.0, 25.0, 30.0, 50.0, 60.0, 120.0) if top < r), 120.0)  # timecode frame rate
    t = np.array([timecode_seconds(c, rate) for c in codes])
    x = np.array(values)
    dt = np.diff(t)
    dt = np.where(dt < -43200.0, dt + 86400.0, dt)  # past midnight
    med = float(np.median(dt[dt > 0])) if np.any(dt > 0) else 1.0 / 30.0
    breaks = np.flatnonzero((dt > 1.5 * med) | (dt <= 0)) + 1
    fps = 1.0 / med
    step = max(1, round(fps / TARGET_FPS))  # 60/s -> every other frame: all recordings at about 30/s
    min_segment = max(2, round(min_seconds * fps))
    segments = [s[::step] for s in np.split(x, breaks) if s.shape[0] >= min_segment]
    short = sum(s.shape[0] for s in np.split(x, breaks) if s.shape[0] < min_segment)
    note = (f"{len(x)} frames read ({dropped} dropped: empty/NaN), {breaks.size} time gaps, "
            f"{fps:.1f}/s" + (f" -> every {step}nd frame" if step > 1 else "")
            + (f", {short} frames in segments < {min_seconds:g} s dropped" if short else ""))
    return Recording(path.stem, segments, fps / step, note)


def read_bvh_motion(path: Path) -> tuple[list[str], np.ndarray, float]:
    """Channel names (joint.channel) and the MOTION values of a BVH file, parsed directly."""
    text = path.read_text()
    head, motion = re.split(r"^\s*MOTION\s*$", text, maxsplit=1, flags=re.MULTILINE)
    names, joint = [], None
    for line in head.splitlines():
        tok = line.split()
        if not tok:
            continue
        if tok[0] in ("ROOT", "JOINT"):
            joint = tok[1]
        elif tok[0] == "CHANNELS":
            names += [f"{joint}.{c}" for c in tok[2:2 + int(tok[1])]]
    lines = motion.strip().splitlines()
    n = int(lines[0].split(":")[1])
    frame_time = float(lines[1].split(":")[1])
    values = np.array([[float(v) for v in ln.split()] for ln in lines[2:2 + n] if ln.strip()])
    return names, values, 1.0 / frame_time


def bvh_rotations_6d(names: list[str], values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Every non-root joint's Euler channels (BVH: intrinsic, in the listed order) as the first two
    columns of its rotation matrix (a continuous 6-value representation, independent of the order)."""
    from scipy.spatial.transform import Rotation

    joints: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        joint, chan = n.split(".", 1)
        if chan.endswith("rotation"):
            joints.setdefault(joint, []).append(i)
    root = names[0].split(".", 1)[0]
    out_names, cols = [], []
    for joint, idx in joints.items():
        if joint == root or len(idx) != 3:
            continue
        order = "".join(names[i].split(".", 1)[1][0].upper() for i in idx)
        m = Rotation.from_euler(order, values[:, idx], degrees=True).as_matrix()  # (n, 3, 3)
        cols.append(m[:, :, :2].reshape(-1, 6))
        out_names += [f"{joint}.m{r}{c}" for r in range(3) for c in range(2)]
    return out_names, np.hstack(cols)


def bvh_recordings(folder: Path) -> tuple[list[Recording], list[str]]:
    """The BVH clips of the 31-joint CMU skeleton (joint names may differ: matched by position)."""
    recs, channels = [], None
    for path in sorted(folder.glob("*.bvh")):
        names, values, fps = read_bvh_motion(path)
        if values.shape[1] != BVH_SKELETON_CHANNELS:
            continue
        chans, x = bvh_rotations_6d(names, values[::BVH_STEP])
        if channels is None:
            channels = chans
        elif len(chans) != len(channels):
            continue
        recs.append(Recording(path.stem, [x], fps / BVH_STEP, f"{values.shape[0]} frames at {fps:.0f}/s -> every "
                                                               f"{BVH_STEP}nd frame"))
    return recs, channels or []


def smooth_random_walk(n_frames: int, dims: int, seed: int, clip_len: int = 250, speed: float = 0.01) -> list[np.ndarray]:
    """Clips of a damped random walk (smooth velocity) reflected into [0, 1]: the seed's 'random data'."""
    from scipy.signal import lfilter

    rng = np.random.default_rng(seed)
    n_clips = max(1, -(-n_frames // clip_len))
    out = []
    chunk = max(1, 4_000_000 // (clip_len * dims))  # bounded memory for the 1M case
    for c0 in range(0, n_clips, chunk):
        c = min(chunk, n_clips - c0)
        acc = rng.standard_normal((c, clip_len, dims)).astype(np.float64)
        vel = lfilter([speed * np.sqrt(1 - 0.9**2)], [1.0, -0.9], acc, axis=1)
        x = rng.random((c, 1, dims)) * 2.0 + np.cumsum(vel, axis=1)
        x = np.abs(((x % 2.0) + 2.0) % 2.0 - 1.0)  # reflect into [0, 1]
        out += list(x)
    out[-1] = out[-1][: clip_len - (n_clips * clip_len - n_frames)]
    return out


def synthetic_facial(seed: int, n_recordings: int = 3, frames: int = 450) -> list[Recording]:
    """Generated stand-in for the facial recordings (52 ARKit channels, 30/s, one gap per recording)."""
    recs = []
    for r in range(n_recordings):
        walk = np.vstack(smooth_random_walk(frames, len(ARKIT_BLENDSHAPES), seed + r, clip_len=frames, speed=0.02))
        walk[:, :14] = 0.7 * walk[:, :14] + 0.3 * walk[:, 14:28]  # eyes partly follow the rest of the face
        cut = frames // 3
        recs.append(Recording(f"generated_{r}", [walk[:cut], walk[cut:]], 30.0, "generated smooth random walk"))
    return recs


# --------------------------------------------------------------------------------------------------
# scenarios


class Dataset:
    def __init__(self, name: str, recordings: list[Recording], channels: list[str]):
        self.name, self.recordings, self.channels = name, recordings, channels
        self.clips, self.owner = [], []
        for i, rec in enumerate(recordings):
            for c in rec.clips():
                self.clips.append(c)
                self.owner.append(i)
        self.std = np.vstack(self.clips).std(axis=0)
        self.clip_names = [f"{recordings[o].name}#{i}" for i, o in enumerate(self.owner)]

    def database(self, leave_out: int | None = None) -> tuple[MotionDatabase, list[int]]:
        ids = [i for i, o in enumerate(self.owner) if o != leave_out]
        db = MotionDatabase.from_clips([self.clips[i] for i in ids], self.channels, [self.clip_names[i] for i in ids])
        return db, ids


def add_noise(x: np.ndarray, level: float, std: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return x + level * std * rng.standard_normal(x.shape) if level > 0 else x.copy()


def _dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.norm(a - b, axis=1)


def run_queries(db: MotionDatabase, queries: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]],
                params: OLNGParams, cols: np.ndarray | None, eye_cols: np.ndarray) -> dict:
    """queries: (truth (n, D), noisy (n, D), true database indices or None); each streamed from a reset graph."""
    names = None if cols is None else [db.channels[c] for c in cols]
    qcols = np.arange(len(db.channels)) if cols is None else cols
    tree = db.tree(qcols)
    acc = {k: [] for k in ("noise", "nn", "olng", "synth", "length", "eye_nn", "eye_olng", "eye_synth")}
    hits_nn = hits_olng = near_olng = total = 0
    seconds = []
    for truth, noisy, true_idx in queries:
        q = noisy[:, qcols]
        _, nn_idx = tree.query(q, k=1)
        nn = db.frames[nn_idx]
        b = reconstruct(db, q, params, names)
        acc["noise"].append(_dist(noisy, truth))
        for key, out in (("nn", nn), ("olng", b.best), ("synth", b.poses)):
            acc[key].append(_dist(out, truth))
            if eye_cols.size:
                acc["eye_" + key].append(_dist(out[:, eye_cols], truth[:, eye_cols]))
        acc["length"].append(b.best_length.astype(float))
        seconds.append(b.seconds)
        if true_idx is not None:
            hits_nn += int(np.sum(nn_idx == true_idx))
            hits_olng += int(np.sum(b.best_index == true_idx))
            same = db.clip_of(b.best_index) == db.clip_of(true_idx)
            near_olng += int(np.sum(same & (np.abs(b.best_index - true_idx) <= 2)))
            total += true_idx.size
    out = {k: float(np.mean(np.concatenate(v))) for k, v in acc.items() if v}
    out["frames"] = int(sum(len(v) for v in acc["noise"]))
    sec = np.vstack(seconds)
    out["ms_total"] = 1000.0 * float(np.median(sec.sum(axis=1)))
    if total:
        out.update(hits_nn=hits_nn, hits_olng=hits_olng, near_olng=near_olng, hits_total=total)
    return out


def scenarios(ds: Dataset, params: OLNGParams, quick: bool, seed: int, partial: bool) -> list[dict]:
    rng = np.random.default_rng(seed)
    eye_cols = np.array([i for i, n in enumerate(ds.channels) if n in EYE_BLENDSHAPES], dtype=int)
    part_cols = np.array([i for i in range(len(ds.channels)) if i not in set(eye_cols.tolist())], dtype=int)
    db, ids = ds.database()
    starts = db.clip_starts
    usable = [j for j in range(db.n_clips) if starts[j + 1] - starts[j] >= 20]
    rows = []

    def emit(scenario, label, level, queries, dbx):
        for inp, cols in (("full", None), ("no eyes", part_cols)):
            if inp == "no eyes" and (not partial or scenario not in ("#1", "#3")):
                continue
            t0 = time.perf_counter()
            r = run_queries(dbx, queries, params, cols, eye_cols)
            log(f"  {ds.name} {scenario} {inp}: {r['frames']} frames, {time.perf_counter() - t0:.1f} s")
            rows.append(dict(dataset=ds.name, scenario=scenario, label=label, noise_level=level,
                             input=inp, query_channels=len(ds.channels) if cols is None else int(cols.size),
                             db_frames=dbx.n_frames, queries=len(queries), **r))

    # #1: database clips + medium noise (each clip streamed on its own)
    n1 = 3 if quick else 12
    pick = rng.choice(usable, size=min(n1, len(usable)), replace=False)
    q1 = []
    for j in pick:
        idx = np.arange(starts[j], starts[j + 1])
        truth = db.frames[idx]
        q1.append((truth, add_noise(truth, NOISE["medium"], ds.std, rng), idx))
    emit("#1", "database clip + medium noise", "medium", q1, db)

    # #2: sequences of database clips + high noise
    n2, per = (1, 3) if quick else (4, 4)
    q2 = []
    for _ in range(n2):
        js = rng.choice(usable, size=min(per, len(usable)), replace=False)
        idx = np.concatenate([np.arange(starts[j], starts[j + 1]) for j in js])
        truth = db.frames[idx]
        q2.append((truth, add_noise(truth, NOISE["high"], ds.std, rng), idx))
    emit("#2", "sequence of database clips + high noise", "high", q2, db)

    # #3 / #4: leave one recording out (every recording in turn; quick: the first only)
    folds = range(1 if quick else len(ds.recordings))
    for scenario, label, level in (("#3", "recording left out, no noise", "none"),
                                   ("#4", "recording left out + low noise", "low")):
        parts: list[dict] = []
        for f in folds:
            dbf, _ = ds.database(leave_out=f)
            held = [ds.clips[i] for i, o in enumerate(ds.owner) if o == f]
            if quick:
                held = held[:3]
            q = [(c, add_noise(c, NOISE[level], ds.std, rng), None) for c in held]
            before = len(rows)
            emit(scenario, label, level, q, dbf)
            parts += rows[before:]
            del rows[before:]
        for inp in ("full", "no eyes"):
            sel = [p for p in parts if p["input"] == inp]
            if not sel:
                continue
            w = np.array([p["frames"] for p in sel], dtype=float)
            merged = dict(sel[0])
            for k in ("noise", "nn", "olng", "synth", "length", "eye_nn", "eye_olng", "eye_synth", "ms_total"):
                if k in sel[0]:
                    merged[k] = float(np.average([p[k] for p in sel], weights=w))
            lo, hi = min(p["db_frames"] for p in sel), max(p["db_frames"] for p in sel)
            merged.update(frames=int(w.sum()), queries=sum(p["queries"] for p in sel),
                          db_frames=lo if lo == hi else f"{lo}-{hi}", folds=len(sel))
            rows.append(merged)
    return rows


# --------------------------------------------------------------------------------------------------
# latency


def latency_run(db: MotionDatabase, params: OLNGParams, n_query: int, seed: int, eps: float = 0.0) -> dict:
    """Stream a noisy (medium) query made of database clips; median ms per frame of each stage.

    ``eps`` > 0: cKDTree's approximate search (its recall measured here against the exact tree);
    else the index ``params.backend`` makes (AUTO: by size), its recall as its build measured it."""
    rng = np.random.default_rng(seed)
    idx: list[np.ndarray] = []
    while sum(i.size for i in idx) < n_query:
        j = int(rng.integers(db.n_clips))
        idx.append(np.arange(db.clip_starts[j], db.clip_starts[j + 1]))
    idx_all = np.concatenate(idx)[:n_query]
    truth = db.frames[idx_all]
    std = db.frames[:: max(1, db.n_frames // 20000)].std(axis=0)
    q = truth + NOISE["medium"] * std * rng.standard_normal(truth.shape)
    p = replace(params, eps=eps, backend="KDTREE" if eps > 0 else params.backend)
    t0 = time.perf_counter()
    index = db.index(np.arange(db.frames.shape[1]), options=p.checked(db.n_frames).index_options())
    build_s = time.perf_counter() - t0
    b = reconstruct(db, q, p, index=index)
    recall = float(index.recall) if index.recall is not None else float("nan")
    if eps > 0:
        exact = db.tree(np.arange(db.frames.shape[1]))
        n = min(20, q.shape[0])
        _, ie = exact.query(q[:n], k=params.k)
        _, ia = exact.query(q[:n], k=params.k, eps=eps)
        recall = float(np.mean([np.intersect1d(x, y).size / params.k for x, y in zip(ie, ia)]))
    s = 1000.0 * b.seconds[5:] if b.seconds.shape[0] > 10 else 1000.0 * b.seconds
    search = f"KDTREE eps {eps:g}" if eps > 0 else (index.backend if params.backend == index.backend
                                                    else f"{params.backend} → {index.backend}")
    return dict(knn=float(np.median(s[:, 0])), graph=float(np.median(s[:, 1])), synthesis=float(np.median(s[:, 2])),
                total=float(np.median(s.sum(axis=1))), mean_total=float(np.mean(s.sum(axis=1))),
                frames=int(q.shape[0]), hits=float(np.mean(b.best_index == idx_all)), eps=eps, recall=recall,
                search=search, build_s=build_s)


def random_walk_db(n_frames: int, seed: int, dims: int = 39) -> MotionDatabase:
    clips = smooth_random_walk(n_frames, dims, seed)
    return MotionDatabase.from_clips(clips, [f"c{i:02d}" for i in range(dims)])


def latency(quick: bool, seed: int) -> dict:
    n_seed = 4000 if quick else 16623
    n_q = 40 if quick else 300
    db = random_walk_db(n_seed, seed)
    kt = []
    for k in ((128, 256) if quick else (128, 256, 512, 1024)):
        t0 = time.perf_counter()
        r = latency_run(db, OLNGParams(k=k, window=32), n_q, seed + k)
        log(f"  latency K x T = {k} x 32 on {db.n_frames} frames: total {r['total']:.2f} ms "
            f"({time.perf_counter() - t0:.1f} s)")
        kt.append(dict(k=k, t=32, db_frames=db.n_frames, **r))
    sizes = []
    plan = [(n_seed, n_q, db)]
    plan += [(20000, 40, None)] if quick else [(100_000, 300, None), (1_000_000, 60, None)]
    for n, nq, dbn in plan:
        if dbn is None:
            t0 = time.perf_counter()
            dbn = random_walk_db(n, seed + n)
            log(f"  {n} frames generated in {time.perf_counter() - t0:.1f} s")
        for eps in (0.0, APPROX_EPS) if dbn.n_frames >= 100_000 or quick else (0.0,):
            r = latency_run(dbn, OLNGParams(k=256, window=32), nq, seed + 7, eps)
            log(f"  latency 256 x 32 on {dbn.n_frames} frames, {r['search']}: total {r['total']:.2f} ms over {nq} frames")
            sizes.append(dict(db_frames=dbn.n_frames, mb=dbn.frames.nbytes / 1e6, **r))
        if dbn is not db:
            del dbn
    return dict(kt=kt, sizes=sizes)


# --------------------------------------------------------------------------------------------------
# scale (issue 18): databases of 16k to 10M frames, one process per case


def mirrored_arkit(channels: list[str]) -> np.ndarray:
    """Column order that swaps each Left blendshape with its Right twin (a mirrored face)."""
    where = {c: i for i, c in enumerate(channels)}
    out = []
    for c in channels:
        twin = re.sub("Left|Right", lambda m: "Right" if m.group() == "Left" else "Left", c)
        out.append(where.get(twin, where[c]))
    return np.asarray(out)


def scale_clips(kind: str, size: int, seed: int) -> tuple[list[np.ndarray], list[str], np.ndarray | None]:
    """Clips of about ``size`` frames in all, their channels and each row's source frame (or None).

    ``walks``: smooth random walks, 39 channels, 300-frame clips (the seed's random data).
    ``shared``: windows of 90-300 frames of the facial takes in ../shared/data/facial, half of them
    mirrored (Left and Right blendshapes swapped); a row's source is its take frame (mirrored frames
    are other sources), so a hit is the queried take frame in any window.
    """
    if kind == "walks":
        return smooth_random_walk(size, 39, seed, clip_len=300), [f"c{i:02d}" for i in range(39)], None
    if kind != "shared":
        raise ValueError(f"unknown data kind {kind!r}")
    csvs = sorted(FACIAL_DIR.glob("*.csv"))
    if not csvs:
        raise FileNotFoundError(f"no facial CSVs in {FACIAL_DIR}: the shared data kind needs them")
    segments = [s for c in csvs for s in read_live_link_csv(c).segments if s.shape[0] >= 90]
    channels = list(ARKIT_BLENDSHAPES)
    mirror = mirrored_arkit(channels)
    starts = np.concatenate([[0], np.cumsum([s.shape[0] for s in segments])])
    n_source = int(starts[-1])
    rng = np.random.default_rng(seed)
    clips, sources, total = [], [], 0
    while total < size:
        j = int(rng.integers(len(segments)))
        seg = segments[j]
        length = int(min(rng.integers(90, 301), seg.shape[0], size - total))
        a = int(rng.integers(0, seg.shape[0] - length + 1))
        flip = bool(rng.integers(2))
        window = seg[a : a + length]
        clips.append(window[:, mirror] if flip else window)
        sources.append(starts[j] + a + np.arange(length) + (n_source if flip else 0))
        total += length
    return clips, channels, np.concatenate(sources)


def scale_section(args) -> list[dict]:
    sizes = tuple(int(s) for s in args.scale_sizes.split(","))
    kinds = tuple(k for k in args.scale_kinds.split(",") if k)
    if "shared" in kinds and not sorted(FACIAL_DIR.glob("*.csv")):
        log(f"scale: no facial CSVs in {FACIAL_DIR}: the 'shared' rows are skipped")
        kinds = tuple(k for k in kinds if k != "shared")
    backends = tuple(b for b in args.scale_backends.split(",") if b) or None
    cases = motion_db_scale.plan_cases(sizes, kinds, backends, args.scale_query, args.seed)
    return motion_db_scale.run_cases(cases, Path(__file__).resolve(), args.scale_timeout)


# --------------------------------------------------------------------------------------------------
# report


def pct(a: int, n: int) -> str:
    return f"{a} ({100.0 * a / n:.0f} %)"


def scenario_rows(res: dict):
    """Cells of the scenarios table: the seed's published rows, then ours (full input)."""
    for key, s in SEED_SCENARIOS.items():
        hits = (f"{100 * s['hits_nn']:.0f} %", f"{100 * s['hits_olng']:.0f} %") if "hits_nn" in s else ("–", "–")
        yield ("seed (39 control points)", key, "–", 16623, f"{s['noise']:.3g}", f"{s['nn']:.3g}", f"{s['olng']:.3g}",
               f"{s['synth']:.3g}", s["length"], *hits, "–", "~5.3")
    for r in res["scenarios"]:
        if r["input"] != "full":
            continue
        hits = ((pct(r["hits_nn"], r["hits_total"]), pct(r["hits_olng"], r["hits_total"]),
                 pct(r["near_olng"], r["hits_total"])) if "hits_total" in r else ("–", "–", "–"))
        yield (r["dataset"], f"{r['scenario']} {r['label']}", r["frames"], r["db_frames"], fmt(r["noise"]),
               fmt(r["nn"]), fmt(r["olng"]), fmt(r["synth"]), f"{r['length']:.1f}", *hits, fmt(r["ms_total"]))


def partial_rows(res: dict, part: list[dict]):
    """Cells of the partial-input table: each scenario with full input, then without the eyes (and the ratios)."""
    for r in part:
        full = next(f for f in res["scenarios"] if f["input"] == "full" and f["dataset"] == r["dataset"]
                    and f["scenario"] == r["scenario"])
        for x in (full, r):
            ratios = (("–", "–", "–") if x is full else
                      (f"{r['nn'] / full['nn']:.2f}", f"{r['olng'] / full['olng']:.2f}", f"{r['synth'] / full['synth']:.2f}"))
            yield (x["dataset"], x["scenario"], x["query_channels"], fmt(x["nn"]), fmt(x["olng"]), fmt(x["synth"]),
                   fmt(x["eye_nn"]), fmt(x["eye_olng"]), fmt(x["eye_synth"]),
                   pct(x["hits_olng"], x["hits_total"]) if "hits_total" in x else "–", *ratios)


def latency_markdown(lat: dict) -> list[str]:
    lines = ["## 3. Latency per frame (median ms; Step.seconds)", "",
             "Smooth random-walk data, 39 channels, clips of 250 frames; the query is made of database clips + "
             "medium noise. Seed: i7 620M, C++ with ANN and L-BFGS.", ""]
    lines += report.table(("K x T", "database frames", "query frames", "k-NN", "graph update", "synthesis", "total",
                           "seed k-NN", "seed graph", "seed synthesis", "seed total"), "lrrrrrrrrrr",
                          ((f"{r['k']} x {r['t']}", r["db_frames"], r["frames"], fmt(r["knn"]), fmt(r["graph"]),
                            fmt(r["synthesis"]), f"**{fmt(r['total'])}**", *(f"{v:g}" for v in SEED_KT[r["k"]]))
                           for r in lat["kt"]))
    lines += ["", "Database sizes at 256 x 32; the search AUTO picks (`motiondb.knn`: exact below 50,000 frames, IVF-PQ "
              "above; recall@256 as its build measured it) and cKDTree's approximate search (eps = "
              f"{APPROX_EPS:g}; recall = share of the exact 256 neighbours returned, over 20 query frames). The "
              "scale section compares every backend.", ""]
    rows = [(r["db_frames"], f"{r['mb']:.0f}", r["search"], f"{r['build_s']:.2f}", f"{r['recall']:.2f}", r["frames"],
             fmt(r["knn"]), fmt(r["graph"]), fmt(r["synthesis"]), f"**{fmt(r['total'])}**", fmt(r["mean_total"]),
             f"{100 * r['hits']:.0f} %") for r in lat["sizes"]]
    rows.append(("seed: 5 / 30 / 100 MB random data (float32 x 39: about 32k / 190k / 640k frames)", *[""] * 8,
                 " / ".join(f"{v:g}" for v in SEED_SIZES.values()), "", ""))
    return lines + report.table(("database frames", "MB (float64)", "search", "index build s", "recall",
                                 "query frames", "k-NN", "graph update", "synthesis", "total", "mean total",
                                 "OLNG correct hits"), "rrlrrrrrrrrr", rows)


def markdown(res: dict) -> str:
    p = res["params"]
    lines = ["# Motion-database benchmark (Richert OLNG)", "",
             f"Commit {res['commit']}, {res['machine']}, {res['mode']} run. OLNG K = {p['k']}, T = {p['window']}, "
             f"I = {p['paths']}, a = {p['a']}, b = {p['b']}, stay = {p['stay']}; seed {res['seed']}.", "",
             "Error: mean over frames of the Euclidean distance between the output pose and the true (noiseless) "
             "query pose over all channels (the seed's measure). Noise: Gaussian, per channel "
             + ", ".join(f"{k} {v:g}" for k, v in NOISE.items() if v) + " x the channel's standard deviation over "
             "the dataset. NN: plain nearest neighbour (k = 1) per frame; OLNG: the best path's last frame; "
             "synthesis: the weighted geometric median of the best I paths (motiondb.synthesize).", ""]
    lines += ["## Datasets", ""]
    lines += report.table(("dataset", "recording", "frames used", "clips", "rate", "notes"), "llrrrl",
                          ((f"{d['name']} ({d['channels']} channels)", r["name"], r["frames"], r["clips"],
                            f"{r['fps']:.1f}/s", r["note"]) for d in res["datasets"] for r in d["recordings"]))
    lines += ["", "## 1. Scenarios (seed section 4.2.1)", ""]
    lines += report.table(("dataset", "scenario", "query frames", "database frames", "avg noise", "nearest neighbour",
                           "OLNG best path", "synthesis", "avg best-path length", "correct hits NN",
                           "correct hits OLNG", "OLNG within 2 frames", "median ms/frame"), "llrrrrrrrrrrr",
                          scenario_rows(res))
    part = [r for r in res["scenarios"] if r["input"] == "no eyes"]
    if part:
        lines += ["", "## 2. Partial input: the 14 eye channels dropped from the query (output: all channels)", "",
                  "Errors over all channels against the true pose; 'eyes' = over the 14 eye channels only; "
                  "ratio = partial / full input (the seed: full input about 4-8 % better).", ""]
        lines += report.table(("dataset", "scenario", "input channels", "NN", "OLNG", "synthesis", "NN eyes",
                               "OLNG eyes", "synthesis eyes", "correct hits OLNG", "ratio NN", "ratio OLNG",
                               "ratio synthesis"), "llrrrrrrrrrrr", partial_rows(res, part))
    if res.get("feature"):
        lines += ["", "## 1b. The velocity query feature (motiondb.features, optional): the same queries with and without",
                  "", "The query is the pose plus a weighted causal least-squares velocity over the last frames "
                  "(`MotionFeature()` defaults); the output keeps the database's channels.", ""]
        lines += motion_features.markdown(res["feature"])
    lines += [""] + latency_markdown(res["latency"])
    if res.get("scale"):
        lines += [""] + motion_db_scale.markdown(res["scale"])
    lines += ["", "## Goals", ""] + [f"- {g}" for g in res["goals"]]
    return "\n".join(lines) + "\n"


def goals(res: dict) -> list[str]:
    out = []
    kt = next((r for r in res["latency"]["kt"] if r["k"] == 256), None)
    if kt:
        ok = kt["total"] <= GOAL_16K_MS
        out.append(f"total per frame at 256 x 32 on {kt['db_frames']} frames <= {GOAL_16K_MS} ms: "
                   f"{'met' if ok else 'NOT met'} ({kt['total']:.2f} ms: k-NN {kt['knn']:.2f}, graph "
                   f"{kt['graph']:.2f}, synthesis {kt['synthesis']:.2f})")
    big = [r for r in res["latency"]["sizes"] if r["db_frames"] >= 1_000_000]
    for r in big:
        kind = f"{r['search']}, recall@256 {r['recall']:.2f}"
        out.append(f"total per frame at 256 x 32 on {r['db_frames']} frames <= {GOAL_1M_MS} ms ({kind}): "
                   f"{'met' if r['total'] <= GOAL_1M_MS else 'NOT met'} ({r['total']:.2f} ms, k-NN {r['knn']:.2f} ms; "
                   f"{r['frames']} query frames)")
    if not big:
        out.append("1M-frame database: not measured in this (quick) run")
    for r in res["scenarios"]:
        if r["scenario"] == "#1" and r["input"] == "full":
            rate = r["hits_olng"] / r["hits_total"]
            out.append(f"correct-hit rate on #1 >= {100 * GOAL_HITS:.0f} % ({r['dataset']}): "
                       f"{'met' if rate >= GOAL_HITS else 'NOT met'} ({100 * rate:.1f} % OLNG, "
                       f"{100 * r['hits_nn'] / r['hits_total']:.1f} % nearest neighbour; OLNG within 2 frames "
                       f"of the true one {100 * r['near_olng'] / r['hits_total']:.1f} %)")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer queries, small latency databases, no 1M case")
    p.add_argument("--synthetic", action="store_true", help="generated facial-like data only (no ../shared/data)")
    p.add_argument("--facial", default=str(FACIAL_DIR), help="folder of Live Link Face CSVs")
    p.add_argument("--mocap", default=str(MOCAP_DIR), help="folder of BVH clips ('' skips them)")
    p.add_argument("--no-latency", action="store_true", help="skip section 3")
    p.add_argument("--no-feature", action="store_true", help="skip the velocity query feature's with / without rows")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--out", default=str(be.REPO_ROOT / "out" / "benchmark_motion_db"))
    p.add_argument("--scale", action="store_true", help="the scale section (issue 18): k-NN backends on "
                   "databases of 16k to 10M frames, each case in its own process")
    p.add_argument("--scale-only", action="store_true", help="only the scale section (implies --scale)")
    p.add_argument("--scale-sizes", default=",".join(str(s) for s in motion_db_scale.SIZES))
    p.add_argument("--scale-kinds", default="walks,shared", help="walks (random walks, 39 channels) and/or "
                   "shared (windows and mirrored copies of the facial takes)")
    p.add_argument("--scale-backends", default="", help="comma-separated subset of AUTO,KDTREE,FLAT,HNSW,IVF")
    p.add_argument("--scale-query", type=int, default=600, help="query frames streamed per case (half at 10M)")
    p.add_argument("--scale-timeout", type=float, default=3600.0, help="seconds per case")
    p.add_argument("--scale-case", default="", help=argparse.SUPPRESS)  # one case, in a child process
    args = p.parse_args(argv)
    if args.scale_case:
        print(json.dumps(motion_db_scale.run_case(json.loads(args.scale_case), scale_clips)), flush=True)
        return 0
    if args.scale_only:
        t_start = time.perf_counter()
        res = dict(commit=report.source_commit(), machine=f"{report.machine()}, numpy {np.__version__}",
                   seed=args.seed, scale=scale_section(args))
        res["seconds"] = time.perf_counter() - t_start
        report.publish(args.out, "benchmark_motion_db_scale",
                       "\n".join(["# Motion-database benchmark: scale (issue 18)", "",
                                  f"Commit {res['commit']}, {res['machine']}; seed {args.seed}.", ""]
                                 + motion_db_scale.markdown(res["scale"]))
                       + f"\nRun time {res['seconds']:.0f} s.\n", res)
        return 0
    params = OLNGParams()
    datasets: list[Dataset] = []
    facial = Path(args.facial)
    csvs = sorted(facial.glob("*.csv")) if facial.is_dir() and not args.synthetic else []
    if csvs:
        datasets.append(Dataset("facial", [read_live_link_csv(c) for c in csvs], list(ARKIT_BLENDSHAPES)))
    else:
        log("facial CSVs not used: generated facial-like data instead")
        datasets.append(Dataset("facial (generated)", synthetic_facial(args.seed), list(ARKIT_BLENDSHAPES)))
    mocap = Path(args.mocap) if args.mocap else None
    if mocap and mocap.is_dir() and not args.synthetic and not args.quick:
        recs, chans = bvh_recordings(mocap)
        if len(recs) >= 2:
            datasets.append(Dataset("BVH (CMU skeleton)", recs, chans))
    res: dict = dict(commit=report.source_commit(), machine=f"{report.machine()}, numpy {np.__version__}",
                     mode="quick" if args.quick else "full", seed=args.seed, noise=NOISE,
                     params=dict(k=params.k, window=params.window, paths=params.paths, a=params.a, b=params.b,
                                 stay=params.stay),
                     datasets=[], scenarios=[])
    t_start = time.perf_counter()
    for i, ds in enumerate(datasets):
        res["datasets"].append(dict(name=ds.name, channels=len(ds.channels), recordings=[
            dict(name=r.name, frames=r.n_frames, clips=sum(1 for o in ds.owner if o == j), fps=r.fps, note=r.note)
            for j, r in enumerate(ds.recordings)]))
        log(f"{ds.name}: {len(ds.clips)} clips, {sum(c.shape[0] for c in ds.clips)} frames")
        res["scenarios"] += scenarios(ds, params, args.quick, args.seed + 100 * i, partial=ds.name.startswith("facial"))
        if not args.no_feature:  # the same queries (same random draws) with and without the velocity feature
            res.setdefault("feature", []).extend(motion_features.compare(
                ds, params, {"off": None, "on (default)": MotionFeature()}, args.seed + 100 * i, args.quick))
    if args.no_latency:
        res["latency"] = dict(kt=[], sizes=[])
    else:
        log("latency")
        res["latency"] = latency(args.quick, args.seed)
    if args.scale:
        log("scale")
        res["scale"] = scale_section(args)
    res["goals"] = goals(res)
    res["seconds"] = time.perf_counter() - t_start
    report.publish(args.out, "benchmark_motion_db", markdown(res) + f"\nRun time {res['seconds']:.0f} s.\n", res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
