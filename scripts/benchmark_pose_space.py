"""Pose-space benchmark (Cashman & Hormann): reconstruction error vs k, l, m; step times against the
seed's Table 1; canvas-update latency; frame-rate conversion against linear and B-spline interpolation.

Run from the repository root with the project's venv python::

    .venv/bin/python scripts/benchmark_pose_space.py            # horse (if ../shared/data), cylinder, cloth flag
    .venv/bin/python scripts/benchmark_pose_space.py --quick    # fewer settings and repeats

Writes ``out/benchmark_pose_space/benchmark_pose_space.md`` and ``.json`` and one canvas PNG per sequence
(``canvas_<sequence>.png``, drawn without the GPU) (``--out`` changes the folder).

Sequences: the Sumner–Popović horse gallop (``../shared/data/mesh/horse_gallop``: 48 frames x 8,431
vertices, read with ``anim_signals.meshio.meshcache``), a generated twisting cylinder, and a cloth flag baked
by Blender's own cloth simulation (bpy module; an analytic travelling-wave flag when bpy is missing).

1. **Error vs k, l, m** (seed eq. 2, RMS and max per vertex) on a grid of settings, including the
   interpolation case k - 2 = l = m + 1 = n and the seed's Fig. 1 setting (k, l, m) = (16, 12, 7).
2. **Times** of the steps — h (PCA by SVD), one RBF fit, g (greedy site order + fit), f (time signal) —
   at the seed's Table 1 size (24 frames of 25,293 values, the horse) next to the seed's numbers
   (f 1 ms, RBF 1 ms, g 10 ms, h 166 ms on a 2.67 GHz Core i7).
3. **Canvas update**: the core part (TPS evaluation g(p): the shape-key values) and, with bpy, the
   Blender part (setting m shape-key values on the 8,431-vertex horse and evaluating the mesh through
   the depsgraph), measured separately; the goal is one update under 5 ms.
4. **Frame-rate conversion**: every other frame dropped, the pose space rebuilt on the rest, the
   held-back frames resampled, and compared with linear vertex interpolation and with the
   uniform-time interpolating cubic B-spline of the vertices.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blender_env as be  # noqa: E402
from benchmarking import report  # noqa: E402
from benchmarking.report import fmt, log  # noqa: E402

be.add_core_to_path()

import numpy as np  # noqa: E402

from anim_signals import posespace as ps  # noqa: E402
from anim_signals.meshio.meshcache import read_pc2  # noqa: E402
from anim_signals.posespace import canvas  # noqa: E402
from anim_signals.posespace.render import render_png  # noqa: E402

HORSE = be.REPO_ROOT.parent / "shared" / "data" / "mesh" / "horse_gallop"
SEED_TABLE1 = {"f": 1.0, "rbf": 1.0, "g": 10.0, "h": 166.0}  # ms, Fig. 1 row: 24 frames, d = 25,293


# --------------------------------------------------------------------------------------------------
# sequences


def horse() -> np.ndarray | None:
    path = HORSE / "horse_gallop.pc2"
    if not path.is_file():
        log(f"  horse: {path} not found, skipped")
        return None
    samples, _, _ = read_pc2(path)
    return samples.reshape(samples.shape[0], -1)


def twisting_cylinder(n: int = 48, rings: int = 40, around: int = 48) -> np.ndarray:
    """A cylinder twisting back and forth and bending (two different motions mixed), one row per frame."""
    h = np.repeat(np.linspace(0.0, 2.0, rings), around)
    a = np.tile(np.linspace(0.0, 2 * np.pi, around, endpoint=False), rings)
    out = []
    for i in range(n):
        s = i / n
        twist = 1.2 * np.sin(2 * np.pi * s) * h / 2.0
        bend = 0.35 * np.sin(4 * np.pi * s + 0.5)
        x = 0.3 * np.cos(a + twist) + bend * h**2 / 4.0
        y = 0.3 * np.sin(a + twist)
        out.append(np.column_stack([x, y, h]).ravel())
    return np.array(out)


def cloth_flag(n: int = 60) -> tuple[np.ndarray, str]:
    """A flag baked by Blender's cloth simulation (pinned edge, wind); analytic waves without bpy."""
    try:
        bpy = be.import_bpy()
    except Exception:  # pragma: no cover - depends on the environment
        bpy = None
    if bpy is not None:
        try:
            return _baked_flag(bpy, n), "Blender cloth simulation (30 x 20 grid, pinned edge, wind)"
        except Exception as ex:  # pragma: no cover
            log(f"  cloth simulation failed ({ex}); analytic flag instead")
    u, v = np.meshgrid(np.linspace(0, 1.5, 30), np.linspace(0, 1, 20))
    out = []
    for i in range(n):
        t = i / 12.0
        z = 0.15 * u * np.sin(4 * u - 2.5 * t) + 0.05 * u * np.sin(7 * v + 1.7 * t)
        out.append(np.column_stack([u.ravel(), (0.1 * u * np.sin(3 * u - 2 * t)).ravel() + 0 * v.ravel(),
                                    (v + z).ravel()]).ravel())
    return np.array(out), "analytic travelling waves (no bpy)"


def _baked_flag(bpy, n: int) -> np.ndarray:
    be.clear_scene()
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=30, y_subdivisions=20, size=1.5)
    ob = bpy.context.active_object
    ob.rotation_euler = (np.pi / 2, 0.0, 0.0)
    bpy.ops.object.transform_apply(rotation=True)
    group = ob.vertex_groups.new(name="pin")
    xs = np.array([v.co.x for v in ob.data.vertices])
    group.add([i for i, x in enumerate(xs) if x <= xs.min() + 1e-6], 1.0, "REPLACE")
    cloth = ob.modifiers.new("Cloth", "CLOTH")
    cloth.settings.vertex_group_mass = "pin"
    cloth.settings.quality = 4
    bpy.ops.object.effector_add(type="WIND", location=(-2.0, 0.3, 0.0), rotation=(0.0, np.pi / 2, 0.2))
    wind = bpy.context.active_object
    wind.field.strength = 800.0
    wind.field.noise = 2.0
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, n + 20
    cloth.point_cache.frame_start, cloth.point_cache.frame_end = 1, n + 20
    rows = []
    nv = len(ob.data.vertices)
    buf = np.empty(3 * nv, dtype=np.float32)
    with be.visiting_frames() as go_to:
        for f in range(1, n + 21):  # the cloth settles for 20 frames first
            depsgraph = go_to(f)
            if f > 20:
                ev = ob.evaluated_get(depsgraph)
                mesh = ev.to_mesh()
                mesh.vertices.foreach_get("co", buf)
                ev.to_mesh_clear()
                rows.append(buf.astype(np.float64).copy())
    return np.array(rows)


# --------------------------------------------------------------------------------------------------
# measurements


def per_vertex_error(z: np.ndarray, approx: np.ndarray) -> dict[str, float]:
    e = np.linalg.norm((z - approx).reshape(z.shape[0], -1, 3), axis=2)
    return {"rms": float(np.sqrt(np.mean(e**2))), "max": float(e.max())}


def timed(fn, repeats: int) -> tuple[float, object]:
    """Median milliseconds of ``fn()`` (after a warm-up call) and its last result."""
    median, _runs, out = report.timed(fn, repeats)
    return 1000.0 * median, out


def error_grid(name: str, z: np.ndarray, quick: bool) -> list[dict]:
    n = z.shape[0]
    settings = [(n + 2, n, n - 1), (16, 12, 7)]
    grid_m = (3, 7, 15) if quick else (3, 7, 15, 25)
    grid_l = (6, 12, 24) if quick else (6, 12, 24, n)
    for m in grid_m:
        for ell in grid_l:
            for k in ((8, n + 2) if quick else (8, 16, n // 2, n + 2)):
                if m < n and ell <= n and 4 <= k <= n + 2:
                    settings.append((k, ell, m))
    rows, seen = [], set()
    for k, ell, m in settings:
        if (k, ell, m) in seen:
            continue
        seen.add((k, ell, m))
        space = ps.build_pose_space(z, k=k, l=ell, m=m)
        err = per_vertex_error(z, space.evaluate(space.frames))
        rows.append(dict(sequence=name, k=k, l=ell, m=m, **err))
    return rows


def step_times(z: np.ndarray, repeats: int, k: int = 16, ell: int = 12, m: int = 7) -> dict[str, float]:
    """Median ms of each reconstruction step (seed Table 1 columns)."""
    t_h, (sig, x) = timed(lambda: ps.shape_signal(z, m=m), repeats)
    positions = ps.mds_positions(x)
    t_mds, _ = timed(lambda: ps.mds_positions(x), repeats)
    order = ps.greedy_site_order(positions, x, count=ell)
    t_rbf, _ = timed(lambda: ps.fit_pose_signal(positions, x, positions[order[:ell]]), repeats)
    t_g, _ = timed(lambda: ps.fit_pose_signal(positions, x,
                                              positions[ps.greedy_site_order(positions, x, count=ell)]), repeats)
    t_f, _ = timed(lambda: ps.fit_time_signal(positions, k), repeats)
    return {"h": t_h, "rbf": t_rbf, "g": t_g, "f": t_f, "mds": t_mds}


def canvas_latency(z: np.ndarray, repeats: int) -> dict[str, float]:
    space = ps.build_pose_space(z, k=16, l=12, m=7)
    rng = np.random.default_rng(0)
    lo, hi = space.positions.min(axis=0), space.positions.max(axis=0)
    pts = lo + (hi - lo) * rng.random((repeats, 2))
    i = iter(range(10**9))
    t_core, _ = timed(lambda: space.weights_at(pts[next(i) % repeats]), repeats)
    t_decode, _ = timed(lambda: space.at(pts[0]), max(5, repeats // 4))
    out = {"core_weights_ms": t_core, "core_full_mesh_ms": t_decode, "m": space.m}
    blender = blender_write_latency(space, z, repeats)
    if blender:
        out.update(blender)
    return out


def blender_write_latency(space: ps.PoseSpace, z: np.ndarray, repeats: int) -> dict[str, float] | None:
    """Set m shape-key values and evaluate the mesh through the depsgraph (the Blender half of an update)."""
    try:
        bpy = be.import_bpy()
    except Exception:  # pragma: no cover
        return None
    be.clear_scene()
    nv = z.shape[1] // 3
    mesh = bpy.data.meshes.new("bench_posespace")
    mesh.vertices.add(nv)
    mesh.vertices.foreach_set("co", space.shape.h0.astype(np.float32))
    mesh.update()
    ob = bpy.data.objects.new("bench_posespace", mesh)
    bpy.context.scene.collection.objects.link(ob)
    ob.shape_key_add(name="Basis")
    keys = []
    # component j scaled so its value stays within [-1, 1] over the frames (shape-key sliders clamp)
    scales = np.maximum(np.abs(space.latent).max(axis=0), 1e-12)
    for j in range(space.m):
        kb = ob.shape_key_add(name=f"PoseSpace.{j + 1:02d}")
        kb.data.foreach_set("co", (space.shape.h0 + scales[j] * space.shape.H[:, j]).astype(np.float32))
        kb.slider_min, kb.slider_max = -10.0, 10.0
        keys.append(kb)
    rng = np.random.default_rng(1)
    lo, hi = space.positions.min(axis=0), space.positions.max(axis=0)
    pts = lo + (hi - lo) * rng.random((repeats + 1, 2))
    counter = iter(range(10**9))

    def set_values():
        w = space.weights_at(pts[next(counter) % len(pts)]) / scales
        for kb, v in zip(keys, w):
            kb.value = float(v)

    t_set, _ = timed(set_values, repeats)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    buf = np.empty(3 * nv, dtype=np.float32)

    def update_and_read():
        set_values()
        depsgraph.update()
        ev = ob.evaluated_get(depsgraph)
        ev.data.vertices.foreach_get("co", buf)

    t_full, _ = timed(update_and_read, repeats)
    # check: the evaluated mesh is h(g(p)) to float32
    w = space.weights_at(pts[0]) / scales
    for kb, v in zip(keys, w):
        kb.value = float(v)
    depsgraph.update()
    ob.evaluated_get(depsgraph).data.vertices.foreach_get("co", buf)
    check = float(np.abs(buf - space.at(pts[0])).max())
    return {"blender_set_keys_ms": t_set, "blender_update_ms": t_full, "blender_check_max_abs": check}


def frame_rate_conversion(name: str, z: np.ndarray, settings: list[tuple[str, dict]]) -> list[dict]:
    """Keep frames 0, 2, 4, ...; rebuild; resample the held-back odd frames; compare with baselines."""
    from scipy.interpolate import make_interp_spline

    n = z.shape[0]
    kept = np.arange(0, n, 2)
    held = np.arange(1, n - 1, 2)  # interior odd frames (inside the kept range)
    zk = z[kept]
    times_kept = np.arange(1.0, kept.size + 1.0)  # frame numbers of the kept sequence
    tau = 1.0 + held / 2.0  # held-back frame i sits halfway between kept frames
    truth = z[held]
    rows = []
    lin = 0.5 * (z[held - 1] + z[held + 1])
    rows.append(dict(sequence=name, method="linear vertex interpolation", **per_vertex_error(truth, lin)))
    spline = make_interp_spline(times_kept, zk, k=3)
    rows.append(dict(sequence=name, method="uniform-time cubic B-spline of the vertices",
                     **per_vertex_error(truth, spline(tau))))
    for label, kw in settings:
        space = ps.build_pose_space(zk, **kw)
        rows.append(dict(sequence=name, method=f"pose space {label} (k={space.k}, l={space.l}, m={space.m})",
                         **per_vertex_error(truth, space.resample(tau))))
    return rows


# --------------------------------------------------------------------------------------------------
# report


def markdown(res: dict) -> str:
    nan = float("nan")
    lines = ["# Pose-space benchmark (Cashman & Hormann)", "",
             f"Commit {res['commit']}, {res['machine']}. Errors per vertex in the sequence's units (RMS / max over "
             "vertices and frames, seed eq. 2).", ""]
    lines += ["## Sequences", ""]
    lines += report.table(("sequence", "frames", "vertices", "source"), "lrrl",
                          ((s["name"], s["frames"], s["vertices"], s["source"]) for s in res["sequences"]))
    lines += ["", "## 1. Reconstruction error vs k, l, m", ""]
    lines += report.table(("sequence", "k", "l", "m", "RMS", "max"), "lrrrrr",
                          ((r["sequence"], r["k"], r["l"], r["m"], fmt(r["rms"]), fmt(r["max"])) for r in res["errors"]))
    lines += ["", "## 2. Step times (ms, median) vs the seed's Table 1 (24 frames x 25,293 values, 2.67 GHz i7)", ""]
    seed = ("seed, Fig. 1 horse", "24 x 25293", *(f"{SEED_TABLE1[k]:g}" for k in ("h", "rbf", "g", "f")), "–")
    lines += report.table(("sequence", "frames x values", "h (PCA)", "one RBF fit", "g (greedy + fit)", "f", "MDS"),
                          "llrrrrr", [seed] + [(r["sequence"], r["size"], *(fmt(r[k]) for k in ("h", "rbf", "g", "f", "mds")))
                                               for r in res["times"]])
    lines += ["", "## 3. Canvas update latency (ms, median)", ""]
    lines += report.table(("sequence", "m", "core: g(p) (shape-key values)", "core: full mesh h(g(p))",
                           "Blender: set m keys", "Blender: set keys + depsgraph + read mesh", "check (max abs)"),
                          "lrrrrrr",
                          ((r["sequence"], r["m"], fmt(r["core_weights_ms"]), fmt(r["core_full_mesh_ms"]),
                            fmt(r.get("blender_set_keys_ms", nan)), fmt(r.get("blender_update_ms", nan)),
                            fmt(r.get("blender_check_max_abs", nan))) for r in res["latency"]))
    lines += ["", "## 4. Frame-rate conversion (every other frame held back)", ""]
    lines += report.table(("sequence", "method", "RMS", "max"), "llrr",
                          ((r["sequence"], r["method"], fmt(r["rms"]), fmt(r["max"])) for r in res["conversion"]))
    if res.get("canvases"):
        lines += ["", "Canvases (pose space at 0.2 % of the object size, as `build_pose_space` defaults): " +
                  ", ".join(f"`{c}`" for c in res["canvases"])]
    lines += ["", "## Goals", ""]
    lines += [f"- {g}" for g in res["goals"]]
    return "\n".join(lines) + "\n"


def goals(res: dict) -> list[str]:
    out = []
    for r in res["times"]:
        if r["sequence"].startswith("horse (24"):
            ok = [k for k in ("h", "rbf", "g", "f") if r[k] <= SEED_TABLE1[k]]
            out.append(f"steps at or under the seed's times at equal size: {len(ok)}/4 "
                       f"({', '.join(f'{k} {r[k]:.3g} vs {SEED_TABLE1[k]:g} ms' for k in ('h', 'rbf', 'g', 'f'))})")
    for r in res["latency"]:
        if r["sequence"] == "horse":
            total = r.get("blender_update_ms", r["core_weights_ms"])
            out.append(f"one canvas update under 5 ms on the horse: {'met' if total < 5 else 'NOT met'} "
                       f"({total:.3g} ms incl. Blender's mesh evaluation; core {r['core_weights_ms']:.3g} ms)")
    by_seq: dict[str, dict[str, float]] = {}
    for r in res["conversion"]:
        by_seq.setdefault(r["sequence"], {})[r["method"]] = r["rms"]
    for seqname, rows in by_seq.items():
        lin = rows["linear vertex interpolation"]
        best = min((v, k) for k, v in rows.items() if k.startswith("pose space"))
        out.append(f"held-back frames closer than linear interpolation ({seqname}): "
                   f"{'met' if best[0] < lin else 'NOT met'} (best {best[1]}: {best[0]:.3g} vs linear {lin:.3g})")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer settings and repeats")
    p.add_argument("--out", default=str(be.REPO_ROOT / "out" / "benchmark_pose_space"))
    p.add_argument("--repeats", type=int, default=0, help="timing repeats (default 15, quick 5)")
    args = p.parse_args(argv)
    repeats = args.repeats or (5 if args.quick else 15)
    be.setup_environment()
    seqs: list[tuple[str, np.ndarray, str]] = []
    hz = horse()
    if hz is not None:
        seqs.append(("horse", hz, "Sumner–Popović gallop (shared data, PC2)"))
    seqs.append(("twisting cylinder", twisting_cylinder(), "generated"))
    flag, flag_source = cloth_flag(40 if args.quick else 60)
    seqs.append(("cloth flag", flag, flag_source))
    res: dict = dict(commit=report.source_commit(), machine=report.machine(),
                     sequences=[dict(name=n, frames=int(z.shape[0]), vertices=int(z.shape[1] // 3), source=s)
                                for n, z, s in seqs],
                     errors=[], times=[], latency=[], conversion=[])
    for name, z, _ in seqs:
        log(f"{name}: error grid")
        res["errors"] += error_grid(name, z, args.quick)
    for name, z, _ in seqs:
        log(f"{name}: times")
        if name == "horse":
            res["times"].append(dict(sequence="horse (24 frames)", size=f"24 x {z.shape[1]}", **step_times(z[:24], repeats)))
        res["times"].append(dict(sequence=name, size=f"{z.shape[0]} x {z.shape[1]}", **step_times(z, repeats)))
    for name, z, _ in seqs:
        log(f"{name}: canvas latency")
        res["latency"].append(dict(sequence=name, **canvas_latency(z, repeats * 4)))
    for name, z, _ in seqs:
        log(f"{name}: frame-rate conversion")
        n_kept = (z.shape[0] + 1) // 2
        res["conversion"] += frame_rate_conversion(name, z, [
            ("interpolating", {}),
            ("seed-like (16, 12, 7)", dict(k=min(16, n_kept + 2), l=min(12, n_kept), m=min(7, n_kept - 1))),
        ])
    res["goals"] = goals(res)
    out = be.ensure_dir(args.out)
    res["canvases"] = []
    for name, z, _ in seqs:  # the pose space of each sequence as the canvas draws it (no GPU)
        space = ps.build_pose_space(z, tolerance=0.002 * float(np.ptp(z.reshape(z.shape[0], -1, 3), axis=(0, 1)).max()))
        view = canvas.fit_space_view(space, 900, 600)
        png = out / f"canvas_{name.replace(' ', '_')}.png"
        render_png(canvas.canvas_geometry(space, view, current_time=float(space.frames[len(space.frames) // 3])),
                          png)
        res["canvases"].append(png.name)
    report.publish(out, "benchmark_pose_space", markdown(res), res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
