"""The fit benchmark's inputs and result rows: a :class:`Clip` (dense samples, channel kinds,
tolerances, the Blender object) and :func:`measure`, which turns any method's approximation into a
row of the table with errors measured here, independently of the code under test.
"""

from __future__ import annotations

import _blender_env as be

bpy = be.import_bpy()
be.add_core_to_path()

import numpy as np  # noqa: E402

try:
    import anim_signals  # noqa: E402
    from anim_signals import channels as core_channels  # noqa: E402
except Exception as ex:  # pragma: no cover - reported in the output
    anim_signals = None
    core_channels = None
    CORE_ERROR = repr(ex)
else:
    CORE_ERROR = ""

BEZIER_FLOATS = 6  # a Bezier key stores its co and two handles


class Clip:
    """One benchmark input: dense samples, channel kinds, tolerances and (for Blender data) the object."""

    def __init__(self, name, frames, values, kinds, tol, ob=None, action=None, is_armature=False):
        self.name = name
        self.frames = np.asarray(frames, float)
        self.values = np.asarray(values, float)
        self.kinds = list(kinds)
        self.tol = np.asarray(tol, float)
        self.ob = ob
        self.action = action
        self.is_armature = is_armature
        self.world_frames = None
        self.world_ref = None

    @property
    def shape(self):
        return self.values.shape


def fit_input(clip: Clip):
    """Values as the core sees them: Euler angles unwrapped (no 2*pi jumps)."""
    values = clip.values.copy()
    rot = np.flatnonzero(np.asarray(clip.kinds) == "rotation")
    if rot.size and core_channels is not None:
        values[:, rot] = core_channels.unwrap_angles(values[:, rot])
    return values


BROKEN_ANGLE_DEG = 0.5  # handles further than this from a straight line through the key: broken


def key_stats(fcs, angle_deg: float = BROKEN_ANGLE_DEG) -> tuple[int, int]:
    """(distinct keyed frames over all ``fcs``, broken-handle keys), read from Blender's F-curves.

    A key is broken when it is an inner key (not a curve's first or last) and the directions from its
    left handle to the key and from the key to its right handle differ by more than ``angle_deg``,
    measured in the Graph Editor's (frame, value) units at an equal scale.
    """
    frames: set[float] = set()
    broken = 0
    for fc in fcs:
        kps = fc.keyframe_points
        n = len(kps)
        if not n:
            continue
        arr = {}
        for attr in ("co", "handle_left", "handle_right"):
            buf = np.empty(2 * n, dtype=np.float32)
            kps.foreach_get(attr, buf)
            arr[attr] = buf.reshape(n, 2).astype(np.float64)
        frames.update(np.round(arr["co"][:, 0], 4).tolist())
        if n < 3:
            continue
        co = arr["co"][1:-1]
        a = co - arr["handle_left"][1:-1]
        b = arr["handle_right"][1:-1] - co
        ang = np.degrees(np.abs(np.arctan2(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0], (a * b).sum(axis=1))))
        broken += int(np.count_nonzero(ang > angle_deg))
    return len(frames), broken


def _outside(clip: Clip, approx) -> dict | None:
    """Frames x curves strictly outside the tolerance (no slack), with the worst one named."""
    err = np.abs(approx - clip.values)
    over = err > clip.tol
    if not over.any():
        return None
    ratio = np.where(over, err / clip.tol, 0.0)
    i, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    labels = getattr(clip, "labels", None)
    label = labels[j] if labels is not None else f"curve {j}"
    return {"count": int(over.sum()), "curves": int(over.any(axis=0).sum()), "worst_curve": label,
            "worst_frame": float(clip.frames[i]), "worst_error": float(err[i, j]), "tolerance": float(clip.tol[j])}


def measure(clip: Clip, approx, *, method, keys, floats, seconds, action=None, note="", args=None, fcurves=None):
    """A result row: E_D, RMS and max error by kind (rotation in degrees), world cm for armatures.

    ``action``: the method's keys in Blender, for the world-space error (default: a copy of the
    clip's action holding ``approx`` on every frame). ``fcurves``: the method's F-curves in Blender,
    for the keyed frames and broken handles (:func:`key_stats`; None: not counted).
    """
    approx = np.asarray(approx, float)
    keyed_frames, broken = key_stats(fcurves) if fcurves is not None else (None, None)
    row = {
        "clip": clip.name,
        "method": method,
        "keys": int(keys) if keys is not None else None,
        "floats": int(floats) if floats is not None else None,
        "E_D": be.distortion(clip.values, approx),
        "rms": be.rms_by_kind(clip.values, approx, clip.kinds),
        "max_error": be.errors_by_kind(clip.values, approx, clip.kinds),
        "within_tolerance": bool(np.all(np.abs(approx - clip.values) <= clip.tol * (1 + 1e-3) + 1e-5)),
        "world_cm": None,
        "seconds": seconds,
        "note": note,
        "keyed_frames": keyed_frames,
        "broken_keys": broken,
        "outside": _outside(clip, approx),
    }
    if clip.is_armature and clip.ob is not None and args is not None and not args.no_world:
        tmp = None
        if action is None:
            action = tmp = be.copy_action_with_values(clip.ob, clip.frames, approx, name=f"bench_{method}")
        pos = be.bone_world_positions(clip.ob, clip.world_frames, action)
        row["world_cm"] = float(np.linalg.norm(pos - clip.world_ref, axis=-1).max() * 100.0 * be.bpy_unit_scale())
        if tmp is not None:
            bpy.data.actions.remove(tmp)
    return row


def na_row(clip, method, note):
    """A row for a method that could not run (``note`` says why)."""
    return {"clip": clip.name, "method": method, "keys": None, "floats": None, "E_D": None, "rms": {},
            "max_error": {}, "within_tolerance": None, "world_cm": None, "seconds": None, "note": note,
            "keyed_frames": None, "broken_keys": None, "outside": None}
