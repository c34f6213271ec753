"""``transfer``: Deformation Transfer -- a mesh animation moved onto another mesh (other vertices,
other connectivity), by example poses or by marker correspondence.

The source is an OBJ played by a PC2/MDD cache (``--cache``; sample i at frame i) or a mesh of a
.blend (``--source NAME``); the target (``--target``) an OBJ, or a mesh of that .blend by name. Example
poses of OBJ inputs come as OBJ files (``--examples-source`` / ``--examples-target``), loaded as shape
keys; markers from a file (``--markers``) or from vertex groups of a .blend. Every file named is checked
before Blender starts (inputs readable and well formed, ``--out`` / ``--pc2`` writable). The command calls
``bpy.ops.anim_signals.transfer_deformation`` (the UI's operator, PC2 output on a new object
``<target>.transfer``) with the file first saved into a temporary folder beside ``--out`` -- so a
refused or failed transfer writes nothing -- then puts the PC2 beside the .blend (or at ``--pc2``) and
saves the .blend with the Mesh Cache path relative to it, both under temporary names renamed at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import _blender_env as be

from .common import (
    CliError,
    add_command,
    blender_message,
    cache_samples,
    check_file,
    check_input,
    default_out,
    enable_operators,
    expand_folders,
    failed,
    import_obj,
    load_obj_with_cache,
    open_blend,
    run_operator,
    stderr_kept_back,
    stdout_dropped,
)
from .outputs import check_output_file, written_atomically
from .values import frame_number

TRANSFER_OPERATOR = "transfer_deformation"


# --------------------------------------------------------------------------------------------------
# arguments checked before Blender loads anything


def transfer_method(args) -> str:
    """EXAMPLES or CORRESPONDENCE: ``--method``, else implied by markers or examples (default examples)."""
    markers = bool(args.markers or args.marker_prefix)
    examples = bool(args.examples_source or args.examples_target or args.pairs)
    if args.method is None:
        if markers and examples:
            raise CliError("markers (--markers, --marker-prefix) go with the correspondence method, examples "
                           "(--examples-source/--examples-target, --pairs) with the examples method: give one")
        return "CORRESPONDENCE" if markers else "EXAMPLES"
    method = args.method.upper()
    if method == "EXAMPLES" and markers:
        raise CliError("--markers and --marker-prefix go with --method correspondence")
    if method == "CORRESPONDENCE" and examples:
        raise CliError("--examples-source, --examples-target and --pairs go with --method examples")
    return method


def parse_pairs(text: str) -> list[tuple[str, str]]:
    """``"SRC:TGT,SRC:TGT"`` -> example pairs (shape-key names)."""
    pairs = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        src, sep, tgt = item.partition(":")
        if not sep or not src.strip() or not tgt.strip():
            raise CliError(f"--pairs: expected SOURCE_KEY:TARGET_KEY, got {item!r}")
        pairs.append((src.strip(), tgt.strip()))
    if not pairs:
        raise CliError("--pairs is empty")
    return pairs


def check_arguments(args) -> dict:
    """Every check that needs no Blender; returns the paths and settings the command uses."""
    src_ext = check_file(args.input, (".obj", ".blend"))
    if src_ext == ".obj":
        if not args.cache:
            raise CliError("an .obj source needs --cache FILE.pc2|.mdd (its vertex animation)")
        if args.source:
            raise CliError("--source names a mesh of a .blend source; an .obj source is the mesh itself")
        check_file(os.path.abspath(args.cache), (".pc2", ".mdd"))
    elif args.cache:
        raise CliError("--cache goes with an .obj source (a .blend's mesh plays its own modifiers)")
    elif not args.source:
        raise CliError("a .blend source needs --source NAME (the animated mesh)")
    if not args.target:
        raise CliError("no target: give --target TARGET.obj" + (" or --target NAME" if src_ext == ".blend" else ""))
    target_obj = ""
    if args.target.lower().endswith(".obj"):  # a file; else a mesh of the .blend
        target_obj = os.path.abspath(args.target)
        check_file(target_obj, (".obj",))
    elif src_ext == ".obj":
        raise CliError(f"--target {args.target}: expected an .obj file (names are meshes of a .blend source)")
    method = transfer_method(args)
    if bool(args.examples_source) != bool(args.examples_target):
        raise CliError("--examples-source and --examples-target go together (the source's example poses and the "
                       "target's versions of them)")
    if args.examples_source and args.pairs:
        raise CliError("--pairs names shape keys of a .blend; OBJ examples are paired by file name or order")
    markers = os.path.abspath(args.markers) if args.markers else ""
    if markers and not os.path.isfile(markers):
        raise CliError(f"no such markers file: {markers}")
    if markers and not markers.lower().endswith((".yml", ".yaml")):
        raise CliError(f"--markers {markers}: expected a .yml or .yaml file (\"source:target\" vertex indices)")
    obj_mesh = src_ext == ".obj" or bool(target_obj)
    if method == "CORRESPONDENCE" and not markers and obj_mesh:
        raise CliError("the correspondence method needs marker pairs: an OBJ has no vertex groups, give "
                       "--markers FILE.yml (\"source:target\" vertex indices)")
    if method == "EXAMPLES" and not args.examples_source and obj_mesh:
        raise CliError("an OBJ has no example poses: give --examples-source and --examples-target (OBJ files or "
                       "folders), or use --method correspondence with --markers FILE.yml")
    if args.frames is not None and args.frames[1] < args.frames[0]:
        raise CliError(f"--frames {args.frames[0]} {args.frames[1]}: the end comes before the start")
    out = check_output_file(args.out or default_out(args.input, "_transfer"), "--out")
    pc2 = check_output_file(args.pc2, "--pc2", (".pc2",)) if args.pc2 else ""
    if pc2 and args.cache and os.path.realpath(pc2) == os.path.realpath(args.cache):
        raise CliError(f"--pc2 {pc2} is the source's --cache: the result would replace the animation it is made from")
    examples = None
    if args.examples_source:
        examples = (expand_folders(args.examples_source, (".obj",)), expand_folders(args.examples_target, (".obj",)))
        for path in examples[0] + examples[1]:
            check_file(path, (".obj",))
    return dict(src_ext=src_ext, target_obj=target_obj, method=method, markers=markers, out=out, pc2=pc2,
                examples=examples, pairs=parse_pairs(args.pairs) if args.pairs else [])


def check_files(args, checked: dict) -> None:
    """The contents of every input file (after ``check_arguments``): OBJ meshes, the cache, a .blend's
    header, the markers file, the example poses; ``--frames`` within the cache's samples."""
    check_input(args.input, (checked["src_ext"],))
    if checked["src_ext"] == ".obj":
        samples = cache_samples(os.path.abspath(args.cache))[0]
        if args.frames is not None and (args.frames[0] < 0 or args.frames[1] > samples - 1):
            raise CliError(f"--frames {args.frames[0]} {args.frames[1]}: the cache {args.cache} has frames "
                           f"0-{samples - 1} (sample i plays at frame i)")
    if checked["target_obj"]:
        check_input(checked["target_obj"], (".obj",))
    if checked["markers"]:
        check_input(checked["markers"], (".yml", ".yaml"))
    for path in checked["examples"][0] + checked["examples"][1] if checked["examples"] else []:
        check_input(path, (".obj",))


def file_stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def pair_examples(source_files: list[str], target_files: list[str]) -> list[tuple[str, str]]:
    """Example OBJ files paired by file stem when both sides have the same stems, else in order."""
    s_stems, t_stems = [file_stem(p) for p in source_files], [file_stem(p) for p in target_files]
    for stems, side in ((s_stems, "source"), (t_stems, "target")):
        twice = sorted({s for s in stems if stems.count(s) > 1})
        if twice:
            raise CliError(f"--examples-{side}: several files named {', '.join(twice)} (each example pose once)")
    if sorted(s_stems) == sorted(t_stems):
        by_stem = dict(zip(t_stems, target_files))
        return [(s, by_stem[file_stem(s)]) for s in source_files]
    if len(source_files) != len(target_files):
        raise CliError(f"{len(source_files)} source example(s) but {len(target_files)} target example(s): give as "
                       "many (paired by file name when the names match, else in order)")
    return list(zip(source_files, target_files))


# --------------------------------------------------------------------------------------------------
# Blender


def mesh_named(name: str, role: str, where: str):
    bpy = be.import_bpy()
    ob = bpy.data.objects.get(name)
    if ob is None or ob.type != "MESH":
        meshes = ", ".join(o.name for o in bpy.data.objects if o.type == "MESH") or "none"
        what = "no object" if ob is None else f"a {ob.type.lower()} object, not a mesh,"
        raise CliError(f"--{role} {name}: {what} in {where} (meshes: {meshes})")
    return ob


def load_meshes(args, checked: dict):
    """The source and target objects (OBJ imports into an empty scene, or a .blend's meshes) and the
    number of cache samples (0 for a .blend source)."""
    bpy = be.import_bpy()
    samples = 0
    if checked["src_ext"] == ".obj":
        be.clear_scene()
        source, samples = load_obj_with_cache(args.input, os.path.abspath(args.cache))
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = 0, samples - 1
        scene.frame_set(0)
    else:
        open_blend(args.input)
        source = mesh_named(args.source, "source", args.input)
    if checked["target_obj"]:
        target = import_obj(checked["target_obj"])
    else:
        target = mesh_named(args.target, "target", args.input)  # a .blend's mesh
    if source == target:
        raise CliError(f'the source and the target are the same mesh "{source.name}"')
    return source, target, samples


def mesh_coords(ob):
    import numpy as np  # noqa: PLC0415 - with Blender

    co = np.empty(3 * len(ob.data.vertices), dtype=np.float32)
    ob.data.vertices.foreach_get("co", co)
    return co


def add_example_keys(ob, files: list[str], role: str) -> list[str]:
    """Each OBJ file's vertices as a shape key of ``ob`` named after the file (a Basis added first);
    returns the key names. CliError when a file's vertex count differs from the mesh's."""
    bpy = be.import_bpy()
    names = []
    coords = []
    for path in files:
        pose = import_obj(path)
        mesh = pose.data
        try:
            if len(mesh.vertices) != len(ob.data.vertices):
                raise CliError(f"the {role} example {path} has {len(mesh.vertices)} vertices, the {role} mesh "
                               f'"{ob.name}" {len(ob.data.vertices)}: an example is a pose of that mesh')
            coords.append(mesh_coords(pose))
        finally:
            bpy.data.objects.remove(pose)
            if mesh.users == 0:
                bpy.data.meshes.remove(mesh)
        names.append(file_stem(path))
    if ob.data.shape_keys is None:
        ob.shape_key_add(name="Basis", from_mix=False)
    have = set(ob.data.shape_keys.key_blocks.keys())
    taken = [n for n in names if n in have]
    if taken:
        raise CliError(f'the {role} "{ob.name}" already has shape keys named {", ".join(taken)}')
    for name, co in zip(names, coords):
        kb = ob.shape_key_add(name=name, from_mix=False)
        kb.data.foreach_set("co", co)
        kb.value = 0.0
    return names


def operator_params(args, checked: dict, source, target, samples: int) -> dict:
    params = dict(source=source.name, target=target.name, method=checked["method"], space=args.space.upper(),
                  translation=args.translation.upper(), output="PC2", write_to="NEW_OBJECT")
    if checked["method"] == "CORRESPONDENCE":
        if checked["markers"]:
            params.update(marker_source="FILE", markers_file=checked["markers"])
        else:
            params.update(marker_source="VERTEX_GROUPS", marker_prefix=args.marker_prefix or "marker")
    if args.frames is not None:
        start, end = args.frames
        if samples and (start < 0 or end > samples - 1):
            raise CliError(f"--frames {start} {end}: the cache {args.cache} has frames 0-{samples - 1} "
                           "(sample i plays at frame i)")
        params.update(range_mode="CUSTOM", frame_start=start, frame_end=end)
    else:
        params.update(range_mode="SCENE")
    pairs = list(checked["pairs"])
    if checked["examples"]:
        chosen = pair_examples(*checked["examples"])
        source_keys = add_example_keys(source, [p[0] for p in chosen], "source")
        target_keys = add_example_keys(target, [p[1] for p in chosen], "target")
        pairs = list(zip(source_keys, target_keys))
        print(f"examples: {', '.join(s if s == t else f'{s}:{t}' for s, t in pairs)}", flush=True)
    if pairs:
        params["pairs"] = [{"name": s, "target_key": t} for s, t in pairs]
    return params


def summary_line(r) -> str:
    """The operator's numbers (``scene.anim_signals.last_transfer``) on one line."""
    how = (f"examples, {r.space.lower()} space, {r.examples} pair(s)" if r.method == "EXAMPLES"
           else f"correspondence, {r.markers} markers")
    text = (f"{r.source_object} -> {r.object_name}: frames {r.frame_start}-{r.frame_end} ({r.frames}), {how}; "
            f"{r.source_vertices} -> {r.target_vertices} vertices")
    if r.method == "EXAMPLES":
        text += (f"; source fit error in the examples' basis RMS {r.fit_error_mean:.3g} mean, {r.fit_error_max:.3g} "
                 f"max ({100.0 * r.fit_error_relative:.2g} % of its size)")
    return (text + f"; setup {r.setup_seconds:.2f} s, {r.solve_ms_per_frame:.1f} ms per frame solve, "
            f"{r.read_ms_per_frame:.1f} ms per frame read; {r.seconds:.2f} s")


def cache_modifier(ob, cache_abs: str):
    """The result's Mesh Cache modifier playing ``cache_abs``."""
    bpy = be.import_bpy()
    for mod in ob.modifiers:
        if mod.type == "MESH_CACHE" and os.path.normpath(bpy.path.abspath(mod.filepath)) == cache_abs:
            return mod
    raise CliError(f"the result {ob.name} has no Mesh Cache modifier playing {cache_abs}", code=1)


def blend_relative(path: str) -> str:
    """``path`` relative to the open .blend (``//...``), absolute when it cannot be (another drive)."""
    bpy = be.import_bpy()
    try:
        return bpy.path.relpath(path)
    except ValueError:
        return path


def transfer_and_save(params: dict, out: str, pc2: str, label: str) -> tuple[str, str, str]:
    """Run the operator with the file saved as ``out``'s name in a temporary folder beside it (the
    operator writes its PC2 beside the .blend), put the PC2 at ``pc2`` (default: beside ``out``), and
    save ``out`` with the Mesh Cache path relative to it; both files are written under temporary names
    and renamed only when everything succeeded, so on failure nothing is left behind. Returns the
    result object's name, the PC2 path and the path its Mesh Cache modifier stores."""
    bpy = be.import_bpy()
    folder = os.path.dirname(out)
    made = not os.path.isdir(folder)
    os.makedirs(folder, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".anim_signals_transfer_", dir=folder)
    try:
        try:
            with stderr_kept_back():
                bpy.ops.wm.save_as_mainfile(filepath=os.path.join(work, os.path.basename(out)), check_existing=False)
        except RuntimeError as ex:
            raise failed(f"could not save into {folder}: {blender_message(ex)}") from ex
        run_operator(bpy.ops.anim_signals.transfer_deformation, label, **params)
        r = bpy.context.scene.anim_signals.last_transfer
        print("  " + summary_line(r), flush=True)
        written = os.path.normpath(bpy.path.abspath(r.cache_path))
        dest = pc2 or check_output_file(os.path.join(folder, os.path.basename(written)), "--out", (".pc2",))
        mod = cache_modifier(bpy.data.objects[r.object_name], written)
        try:
            with written_atomically(dest) as pc2_partial:
                shutil.move(written, pc2_partial)
                mod.filepath = blend_relative(dest)  # relative to the temporary file: remapped when saved as out
                r.cache_path = dest  # where the file will be (absolute: the result's own field has no // support)
                with written_atomically(out) as blend_partial, stderr_kept_back(), stdout_dropped():
                    # same folder as out: the relative Mesh Cache path is remapped to what it is from out
                    bpy.ops.wm.save_as_mainfile(filepath=blend_partial, check_existing=False, relative_remap=True)
        except (RuntimeError, OSError) as ex:
            raise failed(f"could not write {out} and {dest}: {blender_message(ex)}") from ex
        return r.object_name, dest, mod.filepath
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if made and os.path.isdir(folder) and not os.listdir(folder):
            os.rmdir(folder)


def cmd_transfer(args) -> int:
    checked = check_arguments(args)
    check_files(args, checked)
    be.import_bpy()
    source, target, samples = load_meshes(args, checked)
    enable_operators(TRANSFER_OPERATOR)
    params = operator_params(args, checked, source, target, samples)
    print(f"transferring {source.name} -> {target.name} ({checked['method'].lower()}) ...", flush=True)
    result, dest, stored = transfer_and_save(params, checked["out"], checked["pc2"], f"{source.name} -> {target.name}")
    print(f"wrote {dest}")
    print(f"saved {checked['out']} (Mesh Cache of {result}: {stored})")
    return 0


# --------------------------------------------------------------------------------------------------
# arguments


def add_transfer_parser(sub) -> None:
    p = add_command(
        sub, "transfer", cmd_transfer,
        "move a mesh animation onto another mesh (deformation transfer: examples or markers)",
        "Transfer the source's deformation onto the target with bpy.ops.anim_signals.transfer_deformation: "
        "by example poses (Cashman-Hormann) or by marker correspondence (Sumner-Popovic). Writes the "
        "target's motion as a PC2 cache played by a Mesh Cache modifier on a new object <target>.transfer, "
        "and saves the .blend.")
    p.usage = ("%(prog)s SOURCE.obj --cache SOURCE.pc2|.mdd --target TARGET.obj [options]\n"
               "       %(prog)s SCENE.blend --source NAME --target NAME|TARGET.obj [options]")
    p.add_argument("input", metavar="SOURCE", help="the source: an .obj with --cache, or a .blend with --source NAME")
    p.add_argument("--cache", default="", metavar="FILE.pc2|.mdd", help="PC2 or MDD vertex animation of an .obj source (sample i at frame i)")
    p.add_argument("--source", default="", metavar="NAME", help="the animated mesh of a .blend source")
    p.add_argument("--target", default="", metavar="TARGET.obj|NAME",
                   help="the target mesh: an .obj file, or a mesh of the .blend source")
    p.add_argument("--method", type=str.lower, choices=("examples", "correspondence"), default=None,
                   help="default: correspondence with --markers/--marker-prefix, else examples")
    p.add_argument("--space", type=str.lower, choices=("gradient", "vertex"), default="gradient",
                   help="shape space of the examples method (default gradient)")
    p.add_argument("--markers", default="", metavar="FILE.yml", help="markers file (YAML: \"source:target\" vertex indices under "
                   "markers:, as Sumner's markers-cat-lion.yml); else the .blend's marker vertex groups")
    p.add_argument("--marker-prefix", default="", metavar="PREFIX", help="marker vertex groups' prefix in a .blend (default marker)")
    p.add_argument("--translation", type=str.lower, choices=("follow", "fixed"), default="follow",
                   help="correspondence method: the target's centre follows the source's (default) or stays")
    p.add_argument("--examples-source", nargs="+", default=None, metavar="OBJ_OR_DIR",
                   help="example poses of the source (OBJ files or folders of them), loaded as shape keys")
    p.add_argument("--examples-target", nargs="+", default=None, metavar="OBJ_OR_DIR",
                   help="the target's versions of those poses; paired by file name when the names match, else in "
                   "order (folders: sorted)")
    p.add_argument("--pairs", default="", metavar="SRC:TGT,...", help="example pairs of a .blend's shape keys, SRC_KEY:TGT_KEY[,...] "
                   "(default: the keys named alike)")
    p.add_argument("--frames", type=frame_number, nargs=2, default=None, metavar=("START", "END"),
                   help="frames transferred (default: the cache's samples, or the .blend's scene range)")
    p.add_argument("--pc2", default="", metavar="OUT.pc2", help="write the PC2 here (default: <out name>_<target>_transfer.pc2 "
                   "beside the .blend)")
    p.add_argument("--out", default="", metavar="OUT.blend", help="output .blend (default <source name>_transfer.blend here)")


PARSERS = (add_transfer_parser,)
