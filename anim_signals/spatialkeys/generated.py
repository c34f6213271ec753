"""Generated clips for the spatial-keyframe tests and examples (fixed seeds, no files needed).

:func:`articulated_chain` is a small serial chain with smooth periodic rotations;
:func:`generated_biped` a 17-joint humanoid (Mixamo-style bone names, so
:func:`anim_signals.manifolds.skeleton.canonical_joints` finds every canonical joint) that walks,
then crouches and reaches up: two different motions, so a projection shows more than one loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from .rotations import as_quaternions, hemisphere_align

__all__ = ["GeneratedClip", "articulated_chain", "generated_biped", "turns_about_z"]


@dataclass(frozen=True)
class GeneratedClip:
    """A generated skeleton clip.

    Attributes
    ----------
    quaternions : ndarray, shape (N, J, 4)
        Local joint rotations ``(w, x, y, z)``, hemisphere-continuous in time.
    parents : list of int, length J
        Parent per joint (-1 for the root), parents first.
    names : list of str, length J
    offsets : ndarray, shape (J, 3)
        Rest offsets from the parent joint (metres), for forward kinematics.
    """

    quaternions: np.ndarray
    parents: list[int]
    names: list[str]
    offsets: np.ndarray


def articulated_chain(n_frames: int = 120, n_joints: int = 5, *, seed: int = 0,
                      period: float = 40.0) -> GeneratedClip:
    """A serial chain whose joints swing smoothly and periodically about random axes.

    Joint ``j`` rotates by ``a_j sin(2 pi t / period + phi_j) + b_j sin(4 pi t / period)`` about a
    fixed random axis per joint, plus a slow twist about a second axis (so the motion is not planar).

    Parameters
    ----------
    n_frames : int
    n_joints : int
    seed : int
        Seed of the random axes, amplitudes and phases.
    period : float
        Frames per cycle.

    Returns
    -------
    GeneratedClip

    Examples
    --------
    >>> clip = articulated_chain(10, 3)
    >>> clip.quaternions.shape, clip.parents
    ((10, 3, 4), [-1, 0, 1])
    """
    rng = np.random.default_rng(seed)
    t = np.arange(n_frames, dtype=float)
    axes = rng.normal(size=(n_joints, 2, 3))
    axes /= np.linalg.norm(axes, axis=2, keepdims=True)
    amp = rng.uniform(0.3, 0.9, size=(n_joints, 3))
    phase = rng.uniform(0, 2 * np.pi, size=(n_joints, 2))
    w = 2 * np.pi * t / period
    q = np.empty((n_frames, n_joints, 4))
    for j in range(n_joints):
        a1 = amp[j, 0] * np.sin(w + phase[j, 0]) + 0.3 * amp[j, 1] * np.sin(2 * w)
        a2 = 0.4 * amp[j, 2] * np.sin(0.5 * w + phase[j, 1])
        r = Rotation.from_rotvec(a1[:, None] * axes[j, 0]) * Rotation.from_rotvec(a2[:, None] * axes[j, 1])
        q[:, j] = as_quaternions(r.as_matrix())
    offsets = np.tile([0.0, 0.3, 0.0], (n_joints, 1))
    return GeneratedClip(hemisphere_align(q), list(range(-1, n_joints - 1)),
                         [f"joint{j}" for j in range(n_joints)], offsets)


_BIPED = [  # name, parent, offset (x left, y forward, z up)
    ("Hips", -1, (0.0, 0.0, 0.95)),
    ("Spine", 0, (0.0, 0.0, 0.12)),
    ("Chest", 1, (0.0, 0.0, 0.2)),
    ("Neck", 2, (0.0, 0.0, 0.22)),
    ("Head", 3, (0.0, 0.0, 0.1)),
    ("LeftArm", 2, (0.18, 0.0, 0.18)),
    ("LeftForeArm", 5, (0.0, 0.0, -0.28)),
    ("LeftHand", 6, (0.0, 0.0, -0.25)),
    ("RightArm", 2, (-0.18, 0.0, 0.18)),
    ("RightForeArm", 8, (0.0, 0.0, -0.28)),
    ("RightHand", 9, (0.0, 0.0, -0.25)),
    ("LeftUpLeg", 0, (0.1, 0.0, -0.05)),
    ("LeftLeg", 11, (0.0, 0.0, -0.43)),
    ("LeftFoot", 12, (0.0, 0.0, -0.42)),
    ("RightUpLeg", 0, (-0.1, 0.0, -0.05)),
    ("RightLeg", 14, (0.0, 0.0, -0.43)),
    ("RightFoot", 15, (0.0, 0.0, -0.42)),
]


def _smooth(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


def generated_biped(n_frames: int = 180, *, seed: int = 0, fps: float = 30.0,
                    noise_deg: float = 0.05) -> GeneratedClip:
    """A humanoid that walks (one stride per second), then crouches and reaches up.

    Angles are Euler XYZ per joint (degrees in the code, radians in the rotations); the second
    half of the clip blends from the walk into the crouch-and-reach; a little white noise (like
    a marker solve's) is added with the seeded generator.

    Parameters
    ----------
    n_frames : int
    seed : int
        Seed of the noise.
    fps : float
        Frames per second (sets the stride period).
    noise_deg : float
        Standard deviation of the angle noise, degrees.

    Returns
    -------
    GeneratedClip

    Examples
    --------
    >>> clip = generated_biped(30)
    >>> clip.quaternions.shape, clip.names[11]
    ((30, 17, 4), 'LeftUpLeg')
    """
    rng = np.random.default_rng(seed)
    t = np.arange(n_frames, dtype=float)
    ph = 2 * np.pi * t / fps
    mid = 0.55 * n_frames
    act = _smooth((t - mid) / (0.15 * n_frames))  # 0 walking -> 1 crouch and reach
    walk = 1.0 - act
    reach = act * (0.5 + 0.5 * np.sin(2 * np.pi * t / (1.7 * fps)))
    z = np.zeros(n_frames)
    ang: dict[str, np.ndarray] = {name: np.zeros((n_frames, 3)) for name, _, _ in _BIPED}
    ang["Hips"] = np.column_stack([4 * np.sin(2 * ph) * walk + 25 * act, 3 * np.sin(ph) * walk,
                                   6 * np.sin(ph) * walk])
    ang["Spine"] = np.column_stack([3 + 15 * act - 20 * reach, z, -8 * np.sin(ph) * walk])
    ang["Chest"] = np.column_stack([5 * act, z, -4 * np.sin(ph) * walk])
    ang["Head"] = np.column_stack([-10 * act + 15 * reach, z, 4 * np.sin(ph + 0.4) * walk])
    for side, s, off in (("Left", 1.0, 0.0), ("Right", -1.0, np.pi)):
        p = ph + off
        knee = 30 * (1 + np.cos(p)) / 2 + 5 * (np.sin(p) + np.sqrt(np.sin(p) ** 2 + 0.05))
        ang[f"{side}UpLeg"] = np.column_stack([-25 * np.sin(p) * walk - 60 * act, z, z])
        ang[f"{side}Leg"] = np.column_stack([knee * walk + 100 * act, z, z])
        ang[f"{side}Foot"] = np.column_stack([15 * np.sin(p + 0.8) * walk - 35 * act, z, z])
        ang[f"{side}Arm"] = np.column_stack([25 * np.sin(p) * walk - 150 * reach, z,
                                             s * (-10 + 30 * act - 20 * reach)])
        ang[f"{side}ForeArm"] = np.column_stack([-(15 + 10 * (1 - np.cos(p)) / 2 * walk) - 40 * act * (1 - reach),
                                                 z, z])
        ang[f"{side}Hand"] = np.column_stack([5 * np.sin(p + 1.0) * walk, z, s * 10 * reach])
    q = np.empty((n_frames, len(_BIPED), 4))
    for j, (name, _, _) in enumerate(_BIPED):
        a = ang[name] + rng.normal(0.0, noise_deg, size=(n_frames, 3))
        q[:, j] = as_quaternions(Rotation.from_euler("xyz", a, degrees=True).as_matrix())
    return GeneratedClip(hemisphere_align(q), [p for _, p, _ in _BIPED], [n for n, _, _ in _BIPED],
                         np.array([o for _, _, o in _BIPED], dtype=float))


def turns_about_z(angles) -> np.ndarray:
    """One joint turning about z: quaternions (w, x, y, z) of rotations by ``angles`` (radians).

    Parameters
    ----------
    angles : array_like, shape (N,)

    Returns
    -------
    ndarray, shape (N, 1, 4)

    Examples
    --------
    >>> turns_about_z([0.0, np.pi]).round(6).tolist()
    [[[1.0, 0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0, 1.0]]]
    """
    a = np.asarray(angles, dtype=float)
    q = np.zeros((len(a), 1, 4))
    q[:, 0, 0] = np.cos(a / 2)
    q[:, 0, 3] = np.sin(a / 2)
    return q
