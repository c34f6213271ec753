"""Anim Signals demo (the README's main job): dense mocap-like animation -> a few exact keys, and a loop.

    bash scripts/demo.sh                    # generated biped, no user files needed
    bash scripts/demo.sh --bvh clip.bvh     # the same on your own BVH clip
    .venv/bin/python scripts/demo.py --help

Builds a small biped armature (hips, spine, head, two legs and two arms of three bones) with one key
per frame on every channel (240 frames at 30 fps: a walk cycle with a sudden jump in the middle and a
little capture noise), fits it with the extension's operator ``bpy.ops.anim_signals.fit_latent_spline``
(the same one the UI calls), then writes

* ``out/demo.blend``       the scene, with the original action (fake user) and the fitted one assigned,
* ``out/demo_report.md``   keys before/after, E_D, RMS, max error in degrees and world-space cm, time,
* ``out/demo_fit.png``     representative curves, original vs fitted, with the keys marked,

Then a copy of the armature with the original dense action gets ``bpy.ops.anim_signals.make_cyclic``
(range AUTO: the best stride inside the clip becomes a seamless loop that keeps walking forward with
Cycles modifiers); its seam numbers are added to the report.

and prints the summary. Errors are measured here with Blender's own ``fcurve.evaluate`` at every frame.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blender_env as be  # noqa: E402

bpy = be.import_bpy()

import numpy as np  # noqa: E402

FPS = 30
N_FRAMES = 240

# name, parent, head, tail (metres, Blender Z up, character faces -Y)
BONES = [
    ("hips", None, (0, 0, 1.00), (0, 0, 1.12)),
    ("spine", "hips", (0, 0, 1.12), (0, 0, 1.45)),
    ("head", "spine", (0, 0, 1.50), (0, 0, 1.72)),
]
for side, sx in (("L", 1), ("R", -1)):
    BONES += [
        (f"thigh.{side}", "hips", (0.10 * sx, 0, 0.98), (0.10 * sx, 0, 0.55)),
        (f"shin.{side}", f"thigh.{side}", (0.10 * sx, 0, 0.55), (0.10 * sx, 0.02, 0.10)),
        (f"foot.{side}", f"shin.{side}", (0.10 * sx, 0.02, 0.10), (0.10 * sx, -0.14, 0.02)),
        (f"upper_arm.{side}", "spine", (0.18 * sx, 0, 1.42), (0.45 * sx, 0, 1.42)),
        (f"forearm.{side}", f"upper_arm.{side}", (0.45 * sx, 0, 1.42), (0.70 * sx, 0, 1.42)),
        (f"hand.{side}", f"forearm.{side}", (0.70 * sx, 0, 1.42), (0.80 * sx, 0, 1.42)),
    ]


def build_armature():
    arm = bpy.data.armatures.new("DemoBiped")
    ob = bpy.data.objects.new("DemoBiped", arm)
    bpy.context.scene.collection.objects.link(ob)
    be.set_active(ob)
    with bpy.context.temp_override(**be.object_override(ob)):
        bpy.ops.object.mode_set(mode='EDIT')
        eb = arm.edit_bones
        for name, parent, head, tail in BONES:
            b = eb.new(name)
            b.head, b.tail = head, tail
            if parent:
                b.parent = eb[parent]
                b.use_connect = False
        bpy.ops.object.mode_set(mode='OBJECT')
    for pb in ob.pose.bones:
        pb.rotation_mode = 'XYZ'
    return ob


def smoothstep(x):
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


def generate_motion(n=N_FRAMES, seed=0):
    """Dense channels: {(bone, prop): (n, 3) array}; a walk, a jump at frames ~105-140, capture noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    phase = 2 * np.pi * t / 30.0  # one stride per second
    # jump: crouch (t0..t1), flight (t1..t2), landing (t2..t3)
    t0, t1, t2, t3 = 105.0, 114.0, 128.0, 138.0
    crouch = smoothstep((t - t0) / (t1 - t0)) * (1 - smoothstep((t - t1) / 3.0)) \
        + smoothstep((t - t2) / 2.0) * (1 - smoothstep((t - t2 - 2) / (t3 - t2 - 2)))
    flight = np.clip((t - t1) / (t2 - t1), 0, 1)
    height = np.where((t > t1) & (t < t2), 4 * 0.45 * flight * (1 - flight), 0.0)
    walking = 1 - np.clip(crouch + ((t > t1) & (t < t2)), 0, 1)  # the walk stops during the jump
    tuck = np.where((t > t1) & (t < t2), np.sin(np.pi * flight), 0.0)
    deg = np.radians
    z = np.zeros(n)

    ch = {}
    speed = 1.3 / FPS  # metres per frame
    ch[("hips", "location")] = np.column_stack([
        0.02 * np.sin(phase) * walking,
        -np.cumsum(np.full(n, speed) * (0.3 + 0.7 * walking)) + speed,
        0.02 * np.cos(2 * phase) * walking - 0.18 * crouch + height,
    ])
    ch[("hips", "rotation_euler")] = np.column_stack([
        deg(4) * np.sin(2 * phase) * walking + deg(20) * crouch,
        deg(3) * np.sin(phase) * walking,
        deg(6) * np.sin(phase) * walking,
    ])
    ch[("spine", "rotation_euler")] = np.column_stack([
        deg(3) + deg(15) * crouch - deg(10) * tuck, z, -deg(8) * np.sin(phase) * walking])
    ch[("head", "rotation_euler")] = np.column_stack([
        -deg(10) * crouch + deg(12) * tuck, z, deg(4) * np.sin(phase + 0.4) * walking])
    for side, s in (("L", 1.0), ("R", -1.0)):
        ph = phase + (0 if side == "L" else np.pi)
        ch[(f"thigh.{side}", "rotation_euler")] = np.column_stack([
            -deg(25) * np.sin(ph) * walking - deg(45) * crouch - deg(70) * tuck, z, z])
        sin = np.sin(ph)
        knee = deg(30) * (1 + np.cos(ph)) / 2 + deg(10) * 0.5 * (sin + np.sqrt(sin**2 + 0.05))
        ch[(f"shin.{side}", "rotation_euler")] = np.column_stack([
            knee * walking + deg(80) * crouch + deg(110) * tuck, z, z])
        ch[(f"foot.{side}", "rotation_euler")] = np.column_stack([
            deg(15) * np.sin(ph + 0.8) * walking - deg(30) * crouch + deg(25) * tuck, z, z])
        ch[(f"upper_arm.{side}", "rotation_euler")] = np.column_stack([
            deg(25) * np.sin(ph) * walking - deg(120) * tuck,
            z,
            s * (deg(-70) + deg(40) * crouch + deg(55) * tuck)])
        ch[(f"forearm.{side}", "rotation_euler")] = np.column_stack([
            z, z, s * (deg(15) + deg(10) * (1 - np.cos(ph)) / 2 * walking + deg(60) * tuck)])
        ch[(f"hand.{side}", "rotation_euler")] = np.column_stack([
            deg(5) * np.sin(ph + 1.0) * walking, z, s * deg(10) * tuck])
    # capture noise: a little white noise, like a real marker solve
    for key, arr in ch.items():
        sigma = 0.0008 if key[1] == "location" else deg(0.06)
        ch[key] = arr + rng.normal(0.0, sigma, arr.shape)
    return ch


def animate(ob, motion, frame_start=1):
    """One LINEAR key per frame on every channel (like Blender's BVH importer), written in bulk."""
    ob.animation_data_create()
    for bone, prop in motion:
        pb = ob.pose.bones[bone]
        pb.keyframe_insert(prop, frame=frame_start)  # creates the F-curves (4.2 and slotted 4.4+)
    fcs = {(fc.data_path, fc.array_index): fc for fc in be.action_fcurves(ob)}
    for (bone, prop), arr in motion.items():
        if prop == "location":
            # the motion gives world-space offsets; pose-bone location is in the bone's rest frame
            rest = np.array(ob.data.bones[bone].matrix_local, dtype=float)[:3, :3]
            arr = arr @ rest
        n = arr.shape[0]
        frames = np.arange(frame_start, frame_start + n, dtype=np.float32)
        for i in range(3):
            fc = fcs[(f'pose.bones["{bone}"].{prop}', i)]
            kps = fc.keyframe_points
            kps.clear()
            kps.add(n)
            kps.foreach_set("co", np.column_stack([frames, arr[:, i].astype(np.float32)]).ravel())
            for kp in kps:
                kp.interpolation = 'LINEAR'
            fc.update()
    sc = bpy.context.scene
    sc.render.fps = FPS
    sc.frame_start = frame_start
    sc.frame_end = frame_start + next(iter(motion.values())).shape[0] - 1


# --------------------------------------------------------------------------------------------------


def fit(ob, args):
    be.enable_extension()
    orig = ob.animation_data.action
    orig.use_fake_user = True  # survives the save even when the fitted copy is assigned
    frames, values, fcs, kinds = be.signal_from_object(ob)
    keys_before = be.count_keys(fcs)
    t0 = time.perf_counter()
    with bpy.context.temp_override(**be.object_override(ob)):
        res = bpy.ops.anim_signals.fit_latent_spline(
            channels='ALL', mode=args.mode, max_error_rotation=args.max_error_rotation,
            max_error_location=args.max_error_location, max_error_other=args.max_error_other,
            keep_original=True)
    seconds = time.perf_counter() - t0
    if 'FINISHED' not in res:
        raise SystemExit(f"fit failed: operator returned {sorted(res)}")
    fitted = ob.animation_data.action
    by_key = {be.channel_key(fc): fc for fc in be.action_fcurves(ob)}
    fitted_fcs = [by_key[be.channel_key(fc)] for fc in fcs]
    approx = be.sample_fcurves(fitted_fcs, frames)
    keys_after = be.count_keys(fitted_fcs)
    stats = {
        "object": ob.name,
        "frames": len(frames),
        "channels": values.shape[1],
        "keys_before": keys_before,
        "keys_after": keys_after,
        "E_D": be.distortion(values, approx),
        "seconds": seconds,
        "mode": args.mode,
        "tol_rot": args.max_error_rotation,
        "tol_loc": args.max_error_location,
    }
    stats.update({f"rms_{k}": v for k, v in be.rms_by_kind(values, approx, kinds).items()})
    stats.update({f"max_{k}": v for k, v in be.errors_by_kind(values, approx, kinds).items()})
    if ob.type == 'ARMATURE':
        wf = be.spread_frames(frames, 400)
        ref = be.bone_world_positions(ob, wf, orig)
        got = be.bone_world_positions(ob, wf, fitted)
        d = np.linalg.norm(ref - got, axis=-1) * 100.0 * be.bpy_unit_scale()
        stats["world_cm_max"] = float(d.max())
        stats["world_cm_rms"] = float(np.sqrt(np.mean(d**2)))
        stats["world_frames"] = len(wf)
    return stats, frames, values, fcs, fitted_fcs, kinds


def pick_curves(fcs, values, kinds, n=4):
    """Representative channels: the root's vertical location if any, then the most active rotations."""
    picks = []
    for j, fc in enumerate(fcs):
        if kinds[j] == "location" and fc.array_index == 2:
            picks.append(j)
            break
    rng = np.ptp(values, axis=0) * np.where(np.asarray(kinds) == "rotation", be.DEG, 1.0)
    act = np.abs(np.diff(values, 2, axis=0)).sum(axis=0) * np.where(np.asarray(kinds) == "rotation", be.DEG, 1.0)
    order = np.argsort(-(rng + 0.2 * act))
    seen_bones = set()
    for j in order:
        if len(picks) >= n:
            break
        if kinds[j] != "rotation" or j in picks:
            continue
        bone = fcs[j].data_path.split('"')[1] if '"' in fcs[j].data_path else fcs[j].data_path
        if bone in seen_bones:
            continue
        seen_bones.add(bone)
        picks.append(int(j))
    return picks[:n]


def plot(path, frames, values, fcs, fitted_fcs, kinds, stats):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    picks = pick_curves(fcs, values, kinds)
    fig, axes = plt.subplots(len(picks), 1, figsize=(10, 2.3 * len(picks)), sharex=True, squeeze=False)
    fine = np.linspace(frames[0], frames[-1], max(4 * len(frames), 400))
    for ax, j in zip(axes[:, 0], picks):
        fc, ff = fcs[j], fitted_fcs[j]
        scale = be.DEG if kinds[j] == "rotation" else 1.0
        unit = "deg" if kinds[j] == "rotation" else ("m" if kinds[j] == "location" else "value")
        ax.plot(frames, values[:, j] * scale, color="0.55", lw=2.2, label="original (1 key/frame)")
        ax.plot(fine, [ff.evaluate(float(f)) * scale for f in fine], color="C3", lw=1.0, label="fitted")
        co = be.read_keys(ff)
        ax.plot(co[:, 0], co[:, 1] * scale, "o", ms=4, color="C0", label=f"keys ({len(co)})")
        for x in co[:, 0]:
            ax.axvline(x, color="C0", lw=0.4, alpha=0.35)
        axis = "XYZW"[fc.array_index] if fc.array_index < 4 else str(fc.array_index)
        ax.set_ylabel(f"{unit}")
        ax.set_title(f"{fc.data_path}[{axis}]: {len(values)} -> {len(co)} keys", fontsize=9, loc="left")
        ax.grid(alpha=0.25)
    axes[0, 0].legend(loc="upper right", fontsize=8, ncol=3)
    axes[-1, 0].set_xlabel("frame")
    fig.suptitle(f"{stats['object']}: {stats['keys_before']} -> {stats['keys_after']} keys, "
                 f"E_D {stats['E_D']:.3g}, max {stats.get('max_rotation', 0):.2f}°"
                 + (f", {stats['world_cm_max']:.2f} cm" if "world_cm_max" in stats else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def make_loop(ob, orig_action, min_period=0, max_period=0):
    """Loop the best stride of the original dense clip on a copy of the armature (AUTO range)."""
    walker = ob.copy()
    walker.name = f"{ob.name}_loop"
    be.assign_action(walker, orig_action)
    bpy.context.scene.collection.objects.link(walker)
    walker.location.x += 1.0  # beside the fitted one
    t0 = time.perf_counter()
    with bpy.context.temp_override(**be.object_override(walker)):
        res = bpy.ops.anim_signals.make_cyclic(range_mode='AUTO', min_period=min_period, max_period=max_period,
                                               add_cycles=True, keep_original=True)
    if 'FINISHED' not in res:
        raise SystemExit(f"loop failed: operator returned {sorted(res)}")
    r = bpy.context.scene.anim_signals.last_loop
    return {
        "object": walker.name, "action": r.action_name, "start": r.frame_start, "end": r.frame_end,
        "pose_before": r.pose_before_deg, "pose_after": r.pose_after_deg,
        "vel_before": r.velocity_before_deg, "vel_after": r.velocity_after_deg,
        "joint_before": r.joint_pose_before_cm, "joint_after": r.joint_pose_after_cm,
        "rms": r.rms_deviation_deg, "seconds": time.perf_counter() - t0,
    }


def loop_report(loop):
    return "\n".join([
        "",
        "## Loop (make_cyclic, range AUTO)",
        "",
        f"`{loop['object']}` plays `{loop['action']}`: frames {loop['start']}–{loop['end']} found automatically, "
        "closed by the seed's projection onto closed curves, root travel kept (Cycles, Repeat with Offset).",
        "",
        "| seam jump | before | after |",
        "|---|---|---|",
        f"| pose (max over rotation channels) | {loop['pose_before']:.3g}° | {loop['pose_after']:.2g}° |",
        f"| velocity | {loop['vel_before']:.3g}°/frame | {loop['vel_after']:.2g}°/frame |",
        f"| joints in world space | {loop['joint_before']:.3g} cm | {loop['joint_after']:.2g} cm |",
        "",
        f"RMS change from the original {loop['rms']:.3g}°, {loop['seconds']:.2f} s.",
        "",
    ])


def report(stats, source):
    pct = 100.0 * stats["keys_after"] / max(stats["keys_before"], 1)
    lines = [
        "# Anim Signals demo: fit spline",
        "",
        f"Source: {source}. {stats['frames']} frames × {stats['channels']} channels; operator "
        f"`anim_signals.fit_latent_spline` (mode {stats['mode']}, rotation {stats['tol_rot']}°, "
        f"location {stats['tol_loc']}).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| keys before | {stats['keys_before']} |",
        f"| keys after | {stats['keys_after']} ({pct:.1f} %) |",
        f"| E_D (seed eq. 5) | {stats['E_D']:.4g} |",
    ]
    if "rms_rotation" in stats:
        lines.append(f"| rotation RMS / max | {stats['rms_rotation']:.3g}° / {stats['max_rotation']:.3g}° |")
    if "rms_location" in stats:
        lines.append(f"| location RMS / max | {stats['rms_location']:.3g} / {stats['max_location']:.3g} |")
    if "rms_other" in stats:
        lines.append(f"| other RMS / max | {stats['rms_other']:.3g} / {stats['max_other']:.3g} |")
    if "world_cm_max" in stats:
        lines.append(f"| world-space joint error RMS / max | {stats['world_cm_rms']:.3g} cm / "
                     f"{stats['world_cm_max']:.3g} cm ({stats['world_frames']} frames) |")
    lines.append(f"| fit time | {stats['seconds']:.2f} s |")
    lines.append("")
    lines.append("Errors measured with Blender's `fcurve.evaluate` at every original frame; world-space error "
                 "from bone heads and tails through the depsgraph (scene units taken as metres).")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description="Fit dense animation to a few exact keys and report.")
    p.add_argument("--bvh", help="fit this BVH clip instead of the generated biped")
    p.add_argument("--mode", default="FEWEST", choices=("FEWEST", "EDITABLE", "AUTO", "LATENT", "PER_CHANNEL"),
                   help="FEWEST (default): fewest keys, free handles; EDITABLE: aligned handles; "
                   "LATENT / PER_CHANNEL / AUTO: spline keys")
    p.add_argument("--max-error-rotation", type=float, default=0.5, help="degrees (default 0.5)")
    p.add_argument("--max-error-location", type=float, default=0.01, help="scene units (default 0.01)")
    p.add_argument("--max-error-other", type=float, default=0.01)
    p.add_argument("--out", default=str(be.REPO_ROOT / "out"), help="output folder (default out/)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG (no matplotlib needed)")
    p.add_argument("--no-loop", action="store_true", help="skip the loop step (make_cyclic)")
    args = p.parse_args(argv)

    be.clear_scene()
    if args.bvh:
        if not os.path.isfile(args.bvh):
            print(f"error: no such file: {args.bvh}", file=sys.stderr)
            return 2
        ob = be.import_bvh(args.bvh)
        source = f"BVH `{os.path.basename(args.bvh)}` (Blender's importer)"
    else:
        ob = build_armature()
        animate(ob, generate_motion())
        source = f"generated biped ({len(BONES)} bones), walk with a jump, {FPS} fps, capture noise"
    print(f"fitting {ob.name} ...", flush=True)
    stats, frames, values, fcs, fitted_fcs, kinds = fit(ob, args)
    loop = None
    if not args.no_loop:
        print(f"looping a stride of {ob.name} ...", flush=True)
        orig = next(a for a in bpy.data.actions if a.use_fake_user and a != ob.animation_data.action)
        # the generated walk has one stride per second (30 frames); a BVH clip: automatic bounds
        loop = make_loop(ob, orig, *((0, 0) if args.bvh else (20, 90)))

    out = be.ensure_dir(args.out)
    blend = out / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), check_existing=False)
    md = report(stats, source) + (loop_report(loop) if loop else "")
    (out / "demo_report.md").write_text(md)
    if not args.no_plot:
        try:
            plot(out / "demo_fit.png", frames, values, fcs, fitted_fcs, kinds, stats)
        except ImportError as ex:
            print(f"note: no plot ({ex}); install matplotlib", file=sys.stderr)
    print(md)
    print(f"wrote {blend}, {out / 'demo_report.md'}" + ("" if args.no_plot else f", {out / 'demo_fit.png'}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
