"""A small BVH reader for the spatial-keyframe core: joint rotations, hierarchy, offsets.

Blender imports BVH with its own importer (the Blender side uses that); this reader exists so the
core, its tests and benchmarks can run on mocap files without Blender. It reads what eq. (1)
needs: every joint's local rotation per frame (each joint's rotation channels in their listed
order, ``Zrotation Xrotation Yrotation`` meaning ``R = Rz Rx Ry``), the parents, the offsets and
the root's positions. End sites carry no rotation and are not joints here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from .rotations import as_quaternions, hemisphere_align

__all__ = ["BvhClip", "parse_bvh", "read_bvh"]


@dataclass(frozen=True)
class BvhClip:
    """Joint rotations of a BVH clip.

    Attributes
    ----------
    quaternions : ndarray, shape (N, J, 4)
        Local joint rotations ``(w, x, y, z)``, hemisphere-continuous in time (identity for a
        joint without rotation channels).
    parents : list of int, length J
    names : list of str, length J
    offsets : ndarray, shape (J, 3)
    root_positions : ndarray, shape (N, 3)
        The root's position channels (zeros when it has none), file units.
    frame_time : float
        Seconds per frame.
    """

    quaternions: np.ndarray
    parents: list[int]
    names: list[str]
    offsets: np.ndarray
    root_positions: np.ndarray
    frame_time: float


def parse_bvh(text: str, max_frames: int | None = None) -> BvhClip:
    """Parse BVH text.

    Parameters
    ----------
    text : str
        The whole file.
    max_frames : int, optional
        Read at most this many frames.

    Returns
    -------
    BvhClip

    Raises
    ------
    ValueError
        On a malformed hierarchy or motion section (with the token or line at fault).

    Examples
    --------
    >>> clip = parse_bvh('''HIERARCHY
    ... ROOT Hips
    ... { OFFSET 0 0 0 CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
    ...   JOINT Spine { OFFSET 0 1 0 CHANNELS 3 Zrotation Xrotation Yrotation
    ...     End Site { OFFSET 0 1 0 } } }
    ... MOTION
    ... Frames: 1
    ... Frame Time: 0.0333
    ... 0 0 0 0 0 0 90 0 0
    ... ''')
    >>> clip.names, clip.parents, clip.quaternions[0, 1].round(6).tolist()
    (['Hips', 'Spine'], [-1, 0], [0.707107, 0.0, 0.0, 0.707107])
    """
    head, sep, motion = text.partition("MOTION")
    if not sep:
        raise ValueError("not a BVH file: no MOTION section")
    tokens = head.split()
    if not tokens or tokens[0] != "HIERARCHY":
        raise ValueError("not a BVH file: it does not start with HIERARCHY")
    names: list[str] = []
    parents: list[int] = []
    offsets: list[list[float]] = []
    channels: list[list[str]] = []
    stack: list[int] = []
    pending: int | None = None  # the joint whose '{' comes next (-2: an end site)
    i = 1
    while i < len(tokens):
        tok = tokens[i]
        if tok in ("ROOT", "JOINT"):
            if i + 1 >= len(tokens):
                raise ValueError(f"{tok} without a name")
            names.append(tokens[i + 1])
            parents.append(stack[-1] if stack else -1)
            offsets.append([0.0, 0.0, 0.0])
            channels.append([])
            pending = len(names) - 1
            i += 2
        elif tok == "End":
            pending = -2
            i += 2
        elif tok == "{":
            if pending is None:
                raise ValueError("'{' without a joint")
            stack.append(pending)
            pending = None
            i += 1
        elif tok == "}":
            if not stack:
                raise ValueError("unbalanced '}'")
            stack.pop()
            i += 1
        elif tok == "OFFSET":
            try:
                off = [float(v) for v in tokens[i + 1:i + 4]]
            except ValueError as exc:
                raise ValueError(f"bad OFFSET near joint {names[-1] if names else '?'}") from exc
            if stack and stack[-1] >= 0:
                offsets[stack[-1]] = off
            i += 4
        elif tok == "CHANNELS":
            if not stack or stack[-1] < 0:
                raise ValueError("CHANNELS outside a joint")
            count = int(tokens[i + 1])
            channels[stack[-1]] = [c.lower() for c in tokens[i + 2:i + 2 + count]]
            i += 2 + count
        else:
            raise ValueError(f"unexpected token {tok!r} in the hierarchy")
    if stack or not names:
        raise ValueError("unbalanced braces or no joints in the hierarchy")
    lines = [ln for ln in motion.splitlines() if ln.strip()]
    if len(lines) < 2 or not lines[0].lower().startswith("frames:") or not lines[1].lower().startswith("frame time:"):
        raise ValueError("the MOTION section must start with 'Frames:' and 'Frame Time:'")
    n_frames = int(lines[0].split(":")[1])
    frame_time = float(lines[1].split(":")[1])
    if max_frames is not None:
        n_frames = min(n_frames, max_frames)
    width = sum(len(c) for c in channels)
    rows = [ln.split() for ln in lines[2:2 + n_frames]]
    if len(rows) < n_frames:
        raise ValueError(f"'Frames: {n_frames}' but only {len(rows)} rows of values")
    for k, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"frame {k} has {len(row)} values, the hierarchy's channels need {width}")
    try:
        data = np.array(rows, dtype=float).reshape(n_frames, width)
    except ValueError as exc:
        raise ValueError("non-numeric value in the MOTION section") from exc
    quats = np.zeros((n_frames, len(names), 4))
    quats[..., 0] = 1.0
    root = np.zeros((n_frames, 3))
    col = 0
    for j, ch in enumerate(channels):
        rot = [(k, c[0]) for k, c in enumerate(ch) if c.endswith("rotation")]
        if rot:
            seq = "".join(axis.upper() for _, axis in rot)  # upper case: intrinsic, R = R1 R2 R3
            angles = data[:, [col + k for k, _ in rot]]
            quats[:, j] = as_quaternions(Rotation.from_euler(seq, angles, degrees=True).as_matrix())
        if j == 0:
            for k, c in enumerate(ch):
                if c.endswith("position"):
                    root[:, "xyz".index(c[0])] = data[:, col + k]
        col += len(ch)
    return BvhClip(hemisphere_align(quats), parents, names, np.array(offsets, dtype=float), root, frame_time)


def read_bvh(path: str | os.PathLike, max_frames: int | None = None) -> BvhClip:
    """Read a BVH file (:func:`parse_bvh`).

    Parameters
    ----------
    path : str or path-like
    max_frames : int, optional

    Returns
    -------
    BvhClip

    Raises
    ------
    ValueError
        On a malformed file (the message names the file).
    OSError
        When the file cannot be read.

    Examples
    --------
    >>> read_bvh("missing.bvh")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    FileNotFoundError: ...
    """
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    try:
        return parse_bvh(text, max_frames)
    except ValueError as exc:
        raise ValueError(f"{os.fspath(path)}: {exc}") from exc
