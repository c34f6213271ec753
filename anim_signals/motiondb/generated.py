"""Generated Live Link Face data for tests and demos: a face mesh with the 52 ARKit shape keys and
smooth blendshape weights (expressions and blinks). Deterministic; numpy only.

::

    face = generated_face()                         # vertices, faces, 52 ARKit shape keys
    weights = generated_expressions(240, seed=0)    # (240, 52) in [0, 1], ARKit order
    face.pose(weights[100])                         # vertex positions of frame 100
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .livelink import ARKIT_BLENDSHAPES

__all__ = ["FaceMesh", "face_key_bumps", "generated_expressions", "generated_face"]

# name -> bumps: ((u, v) centre on the face, radius, displacement (dx, dy, dz)). x: the subject's left
# is +x (the face looks along -y, as Blender's front view), z up. "Right" keys mirror their "Left" twin.
_L, _R = "Left", "Right"
_FACE_KEYS_LEFT: dict[str, list[tuple[tuple[float, float], float, tuple[float, float, float]]]] = {
    "EyeBlinkLeft": [((0.33, 0.30), 0.10, (0.0, -0.01, -0.07))],
    "EyeLookDownLeft": [((0.33, 0.24), 0.06, (0.0, 0.0, -0.025))],
    "EyeLookInLeft": [((0.33, 0.24), 0.065, (-0.025, 0.0, 0.0))],
    "EyeLookOutLeft": [((0.33, 0.24), 0.07, (0.025, 0.0, 0.0))],
    "EyeLookUpLeft": [((0.33, 0.24), 0.075, (0.0, 0.0, 0.025))],
    "EyeSquintLeft": [((0.33, 0.17), 0.09, (0.0, -0.01, 0.03))],
    "EyeWideLeft": [((0.33, 0.33), 0.09, (0.0, 0.0, 0.04))],
    "MouthSmileLeft": [((0.20, -0.40), 0.10, (0.04, 0.0, 0.05))],
    "MouthFrownLeft": [((0.20, -0.40), 0.11, (0.0, 0.0, -0.05))],
    "MouthDimpleLeft": [((0.22, -0.38), 0.08, (0.04, 0.02, 0.0))],
    "MouthStretchLeft": [((0.20, -0.42), 0.12, (0.05, 0.0, -0.02))],
    "MouthPressLeft": [((0.10, -0.40), 0.08, (0.0, 0.02, 0.01))],
    "MouthLowerDownLeft": [((0.10, -0.46), 0.08, (0.0, 0.0, -0.04))],
    "MouthUpperUpLeft": [((0.10, -0.33), 0.08, (0.0, 0.0, 0.04))],
    "BrowDownLeft": [((0.33, 0.48), 0.12, (0.0, 0.0, -0.04))],
    "BrowOuterUpLeft": [((0.48, 0.48), 0.10, (0.0, 0.0, 0.05))],
    "CheekSquintLeft": [((0.40, 0.05), 0.12, (0.0, -0.01, 0.04))],
    "NoseSneerLeft": [((0.10, 0.05), 0.07, (0.0, -0.01, 0.03))],
}
_FACE_KEYS_CENTRE: dict[str, list[tuple[tuple[float, float], float, tuple[float, float, float]]]] = {
    "JawForward": [((0.0, -0.62), 0.35, (0.0, -0.08, 0.0))],
    "JawRight": [((0.0, -0.62), 0.34, (-0.07, 0.0, 0.0))],
    "JawLeft": [((0.0, -0.62), 0.33, (0.07, 0.0, 0.0))],
    "JawOpen": [((0.0, -0.65), 0.38, (0.0, 0.02, -0.16))],
    "MouthClose": [((0.0, -0.45), 0.10, (0.0, 0.0, 0.05))],
    "MouthFunnel": [((0.0, -0.40), 0.14, (0.0, -0.05, 0.0))],
    "MouthPucker": [((0.0, -0.40), 0.09, (0.0, -0.06, 0.0))],
    "MouthRight": [((0.0, -0.40), 0.16, (-0.06, 0.0, 0.0))],
    "MouthLeft": [((0.0, -0.40), 0.15, (0.06, 0.0, 0.0))],
    "MouthRollLower": [((0.0, -0.45), 0.08, (0.0, 0.03, 0.01))],
    "MouthRollUpper": [((0.0, -0.34), 0.08, (0.0, 0.03, -0.01))],
    "MouthShrugLower": [((0.0, -0.48), 0.09, (0.0, -0.01, 0.04))],
    "MouthShrugUpper": [((0.0, -0.32), 0.09, (0.0, -0.01, 0.03))],
    "BrowInnerUp": [((0.0, 0.48), 0.14, (0.0, 0.0, 0.05))],
    "CheekPuff": [((0.38, -0.22), 0.14, (0.03, -0.06, 0.0)), ((-0.38, -0.22), 0.14, (-0.03, -0.06, 0.0))],
    "TongueOut": [((0.0, -0.42), 0.05, (0.0, -0.09, -0.01))],
}


def face_key_bumps() -> dict[str, list[tuple[tuple[float, float], float, tuple[float, float, float]]]]:
    """Every ARKit blendshape's bumps of :func:`generated_face`, Right keys mirrored.

    Returns
    -------
    dict of str to list of ((float, float), float, (float, float, float))
        Name -> bumps: (u, v) centre on the face in [-1, 1]^2, radius, displacement (dx, dy, dz) as
        a fraction of the face's half-size; in :data:`ARKIT_BLENDSHAPES` order.
    """
    out = dict(_FACE_KEYS_CENTRE)
    for name, bumps in _FACE_KEYS_LEFT.items():
        out[name] = bumps
        out[name.replace(_L, _R)] = [((-u, v), r, (-dx, dy, dz)) for (u, v), r, (dx, dy, dz) in bumps]
    return {n: out[n] for n in ARKIT_BLENDSHAPES}


@dataclass(frozen=True)
class FaceMesh:
    """A face mesh with ARKit shape keys (:func:`generated_face`).

    Attributes
    ----------
    vertices : ndarray, shape (V, 3)
        Rest positions in metres.
    faces : list of (int, int, int, int)
        Quads as vertex indices.
    shape_keys : dict of str to ndarray, shape (V, 3)
        ARKit name -> vertex positions of the key at weight 1 (in :data:`ARKIT_BLENDSHAPES` order).
    """

    vertices: np.ndarray
    faces: list[tuple[int, int, int, int]]
    shape_keys: dict[str, np.ndarray]

    def pose(self, weights: dict[str, float] | np.ndarray) -> np.ndarray:
        """Vertex positions for blendshape weights (a dict, or 52 values in ARKit order)."""
        if isinstance(weights, dict):
            w = np.array([float(weights.get(n, 0.0)) for n in ARKIT_BLENDSHAPES])
        else:
            w = np.asarray(weights, dtype=np.float64).ravel()
        deltas = np.stack([self.shape_keys[n] - self.vertices for n in ARKIT_BLENDSHAPES])
        return self.vertices + np.tensordot(w, deltas, axes=1)


def generated_face(resolution: int = 24, width: float = 0.16, height: float = 0.22) -> FaceMesh:
    """A simple face with one shape key per ARKit blendshape, for tests and demos. Deterministic.

    Parameters
    ----------
    resolution : int
        Quads along each side, at least 4.
    width, height : float
        Size in metres; the face is the front of an ellipsoid facing -y.

    Returns
    -------
    FaceMesh
        (resolution + 1)^2 vertices; each key moves its region (jaw, lips, eyelids, brows,
        cheeks, nose, tongue).

    Raises
    ------
    ValueError
        If ``resolution`` < 4.

    Examples
    --------
    >>> face = generated_face(resolution=8)
    >>> face.vertices.shape, len(face.faces), len(face.shape_keys)
    ((81, 3), 64, 52)
    """
    n = int(resolution)
    if n < 4:
        raise ValueError("resolution must be at least 4")
    u, v = np.meshgrid(np.linspace(-1.0, 1.0, n + 1), np.linspace(-1.0, 1.0, n + 1))
    u, v = u.ravel(), v.ravel()
    depth = np.sqrt(np.clip(1.0 - 0.55 * u * u - 0.35 * v * v, 0.05, None))
    scale = np.array([0.5 * width, 0.5 * width, 0.5 * height])
    base = np.column_stack([u, -0.6 * depth, v]) * scale
    faces = []
    for r in range(n):
        for c in range(n):
            a = r * (n + 1) + c
            faces.append((a, a + 1, a + n + 2, a + n + 1))
    uv = np.column_stack([u, v])
    keys = {}
    for name, bumps in face_key_bumps().items():
        delta = np.zeros_like(base)
        for (cu, cv), rad, disp in bumps:
            d2 = ((uv - (cu, cv)) ** 2).sum(axis=1)
            w = np.exp(-d2 / (2.0 * rad * rad))
            w[w < 1e-3] = 0.0
            delta += w[:, None] * np.asarray(disp) * scale
        keys[name] = base + delta
    return FaceMesh(base, faces, keys)


def generated_expressions(n_frames: int = 240, *, seed: int = 0, fps: float = 30.0,
                          names: Sequence[str] = ARKIT_BLENDSHAPES) -> np.ndarray:
    """Smooth, plausible blendshape weights: a few expressions (smile, jaw open, brow raise, ...)
    blended in and out, plus blinks, for tests and demos. Deterministic for a seed.

    Parameters
    ----------
    n_frames : int
    seed : int
        Seed of the random expression events.
    fps : float
        Frames per second.
    names : sequence of str
        Channels to fill (default: the 52 ARKit blendshapes).

    Returns
    -------
    ndarray, shape (n_frames, len(names))
        Weights in [0, 1].

    Examples
    --------
    >>> weights = generated_expressions(60, seed=1)
    >>> weights.shape, bool(weights.min() >= 0.0 and weights.max() <= 1.0)
    ((60, 52), True)
    """
    rng = np.random.default_rng(seed)
    names = list(names)
    t = np.arange(n_frames) / fps
    out = np.zeros((n_frames, len(names)))
    # Expression "events": a group of related channels rises and falls together.
    groups = [
        ("MouthSmileLeft", "MouthSmileRight", "CheekSquintLeft", "CheekSquintRight"),
        ("JawOpen", "MouthLowerDownLeft", "MouthLowerDownRight", "MouthUpperUpLeft", "MouthUpperUpRight"),
        ("BrowInnerUp", "BrowOuterUpLeft", "BrowOuterUpRight", "EyeWideLeft", "EyeWideRight"),
        ("BrowDownLeft", "BrowDownRight", "NoseSneerLeft", "NoseSneerRight", "MouthFrownLeft", "MouthFrownRight"),
        ("MouthPucker", "MouthFunnel"),
        ("JawLeft", "MouthLeft"),
        ("JawRight", "MouthRight"),
        ("EyeLookInLeft", "EyeLookOutRight"),
        ("EyeLookOutLeft", "EyeLookInRight"),
        ("EyeLookDownLeft", "EyeLookDownRight"),
        ("CheekPuff", "MouthClose"),
    ]
    index = {n: j for j, n in enumerate(names)}
    n_events = max(1, int(round(t[-1] * 0.8))) if n_frames > 1 else 1
    for _ in range(n_events):
        g = groups[int(rng.integers(len(groups)))]
        centre = rng.uniform(0.0, t[-1] if n_frames > 1 else 1.0)
        width = rng.uniform(0.25, 0.9)
        amp = rng.uniform(0.3, 0.9)
        bump = amp * np.exp(-0.5 * ((t - centre) / width) ** 2)
        for name in g:
            if name in index:
                out[:, index[name]] += bump * rng.uniform(0.7, 1.0)
    # Blinks: short, both eyes.
    for centre in np.arange(rng.uniform(0.5, 2.0), t[-1] + 1e-9 if n_frames > 1 else 0.0, rng.uniform(2.0, 3.5)):
        blink = np.exp(-0.5 * ((t - centre) / 0.06) ** 2)
        for name in ("EyeBlinkLeft", "EyeBlinkRight"):
            if name in index:
                out[:, index[name]] += blink
    # A small idle drift everywhere.
    phase = rng.uniform(0, 2 * np.pi, len(names))
    freq = rng.uniform(0.1, 0.4, len(names))
    out += 0.03 * (1.0 + np.sin(2 * np.pi * freq[None, :] * t[:, None] + phase[None, :]))
    return np.clip(out, 0.0, 1.0)
