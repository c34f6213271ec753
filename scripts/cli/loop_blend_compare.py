"""``loop``, ``blend``, ``compare``: motion manifolds (Eslitzbichler, "Modelling Character Motions on
Infinite-Dimensional Manifolds").

* ``loop`` calls ``bpy.ops.anim_signals.make_cyclic`` for every animated object (range: the action's,
  ``--start``/``--end``, or ``--auto``) and saves ``<input name>_loop.blend``;
* ``blend`` imports two clips into one scene (a second .blend contributes its actions) and calls
  ``bpy.ops.anim_signals.blend_actions``; the new actions are saved in ``<A>_<B>_blend.blend``;
* ``compare`` imports every BVH into one scene, calls ``bpy.ops.anim_signals.compare_actions`` and
  writes ``DIR/distances.json`` and ``DIR/compare.md`` (distance matrix, clusters, nearest neighbours).
"""

from __future__ import annotations

import json
import os
import sys
import time

import _blender_env as be

from .common import (
    CliError,
    add_clip_input,
    add_command,
    add_objects_option,
    add_out_option,
    assigned_action,
    check_file,
    check_input,
    default_out,
    enable_operators,
    expand_folders,
    failed,
    for_each_object,
    import_bvh,
    load_input,
    open_blend,
    pick_objects,
    run_operator,
    save,
)
from .inputs import check_inputs
from .outputs import check_output_dir, check_output_file, write_text, written_atomically
from .values import frame_number, int_range, non_negative_int, unit_interval

# the operator's minimum samples per clip (operators/loop_blend_compare/clips.py MIN_FRAMES, not importable
# without Blender): fewer would be clamped to it silently
MIN_COMPARE_SAMPLES = 4

# --------------------------------------------------------------------------------------------------
# loop


def loop_params(args) -> dict:
    """make_cyclic's arguments from the command line (checks the range options; CliError on misuse)."""
    custom = args.start is not None or args.end is not None
    if args.auto and custom:
        raise CliError("--auto and --start/--end exclude each other")
    if custom and (args.start is None or args.end is None):
        raise CliError("--start and --end go together (the cycle's first and last frame)")
    if custom and args.end <= args.start:
        raise CliError(f"--end ({args.end}) must come after --start ({args.start})")
    if (args.min_period or args.max_period) and not args.auto:
        raise CliError("--min-period / --max-period only apply with --auto")
    if args.min_period and args.max_period and args.max_period < args.min_period:
        raise CliError(f"--max-period ({args.max_period}) must not be shorter than --min-period ({args.min_period})")
    params = dict(range_mode='AUTO' if args.auto else ('CUSTOM' if custom else 'ACTION'),
                  add_cycles=not args.no_cycles, keep_original=not args.replace,
                  travel='NONE' if args.in_place else 'AUTO', velocity_window=args.velocity_window)
    if custom:
        params.update(frame_start=int(args.start), frame_end=int(args.end))
    if args.auto:
        params.update(min_period=args.min_period, max_period=args.max_period)
    return params


def loop_summary(r) -> str:
    """One line from the operator's result (``scene.anim_signals.last_loop``)."""
    line = (f"  {r.object_name}: frames {r.frame_start}-{r.frame_end}{' (found)' if r.auto_range else ''}, "
            f"{r.curves} curves; seam pose {r.pose_before_deg:.3g} -> {r.pose_after_deg:.3g} deg, "
            f"velocity {r.velocity_before_deg:.3g} -> {r.velocity_after_deg:.3g} deg/frame")
    if r.joint_pose_before_cm >= 0:
        line += (f"; joints {r.joint_pose_before_cm:.3g} -> {r.joint_pose_after_cm:.3g} cm, velocity "
                 f"{r.joint_velocity_before_cm:.3g} -> {r.joint_velocity_after_cm:.3g} cm/frame")
    return line + (f"; RMS change {r.rms_deviation_deg:.3g} deg; {r.seconds:.2f} s -> action {r.action_name!r}"
                   f"{'' if r.converged else ' (closure did not fully converge)'}")


def cmd_loop(args) -> int:
    params = loop_params(args)
    out = check_output_file(args.out or default_out(args.input, "_loop"), "--out")
    check_input(args.input)
    objects = pick_objects(load_input(args.input), args.objects, where=args.input)
    if not objects:
        raise CliError(f"{args.input}: no object has an action to loop")
    enable_operators("make_cyclic")
    bpy = be.import_bpy()

    def loop_object(ob):
        if params["keep_original"]:
            ob.animation_data.action.use_fake_user = True  # survives the save beside the loop
        run_operator(bpy.ops.anim_signals.make_cyclic, ob.name, ob, **params)
        print(loop_summary(bpy.context.scene.anim_signals.last_loop), flush=True)

    failures = for_each_object(objects, loop_object, verb="looping", what="looped")
    print(f"saved {save(out)}")
    return 1 if failures else 0


# --------------------------------------------------------------------------------------------------
# blend


def blend_weights(args) -> dict:
    """blend_actions' weight / count arguments (CliError on misuse)."""
    if args.count is not None and args.weight is not None:
        raise CliError("--weight and --count exclude each other")
    if args.count is not None:  # the argument types keep count >= 1 and weight in [0, 1]
        return dict(weight=0.5, count=int(args.count))
    return dict(weight=0.5 if args.weight is None else float(args.weight), count=0)


def append_actions(path: str, name: str | None):
    """Append the actions of another .blend; returns the one to blend (``name``, or its only action)."""
    bpy = be.import_bpy()
    try:
        with bpy.data.libraries.load(path, link=False) as (src, dst):
            available = list(src.actions)
            if name is not None and name not in available:
                raise CliError(f"{path} has no action named {name!r} (actions: {', '.join(available) or 'none'})")
            if name is None and len(available) != 1:
                raise CliError(f"{path} has {len(available)} actions ({', '.join(available) or 'none'}): "
                               "name the one to blend with --action-b")
            dst.actions = [name or available[0]]
    except CliError:
        raise
    except Exception as ex:
        raise CliError(f"could not read actions from {path}: {ex}") from ex
    act = dst.actions[0]
    act.use_fake_user = True
    return act


def blend_out(args) -> str:
    """The output .blend: --out, or ``<A>_<B>_blend.blend`` here (B: the second file, or --action-b)."""
    if args.out:
        return args.out
    paths = args.inputs
    stem_a = os.path.splitext(os.path.basename(paths[0]))[0]
    stem_b = os.path.splitext(os.path.basename(paths[-1]))[0] if len(paths) == 2 else args.action_b
    return os.path.abspath(f"{stem_a}_{stem_b}_blend.blend")


def check_blend_inputs(args) -> None:
    """The one or two input files (exist, well formed) and how they name the actions; CliError on misuse."""
    paths = args.inputs
    if len(paths) > 2:
        raise CliError(f"blend takes one or two input files, got {len(paths)}")
    for p in paths:
        check_file(p, (".bvh", ".blend"))
    if len(paths) == 1 and (not paths[0].lower().endswith(".blend") or not (args.action_a and args.action_b)):
        raise CliError("with one input, give a .blend and both --action-a and --action-b")
    check_inputs(paths)


def blend_inputs(args):
    """(object playing A or None, action A, action B) from the one or two input files."""
    bpy = be.import_bpy()
    paths = args.inputs
    first = paths[0]
    objects = load_input(first)  # clears the scene for a BVH, opens a .blend
    if args.action_a:
        act_a = bpy.data.actions.get(args.action_a)
        if act_a is None:
            raise CliError(f"no action named {args.action_a!r} in {first}")
        ob_a = next((o for o in objects if assigned_action(o) == act_a), None)
    else:
        if not objects:
            raise CliError(f"{first}: no object has an action to blend")
        active = bpy.context.view_layer.objects.active
        ob_a = active if active in objects else objects[0]
        act_a = assigned_action(ob_a)
    if len(paths) == 1:
        act_b = bpy.data.actions.get(args.action_b)
        if act_b is None:
            raise CliError(f"no action named {args.action_b!r} in {first}")
    elif paths[1].lower().endswith(".bvh"):
        before = set(bpy.data.actions)
        ob_b = import_bvh(paths[1])
        act_b = assigned_action(ob_b) or next((a for a in bpy.data.actions if a not in before), None)
        if args.action_b:
            print(f"note: --action-b ignored for the BVH {paths[1]}", file=sys.stderr)
    else:
        act_b = append_actions(paths[1], args.action_b or None)
    if act_a is None or act_b is None:
        raise CliError("could not find the two actions to blend")
    return ob_a, act_a, act_b


def cmd_blend(args) -> int:
    weights = blend_weights(args)
    check_blend_inputs(args)
    out = check_output_file(blend_out(args), "--out")
    bpy = be.import_bpy()
    ob_a, act_a, act_b = blend_inputs(args)
    enable_operators("blend_actions")
    before = set(bpy.data.actions)
    print(f"blending {act_a.name!r} and {act_b.name!r} ...", flush=True)
    run_operator(bpy.ops.anim_signals.blend_actions, "blend", ob_a, action_a=act_a.name, action_b=act_b.name,
                 cyclic=args.cyclic, align=not args.no_align, **weights)
    r = bpy.context.scene.anim_signals.last_blend
    new = [a.name for a in bpy.data.actions if a not in before]
    left_out = r.missing_in_a + r.missing_in_b
    print(f"  {r.channels} common channels, {'closed (cyclic)' if r.closed else 'open'}"
          f"{'' if args.no_align else ', time-aligned'}: {r.action_names or ', '.join(new)}"
          f"{f'; assigned to {r.assigned_to!r}' if r.assigned_to else ''}"
          f"{f'; {left_out} channel(s) not in both, left out' if left_out else ''}"
          f"; {r.seconds:.2f} s", flush=True)
    print(f"saved {save(out)}")
    return 0


# --------------------------------------------------------------------------------------------------
# compare


def compare_inputs(paths) -> tuple[list[str], str | None]:
    """Folders -> their BVH files (sorted); returns (BVH files, the one .blend or None). CliError on misuse."""
    bvhs: list[str] = []
    blend = None
    for p in expand_folders(paths, (".bvh",)):
        if p.lower().endswith(".bvh"):
            bvhs.append(p)
        elif p.lower().endswith(".blend"):
            if blend is not None:
                raise CliError("compare takes at most one .blend (its actions, plus any BVH files)")
            blend = p
        else:
            raise CliError(f"unsupported input {p!r}: expected BVH files, folders of them, or one .blend")
    return list(dict.fromkeys(bvhs)), blend


def clusters_of(names, labels) -> dict[int, list[str]]:
    """Cluster -> its clips, in the order of ``names``."""
    clusters: dict[int, list[str]] = {}
    for n, c in zip(names, labels):
        clusters.setdefault(int(c), []).append(n)
    return clusters


def compare_report(names, files, matrix, labels, meta) -> tuple[dict, str]:
    """distances.json payload and compare.md text (pure Python: clusters, nearest neighbours, matrix)."""
    m = len(names)
    nearest = {}
    if matrix is not None:
        for i, n in enumerate(names):
            order = sorted((j for j in range(m) if j != i), key=lambda j: (matrix[i][j], j))
            nearest[n] = [[names[j], matrix[i][j]] for j in order[:min(5, m - 1)]]
    clusters = clusters_of(names, labels)
    payload = dict(meta, actions=names, files=files, clusters={n: int(c) for n, c in zip(names, labels)},
                   distances=matrix, nearest=nearest)
    md = [f"# Compare: {m} clips ({meta['features'].lower()} features, {meta['metric'].lower()} distance"
          f"{', as cycles' if meta.get('cyclic') else ''})", ""]
    md += [f"Dendrogram: `{os.path.basename(meta['dendrogram'])}`" if meta.get("dendrogram") else "", ""]
    md += ["## Clusters", "", "| cluster | clips |", "|---:|---|"]
    for c in sorted(clusters):
        md.append(f"| {c} | {', '.join(clusters[c])} |")
    if nearest:
        md += ["", "## Nearest neighbours", "", "| clip | cluster | nearest (distance) |", "|---|---:|---|"]
        for n, c in zip(names, labels):
            md.append(f"| {n} | {c} | " + ", ".join(f"{o} ({d:.3g})" for o, d in nearest[n][:3]) + " |")
        md += ["", "## Distance matrix", ""]
        md.append("| # | clip | " + " | ".join(f"{i + 1}" for i in range(m)) + " |")
        md.append("|---:|---|" + "---:|" * m)
        for i, n in enumerate(names):
            md.append(f"| {i + 1} | {n} | " + " | ".join(f"{matrix[i][j]:.3g}" for j in range(m)) + " |")
    else:
        md += ["", "(distance matrix not available from this version of the extension)"]
    return payload, "\n".join(md) + "\n"


def compare_clips(args, bvhs: list[str], blend: str | None) -> tuple[list[str], list[str]]:
    """Load the clips to compare into one scene; returns (action names, the file each came from)."""
    bpy = be.import_bpy()
    names: list[str] = []
    files: list[str] = []
    if blend is not None:
        open_blend(blend)
        wanted = [n.strip() for n in args.actions.split(",") if n.strip()]
        for n in wanted:
            if n not in bpy.data.actions:
                raise CliError(f"no action named {n!r} in {blend}")
        names += wanted or [a.name for a in bpy.data.actions if be.action_fcurves_any(a)]
        files += [blend] * len(names)
    else:
        be.clear_scene()
    for path in bvhs:
        act = assigned_action(import_bvh(path))
        if act is None:
            raise CliError(f"{path}: the import made no action")
        names.append(act.name)
        files.append(path)
    if len(names) < 2:
        raise CliError(f"need at least 2 clips to compare, got {len(names)}")
    return names, files


def full_distance_matrix(names: list[str]):
    """The operator's whole distance matrix (``last_compare.matrix_json``) in the order of ``names``, or None."""
    bpy = be.import_bpy()
    text = getattr(bpy.context.scene.anim_signals.last_compare, "matrix_json", "")
    if not text:
        return None
    data = json.loads(text)
    matrix, order = data.get("distances"), data.get("actions")
    if matrix is not None and order != names:
        idx = [order.index(n) for n in names]
        matrix = [[matrix[i][j] for j in idx] for i in idx]
    return matrix


COMPARE_FILES = ("distances.json", "compare.md", "dendrogram.png")


def check_compare_outputs(args) -> tuple[str, str]:
    """(--out-dir, --save) checked: a writable folder (its three files writable too) and a .blend."""
    out_dir = check_output_dir(args.out_dir, "--out-dir")
    for name in COMPARE_FILES:
        check_output_file(os.path.join(out_dir, name), "--out-dir", (os.path.splitext(name)[1],))
    return out_dir, check_output_file(args.save, "--save") if args.save else ""


def cmd_compare(args) -> int:
    bvhs, blend = compare_inputs(args.inputs)
    if blend is None:
        if args.actions:
            raise CliError("--actions names actions of a .blend input")
        if len(bvhs) < 2:
            raise CliError(f"need at least 2 clips to compare, got {len(bvhs)}")
    check_inputs(bvhs + ([blend] if blend else []))
    out_dir, save_to = check_compare_outputs(args)
    bpy = be.import_bpy()
    names, files = compare_clips(args, bvhs, blend)
    enable_operators("compare_actions")
    image = os.path.join(out_dir, "dendrogram.png")
    print(f"comparing {len(names)} clips ({args.features.lower()}, {args.metric.lower()}) ...", flush=True)
    t0 = time.perf_counter()
    with written_atomically(image) as image_partial:  # the operator writes the PNG; renamed when all went well
        run_operator(bpy.ops.anim_signals.compare_actions, "compare", None, actions=",".join(names),
                     features=args.features, metric=args.metric, n_clusters=args.clusters,
                     image_path=image_partial, cyclic=not args.open, n_samples=args.samples)
        seconds = time.perf_counter() - t0
        labels = [int(bpy.data.actions[n].get("anim_signals_cluster", 0)) for n in names]
        matrix = full_distance_matrix(names)
        meta = dict(features=args.features, metric=args.metric, cyclic=not args.open, n_samples=args.samples,
                    n_clusters=len(set(labels)), seconds=seconds,
                    dendrogram=image if os.path.isfile(image_partial) else None)
        payload, md = compare_report(names, files, matrix, labels, meta)
        try:
            write_text(os.path.join(out_dir, "distances.json"), json.dumps(payload, indent=1))
            write_text(os.path.join(out_dir, "compare.md"), md)
        except OSError as ex:
            raise failed(f"could not write to {out_dir}: {ex}") from ex
    for c, members in sorted(clusters_of(names, labels).items()):
        print(f"  cluster {c}: {', '.join(members)}")
    if matrix is None:
        print("note: the distance matrix could not be read from the extension (clusters only)", file=sys.stderr)
    print(f"  {seconds:.2f} s; wrote {os.path.join(out_dir, 'compare.md')}, distances.json"
          f"{', dendrogram.png' if meta['dendrogram'] else ''}")
    if save_to:
        print(f"saved {save(save_to)}")
    return 0


# --------------------------------------------------------------------------------------------------
# arguments


def add_loop_parser(sub) -> None:
    p = add_command(sub, "loop", cmd_loop, "make animation loop seamlessly (closed-curve projection, Eslitzbichler)",
                    "Loop every animated object's action with bpy.ops.anim_signals.make_cyclic.")
    add_clip_input(p)
    p.add_argument("--start", type=frame_number, default=None, help="first frame of the cycle (with --end)")
    p.add_argument("--end", type=frame_number, default=None,
                   help="last frame of the cycle: it gets the first frame's pose")
    p.add_argument("--auto", action="store_true", help="find the best cycle inside the clip and loop that")
    p.add_argument("--min-period", type=non_negative_int, default=0,
                   help="--auto: shortest cycle in frames (0 = automatic)")
    p.add_argument("--max-period", type=non_negative_int, default=0,
                   help="--auto: longest cycle in frames (0 = automatic)")
    p.add_argument("--velocity-window", type=int_range(0, 100000), default=0,
                   help="frames at each end over which the velocity is matched (0 = automatic)")
    p.add_argument("--in-place", action="store_true",
                   help="the root returns to its start too (default: it keeps travelling, Cycles with offset)")
    p.add_argument("--no-cycles", action="store_true", help="do not add Cycles F-modifiers")
    add_objects_option(p)
    p.add_argument("--replace", action="store_true", help="loop the action itself (default: a copy <action>.loop)")
    add_out_option(p, "<input name>_loop.blend here")


def add_blend_parser(sub) -> None:
    p = add_command(sub, "blend", cmd_blend, "blend two clips along the geodesic between them (Eslitzbichler)",
                    "Blend two actions with bpy.ops.anim_signals.blend_actions: A.bvh B.bvh, "
                    "A.blend B.blend, or one .blend with --action-a and --action-b.")
    p.add_argument("inputs", nargs="+", metavar="A|B", help="two .bvh / .blend files, or one .blend")
    p.add_argument("--action-a", default="", help="action A in the first .blend (default: its animated object's)")
    p.add_argument("--action-b", default="", help="action B in the second (or the only) .blend")
    p.add_argument("--weight", type=unit_interval, default=None, help="0 = A, 1 = B (default 0.5)")
    p.add_argument("--count", type=int_range(1, 100), default=None,
                   help="make N evenly spaced in-betweens instead of one (at most 100)")
    p.add_argument("--cyclic", default="AUTO", choices=("AUTO", "OPEN", "CLOSED"),
                   help="blend as open clips or as cycles (AUTO: cycles when both clips nearly close)")
    p.add_argument("--no-align", action="store_true", help="do not time-warp B onto A first")
    add_out_option(p, "<A>_<B>_blend.blend here")


def add_compare_parser(sub) -> None:
    p = add_command(sub, "compare", cmd_compare, "distances, clusters and a dendrogram of clips (Eslitzbichler)",
                    "Compare clips with bpy.ops.anim_signals.compare_actions; writes "
                    "DIR/distances.json, DIR/compare.md and DIR/dendrogram.png.")
    p.add_argument("inputs", nargs="+", metavar="FOLDER|FILE",
                   help="BVH files, folders of BVH files, and/or one .blend (its actions)")
    p.add_argument("--actions", default="", help="comma-separated actions of the .blend (default: all)")
    p.add_argument("--features", default="CHANNELS", choices=("CHANNELS", "BODY"),
                   help="rotation channels by name (one skeleton) or body features (any humanoid rigs)")
    p.add_argument("--metric", default="ELASTIC", choices=("ELASTIC", "LINEAR"))
    p.add_argument("--clusters", type=int_range(0, 1000), default=0,
                   help="number of clusters (0 = automatic: best silhouette, 2-10)")
    p.add_argument("--open", action="store_true", help="compare as open clips (default: as cycles, as the seed)")
    p.add_argument("--samples", type=int_range(MIN_COMPARE_SAMPLES, 10000), default=100,
                   help=f"samples per clip, at least {MIN_COMPARE_SAMPLES} (default 100)")
    p.add_argument("--out-dir", default="anim_signals_compare", help="output folder (default ./anim_signals_compare)")
    p.add_argument("--save", default="", help="also save the scene (cluster labels on the actions) to this .blend")


PARSERS = (add_loop_parser, add_blend_parser, add_compare_parser)
