"""Anim Signals algorithm core: numpy/scipy/cma only, never bpy. Arrays in, arrays out.

Usable from any Python (the Blender console, a pipeline script, a notebook)::

    import anim_signals
    model = anim_signals.fit_latent_spline(values, internal_knots=8)
    fit = anim_signals.fit_channels(values, frames, tolerance)
    looped = anim_signals.loop.make_loop(curve, travel=[0, 1]).values
    d = anim_signals.elastic.elastic_distance(curve_a, curve_b, closed=True)
"""

from . import bspline, channels, elastic, loop, motion, srv
from .bspline import BezierCurve
from .fit import (
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
    "bspline",
    "channels",
    "elastic",
    "loop",
    "motion",
    "srv",
    "distortion",
    "fit_channels",
    "fit_latent_spline",
    "fit_uniform_spline",
    "interpolating_curve",
    "iter_fit_channels",
]
