"""Fit spline: dense animation curves -> a few exact Bezier keys.

Mukai, "Latent Nonuniform Splines for Animation Approximation": PCA of the channels, one cubic
B-spline with free internal knots in the latent space, control points by least squares and
knots by CMA-ES; plus a max-error guarantee, a per-channel mode and C1 keys.

Modules
-------
latent
    The paper's method: :func:`fit_latent_spline` (a knot count, or a tolerance), the uniform
    baseline :func:`fit_uniform_spline`, the distortion E_D.
fitting
    Many curves within a max error: :func:`fit_channels` / :func:`iter_fit_channels` (what the
    Blender operator runs: tolerance mode, per-channel and AUTO modes, C1 keys, snapping).
knots
    Knot search: the vectorised least-squares problem, CMA-ES over knot increments.
tolerance
    Tolerance mode: the fewest knots within a max error (knot insertion, removal rounds, CMA-ES
    rescues).
local
    Local least-squares refits: the cost of removing or moving knots, from the spans around them.
bspline
    Clamped knot vectors, banded bases for many knot vectors at once, least squares,
    evaluation, conversion to Bezier keys.
bezier_keys
    Blender's Bezier keys as arrays (:class:`BezierCurve`) and their evaluation as Blender
    evaluates them, one curve or many at once (:func:`evaluate_curves`).
bezier
    Edits of those keys: Hermite keys, key repair and pruning, broken-handle counts.
key_reduction
    The fewest keys per channel, every segment with its own free handles (the Fit Spline
    operator's default): :func:`fewest_keys`, a shortest path over key positions.
segment_fit
    The segment test it runs: can one Bezier segment between two samples keep the samples in
    between within a limit (thirds, a table of handle lengths, Lawson towards the minimax).
object_space
    Object-space error bounds for a rig (ACL's virtual vertices): per-channel tolerances that
    keep every joint within X, :func:`joint_tolerances`; :func:`tighten_chains` for verification.
pose_kinematics
    Blender's pose evaluation for plain rigs in numpy (:func:`pose_vertices`): the object-space
    measures that steer the "Joints" fit, on whole clips at once.
"""

from .bezier import hermite_keys, prune_keys, repair_keys
from .bezier_keys import BezierCurve, constant_curve, evaluate_curves
from .bspline import spline_to_bezier
from .fitting import ChannelsFit, fit_channels, interpolating_curve, iter_fit_channels
from .key_reduction import FewestKeys, fewest_keys, iter_fewest_keys
from .latent import FitCancelled, SplineModel, distortion, fit_latent_spline, fit_uniform_spline
from .object_space import bone_reach, joint_error_bound, joint_tolerances, tighten_chains
from .pose_kinematics import pose_matrices, pose_vertices, shell_points

__all__ = [
    "BezierCurve",
    "bone_reach",
    "ChannelsFit",
    "FewestKeys",
    "FitCancelled",
    "SplineModel",
    "constant_curve",
    "distortion",
    "evaluate_curves",
    "fewest_keys",
    "fit_channels",
    "fit_latent_spline",
    "fit_uniform_spline",
    "hermite_keys",
    "interpolating_curve",
    "iter_fewest_keys",
    "iter_fit_channels",
    "joint_error_bound",
    "joint_tolerances",
    "pose_matrices",
    "pose_vertices",
    "prune_keys",
    "repair_keys",
    "shell_points",
    "spline_to_bezier",
    "tighten_chains",
]
