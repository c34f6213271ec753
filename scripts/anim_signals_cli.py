"""Anim Signals headless command line.

Works the same in the Blender binary and with the ``bpy`` module from a virtual environment::

    blender --background --python scripts/anim_signals_cli.py -- fit IN.bvh --out OUT.blend
    .venv/bin/python scripts/anim_signals_cli.py fit IN.bvh --out OUT.blend

Commands (sub-commands; more tools add theirs to ``COMMANDS``):

    fit IN.bvh|IN.blend [--max-error-rotation 0.5] [--max-error-location 0.01] [--max-error-other 0.01]
                        [--mode AUTO|LATENT|PER_CHANNEL] [--snap-to-frames] [--internal-knots N]
                        [--objects NAME[,NAME...]] [--replace] [--out OUT.blend]

``fit`` imports the BVH with Blender's own importer (or opens the .blend), enables the extension, and
for every object with an action calls ``bpy.ops.anim_signals.fit_latent_spline`` (the operator the UI
uses) with that object active, then saves ``OUT.blend`` (default: ``<input name>_fitted.blend`` in the
current folder; the input .blend is never overwritten unless ``--out`` names it) and prints a summary.
The original action is kept (fake user) unless ``--replace``.

Exit codes: 0 success, 1 a fit failed, 2 bad input or arguments.
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


def default_out(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.abspath(f"{stem}_fitted.blend")


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


COMMANDS = [add_fit_parser]  # later tools: loop, blend, pose-space, ...


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
    try:
        return args.func(args)
    except CliError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return ex.code


if __name__ == "__main__":
    # sys.exit also ends the Blender binary with this code (Blender handles SystemExit from --python)
    sys.exit(main())
