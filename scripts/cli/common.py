"""What every sub-command of ``anim_signals_cli.py`` shares: errors, input and output files, picking
objects, enabling the extension, calling an operator, and the arguments several commands take.

Blender is imported lazily (through ``_blender_env``), so argument parsing works without it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence

import _blender_env as be


class CliError(Exception):
    """A clear message for the user; exit code 2 (bad input) unless ``code`` says otherwise."""

    def __init__(self, msg, code=2):
        super().__init__(msg)
        self.code = code


# --------------------------------------------------------------------------------------------------
# input files


def check_file(path: str, exts: Sequence[str]) -> str:
    """The extension (lower case) of ``path``; CliError unless it is an existing file with one of ``exts``."""
    if not os.path.isfile(path):
        raise CliError(f"no such file: {path}")
    ext = os.path.splitext(path)[1].lower()
    if ext not in exts:
        kinds = " or ".join(exts) if len(exts) < 3 else f"{', '.join(exts[:-1])}, or {exts[-1]}"
        raise CliError(f"unsupported input {path!r}: expected a {kinds} file")
    return ext


def expand_folders(paths: Iterable[str], exts: Sequence[str]) -> list[str]:
    """Absolute paths; a folder stands for its files with one of the extensions ``exts`` (sorted).

    Files are returned as given (any extension: the caller sorts them out), duplicates included.
    """
    out: list[str] = []
    for p in paths:
        p = os.path.abspath(p)
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p) if f.lower().endswith(tuple(exts)))
            if not found:
                raise CliError(f"no {' or '.join(exts)} files in the folder {p}")
            out += found
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise CliError(f"no such file or folder: {p}")
    return out


def import_bvh(path: str):
    """Blender's BVH importer into the current scene; returns the new armature object."""
    try:
        return be.import_bvh(path)
    except Exception as ex:
        raise CliError(f"could not import BVH {path}: {ex}") from ex


def open_blend(path: str) -> None:
    bpy = be.import_bpy()
    try:
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(path), load_ui=False)
    except Exception as ex:
        raise CliError(f"could not open {path}: {ex}") from ex


def import_obj(path: str):
    """Blender's OBJ importer into the current scene, the whole file as one mesh object; returns it.

    The vertices keep the file's order and coordinates (the importer turns the object, Y up to Z up,
    not its mesh), so vertex indices and PC2/MDD caches written for the file apply as they are.
    """
    bpy = be.import_bpy()
    check_file(path, (".obj",))
    before = set(bpy.data.objects)
    try:
        bpy.ops.wm.obj_import(filepath=os.path.abspath(path), use_split_objects=False, use_split_groups=False)
    except Exception as ex:
        raise CliError(f"could not import OBJ {path}: {ex}") from ex
    meshes = [o for o in bpy.data.objects if o not in before and o.type == "MESH"]
    if not meshes:
        raise CliError(f"{path}: no mesh imported")
    return meshes[0]


def cache_samples(path: str) -> tuple[int, int]:
    """(samples, vertices) of a PC2 or MDD point cache; CliError when it is missing or unreadable."""
    ext = check_file(path, (".pc2", ".mdd"))
    be.add_core_to_path()
    from anim_signals.meshio.meshcache import read_mdd, read_pc2  # noqa: PLC0415 - the checkout's core

    try:
        samples = read_pc2(path)[0] if ext == ".pc2" else read_mdd(path)[0]
    except (OSError, ValueError) as ex:
        raise CliError(f"cannot read the point cache {path}: {ex}") from ex
    return int(samples.shape[0]), int(samples.shape[1])


def load_obj_with_cache(path: str, cache: str, frame_start: float = 0.0):
    """An OBJ played by a PC2/MDD cache (a Mesh Cache modifier, sample i at frame ``frame_start + i``),
    imported into the current scene. Returns the object and the number of samples; CliError when the
    cache's vertex count is not the OBJ's."""
    bpy = be.import_bpy()
    n_samples, n_vertices = cache_samples(cache)
    ob = import_obj(path)
    if n_vertices != len(ob.data.vertices):
        count = len(ob.data.vertices)
        bpy.data.objects.remove(ob)
        raise CliError(f"the cache {cache} has {n_vertices} vertices, the OBJ {path} {count}: a point cache plays "
                       "the mesh it was written for")
    mod = ob.modifiers.new("MeshCache", "MESH_CACHE")
    mod.cache_format = "PC2" if cache.lower().endswith(".pc2") else "MDD"
    mod.filepath = os.path.abspath(cache)
    mod.time_mode, mod.play_mode, mod.deform_mode = "FRAME", "SCENE", "OVERWRITE"
    mod.frame_start, mod.frame_scale = float(frame_start), 1.0
    return ob, n_samples


def assigned_action(ob):
    """The object's assigned action, or None."""
    ad = ob.animation_data
    return ad.action if ad is not None else None


def load_input(path: str):
    """Import a BVH (into an empty scene) or open a .blend; returns the objects with an action."""
    bpy = be.import_bpy()
    if check_file(path, (".bvh", ".blend")) == ".bvh":
        be.clear_scene()
        import_bvh(path)
    else:
        open_blend(path)
    return [ob for ob in bpy.context.scene.objects if assigned_action(ob) is not None]


def pick_objects(objects, names: str, what: str = "animated object", where: str = ""):
    """The objects named in the comma-separated ``names``, in that order (all ``objects`` when empty)."""
    if not names:
        return list(objects)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    have = {o.name: o for o in objects}
    missing = [n for n in wanted if n not in have]
    if missing:
        raise CliError(f"no {what} named {', '.join(missing)}{f' in {where}' if where else ''} "
                       f"({what}s: {', '.join(have) or 'none'})")
    return [have[n] for n in wanted]


# --------------------------------------------------------------------------------------------------
# output files


def default_out(path: str, suffix: str) -> str:
    """``<input name><suffix>.blend`` in the current folder."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.abspath(f"{stem}{suffix}.blend")


def save(out: str) -> str:
    """Save the open file as ``out`` (a .blend; folders created); returns its absolute path."""
    bpy = be.import_bpy()
    out = os.path.abspath(out)
    if not out.lower().endswith(".blend"):
        raise CliError(f"--out must be a .blend file: {out}")
    folder = os.path.dirname(out)
    if folder and not os.path.isdir(folder):
        os.makedirs(folder, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=out, check_existing=False)
    return out


# --------------------------------------------------------------------------------------------------
# the extension and its operators


def enable_operators(*ops: str) -> None:
    """Enable the extension and check it has the operators ``bpy.ops.anim_signals.<op>`` a command calls."""
    try:
        be.enable_extension()
    except Exception as ex:
        raise CliError(f"could not enable the Anim Signals extension: {ex}", code=1) from ex
    bpy = be.import_bpy()
    for op in ops:
        if op not in dir(bpy.ops.anim_signals):
            raise CliError(f"this version of the extension has no bpy.ops.anim_signals.{op}", code=1)


def extension_module(name: str):
    """The enabled extension's module ``<package>.<name>`` (e.g. ``operators.pose_space``)."""
    found = next((m for n, m in sys.modules.items() if n.endswith("." + name)), None)
    if found is None:
        raise CliError(f"the extension's module {name} is not loaded", code=1)
    return found


def run_operator(op, label: str, ob=None, **params):
    """Call ``op(**params)`` (with ``ob`` active when given); an error or CANCELLED is CliError code 1."""
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


def for_each_object(objects, work: Callable[[object], None], verb: str = "") -> int:
    """``work(ob)`` for every object; an operator failure (code 1) is printed and the next object
    tried. Returns the number of failures. ``verb`` announces each object (``"fitting"``)."""
    failures = 0
    for ob in objects:
        if verb:
            print(f"{verb} {ob.name} ({ob.type.lower()}) ...", flush=True)
        try:
            work(ob)
        except CliError as ex:
            if ex.code != 1:
                raise
            print(f"error: {ex}", file=sys.stderr)
            failures += 1
    return failures


# --------------------------------------------------------------------------------------------------
# arguments several commands take


def add_command(sub, name: str, func, summary: str, description: str):
    """A sub-command parser that runs ``func(args)`` (``summary``: its line in the command list)."""
    p = sub.add_parser(name, help=summary, description=description)
    p.set_defaults(func=func)
    return p


def add_clip_input(p) -> None:
    p.add_argument("input", help="a .bvh clip (Blender's importer) or a .blend file")


def add_objects_option(p, which: str = "object names", default: str = "every animated object") -> None:
    p.add_argument("--objects", default="", help=f"comma-separated {which} (default: {default})")


def add_out_option(p, default: str) -> None:
    p.add_argument("--out", default="", help=f"output .blend (default {default})")
