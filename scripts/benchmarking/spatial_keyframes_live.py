"""The Blender side of the spatial keyframes' live cursor pose update (``benchmark_spatial_keyframes.py``).

A 60-bone chain armature (the core's ``articulated_chain``, quaternion bones) with a stored 30-marker
model, built as ``tests/blender/test_spatial_keyframes_canvas.py`` builds it, in the bpy module with the
extension enabled (``_blender_env.enable_extension``). Per mouse move, what the canvas tools do:

* **Navigate**: ``posing.pose_from_point`` (the RBF at the cursor, 60 bones written with ``foreach_set``);
* **Navigate + depsgraph**: the same and ``view_layer.update()``, the evaluation Blender does before it
  redraws the viewport;
* **Move Marker**: the clip with the marker moved, its canvas preview (``canvas_model``), and the current
  frame posed through the refitted RBF (``pose_from_point(..., rbf=clip.rbf())``), as the operator's
  ``_update``; the refit alone, and the log map of the key poses it redoes, are timed too, and Move Marker
  again with numpy's BLAS held to one thread (``threadpoolctl``).

Without the bpy module :func:`measure` returns the reason it skipped.
"""

from __future__ import annotations

import importlib
import os
import statistics
import time
from collections.abc import Callable

import _blender_env as be
import numpy as np

BONES, MARKERS, MOVED_MARKER = 60, 30, 7


def _stats(times: tuple[list[float], list[float]]) -> dict:
    """Median and 95th percentile of the wall-clock times and of the main thread's CPU times (ms)."""
    wall, cpu = times
    return dict(median_ms=statistics.median(wall), p95_ms=float(np.percentile(wall, 95)), moves=len(wall),
                cpu_median_ms=statistics.median(cpu), cpu_p95_ms=float(np.percentile(cpu, 95)))


def _timed_moves(points: np.ndarray, warmup: int, move: Callable[[np.ndarray], object]
                 ) -> tuple[list[float], list[float]]:
    """Milliseconds per call of ``move`` at each point, the first ``warmup`` calls not counted: wall
    clock and the calling thread's CPU time (which leaves out the time other processes of a busy
    machine held the core)."""
    wall, cpu = [], []
    for i, p in enumerate(points):
        c0, t0 = time.thread_time(), time.perf_counter()
        move(p)
        if i >= warmup:
            wall.append(1e3 * (time.perf_counter() - t0))
            cpu.append(1e3 * (time.thread_time() - c0))
    return wall, cpu


def _chain_armature(bpy, parents) -> object:
    """An armature of ``len(parents)`` connected bones J00, J01, ... up the z axis, quaternion rotations."""
    names = [f"J{j:02d}" for j in range(len(parents))]
    arm = bpy.data.armatures.new("LiveChain")
    ob = bpy.data.objects.new("LiveChain", arm)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    ob.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    for j, (name, parent) in enumerate(zip(names, parents, strict=True)):
        eb = arm.edit_bones.new(name)
        eb.head, eb.tail = (0.0, 0.0, 0.1 * j), (0.0, 0.0, 0.1 * (j + 1))
        if parent >= 0:
            eb.parent = arm.edit_bones[names[parent]]
            eb.use_connect = True
    bpy.ops.object.mode_set(mode="OBJECT")
    for pb in ob.pose.bones:
        pb.rotation_mode = "QUATERNION"
    return ob


def _bone_quaternions(ob) -> np.ndarray:
    """The bones' rotation_quaternion now, (J, 4), read with foreach_get (independent of the extension)."""
    buf = np.empty(4 * len(ob.pose.bones), dtype=np.float32)
    ob.pose.bones.foreach_get("rotation_quaternion", buf)
    return buf.reshape(-1, 4).astype(float)


def _quaternion_gap(a: np.ndarray, b: np.ndarray) -> float:
    """Largest difference between two (J, 4) quaternion sets, q and -q counted as one rotation."""
    return float(np.minimum(np.abs(a - b).max(axis=1), np.abs(a + b).max(axis=1)).max())


def measure(moves: int, warmup: int = 20, seed: int = 3) -> dict:
    """Time per mouse move of Navigate and Move Marker on the 60-bone, 30-marker rig.

    Returns ``{"skipped": reason}`` without the bpy module or when the extension does not enable.
    """
    try:
        bpy = be.import_bpy()
    except ImportError as err:
        return dict(skipped=f"no bpy module in this Python ({err}); run with the project's .venv python")
    try:
        module = be.enable_extension()
    except Exception as err:  # a broken checkout: say why, keep the core's numbers
        return dict(skipped=f"the extension did not enable: {err}")
    ext = module if module.startswith("bl_ext.") else be.ADDON_MODULE
    sk = importlib.import_module(f"{ext}.anim_signals.spatialkeys")
    storage = importlib.import_module(f"{ext}.operators.spatial_keyframes.storage")
    posing = importlib.import_module(f"{ext}.operators.spatial_keyframes.posing")
    tools = importlib.import_module(f"{ext}.operators.spatial_keyframes.canvas_tools")
    state = importlib.import_module(f"{ext}.operators.pose_space.canvas_state")

    be.clear_scene()
    scene = bpy.context.scene
    chain = sk.articulated_chain(300, BONES, seed=seed)
    ob = _chain_armature(bpy, chain.parents)
    clip = sk.compact_clip(chain.quaternions, chain.parents, count=MARKERS, projection="pca", optimise=False)
    names = [pb.name for pb in ob.pose.bones]
    storage.store_model(ob, clip, {"action": "", "frame_start": 1, "frame_end": 300, "bones": names,
                                   "parents": list(chain.parents), "modes": ["QUATERNION"] * BONES,
                                   "projection": "pca", "selection": "uniform", "optimised": False, "error": 0.0})
    scene.frame_start, scene.frame_end = 1, 300
    scene.frame_set(120)
    model = storage.load_model(ob)
    lo, hi = model.shown.positions.min(axis=0), model.shown.positions.max(axis=0)
    angles = np.linspace(0.0, 2.0 * np.pi, warmup + moves)
    circle = lo + (hi - lo) * (0.5 + 0.4 * np.stack([np.cos(angles), np.sin(angles)], axis=1))
    view_layer = bpy.context.view_layer
    # the machine's load: a shared machine's other processes show in the 95th percentile
    out: dict = dict(bones=BONES, markers=MARKERS, warmup=warmup, blender=bpy.app.version_string,
                     load_average=os.getloadavg()[0])

    navigate = _timed_moves(circle, warmup, lambda p: posing.pose_from_point(ob, p))
    expected = sk.as_quaternions(model.rbf.evaluate(circle[-1][None])[0])
    out["navigate"] = dict(_stats(navigate), max_error=_quaternion_gap(_bone_quaternions(ob), expected))

    def navigate_and_evaluate(p):
        posing.pose_from_point(ob, p)
        view_layer.update()

    out["navigate_depsgraph"] = _stats(_timed_moves(circle, warmup, navigate_and_evaluate))

    # Move Marker's _update: marker 7 dragged round a circle about where it is (a point on another
    # marker is refused, as in the operator, which then keeps the last free point)
    sk_state = state.state_of(ob, state.SPATIAL_KEYFRAMES)
    radius = 0.15 * (hi - lo)
    around = clip.markers[MOVED_MARKER] + radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    refused = 0
    last: list = []

    def move_marker(p):
        nonlocal refused
        try:
            moved = model.clip.with_marker_moved(MOVED_MARKER, p)
        except ValueError:
            refused += 1
            return
        sk_state.preview = sk.canvas_model(moved, float(model.shown.frames[0]))
        posing.pose_from_point(ob, tools._current_point(bpy.context, model), rbf=moved.rbf())
        last[:] = [moved]

    move = _timed_moves(around, warmup, move_marker)
    frame_point = clip.trajectory[scene.frame_current - 1]
    expected = sk.as_quaternions(clip.with_marker_moved(MOVED_MARKER, last[0].markers[MOVED_MARKER])
                                 .rbf().evaluate(frame_point[None])[0])
    out["move_marker"] = dict(_stats(move), refused=refused,
                              max_error=_quaternion_gap(_bone_quaternions(ob), expected))

    def refit(p):
        clip.with_marker_moved(MOVED_MARKER, p).rbf()

    # what the refit redoes on every move although the key poses do not change: their log map
    keys = sk.as_matrices(clip.key_rotations)
    relative = np.swapaxes(sk.project_to_rotation(keys.mean(axis=0)), -1, -2)[None] @ keys
    out["move_marker"].update(refit_median_ms=statistics.median(_timed_moves(around, warmup, refit)[0]),
                              log_map_median_ms=statistics.median(
                                  _timed_moves(around, warmup, lambda p: sk.log_map(relative))[0]))
    # the refit's small linear solve is slow when OpenBLAS splits it over threads of a busy machine
    try:
        import threadpoolctl
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    if threadpool_limits is not None:
        out["blas_threads"] = max((pool["num_threads"] for pool in threadpoolctl.threadpool_info()
                                   if pool.get("user_api") == "blas"), default=None)
        with threadpool_limits(limits=1, user_api="blas"):
            out["move_marker_one_blas_thread"] = dict(
                _stats(_timed_moves(around, warmup, move_marker)),
                refit_median_ms=statistics.median(_timed_moves(around, warmup, refit)[0]))
    sk_state.preview = None
    bpy.data.objects.remove(ob)
    return out


def markdown_rows(live: dict, goal_ms: float) -> list[list[str]]:
    """Rows (what, median, 95th percentile, the same of the CPU time, goal) of the Blender-side table;
    the goal is on the wall-clock times."""
    n = live["navigate"]["moves"]
    rows = [[f"Navigate: pose_from_point (RBF + {live['bones']} bones by foreach_set), {n} moves",
             live["navigate"]], ["Navigate + depsgraph update (view_layer.update())", live["navigate_depsgraph"]],
            ["Move Marker: refit the RBF through the moved marker, canvas preview, pose the current frame",
             live["move_marker"]]]
    if "move_marker_one_blas_thread" in live:
        rows.append(["Move Marker, numpy's BLAS limited to one thread", live["move_marker_one_blas_thread"]])
    out = []
    for i, (what, s) in enumerate(rows):
        under = s["median_ms"] < goal_ms and s["p95_ms"] < goal_ms
        goal = (f"< {goal_ms:g} ms: {'met' if under else 'not met'}" if i < 2
                else f"no goal (both under {goal_ms:g} ms: {'yes' if under else 'no'})")
        out.append([what, f"{s['median_ms']:.3f} ms", f"{s['p95_ms']:.3f} ms", f"{s['cpu_median_ms']:.3f} ms",
                    f"{s['cpu_p95_ms']:.3f} ms", goal])
    return out
