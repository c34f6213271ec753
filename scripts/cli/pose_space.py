"""``pose-build``, ``pose-resample``, ``pose-bake``: pose spaces (Cashman & Hormann, "A continuous,
editable representation for deforming mesh sequences with separate signals for time, pose and shape").

* ``pose-build`` takes a .blend (its animated meshes and armatures), a .bvh, or an .obj played by a
  PC2/MDD cache, calls ``bpy.ops.anim_signals.build_pose_space``, optionally writes the canvas as a
  PNG (drawn without the GPU) and saves ``<input name>_posespace.blend``;
* ``pose-resample`` re-times a saved pose space (``pose_space_resample``, baked), ``pose-bake`` bakes it
  (``pose_space_bake``).
"""

from __future__ import annotations

import os

import _blender_env as be

from .common import (
    CliError,
    add_command,
    add_objects_option,
    add_out_option,
    check_file,
    check_input,
    default_out,
    enable_operators,
    extension_module,
    failed,
    for_each_object,
    load_input,
    load_obj_with_cache,
    pick_objects,
    run_operator,
    save,
)
from .outputs import check_output_file, written_atomically
from .values import float_range, frame_number, int_range, non_negative_float, non_negative_int, positive_int

POSE_OPERATORS = ("build_pose_space", "pose_space_resample", "pose_space_bake")


def check_pose_input(path: str, cache: str | None) -> str:
    """The input's extension, after checking it (and its cache) is usable: CliError otherwise."""
    ext = check_file(path, (".blend", ".bvh", ".obj"))
    if ext == ".obj" and not cache:
        raise CliError("an .obj input needs --cache FILE.pc2|.mdd (the vertex animation)")
    if ext != ".obj" and cache:
        raise CliError("--cache goes with an .obj input")
    check_input(path, (ext,))
    if cache:
        check_input(os.path.abspath(cache), (".pc2", ".mdd"))
    return ext


def load_pose_input(path: str, cache: str | None):
    """The objects to build from: a .blend's meshes/armatures, a BVH's armature, or an OBJ played by a
    PC2/MDD cache (Mesh Cache modifier, frame 0 = sample 0)."""
    bpy = be.import_bpy()
    ext = check_file(path, (".blend", ".bvh", ".obj"))
    if ext == ".obj":
        be.clear_scene()
        return [load_obj_with_cache(path, os.path.abspath(cache or ""))[0]]
    if ext == ".bvh":
        return load_input(path)
    load_input(path)
    return [o for o in bpy.context.scene.objects if o.type in {"MESH", "ARMATURE"}]


def pose_summary(scene) -> str:
    r = scene.anim_signals.last_pose_space
    units = " deg" if r.error_units == "deg" else ""
    return (f"{r.object_name}: n {r.n}, k {r.k}, l {r.l}, m {r.m}; error RMS {r.rms_error:.4g}{units}, "
            f"max {r.max_error:.4g}{units}; {r.seconds:.2f} s")


def bake_summary(ob, scene, verb: str) -> str:
    r = scene.anim_signals.last_pose_space
    return (f"  {ob.name}: {verb} frames {r.bake_frame_start}-{r.bake_frame_end} "
            f"({r.baked_action or 'shape-key values'})")


def write_canvas_png(object_name: str, path: str) -> None:
    """The canvas of one pose space as a PNG (no GPU: the geometry lists through the rasteriser)."""
    bpy = be.import_bpy()
    storage = extension_module("operators.pose_space")
    canvas = extension_module("anim_signals.posespace.canvas")
    render = extension_module("anim_signals.posespace.render")
    try:
        space = storage.load_space(bpy.data.objects[object_name])
        geometry = canvas.canvas_geometry(space, canvas.fit_space_view(space, 900, 600))
        with written_atomically(path) as partial:
            render.render_png(geometry, partial)
    except (OSError, ValueError) as ex:
        raise failed(f"could not write the canvas {path}: {ex}") from ex
    print(f"wrote {path}")


def pose_build_params(args) -> dict:
    """build_pose_space's arguments (CliError when --start and --end do not go together)."""
    params = dict(exact=args.exact, tolerance=args.tolerance, k=args.k, l=args.l, m=args.m, frame_step=args.step,
                  shape_space=args.shape_space)
    if args.start is not None or args.end is not None:
        if args.start is None or args.end is None:
            raise CliError("--start and --end go together")
        if args.end < args.start:
            raise CliError(f"--end ({args.end}) must not come before --start ({args.start})")
        params.update(range_mode="CUSTOM", frame_start=args.start, frame_end=args.end)
    return params


def cmd_pose_build(args) -> int:
    params = pose_build_params(args)
    out = check_output_file(args.out or default_out(args.input, "_posespace"), "--out")
    png = check_output_file(args.png, "--png", (".png",)) if args.png else ""
    check_pose_input(args.input, args.cache)
    bpy = be.import_bpy()
    objects = pick_objects(load_pose_input(args.input, args.cache), args.objects, "object")
    if not objects:
        raise CliError(f"{args.input}: no mesh or armature to build a pose space from")
    enable_operators(*POSE_OPERATORS)
    built = []

    def build(ob):
        run_operator(bpy.ops.anim_signals.build_pose_space, ob.name, ob, **params)
        print("  " + pose_summary(bpy.context.scene), flush=True)
        built.append(bpy.context.scene.anim_signals.last_pose_space.object_name)

    failures = for_each_object(objects, build, what="built")
    if not built:
        raise failed("no pose space was built")
    saved = save(out)
    if png:
        write_canvas_png(built[0], png)
    print(f"saved {saved}")
    return 1 if failures else 0


def check_space_input(path: str) -> None:
    if not path.lower().endswith(".blend"):
        raise CliError(f"{path}: expected a .blend saved by pose-build")
    check_input(path, (".blend",))


def space_targets(args):
    """The pose-space objects of a .blend saved by pose-build (all, or ``--objects``)."""
    bpy = be.import_bpy()
    load_input(args.input)
    enable_operators(*POSE_OPERATORS)
    storage = extension_module("operators.pose_space")
    spaces = [o for o in bpy.data.objects if storage.space_object(o) is o]
    if not spaces:
        raise CliError(f"{args.input} holds no pose space (run pose-build first)")
    return pick_objects(spaces, args.objects, "pose space", where=args.input)


def resample_params(args) -> dict:
    chosen = [x for x in (args.speed, args.frames, args.fps_to) if x is not None]
    if len(chosen) != 1:
        raise CliError("give exactly one of --speed, --frames, --fps-to")
    if args.speed is not None:
        return dict(mode="SPEED", speed=args.speed)
    if args.frames is not None:
        return dict(mode="FRAME_COUNT", frame_count=args.frames)
    return dict(mode="FRAME_RATE", fps_to=args.fps_to, fps_from=args.fps_from or 0.0)


def cmd_pose_resample(args) -> int:
    params = resample_params(args)
    out = check_output_file(args.out or default_out(args.input, "_resampled"), "--out")
    check_space_input(args.input)
    bpy = be.import_bpy()
    for ob in space_targets(args):
        run_operator(bpy.ops.anim_signals.pose_space_resample, ob.name, ob, bake=True, **params)
        print(bake_summary(ob, bpy.context.scene, "resampled, baked"), flush=True)
    print(f"saved {save(out)}")
    return 0


def cmd_pose_bake(args) -> int:
    out = check_output_file(args.out or default_out(args.input, "_baked"), "--out")
    check_space_input(args.input)
    bpy = be.import_bpy()
    for ob in space_targets(args):
        run_operator(bpy.ops.anim_signals.pose_space_bake, ob.name, ob)
        print(bake_summary(ob, bpy.context.scene, "baked"), flush=True)
    print(f"saved {save(out)}")
    return 0


# --------------------------------------------------------------------------------------------------
# arguments


def add_pose_build_parser(sub) -> None:
    p = add_command(sub, "pose-build", cmd_pose_build,
                    "build a pose space (time, pose and shape signals; Cashman-Hormann)",
                    "Build a pose space with bpy.ops.anim_signals.build_pose_space for every animated "
                    "mesh / armature (or --objects).")
    p.add_argument("input", help=".blend, .bvh, or .obj with --cache")
    p.add_argument("--cache", default=None, help="PC2 or MDD vertex animation for an .obj input")
    add_objects_option(p, default="all candidates")
    p.add_argument("--exact", action="store_true", help="reproduce every frame (k - 2 = l = m + 1 = n)")
    p.add_argument("--shape-space", default="VERTEX", choices=("VERTEX", "GRADIENT"),
                   help="meshes: blend vertex positions (default) or per-triangle deformation gradients "
                        "(large rotations; the bake is a PC2 cache)")
    p.add_argument("--tolerance", type=non_negative_float, default=0.0, help="RMS error per vertex (0: automatic)")
    p.add_argument("--k", type=non_negative_int, default=0, help="time-signal control points (0: from the tolerance)")
    p.add_argument("--l", type=non_negative_int, default=0, help="pose-signal sites (0: from the tolerance)")
    p.add_argument("--m", type=non_negative_int, default=0, help="shape components (0: from the tolerance)")
    p.add_argument("--start", type=frame_number, default=None, help="first frame read (with --end)")
    p.add_argument("--end", type=frame_number, default=None, help="last frame read")
    p.add_argument("--step", type=positive_int, default=1, help="read every step-th frame")
    p.add_argument("--png", default="", help="also write the canvas (pose space) as this .png")
    add_out_option(p, "<input name>_posespace.blend here")


def add_space_arguments(p) -> None:
    """The input and ``--objects`` of the commands that work on a saved pose space."""
    p.add_argument("input", help="a .blend saved by pose-build")
    add_objects_option(p, "pose-space objects", "all")


def add_pose_resample_parser(sub) -> None:
    p = add_command(sub, "pose-resample", cmd_pose_resample,
                    "re-time a pose space (slow motion, speed-up, frame-rate conversion)",
                    "Resample and bake with bpy.ops.anim_signals.pose_space_resample.")
    add_space_arguments(p)
    # the operator's own minimums: a smaller value would be clamped to them silently
    p.add_argument("--speed", type=float_range(0.01), default=None,
                   help="playback speed factor, at least 0.01 (0.5 = slow motion)")
    p.add_argument("--frames", type=int_range(2), default=None, help="new number of frames, at least 2")
    p.add_argument("--fps-to", type=float_range(0.01), default=None, help="convert to this frame rate")
    p.add_argument("--fps-from", type=float_range(0.01), default=None,
                   help="from this frame rate (default: the scene's)")
    add_out_option(p, "<input name>_resampled.blend here")


def add_pose_bake_parser(sub) -> None:
    p = add_command(sub, "pose-bake", cmd_pose_bake, "bake a pose space to keys on every frame",
                    "Bake with bpy.ops.anim_signals.pose_space_bake.")
    add_space_arguments(p)
    add_out_option(p, "<input name>_baked.blend here")


PARSERS = (add_pose_build_parser, add_pose_resample_parser, add_pose_bake_parser)
