"""Motion-manifold benchmark (Eslitzbichler): loops, clustering by motion type, timings — side by side.

Run from the repository root with the project's venv python (bpy as a module)::

    .venv/bin/python scripts/benchmark_motion.py            # every clip in ../shared/data/mocap
    .venv/bin/python scripts/benchmark_motion.py --quick    # 3 walks, 5 clips for clustering, fewer repeats

Writes ``out/benchmark_motion/benchmark_motion.md`` and ``.json`` (``--out`` changes the folder) and
prints the markdown. BVH clips are read through Blender (its own importer; every F-curve sampled at
the integer frames with ``fcurve.evaluate``; world joint heads through the depsgraph) and cached in
``OUT/cache/<clip>.npz``, so later runs do not import again. The core is called directly:
``anim_signals.manifolds`` (``loop`` / ``elastic`` / ``srv`` / ``clips`` / ``skeleton``).

1. **Loops** on every walking clip (the 9 Xia walks, cmu_131_01, cmu_iclone_02_01_walk): the range from
   ``loop.find_cycle`` on the continuous rotation + location curve (root horizontal location channels
   = travel), then ours (``loop.make_loop``) vs a linear crossfade over the same window
   (``loop.crossfade_loop``) vs Blender's Cycles modifier alone (the original segment played
   cyclically). Seam jumps in pose and velocity (rotation channels in degrees; world joints scaled to a
   1.75 m figure), the clip's median frame-to-frame change, RMS change from the original, and the goal
   "seam jumps <= median frame-to-frame change" for every rotation channel.
2. **Clustering** all clips by motion type on non-overlapping 2 s windows compared with
   ``skeleton.body_features`` (works across the three rigs): elastic distance (closed curves, as the
   seed) vs linear L2; cluster purity (n_clusters = number of labels) and nearest-neighbour accuracy.
3. **Times**: ``srv.project_closed`` (100 and 1,000 frames x 96 channels), one elastic distance
   (100 samples x 96 channels, open and closed), and the distance matrices of section 2.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
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

from anim_signals.manifolds import clips as motion  # noqa: E402
from anim_signals.manifolds import elastic, loop, skeleton, srv  # noqa: E402

DATA_DIR = be.REPO_ROOT.parent / "shared" / "data" / "mocap"
CACHE_VERSION = 3
FIGURE_CM = 175.0  # world jumps are reported as if the figure were 1.75 m tall
FLOOR_DEG = 0.01  # channels moving less than this per frame are compared with this (float32 keys)
WINDOW_S = 2.0

XIA = ("angry_13_000", "depressed_13_000", "depressed_18_000", "neutral_01_000", "neutral_16_000", "old_13_000",
       "sexy_01_000", "sexy_01_001", "strutting_01_000")
WALKS = XIA + ("cmu_131_01", "cmu_iclone_02_01_walk")
LABELS = {**{c: "walk" for c in WALKS}, "cmu_131_03": "hop", "acrnn_salsa_10": "dance",
          "acrnn_martial_04": "martial", "cmu_iclone_02_05_punch": "punch"}
QUICK_WALKS = ("angry_13_000", "depressed_18_000", "cmu_iclone_02_01_walk")
QUICK_CLUSTER = ("angry_13_000", "old_13_000", "cmu_131_01", "cmu_131_03", "acrnn_salsa_10", "cmu_iclone_02_05_punch")
QUICK_MAX_WINDOWS = 3

# --------------------------------------------------------------------------------------------------
# data: BVH -> sampled arrays (cached)


MOTION_KIND = {"rotation": motion.EULER, "quaternion": motion.QUATERNION}


def owner_of(data_path: str) -> str:
    if data_path.startswith('pose.bones["'):
        return data_path[len('pose.bones["'):].split('"]', 1)[0]
    return ""


def import_clip(path: Path):
    """Import a BVH into an empty scene; returns the armature object."""
    be.import_bpy()
    be.clear_scene()
    return be.import_bvh(path)


def sample_clip(path: Path) -> dict:
    ob = import_clip(path)
    fcs = be.action_fcurves(ob)
    lo, hi = be.fcurve_frame_range(fcs)
    frames = np.arange(math.floor(lo), math.ceil(hi) + 1, dtype=np.float64)
    values = be.sample_fcurves(fcs, frames)
    names, parents = be.armature_hierarchy(ob)
    t0 = time.perf_counter()
    heads = be.joint_heads(ob, frames)
    return dict(
        frames=frames, values=values, heads=heads,
        kinds=np.array([be.channel_kind(fc) for fc in fcs]),
        paths=np.array([fc.data_path for fc in fcs]), indices=np.array([fc.array_index for fc in fcs]),
        travel=np.array(be.travel_channels(ob, fcs), dtype=int),
        names=np.array(names), parents=np.array(parents, dtype=int),
        rotation_modes=np.array([pb.rotation_mode for pb in ob.pose.bones]),
        fps=np.array(1.0 / be.bvh_frame_time(path)), heads_seconds=np.array(time.perf_counter() - t0),
    )


def load_clip(path: Path, cache_dir: Path, use_cache=True) -> dict:
    st = path.stat()
    key = f"v{CACHE_VERSION}-{st.st_size}-{st.st_mtime_ns}"
    cache = cache_dir / f"{path.stem}.npz"
    if use_cache and cache.is_file():
        with np.load(cache, allow_pickle=False) as z:
            if str(z["key"]) == key:
                return {k: z[k] for k in z.files if k != "key"}
    t0 = time.perf_counter()
    data = sample_clip(path)
    log(f"  sampled {path.stem}: {data['values'].shape[0]} frames x {data['values'].shape[1]} channels, "
        f"{data['heads'].shape[1]} joints ({time.perf_counter() - t0:.1f} s)")
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(cache, key=np.array(key), **data)
    return data


def clip_curve(data: dict) -> tuple[np.ndarray, list[str], list[str]]:
    """As the operators do: Euler wraps and gimbal flips removed with each bone's rotation order."""
    kinds = [MOTION_KIND.get(str(k), motion.LOCATION) for k in data["kinds"]]
    owners = [owner_of(str(p)) for p in data["paths"]]
    mode_of = {f'pose.bones["{n}"]': str(m) for n, m in zip(data["names"], data["rotation_modes"])}
    modes = [mode_of.get(o) for o in owners]
    curve = motion.to_motion_curve(data["values"], kinds, owners, modes, [int(i) for i in data["indices"]])
    return curve, kinds, owners


def figure_height(heads: np.ndarray) -> float:
    """Median over frames of the vertical extent of the joints (scene units)."""
    return float(np.median(heads[:, :, 2].max(axis=1) - heads[:, :, 2].min(axis=1)))


# --------------------------------------------------------------------------------------------------
# 1. loops


def rotation_scale(kinds) -> np.ndarray:
    """Per channel: degrees per unit for rotations (a quaternion component change e ~ 2e radians), else NaN."""
    out = np.full(len(kinds), np.nan)
    for j, k in enumerate(kinds):
        if k == motion.EULER:
            out[j] = be.DEG
        elif k == motion.QUATERNION:
            out[j] = 2.0 * be.DEG
    return out


def _axis_rot(axis: str, a: np.ndarray) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    o, z = np.ones_like(a), np.zeros_like(a)
    rows = {"X": [[o, z, z], [z, c, -s], [z, s, c]], "Y": [[c, z, s], [z, o, z], [-s, z, c]],
            "Z": [[c, -s, z], [s, c, z], [z, z, o]]}[axis]
    return np.moveaxis(np.array(rows), (0, 1), (-2, -1))


def euler_bones(data: dict) -> list[tuple[str, list[int], str]]:
    """(bone, its 3 rotation_euler columns in X, Y, Z order, rotation mode) of every Euler bone."""
    cols: dict[str, dict[int, int]] = {}
    for j, (p, i) in enumerate(zip(data["paths"], data["indices"])):
        p = str(p)
        if p.endswith(".rotation_euler"):
            cols.setdefault(owner_of(p), {})[int(i)] = j
    modes = dict(zip(map(str, data["names"]), map(str, data["rotation_modes"])))
    return [(b, [c[0], c[1], c[2]], modes.get(b, "XYZ")) for b, c in cols.items() if len(c) == 3]


def bone_matrices(v: np.ndarray, bones) -> np.ndarray:
    """Euler channel values (N, M) -> rotation matrices (N, bones, 3, 3) (Blender: order XYZ = X first)."""
    out = np.empty((v.shape[0], len(bones), 3, 3))
    for b, (_, cols, mode) in enumerate(bones):
        order = mode if len(mode) == 3 and set(mode) == set("XYZ") else "XYZ"
        ang = dict(zip("XYZ", (v[:, cols[0]], v[:, cols[1]], v[:, cols[2]])))
        r = _axis_rot(order[0], ang[order[0]])
        for ax in order[1:]:
            r = _axis_rot(ax, ang[ax]) @ r
        out[:, b] = r
    return out


def rot_angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Geodesic angle (degrees) between rotation matrices a and b (broadcast over leading axes)."""
    # |A - B|_F = 2 sqrt(2) sin(angle / 2): accurate for small angles, unlike arccos of the trace
    chord = np.sqrt(np.einsum("...ij,...ij->...", a - b, a - b)) / (2.0 * np.sqrt(2.0))
    return np.degrees(2.0 * np.arcsin(np.clip(chord, 0.0, 1.0)))


def bone_metrics(v: np.ndarray, seg: np.ndarray, bones) -> dict:
    """Seam and change in rotation space (independent of the Euler parametrisation): per bone the angle
    between the last and first pose, between the last and first frame-to-frame rotations, and the RMS
    angle from the original; goal per bone vs its median frame-to-frame rotation (and its change)."""
    r, r0 = bone_matrices(v, bones), bone_matrices(seg, bones)
    pose = rot_angle(r[-1], r[0])
    step_end = np.einsum("bij,bkj->bik", r[-1], r[-2])
    step_start = np.einsum("bij,bkj->bik", r[1], r[0])
    vel = rot_angle(step_end, step_start)
    steps = rot_angle(r0[1:], r0[:-1])  # (N-1, bones)
    rel = np.einsum("nbij,nbkj->nbik", r0[1:], r0[:-1])
    accel = rot_angle(rel[1:], rel[:-1])
    med_step = np.maximum(np.median(steps, axis=0), FLOOR_DEG)
    med_acc = np.maximum(np.median(accel, axis=0), FLOOR_DEG)
    dev = rot_angle(r, r0)
    return dict(bone_pose_deg=float(pose.max()), bone_velocity_deg=float(vel.max()),
                bone_pose_ratio=float(np.max(pose / med_step)), bone_velocity_ratio=float(np.max(vel / med_acc)),
                bone_passes=bool(np.all(pose <= med_step) and np.all(vel <= med_acc)),
                bone_rms_deg=float(np.sqrt(np.mean(dev * dev))),
                worst_bone=bones[int(np.argmax(pose / med_step))][0])


def seam_metrics(v: np.ndarray, seg: np.ndarray, travel, rot_scale, med1, med2) -> dict:
    sj = loop.seam_jump(v, travel)
    rot = np.isfinite(rot_scale)
    pose = sj.pose[rot] * rot_scale[rot]
    vel = sj.velocity[rot] * rot_scale[rot]
    step = np.maximum(med1[rot] * rot_scale[rot], FLOOR_DEG)
    acc = np.maximum(med2[rot] * rot_scale[rot], FLOOR_DEG)
    dev = (v - seg)[:, rot] * rot_scale[rot]
    return dict(
        pose_deg=float(pose.max()), velocity_deg=float(vel.max()),
        pose_ratio=float(np.max(pose / step)), velocity_ratio=float(np.max(vel / acc)),
        channels_over=int(np.sum((pose > step) | (vel > acc))),
        passes=bool(np.all(pose <= step) and np.all(vel <= acc)),
        rms_deg=float(np.sqrt(np.mean(dev * dev))),
    )


def world_seam(heads4: np.ndarray, roots, travel: bool) -> tuple[float, float]:
    """heads at (lo, lo+1, hi-1, hi) -> max joint pose jump and velocity jump (scene units)."""
    offset = np.zeros(3)
    if travel:
        offset = (heads4[3, roots] - heads4[0, roots]).mean(axis=0)
        offset[2] = 0.0
    pose = np.linalg.norm(heads4[3] - heads4[0] - offset, axis=-1).max()
    vel = np.linalg.norm((heads4[3] - heads4[2]) - (heads4[1] - heads4[0]), axis=-1).max()
    return float(pose), float(vel)


def world_heads_for(ob, frames4, seg_frames, values_all):
    """Heads at ``frames4`` with the action's keys on ``seg_frames`` replaced by ``values_all``."""
    act = be.copy_action_with_values(ob, seg_frames, values_all, name="bench_loop")
    try:
        with be.playing(ob, act):
            return be.joint_heads(ob, frames4)
    finally:
        be.import_bpy().data.actions.remove(act)


def loop_clip(name: str, path: Path, data: dict, args) -> dict:
    curve, kinds, owners = clip_curve(data)
    # as make_cyclic: horizontal root channels that really move forward (not the sideways sway)
    travel = loop.select_travel(curve, [int(t) for t in data["travel"]])
    fps = float(data["fps"])
    # a gait cycle (stride) lasts about a second: a minimum in seconds keeps find_cycle off half-strides
    min_period = min(int(round(args.min_period_s * fps)), curve.shape[0] - 1) if args.min_period_s > 0 else None
    weights = None
    if args.cycle_weights == "height":
        # radians and scene units (cm on the iClone rig) in one norm let the root's height decide the
        # cycle: a move of half the figure's height counts as one radian
        loc = np.array([k == motion.LOCATION for k in kinds])
        weights = np.where(loc, 2.0 / figure_height(data["heads"]), 1.0)
    t0 = time.perf_counter()
    cyc = loop.find_cycle(curve, travel=travel, min_period=min_period, weights=weights)
    t_find = time.perf_counter() - t0
    seg = curve[cyc.start:cyc.stop + 1]
    n = seg.shape[0]
    window = int(np.clip(round((n - 1) / 10), 3, 24))  # make_loop's default velocity window
    t0 = time.perf_counter()
    res = loop.make_loop(seg, travel=travel, weights=weights)
    t_loop = time.perf_counter() - t0
    methods = {
        "ours (make_loop)": res.values,
        "crossfade (same window)": loop.crossfade_loop(seg, window, travel),
        "Cycles modifier alone": seg,
    }
    rot_scale = rotation_scale(kinds)
    med1, med2 = loop.median_frame_change(seg)
    rot = np.isfinite(rot_scale)
    heads = data["heads"]
    height = figure_height(heads)
    to_cm = FIGURE_CM / height
    parents = [int(p) for p in data["parents"]]
    roots = [i for i, p in enumerate(parents) if p < 0] or [0]
    # typical world frame-to-frame change of the joints relative to the root's horizontal travel
    hs = heads[cyc.start:cyc.stop + 1].copy()
    root_xy = hs[:, roots].mean(axis=1)
    root_xy[:, 2] = 0.0
    rel = hs - root_xy[:, None, :]
    step_world = float(np.median(np.linalg.norm(np.diff(rel, axis=0), axis=-1).max(axis=1)))
    acc_world = float(np.median(np.linalg.norm(np.diff(rel, n=2, axis=0), axis=-1).max(axis=1)))
    row = dict(
        clip=name, frames=int(curve.shape[0]), channels=int(curve.shape[1]), fps=fps,
        cycle=[int(data["frames"][cyc.start]), int(data["frames"][cyc.stop])], period=int(cyc.period),
        period_s=cyc.period / fps, cycle_score=float(cyc.score), travel_channels=len(travel), window=window,
        min_period=min_period, cycle_weights=args.cycle_weights,
        median_step_deg=float(np.median(med1[rot] * rot_scale[rot])),
        max_median_step_deg=float(np.max(med1[rot] * rot_scale[rot])),
        median_accel_deg=float(np.median(med2[rot] * rot_scale[rot])),
        world_step_cm=step_world * to_cm, world_accel_cm=acc_world * to_cm, figure_height_units=height,
        iterations=int(res.iterations), residual=float(res.residual), converged=bool(res.converged),
        find_cycle_s=t_find, make_loop_s=t_loop, methods={},
    )
    bones = euler_bones(data)
    for label, v in methods.items():
        row["methods"][label] = seam_metrics(v, seg, travel, rot_scale, med1, med2)
        if bones:
            row["methods"][label].update(bone_metrics(v, seg, bones))
    if not args.no_world:
        ob = import_clip(path)
        fcs = be.action_fcurves(ob)
        if [fc.data_path for fc in fcs] != [str(p) for p in data["paths"]]:
            raise RuntimeError(f"{name}: F-curve order differs from the cache; rerun with --no-cache")
        seg_frames = data["frames"][cyc.start:cyc.stop + 1]
        lo, hi = int(seg_frames[0]), int(seg_frames[-1])
        frames4 = [lo, lo + 1, hi - 1, hi]
        for label, v in methods.items():
            vals = motion.from_motion_curve(v, kinds, owners)
            h4 = world_heads_for(ob, frames4, seg_frames, vals)
            p, vel = world_seam(h4, roots, bool(travel))
            m = row["methods"][label]
            m["world_pose_cm"], m["world_velocity_cm"] = p * to_cm, vel * to_cm
    return row


def available_clips(names, args, cache_dir: Path):
    """(name, path, sampled data) of each clip of ``names`` in the data folder (missing ones are skipped)."""
    for name in names:
        path = Path(args.data) / f"{name}.bvh"
        if not path.is_file():
            log(f"  {name}: missing, skipped")
            continue
        yield name, path, load_clip(path, cache_dir, not args.no_cache)


def section_loops(args, cache_dir: Path) -> list[dict]:
    rows = []
    for name, path, data in available_clips(QUICK_WALKS if args.quick else WALKS, args, cache_dir):
        try:
            row = loop_clip(name, path, data, args)
        except ValueError as ex:
            row = dict(clip=name, error=str(ex))
        rows.append(row)
        if "error" in row:
            log(f"  loop {name}: ERROR {row['error']}")
        else:
            o = row["methods"]["ours (make_loop)"]
            log(f"  loop {name}: cycle {row['cycle']} ({row['period_s']:.2f} s), ours pose {o['pose_deg']:.3g} deg "
                f"velocity {o['velocity_deg']:.3g} deg/frame, rms {o['rms_deg']:.3g} deg, pass {o['passes']}")
    return rows


# --------------------------------------------------------------------------------------------------
# 2. clustering by motion type


def windows_of(feats: np.ndarray, fps: float, max_windows: int | None = None) -> list[tuple[int, np.ndarray]]:
    """Non-overlapping WINDOW_S windows (start frame index, samples); a shorter clip is one window."""
    w = int(round(WINDOW_S * fps))
    n = feats.shape[0]
    if n < w:
        out = [(0, feats)]
    else:
        out = [(k * w, feats[k * w:(k + 1) * w]) for k in range(n // w)]
    return out[:max_windows] if max_windows else out


def purity(labels_true, clusters) -> float:
    total = 0
    for c in set(clusters):
        members = [t for t, k in zip(labels_true, clusters) if k == c]
        total += max(members.count(t) for t in set(members))
    return total / len(labels_true)


def nn_accuracy(d: np.ndarray, labels, sources, *, cross_clip: bool) -> tuple[float | None, int]:
    """Leave-one-out nearest-neighbour label accuracy; ``cross_clip``: neighbours from other clips only,
    over the windows whose label occurs in more than one clip (others cannot be right by construction)."""
    m = len(labels)
    hits = count = 0
    for i in range(m):
        if cross_clip:
            others = {sources[j] for j in range(m) if labels[j] == labels[i] and sources[j] != sources[i]}
            if not others:
                continue
            cand = [j for j in range(m) if sources[j] != sources[i]]
        else:
            cand = [j for j in range(m) if j != i]
        j = min(cand, key=lambda k: (d[i, k], k))
        hits += labels[j] == labels[i]
        count += 1
    return (hits / count if count else None), count


def section_cluster(args, cache_dir: Path) -> dict:
    windows, wl, ws, wstart = [], [], [], []
    per_clip = {}
    for name, _path, data in available_clips(QUICK_CLUSTER if args.quick else tuple(LABELS), args, cache_dir):
        names = [str(n) for n in data["names"]]
        feats = skeleton.body_features(data["heads"], names, [int(p) for p in data["parents"]])
        got = windows_of(feats, float(data["fps"]), QUICK_MAX_WINDOWS if args.quick else None)
        per_clip[name] = dict(label=LABELS[name], frames=int(feats.shape[0]), fps=float(data["fps"]),
                              windows=len(got), window_frames=int(got[0][1].shape[0]))
        for start, w in got:
            windows.append(w)
            wl.append(LABELS[name])
            ws.append(name)
            wstart.append(start)
    n_labels = len(set(wl))
    out = dict(clips=per_clip, windows=len(windows), labels=sorted(set(wl)), n_clusters=n_labels,
               features=len(skeleton.feature_names()), window_s=WINDOW_S, metrics={})
    log(f"  clustering {len(windows)} windows of {WINDOW_S:g} s from {len(per_clip)} clips, {n_labels} labels")
    for metric in ("elastic", "linear"):
        t0 = time.perf_counter()
        d = elastic.distance_matrix(windows, metric=metric, closed=True, n_samples=100)
        secs = time.perf_counter() - t0
        cl = elastic.cluster(d, n_clusters=n_labels)
        clusters = [int(c) for c in cl.labels]
        acc_cross, n_cross = nn_accuracy(d, wl, ws, cross_clip=True)
        acc_all, n_all = nn_accuracy(d, wl, ws, cross_clip=False)
        comp = {}
        for c in sorted(set(clusters)):
            members = [lab for lab, k in zip(wl, clusters) if k == c]
            comp[str(c)] = {lab: members.count(lab) for lab in sorted(set(members))}
        out["metrics"][metric] = dict(
            seconds=secs, pairs=len(windows) * (len(windows) - 1) // 2, purity=purity(wl, clusters),
            nn_cross_clip=acc_cross, nn_cross_clip_windows=n_cross, nn_loo=acc_all, nn_loo_windows=n_all,
            clusters=comp, labels=clusters)
        log(f"  {metric}: purity {out['metrics'][metric]['purity']:.3f}, NN cross-clip {acc_cross}, "
            f"NN leave-one-out {acc_all:.3f}, {secs:.1f} s")
        if args.dendrograms:
            from anim_signals.imaging import raster

            tags = [f"{lab} {src} @{s}" for lab, src, s in zip(wl, ws, wstart)]
            img = raster.dendrogram_image(cl.linkage, tags, clusters=clusters,
                                          title=f"{len(windows)} windows, body features, {metric} distance")
            raster.write_png(Path(args.out) / f"dendrogram_{metric}.png", img)
    out["windows_list"] = [dict(clip=s, label=lab, start=int(st)) for s, lab, st in zip(ws, wl, wstart)]
    return out


# --------------------------------------------------------------------------------------------------
# 3. times


def smooth_curves(n: int, m: int, rng) -> np.ndarray:
    """A smooth, open (non-closed) random curve: random low frequencies, phases and drifts."""
    t = np.linspace(0.0, 1.0, n)[:, None]
    out = rng.normal(size=m) * t
    for k in range(1, 5):
        f = k + rng.uniform(-0.4, 0.4, size=m)
        out = out + rng.normal(size=m) / k * np.sin(2.0 * np.pi * f * t + rng.uniform(0.0, 2.0 * np.pi, size=m))
    return out


def section_times(args) -> dict:
    rng = np.random.default_rng(0)
    out = {"project_closed": {}, "elastic_distance": {}}
    for n in (100, 1000):
        q = srv.srv(smooth_curves(n, 96, rng))
        gap = float(np.linalg.norm(srv.closure_gap(q)) / srv.srv_length(q))
        med, runs, res = report.timed(lambda q=q: srv.project_closed(q, tol=1e-6), args.repeats)
        out["project_closed"][str(n)] = dict(median_ms=med * 1e3, runs_ms=[r * 1e3 for r in runs],
                                             iterations=int(res.iterations), residual=float(res.residual),
                                             converged=bool(res.converged), gap_before=gap)
    a, b = smooth_curves(100, 96, rng), smooth_curves(100, 96, rng)
    for closed in (False, True):
        med, runs, d = report.timed(lambda c=closed: elastic.elastic_distance(a, b, closed=c, n_samples=100),
                             max(3, args.repeats // 2))
        out["elastic_distance"]["closed" if closed else "open"] = dict(median_ms=med * 1e3,
                                                                        runs_ms=[r * 1e3 for r in runs], distance=d)
    med, runs, d = report.timed(lambda: elastic.linear_distance(a, b, n_samples=100), args.repeats)
    out["linear_distance"] = dict(median_ms=med * 1e3, distance=d)
    return out


# --------------------------------------------------------------------------------------------------
# report


def loop_rows(loops):
    """Cells of the loops table: one row per clip and method (the clip and its cycle on the first)."""
    for r in loops:
        if "error" in r:
            yield [r["clip"], f"error: {r['error']}"] + [""] * 13
            continue
        for i, (label, m) in enumerate(r["methods"].items()):
            yield (r["clip"] if i == 0 else "",
                   f"{r['cycle'][0]}–{r['cycle'][1]} ({r['period_s']:.2f} s)" if i == 0 else "", label,
                   fmt(m["pose_deg"]), fmt(m["velocity_deg"]), fmt(m["pose_ratio"]), fmt(m["velocity_ratio"]),
                   fmt(m["passes"]), fmt(m.get("bone_pose_deg")), fmt(m.get("bone_velocity_deg")),
                   f"{fmt(m.get('bone_pose_ratio'))} / {fmt(m.get('bone_velocity_ratio'))}", fmt(m.get("bone_passes")),
                   fmt(m.get("world_pose_cm")), fmt(m.get("world_velocity_cm")),
                   f"{fmt(m['rms_deg'])} / {fmt(m.get('bone_rms_deg'))}")


def loop_method_summary(label: str, ok: list[dict]) -> str:
    """One method over every looped clip: goals met, median jumps and RMS change."""
    def median(key, default=None):
        return statistics.median(r["methods"][label].get(key, default) for r in ok)

    n_pass = sum(r["methods"][label]["passes"] for r in ok)
    n_bone = sum(bool(r["methods"][label].get("bone_passes")) for r in ok)
    return (f"- {label}: goal met on {n_pass}/{len(ok)} clips (channels), {n_bone}/{len(ok)} (bones); "
            f"median pose jump {median('pose_deg'):.3g}°, velocity jump {median('velocity_deg'):.3g}°/frame, "
            f"world joints {median('world_pose_cm', 0.0):.3g} cm / {median('world_velocity_cm', 0.0):.3g} "
            f"cm/frame; median RMS change {median('rms_deg'):.3g}° (channels), "
            f"{median('bone_rms_deg', 0.0):.3g}° (bones).")


def loops_markdown(loops: list[dict], meta: dict) -> list[str]:
    L = ["## 1. Loops (seed §4.1)", "",
         "Range: `loop.find_cycle` on the whole continuous curve (rotations in radians + root location; root "
         "horizontal location = travel, looped as velocity; "
         + ("location channels weighted by 2 / figure height so that centimetres do not outweigh radians, "
            if meta.get("cycle_weights") == "height" else "unweighted, ")
         + f"periods from {meta.get('min_period_s', 0):g} s). Seam as Blender plays the range cyclically "
         "(period = last − first frame; travel channels with offset). Pose / velocity: the largest jump over "
         "rotation channels (degrees, degrees per frame); ratio: the worst channel's jump over its own median "
         "frame-to-frame change (velocity: over its median second difference; at least "
         f"{FLOOR_DEG}°); goal ✓ when every rotation channel's jumps are within its medians. Bone columns: "
         "the same in rotation space, independent of the Euler parametrisation (per bone the geodesic angle "
         "between the last and first pose, and between the last and first frame-to-frame rotations, vs the "
         "bone's median frame-to-frame rotation and its change). World: joint "
         f"heads through Blender's depsgraph, scaled to a {FIGURE_CM / 100:.2f} m figure (cm), relative "
         "to the root's horizontal travel over the cycle. RMS: change from the original segment (rotation "
         "channels; bones: geodesic angle), degrees.", ""]
    L += report.table(("clip", "cycle (frames, s)", "method", "pose °", "velocity °/fr", "pose ratio", "velocity ratio",
                       "goal (channels)", "bone pose °", "bone velocity °", "bone ratios", "goal (bones)",
                       "world pose cm", "world velocity cm/fr", "RMS change ° (channels / bones)"),
                      "lllrrrrcrrrcrrr", loop_rows(loops))
    L += ["", "Per clip, the yardsticks: median over rotation channels of the median frame-to-frame change "
          "(°), the largest channel's, the world joints' median frame-to-frame change and second difference "
          "(cm), closure iterations, residual, times.", ""]
    ok = [r for r in loops if "error" not in r]
    L += report.table(("clip", "frames × ch", "fps", "median step °", "max channel step °", "median accel °",
                       "world step cm", "world accel cm", "Newton its", "residual", "find_cycle s", "make_loop s"),
                      "llrrrrrrrrrr",
                      ((r["clip"], f"{r['frames']}×{r['channels']}", f"{r['fps']:.0f}", fmt(r["median_step_deg"]),
                        fmt(r["max_median_step_deg"]), fmt(r["median_accel_deg"]), fmt(r["world_step_cm"]),
                        fmt(r["world_accel_cm"]), r["iterations"], fmt(r["residual"]), fmt(r["find_cycle_s"]),
                        fmt(r["make_loop_s"])) for r in ok))
    for label in (ok[0]["methods"] if ok else {}):
        L += ["", loop_method_summary(label, ok)]
    return L + [""]


def cluster_markdown(cl: dict) -> list[str]:
    L = ["## 2. Clustering by motion type (seed §4.3)", "",
         f"{cl['windows']} windows of {cl['window_s']:g} s (non-overlapping; a clip shorter than that is one "
         f"window) from {len(cl['clips'])} clips on three rigs, compared by `skeleton.body_features` "
         f"({cl['features']} features: 10 segment directions in the heading frame + hips height), resampled "
         f"to 100 samples. Elastic: `elastic.distance_matrix(metric='elastic', closed=True)` (SRV, projected to "
         "closed curves, optimal reparametrisation and start point, as the seed); linear: L2 of the resampled "
         f"curves. Clusters: `elastic.cluster` (average linkage) with n_clusters = {cl['n_clusters']} labels. "
         "Purity: fraction of windows in their cluster's majority label. NN cross-clip: nearest window from "
         "another clip has the same label (only windows whose label occurs in more than one clip — walk —; "
         "the single-clip labels cannot pass by construction). NN leave-one-out: any other window.", ""]
    L += report.table(("clip", "label", "frames", "fps", "windows", "frames per window"), "llrrrr",
                      ((name, c["label"], c["frames"], f"{c['fps']:.0f}", c["windows"], c["window_frames"])
                       for name, c in cl["clips"].items()))
    L.append("")
    L += report.table(("distance", "purity", "NN cross-clip", "NN leave-one-out", "pairs", "seconds",
                       "clusters (label counts)"), "lrrrrrl",
                      ((metric, f"{m['purity']:.3f}", f"{fmt(m['nn_cross_clip'])} ({m['nn_cross_clip_windows']})",
                        f"{m['nn_loo']:.3f} ({m['nn_loo_windows']})", m["pairs"], f"{m['seconds']:.1f}",
                        "; ".join(f"{k}: " + ", ".join(f"{lab} {n}" for lab, n in v.items())
                                  for k, v in m["clusters"].items()))
                       for metric, m in cl["metrics"].items()))
    return L + [""]


def times_markdown(t: dict, cl: dict | None) -> list[str]:
    rows = []
    for n, d in t["project_closed"].items():
        goal = " (goal < 10 ms)" if n == "100" else ""
        rows.append((f"`srv.project_closed`, {n} frames × 96 channels{goal}", f"{d['median_ms']:.3g}",
                     f"{d['iterations']} Newton steps, residual {d['residual']:.2g} (goal 1e-6, "
                     f"{'converged' if d['converged'] else 'NOT converged'}), gap before {d['gap_before']:.2g}"))
    for k, d in t["elastic_distance"].items():
        rows.append((f"`elastic.elastic_distance`, 100 samples × 96 channels, {k}", f"{d['median_ms']:.3g}",
                     f"distance {d['distance']:.4g} rad"))
    rows.append(("`elastic.linear_distance`, same curves", f"{t['linear_distance']['median_ms']:.3g}", ""))
    for metric, m in (cl["metrics"].items() if cl else ()):
        rows.append((f"distance matrix of section 2, {metric} ({m['pairs']} pairs)", f"{m['seconds'] * 1e3:.0f}", ""))
    return (["## 3. Times", "", "Median of repeats (after one warm-up run); smooth random open curves, seed 0.", ""]
            + report.table(("what", "median ms", "notes"), "lrl", rows) + [""])


def markdown(res: dict) -> str:
    meta = res["meta"]
    L = ["# Motion manifolds benchmark (Eslitzbichler): loop, cluster, times", "",
         f"Commit {meta['commit']}, {meta['machine']}, numpy {meta['numpy']}, "
         f"{'--quick, ' if meta['quick'] else ''}data `{meta['data']}`. Deterministic inputs; times vary by machine.",
         ""]
    if res.get("loops"):
        L += loops_markdown(res["loops"], meta)
    if res.get("cluster"):
        L += cluster_markdown(res["cluster"])
    if res.get("times"):
        L += times_markdown(res["times"], res.get("cluster"))
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="3 walks, 6 clips (<= 3 windows each), fewer repeats")
    p.add_argument("--data", default=str(DATA_DIR), help="folder of BVH clips (default ../shared/data/mocap)")
    p.add_argument("--out", default=str(be.REPO_ROOT / "out" / "benchmark_motion"), help="output folder")
    p.add_argument("--sections", default="loops,cluster,times", help="comma-separated: loops, cluster, times")
    p.add_argument("--repeats", type=int, default=15, help="timing repeats (median)")
    p.add_argument("--min-period-s", type=float, default=0.0,
                   help="shortest cycle find_cycle may return, in seconds (default 0: find_cycle's own choice, "
                        "as the make_cyclic operator)")
    p.add_argument("--cycle-weights", default="height", choices=("height", "none"),
                   help="find_cycle weights: location channels / (figure height / 2) (default), or none")
    p.add_argument("--no-world", action="store_true", help="skip world-space joint seams (no Blender re-import)")
    p.add_argument("--no-cache", action="store_true", help="re-import every clip (ignore OUT/cache)")
    p.add_argument("--dendrograms", action="store_true", help="also write OUT/dendrogram_<metric>.png")
    args = p.parse_args(argv)
    if args.quick:
        args.repeats = min(args.repeats, 5)
    cache_dir = be.ensure_dir(args.out) / "cache"
    wanted = {s.strip() for s in args.sections.split(",") if s.strip()}
    have_data = Path(args.data).is_dir()
    res: dict = {"meta": dict(commit=report.source_commit(), quick=args.quick, data=str(args.data),
                              cycle_weights=args.cycle_weights, min_period_s=args.min_period_s,
                              machine=report.machine(), numpy=np.__version__, python=platform.python_version())}
    sections = (("loops", "1. loops", True, lambda: section_loops(args, cache_dir)),
                ("cluster", "2. clustering", True, lambda: section_cluster(args, cache_dir)),
                ("times", "3. times", False, lambda: section_times(args)))
    t0 = time.perf_counter()
    for key, title, needs_data, run in sections:
        if key not in wanted:
            continue
        if needs_data and not have_data:
            log(f"{title}: skipped, no data at {args.data}")
            continue
        log(title)
        res[key] = run()
    res["meta"]["seconds"] = time.perf_counter() - t0
    report.publish(args.out, "benchmark_motion", markdown(res), res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
