"""F-curve keys as numpy arrays: reading and sampling, writing, and curve modifiers.

Owns everything done to one F-curve's keyframes: their frames (:func:`read_key_frames`), sampling
several curves on one frame grid (:func:`sample_curves`, :func:`evaluate_curves`), replacing the keys
with exact Bezier keys (:func:`write_bezier`) or one key per frame (:func:`write_dense`,
:func:`write_dense_linear`), and the curve's modifiers (Cycles). Keyframes are read and written in
bulk with ``foreach_get`` / ``foreach_set`` (Blender stores them as float32); finding, creating and
removing the curves themselves is :mod:`.actions`' job.

Two rules hold for every tool, here once:

- **What is read is bounded and finite.** :func:`sample_curves` refuses keys at NaN or infinite
  frames or values, and refuses to sample more whole frames than :func:`sampling_limit` allows for
  the keys it has (a stray key far from the others would otherwise have every frame in between
  sampled: a key at frame 1e5 cost 84 s, at 3e7 11 GB). The :class:`KeyframeError` names the curve
  and the stray key's frame and says what to do.
- **What is written is finite.** :func:`write_bezier` and the dense writers check every position
  and handle (as the float32 Blender stores) before the first key is replaced, and raise
  :class:`KeyframeError` instead of writing NaN or infinity.

:func:`keep_keys` snapshots a curve's keys (and its Cycles modifiers) and returns the function that
puts them back, for a tool's transaction to call when the tool fails after writing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import bpy
import numpy as np

FRAME_RESOLUTION = 1e-4
"""Frames closer than this are one frame (keys are stored as float32)."""

FREE_SAMPLED_FRAMES = 10_000
"""Whole frames a tool may always sample, whatever the keys (7 minutes at 24 fps; reading them
takes well under a second per curve)."""

SAMPLED_FRAMES_PER_KEY = 100
"""Beyond :data:`FREE_SAMPLED_FRAMES`, at most this many sampled whole frames per keyed frame.
Hand keying puts keys every few frames and holds last seconds, mocap and bakes a key on every
frame: 100 frames (4 s at 24 fps) per key on average is sparser than any of them. More means
frames far from every key, almost always one stray key (a typo in a frame field) whose distance to
the others would all be sampled."""


class KeyframeError(ValueError):
    """Keys a tool cannot read or write: a key at a NaN or infinite frame or value, a key so far
    from the others that sampling in between is unbounded, or a result that is not finite. The
    message names the curve (and the key's frame) and says what to do."""


def curve_label(fc: bpy.types.FCurve) -> str:
    """``'location[0]' of action "Walk"``: a curve as messages name it."""
    action = getattr(fc, "id_data", None)
    where = f' of action "{action.name}"' if action is not None else ""
    return f"'{fc.data_path}[{fc.array_index}]'{where}"


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


def distinct_frames(frames: np.ndarray) -> np.ndarray:
    """The increasing distinct frames of ``frames``, those closer than :data:`FRAME_RESOLUTION` merged."""
    frames = np.unique(np.asarray(frames, dtype=np.float64))
    if frames.size > 1:
        frames = frames[np.concatenate(([True], np.diff(frames) > FRAME_RESOLUTION))]
    return frames


def count_key_frames(fc: bpy.types.FCurve) -> int:
    """On how many distinct frames the curve has keys (several keys on one frame count once)."""
    return int(distinct_frames(read_key_frames(fc)).size)


def check_keys_finite(fc: bpy.types.FCurve, co: np.ndarray | None = None) -> None:
    """Raise :class:`KeyframeError` naming the curve when a key's frame or value is NaN or
    infinite (``co``: its (k, 2) keys when already read)."""
    if co is None:
        co = _read_pairs(fc.keyframe_points, "co", len(fc.keyframe_points))
    bad = ~np.isfinite(co)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad.any(axis=1))[0])
    frame, value = co[i]
    if not np.isfinite(frame):
        raise KeyframeError(f"Curve {curve_label(fc)} has a key at frame {frame:g}: delete that key "
                            "(or give it a finite frame) first")
    raise KeyframeError(f"Curve {curve_label(fc)} has a key with the value {value:g} at frame {frame:g}: delete "
                        "that key (or give it a finite value) first")


def sampling_limit(n_key_frames: int) -> int:
    """How many whole frames a tool may sample of curves with keys on ``n_key_frames`` distinct
    frames: :data:`FREE_SAMPLED_FRAMES`, or :data:`SAMPLED_FRAMES_PER_KEY` per keyed frame."""
    return max(FREE_SAMPLED_FRAMES, SAMPLED_FRAMES_PER_KEY * int(n_key_frames))


def _stray_key(keys: list[tuple[float, Any]]) -> tuple[float, Any, float, float, int] | None:
    """Across the largest gap between keyed frames, the side with fewer keys when they are a small
    minority: (its key farthest out, that key's curve, the others' first and last frame, how many
    keys lie out there). None when no such gap explains the span."""
    frames = np.array([f for f, _ in keys])
    order = np.argsort(frames, kind="stable")
    frames = frames[order]
    gaps = np.diff(frames)
    if gaps.size == 0:
        return None
    g = int(np.argmax(gaps))
    left, right = g + 1, frames.size - g - 1
    if min(left, right) > max(1, frames.size // 10):
        return None
    if right <= left:  # stray keys after the others: name the last one
        i = int(order[-1])
        return frames[-1], keys[i][1], frames[0], frames[g], right
    i = int(order[0])
    return frames[0], keys[i][1], frames[g + 1], frames[-1], left


def check_sampled_span(fcurves: Sequence[bpy.types.FCurve], lo: float, hi: float, *, n_frames: int | None = None,
                       key_frames: Sequence[np.ndarray] | None = None) -> None:
    """Refuse sampling every whole frame from ``lo`` to ``hi`` of ``fcurves`` (or ``n_frames`` frames
    spread over them) when that is more than :func:`sampling_limit` allows for their keys
    (``key_frames``: each curve's key frames when already read).

    Raises
    ------
    KeyframeError
        Naming the stray key (curve and frame) when one key, or a few, lie far from the others;
        else naming the range and the number of keyed frames.
    """
    if n_frames is None:
        n_frames = int(np.floor(hi) - np.ceil(lo)) + 1 if hi >= lo else 0
    frames_of = list(key_frames) if key_frames is not None else [read_key_frames(fc) for fc in fcurves]
    keyed = distinct_frames(np.concatenate(frames_of)) if frames_of else np.empty(0)
    limit = sampling_limit(keyed.size)
    if n_frames <= limit:
        return
    keys = [(float(f), fc) for fc, fs in zip(fcurves, frames_of, strict=True) for f in distinct_frames(fs)]
    stray = None
    if keys and lo >= keyed[0] - 1.0 and hi <= keyed[-1] + 1.0:  # sampling the keys' own span
        stray = _stray_key(keys)
        if stray is not None and int(np.floor(stray[3]) - np.ceil(stray[2])) + 1 > limit:
            stray = None  # the others alone span too much: no single stray key to blame
    if stray is not None:
        frame, fc, first, last, count = stray
        more = f" ({count} keys lie out there)" if count > 1 else ""
        raise KeyframeError(
            f"Curve {curve_label(fc)} has a key at frame {frame:g}, far from the others (frames {first:g}-{last:g})"
            f"{more}: every frame in between would be sampled ({n_frames} frames; at most {limit} for keys on "
            f"{keyed.size} frames). Delete that key or move it next to the others"
        )
    raise KeyframeError(
        f"Frames {lo:g}-{hi:g} ({n_frames} frames) would be sampled, but the curves have keys on only {keyed.size} "
        f"frame(s): at most {limit} frames are read ({SAMPLED_FRAMES_PER_KEY} per keyed frame, "
        f"{FREE_SAMPLED_FRAMES} always). Narrow the frame range"
    )


def frame_grid(fcurves: Sequence[bpy.types.FCurve]) -> np.ndarray:
    """Union of the curves' key frames and every whole frame in between: (N,) float64, increasing,
    frames closer than :data:`FRAME_RESOLUTION` merged.

    Raises :class:`KeyframeError` for keys at non-finite frames and for a span
    :func:`check_sampled_span` refuses (a stray key far from the others)."""
    return _frame_grid(fcurves, [_read_pairs(fc.keyframe_points, "co", len(fc.keyframe_points)) for fc in fcurves])


def _frame_grid(fcurves: Sequence[bpy.types.FCurve], cos: Sequence[np.ndarray]) -> np.ndarray:
    for fc, co in zip(fcurves, cos, strict=True):
        check_keys_finite(fc, co)
    parts = [co[:, 0] for co in cos if co.size]
    if not parts:
        return np.empty(0)
    frames = np.unique(np.concatenate(parts))
    lo, hi = np.ceil(frames[0]), np.floor(frames[-1])
    if hi >= lo:
        check_sampled_span(fcurves, frames[0], frames[-1], key_frames=[co[:, 0] for co in cos])
        frames = np.union1d(frames, np.arange(lo, hi + 1.0))
    return distinct_frames(frames)


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

    Raises
    ------
    KeyframeError
        A key at a NaN or infinite frame or value (naming the curve); more frames than
        :func:`sampling_limit` allows for the curves' keys (naming the stray key, see
        :func:`check_sampled_span`); frames that are not finite.
    """
    cos = [_read_pairs(fc.keyframe_points, "co", len(fc.keyframe_points)) for fc in fcurves]
    if frames is None:
        frames = _frame_grid(fcurves, cos)
    else:
        for fc, co in zip(fcurves, cos, strict=True):
            check_keys_finite(fc, co)
        frames = np.asarray(frames, dtype=np.float64).ravel()
        if not np.isfinite(frames).all():
            raise KeyframeError("The frames to sample are not all finite")
        if frames.size:
            check_sampled_span(fcurves, float(frames.min()), float(frames.max()), n_frames=int(frames.size),
                               key_frames=[co[:, 0] for co in cos])
    frames = np.asarray(frames, dtype=np.float64)
    values = np.empty((frames.size, len(fcurves)), dtype=np.float64)
    for j, (fc, co) in enumerate(zip(fcurves, cos, strict=True)):
        n = co.shape[0]
        if n == frames.size and n and not len(fc.modifiers):
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


def _check_writable(fc: bpy.types.FCurve, **arrays: np.ndarray) -> dict[str, np.ndarray]:
    """The arrays as the float32 Blender stores; :class:`KeyframeError` naming the curve when one
    is NaN or infinite there (float64 values beyond 3.4e38 too), before anything is written."""
    out = {}
    for name, arr in arrays.items():
        with np.errstate(over="ignore", invalid="ignore"):
            stored = np.asarray(arr, dtype=np.float64).astype(np.float32)
        bad = ~np.isfinite(stored)
        if bad.any():
            row = int(np.flatnonzero(bad.reshape(stored.shape[0], -1).any(axis=1))[0])
            raise KeyframeError(
                f"Not writing curve {curve_label(fc)}: the result's key {row} has a {name.replace('_', ' ')} "
                f"({', '.join(f'{v:g}' for v in np.asarray(arr)[row].ravel())}) that is not a finite float32 "
                "(NaN, infinite or beyond 3.4e38); nothing was written to it"
            )
        out[name] = stored
    return out


def _replace_keys(fc: bpy.types.FCurve, co: np.ndarray, handle_left: np.ndarray, handle_right: np.ndarray,
                  handle_left_type: np.ndarray, handle_right_type: np.ndarray, interpolation: int) -> None:
    """Replace all keys of ``fc`` with n keys ((n, 2) positions, (n,) enum ints), then update.
    Raises :class:`KeyframeError` when a position or handle is not finite (the curve untouched),
    or when Blender's own handle update made one so (the curve written: a transaction takes it
    back)."""
    stored = _check_writable(fc, position=co, left_handle=handle_left, right_handle=handle_right)
    n = co.shape[0]
    kps = fc.keyframe_points
    kps.clear()
    if n:
        kps.add(n)
        kps.foreach_set("co", stored["position"].ravel())
        kps.foreach_set("handle_left", stored["left_handle"].ravel())
        kps.foreach_set("handle_right", stored["right_handle"].ravel())
        kps.foreach_set("handle_left_type", handle_left_type)
        kps.foreach_set("handle_right_type", handle_right_type)
        kps.foreach_set("interpolation", np.full(n, interpolation, dtype=np.int32))
        kps.foreach_set("type", np.zeros(n, dtype=np.int32))  # KEYFRAME
    fc.update()  # sorts the keys and recomputes automatic handles
    if n:
        handles = np.concatenate([_read_pairs(kps, "handle_left", n), _read_pairs(kps, "handle_right", n)])
        if not np.isfinite(handles).all():
            raise KeyframeError(
                f"Not writing curve {curve_label(fc)}: Blender's handle update gave handles that are not finite "
                f"(values up to {float(np.max(np.abs(stored['position'][:, 1]))):.3g} are too large for its float32 "
                "handle math); scale the curve's values down"
            )


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
        positions: AUTO types would be recomputed by Blender (ALIGNED ones are turned by a float32
        step or so: :func:`keep_fitted_handles`).

    Raises
    ------
    KeyframeError
        A position or handle is NaN or infinite as float32; the curve is left as it was.
    """
    co = np.ascontiguousarray(co, dtype=np.float64).reshape(-1, 2)
    n = co.shape[0]
    hl = np.ascontiguousarray(handle_left, dtype=np.float64).reshape(n, 2)
    hr = np.ascontiguousarray(handle_right, dtype=np.float64).reshape(n, 2)
    types = _as_type_ints(handle_type, n, _handle_type_values())
    _replace_keys(fc, co, hl, hr, types, types, _interpolation_values()["BEZIER"])


def keep_fitted_handles(fc: bpy.types.FCurve, handle_left: np.ndarray, handle_right: np.ndarray,
                        frames: np.ndarray, values: np.ndarray, tolerance: float) -> int:
    """After :func:`write_bezier`: where Blender's evaluation of ``fc`` leaves an original sample
    beyond ``tolerance``, the ALIGNED keys whose handles Blender turned are written FREE with the
    handles given (``(k, 2)``, as fitted). Returns how many keys that changed.

    Blender re-aligns ALIGNED handles on update, one handle turned to the other's direction;
    handles collinear in float64 are not quite so in float32, and a short handle (a fraction of a
    frame at a frame number in the thousands) can turn a long one enough to cost a few percent of a
    tolerance. Every key turns a little; only a curve that then misses is changed."""
    kps = fc.keyframe_points
    n = len(kps)
    if n == 0:
        return 0
    got = np.array([fc.evaluate(float(f)) for f in frames])
    if np.max(np.abs(got - values)) <= tolerance:
        return 0
    table = _handle_type_values()
    types = np.empty(n, dtype=np.int32)
    kps.foreach_get("handle_left_type", types)
    want_l = np.asarray(handle_left, dtype=np.float32).reshape(n, 2)
    want_r = np.asarray(handle_right, dtype=np.float32).reshape(n, 2)
    moved = (types == table["ALIGNED"]) & (np.any(_read_pairs(kps, "handle_left", n) != want_l, axis=1)
                                           | np.any(_read_pairs(kps, "handle_right", n) != want_r, axis=1))
    if moved.any():
        types = np.where(moved, table["FREE"], types).astype(np.int32)
        kps.foreach_set("handle_left_type", types)
        kps.foreach_set("handle_right_type", types)
        kps.foreach_set("handle_left", want_l.ravel())
        kps.foreach_set("handle_right", want_r.ravel())
        fc.update()
    return int(np.count_nonzero(moved))


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
    curve has a Cycles modifier). Raises :class:`KeyframeError` (nothing written) for a frame or
    value that is not a finite float32."""
    _write_key_per_frame(fc, frames, values, "AUTO_CLAMPED", "BEZIER")


def write_dense_linear(fc: bpy.types.FCurve, frames: np.ndarray, values: np.ndarray) -> None:
    """Replace the keys of ``fc`` with one LINEAR key per frame (a bake: the curve stays between
    neighbouring values). Raises :class:`KeyframeError` as :func:`write_dense` does."""
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


# ------------------------------------------------------------------------------------------------
# Snapshots: taking a write back, and noticing a change
# ------------------------------------------------------------------------------------------------

_PAIR_PROPERTIES = ("co", "handle_left", "handle_right")
_ENUM_PROPERTIES = ("handle_left_type", "handle_right_type", "interpolation", "easing", "type")
_FLOAT_PROPERTIES = ("back", "amplitude", "period")


def keep_keys(fc: bpy.types.FCurve) -> Callable[[], None]:
    """Snapshot every key of ``fc`` (positions, handles, types, interpolation and its settings) and
    its Cycles modifiers; returns the function that puts them back (for a transaction's rollback)."""
    kps = fc.keyframe_points
    n = len(kps)
    pairs = {p: _read_pairs(kps, p, n) for p in _PAIR_PROPERTIES}
    enums = {}
    for p in _ENUM_PROPERTIES:
        enums[p] = np.empty(n, dtype=np.int32)
        kps.foreach_get(p, enums[p])
    floats = {}
    for p in _FLOAT_PROPERTIES:
        floats[p] = np.empty(n, dtype=np.float32)
        kps.foreach_get(p, floats[p])
    cycles = [(m.mode_before, m.mode_after) for m in fc.modifiers if m.type == "CYCLES"]  # type: ignore[attr-defined]

    def restore() -> None:
        kps.clear()
        if n:
            kps.add(n)
            for p, arr in pairs.items():
                kps.foreach_set(p, arr.astype(np.float32).ravel())
            for p, arr in {**enums, **floats}.items():
                kps.foreach_set(p, arr)
        for m in [m for m in fc.modifiers if m.type == "CYCLES"]:
            fc.modifiers.remove(m)
        for before, after in cycles:
            mod: Any = fc.modifiers.new("CYCLES")
            mod.mode_before, mod.mode_after = before, after
        fc.update()

    return restore


def curves_digest(fcurves: Iterable[bpy.types.FCurve]) -> str:
    """A digest of what the curves hold: paths, keys (positions, handles, interpolation), extrapolation
    and modifier types. Any edit of a key changes it; reading it is one ``foreach_get`` per property."""
    h = hashlib.blake2b(digest_size=16)
    for fc in fcurves:
        kps = fc.keyframe_points
        n = len(kps)
        h.update(f"{fc.data_path}\0{fc.array_index}\0{n}\0{fc.extrapolation}\0".encode())
        h.update(",".join(m.type for m in fc.modifiers).encode())
        for p in _PAIR_PROPERTIES:
            buf = np.empty(2 * n, dtype=np.float32)
            kps.foreach_get(p, buf)
            h.update(buf.tobytes())
        buf_i = np.empty(n, dtype=np.int32)
        kps.foreach_get("interpolation", buf_i)
        h.update(buf_i.tobytes())
    return h.hexdigest()
