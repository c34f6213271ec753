"""Pose space: a deforming sequence as time, pose and shape signals, and its 2D canvas.

Cashman and Hormann, "A continuous, editable representation for deforming mesh sequences with
separate signals for time, pose and shape": shape signal h (PCA of the frames), pose signal g
(thin-plate spline from the 2D pose space), time signal f (a cubic B-spline through the pose
space), with edits that return a new :class:`PoseSpace`.

Modules
-------
signals
    The three signals h, g, f and the MDS placement of the frames with pinned frames.
sites
    The greedy order of the pose signal's RBF sites, and the choice of l from an error budget.
space
    :class:`PoseSpace` with its edits, :func:`build_pose_space`, and the checks and default
    tolerance a build applies to raw frames.
retime
    Re-timing (speed, frame count, frame rate, a range) and the whole frames a bake keys.
controls
    The model as shape keys (key scales, targets and values) and as armature channels.
canvas
    Pure geometry of the pose-space canvas: view transform, what to draw, hit-testing, strokes
    (and, re-exported, the colours).
shapes
    The canvas's marks as GPU-ready triangles and line pairs (discs, rings, dashed lines, ...).
render
    The canvas rendered to RGBA / PNG without a GPU.
palette
    The canvas's colours.
"""

from .canvas import (
    CanvasGeometry,
    Hit,
    View,
    canvas_geometry,
    drawable,
    fit_space_view,
    fit_view,
    hit_test,
    stroke_to_pose,
)
from .controls import channel_values, key_scales, key_targets, key_values, shape_from_keys
from .generated import wavy_flag
from .palette import time_colors
from .render import render_png, render_rgba
from .retime import RESAMPLE_MODES, bake_frames, resample_times, resampled_space
from .signals import (
    MIN_FRAMES,
    PoseSignal,
    ShapeSignal,
    TimeSignal,
    centripetal_params,
    fit_pose_signal,
    fit_time_signal,
    mds_positions,
    piegl_tiller_knots,
    shape_signal,
    shape_signal_from_examples,
    stress,
)
from .sites import greedy_site_order
from .space import (
    DEFAULT_TOLERANCE_FRACTION,
    STATIC_SPAN,
    PoseSpace,
    bbox_diagonal,
    build_pose_space,
    default_tolerance,
    is_static,
)

__all__ = [
    "DEFAULT_TOLERANCE_FRACTION",
    "MIN_FRAMES",
    "RESAMPLE_MODES",
    "STATIC_SPAN",
    "CanvasGeometry",
    "Hit",
    "PoseSignal",
    "PoseSpace",
    "ShapeSignal",
    "TimeSignal",
    "View",
    "bake_frames",
    "bbox_diagonal",
    "build_pose_space",
    "canvas_geometry",
    "centripetal_params",
    "channel_values",
    "default_tolerance",
    "drawable",
    "fit_pose_signal",
    "fit_space_view",
    "fit_time_signal",
    "fit_view",
    "greedy_site_order",
    "hit_test",
    "is_static",
    "key_scales",
    "key_targets",
    "key_values",
    "mds_positions",
    "piegl_tiller_knots",
    "render_png",
    "render_rgba",
    "resample_times",
    "resampled_space",
    "shape_from_keys",
    "shape_signal",
    "shape_signal_from_examples",
    "stress",
    "stroke_to_pose",
    "time_colors",
    "wavy_flag",
]
