"""Shared helpers for the scripts in ``scripts/`` (demo, CLI, benchmark).

Import this module *before* ``bpy``: :func:`setup_environment` points ``BLENDER_USER_RESOURCES``
at the project-local, git-ignored ``.blender_user/`` folder so that scripts never write into the
user's own Blender configuration.

Works both inside a Blender binary (``blender --background --python ...``) and with the ``bpy``
module from a virtual environment. Everything here reads Blender data independently of the
extension's own data layer (``operators/blender_data``), so the benchmarks' measurements do not
depend on the code they measure.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
USER_RESOURCES = REPO_ROOT / ".blender_user"
EXT_REPO_MODULE = "anim_signals_dev"
EXT_ID = "anim_signals"
ADDON_MODULE = f"bl_ext.{EXT_REPO_MODULE}.{EXT_ID}"
OPERATOR_IDNAME = "fit_latent_spline"

DEG = 180.0 / math.pi


def setup_environment() -> None:
    """Point Blender's user resources at ``.blender_user/`` (only if ``bpy`` is not imported yet)."""
    if "bpy" in sys.modules:
        return  # inside the Blender binary or already imported: too late to redirect, harmless
    USER_RESOURCES.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("BLENDER_USER_RESOURCES", str(USER_RESOURCES))


def import_bpy():
    """Set up the environment and return the ``bpy`` module."""
    setup_environment()
    import bpy  # noqa: PLC0415

    return bpy


def add_core_to_path() -> None:
    """Make ``import anim_signals`` (the pure-numpy core) work from the checkout."""
    root = str(REPO_ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)


# --------------------------------------------------------------------------------------------------
# extension


def operator_available() -> bool:
    import bpy

    return hasattr(bpy.ops, "anim_signals") and OPERATOR_IDNAME in dir(bpy.ops.anim_signals)


def enable_extension(verbose: bool = False) -> str:
    """Enable the checkout as a Blender extension and return the add-on module name.

    If the operator is already registered (the user installed the extension zip in a real Blender),
    nothing is changed. Otherwise an extensions repository is created at
    ``.blender_user/extensions_dev`` holding a symlink ``anim_signals -> <checkout>``, and the add-on
    ``bl_ext.anim_signals_dev.anim_signals`` is enabled.
    """
    import addon_utils
    import bpy

    if operator_available():
        return "(already registered)"
    repo_dir = USER_RESOURCES / "extensions_dev"
    repo_dir.mkdir(parents=True, exist_ok=True)
    link = repo_dir / EXT_ID
    if link.is_symlink() and link.resolve() != REPO_ROOT:
        link.unlink()
    if not link.exists():
        link.symlink_to(REPO_ROOT, target_is_directory=True)
    repos = bpy.context.preferences.extensions.repos
    if not any(r.module == EXT_REPO_MODULE for r in repos):
        repos.new(name="Anim Signals (dev checkout)", module=EXT_REPO_MODULE,
                  custom_directory=str(repo_dir), source='USER')
    mod = addon_utils.enable(ADDON_MODULE, default_set=True, handle_error=_raise)
    if mod is None or not operator_available():
        raise RuntimeError(
            f"could not enable {ADDON_MODULE}: the extension did not register "
            f"bpy.ops.anim_signals.{OPERATOR_IDNAME}")
    if verbose:
        print(f"enabled {ADDON_MODULE}")
    return ADDON_MODULE


def _raise(ex):
    raise ex


# --------------------------------------------------------------------------------------------------
# scene / data helpers


def clear_scene() -> None:
    """Remove all objects, armatures, actions and meshes (keeps the window, preferences, add-ons)."""
    import bpy

    for coll in (bpy.data.objects, bpy.data.armatures, bpy.data.actions, bpy.data.meshes):
        if len(coll):
            bpy.data.batch_remove(list(coll))
    bpy.context.view_layer.update()


def import_bvh(path: str | os.PathLike, *, max_frames: int | None = None):
    """Import a BVH with Blender's own importer (defaults: rotation_mode NATIVE, frames from 1).

    Returns the armature object (active). Sets the scene frame range to the clip.
    ``max_frames`` crops the animation (keys past ``frame_start + max_frames - 1`` are removed).
    """
    import bpy

    path = str(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    before = set(bpy.data.objects)
    res = bpy.ops.import_anim.bvh(filepath=path)
    if 'FINISHED' not in res:
        raise RuntimeError(f"BVH import failed: {path}")
    new = [o for o in bpy.data.objects if o not in before]
    ob = next((o for o in new if o.type == 'ARMATURE'), None) or bpy.context.active_object
    fcs = action_fcurves(ob)
    if max_frames is not None:
        for fc in fcs:
            kps = fc.keyframe_points
            n = len(kps)
            if n > max_frames:
                co = read_keys(fc)
                kps.clear()
                kps.add(max_frames)
                kps.foreach_set("co", co[:max_frames].ravel())
                kps.foreach_set("interpolation", [_interp_enum(fc, 'LINEAR')] * max_frames)
                fc.update()
    frames = fcurve_frame_range(fcs)
    sc = bpy.context.scene
    sc.frame_start, sc.frame_end = int(frames[0]), int(frames[1])
    return ob


def _interp_enum(fc, name):
    # foreach_set on enum properties takes the enum index
    items = fc.keyframe_points[0].bl_rna.properties["interpolation"].enum_items
    return items[name].value


def fcurve_frame_range(fcs):
    lo, hi = math.inf, -math.inf
    for fc in fcs:
        a, b = fc.range()
        lo, hi = min(lo, a), max(hi, b)
    return lo, hi


def action_fcurves(ob, action=None):
    """The F-curves of ``action`` (default: the object's active action) for the object's slot.

    Works on 4.2/4.3 (``Action.fcurves``) and 4.4+/5.x (slots and channelbags).
    """
    ad = ob.animation_data
    act = action if action is not None else (ad.action if ad else None)
    if act is None:
        return []
    if hasattr(act, "slots") and len(getattr(act, "layers", ())) > 0:
        from bpy_extras import anim_utils

        slot = ad.action_slot if (ad and ad.action == act and ad.action_slot) else None
        if slot is None and len(act.slots):
            slot = act.slots[0]
        cb = anim_utils.action_get_channelbag_for_slot(act, slot) if slot else None
        return list(cb.fcurves) if cb else []
    legacy = getattr(act, "fcurves", None)
    return list(legacy) if legacy is not None else []


def read_keys(fc):
    import numpy as np

    n = len(fc.keyframe_points)
    buf = np.empty(2 * n, dtype=np.float32)
    fc.keyframe_points.foreach_get("co", buf)
    return buf.reshape(n, 2).astype(np.float64)


def channel_kind(fc) -> str:
    prop = fc.data_path.rsplit(".", 1)[-1]
    if prop in ("rotation_euler", "delta_rotation_euler"):
        return "rotation"
    if prop in ("rotation_quaternion", "delta_rotation_quaternion", "rotation_axis_angle"):
        return "quaternion"
    if prop in ("location", "delta_location"):
        return "location"
    return "other"


def channel_key(fc) -> tuple[str, int]:
    return (fc.data_path, fc.array_index)


def sample_fcurves(fcs, frames):
    """Evaluate every F-curve at ``frames`` with Blender's own ``fcurve.evaluate`` -> (N, M)."""
    import numpy as np

    out = np.empty((len(frames), len(fcs)))
    fl = [float(f) for f in frames]
    for j, fc in enumerate(fcs):
        ev = fc.evaluate
        out[:, j] = [ev(f) for f in fl]
    return out


def count_keys(fcs) -> int:
    return sum(len(fc.keyframe_points) for fc in fcs)


def signal_from_object(ob):
    """Dense signal of the object's action: (frames (N,), values (N, M), fcurves, kinds)."""
    import numpy as np

    fcs = action_fcurves(ob)
    if not fcs:
        raise ValueError(f"object {ob.name!r} has no animation")
    lo, hi = fcurve_frame_range(fcs)
    frames = np.arange(math.floor(lo), math.ceil(hi) + 1, dtype=np.float64)
    values = sample_fcurves(fcs, frames)
    kinds = [channel_kind(fc) for fc in fcs]
    return frames, values, fcs, kinds


def tolerance_vector(kinds, rot_deg=0.5, loc=0.01, other=0.01):
    """Per-channel tolerance in native units (radians for Euler angles)."""
    import numpy as np

    tol = []
    for k in kinds:
        if k == "rotation":
            tol.append(math.radians(rot_deg))
        elif k == "location":
            tol.append(loc)
        else:
            tol.append(other)
    return np.asarray(tol)


def _error_by_kind(orig, approx, kinds, reduce) -> dict[str, float]:
    import numpy as np

    err = np.asarray(approx, float) - np.asarray(orig, float)
    kinds = np.asarray(kinds)
    out = {}
    for k in ("rotation", "quaternion", "location", "other"):
        sel = kinds == k
        if sel.any():
            out[k] = float(reduce(err[:, sel]) * (DEG if k == "rotation" else 1.0))
    return out


def errors_by_kind(orig, approx, kinds) -> dict[str, float]:
    """Max abs error per channel kind: rotation in degrees, the rest in native units."""
    import numpy as np

    return _error_by_kind(orig, approx, kinds, lambda e: np.abs(e).max())


def rms_by_kind(orig, approx, kinds) -> dict[str, float]:
    """RMS error per channel kind: rotation in degrees, the rest in native units."""
    import numpy as np

    return _error_by_kind(orig, approx, kinds, lambda e: np.sqrt(np.mean(e**2)))


def distortion(orig, approx) -> float:
    """E_D (Mukai seed eq. 5 / Karni–Gotsman): 100 * ||Y - Y~||_F / ||Y - mean(Y)||_F."""
    import numpy as np

    orig = np.asarray(orig, float)
    num = np.sum((orig - np.asarray(approx, float)) ** 2)
    den = np.sum((orig - orig.mean(axis=0)) ** 2)
    return float(100.0 * math.sqrt(num / den)) if den > 0 else 0.0


def copy_action_with_values(ob, frames, values, name="dense_copy"):
    """A copy of the object's action whose F-curves hold ``values`` (N, M) as one key per frame.

    Used to measure world-space errors of models that are not written as Blender keys.
    """
    import numpy as np

    act = ob.animation_data.action.copy()
    act.name = name
    fcs = action_fcurves(ob, act)
    n = len(frames)
    for j, fc in enumerate(fcs):
        kps = fc.keyframe_points
        kps.clear()
        kps.add(n)
        co = np.empty((n, 2), dtype=np.float32)
        co[:, 0] = frames
        co[:, 1] = values[:, j]
        kps.foreach_set("co", co.ravel())
        kps.foreach_set("interpolation", [_interp_enum(fc, 'LINEAR')] * n)
        fc.update()
    return act


def assign_action(ob, act) -> None:
    """Make ``act`` the object's action (4.4+: its first slot when Blender picked none)."""
    ad = ob.animation_data
    ad.action = act
    if hasattr(ad, "action_slot") and len(getattr(act, "slots", ())) and ad.action_slot is None:
        ad.action_slot = act.slots[0]


@contextmanager
def playing(ob, action):
    """``action`` assigned to ``ob`` inside the block (None: the object's own); then the previous
    action and slot again."""
    ad = ob.animation_data
    old_action, old_slot = ad.action, getattr(ad, "action_slot", None)
    if action is None or action == old_action:
        yield
        return
    assign_action(ob, action)
    try:
        yield
    finally:
        ad.action = old_action
        if old_slot is not None:
            ad.action_slot = old_slot


@contextmanager
def visiting_frames() -> Iterator:
    """Go to other frames of the scene and back.

    Yields ``go_to(frame) -> depsgraph``: sets the scene frame (a fractional frame as its subframe)
    and returns the evaluated depsgraph there. Leaving the block, also by an exception, sets the
    frame and subframe current on entry again. (The extension has its own; the scripts do not use
    the code they measure.)
    """
    import bpy

    scene = bpy.context.scene
    frame0, sub0 = scene.frame_current, scene.frame_subframe

    def go_to(frame):
        whole = math.floor(frame)
        scene.frame_set(int(whole), subframe=float(frame) - whole)
        return bpy.context.evaluated_depsgraph_get()

    try:
        yield go_to
    finally:
        scene.frame_set(frame0, subframe=sub0)


def spread_frames(frames, max_frames: int):
    """At most ``max_frames`` of ``frames``, evenly spread, first and last included."""
    import numpy as np

    frames = np.asarray(frames)
    if len(frames) <= max_frames:
        return frames
    return frames[np.unique(np.linspace(0, len(frames) - 1, max_frames).round().astype(int))]


def bone_world_positions(ob, frames, action=None):
    """World-space head and tail positions of every pose bone at ``frames`` -> (F, B*2, 3).

    Evaluated through the depsgraph (``scene.frame_set``) with ``action`` assigned temporarily.
    """
    import numpy as np

    bones = list(ob.pose.bones)
    out = np.empty((len(frames), 2 * len(bones), 3))
    with visiting_frames() as go_to, playing(ob, action):
        for i, f in enumerate(frames):
            go_to(f)
            mw = ob.matrix_world
            for b, pb in enumerate(bones):
                out[i, 2 * b] = mw @ pb.head
                out[i, 2 * b + 1] = mw @ pb.tail
    return out


def world_error_cm(ob, frames, action_a, action_b, max_frames=200) -> float:
    """Max distance (cm, assuming metres as scene units) between bone heads/tails under two actions."""
    import numpy as np

    frames = spread_frames(frames, max_frames)
    pa = bone_world_positions(ob, frames, action_a)
    pb = bone_world_positions(ob, frames, action_b)
    scale = 100.0 * bpy_unit_scale()
    return float(np.linalg.norm(pa - pb, axis=-1).max() * scale)


def bpy_unit_scale() -> float:
    import bpy

    return float(bpy.context.scene.unit_settings.scale_length or 1.0)


def set_active(ob) -> None:
    import bpy

    for o in bpy.context.view_layer.objects:
        if o is not None:
            o.select_set(o == ob)
    bpy.context.view_layer.objects.active = ob


HUMAN_HEIGHT_M = 1.75


def scale_to_height(ob, metres: float = HUMAN_HEIGHT_M) -> tuple[float, float, float]:
    """Scale an armature object so its rest skeleton (bone heads and tails) is ``metres`` tall, the
    scene's units taken as metres: an object-space bound in cm then means cm on a human, whatever
    units the BVH came in (CMU's cgspeed clips are about 23 units tall, the iClone ones 132 cm).
    Returns the scale it had, to put back."""
    import bpy
    import numpy as np

    rest = [np.array(b.head_local) for b in ob.data.bones] + [np.array(b.tail_local) for b in ob.data.bones]
    height = float(np.ptp(np.array(rest)[:, 2]))
    before = tuple(ob.scale)
    ob.scale = (metres / height,) * 3
    bpy.context.scene.unit_settings.scale_length = 1.0
    bpy.context.view_layer.update()
    return before


def object_override(ob) -> dict:
    """A context override making ``ob`` the active, selected object (for operators)."""
    import bpy

    set_active(ob)
    ctx = {"active_object": ob, "object": ob, "selected_objects": [ob],
           "selected_editable_objects": [ob]}
    win = bpy.context.window or (bpy.context.window_manager.windows[0]
                                 if bpy.context.window_manager.windows else None)
    if win is not None:
        ctx["window"] = win
        ctx["screen"] = win.screen
    return ctx


def graph_editor_override():
    """(window, screen, area, region) of a Graph Editor (the largest area is turned into one)."""
    import bpy

    wm = bpy.context.window_manager
    if not wm.windows:
        raise RuntimeError("no window: Graph Editor operators cannot run")
    win = wm.windows[0]
    area = max(win.screen.areas, key=lambda a: a.width * a.height)
    area.type = 'GRAPH_EDITOR'
    area.ui_type = 'FCURVES'
    space = area.spaces.active
    space.dopesheet.show_only_selected = False
    space.dopesheet.show_hidden = True
    if hasattr(space, "use_only_selected_keyframe_handles"):
        pass
    region = next(r for r in area.regions if r.type == 'WINDOW')
    return dict(window=win, screen=win.screen, area=area, region=region)


def ensure_dir(p: str | os.PathLike) -> Path:
    p = Path(p)
    p.mkdir(parents=True, exist_ok=True)
    return p


# --------------------------------------------------------------------------------------------------
# motion manifolds (loop / blend / compare CLI and benchmark)


def action_fcurves_any(act) -> list:
    """Every F-curve of an action, whichever slot it animates (4.2 legacy and 4.4+ layered actions)."""
    if hasattr(act, "layers") and len(getattr(act, "layers", ())) > 0:
        out = []
        for layer in act.layers:
            for strip in layer.strips:
                for cb in getattr(strip, "channelbags", ()):
                    out.extend(cb.fcurves)
        return out
    legacy = getattr(act, "fcurves", None)
    return list(legacy) if legacy is not None else []


def bvh_frame_time(path: str | os.PathLike) -> float:
    """Seconds per frame from a BVH file's ``Frame Time:`` line (the importer does not keep it)."""
    with open(path, errors="replace") as fh:
        for line in fh:
            if line.strip().lower().startswith("frame time"):
                return float(line.split(":", 1)[1])
    raise ValueError(f"{path}: no 'Frame Time:' line")


def armature_hierarchy(ob) -> tuple[list[str], list[int]]:
    """Pose bone names (``ob.pose.bones`` order) and each bone's parent index (-1 for roots)."""
    names = [pb.name for pb in ob.pose.bones]
    index = {n: i for i, n in enumerate(names)}
    return names, [index[pb.parent.name] if pb.parent is not None else -1 for pb in ob.pose.bones]


def joint_heads(ob, frames):
    """World-space pose bone heads at whole ``frames`` -> (F, B, 3), through the depsgraph."""
    import numpy as np

    n = len(ob.pose.bones)
    out = np.empty((len(frames), n, 3))
    buf = np.empty(3 * n, dtype=np.float32)
    with visiting_frames() as go_to:
        for i, f in enumerate(frames):
            ob_eval = ob.evaluated_get(go_to(int(f)))
            ob_eval.pose.bones.foreach_get("head", buf)
            mw = np.array(ob_eval.matrix_world, dtype=np.float64)
            out[i] = buf.reshape(n, 3).astype(np.float64) @ mw[:3, :3].T + mw[:3, 3]
    return out


def travel_channels(ob, fcs, max_vertical: float = 0.5) -> list[int]:
    """Indices into ``fcs`` of the root's horizontal location channels (object or root bones).

    A location channel travels when its axis, in world space, is mostly horizontal (vertical
    component below ``max_vertical``); for bones the axis comes from ``bone.matrix_local``.
    """
    import numpy as np

    mw = np.array(ob.matrix_world, dtype=np.float64)[:3, :3]
    out = []
    for j, fc in enumerate(fcs):
        if not fc.data_path.endswith("location") or fc.data_path.endswith("delta_location"):
            continue
        if fc.data_path == "location":
            axis = np.eye(3)[:, fc.array_index]
        elif fc.data_path.startswith('pose.bones["') and ob.type == 'ARMATURE':
            name = fc.data_path[len('pose.bones["'):].split('"]', 1)[0]
            bone = ob.data.bones.get(name)
            if bone is None or bone.parent is not None:
                continue
            axis = mw @ np.array(bone.matrix_local, dtype=np.float64)[:3, fc.array_index]
        else:
            continue
        norm = np.linalg.norm(axis)
        if norm > 0 and abs(axis[2]) / norm < max_vertical:
            out.append(j)
    return out
