"""Live Link Face CSV recordings into Blender: shape-key animation on an ARKit mesh.

:func:`import_live_link` reads the CSV with the core (``anim_signals.motiondb.livelink``),
resamples it to the scene's frame rate and writes one shape-key action per take on the active
mesh with ARKit-named shape keys, or on a generated face. Raises :class:`LiveLinkImportError`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import bpy
import numpy as np

from ...anim_signals.motiondb import generated_face, livelink, match_names
from ..blender_data.actions import id_read_only_reason
from ..blender_data.frames import scene_fps
from ..blender_data.meshes import new_face_object
from ..blender_data.named_channels import write_named_channels
from ..blender_data.shape_keys import key_block_names
from ..common import InputError
from .properties import SHAPE_KEYS

__all__ = ["FACE_NAME", "ImportSummary", "LiveLinkImportError", "arkit_target", "create_face", "import_live_link"]

FACE_NAME = "ARKit Face"


class LiveLinkImportError(InputError):
    """A CSV that cannot be imported: reported to the user, nothing changed."""


@dataclass
class ImportSummary:
    """What an import wrote: the object and action, frames and channels, and messages for the user
    (the first one describes the take; the others are warnings)."""

    object_name: str
    action_name: str
    frames: int
    channels: int
    messages: list[str] = field(default_factory=list)


def create_face(name: str = FACE_NAME, collection=None):
    """A new mesh object: the core's generated face with the 52 ARKit shape keys."""
    face = generated_face()
    keys = [(n, face.shape_keys[n]) for n in livelink.ARKIT_BLENDSHAPES]
    return new_face_object(name, face.vertices, face.faces, keys, collection)


def arkit_target(ob) -> dict[str, str] | None:
    """ARKit name -> shape-key name on ``ob`` (None when ``ob`` is no mesh with ARKit-named keys)."""
    if ob is None or ob.type != "MESH":
        return None
    mapping = match_names(livelink.ARKIT_BLENDSHAPES, key_block_names(ob))
    return mapping or None


def import_live_link(context, filepath: str, *, frame_start: int = 1, set_frame_range: bool = True,
                     max_gap: float = 0.25, create: bool = True) -> ImportSummary:
    """Import one Live Link Face CSV take as shape-key animation.

    Parameters
    ----------
    context : the Blender context (its active object is the target when it has ARKit shape keys).
    filepath : the CSV file (Blender-relative paths such as ``//take.csv`` are resolved).
    frame_start : scene frame of the recording's first frame.
    set_frame_range : set the scene's frame range to the recording.
    max_gap : gaps longer than this (seconds) are reported; every gap is filled linearly.
    create : without an ARKit target, generate a face (else raise).

    Returns
    -------
    ImportSummary
        The action (named after the file, one LINEAR key per frame) and the messages to report.

    Raises
    ------
    LiveLinkImportError
        Missing or unreadable file, no ARKit columns, no target, or a read-only target.
    """
    if not filepath or not os.path.isfile(bpy.path.abspath(filepath)):
        raise LiveLinkImportError(f"No such file: {filepath!r}")
    try:
        rec = livelink.read_csv(bpy.path.abspath(filepath))
    except livelink.LiveLinkError as err:
        raise LiveLinkImportError(str(err)) from err
    scene = context.scene
    ob = context.active_object
    mapping = arkit_target(ob)
    if mapping is None:
        if not create:
            raise LiveLinkImportError("The active object is not a mesh with ARKit-named shape keys")
        ob = create_face(FACE_NAME)
        context.view_layer.objects.active = ob
        ob.select_set(True)
        mapping = arkit_target(ob)
        assert mapping is not None
    if (reason := id_read_only_reason(ob)) is not None:
        raise LiveLinkImportError(reason)
    cols = [j for j, n in enumerate(rec.names) if n in mapping]
    if not cols:
        raise LiveLinkImportError(f"{os.path.basename(filepath)} has no ARKit blendshape columns")
    fps = scene_fps(scene)
    try:
        res = livelink.resample(rec.times, rec.values[:, cols], fps, max_gap=max_gap, rate=rec.rate)
    except ValueError as err:
        raise LiveLinkImportError(f"{os.path.basename(filepath)}: {err}") from err
    frames = frame_start + np.arange(res.times.size, dtype=np.float64)
    names = [mapping[rec.names[j]] for j in cols]
    key = ob.data.shape_keys
    stem = os.path.splitext(os.path.basename(filepath))[0]
    action = write_named_channels(key, stem, SHAPE_KEYS, frames, res.values, names)
    action["anim_signals_source"] = os.path.basename(filepath)
    if set_frame_range:
        scene.frame_start, scene.frame_end = int(frames[0]), int(frames[-1])
    msgs = [f"{stem}: {rec.summary()}; resampled to {fps:g} fps ({frames.size} frames)"]
    if rec.gaps or rec.nan_rows.size:
        msgs.append(f"{res.n_filled} frame(s) filled by linear interpolation"
                    + (f", {res.n_long_gap} of them in gaps longer than {max_gap:g} s" if res.n_long_gap else ""))
    msgs += rec.warnings
    return ImportSummary(ob.name, action.name, int(frames.size), len(names), msgs)
