"""A clip as one multichannel curve, and back.

Eslitzbichler, "Modelling Character Motions on Infinite-Dimensional Manifolds", treats a pose as a
point on the torus of joint angles; on the torus a curve is continuous once Euler tracks are
unwrapped.  Quaternion bones become hemisphere-continuous 4-vectors (a continuous representation
that round-trips by normalising).  Clips of different lengths or frame rates are compared after
resampling to a common number of samples, as the paper does ("scaling them to a common (time)
length").

Channel kinds are those of :mod:`anim_signals.channels` (:data:`EULER`, :data:`QUATERNION`,
:data:`LOCATION`; any other kind: a plain value channel), and so are the grouping helpers
(:func:`quaternion_groups`, :func:`euler_triples`) and :func:`to_motion_curve` itself
(:func:`anim_signals.channels.make_continuous`), re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..channels import EULER, LOCATION, QUATERNION, euler_triples, make_continuous, quaternion_groups
from ..validation import finite_array, positive_int

__all__ = ["EULER", "QUATERNION", "LOCATION", "euler_triples", "from_motion_curve", "harmonise", "quaternion_groups",
           "resample", "to_motion_curve"]

# A clip's motion curve is its channels made continuous: the one preparation every tool shares.
to_motion_curve = make_continuous


def from_motion_curve(curve: np.ndarray, kinds: Sequence[str], owners: Sequence[str] | None = None) -> np.ndarray:
    """A (possibly edited) motion curve back to valid channel values: quaternions normalised.

    Euler angles stay unwrapped: Blender plays any angle, and wrapping would add 360 degree jumps.

    Parameters
    ----------
    curve : ndarray, shape (N, n)
    kinds : sequence of str, length n
    owners : sequence of str, length n, optional

    Returns
    -------
    ndarray, shape (N, n)
    """
    out = np.array(curve, dtype=float, copy=True)
    for cols in quaternion_groups(kinds, owners):
        norm = np.linalg.norm(out[:, cols], axis=1, keepdims=True)
        out[:, cols] /= np.where(norm > 0.0, norm, 1.0)
    return out


def harmonise(curve: np.ndarray, reference: np.ndarray, kinds: Sequence[str], owners: Sequence[str]) -> np.ndarray:
    """``curve`` moved next to ``reference`` (same channels, any lengths): the same poses, comparable numbers.

    Each Euler channel is shifted by the whole number of turns that brings its mean nearest the
    reference's mean; each complete quaternion (:func:`quaternion_groups` by ``owners``) is
    negated when its mean points away from the reference's mean (negative dot product).

    Parameters
    ----------
    curve : ndarray, shape (n_frames, n_channels)
        A motion curve (:func:`to_motion_curve`); angles in radians.
    reference : ndarray, shape (m_frames, n_channels)
        The motion curve to move next to (any number of frames).
    kinds, owners : sequence of str, length n_channels
        Kind and owner (bone) of each channel.

    Returns
    -------
    ndarray, shape (n_frames, n_channels)
        A new array; ``curve`` is not changed.

    Examples
    --------
    >>> ref = np.array([[0.1], [0.2]])
    >>> harmonise(ref + 2 * np.pi, ref, [EULER], ["a"]).round(6).tolist()
    [[0.1], [0.2]]
    """
    out = np.array(curve, dtype=float, copy=True)
    for j, k in enumerate(kinds):
        if k == EULER:
            turns = np.round((float(np.mean(reference[:, j])) - float(np.mean(out[:, j]))) / (2.0 * np.pi))
            out[:, j] += 2.0 * np.pi * turns
    for cols in quaternion_groups(kinds, owners):
        if float(np.dot(out[:, cols].mean(axis=0), reference[:, cols].mean(axis=0))) < 0.0:
            out[:, cols] *= -1.0
    return out


def resample(values: np.ndarray, n_samples: int) -> np.ndarray:
    """Linear resampling to ``n_samples`` equally spaced samples over the same time span.

    Parameters
    ----------
    values : ndarray, shape (N, n)
    n_samples : int
        At least 2.

    Returns
    -------
    ndarray, shape (n_samples, n)

    Raises
    ------
    ValueError
        If ``n_samples`` < 2, or ``values`` has fewer than 2 samples or NaN / infinite ones.
    """
    values = finite_array("values", values, ndim=(1, 2), min_length=2)
    n_samples = positive_int("n_samples", n_samples, minimum=2)
    if values.ndim == 1:
        return resample(values[:, None], n_samples)[:, 0]
    n = values.shape[0]
    if n == n_samples:
        return values.copy()
    t_old = np.linspace(0.0, 1.0, n)
    t_new = np.linspace(0.0, 1.0, n_samples)
    pos = np.interp(t_new, t_old, np.arange(n, dtype=float))
    i0 = np.clip(np.floor(pos).astype(int), 0, n - 2)
    f = (pos - i0)[:, None]
    return (1.0 - f) * values[i0] + f * values[i0 + 1]
