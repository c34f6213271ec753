"""Fit spline: dense animation curves -> a few exact Bezier keys.

Mukai, "Latent Nonuniform Splines for Animation Approximation": PCA of the channels, one cubic
B-spline with free internal knots in the latent space, control points by least squares and
knots by CMA-ES; plus a max-error guarantee, a per-channel mode and C1 keys.

Modules
-------
fitting
    The fits: :func:`fit_latent_spline` (the paper's method), :func:`fit_channels` (tolerance
    mode, what the Blender operator runs) and the uniform baseline.
knots
    Knot search: the vectorised least-squares problem, CMA-ES over knot increments, knot
    insertion and removal.
bspline
    Clamped knot vectors, banded bases for many knot vectors at once, least squares,
    evaluation, conversion to Bezier keys.
bezier
    Blender-style Bezier keys: Hermite keys, key repair and pruning.
"""

from .bezier import hermite_keys, prune_keys, repair_keys
from .bspline import BezierCurve, constant_curve, spline_to_bezier
from .fitting import (
    ChannelsFit,
    FitCancelled,
    SplineModel,
    distortion,
    fit_channels,
    fit_latent_spline,
    fit_uniform_spline,
    interpolating_curve,
    iter_fit_channels,
)

__all__ = [
    "BezierCurve",
    "ChannelsFit",
    "FitCancelled",
    "SplineModel",
    "constant_curve",
    "distortion",
    "fit_channels",
    "fit_latent_spline",
    "fit_uniform_spline",
    "hermite_keys",
    "interpolating_curve",
    "iter_fit_channels",
    "prune_keys",
    "repair_keys",
    "spline_to_bezier",
]
