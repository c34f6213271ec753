"""``sk-compact`` and ``sk-build``: spatial keyframes (Costa and Esperança, "Enhancing Spatial Keyframe
Animations with Motion Capture").

``sk-build`` is a Blender command like the others: it imports a BVH (or opens a .blend), calls
``bpy.ops.anim_signals.spatial_keyframes_from_action`` for every animated armature (the model is stored on
the armature), optionally writes the canvas (markers and trajectory) with ``pose_space_save_png`` and
saves ``<input name>_spatialkeys.blend``.

``sk-compact`` compacts a folder of BVH clips against temporal keyframes. Unlike the other commands, it
does not start Blender: clips are read with the core's BVH reader
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

from .common import (
    CliError,
    add_clip_input,
    add_command,
    add_objects_option,
    add_out_option,
    check_file,
    check_input,
    default_out,
    enable_operators,
    expand_folders,
    failed,
    for_each_object,
    load_input,
    pick_objects,
    run_operator,
    save,
    stdout_dropped,
)
from .inputs import check_bvh
from .outputs import check_output_dir, check_output_file, write_text, written_atomically
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
        check_marker_count(path, s.frames, ratio=ratio)
    return [s.frames for s in summaries]


def check_marker_count(path: str, frames: int, *, ratio: float | None = None, count: int | None = None) -> None:
    """CliError (exit code 2) naming ``path`` unless ``count`` (or ``ratio`` of the frames) is at least 3
    markers and at most ``frames`` (the operator's rule, checked before Blender starts)."""
    if count is not None:
        if count > frames:
            raise CliError(f"{path}: {frames} frames, fewer than the --count {count} markers asked for (each "
                           "marker is a frame's pose)")
        return
    assert ratio is not None
    keys = keyframes_for(frames, ratio)
    if keys < MIN_MARKERS:
        raise CliError(f"{path}: {frames} frames at --ratio {ratio:g} give {keys} keyframe(s); spatial "
                       f"keyframes need at least {MIN_MARKERS} markers (--ratio {MIN_MARKERS / frames:.4g} "
                       "or more for this clip)")


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


# --------------------------------------------------------------------------------------------------
# sk-build: spatial keyframes of a clip in Blender, saved with the .blend (and a PNG of the canvas)

SK_BUILD_OPERATORS = ("spatial_keyframes_from_action", "pose_space_save_png")
PNG_SIZE = (800, 600)
MIN_RATIO = 0.001  # the operator's own minimum: a smaller ratio would be clamped to it silently


def sk_build_params(args) -> dict:
    """spatial_keyframes_from_action's arguments (the operator's enum identifiers)."""
    params = dict(projection=args.projection.upper(), selection=args.selection.upper(), optimise=args.optimise)
    if args.count is not None:
        return dict(params, key_mode="COUNT", count=args.count)
    return dict(params, key_mode="RATIO", ratio=args.ratio)


def png_size(args) -> tuple[int, int]:
    """(width, height) of the PNG; CliError when --width / --height come without --png."""
    if not args.png and (args.width is not None or args.height is not None):
        raise CliError("--width and --height go with --png (the size of the canvas image)")
    return (args.width or PNG_SIZE[0], args.height or PNG_SIZE[1])


def sk_build_summary(scene, settings: str) -> str:
    r = scene.anim_signals.last_spatial_keyframes
    return (f"{r.object_name}: {r.markers} markers, {r.frames} frames, {r.joints} joints, error {r.error:.4g} per "
            f"frame per joint (weighted radians; {settings}); {r.seconds:.2f} s")


def build_targets(args) -> list:
    """The armatures to build from: every animated armature of the input, or those ``--objects`` names
    (any animated object: the operator explains why a mesh is refused)."""
    with stdout_dropped():  # the BVH importer's progress and zero-length-bone notes
        animated = load_input(args.input)
    if args.objects:
        return pick_objects(animated, args.objects, "animated object", where=args.input)
    armatures = [ob for ob in animated if ob.type == "ARMATURE"]
    if not armatures:
        raise CliError(f"{args.input}: no armature with an action (animated objects: "
                       f"{', '.join(ob.name for ob in animated) or 'none'})")
    return armatures


def write_canvas_png(ob, path: str, size: tuple[int, int]) -> None:
    """The canvas as ``pose_space_save_png`` renders it for ``ob`` (what the build made it show: the
    spatial keyframes) into ``path``."""
    bpy = be.import_bpy()
    with stdout_dropped():  # its report names the temporary file
        run_operator(bpy.ops.anim_signals.pose_space_save_png, f"{ob.name}: the canvas PNG", ob,
                     filepath=path, width=size[0], height=size[1])


def cmd_sk_build(args) -> int:
    params = sk_build_params(args)
    size = png_size(args)
    out = check_output_file(args.out or default_out(args.input, "_spatialkeys"), "--out")
    png = check_output_file(args.png, "--png", (".png",)) if args.png else ""
    if check_file(args.input, (".bvh", ".blend")) == ".bvh":
        check_marker_count(args.input, check_bvh(args.input).frames, ratio=args.ratio, count=args.count)
    else:
        check_input(args.input, (".blend",))
    bpy = be.import_bpy()
    objects = build_targets(args)
    enable_operators(*SK_BUILD_OPERATORS)
    settings = f"{args.projection}, {args.selection}{', Algorithm 1' if args.optimise else ''}"
    built = []

    def build(ob):
        with stdout_dropped():  # the operator's report: the line below says the same and more
            run_operator(bpy.ops.anim_signals.spatial_keyframes_from_action, ob.name, ob, **params)
        print("  " + sk_build_summary(bpy.context.scene, settings), flush=True)
        built.append(ob)

    failures = for_each_object(objects, build, "building spatial keyframes of", what="built")
    if not png:
        print(f"saved {save(out)}")
        return 1 if failures else 0
    with written_atomically(png) as partial:  # the PNG is renamed only once the .blend is saved too
        write_canvas_png(built[0], partial, size)
        saved = save(out)
    print(f"wrote {png} (the canvas of {built[0].name}: markers and trajectory)")
    print(f"saved {saved}")
    return 1 if failures else 0


def add_sk_build_parser(sub) -> None:
    p = add_command(sub, "sk-build", cmd_sk_build,
                    "spatial keyframes of a clip: key poses as markers on the canvas, stored in a .blend (Costa)",
                    "Build spatial keyframes with bpy.ops.anim_signals.spatial_keyframes_from_action for every "
                    "animated armature (or --objects): key poses become markers on a plane and every frame a point "
                    "of a 2D trajectory; the model is stored on the armature and saved with the .blend. --png also "
                    "writes the canvas (markers as diamonds, the trajectory coloured by time) of the first armature "
                    "built.")
    add_clip_input(p)
    add_objects_option(p, "armature names", "every animated armature")
    p.add_argument("--projection", type=str.lower, choices=PROJECTIONS, default="mds",
                   help="how every frame's pose becomes a point of the plane (default mds)")
    p.add_argument("--selection", type=str.lower, choices=SELECTIONS, default="uniform",
                   help="how the key poses (markers) are chosen (default uniform)")
    keys = p.add_mutually_exclusive_group()
    keys.add_argument("--ratio", type=float_range(MIN_RATIO, 1.0), default=0.03,
                      help=f"markers per frame, {MIN_RATIO:g} to 1 (default 0.03, the seed's); at least {MIN_MARKERS} "
                           "markers are needed")
    keys.add_argument("--count", type=int_range(MIN_MARKERS), default=None,
                      help=f"number of markers instead of --ratio (at least {MIN_MARKERS}, at most the clip's frames)")
    p.add_argument("--optimise", action=argparse.BooleanOptionalAction, default=True,
                   help="move non-key frames' points by the seed's Algorithm 1 (default on)")
    p.add_argument("--png", default="", help="also write the canvas as this .png")
    p.add_argument("--width", type=int_range(64, 8192), default=None,
                   help=f"PNG width in pixels, 64-8192 (default {PNG_SIZE[0]})")
    p.add_argument("--height", type=int_range(64, 8192), default=None,
                   help=f"PNG height in pixels, 64-8192 (default {PNG_SIZE[1]})")
    add_out_option(p, "<input name>_spatialkeys.blend here")


PARSERS = (add_sk_compact_parser, add_sk_build_parser)
