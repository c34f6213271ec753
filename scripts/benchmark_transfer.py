"""Deformation-transfer benchmark (Sumner & Popović by correspondence; Cashman & Hormann §4.3 by examples,
vertex and deformation-gradient shape spaces): errors against reference outputs, naive peers, times.

Run from the repository root with the project's venv python (numpy/scipy only, no Blender)::

    .venv/bin/python scripts/benchmark_transfer.py            # shared cat/lion + horse, generated tube, sizes (~2 min)
    .venv/bin/python scripts/benchmark_transfer.py --quick    # generated meshes only, small sizes (~10 s)

Writes ``out/benchmark_transfer/benchmark_transfer.md`` and ``.json`` (``--out`` changes the folder),
``horse_to_lion.png`` (side views of the transferred gallop) and prints the markdown; progress on
stderr. The core is called directly (``anim_signals.transfer``); the measures, the baselines and the
remeshing are written in ``scripts/benchmarking`` (``transfer_data``, ``remesh``) with numpy/scipy.

Errors are vertex distances relative to the bounding-box diagonal of the reference output pose
(percent; mean over vertices and poses, max over both). Shapes are compared **up to translation**
(both poses moved to their vertex mean): the gradient solve fixes a shape only up to a translation.
For the cat and lion a second column compares without any alignment, our transfer pinning the
lion's last vertex as Sumner's published poses do.

1. **Cat → lion by correspondence** (``../shared/data/mesh/cat_lion_poses``, the shipped 55 markers):
   every cat pose against Sumner's lion pose (his own transfer results). Peers: nearest-point
   "Data Transfer" (each lion vertex takes the displacement of the nearest cat vertex, the
   references aligned by the similarity transform fitted to the markers), the same nearest point
   taken on our non-rigidly fitted cat (isolates what the gradient solve adds), and no motion.
2. **Cat → lion by examples, leave one out**: examples = the references + 8 pose pairs, the 9th cat
   pose transferred and compared with its lion pose, in the vertex space R^{3V} (the naive linear
   blend) and the gradient space R^{9F+3}; the nearest example's lion pose as a peer.
3. **Horse gallop** (``../shared/data/mesh/horse_gallop``, 48 frames): onto a remeshed horse
   (``benchmarking/remesh.py``: midpoint subdivision, then half-edge collapses with Delaunay flips,
   seeded, to 8,000 vertices; every vertex is a horse vertex or edge midpoint, so the exact target
   animation is known) by correspondence (24 markers on shared horse vertices) and by examples
   (every 3rd / 6th frame of the first stride, as the seed's Figure 7); onto the lion with 10
   heuristic markers (``quadruped_landmarks``), time per frame and distortion (no ground truth).
4. **Generated tube** (always; the only data in ``--quick``): a capped tube bending ±150° and
   twisting, onto a remeshed, scaled copy; correspondence and examples (rest, ±150°).
5. **Times** at about 5k, 8k, 10k, 25k vertices (``--sizes``): two differently seeded remeshes of
   the horse (the tube without shared data) as source and target: correspondence setup,
   factorisation (assembly + ``splu``), solve per frame (given the gradients) and whole transfer per
   frame, median of ``--repeats``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blender_env as be  # noqa: E402
from benchmarking import remesh, report  # noqa: E402
from benchmarking.report import fmt, log  # noqa: E402

be.add_core_to_path()

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from benchmarking import transfer_data as td  # noqa: E402

from anim_signals.transfer import (  # noqa: E402
    CorrespondenceTransfer,
    TriangleMesh,
    deformation_gradients,
    transfer_by_examples,
    triangle_correspondence,
)

DATA = be.REPO_ROOT.parent / "shared" / "data" / "mesh"
LARGE_ROTATION = 60.0  # degrees, area-weighted mean triangle rotation of a cat pose vs the cat reference
GOALS = dict(mean_pct=1.0, max_pct=3.0, solve_ms=20.0, solve_size=10000, setup_s=30.0, better=0.10)


def per_frame_ms(fn, n: int, repeats: int) -> float:
    median, _, _ = report.timed(fn, repeats)
    return 1000.0 * median / n


def mm(d: dict) -> str:
    """``mean / max`` percent cell."""
    return f"{fmt(d['mean_pct'])} / {fmt(d['max_pct'], digits_from_one=3)}"


def mpm(d: dict) -> str:
    """``mean / p99 / max`` percent cell."""
    return f"{fmt(d['mean_pct'])} / {fmt(d['p99_pct'], digits_from_one=3)} / {fmt(d['max_pct'], digits_from_one=3)}"


def rotation_of(reference: TriangleMesh, poses: np.ndarray) -> np.ndarray:
    """Area-weighted mean triangle rotation (degrees) of each pose vs the reference."""
    w = td.face_areas(reference.vertices, reference.faces)
    return td.rotation_angles(reference.vertices, reference.faces, poses) @ w / w.sum()


# --------------------------------------------------------------------------------------------------
# 1, 2: cat and lion


def cat_lion_correspondence(cl: td.CatLion, repeats: int) -> dict:
    cat, lion, cats, lions = cl.cat, cl.lion, cl.cats, cl.lions
    log("cat -> lion: correspondence (cat deformed onto the lion)")
    corr = triangle_correspondence(cat, lion, cl.markers)
    transfer = CorrespondenceTransfer(cat, lion, corr, translation=lion.n_vertices - 1)
    out = transfer(cats)
    ms = per_frame_ms(lambda: transfer(cats), len(cats), repeats)
    log("cat -> lion: correspondence (lion deformed onto the cat)")
    corr_t = triangle_correspondence(cat, lion, cl.markers, moving="target")
    out_t = CorrespondenceTransfer(cat, lion, corr_t)(cats)
    methods = {
        "ours": td.relative_distances(out, lions),
        "ours, last vertex pinned, no alignment": td.relative_distances(out, lions, centre=False),
        "ours, lion deformed onto the cat": td.relative_distances(out_t, lions),
        "nearest point, marker similarity": td.relative_distances(
            td.NearestPointBaseline(cat, lion, cl.markers)(cats), lions),
        "nearest point on our non-rigid fit": td.relative_distances(
            td.NearestPointBaseline(cat, lion, cl.markers, aligned=corr.deformed)(cats), lions),
        "no motion (lion reference)": td.relative_distances(np.broadcast_to(lion.vertices, lions.shape), lions),
    }
    # where the worst vertex of ours is: the nearest marker's comment on the lion reference
    marker_pos = lion.vertices[cl.markers[:, 1]]
    worst = []
    for d in methods["ours"]:
        v = int(np.argmax(d))
        worst.append(cl.comments[int(np.argmin(np.linalg.norm(marker_pos - lion.vertices[v], axis=1)))])
    return dict(
        markers=len(cl.markers), pairs=len(corr.pairs), pairs_target_moving=len(corr_t.pairs),
        setup_s=corr.seconds, setup_target_moving_s=corr_t.seconds, factor_ms=1000 * transfer.solver.factor_seconds,
        frame_ms=ms, rotation_deg=rotation_of(cat, cats).tolist(), worst_near=worst,
        methods={k: dict(overall=td.summary(d), poses=[td.summary(x) for x in d]) for k, d in methods.items()},
        ours_reference_diagonal=td.summary(
            np.linalg.norm(td.centred(out) - td.centred(lions), axis=2) / lion.bbox_diagonal()),
    )


def cat_lion_examples(cl: td.CatLion, corr_res: dict) -> dict:
    cat, lion, cats, lions = cl.cat, cl.lion, cl.cats, cl.lions
    rows = []
    for k in range(len(cats)):
        log(f"cat -> lion by examples: pose {k + 1} left out")
        keep = [j for j in range(len(cats)) if j != k]
        src = np.concatenate([cat.vertices[None], cats[keep]])
        tgt = np.concatenate([lion.vertices[None], lions[keep]])
        row: dict = dict(pose=k + 1)
        for space in ("vertex", "gradient"):
            t0 = time.perf_counter()
            res = transfer_by_examples(cats[[k]], src, tgt, space=space, source_faces=cat.faces,
                                       target_faces=lion.faces)
            row[space] = td.summary(td.relative_distances(res.frames, lions[[k]]))
            row[f"{space}_rigid"] = td.summary(td.relative_distances(res.frames, lions[[k]], rotate=True))
            row[space]["fit_relative"] = float(res.fit_relative[0])
            row[space]["seconds"] = time.perf_counter() - t0
        gap = np.linalg.norm(td.centred(src) - td.centred(cats[k]), axis=2).mean(axis=1)
        row["nearest_example"] = td.summary(td.relative_distances(tgt[int(np.argmin(gap))], lions[[k]]))
        row["correspondence"] = corr_res["methods"]["ours"]["poses"][k] if corr_res else None
        row["rotation_deg"] = float(rotation_of(cat, cats[[k]])[0])
        rows.append(row)
    return dict(rows=rows, groups=_example_groups(rows))


def _example_groups(rows: list[dict]) -> list[dict]:
    out = []
    for label, sel in ((f"large rotation (≥ {LARGE_ROTATION:g}°)", lambda r: r["rotation_deg"] >= LARGE_ROTATION),
                       (f"other (< {LARGE_ROTATION:g}°)", lambda r: r["rotation_deg"] < LARGE_ROTATION),
                       ("all 9", lambda r: True)):
        part = [r for r in rows if sel(r)]
        if not part:
            continue
        g = dict(group=label, poses=[r["pose"] for r in part])
        for key in ("vertex", "gradient", "vertex_rigid", "gradient_rigid", "nearest_example", "correspondence"):
            if all(r.get(key) for r in part):
                g[key] = dict(mean_pct=float(np.mean([r[key]["mean_pct"] for r in part])),
                              max_pct=float(np.max([r[key]["max_pct"] for r in part])))
        out.append(g)
    return out


# --------------------------------------------------------------------------------------------------
# 3, 4: horse gallop, generated tube: a source animation onto a remesh with a known exact result


def remeshed_case(name: str, source: TriangleMesh, frames: np.ndarray, target: TriangleMesh,
                  truth: np.ndarray, markers: np.ndarray, example_sets: dict[str, list[int]], period: int,
                  repeats: int) -> dict:
    """Correspondence, nearest-point peers and examples (both spaces) against the exact target frames.

    Examples: frame indices within the first ``period`` frames (one cycle); the other frames of that
    cycle are transferred (later cycles repeat it).
    """
    log(f"{name}: correspondence")
    corr = triangle_correspondence(source, target, markers)
    transfer = CorrespondenceTransfer(source, target, corr)
    out = transfer(frames)
    rows = [dict(method="ours (correspondence)", **td.summary(td.relative_distances(out, truth)),
                 frame_ms=per_frame_ms(lambda: transfer(frames), len(frames), repeats))]
    for label, aligned in (("nearest point, marker similarity", None),
                           ("nearest point on our non-rigid fit", corr.deformed)):
        base = td.NearestPointBaseline(source, target, markers, aligned=aligned)
        rows.append(dict(method=label, **td.summary(td.relative_distances(base(frames), truth)),
                         frame_ms=per_frame_ms(lambda b=base: b(frames), len(frames), repeats)))
    examples = []
    for label, idx in example_sets.items():
        held = np.array([i for i in range(period) if i not in idx])
        # how far each held-out frame turns from the nearer of the examples before and after it in the
        # cycle (area-weighted mean triangle rotation)
        turn = []
        for i in held:
            before = max((j for j in idx if j < i), default=idx[-1])
            after = min((j for j in idx if j > i), default=idx[0])
            turn.append(min(float(rotation_of(TriangleMesh(frames[j], source.faces), frames[[i]])[0])
                            for j in (before, after)))
        turn = np.array(turn)
        large = turn >= np.median(turn)
        for space in ("vertex", "gradient"):
            log(f"{name}: examples {label}, {space} space")
            t0 = time.perf_counter()
            res = transfer_by_examples(frames[held], frames[idx], truth[idx], space=space,
                                       source_faces=source.faces, target_faces=target.faces)
            seconds = time.perf_counter() - t0
            d = td.relative_distances(res.frames, truth[held])
            examples.append(dict(examples=label, space=space, m=len(idx) - 1, held_out=len(held),
                                 **td.summary(d), large=td.summary(d[large]), small=td.summary(d[~large]),
                                 turn_split_deg=float(np.median(turn)), frame_ms=1000 * seconds / len(held),
                                 fit_relative=float(res.fit_relative.mean())))
    return dict(name=name, source=[source.n_vertices, source.n_faces], target=[target.n_vertices, target.n_faces],
                markers=len(markers), setup_s=corr.seconds, factor_ms=1000 * transfer.solver.factor_seconds,
                frames=len(frames), rows=rows, examples=examples)


def horse_remesh(horse: TriangleMesh, gallop: np.ndarray, target_size: tuple, repeats: int) -> dict:
    v, f, w = target_size
    target = TriangleMesh(v, f, name="remeshed horse")
    truth = np.stack([w @ x for x in gallop])
    markers = remesh.coincident_markers(sp.identity(horse.n_vertices, format="csr"), w, horse.vertices, 24)
    sets = {"every 3rd frame of stride 1 (m = 7)": list(range(0, 24, 3)),
            "every 6th frame of stride 1 (m = 3)": list(range(0, 24, 6))}
    return remeshed_case("horse → remeshed horse", horse, gallop, target, truth, markers, sets, 24, repeats)


def tube_case(repeats: int) -> dict:
    source = td.tube(24, 30)
    frames = td.tube_motion(source)
    (v, f, w), = remesh.remesh(source.vertices, source.faces, [int(0.8 * source.n_vertices)], seed=2)
    scale, shift = 1.25, np.array([0.6, 0.1, -0.2])  # the target elsewhere and larger: markers must find it
    target = TriangleMesh(scale * v + shift, f, name="tube remesh")
    truth = np.stack([scale * (w @ x) + shift for x in frames])
    markers = remesh.coincident_markers(sp.identity(source.n_vertices, format="csr"), w, source.vertices, 12)
    n = len(frames)
    sets = {"rest and ±150° bends (m = 2)": [0, n // 4, 3 * n // 4]}
    return remeshed_case("tube → remeshed tube (scaled 1.25, moved)", source, frames, target, truth, markers, sets,
                         n, repeats)


def horse_to_lion(horse: TriangleMesh, gallop: np.ndarray, lion: TriangleMesh, repeats: int, png: Path | None) -> dict:
    lh, ll = td.quadruped_landmarks(horse.vertices), td.quadruped_landmarks(lion.vertices)
    markers = np.array([[lh[k], ll[k]] for k in lh])
    log("horse -> lion: correspondence (heuristic markers)")
    corr = triangle_correspondence(horse, lion, markers)
    transfer = CorrespondenceTransfer(horse, lion, corr)
    out = transfer(gallop)
    ms = per_frame_ms(lambda: transfer(gallop), len(gallop), repeats)

    def distortion(ref: TriangleMesh, poses: np.ndarray) -> dict:
        det = np.linalg.det(deformation_gradients(ref.vertices, ref.faces, poses))
        e = np.concatenate([ref.faces[:, [0, 1]], ref.faces[:, [1, 2]], ref.faces[:, [2, 0]]])
        ratio = np.linalg.norm(poses[:, e[:, 0]] - poses[:, e[:, 1]], axis=2) / np.linalg.norm(
            ref.vertices[e[:, 0]] - ref.vertices[e[:, 1]], axis=1)
        change = np.abs(ratio - 1.0)
        return dict(inverted_pct=100.0 * float((det <= 0).mean()),
                    edge_change_median_pct=100.0 * float(np.median(change)),
                    edge_change_p99_pct=100.0 * float(np.percentile(change, 99)),
                    edges_over_50_pct=100.0 * float((change > 0.5).mean()))

    res = dict(markers={k: [lh[k], ll[k]] for k in lh}, setup_s=corr.seconds, frame_ms=ms, frames=len(gallop),
               sizes=[horse.n_vertices, lion.n_vertices],
               factor_ms=1000 * transfer.solver.factor_seconds, lion=distortion(lion, out),
               horse=distortion(horse, gallop))
    if png is not None:
        res["png"] = _draw_strip(gallop, out, png)
    return res


def _draw_strip(gallop: np.ndarray, lion: np.ndarray, path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return None
    picks = [0, 4, 8, 12, 16, 20]
    fig, axes = plt.subplots(2, len(picks), figsize=(3.2 * len(picks), 5.2))
    for col, i in enumerate(picks):
        for row, x in enumerate((gallop[i], lion[i])):
            ax = axes[row, col]
            ax.scatter(x[:, 2], x[:, 1], s=0.05, c="k")
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"{'horse' if row == 0 else 'lion'} frame {i}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path.name


# --------------------------------------------------------------------------------------------------
# 5: times by size


def sizes_section(base: TriangleMesh, frames: np.ndarray, sizes: list[int], repeats: int, label: str) -> list[dict]:
    log(f"sizes: remeshing the {label} to {sizes} (two seeds)")
    src_meshes = remesh.remesh(base.vertices, base.faces, sizes, seed=1)
    tgt_meshes = remesh.remesh(base.vertices, base.faces, sizes, seed=2)
    return [_one_size(size, base, frames, a, b, repeats) for size, a, b in zip(sizes, src_meshes, tgt_meshes)]


def _one_size(size: int, base: TriangleMesh, frames: np.ndarray, src: tuple, tgt: tuple, repeats: int) -> dict:
    log(f"sizes: {size}")
    (sv, sf, sw), (tv, tf, tw) = src, tgt
    source, target = TriangleMesh(sv, sf, name="source"), TriangleMesh(tv, tf, name="target")
    src_frames = np.stack([sw @ x for x in frames])
    truth = np.stack([tw @ x for x in frames])
    markers = remesh.coincident_markers(sw, tw, base.vertices, 24)
    corr = triangle_correspondence(source, target, markers)
    setup_s, _, transfer = report.timed(lambda: CorrespondenceTransfer(source, target, corr), repeats)
    grads = deformation_gradients(source.vertices, source.faces, src_frames)[:, transfer.pairs[:, 0]]
    solve = per_frame_ms(lambda: transfer.solver.solve(grads), len(frames), repeats)
    whole = per_frame_ms(lambda: transfer(src_frames), len(frames), repeats)
    err = td.summary(td.relative_distances(transfer(src_frames), truth))
    return dict(size=size, source=[source.n_vertices, source.n_faces], target=[target.n_vertices, target.n_faces],
                pairs=len(corr.pairs), setup_s=corr.seconds, factor_ms=1000 * transfer.solver.factor_seconds,
                transfer_setup_ms=1000 * setup_s, solve_ms=solve, frame_ms=whole, **err)


# --------------------------------------------------------------------------------------------------
# report


def goals(res: dict) -> list[str]:
    out = []
    c = res.get("cat_lion")
    if c:
        o = c["methods"]["ours"]["overall"]
        ok = o["mean_pct"] <= GOALS["mean_pct"] and o["max_pct"] <= GOALS["max_pct"]
        n_ok = sum(p["mean_pct"] <= GOALS["mean_pct"] and p["max_pct"] <= GOALS["max_pct"]
                   for p in c["methods"]["ours"]["poses"])
        out.append(f"cat → lion by correspondence within {GOALS['mean_pct']:g} % mean / {GOALS['max_pct']:g} % max of "
                   f"the lion pose's bounding-box diagonal: {'met' if ok else 'NOT met'} (mean "
                   f"{o['mean_pct']:.2f} %, max {o['max_pct']:.1f} % over the 9 poses, up to translation; "
                   f"{n_ok}/9 poses within both)")
        out.append(f"correspondence setup under {GOALS['setup_s']:g} s for cat/lion: "
                   f"{'met' if c['setup_s'] < GOALS['setup_s'] else 'NOT met'} ({c['setup_s']:.1f} s)")
    e = res.get("cat_lion_examples")
    if e:
        g = next((g for g in e["groups"] if g["group"].startswith("large")), None)
        if g:
            v, gr = g["vertex"]["mean_pct"], g["gradient"]["mean_pct"]
            ok = gr < (1.0 - GOALS["better"]) * v
            out.append(f"gradient space measurably better (mean error at least {100 * GOALS['better']:g} % lower) than "
                       f"vertex space on the leave-one-out poses with large rotations (poses "
                       f"{', '.join(map(str, g['poses']))}): {'met' if ok else 'NOT met'} (gradient {gr:.1f} % vs "
                       f"vertex {v:.1f} % mean; up to rotation too: gradient {g['gradient_rigid']['mean_pct']:.1f} % "
                       f"vs vertex {g['vertex_rigid']['mean_pct']:.1f} %)")
    rows = res.get("sizes") or []
    near = [r for r in rows if abs(r["target"][0] - GOALS["solve_size"]) <= 0.05 * GOALS["solve_size"]]
    if near:
        r = near[0]
        out.append(f"per-frame solve under {GOALS['solve_ms']:g} ms at {GOALS['solve_size']:,} vertices after "
                   f"factorisation: {'met' if r['solve_ms'] < GOALS['solve_ms'] else 'NOT met'} ({r['solve_ms']:.1f} ms "
                   f"solve; {r['frame_ms']:.1f} ms for the whole frame incl. the source's gradients)")
    elif rows:
        out.append(f"per-frame solve at {GOALS['solve_size']:,} vertices: not measured (sizes {[r['size'] for r in rows]})")
    return out


def _remeshed_lines(case: dict) -> list[str]:
    lines = [f"### {case['name']}", "",
             f"Source {case['source'][0]:,} vertices / {case['source'][1]:,} triangles, target "
             f"{case['target'][0]:,} / {case['target'][1]:,} (other connectivity; exact animation known), "
             f"{case['frames']} frames, {case['markers']} markers on shared vertices; correspondence "
             f"{case['setup_s']:.1f} s, factorisation {case['factor_ms']:.0f} ms.", ""]
    lines += report.table(("method", "error % (mean / p99 / max)", "ms per frame"), "lrr",
                          ((r["method"], mpm(r), fmt(r["frame_ms"])) for r in case["rows"]))
    lines += ["", "By examples (the exact target versions of the example frames), on the other frames of the "
              "cycle; \"large turn\": the half of them turning most (area-weighted mean triangle rotation) from "
              "the nearer neighbouring example, split at the median:", ""]
    lines += report.table(("examples", "space", "held out", "all (mean / p99 / max)", "large turn", "small turn",
                           "split at °",
                           "unexplained part", "ms per frame (incl. setup)"), "llrrrrrrr",
                          ((x["examples"], x["space"], x["held_out"], mpm(x), mpm(x["large"]), mpm(x["small"]),
                            fmt(x["turn_split_deg"], digits_from_one=3), fmt(x["fit_relative"]), fmt(x["frame_ms"]))
                           for x in case["examples"]))
    return lines + [""]


def markdown(res: dict) -> str:
    la = res["load_average"]
    lines = ["# Deformation-transfer benchmark", "",
             f"Commit {res['commit']}, {res['machine']}, load average {la[0]:.2f} at start / {la[1]:.2f} at end "
             f"(shared machine). {'Quick mode: generated meshes only. ' if res['quick'] else ''}"
             "Errors: vertex distance / bounding-box diagonal of the reference output pose, % (mean / max), "
             "shapes compared up to translation (both centred on their vertex mean) unless said otherwise.", ""]
    for note in res["notes"]:
        lines.append(f"> {note}")
    if res["notes"]:
        lines.append("")
    c = res.get("cat_lion")
    if c:
        lines += ["## 1. Cat → lion by correspondence (shipped markers) vs Sumner's lion poses", "",
                  f"{c['markers']} markers, {c['pairs']} triangle pairs; correspondence setup {c['setup_s']:.1f} s "
                  f"(lion deformed onto the cat instead: {c['setup_target_moving_s']:.1f} s), factorisation "
                  f"{c['factor_ms']:.0f} ms, {c['frame_ms']:.1f} ms per pose.", ""]
        names = list(c["methods"])
        header = ("pose", "rotation °", *names, "ours: lion vertices over 3 %", "ours: worst vertex near marker")
        ours = c["methods"]["ours"]
        body = [(str(k + 1), fmt(c["rotation_deg"][k], digits_from_one=3),
                 *(mm(c["methods"][n]["poses"][k]) for n in names), f"{fmt(ours['poses'][k]['over3_pct'])} %",
                 c["worst_near"][k]) for k in range(9)]
        body.append(("all", "", *(f"**{mm(c['methods'][n]['overall'])}**" for n in names),
                     f"{fmt(ours['overall']['over3_pct'])} %", ""))
        lines += report.table(header, "lr" + "r" * (len(names) + 1) + "l", body)
        ref = c["ours_reference_diagonal"]
        lines += ["", f"Ours relative to the lion *reference's* diagonal instead of each pose's: {mm(ref)} "
                  f"(p99 {fmt(ref['p99_pct'])} %). Rotation: area-weighted mean rotation of the cat's triangles from the "
                  "cat reference. "
                  "\"last vertex pinned, no alignment\": our transfer keeps the lion's last vertex at its reference "
                  "position, as Sumner's poses do, compared without any alignment.", ""]
    e = res.get("cat_lion_examples")
    if e:
        lines += ["## 2. Cat → lion by examples, leave one out (references + 8 pairs, the 9th pose transferred)", ""]
        body = [(str(r["pose"]), fmt(r["rotation_deg"], digits_from_one=3), mm(r["vertex"]), mm(r["gradient"]),
                 mm(r["vertex_rigid"]), mm(r["gradient_rigid"]), mm(r["nearest_example"]),
                 mm(r["correspondence"]) if r["correspondence"] else "—",
                 f"{fmt(r['vertex']['fit_relative'])} / {fmt(r['gradient']['fit_relative'])}") for r in e["rows"]]
        lines += report.table(("pose", "rotation °", "vertex space R^3V", "gradient space R^9F+3",
                               "vertex, up to rotation too", "gradient, up to rotation too",
                               "nearest example's lion pose", "correspondence (section 1)",
                               "unexplained part of the cat pose (vertex / gradient)"), "lrrrrrrrr", body)
        lines += ["", "By group (mean of the per-pose means / max of the maxima):", ""]
        lines += report.table(("poses", "vertex space", "gradient space", "vertex, up to rotation too",
                               "gradient, up to rotation too", "nearest example", "correspondence"), "lrrrrrr",
                              ((f"{g['group']}: {', '.join(map(str, g['poses']))}", mm(g["vertex"]), mm(g["gradient"]),
                                mm(g["vertex_rigid"]), mm(g["gradient_rigid"]), mm(g["nearest_example"]),
                                mm(g["correspondence"]) if g.get("correspondence") else "—")
                               for g in e["groups"]))
        lines += ["", "\"Up to rotation too\": the result also rotated onto the lion pose (best rigid alignment), "
                  "which separates the body's shape from its global orientation. Unexplained part: "
                  "|z − q0 − H x| / |z − q0| of the left-out cat pose in the examples' basis (the seed's normal "
                  "equations), in each space.", ""]
    if res.get("horse_remesh") or res.get("horse_lion"):
        lines += ["## 3. Horse gallop", ""]
        if res.get("horse_remesh"):
            lines += _remeshed_lines(res["horse_remesh"])
        h = res.get("horse_lion")
        if h:
            lines += ["### horse → lion (10 heuristic markers; no reference output)", "",
                      f"Correspondence {h['setup_s']:.1f} s, factorisation {h['factor_ms']:.0f} ms, "
                      f"**{h['frame_ms']:.1f} ms per frame** ({h['sizes'][0]:,} → {h['sizes'][1]:,} vertices, "
                      f"{h['frames']} frames). Markers: " + ", ".join(h["markers"]) + ".", ""]
            lines += report.table(("mesh", "inverted triangles %", "edge length change: median %", "p99 %",
                                   "edges changing > 50 %"), "lrrrr",
                                  ((n, fmt(h[k]["inverted_pct"]), fmt(h[k]["edge_change_median_pct"]),
                                    fmt(h[k]["edge_change_p99_pct"], digits_from_one=3),
                                    f"{fmt(h[k]['edges_over_50_pct'])} %")
                                   for n, k in (("horse gallop (source)", "horse"), ("lion gallop (ours)", "lion"))))
            lines += ["", "Inverted: triangles whose deformation gradient from the reference has det ≤ 0, over all "
                      "frames; edge change: |length / reference length − 1| over all edges and frames (the lion's should be of the "
                      "order of the horse's own)."
                      + (f" Side views: `{h['png']}`." if h.get("png") else ""), ""]
    if res.get("tube"):
        lines += ["## 4. Generated tube", ""] + _remeshed_lines(res["tube"])
    rows = res.get("sizes")
    if rows:
        lines += [f"## 5. Times by size ({res['sizes_base']}, two seeded remeshes as source and target, "
                  f"{res['sizes_frames']} frames; median of {res['repeats']})", ""]
        lines += report.table(("vertices (source / target)", "triangles (target)", "correspondence s",
                               "factorisation ms", "solve ms / frame", "whole transfer ms / frame",
                               "error % vs exact (mean / p99 / max)"),
                              "lrrrrrr",
                              ((f"{r['source'][0]:,} / {r['target'][0]:,}", f"{r['target'][1]:,}", fmt(r["setup_s"]),
                                fmt(r["factor_ms"]), fmt(r["solve_ms"]), fmt(r["frame_ms"]), mpm(r)) for r in rows))
        lines += ["", "Solve: the two triangular solves per coordinate and the right-hand side, given the source's "
                  "gradients; whole transfer: also the source frame's gradients and the translation.", ""]
    lines += ["## Goals", ""] + [f"- {g}" for g in res["goals"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="generated meshes only, small sizes, one repeat")
    p.add_argument("--data", default=str(DATA), help="folder with cat_lion_poses/ and horse_gallop/")
    p.add_argument("--sizes", default="", help="comma-separated vertex counts (default 5000,8000,10000,25000; "
                                               "quick 1000,2000)")
    p.add_argument("--repeats", type=int, default=0, help="timing repeats (default 3, quick 1)")
    p.add_argument("--no-png", action="store_true", help="no horse_to_lion.png")
    p.add_argument("--out", default=str(be.REPO_ROOT / "out" / "benchmark_transfer"))
    args = p.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    sizes = [int(s) for s in (args.sizes or ("1000,2000" if args.quick else "5000,8000,10000,25000")).split(",")]
    out_dir = be.ensure_dir(args.out)
    root = Path(args.data)
    start = time.perf_counter()
    res: dict = dict(commit=report.source_commit(), machine=report.machine(), quick=args.quick, repeats=repeats,
                     load_average=[os.getloadavg()[0]], notes=[])
    cl = horse = None
    if not args.quick:
        cl = td.load_cat_lion(root)
        if cl is None:
            res["notes"].append("Sections 1-2 skipped: the cat/lion data is not there ("
                                + ", ".join(str(x) for x in td.cat_lion_paths(root) if not x.is_file()) + ").")
        horse = td.load_horse(root)
        if horse is None:
            res["notes"].append("Horse sections skipped (times on the generated tube instead): the horse gallop is "
                                "not there (" + ", ".join(str(x) for x in td.horse_paths(root) if not x.is_file()) + ").")
        for n in res["notes"]:
            log(n)
    if cl is not None:
        res["cat_lion"] = cat_lion_correspondence(cl, repeats)
        res["cat_lion_examples"] = cat_lion_examples(cl, res["cat_lion"])
    res["tube"] = tube_case(repeats)
    if horse is not None:
        mesh, gallop = horse
        size8k = remesh.remesh(mesh.vertices, mesh.faces, [8000], seed=2)[0]
        res["horse_remesh"] = horse_remesh(mesh, gallop, size8k, repeats)
        if cl is None:
            res["notes"].append("Horse → lion skipped: the lion comes with the cat/lion data.")
        else:
            res["horse_lion"] = horse_to_lion(mesh, gallop, cl.lion, repeats,
                                              None if args.no_png else out_dir / "horse_to_lion.png")
        res["sizes_base"], res["sizes_frames"] = "horse gallop", len(gallop)
        res["sizes"] = sizes_section(mesh, gallop, sizes, repeats, "horse")
    else:
        # a tube with about a third of the largest size: subdivided once it has about 4/3 of it
        n_base = max(max(sizes) / 3.0, 300.0)
        around = int(np.sqrt(0.8 * n_base))
        base = td.tube(around, int(np.ceil(n_base / around)))
        frames = td.tube_motion(base, n=12 if args.quick else 24)
        res["sizes_base"], res["sizes_frames"] = f"generated tube ({base.n_vertices:,} vertices)", len(frames)
        res["sizes"] = sizes_section(base, frames, sizes, repeats, "tube")
    res["goals"] = goals(res)
    res["load_average"].append(os.getloadavg()[0])
    res["seconds"] = time.perf_counter() - start
    log(f"done in {res['seconds']:.0f} s")
    report.publish(out_dir, "benchmark_transfer", markdown(res), res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
