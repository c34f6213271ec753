"""``fit``: dense animation to a few exact Bezier keys (Mukai's latent nonuniform splines).

For every animated object (or ``--objects``) calls ``bpy.ops.anim_signals.fit_latent_spline`` (the
operator the UI uses) with that object active, measures the fit with Blender's own
``fcurve.evaluate`` at every original frame, and saves ``<input name>_fitted.blend``.
"""

from __future__ import annotations

import time

import _blender_env as be

from .common import (
    CliError,
    add_clip_input,
    add_command,
    add_objects_option,
    add_out_option,
    check_input,
    default_out,
    enable_operators,
    for_each_object,
    load_input,
    pick_objects,
    run_operator,
    save,
)
from .outputs import check_output_file
from .values import float_range, int_range, non_negative_int


def fit_object(ob, args) -> dict:
    """Run the fit operator on ``ob``; returns a summary (errors measured with ``fcurve.evaluate``)."""
    import numpy as np

    bpy = be.import_bpy()
    original = ob.animation_data.action
    frames, values, fcs, kinds = be.signal_from_object(ob)
    keys_before = be.count_keys(fcs)
    if not args.replace:
        original.use_fake_user = True  # the original survives the save beside the fitted copy
    params = dict(channels='ALL', mode=args.mode, share_keys=args.share_keys, max_error_rotation=args.max_error_rotation,
                  max_error_location=args.max_error_location, max_error_other=args.max_error_other,
                  internal_knots=args.internal_knots, snap_to_frames=args.snap_to_frames, seed=args.seed,
                  keep_original=not args.replace)
    t0 = time.perf_counter()
    run_operator(bpy.ops.anim_signals.fit_latent_spline, ob.name, ob, **params)
    seconds = time.perf_counter() - t0
    by_key = {be.channel_key(fc): fc for fc in be.action_fcurves(ob)}
    fitted = [by_key.get(be.channel_key(fc)) for fc in fcs]
    summary = {"object": ob.name, "action": ob.animation_data.action.name, "frames": len(frames),
               "channels": len(fcs), "keys_before": keys_before, "seconds": seconds}
    if all(fc is not None for fc in fitted):
        # the original values were sampled before the fit, so this works with --replace too
        approx = be.sample_fcurves(fitted, frames)
        tolerance = be.tolerance_vector(kinds, args.max_error_rotation, args.max_error_location,
                                        args.max_error_other)
        summary["keys_after"] = be.count_keys(fitted)
        summary["E_D"] = be.distortion(values, approx)
        summary["max_error"] = be.errors_by_kind(values, approx, kinds)
        summary["within"] = bool(np.all(np.abs(approx - values) <= tolerance * 1.001 + 1e-5))
    return summary


def summary_line(s: dict) -> str:
    line = f"  {s['object']}: {s['frames']} frames × {s['channels']} channels, keys {s['keys_before']}"
    if "keys_after" in s:
        pct = 100.0 * s["keys_after"] / max(s["keys_before"], 1)
        errs = ", ".join(f"{k} {v:.3g}{'°' if k == 'rotation' else ''}" for k, v in s["max_error"].items())
        line += (f" -> {s['keys_after']} ({pct:.1f} %), E_D {s['E_D']:.3g}, max error {errs}"
                 f"{'' if s['within'] else ' (OUTSIDE tolerance)'}")
    return line + f", {s['seconds']:.2f} s -> action {s['action']!r}"


def cmd_fit(args) -> int:
    out = check_output_file(args.out or default_out(args.input, "_fitted"), "--out")
    check_input(args.input)
    objects = pick_objects(load_input(args.input), args.objects, where=args.input)
    if not objects:
        raise CliError(f"{args.input}: no object has an action to fit")
    enable_operators("fit_latent_spline")
    failures = for_each_object(objects, lambda ob: print(summary_line(fit_object(ob, args)), flush=True),
                               verb="fitting", what="fitted")
    print(f"saved {save(out)}")
    return 1 if failures else 0


def add_fit_parser(sub) -> None:
    p = add_command(sub, "fit", cmd_fit, "fit dense animation to a few exact Bezier keys (latent B-spline)",
                    "Fit every animated object's action with bpy.ops.anim_signals.fit_latent_spline.")
    add_clip_input(p)
    # the operator's own minimums: a smaller value would be clamped to them silently
    p.add_argument("--max-error-rotation", type=float_range(1e-4), default=0.5, help="degrees, at least 1e-4 (default 0.5)")
    p.add_argument("--max-error-location", type=float_range(1e-6), default=0.01,
                   help="scene units, at least 1e-6 (default 0.01)")
    p.add_argument("--max-error-other", type=float_range(1e-6), default=0.01,
                   help="other channels, at least 1e-6 (default 0.01)")
    p.add_argument("--mode", default="FEWEST", choices=("FEWEST", "EDITABLE", "AUTO", "LATENT", "PER_CHANNEL"),
                   help="FEWEST (default): fewest keys, free handles; EDITABLE: aligned handles; "
                   "LATENT / PER_CHANNEL / AUTO: spline keys")
    p.add_argument("--share-keys", default="CURVE", choices=("CURVE", "BONE", "ALL"),
                   help="curves keyed on the same frames: each curve its own (default), per bone, all")
    p.add_argument("--internal-knots", type=int_range(0, 1000), default=0,
                   help="0 = automatic (fewest meeting the tolerance); at most 1000")
    p.add_argument("--snap-to-frames", action="store_true", help="keys on whole frames")
    p.add_argument("--seed", type=non_negative_int, default=0)
    add_objects_option(p)
    p.add_argument("--replace", action="store_true", help="do not keep the original action")
    add_out_option(p, "<input name>_fitted.blend here")


PARSERS = (add_fit_parser,)
