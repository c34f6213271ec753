"""Live Link Face CSV recordings into Blender: shape-key animation on an ARKit mesh.

:func:`import_live_link` reads the CSV with the core (``anim_signals.motiondb.livelink``),
resamples it to the scene's frame rate and writes one shape-key action per take on the active
mesh with ARKit-named shape keys, or on a generated face. Raises :class:`LiveLinkImportError`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from ...anim_signals.motiondb import generated_face, livelink, match_names
from ..blender_data.actions import id_read_only_reason
from ..blender_data.frames import scene_fps
from ..blender_data.meshes import new_face_object
from ..blender_data.named_channels import write_named_channels
from ..blender_data.shape_keys import key_block_names
from ..common import InputError
from ..common.text import short_list
from ..common.transaction import current_transaction
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


CELL_LIMIT = 10.0
"""Largest blendshape weight taken from a CSV cell: Blender's widest shape-key slider range. ARKit
weights lie in [0, 1]; a cell beyond this (1e308, say) is a damaged cell, not a pose."""


def _usable_columns(rec, mapping: dict[str, str], filename: str) -> tuple[list[int], np.ndarray, list[str]]:
    """The ARKit columns of ``rec`` that hold numbers: their indices, their values with damaged
    cells (non-finite or beyond :data:`CELL_LIMIT`) as missing, and warnings. Raises
    :class:`LiveLinkImportError` when no ARKit column can be used, naming why."""
    cols = [j for j, n in enumerate(rec.names) if n in mapping]
    if not cols:
        raise LiveLinkImportError(f"{filename} has no ARKit blendshape columns (its columns: "
                                  f"{short_list(rec.names)})")
    values = np.array(rec.values[:, cols], dtype=np.float64)
    warnings: list[str] = []
    with np.errstate(invalid="ignore"):
        damaged = np.isfinite(values) & (np.abs(values) > CELL_LIMIT)
    if damaged.any():
        hit = [rec.names[cols[j]] for j in np.flatnonzero(damaged.any(axis=0))]
        warnings.append(f"{int(damaged.sum())} cell(s) beyond +-{CELL_LIMIT:g} (not a blendshape weight) treated as "
                        f"missing and filled from their neighbours: {short_list(hit)}")
        values[damaged] = np.nan
    empty = ~np.isfinite(values).any(axis=0)
    if empty.all():
        raise LiveLinkImportError(f"{filename}: no ARKit blendshape column holds a number (every cell empty or text): "
                                  f"{short_list([rec.names[j] for j in cols])}")
    if empty.any():
        warnings.append(f"{int(empty.sum())} ARKit column(s) without a single number left out: "
                        f"{short_list([rec.names[cols[j]] for j in np.flatnonzero(empty)])}")
        keep = ~empty
        cols = [c for c, ok in zip(cols, keep, strict=True) if ok]
        values = values[:, keep]
    return cols, values, warnings


def _resample_columns(rec, values: np.ndarray, fps: float, max_gap: float):
    """Each column resampled on its own (:func:`livelink.resample`): a cell missing in one channel
    does not make the whole row missing for the others. Returns (times, values, frames filled in
    some channel, of them in long gaps)."""
    parts = [livelink.resample(rec.times, values[:, [j]], fps, max_gap=max_gap, rate=rec.rate)
             for j in range(values.shape[1])]
    out = np.column_stack([p.values[:, 0] for p in parts])
    filled = np.logical_or.reduce([p.filled for p in parts])
    long_gap = np.logical_or.reduce([p.long_gap for p in parts])
    return parts[0].times, out, int(filled.sum()), int(long_gap.sum())


def _take_summary(rec, values: np.ndarray) -> str:
    """The take for a report (the rows without data counted on the channels imported)."""
    text = f"{rec.n_frames} frames, {rec.rate:.3g} fps, {rec.duration:.2f} s"
    if rec.gaps:
        text += f"; {rec.dropped_frames} dropped frame(s) in {len(rec.gaps)} gap(s)"
    missing_rows = int((~np.isfinite(values)).any(axis=1).sum())
    if missing_rows:
        text += f"; {missing_rows} row(s) without tracking data (NaN)"
    if rec.duplicates:
        text += f"; {rec.duplicates} repeated timecode(s) dropped"
    return text


def _target_refusal(ob) -> str | None:
    """Why the shape keys of the ARKit mesh ``ob`` cannot take a new action (read-only, tweak mode)."""
    key = ob.data.shape_keys
    reason = id_read_only_reason(ob, ob.data, key)
    if reason is None and getattr(getattr(key, "animation_data", None), "use_tweak_mode", False):
        reason = f'The shape keys of "{ob.name}" are in NLA tweak mode: exit tweak mode first'
    return reason


def import_live_link(context, filepath: str, *, frame_start: int = 1, set_frame_range: bool = True,
                     max_gap: float = 0.25, create: bool = True) -> ImportSummary:
    """Import one Live Link Face CSV take as shape-key animation.

    Every check comes before anything is written (the face is generated last); the caller runs it
    in a transaction (the operator is ``@transactional``), so a failure while writing leaves
    nothing either.

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
        Missing or unreadable file, no usable ARKit columns, no target, a read-only target or one in
        NLA tweak mode, frames outside Blender's range.
    """
    if not filepath or not os.path.isfile(bpy.path.abspath(filepath)):
        raise LiveLinkImportError(f"No such file: {filepath!r}")
    if not (math.isfinite(max_gap) and max_gap >= 0.0):
        raise LiveLinkImportError(f"Max Gap must be zero or a positive number of seconds, got {max_gap:g}")
    filename = os.path.basename(filepath)
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
        ob = None  # a face generated below, once the take is known to be good
        mapping = {n: n for n in livelink.ARKIT_BLENDSHAPES}
    elif (reason := _target_refusal(ob)) is not None:
        raise LiveLinkImportError(reason)
    cols, values, warnings = _usable_columns(rec, mapping, filename)
    fps = scene_fps(scene)
    try:
        times, res_values, n_filled, n_long_gap = _resample_columns(rec, values, fps, max_gap)
    except ValueError as err:
        raise LiveLinkImportError(f"{filename}: {err}") from err
    frames = frame_start + np.arange(times.size, dtype=np.float64)
    frame_end: Any = bpy.types.Scene.bl_rna.properties["frame_end"]
    limit = int(frame_end.hard_max)
    if frames[0] < -limit or frames[-1] > limit:
        raise LiveLinkImportError(f"The take's frames {frames[0]:g}-{frames[-1]:g} lie outside Blender's frames "
                                  f"-{limit}..{limit}: choose another Start Frame")
    if ob is None:
        ob = create_face(FACE_NAME)
        context.view_layer.objects.active = ob
        ob.select_set(True)
        mapping = arkit_target(ob) or mapping
    names = [mapping[rec.names[j]] for j in cols]
    key = ob.data.shape_keys
    stem = os.path.splitext(filename)[0]
    tx = current_transaction()
    tx.keep_action(key)
    action = write_named_channels(key, stem, SHAPE_KEYS, frames, res_values, names)
    action["anim_signals_source"] = filename
    if set_frame_range:
        tx.keep(scene, "frame_start", "frame_end")
        scene.frame_start, scene.frame_end = int(frames[0]), int(frames[-1])
    msgs = [f"{stem}: {_take_summary(rec, values)}; resampled to {fps:g} fps ({frames.size} frames)"]
    if n_filled:
        msgs.append(f"{n_filled} frame(s) filled by linear interpolation"
                    + (f", {n_long_gap} of them in gaps longer than {max_gap:g} s" if n_long_gap else ""))
    msgs += rec.warnings + warnings
    return ImportSummary(ob.name, action.name, int(frames.size), len(names), msgs)
