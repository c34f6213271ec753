"""F-curve keys as numpy arrays: reading and sampling, writing, and curve modifiers.

Owns everything done to one F-curve's keyframes: their frames (:func:`read_key_frames`), sampling
several curves on one frame grid (:func:`sample_curves`, :func:`evaluate_curves`), replacing the keys
with exact Bezier keys (:func:`write_bezier`) or one key per frame (:func:`write_dense`,
:func:`write_dense_linear`), and the curve's modifiers (Cycles). Keyframes are read and written in
bulk with ``foreach_get`` / ``foreach_set`` (Blender stores them as float32); finding, creating and
removing the curves themselves is :mod:`.actions`' job.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import bpy
import numpy as np

FRAME_RESOLUTION = 1e-4
"""Frames closer than this are one frame (keys are stored as float32)."""


def _read_pairs(kps: Any, name: str, n: int) -> np.ndarray:
    """A (n, 2) float64 copy of a keyframe vector property (``co``, ``handle_left``, ...)."""
    buf = np.empty(2 * n, dtype=np.float32)
    kps.foreach_get(name, buf)
    return buf.reshape(n, 2).astype(np.float64)


def read_key_frames(fc: bpy.types.FCurve) -> np.ndarray:
    """The frames of the curve's keys: (k,) float64."""
    kps = fc.keyframe_points
    n = len(kps)
    return _read_pairs(kps, "co", n)[:, 0] if n else np.empty(0)


def count_keys(fcurves: Iterable[bpy.types.FCurve]) -> int:
    """The number of keys of all the curves together."""
    return int(sum(len(fc.keyframe_points) for fc in fcurves))


def frame_grid(fcurves: Sequence[bpy.types.FCurve]) -> np.ndarray:
    """Union of the curves' key frames and every whole frame in between: (N,) float64, increasing,
    frames closer than :data:`FRAME_RESOLUTION` merged."""
    parts = [p for p in (read_key_frames(fc) for fc in fcurves) if p.size]
    if not parts:
        return np.empty(0)
    frames = np.unique(np.concatenate(parts))
    lo, hi = np.ceil(frames[0]), np.floor(frames[-1])
    if hi >= lo:
        frames = np.union1d(frames, np.arange(lo, hi + 1.0))
    if frames.size > 1:
        keep = np.concatenate(([True], np.diff(frames) > FRAME_RESOLUTION))
        frames = frames[keep]
    return frames


def sample_curves(fcurves: Sequence[bpy.types.FCurve], frames: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sample curves on a common frame grid.

    Parameters
    ----------
    fcurves
        M curves.
    frames
        (N,) frames; default :func:`frame_grid` of the curves.

    Returns
    -------
    frames, values
        (N,) and (N, M) float64. A curve with a key on every grid frame and no modifiers (dense
        baked or mocap data) gives its key values directly; any other is evaluated with
        ``FCurve.evaluate`` (interpolation, handles and modifiers honoured).
    """
    if frames is None:
        frames = frame_grid(fcurves)
    frames = np.asarray(frames, dtype=np.float64)
    values = np.empty((frames.size, len(fcurves)), dtype=np.float64)
    for j, fc in enumerate(fcurves):
        kps = fc.keyframe_points
        n = len(kps)
        if n == frames.size and n and not len(fc.modifiers):
            co = _read_pairs(kps, "co", n)
            if np.allclose(co[:, 0], frames, atol=FRAME_RESOLUTION, rtol=0):
                values[:, j] = co[:, 1]
                continue
        ev = fc.evaluate
        values[:, j] = [ev(f) for f in frames.tolist()]
    return frames, values


def evaluate_curves(fcurves: Sequence[bpy.types.FCurve], frame: float) -> np.ndarray:
    """The curves' values at one frame (``FCurve.evaluate``): (len(fcurves),) float64."""
    return np.array([fc.evaluate(frame) for fc in fcurves], dtype=np.float64)


def _enum_values(struct: Any, prop: str) -> dict[str, int]:
    return {e.identifier: e.value for e in struct.bl_rna.properties[prop].enum_items}


def _handle_type_values() -> dict[str, int]:
    return _enum_values(bpy.types.Keyframe, "handle_left_type")


def _interpolation_values() -> dict[str, int]:
    return _enum_values(bpy.types.Keyframe, "interpolation")


def _as_type_ints(types: Any, n: int, table: dict[str, int]) -> np.ndarray:
    arr = np.asarray(types)
    if arr.dtype.kind in "iu":
        out = arr.astype(np.int32)
    else:
        out = np.array([table[str(t)] for t in arr.tolist()], dtype=np.int32)
    if out.shape != (n,):
        raise ValueError(f"expected {n} handle types, got shape {out.shape}")
    return out


def _replace_keys(fc: bpy.types.FCurve, co: np.ndarray, handle_left: np.ndarray, handle_right: np.ndarray,
                  handle_left_type: np.ndarray, handle_right_type: np.ndarray, interpolation: int) -> None:
    """Replace all keys of ``fc`` with n keys ((n, 2) positions, (n,) enum ints), then update."""
    n = co.shape[0]
    kps = fc.keyframe_points
    kps.clear()
    if n:
        kps.add(n)
        kps.foreach_set("co", co.astype(np.float32).ravel())
        kps.foreach_set("handle_left", handle_left.astype(np.float32).ravel())
        kps.foreach_set("handle_right", handle_right.astype(np.float32).ravel())
        kps.foreach_set("handle_left_type", handle_left_type)
        kps.foreach_set("handle_right_type", handle_right_type)
        kps.foreach_set("interpolation", np.full(n, interpolation, dtype=np.int32))
        kps.foreach_set("type", np.zeros(n, dtype=np.int32))  # KEYFRAME
    fc.update()  # sorts the keys and recomputes automatic handles


def write_bezier(fc: bpy.types.FCurve, co: np.ndarray, handle_left: np.ndarray, handle_right: np.ndarray,
                 handle_type: Any) -> None:
    """Replace all keys of ``fc`` with the given Bezier keys (interpolation BEZIER).

    Parameters
    ----------
    co, handle_left, handle_right
        (k, 2) frame, value.
    handle_type
        (k,) handle types of both sides, as identifiers ('FREE', ...) or enum ints. They must be
        FREE or ALIGNED (VECTOR for straight segments) for ``fc.update()`` to keep the exact handle
        positions: AUTO types would be recomputed by Blender.
    """
    co = np.ascontiguousarray(co, dtype=np.float64).reshape(-1, 2)
    n = co.shape[0]
    hl = np.ascontiguousarray(handle_left, dtype=np.float64).reshape(n, 2)
    hr = np.ascontiguousarray(handle_right, dtype=np.float64).reshape(n, 2)
    types = _as_type_ints(handle_type, n, _handle_type_values())
    _replace_keys(fc, co, hl, hr, types, types, _interpolation_values()["BEZIER"])


def _write_key_per_frame(fc: bpy.types.FCurve, frames: np.ndarray, values: np.ndarray, handle: str,
                         interpolation: str) -> None:
    frames = np.asarray(frames, dtype=np.float64).ravel()
    values = np.asarray(values, dtype=np.float64).ravel()
    if frames.shape != values.shape:
        raise ValueError(f"{frames.size} frames but {values.size} values")
    co = np.column_stack([frames, values])
    types = np.full(frames.size, _handle_type_values()[handle], dtype=np.int32)
    _replace_keys(fc, co, co, co, types, types, _interpolation_values()[interpolation])


def write_dense(fc: bpy.types.FCurve, frames: np.ndarray, values: np.ndarray) -> None:
    """Replace the keys of ``fc`` with one Bezier key per frame ((n,) frames and values): the curve
    passes through every value, with auto-clamped handles (computed cycle-aware by Blender when the
    curve has a Cycles modifier)."""
    _write_key_per_frame(fc, frames, values, "AUTO_CLAMPED", "BEZIER")


def write_dense_linear(fc: bpy.types.FCurve, frames: np.ndarray, values: np.ndarray) -> None:
    """Replace the keys of ``fc`` with one LINEAR key per frame (a bake: the curve stays between
    neighbouring values)."""
    _write_key_per_frame(fc, frames, values, "VECTOR", "LINEAR")


def has_cycles(fc: bpy.types.FCurve) -> bool:
    """The curve has a Cycles modifier."""
    return any(m.type == "CYCLES" for m in fc.modifiers)


def modifier_types(fc: bpy.types.FCurve) -> set[str]:
    """The types of the curve's modifiers ('CYCLES', 'NOISE', ...)."""
    return {m.type for m in fc.modifiers}


def clear_modifiers(fc: bpy.types.FCurve) -> None:
    """Remove every modifier of the curve."""
    for m in list(fc.modifiers):
        fc.modifiers.remove(m)


def add_cycles_modifier(fc: bpy.types.FCurve, mode: str = "REPEAT_OFFSET") -> None:
    """One Cycles modifier (before and after the keys) replacing any existing one.

    REPEAT_OFFSET adds the curve's last-minus-first value per cycle (locomotion keeps moving), and
    equals REPEAT on curves whose last key has the first key's value.
    """
    for m in list(fc.modifiers):
        if m.type == "CYCLES":
            fc.modifiers.remove(m)
    mod: Any = fc.modifiers.new("CYCLES")
    mod.mode_before = mode
    mod.mode_after = mode
    fc.update()
