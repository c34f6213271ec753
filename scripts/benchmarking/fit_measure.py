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


def measure(clip: Clip, approx, *, method, keys, floats, seconds, action=None, note="", args=None):
    """A result row: E_D, RMS and max error by kind (rotation in degrees), world cm for armatures.

    ``action``: the method's keys in Blender, for the world-space error (default: a copy of the
    clip's action holding ``approx`` on every frame).
    """
    approx = np.asarray(approx, float)
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
            "max_error": {}, "within_tolerance": None, "world_cm": None, "seconds": None, "note": note}
