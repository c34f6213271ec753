"""``sk-compact``: spatial-keyframe compaction of a folder of BVH clips against temporal keyframes
(Costa and Esperança, "Enhancing Spatial Keyframe Animations with Motion Capture").

Unlike the other commands, this one does not start Blender: clips are read with the core's BVH reader
(``anim_signals.spatialkeys.bvh``) and compared with ``anim_signals.spatialkeys.compare_schemes``
(numpy, scipy and scikit-learn only). Every clip is compacted at the same keyframe ratio with each
chosen keyframe selection, reconstructed by every temporal scheme (linear, Hermite, slerp, 1D RBF)
and every chosen spatial projection, and ``DIR/sk_compact.md`` and ``DIR/sk_compact.json`` get the
error per frame per joint (eq. (1), the seed's measure) and the sizes (eqs. (2)-(4)).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings

import _blender_env as be

from .common import CliError, add_command, expand_folders, failed
from .inputs import check_bvh
from .outputs import check_output_dir, check_output_file, write_text
from .values import float_range, int_range

# the core's names (anim_signals.spatialkeys SELECTIONS, PROJECTIONS + "rbfp", TEMPORAL_SCHEMES), kept here
# so that building the parser imports no scipy; a test checks they match
SELECTIONS = ("uniform", "scs", "pb", "rols")
PROJECTIONS = ("pca", "mds", "force", "isomap", "lle", "tsne", "rbfp")
TEMPORAL_SCHEMES = ("linear", "hermite", "slerp", "rbf")
MIN_MARKERS = 3  # fewer markers do not span the canvas: the back-projection cannot use both directions
OUTPUT_FILES = ("sk_compact.md", "sk_compact.json")


def name_list(known: tuple[str, ...], what: str):
    """An argparse type: comma-separated names out of ``known`` (``all`` for every one), in order, no repeats."""

    def parse(text: str) -> list[str]:
        names = [n.strip().lower() for n in text.split(",") if n.strip()]
        if names == ["all"]:
            return list(known)
        unknown = [n for n in names if n not in known]
        if unknown or not names:
            raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(map(repr, unknown)) or repr(text)}; "
                                             f"expected a comma-separated list of {', '.join(known)} (or all)")
        return list(dict.fromkeys(names))

    parse.__name__ = f"{what}_list"
    return parse


def keyframes_for(frames: int, ratio: float) -> int:
    """Keys of a clip of ``frames`` frames at ``ratio`` (the core's rule: ``round(ratio * frames)``)."""
    return int(round(ratio * frames))


def check_clips(paths: list[str], ratio: float) -> list[int]:
    """Every BVH checked as text first (the CLI's check), then that the ratio gives at least 3 markers on
    each; returns the frame counts. CliError (exit code 2) naming the file otherwise."""
    summaries = [check_bvh(p) for p in paths]
    for path, s in zip(paths, summaries):
        keys = keyframes_for(s.frames, ratio)
        if keys < MIN_MARKERS:
            raise CliError(f"{path}: {s.frames} frames at --ratio {ratio:g} give {keys} keyframe(s); spatial "
                           f"keyframes need at least {MIN_MARKERS} markers (--ratio {MIN_MARKERS / s.frames:.4g} "
                           "or more for this clip)")
    return [s.frames for s in summaries]


def sk_inputs(paths) -> list[str]:
    """Folders -> their BVH files (sorted); repeated files once; CliError for any other kind of file."""
    bvhs = []
    for p in expand_folders(paths, (".bvh",)):
        if not p.lower().endswith(".bvh"):
            raise CliError(f"unsupported input {p!r}: expected BVH files or folders of them")
        bvhs.append(p)
    return list(dict.fromkeys(bvhs))


def scheme_name(row: dict) -> str:
    """``slerp``, ``tsne + Alg. 1``, ``mds``: a row's scheme as the tables show it."""
    return row["scheme"] + (" + Alg. 1" if row["optimised"] else "")


def sk_compact_report(clips: list[dict], meta: dict) -> tuple[dict, str]:
    """sk_compact.json payload and sk_compact.md text (pure Python): a summary over clips per scheme and
    selection (mean and median error, clips below slerp + SCS, size), then one line per clip."""
    groups: dict[tuple[str, str, str], list[tuple[str, dict]]] = {}
    for c in clips:
        for r in c["rows"]:
            groups.setdefault((r["kind"], scheme_name(r), r["selection"]), []).append((c["clip"], r))
    reference = {c["clip"]: next((r["error"] for r in c["rows"] if r["scheme"] == "slerp" and r["selection"] == "scs"),
                                 None) for c in clips}
    summary = []
    for (kind, scheme, selection), members in groups.items():
        errors = sorted(r["error"] for _, r in members)
        mid = len(errors) // 2
        median = errors[mid] if len(errors) % 2 else 0.5 * (errors[mid - 1] + errors[mid])
        below = [r["error"] < reference[name] for name, r in members if reference[name] is not None]
        summary.append(dict(kind=kind, scheme=scheme, selection=selection, clips=len(members),
                            mean_error=sum(errors) / len(errors), median_error=median,
                            below_slerp_scs=sum(below) if below else None,
                            size_ratio=sum(r["size_ratio"] for _, r in members) / len(members)))
    summary.sort(key=lambda s: s["mean_error"])
    payload = dict(meta, summary=summary, clips=clips)
    n = len(clips)
    md = [f"# Spatial-keyframe compaction: {n} clip(s) at a keyframe ratio of {meta['ratio']:g}", "",
          f"Error: eq. (1) per frame per joint (weighted radians), mean over clips; size: eq. (3) temporal, eq. (4) "
          f"spatial, as a share of eq. (2). Algorithm 1: {'on' if meta['optimise'] else 'off'}"
          f"{' (keep moving)' if meta['optimise'] and meta['keep_moving'] else ''}; seed {meta['seed']}.", "",
          "| scheme | kind | selection | mean error | median | below slerp+SCS | size |",
          "|---|---|---|---:|---:|---:|---:|"]
    for s in summary:
        below = "—" if s["below_slerp_scs"] is None else f"{s['below_slerp_scs']}/{s['clips']}"
        md.append(f"| {s['scheme']} | {s['kind']} | {s['selection']} | {s['mean_error']:.4g} | {s['median_error']:.4g} "
                  f"| {below} | {100 * s['size_ratio']:.2f} % |")
    md += ["", "| clip | frames | joints | keys | best temporal | best spatial | spatial / temporal | s |",
           "|---|---:|---:|---:|---|---|---:|---:|"]
    for c in clips:
        best = {}
        for kind in ("temporal", "spatial"):
            rows = [r for r in c["rows"] if r["kind"] == kind]
            best[kind] = min(rows, key=lambda r: r["error"]) if rows else None
        t, s = best["temporal"], best["spatial"]
        ratio = f"{s['error'] / t['error']:.3f}" if t and s and t["error"] > 0 else "—"
        cell = {k: f"{scheme_name(r)} {r['selection']} {r['error']:.4g}" if r else "—" for k, r in best.items()}
        md.append(f"| {c['clip']} | {c['frames']} | {c['joints']} | {c['keys']} | {cell['temporal']} | "
                  f"{cell['spatial']} | {ratio} | {c['seconds']:.1f} |")
    return payload, "\n".join(md) + "\n"


def compact_clip_file(path: str, args) -> dict:
    """Read one BVH with the core and compare the schemes on it; exit code 1 when the core fails."""
    be.add_core_to_path()
    from anim_signals import spatialkeys as sk  # noqa: PLC0415 - the checkout's core; scipy only when working

    t0 = time.perf_counter()
    try:
        clip = sk.read_bvh(path)
        with warnings.catch_warnings():  # scipy's gimbal-lock notice from the Euler schemes: part of them, not news
            warnings.filterwarnings("ignore", message="Gimbal lock detected")
            rows = sk.compare_schemes(clip.quaternions, clip.parents, ratio=args.ratio, selections=args.selection,
                                      projections=args.projection, optimise=(args.optimise,),
                                      keep_moving=args.keep_moving, seed=args.seed)
    except (ValueError, ImportError, MemoryError) as ex:
        raise failed(f"{path}: {ex}") from ex
    if not all(math.isfinite(r["error"]) for r in rows):
        raise failed(f"{path}: a scheme's reconstruction error is not finite")
    n, j = clip.quaternions.shape[:2]
    return dict(clip=os.path.splitext(os.path.basename(path))[0], file=path, frames=int(n), joints=int(j),
                keys=int(rows[0]["keys"]), seconds=time.perf_counter() - t0, rows=rows)


def cmd_sk_compact(args) -> int:
    bvhs = sk_inputs(args.inputs)
    check_clips(bvhs, args.ratio)
    out_dir = check_output_dir(args.out, "--out")
    for name in OUTPUT_FILES:
        check_output_file(os.path.join(out_dir, name), "--out", (os.path.splitext(name)[1],))
    print(f"compacting {len(bvhs)} clip(s) at a keyframe ratio of {args.ratio:g} "
          f"(selections {', '.join(args.selection)}; projections {', '.join(args.projection)}; "
          f"Algorithm 1 {'on' if args.optimise else 'off'}) ...", flush=True)
    clips = []
    for path in bvhs:
        c = compact_clip_file(path, args)
        best = min(c["rows"], key=lambda r: r["error"])
        print(f"  {c['clip']}: {c['frames']} frames, {c['keys']} keys, best {scheme_name(best)} "
              f"({best['selection']}) {best['error']:.4g}, {c['seconds']:.1f} s", flush=True)
        clips.append(c)
    meta = dict(ratio=args.ratio, selections=args.selection, projections=args.projection,
                temporal=list(TEMPORAL_SCHEMES), optimise=args.optimise, keep_moving=args.keep_moving, seed=args.seed,
                error="eq. (1) per frame per joint, weighted radians", sizes="eqs. (2)-(4), header 0")
    payload, md = sk_compact_report(clips, meta)
    try:
        write_text(os.path.join(out_dir, "sk_compact.json"), json.dumps(payload, indent=1))
        write_text(os.path.join(out_dir, "sk_compact.md"), md)
    except OSError as ex:
        raise failed(f"could not write to {out_dir}: {ex}") from ex
    print(f"wrote {os.path.join(out_dir, 'sk_compact.md')} and sk_compact.json")
    return 0


def add_sk_compact_parser(sub) -> None:
    p = add_command(sub, "sk-compact", cmd_sk_compact,
                    "compact BVH clips to spatial keyframes vs temporal keys, a table (Costa; no Blender)",
                    "Compact every BVH clip to spatial keyframes (key poses + a 2D trajectory) and to temporal "
                    "keyframes at the same ratio, and write DIR/sk_compact.md and DIR/sk_compact.json: error per "
                    "frame per joint and size of every scheme. Does not start Blender (the core's BVH reader; "
                    "numpy, scipy, scikit-learn).")
    p.add_argument("inputs", nargs="+", metavar="FOLDER|FILE", help="BVH files and/or folders of BVH files")
    p.add_argument("--out", default="anim_signals_sk_compact", help="output folder (default ./anim_signals_sk_compact)")
    p.add_argument("--ratio", type=float_range(0.0, 1.0, min_exclusive=True), default=0.03,
                   help="keyframes per frame, above 0 and at most 1 (default 0.03, the seed's); each clip needs "
                        f"at least {MIN_MARKERS} keys")
    p.add_argument("--selection", type=name_list(SELECTIONS, "selection"), default=["uniform", "scs"],
                   help=f"keyframe selections, comma-separated: {', '.join(SELECTIONS)} or all (default uniform,scs)")
    p.add_argument("--projection", type=name_list(PROJECTIONS, "projection"), default=["mds", "tsne"],
                   help=f"spatial projections, comma-separated: {', '.join(PROJECTIONS)} or all (default mds,tsne)")
    p.add_argument("--optimise", action=argparse.BooleanOptionalAction, default=True,
                   help="move non-key projections by the seed's Algorithm 1 (default on)")
    p.add_argument("--keep-moving", action="store_true",
                   help="Algorithm 1 read as 'descend until stuck' instead of the printed one move per frame")
    p.add_argument("--seed", type=int_range(0, name="seed"), default=0, help="seed of the random projections")


PARSERS = (add_sk_compact_parser,)
