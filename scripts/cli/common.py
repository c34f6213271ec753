"""What every sub-command of ``anim_signals_cli.py`` shares: errors, input and output files, picking
objects, enabling the extension, calling an operator, and the arguments several commands take.

Blender is imported lazily (through ``_blender_env``), so argument parsing and every check of the
command line, its input files (``inputs``) and its outputs (``outputs``) run before Blender starts.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import _blender_env as be

from .errors import EXIT_CODES_HELP, EXIT_FAILED, CliError, failed
from .inputs import cache_samples, check_file, check_inputs, expand_folders
from .outputs import written_atomically

__all__ = [  # the helpers the tool modules import from here, with those of errors/inputs/outputs
    "CliError", "failed", "cache_samples", "check_file", "check_input", "expand_folders", "import_bvh",
    "open_blend", "import_obj", "load_obj_with_cache", "assigned_action", "load_input", "pick_objects",
    "default_out", "save", "enable_operators", "extension_module", "run_operator", "for_each_object",
    "add_command", "add_clip_input", "add_objects_option", "add_out_option", "blender_message",
    "stderr_kept_back", "stdout_dropped", "debugging",
]

CLIP_EXTS = (".bvh", ".blend")


def debugging() -> bool:
    """ANIM_SIGNALS_DEBUG=1: show tracebacks and Blender's own error output too."""
    return os.environ.get("ANIM_SIGNALS_DEBUG", "") not in ("", "0")


# --------------------------------------------------------------------------------------------------
# Blender's own error output


@contextmanager
def _held(fd: int, stream, replay: bool) -> Iterator[None]:
    """File descriptor ``fd`` (and the Python ``stream`` on it) into a temporary file inside the block;
    what was written is passed on afterwards when ``replay`` and the block succeeded, or when debugging."""
    try:
        stream.flush()
        saved = os.dup(fd)
    except (OSError, ValueError):  # no such file descriptor to redirect
        yield
        return
    ok = False
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), fd)
        try:
            yield
            ok = True
        finally:
            try:
                stream.flush()
            except ValueError:
                pass
            os.dup2(saved, fd)
            os.close(saved)
            held.seek(0)
            text = held.read()
            if text and ((ok and replay) or debugging()):
                os.write(fd, text)


def stderr_kept_back():
    """Blender prints an operator's Python traceback to stderr itself before raising: inside the block
    stderr goes to a temporary file, written out when the block succeeds and dropped when it raises --
    the caller turns the exception into one message (ANIM_SIGNALS_DEBUG keeps it)."""
    return _held(2, sys.stderr, replay=True)


def stdout_dropped():
    """Blender's own report lines on stdout inside the block are dropped (e.g. 'Saved copy as' naming
    the temporary file; the command prints its own line)."""
    return _held(1, sys.stdout, replay=False)


def blender_message(ex: BaseException) -> str:
    """An error raised through ``bpy.ops`` as one line: the operator's report, or the last line of the
    Python traceback Blender wraps in it (``IndexError: list index out of range``)."""
    text = str(ex).strip()
    for prefix in ("Error: ", "Python: "):
        if text.startswith(prefix):
            text = text[len(prefix):].strip()
    if "Traceback (most recent call last)" in text:
        lines = [ln.strip() for ln in text.splitlines()
                 if ln.strip() and not ln.startswith((" ", "\t")) and not ln.startswith(("Location:", "Traceback"))]
        text = lines[-1] if lines else "an unexpected error"
    return " ".join(text.split("\n")).strip() or type(ex).__name__


# --------------------------------------------------------------------------------------------------
# input files


def check_input(path: str, exts: Sequence[str] = CLIP_EXTS, **kwargs) -> str:
    """``path``'s extension after checking the file is there, has one of ``exts`` and is well formed
    (``inputs.check_inputs``: a BVH walked as Blender's importer reads it, a .blend's header ...)."""
    ext = check_file(path, exts)
    check_inputs([path], **kwargs)
    return ext


def import_bvh(path: str):
    """Blender's BVH importer into the current scene (the file checked by ``check_input`` first);
    returns the new armature object. An importer error is one CliError line (exit code 2)."""
    try:
        with stderr_kept_back():
            return be.import_bvh(path)
    except Exception as ex:
        raise CliError(f"could not import BVH {path}: {blender_message(ex)}") from ex


def open_blend(path: str) -> None:
    bpy = be.import_bpy()
    try:
        with stderr_kept_back():
            bpy.ops.wm.open_mainfile(filepath=os.path.abspath(path), load_ui=False)
    except Exception as ex:
        raise CliError(f"could not open {path}: {blender_message(ex)}") from ex


def import_obj(path: str):
    """Blender's OBJ importer into the current scene, the whole file as one mesh object; returns it.

    The vertices keep the file's order and coordinates (the importer turns the object, Y up to Z up,
    not its mesh), so vertex indices and PC2/MDD caches written for the file apply as they are.
    """
    bpy = be.import_bpy()
    check_file(path, (".obj",))
    before = set(bpy.data.objects)
    try:
        with stderr_kept_back():
            bpy.ops.wm.obj_import(filepath=os.path.abspath(path), use_split_objects=False, use_split_groups=False)
    except Exception as ex:
        raise CliError(f"could not import OBJ {path}: {blender_message(ex)}") from ex
    meshes = [o for o in bpy.data.objects if o not in before and o.type == "MESH"]
    if not meshes:
        raise CliError(f"{path}: no mesh imported")
    return meshes[0]


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
    if check_file(path, CLIP_EXTS) == ".bvh":
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
    if not wanted:
        raise CliError(f"--objects {names!r} names no {what}")
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
    """Save a copy of the open file as ``out`` (checked by ``outputs.check_output_file`` before the work;
    written under a temporary name, then renamed; folders made); returns its absolute path. A failed
    save is CliError code 1 and leaves nothing behind."""
    bpy = be.import_bpy()
    out = os.path.abspath(out)
    if not out.lower().endswith(".blend"):
        raise CliError(f"--out must be a .blend file: {out}")
    try:
        with written_atomically(out) as temporary, stderr_kept_back(), stdout_dropped():
            # relative paths (//...) are remapped to the temporary name's folder: the same as out's
            bpy.ops.wm.save_as_mainfile(filepath=temporary, check_existing=False, copy=True, relative_remap=True)
    except (RuntimeError, OSError) as ex:
        raise failed(f"could not save {out}: {blender_message(ex)}") from ex
    return out


# --------------------------------------------------------------------------------------------------
# the extension and its operators


def enable_operators(*ops: str) -> None:
    """Enable the extension and check it has the operators ``bpy.ops.anim_signals.<op>`` a command calls."""
    try:
        with stderr_kept_back():
            be.enable_extension()
    except Exception as ex:
        raise failed(f"could not enable the Anim Signals extension: {blender_message(ex)}") from ex
    bpy = be.import_bpy()
    for op in ops:
        if op not in dir(bpy.ops.anim_signals):
            raise failed(f"this version of the extension has no bpy.ops.anim_signals.{op}")


def extension_module(name: str):
    """The enabled extension's module ``<package>.<name>`` (e.g. ``operators.pose_space``)."""
    found = next((m for n, m in sys.modules.items() if n.endswith("." + name)), None)
    if found is None:
        raise failed(f"the extension's module {name} is not loaded")
    return found


def run_operator(op, label: str, ob=None, **params):
    """Call ``op(**params)`` (with ``ob`` active when given); an error or CANCELLED is CliError code 1."""
    bpy = be.import_bpy()
    try:
        with stderr_kept_back():
            if ob is not None:
                with bpy.context.temp_override(**be.object_override(ob)):
                    res = op(**params)
            else:
                res = op(**params)
    except (RuntimeError, ValueError, TypeError) as ex:  # a report, an exception inside, or a bad property
        raise failed(f"{label}: {blender_message(ex)}") from ex
    if 'FINISHED' not in res:
        raise failed(f"{label}: the operator returned {sorted(res)}")
    return res


def for_each_object(objects, work: Callable[[object], None], verb: str = "", *, what: str = "done") -> int:
    """``work(ob)`` for every object; an operator failure (code 1) is printed and the next object
    tried. Returns the number of failures; when every object failed, raises instead (the one error, or
    "nothing was <what>") so that nothing is saved. ``verb`` announces each object (``"fitting"``)."""
    errors = []
    for ob in objects:
        if verb:
            print(f"{verb} {ob.name} ({ob.type.lower()}) ...", flush=True)
        try:
            work(ob)
        except CliError as ex:
            if ex.code != EXIT_FAILED or len(objects) == 1:
                raise
            print(f"error: {ex}", file=sys.stderr)
            errors.append(ex)
    if objects and len(errors) == len(objects):
        raise failed(f"nothing was {what}: every object failed (the errors are above); nothing saved")
    return len(errors)


# --------------------------------------------------------------------------------------------------
# arguments several commands take


def add_command(sub, name: str, func, summary: str, description: str):
    """A sub-command parser that runs ``func(args)`` (``summary``: its line in the command list)."""
    p = sub.add_parser(name, help=summary, description=description, epilog=EXIT_CODES_HELP)
    p.set_defaults(func=func)
    return p


def add_clip_input(p) -> None:
    p.add_argument("input", help="a .bvh clip (Blender's importer) or a .blend file")


def add_objects_option(p, which: str = "object names", default: str = "every animated object") -> None:
    p.add_argument("--objects", default="", help=f"comma-separated {which} (default: {default})")


def add_out_option(p, default: str) -> None:
    p.add_argument("--out", default="", help=f"output .blend (default {default})")
