"""What one library task does inside a Dask worker: one clip through the extension's operators.

Every worker is its own process with its own ``bpy`` (one Blender per process, one task at a time:
the cluster runs one thread per worker). A task imports its clip into an emptied scene (BVH: Blender's
importer; .blend: the file opened), calls the same operator the UI and the single-clip commands call
(``fit_object`` of ``cli/fit_spline.py``, ``make_cyclic``, the compare module's per-clip curves,
the motion-database import), and writes its outputs under ``OUT/clips/`` atomically (a hidden temporary
name, renamed at the end): the clip's ``.blend`` and a JSON report (``.npz`` features for compare).
A clip that fails returns its error instead of raising, so the run lists it and goes on.

:func:`worker_environment` runs once on every worker before any task: the versions of what a task needs.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from argparse import Namespace
from typing import Any

# a worker process started by Dask finds this package through the sys.path it inherits; make sure the
# scripts folder itself is there too (a remote worker started from the checkout's scripts/)
_SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _SCRIPTS not in sys.path:
    sys.path.insert(0, _SCRIPTS)

import _blender_env as be  # noqa: E402

be.add_core_to_path()  # the blocks of exact distances import anim_signals (the core) in the worker

from .common import (  # noqa: E402
    CliError,
    check_input,
    enable_operators,
    extension_module,
    load_input,
    run_operator,
    save,
    stdout_dropped,
)
from .outputs import write_text  # noqa: E402

__all__ = ["REQUIRED", "clip_outputs", "run_clip", "build_database", "worker_environment"]

REQUIRED = ("numpy", "scipy", "bpy", "dask", "distributed")

# test hook: "<clip name>:<marker file>:<where>" kills this worker process (SIGKILL) the first time
# the clip reaches <where> ("start" or "write": its .blend written under the temporary name, not yet
# renamed); the marker file makes the retried task go through
CRASH_HOOK = "ANIM_SIGNALS_LIBRARY_CRASH"


def worker_environment() -> dict[str, Any]:
    """The versions of the packages a library task needs, as this process finds them (None: missing).

    Self-contained on purpose (standard library only): it must run on a worker that lacks everything.
    """
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, Any] = {"python": ".".join(map(str, sys.version_info[:3])), "pid": os.getpid()}
    for name in ("numpy", "scipy", "bpy", "dask", "distributed"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def _crash_if_asked(clip: str, where: str) -> None:
    hook = os.environ.get(CRASH_HOOK, "")
    if not hook:
        return
    name, marker, at = hook.rsplit(":", 2)
    if name == clip and at == where and not os.path.exists(marker):
        with open(marker, "w") as fh:
            fh.write(f"killed {os.getpid()} at {where}\n")
        os.kill(os.getpid(), signal.SIGKILL)


def clip_outputs(name: str, command: str) -> list[str]:
    """The files a clip's task writes, relative to the output folder: ``clips/<name>.<ext>``, the clip's
    name with its own extension kept (``walks/w01.bvh`` -> ``clips/walks/w01.bvh.blend``), so that
    ``w01.bvh`` and ``w01.blend`` beside it never write the same file."""
    stem = "clips/" + name
    exts = {"fit": (".blend", ".json"), "loop": (".blend", ".json"), "compare": (".npz", ".json"),
            "db-build": (".blend", ".json")}[command]
    return [stem + e for e in exts]


def _save_blend(out_dir: str, rel: str, clip: str) -> None:
    """Save the open scene as ``out_dir/rel`` (atomically, via ``common.save``)."""
    path = os.path.join(out_dir, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.environ.get(CRASH_HOOK, "").endswith(":write") and os.environ[CRASH_HOOK].startswith(clip + ":"):
        from . import outputs

        real = outputs.os.replace

        def crash_then_replace(src, dst):
            _crash_if_asked(clip, "write")  # the temporary .blend is complete here, the result not yet
            real(src, dst)

        outputs.os.replace = crash_then_replace  # type: ignore[assignment]
        try:
            save(path)
        finally:
            outputs.os.replace = real  # type: ignore[assignment]
    else:
        save(path)


def _objects(path: str) -> list:
    objects = load_input(path)
    if not objects:
        raise CliError(f"{os.path.basename(path)}: no object has an action")
    return objects


def _fit(path: str, options: dict) -> dict:
    from .fit_spline import fit_object

    objects = _objects(path)
    enable_operators("fit_latent_spline")
    args = Namespace(replace=False, **options)
    return {"objects": [fit_object(ob, args) for ob in objects]}


def _loop(path: str, options: dict) -> dict:
    from .loop_blend_compare import loop_params

    bpy = be.import_bpy()
    params = loop_params(Namespace(start=None, end=None, min_period=0, max_period=0, velocity_window=0,
                                   replace=False, **options))
    objects = _objects(path)
    enable_operators("make_cyclic")
    results = []
    for ob in objects:
        ob.animation_data.action.use_fake_user = True
        run_operator(bpy.ops.anim_signals.make_cyclic, ob.name, ob, **params)
        r = bpy.context.scene.anim_signals.last_loop
        results.append({k: getattr(r, k) for k in (
            "object_name", "action_name", "frame_start", "frame_end", "curves", "pose_before_deg", "pose_after_deg",
            "velocity_before_deg", "velocity_after_deg", "joint_pose_after_cm", "rms_deviation_deg", "converged",
            "seconds")})
    return {"objects": results}


def _features(path: str, options: dict, out_dir: str, rel: str) -> dict:
    """The clip's comparable curve (body features or rotation channels), saved as ``rel`` (.npz)."""
    import numpy as np

    bpy = be.import_bpy()
    objects = _objects(path)
    enable_operators("compare_actions")
    compare = extension_module("operators.loop_blend_compare.compare")
    clips = extension_module("operators.loop_blend_compare.clips")
    arm = next((o for o in objects if o.type == "ARMATURE"), objects[0])
    action = arm.animation_data.action
    try:
        if options["features"] == "BODY":
            curve = compare.clip_body_curve(action, arm, bpy.context.scene, options["n_samples"])
            keys: list = []
            kinds: list = []
            owners: list = []
        else:
            curve, keys, kinds, owners = compare.rotation_curve(action, arm)
    except clips.MotionInputError as ex:
        raise CliError(str(ex)) from ex
    target = os.path.join(out_dir, rel)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    from .outputs import written_atomically

    with written_atomically(target) as temporary, open(temporary, "wb") as fh:
        np.savez(fh, curve=np.asarray(curve, dtype=float), keys=np.array([f"{p}[{i}]" for p, i in keys], dtype=str),
                 kinds=np.array(kinds, dtype=str), owners=np.array(owners, dtype=str))
    return {"frames": int(curve.shape[0]), "channels": int(curve.shape[1]), "action": action.name,
            "armature": arm.name}


def _db_clip(path: str) -> dict:
    from .motion_db import import_bvh_clip

    if not path.lower().endswith(".bvh"):
        raise CliError(f"{os.path.basename(path)}: db-build takes BVH clips")
    be.clear_scene()
    ob = import_bvh_clip(path)
    act = ob.animation_data.action
    return {"action": act.name, "frames": int(round(act.frame_range[1] - act.frame_range[0])) + 1,
            "channels": len(be.action_fcurves(ob))}


def run_clip(command: str, name: str, path: str, out_dir: str, options: dict) -> dict:
    """One clip through one command in this process; returns ``{"result": ..., "outputs": [...]}`` or
    ``{"error": message}`` (never raises for a failing clip: the run lists it and goes on).

    Parameters
    ----------
    command : {"fit", "loop", "compare", "db-build"}
    name : str
        The clip's name in the library (relative path): its outputs are ``OUT/clips/<name>.*``.
    path : str
        The clip file.
    out_dir : str
        The run's output folder.
    options : dict
        The command's options (as in the manifest).
    """
    t0 = time.perf_counter()
    outputs = clip_outputs(name, command)
    try:
        _crash_if_asked(name, "start")
        with stdout_dropped():
            check_input(path)
            if command == "fit":
                result = _fit(path, options)
            elif command == "loop":
                result = _loop(path, options)
            elif command == "compare":
                result = _features(path, options, out_dir, outputs[0])
            elif command == "db-build":
                result = _db_clip(path)
            else:
                raise CliError(f"unknown library command {command!r}")
            if outputs[0].endswith(".blend"):
                _save_blend(out_dir, outputs[0], name)
        result["seconds"] = time.perf_counter() - t0
        write_text(os.path.join(out_dir, outputs[-1]),
                   json.dumps({"clip": name, "command": command, "options": options, "result": result},
                              indent=1, default=str))
        return {"result": result, "outputs": outputs, "pid": os.getpid()}
    except CliError as ex:
        return {"error": str(ex), "pid": os.getpid()}
    except Exception as ex:  # a bug or an error no check foresaw: still one line, the run goes on
        detail = traceback.format_exc() if os.environ.get("ANIM_SIGNALS_DEBUG") else ""
        return {"error": f"unexpected {type(ex).__name__}: {ex}{detail and chr(10) + detail}", "pid": os.getpid()}


def build_database(blends: list[str], out: str, fps: int, backend: str = "AUTO", recall_target: float = 0.95) -> dict:
    """The motion database from the clips' .blend files (one action each): their actions appended into
    an empty scene, ``bpy.ops.anim_signals.build_motion_database`` (kind ARMATURE, the k-NN index
    settings), its k-NN index written beside ``out`` (``<out name>_motiondb/``), then saved as ``out``."""
    from .motion_db import index_report

    bpy = be.import_bpy()
    with stdout_dropped():
        be.clear_scene()
        enable_operators("build_motion_database", "save_motion_db_index")
        scene = bpy.context.scene
        scene.render.fps, scene.render.fps_base = int(fps), 1.0
        names = []
        for path in blends:
            with bpy.data.libraries.load(path, link=False) as (src, dst):
                dst.actions = list(src.actions)
            for act in dst.actions:
                act.use_fake_user = True
                names.append(act.name)
        run_operator(bpy.ops.anim_signals.build_motion_database, "db-build", None, kind="ARMATURE",
                     actions=",".join(names), backend=backend, recall_target=float(recall_target))
        s = scene.anim_signals.motion_db
        run_operator(bpy.ops.anim_signals.save_motion_db_index, "db-build index", None, filepath=out)
        save(out)
    # the file the index in use was written to beside ``out`` (same name as wherever it was before)
    folder = f"{os.path.splitext(os.path.basename(out))[0]}_motiondb"
    index_file = os.path.join(folder, os.path.basename(s.index_path)) if s.index_path else ""
    if not os.path.isfile(os.path.join(os.path.dirname(out), index_file)):
        index_file = ""
    return {"clips": len(s.actions), "frames": int(s.n_frames), "channels": int(s.n_channels), "out": out,
            "index": index_report(s), "index_backend": s.index_backend, "index_recall": float(s.index_recall),
            "index_file": index_file}
