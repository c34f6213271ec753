"""Anim Signals headless command line.

Works the same in the Blender binary and with the ``bpy`` module from a virtual environment::

    blender --background --python scripts/anim_signals_cli.py -- fit IN.bvh --out OUT.blend
    .venv/bin/python scripts/anim_signals_cli.py fit IN.bvh --out OUT.blend

Commands (sub-commands; more tools add theirs to ``COMMANDS``):

    fit IN.bvh|IN.blend [--max-error-rotation 0.5] [--max-error-location 0.01] [--max-error-other 0.01]
                        [--mode AUTO|LATENT|PER_CHANNEL] [--snap-to-frames] [--internal-knots N]
                        [--objects NAME[,NAME...]] [--replace] [--out OUT.blend]
    loop IN.bvh|IN.blend [--start F --end F | --auto [--min-period P] [--max-period P]] [--in-place]
                         [--velocity-window W] [--no-cycles] [--replace] [--objects ...] [--out OUT.blend]
    blend A.bvh|A.blend [B.bvh|B.blend] [--action-a NAME] [--action-b NAME] (--weight 0.5 | --count N)
                         [--cyclic AUTO|OPEN|CLOSED] [--no-align] [--out OUT.blend]
    compare FOLDER|FILES... [--actions A,B,...] [--features CHANNELS|BODY] [--metric ELASTIC|LINEAR]
                         [--clusters K] [--open] [--samples 100] [--out-dir DIR] [--save OUT.blend]
    db-build FOLDER|FILES... [--fps 30] --out DB.blend          (Live Link Face CSV or BVH clips)
    reconstruct DB.blend QUERY.csv|QUERY.bvh [--drop-eyes] [--input-channels A,B] [--output BEST_PATH|SYNTHESIS]
                         [--k 256] [--window 32] [--paths 50] --out OUT.blend

``fit`` imports the BVH with Blender's own importer (or opens the .blend), enables the extension, and
for every object with an action calls ``bpy.ops.anim_signals.fit_latent_spline`` (the operator the UI
uses) with that object active, then saves ``OUT.blend`` (default: ``<input name>_fitted.blend`` in the
current folder; the input .blend is never overwritten unless ``--out`` names it) and prints a summary.
The original action is kept (fake user) unless ``--replace``.

``loop`` calls ``bpy.ops.anim_signals.make_cyclic`` for every animated object (range: the action's, a
custom ``--start``/``--end``, or ``--auto`` = the best cycle found in the clip), saves
``<input name>_loop.blend`` and prints the seam jumps before and after.

``blend`` imports both clips into one scene (a second .blend contributes its actions) and calls
``bpy.ops.anim_signals.blend_actions`` with the first clip's object active; new actions
``"<A>+<B> <weight>"`` are saved in ``<A>_<B>_blend.blend``.

``compare`` imports every BVH (folders: their ``*.bvh``, sorted) into one scene, calls
``bpy.ops.anim_signals.compare_actions`` (the dendrogram goes to ``DIR/dendrogram.png``) and writes
``DIR/distances.json`` and ``DIR/compare.md`` (distance matrix, clusters, nearest neighbours).

Exit codes: 0 success, 1 an operator failed, 2 bad input or arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blender_env as be  # noqa: E402


class CliError(Exception):
    """A clear message for the user; exit code 2 (bad input) unless ``code`` says otherwise."""

    def __init__(self, msg, code=2):
        super().__init__(msg)
        self.code = code


# --------------------------------------------------------------------------------------------------
# input / output


def load_input(path: str):
    """Import a BVH or open a .blend; returns the list of objects with an action."""
    bpy = be.import_bpy()
    if not os.path.isfile(path):
        raise CliError(f"no such file: {path}")
    ext = os.path.splitext(path)[1].lower()
    if ext == ".bvh":
        be.clear_scene()
        try:
            be.import_bvh(path)
        except Exception as ex:
            raise CliError(f"could not import BVH {path}: {ex}") from ex
    elif ext == ".blend":
        try:
            bpy.ops.wm.open_mainfile(filepath=os.path.abspath(path), load_ui=False)
        except Exception as ex:
            raise CliError(f"could not open {path}: {ex}") from ex
    else:
        raise CliError(f"unsupported input {path!r}: expected a .bvh or .blend file")
    return [ob for ob in bpy.context.scene.objects
            if ob.animation_data is not None and ob.animation_data.action is not None]


def default_out(path: str, suffix: str = "_fitted") -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.abspath(f"{stem}{suffix}.blend")


def save(out: str):
    bpy = be.import_bpy()
    out = os.path.abspath(out)
    if not out.lower().endswith(".blend"):
        raise CliError(f"--out must be a .blend file: {out}")
    d = os.path.dirname(out)
    if d and not os.path.isdir(d):
        os.makedirs(d, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=out, check_existing=False)
    return out


# --------------------------------------------------------------------------------------------------
# fit


def fit_object(ob, args):
    """Run the fit operator on ``ob``; returns a summary dict (errors measured with fcurve.evaluate)."""
    import numpy as np

    bpy = be.import_bpy()
    orig = ob.animation_data.action
    frames, values, fcs, kinds = be.signal_from_object(ob)
    keys_before = be.count_keys(fcs)
    if args.replace is False:
        orig.use_fake_user = True  # the original survives the save beside the fitted copy
    params = dict(channels='ALL', mode=args.mode, max_error_rotation=args.max_error_rotation,
                  max_error_location=args.max_error_location, max_error_other=args.max_error_other,
                  internal_knots=args.internal_knots, snap_to_frames=args.snap_to_frames, seed=args.seed,
                  keep_original=not args.replace)
    t0 = time.perf_counter()
    try:
        with bpy.context.temp_override(**be.object_override(ob)):
            res = bpy.ops.anim_signals.fit_latent_spline(**params)
    except RuntimeError as ex:  # the operator reported an error
        raise CliError(f"{ob.name}: {str(ex).strip()}", code=1) from ex
    seconds = time.perf_counter() - t0
    if 'FINISHED' not in res:
        raise CliError(f"{ob.name}: the fit operator returned {sorted(res)}", code=1)
    by_key = {be.channel_key(fc): fc for fc in be.action_fcurves(ob)}
    fitted = [by_key.get(be.channel_key(fc)) for fc in fcs]
    summary = {"object": ob.name, "action": ob.animation_data.action.name, "frames": len(frames),
               "channels": len(fcs), "keys_before": keys_before, "seconds": seconds}
    if all(fc is not None for fc in fitted):
        # (original values were sampled before the fit, so this works with --replace too)
        approx = be.sample_fcurves(fitted, frames)
        summary["keys_after"] = be.count_keys(fitted)
        summary["E_D"] = be.distortion(values, approx)
        summary["max_error"] = be.errors_by_kind(values, approx, kinds)
        summary["within"] = bool(np.all(np.abs(approx - values)
                                        <= be.tolerance_vector(kinds, args.max_error_rotation,
                                                               args.max_error_location,
                                                               args.max_error_other) * 1.001 + 1e-5))
    return summary


def cmd_fit(args) -> int:
    objects = load_input(args.input)
    if args.objects:
        wanted = [n.strip() for n in args.objects.split(",") if n.strip()]
        missing = [n for n in wanted if n not in {o.name for o in objects}]
        if missing:
            raise CliError(f"no animated object named {', '.join(missing)} in {args.input} "
                           f"(animated: {', '.join(o.name for o in objects) or 'none'})")
        objects = [o for o in objects if o.name in wanted]
    if not objects:
        raise CliError(f"{args.input}: no object has an action to fit")
    try:
        be.enable_extension()
    except Exception as ex:
        raise CliError(f"could not enable the Anim Signals extension: {ex}", code=1) from ex
    failures = 0
    for ob in objects:
        print(f"fitting {ob.name} ({ob.type.lower()}) ...", flush=True)
        try:
            s = fit_object(ob, args)
        except CliError as ex:
            if ex.code != 1:
                raise
            print(f"error: {ex}", file=sys.stderr)
            failures += 1
            continue
        line = f"  {s['object']}: {s['frames']} frames × {s['channels']} channels, keys {s['keys_before']}"
        if "keys_after" in s:
            pct = 100.0 * s["keys_after"] / max(s["keys_before"], 1)
            errs = ", ".join(f"{k} {v:.3g}{'°' if k == 'rotation' else ''}" for k, v in s["max_error"].items())
            line += (f" -> {s['keys_after']} ({pct:.1f} %), E_D {s['E_D']:.3g}, max error {errs}"
                     f"{'' if s['within'] else ' (OUTSIDE tolerance)'}")
        line += f", {s['seconds']:.2f} s -> action {s['action']!r}"
        print(line, flush=True)
    out = save(args.out or default_out(args.input))
    print(f"saved {out}")
    return 1 if failures else 0


# --------------------------------------------------------------------------------------------------
# loop / blend / compare (Eslitzbichler, motion manifolds)


def _filter_objects(objects, names: str, source: str):
    if not names:
        return objects
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    missing = [n for n in wanted if n not in {o.name for o in objects}]
    if missing:
        raise CliError(f"no animated object named {', '.join(missing)} in {source} "
                       f"(animated: {', '.join(o.name for o in objects) or 'none'})")
    return [o for o in objects if o.name in wanted]


def _enable(*ops: str):
    """Enable the extension and check it has the operators a command calls (CliError otherwise)."""
    try:
        be.enable_extension()
    except Exception as ex:
        raise CliError(f"could not enable the Anim Signals extension: {ex}", code=1) from ex
    bpy = be.import_bpy()
    for op in ops or ("make_cyclic", "blend_actions", "compare_actions"):
        if op not in dir(bpy.ops.anim_signals):
            raise CliError(f"this version of the extension has no bpy.ops.anim_signals.{op}", code=1)


def _run_operator(op, label: str, ob=None, **params):
    """Call ``op(**params)`` (with ``ob`` active when given); RuntimeError / CANCELLED -> CliError(code 1)."""
    bpy = be.import_bpy()
    try:
        if ob is not None:
            with bpy.context.temp_override(**be.object_override(ob)):
                res = op(**params)
        else:
            res = op(**params)
    except RuntimeError as ex:  # the operator reported an error
        msg = str(ex).strip()
        msg = msg[len("Error: "):] if msg.startswith("Error: ") else msg
        raise CliError(f"{label}: {msg}", code=1) from ex
    if 'FINISHED' not in res:
        raise CliError(f"{label}: the operator returned {sorted(res)}", code=1)
    return res


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
    params = dict(range_mode='AUTO' if args.auto else ('CUSTOM' if custom else 'ACTION'),
                  add_cycles=not args.no_cycles, keep_original=not args.replace,
                  travel='NONE' if args.in_place else 'AUTO', velocity_window=args.velocity_window)
    if custom:
        params.update(frame_start=int(args.start), frame_end=int(args.end))
    if args.auto:
        params.update(min_period=args.min_period, max_period=args.max_period)
    return params


def cmd_loop(args) -> int:
    params = loop_params(args)
    objects = _filter_objects(load_input(args.input), args.objects, args.input)
    if not objects:
        raise CliError(f"{args.input}: no object has an action to loop")
    _enable()
    bpy = be.import_bpy()
    failures = 0
    for ob in objects:
        if params["keep_original"] and ob.animation_data.action is not None:
            ob.animation_data.action.use_fake_user = True  # survives the save beside the loop
        print(f"looping {ob.name} ({ob.type.lower()}) ...", flush=True)
        try:
            _run_operator(bpy.ops.anim_signals.make_cyclic, ob.name, ob, **params)
        except CliError as ex:
            if ex.code != 1:
                raise
            print(f"error: {ex}", file=sys.stderr)
            failures += 1
            continue
        r = bpy.context.scene.anim_signals.last_loop
        line = (f"  {r.object_name}: frames {r.frame_start}-{r.frame_end}{' (found)' if r.auto_range else ''}, "
                f"{r.curves} curves; seam pose {r.pose_before_deg:.3g} -> {r.pose_after_deg:.3g} deg, "
                f"velocity {r.velocity_before_deg:.3g} -> {r.velocity_after_deg:.3g} deg/frame")
        if r.joint_pose_before_cm >= 0:
            line += (f"; joints {r.joint_pose_before_cm:.3g} -> {r.joint_pose_after_cm:.3g} cm, velocity "
                     f"{r.joint_velocity_before_cm:.3g} -> {r.joint_velocity_after_cm:.3g} cm/frame")
        line += (f"; RMS change {r.rms_deviation_deg:.3g} deg; {r.seconds:.2f} s -> action {r.action_name!r}"
                 f"{'' if r.converged else ' (closure did not fully converge)'}")
        print(line, flush=True)
    out = save(args.out or default_out(args.input, "_loop"))
    print(f"saved {out}")
    return 1 if failures else 0


def blend_weights(args) -> dict:
    """blend_actions' weight / count arguments (CliError on misuse)."""
    if args.count is not None and args.weight is not None:
        raise CliError("--weight and --count exclude each other")
    if args.count is not None:
        if args.count < 1:
            raise CliError(f"--count must be at least 1, got {args.count}")
        return dict(weight=0.5, count=int(args.count))
    w = 0.5 if args.weight is None else float(args.weight)
    if not 0.0 <= w <= 1.0:
        raise CliError(f"--weight must be between 0 and 1, got {w}")
    return dict(weight=w, count=0)


def _action_of(ob):
    ad = ob.animation_data
    return ad.action if ad is not None else None


def _append_actions(path: str, name: str | None):
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


def cmd_blend(args) -> int:
    bpy = be.import_bpy()
    weights = blend_weights(args)
    paths = args.inputs
    if len(paths) > 2:
        raise CliError(f"blend takes one or two input files, got {len(paths)}")
    for p in paths:
        _check_file(p, (".bvh", ".blend"))
    first = paths[0]
    if len(paths) == 1:
        if not first.lower().endswith(".blend") or not (args.action_a and args.action_b):
            raise CliError("with one input, give a .blend and both --action-a and --action-b")
    objects = load_input(first)  # clears the scene for a BVH, opens a .blend
    if args.action_a:
        act_a = bpy.data.actions.get(args.action_a)
        if act_a is None:
            raise CliError(f"no action named {args.action_a!r} in {first}")
        users = [o for o in objects if _action_of(o) == act_a]
        ob_a = users[0] if users else None
    else:
        if not objects:
            raise CliError(f"{first}: no object has an action to blend")
        ob_a = bpy.context.view_layer.objects.active if bpy.context.view_layer.objects.active in objects \
            else objects[0]
        act_a = _action_of(ob_a)
    if len(paths) == 2:
        second = paths[1]
        if second.lower().endswith(".bvh"):
            before = set(bpy.data.actions)
            try:
                ob_b = be.import_bvh(second)
            except Exception as ex:
                raise CliError(f"could not import BVH {second}: {ex}") from ex
            act_b = _action_of(ob_b) or next((a for a in bpy.data.actions if a not in before), None)
            if args.action_b:
                print(f"note: --action-b ignored for the BVH {second}", file=sys.stderr)
        else:
            act_b = _append_actions(second, args.action_b or None)
    else:
        act_b = bpy.data.actions.get(args.action_b)
        if act_b is None:
            raise CliError(f"no action named {args.action_b!r} in {first}")
    if act_a is None or act_b is None:
        raise CliError("could not find the two actions to blend")
    _enable()
    before = set(bpy.data.actions)
    print(f"blending {act_a.name!r} and {act_b.name!r} ...", flush=True)
    _run_operator(bpy.ops.anim_signals.blend_actions, "blend", ob_a, action_a=act_a.name, action_b=act_b.name,
                  cyclic=args.cyclic, align=not args.no_align, **weights)
    r = bpy.context.scene.anim_signals.last_blend
    new = [a.name for a in bpy.data.actions if a not in before]
    print(f"  {r.channels} common channels, {'closed (cyclic)' if r.closed else 'open'}"
          f"{'' if args.no_align else ', time-aligned'}: {r.action_names or ', '.join(new)}"
          f"{f'; assigned to {r.assigned_to!r}' if r.assigned_to else ''}"
          f"{f'; {r.missing_in_a + r.missing_in_b} channel(s) not in both, left out' if r.missing_in_a + r.missing_in_b else ''}"
          f"; {r.seconds:.2f} s", flush=True)
    stem_a = os.path.splitext(os.path.basename(first))[0]
    stem_b = os.path.splitext(os.path.basename(paths[-1]))[0] if len(paths) == 2 else act_b.name
    out = save(args.out or os.path.abspath(f"{stem_a}_{stem_b}_blend.blend"))
    print(f"saved {out}")
    return 0


def _check_file(path: str, exts) -> None:
    if not os.path.isfile(path):
        raise CliError(f"no such file: {path}")
    if os.path.splitext(path)[1].lower() not in exts:
        raise CliError(f"unsupported input {path!r}: expected {' or '.join(exts)}")


def compare_inputs(paths) -> tuple[list[str], str | None]:
    """Folders -> their BVH files (sorted); returns (BVH files, the one .blend or None). CliError on misuse."""
    bvhs: list[str] = []
    blend = None
    for p in paths:
        p = os.path.abspath(p)
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p) if f.lower().endswith(".bvh"))
            if not found:
                raise CliError(f"no .bvh files in the folder {p}")
            bvhs += found
        elif not os.path.isfile(p):
            raise CliError(f"no such file or folder: {p}")
        elif p.lower().endswith(".bvh"):
            bvhs.append(p)
        elif p.lower().endswith(".blend"):
            if blend is not None:
                raise CliError("compare takes at most one .blend (its actions, plus any BVH files)")
            blend = p
        else:
            raise CliError(f"unsupported input {p!r}: expected BVH files, folders of them, or one .blend")
    seen, unique = set(), []
    for b in bvhs:
        if b not in seen:
            seen.add(b)
            unique.append(b)
    return unique, blend


def _compare_with_distances(bpy, params):
    """Run compare_actions; the full distance matrix is on ``scene.anim_signals.last_compare.matrix_json``."""
    import json

    _run_operator(bpy.ops.anim_signals.compare_actions, "compare", None, **params)
    text = getattr(bpy.context.scene.anim_signals.last_compare, "matrix_json", "")
    if not text:
        return {}
    data = json.loads(text)
    return {"distances": data.get("distances"), "names": data.get("actions")}


def compare_report(names, files, matrix, labels, meta) -> tuple[dict, str]:
    """distances.json payload and compare.md text (pure Python: clusters, nearest neighbours, matrix)."""
    m = len(names)
    nearest = {}
    if matrix is not None:
        for i, n in enumerate(names):
            order = sorted((j for j in range(m) if j != i), key=lambda j: (matrix[i][j], j))
            nearest[n] = [[names[j], matrix[i][j]] for j in order[:min(5, m - 1)]]
    clusters: dict[int, list[str]] = {}
    for n, c in zip(names, labels):
        clusters.setdefault(int(c), []).append(n)
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
        short = [f"{i + 1}" for i in range(m)]
        md.append("| # | clip | " + " | ".join(short) + " |")
        md.append("|---:|---|" + "---:|" * m)
        for i, n in enumerate(names):
            md.append(f"| {i + 1} | {n} | " + " | ".join(f"{matrix[i][j]:.3g}" for j in range(m)) + " |")
    else:
        md += ["", "(distance matrix not available from this version of the extension)"]
    return payload, "\n".join(md) + "\n"


def cmd_compare(args) -> int:
    import json

    bpy = be.import_bpy()
    bvhs, blend = compare_inputs(args.inputs)
    if args.clusters < 0:
        raise CliError(f"--clusters must be 0 (automatic) or more, got {args.clusters}")
    names: list[str] = []
    files: list[str] = []
    if blend is not None:
        try:
            bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
        except Exception as ex:
            raise CliError(f"could not open {blend}: {ex}") from ex
        wanted = [n.strip() for n in args.actions.split(",") if n.strip()]
        for n in wanted:
            if n not in bpy.data.actions:
                raise CliError(f"no action named {n!r} in {blend}")
        picked = wanted or [a.name for a in bpy.data.actions if be.action_fcurves_any(a)]
        names += picked
        files += [blend] * len(picked)
    else:
        if args.actions:
            raise CliError("--actions names actions of a .blend input")
        be.clear_scene()
    for path in bvhs:
        try:
            ob = be.import_bvh(path)
        except Exception as ex:
            raise CliError(f"could not import BVH {path}: {ex}") from ex
        act = _action_of(ob)
        if act is None:
            raise CliError(f"{path}: the import made no action")
        names.append(act.name)
        files.append(path)
    if len(names) < 2:
        raise CliError(f"need at least 2 clips to compare, got {len(names)}")
    _enable()
    out_dir = os.path.abspath(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    image = os.path.join(out_dir, "dendrogram.png")
    params = dict(actions=",".join(names), features=args.features, metric=args.metric, n_clusters=args.clusters,
                  image_path=image, cyclic=not args.open, n_samples=args.samples)
    print(f"comparing {len(names)} clips ({args.features.lower()}, {args.metric.lower()}) ...", flush=True)
    t0 = time.perf_counter()
    captured = _compare_with_distances(bpy, params)
    seconds = time.perf_counter() - t0
    labels = [int(bpy.data.actions[n].get("anim_signals_cluster", 0)) for n in names]
    matrix = captured.get("distances")
    if matrix is not None and captured.get("names") != names:  # the operator's order, mapped to ours
        idx = [captured["names"].index(n) for n in names]
        matrix = [[matrix[i][j] for j in idx] for i in idx]
    meta = dict(features=args.features, metric=args.metric, cyclic=not args.open, n_samples=args.samples,
                n_clusters=len(set(labels)), seconds=seconds,
                dendrogram=image if os.path.isfile(image) else None)
    payload, md = compare_report(names, files, matrix, labels, meta)
    with open(os.path.join(out_dir, "distances.json"), "w") as fh:
        json.dump(payload, fh, indent=1)
    with open(os.path.join(out_dir, "compare.md"), "w") as fh:
        fh.write(md)
    by_cluster: dict[int, list[str]] = {}
    for n, c in zip(names, labels):
        by_cluster.setdefault(c, []).append(n)
    for c in sorted(by_cluster):
        print(f"  cluster {c}: {', '.join(by_cluster[c])}")
    if matrix is None:
        print("note: the distance matrix could not be read from the extension (clusters only)", file=sys.stderr)
    print(f"  {seconds:.2f} s; wrote {os.path.join(out_dir, 'compare.md')}, distances.json"
          f"{', dendrogram.png' if meta['dendrogram'] else ''}")
    if args.save:
        print(f"saved {save(args.save)}")
    return 0


# --------------------------------------------------------------------------------------------------


def add_fit_parser(sub):
    p = sub.add_parser("fit", help="fit dense animation to a few exact Bezier keys (latent B-spline)",
                       description="Fit every animated object's action with bpy.ops.anim_signals.fit_latent_spline.")
    p.add_argument("input", help="a .bvh clip (Blender's importer) or a .blend file")
    p.add_argument("--max-error-rotation", type=float, default=0.5, help="degrees (default 0.5)")
    p.add_argument("--max-error-location", type=float, default=0.01, help="scene units (default 0.01)")
    p.add_argument("--max-error-other", type=float, default=0.01, help="other channels (default 0.01)")
    p.add_argument("--mode", default="AUTO", choices=("AUTO", "LATENT", "PER_CHANNEL"))
    p.add_argument("--internal-knots", type=int, default=0, help="0 = automatic (fewest meeting the tolerance)")
    p.add_argument("--snap-to-frames", action="store_true", help="keys on whole frames")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--objects", default="", help="comma-separated object names (default: every animated object)")
    p.add_argument("--replace", action="store_true", help="do not keep the original action")
    p.add_argument("--out", default="", help="output .blend (default <input name>_fitted.blend here)")
    p.set_defaults(func=cmd_fit)


def add_loop_parser(sub):
    p = sub.add_parser("loop", help="make animation loop seamlessly (closed-curve projection, Eslitzbichler)",
                       description="Loop every animated object's action with bpy.ops.anim_signals.make_cyclic.")
    p.add_argument("input", help="a .bvh clip (Blender's importer) or a .blend file")
    p.add_argument("--start", type=int, default=None, help="first frame of the cycle (with --end)")
    p.add_argument("--end", type=int, default=None, help="last frame of the cycle: it gets the first frame's pose")
    p.add_argument("--auto", action="store_true", help="find the best cycle inside the clip and loop that")
    p.add_argument("--min-period", type=int, default=0, help="--auto: shortest cycle in frames (0 = automatic)")
    p.add_argument("--max-period", type=int, default=0, help="--auto: longest cycle in frames (0 = automatic)")
    p.add_argument("--velocity-window", type=int, default=0,
                   help="frames at each end over which the velocity is matched (0 = automatic)")
    p.add_argument("--in-place", action="store_true",
                   help="the root returns to its start too (default: it keeps travelling, Cycles with offset)")
    p.add_argument("--no-cycles", action="store_true", help="do not add Cycles F-modifiers")
    p.add_argument("--objects", default="", help="comma-separated object names (default: every animated object)")
    p.add_argument("--replace", action="store_true", help="loop the action itself (default: a copy <action>.loop)")
    p.add_argument("--out", default="", help="output .blend (default <input name>_loop.blend here)")
    p.set_defaults(func=cmd_loop)


def add_blend_parser(sub):
    p = sub.add_parser("blend", help="blend two clips along the geodesic between them (Eslitzbichler)",
                       description="Blend two actions with bpy.ops.anim_signals.blend_actions: A.bvh B.bvh, "
                                   "A.blend B.blend, or one .blend with --action-a and --action-b.")
    p.add_argument("inputs", nargs="+", metavar="A|B", help="two .bvh / .blend files, or one .blend")
    p.add_argument("--action-a", default="", help="action A in the first .blend (default: its animated object's)")
    p.add_argument("--action-b", default="", help="action B in the second (or the only) .blend")
    p.add_argument("--weight", type=float, default=None, help="0 = A, 1 = B (default 0.5)")
    p.add_argument("--count", type=int, default=None, help="make N evenly spaced in-betweens instead of one")
    p.add_argument("--cyclic", default="AUTO", choices=("AUTO", "OPEN", "CLOSED"),
                   help="blend as open clips or as cycles (AUTO: cycles when both clips nearly close)")
    p.add_argument("--no-align", action="store_true", help="do not time-warp B onto A first")
    p.add_argument("--out", default="", help="output .blend (default <A>_<B>_blend.blend here)")
    p.set_defaults(func=cmd_blend)


def add_compare_parser(sub):
    p = sub.add_parser("compare", help="distances, clusters and a dendrogram of clips (Eslitzbichler)",
                       description="Compare clips with bpy.ops.anim_signals.compare_actions; writes "
                                   "DIR/distances.json, DIR/compare.md and DIR/dendrogram.png.")
    p.add_argument("inputs", nargs="+", metavar="FOLDER|FILE",
                   help="BVH files, folders of BVH files, and/or one .blend (its actions)")
    p.add_argument("--actions", default="", help="comma-separated actions of the .blend (default: all)")
    p.add_argument("--features", default="CHANNELS", choices=("CHANNELS", "BODY"),
                   help="rotation channels by name (one skeleton) or body features (any humanoid rigs)")
    p.add_argument("--metric", default="ELASTIC", choices=("ELASTIC", "LINEAR"))
    p.add_argument("--clusters", type=int, default=0, help="number of clusters (0 = automatic: best silhouette, 2-10)")
    p.add_argument("--open", action="store_true", help="compare as open clips (default: as cycles, as the seed)")
    p.add_argument("--samples", type=int, default=100, help="samples per clip (default 100)")
    p.add_argument("--out-dir", default="anim_signals_compare", help="output folder (default ./anim_signals_compare)")
    p.add_argument("--save", default="", help="also save the scene (cluster labels on the actions) to this .blend")
    p.set_defaults(func=cmd_compare)


# --------------------------------------------------------------------------------------------------
# pose space (Cashman-Hormann): pose-build, pose-resample, pose-bake


def _pose_ops_ready() -> None:
    _enable("build_pose_space", "pose_space_resample", "pose_space_bake")


def load_pose_input(path: str, pc2: str | None):
    """The objects to build from: a .blend's animated meshes/armatures, a BVH's armature, or an OBJ
    played by a PC2/MDD cache (Mesh Cache modifier, frame 0 = sample 0)."""
    bpy = be.import_bpy()
    if not os.path.isfile(path):
        raise CliError(f"no such file: {path}")
    ext = os.path.splitext(path)[1].lower()
    if ext == ".obj":
        if not pc2:
            raise CliError("an .obj input needs --cache FILE.pc2|.mdd (the vertex animation)")
        if not os.path.isfile(pc2):
            raise CliError(f"no such file: {pc2}")
        be.clear_scene()
        before = set(bpy.data.objects)
        bpy.ops.wm.obj_import(filepath=os.path.abspath(path))
        meshes = [o for o in bpy.data.objects if o not in before and o.type == "MESH"]
        if not meshes:
            raise CliError(f"{path}: no mesh imported")
        ob = meshes[0]
        mod = ob.modifiers.new("MeshCache", "MESH_CACHE")
        fmt = os.path.splitext(pc2)[1].lower()
        mod.cache_format = "PC2" if fmt == ".pc2" else "MDD"
        mod.filepath = os.path.abspath(pc2)
        mod.frame_start = 0.0
        return [ob]
    if pc2:
        raise CliError("--cache goes with an .obj input")
    if ext == ".bvh":
        return load_input(path)
    if ext == ".blend":
        load_input(path)
        return [o for o in bpy.context.scene.objects if o.type in {"MESH", "ARMATURE"}]
    raise CliError(f"unsupported input {path!r}: expected .blend, .bvh, or .obj with --cache")


def _pick(objects, names: str, what: str):
    if not names:
        return objects
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    have = {o.name: o for o in objects}
    missing = [n for n in wanted if n not in have]
    if missing:
        raise CliError(f"no {what} named {', '.join(missing)} (have: {', '.join(have) or 'none'})")
    return [have[n] for n in wanted]


def _pose_summary(scene) -> str:
    r = scene.anim_signals.last_pose_space
    units = " deg" if r.error_units == "deg" else ""
    return (f"{r.object_name}: n {r.n}, k {r.k}, l {r.l}, m {r.m}; error RMS {r.rms_error:.4g}{units}, "
            f"max {r.max_error:.4g}{units}; {r.seconds:.2f} s")


def cmd_pose_build(args) -> int:
    bpy = be.import_bpy()
    objects = _pick(load_pose_input(args.input, args.cache), args.objects, "object")
    _pose_ops_ready()
    params = dict(exact=args.exact, tolerance=args.tolerance, k=args.k, l=args.l, m=args.m, frame_step=args.step)
    if args.start is not None or args.end is not None:
        if args.start is None or args.end is None:
            raise CliError("--start and --end go together")
        params.update(range_mode="CUSTOM", frame_start=args.start, frame_end=args.end)
    built = []
    failures = 0
    for ob in objects:
        try:
            _run_operator(bpy.ops.anim_signals.build_pose_space, ob.name, ob, **params)
        except CliError as ex:
            if len(objects) == 1 or ex.code != 1:
                raise
            print(f"skipped {ob.name}: {ex}", file=sys.stderr)
            failures += 1
            continue
        print("  " + _pose_summary(bpy.context.scene), flush=True)
        built.append(bpy.context.scene.anim_signals.last_pose_space.object_name)
    if not built:
        raise CliError("no pose space was built", code=1)
    if args.png:
        _pose_png(built[0], args.png)
    print(f"saved {save(args.out or default_out(args.input, '_posespace'))}")
    return 1 if failures else 0


def _pose_png(object_name: str, path: str) -> None:
    """The canvas of one pose space as a PNG (no gpu: the geometry lists through the rasteriser)."""
    bpy = be.import_bpy()
    mod = next((m for n, m in sys.modules.items() if n.endswith(".operators.pose_space")), None)
    if mod is None:
        raise CliError("the extension's pose-space module is not loaded", code=1)
    import importlib

    canvas = importlib.import_module(mod.__name__.rsplit(".operators", 1)[0] + ".anim_signals.posespace.canvas")
    space = mod.load_space(bpy.data.objects[object_name])
    view = canvas.fit_space_view(space, 900, 600)
    out = canvas.render_png(canvas.canvas_geometry(space, view), os.path.abspath(path))
    print(f"wrote {out}")


def _space_targets(args):
    bpy = be.import_bpy()
    if not os.path.isfile(args.input) or not args.input.lower().endswith(".blend"):
        raise CliError(f"{args.input}: expected a .blend saved by pose-build")
    load_input(args.input)
    _pose_ops_ready()
    mod = next((m for n, m in sys.modules.items() if n.endswith(".operators.pose_space")), None)
    spaces = [o for o in bpy.data.objects if mod is not None and mod.space_object(o) is o]
    if not spaces:
        raise CliError(f"{args.input} holds no pose space (run pose-build first)")
    return _pick(spaces, args.objects, "pose space")


def cmd_pose_resample(args) -> int:
    bpy = be.import_bpy()
    chosen = [x for x in (args.speed is not None, args.frames is not None, args.fps_to is not None) if x]
    if len(chosen) != 1:
        raise CliError("give exactly one of --speed, --frames, --fps-to")
    if args.speed is not None:
        params = dict(mode="SPEED", speed=args.speed)
    elif args.frames is not None:
        params = dict(mode="FRAME_COUNT", frame_count=args.frames)
    else:
        params = dict(mode="FRAME_RATE", fps_to=args.fps_to, fps_from=args.fps_from or 0.0)
    for ob in _space_targets(args):
        _run_operator(bpy.ops.anim_signals.pose_space_resample, ob.name, ob, bake=True, **params)
        r = bpy.context.scene.anim_signals.last_pose_space
        print(f"  {ob.name}: resampled, baked frames {r.bake_frame_start}-{r.bake_frame_end} "
              f"({r.baked_action or 'shape-key values'})", flush=True)
    print(f"saved {save(args.out or default_out(args.input, '_resampled'))}")
    return 0


def cmd_pose_bake(args) -> int:
    bpy = be.import_bpy()
    for ob in _space_targets(args):
        _run_operator(bpy.ops.anim_signals.pose_space_bake, ob.name, ob)
        r = bpy.context.scene.anim_signals.last_pose_space
        print(f"  {ob.name}: baked frames {r.bake_frame_start}-{r.bake_frame_end} "
              f"({r.baked_action or 'shape-key values'})", flush=True)
    print(f"saved {save(args.out or default_out(args.input, '_baked'))}")
    return 0


def add_pose_build_parser(sub):
    p = sub.add_parser("pose-build", help="build a pose space (time, pose and shape signals; Cashman-Hormann)",
                       description="Build a pose space with bpy.ops.anim_signals.build_pose_space for every animated "
                                   "mesh / armature (or --objects).")
    p.add_argument("input", help=".blend, .bvh, or .obj with --cache")
    p.add_argument("--cache", default=None, help="PC2 or MDD vertex animation for an .obj input")
    p.add_argument("--objects", default="", help="comma-separated object names (default: all candidates)")
    p.add_argument("--exact", action="store_true", help="reproduce every frame (k - 2 = l = m + 1 = n)")
    p.add_argument("--tolerance", type=float, default=0.0, help="RMS error per vertex (0: automatic)")
    p.add_argument("--k", type=int, default=0, help="time-signal control points (0: from the tolerance)")
    p.add_argument("--l", type=int, default=0, help="pose-signal sites (0: from the tolerance)")
    p.add_argument("--m", type=int, default=0, help="shape components (0: from the tolerance)")
    p.add_argument("--start", type=int, default=None, help="first frame read (with --end)")
    p.add_argument("--end", type=int, default=None, help="last frame read")
    p.add_argument("--step", type=int, default=1, help="read every step-th frame")
    p.add_argument("--png", default="", help="also write the canvas (pose space) as this PNG")
    p.add_argument("--out", default="", help="output .blend (default <input name>_posespace.blend here)")
    p.set_defaults(func=cmd_pose_build)


def add_pose_resample_parser(sub):
    p = sub.add_parser("pose-resample", help="re-time a pose space (slow motion, speed-up, frame-rate conversion)",
                       description="Resample and bake with bpy.ops.anim_signals.pose_space_resample.")
    p.add_argument("input", help="a .blend saved by pose-build")
    p.add_argument("--objects", default="", help="comma-separated pose-space objects (default: all)")
    p.add_argument("--speed", type=float, default=None, help="playback speed factor (0.5 = slow motion)")
    p.add_argument("--frames", type=int, default=None, help="new number of frames")
    p.add_argument("--fps-to", type=float, default=None, help="convert to this frame rate")
    p.add_argument("--fps-from", type=float, default=None, help="from this frame rate (default: the scene's)")
    p.add_argument("--out", default="", help="output .blend (default <input name>_resampled.blend here)")
    p.set_defaults(func=cmd_pose_resample)


def add_pose_bake_parser(sub):
    p = sub.add_parser("pose-bake", help="bake a pose space to keys on every frame",
                       description="Bake with bpy.ops.anim_signals.pose_space_bake.")
    p.add_argument("input", help="a .blend saved by pose-build")
    p.add_argument("--objects", default="", help="comma-separated pose-space objects (default: all)")
    p.add_argument("--out", default="", help="output .blend (default <input name>_baked.blend here)")
    p.set_defaults(func=cmd_pose_bake)


# --------------------------------------------------------------------------------------------------
# motion database (Richert): db-build, reconstruct


def _db_ops_ready() -> None:
    _enable("import_live_link_csv", "build_motion_database", "reconstruct_motion")


def db_inputs(paths) -> tuple[list[str], list[str]]:
    """Folders -> their CSV and BVH files (sorted); returns (CSV files, BVH files). CliError on misuse."""
    csvs: list[str] = []
    bvhs: list[str] = []
    for p in paths:
        p = os.path.abspath(p)
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p) if f.lower().endswith((".csv", ".bvh")))
            if not found:
                raise CliError(f"no .csv or .bvh files in the folder {p}")
        elif os.path.isfile(p):
            found = [p]
        else:
            raise CliError(f"no such file or folder: {p}")
        for f in found:
            ext = os.path.splitext(f)[1].lower()
            if ext == ".csv":
                csvs.append(f)
            elif ext == ".bvh":
                bvhs.append(f)
            else:
                raise CliError(f"unsupported input {f!r}: expected Live Link Face .csv or .bvh files")
    if csvs and bvhs:
        raise CliError("a database holds one kind of clip: give Live Link Face CSV files or BVH files, not both")
    if not csvs and not bvhs:
        raise CliError("no input files")
    return list(dict.fromkeys(csvs)), list(dict.fromkeys(bvhs))


def _import_bvh_clip(path: str):
    bpy = be.import_bpy()
    ob = be.import_bvh(path)
    act = ob.animation_data.action if ob.animation_data is not None else None
    if act is None:
        raise CliError(f"{path}: the BVH has no animation")
    act.name = os.path.splitext(os.path.basename(path))[0]
    act.use_fake_user = True
    bpy.context.view_layer.objects.active = ob
    return ob


def cmd_db_build(args) -> int:
    bpy = be.import_bpy()
    csvs, bvhs = db_inputs(args.inputs)
    be.clear_scene()
    _db_ops_ready()
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = args.fps, 1.0
    ob = None
    for path in csvs:
        _run_operator(bpy.ops.anim_signals.import_live_link_csv, os.path.basename(path), ob, filepath=path)
        ob = bpy.context.view_layer.objects.active
        print(f"  imported {os.path.basename(path)}", flush=True)
    names = []
    for path in bvhs:
        ob = _import_bvh_clip(path)
        names.append(ob.animation_data.action.name)
        print(f"  imported {os.path.basename(path)}", flush=True)
    kind = "SHAPE_KEYS" if csvs else "ARMATURE"
    _run_operator(bpy.ops.anim_signals.build_motion_database, "db-build", ob, kind=kind, actions=",".join(names))
    s = scene.anim_signals.motion_db
    print(f"motion database: {len(s.actions)} clips, {s.n_frames} frames, {s.n_channels} channels ({kind})")
    print(f"saved {save(args.out or os.path.abspath('motion_db.blend'))}")
    return 0


def cmd_reconstruct(args) -> int:
    bpy = be.import_bpy()
    if not args.input.lower().endswith(".blend") or not os.path.isfile(args.input):
        raise CliError(f"{args.input}: expected a .blend saved by db-build")
    _check_file(args.query, (".csv", ".bvh"))
    load_input(args.input)
    _db_ops_ready()
    scene = bpy.context.scene
    s = scene.anim_signals.motion_db
    if not len(s.actions):
        raise CliError(f"{args.input} holds no motion database (run db-build first)")
    query = os.path.abspath(args.query)
    if query.lower().endswith(".csv"):
        if s.kind != "SHAPE_KEYS":
            raise CliError("the database holds armature clips: give a BVH query")
        target = bpy.data.objects.get(s.object_name)
        _run_operator(bpy.ops.anim_signals.import_live_link_csv, os.path.basename(query), target, filepath=query)
        ob = bpy.context.view_layer.objects.active
    else:
        if s.kind != "ARMATURE":
            raise CliError("the database holds shape-key clips: give a Live Link Face CSV query")
        ob = _import_bvh_clip(query)
    params = dict(output=args.output, drop_eyes=args.drop_eyes, input_channels=args.input_channels or "ALL",
                  k=args.k, window=args.window, paths=args.paths)
    _run_operator(bpy.ops.anim_signals.reconstruct_motion, "reconstruct", ob, **params)
    print(f"{s.last_action}: {s.last_frames} frames from {s.last_query_channels} channels, "
          f"{s.last_ms:.2f} ms per frame, mean best path {s.last_best_length:.1f} frames")
    stem = os.path.splitext(os.path.basename(query))[0]
    print(f"saved {save(args.out or os.path.abspath(f'{stem}_reconstructed.blend'))}")
    return 0


def add_db_build_parser(sub):
    p = sub.add_parser("db-build", help="build a motion database from Live Link Face CSV or BVH clips (Richert)",
                       description="Import the clips (CSV: onto one generated ARKit face; BVH: Blender's importer) "
                                   "and run bpy.ops.anim_signals.build_motion_database; saves DB.blend.")
    p.add_argument("inputs", nargs="+", metavar="FOLDER|FILE", help="Live Link Face .csv or .bvh files, or folders of them")
    p.add_argument("--fps", type=int, default=30, help="scene frame rate the CSV takes are resampled to (default 30)")
    p.add_argument("--out", default="", help="output .blend (default ./motion_db.blend)")
    p.set_defaults(func=cmd_db_build)


def add_reconstruct_parser(sub):
    p = sub.add_parser("reconstruct", help="rebuild a clip from a motion database (denoise / missing channels)",
                       description="Import QUERY into DB.blend and run bpy.ops.anim_signals.reconstruct_motion; "
                                   "the result is the action '<query>.reconstructed'.")
    p.add_argument("input", metavar="DB.blend", help="a .blend saved by db-build")
    p.add_argument("query", metavar="QUERY.csv|QUERY.bvh")
    p.add_argument("--drop-eyes", action="store_true", help="leave the eye channels out of the query")
    p.add_argument("--input-channels", default="", help="comma-separated query channels (default: all)")
    p.add_argument("--output", default="SYNTHESIS", choices=("BEST_PATH", "SYNTHESIS"))
    p.add_argument("--k", type=int, default=256, help="neighbours per frame (K, default 256)")
    p.add_argument("--window", type=int, default=32, help="window (T, default 32)")
    p.add_argument("--paths", type=int, default=50, help="paths blended by the synthesis (I, default 50)")
    p.add_argument("--out", default="", help="output .blend (default ./<query>_reconstructed.blend)")
    p.set_defaults(func=cmd_reconstruct)


COMMANDS = [add_fit_parser, add_loop_parser, add_blend_parser, add_compare_parser, add_pose_build_parser,
            add_pose_resample_parser, add_pose_bake_parser]
COMMANDS += [add_db_build_parser, add_reconstruct_parser]


def build_parser():
    ap = argparse.ArgumentParser(
        prog="anim_signals_cli.py",
        description="Anim Signals headless tools (blender --background --python ... -- <command>, "
                    "or a python with the bpy module).")
    sub = ap.add_subparsers(dest="command", metavar="command")
    sub.required = True
    for add in COMMANDS:
        add(sub)
    return ap


def script_args(argv=None):
    """Arguments for this script: after ``--`` when run by the Blender binary, else ``sys.argv[1:]``."""
    argv = list(sys.argv if argv is None else argv)
    if "--" in argv:
        return argv[argv.index("--") + 1:]
    return argv[1:]


def main(argv=None) -> int:
    args = build_parser().parse_args(script_args(argv))
    if getattr(args, "input", None):
        args.input = os.path.abspath(args.input)
    if getattr(args, "inputs", None):
        args.inputs = [os.path.abspath(p) for p in args.inputs]
    try:
        return args.func(args)
    except CliError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return ex.code


if __name__ == "__main__":
    # sys.exit also ends the Blender binary with this code (Blender handles SystemExit from --python)
    sys.exit(main())
