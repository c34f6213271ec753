"""Pose space: a deforming sequence as time, pose and shape signals, and its 2D canvas.

Cashman and Hormann, "A continuous, editable representation for deforming mesh sequences with
separate signals for time, pose and shape": shape signal h (PCA of the frames), pose signal g
(thin-plate spline from the 2D pose space), time signal f (a cubic B-spline through the pose
space), with edits that return a new :class:`PoseSpace`.

Modules
-------
signals
    The three signals, MDS placement with pinned frames, :func:`build_pose_space` and
    :class:`PoseSpace` with its edits.
canvas
    Pure geometry of the pose-space canvas: view transform, what to draw, hit-testing,
    strokes, and a software rendering to RGBA / PNG.
"""

from .canvas import (
    CanvasGeometry,
    Hit,
    View,
    canvas_geometry,
    fit_space_view,
    fit_view,
    hit_test,
    render_png,
    render_rgba,
    stroke_to_pose,
    time_colors,
)
from .signals import (
    MIN_FRAMES,
    PoseSignal,
    PoseSpace,
    ShapeSignal,
    TimeSignal,
    build_pose_space,
    centripetal_params,
    fit_pose_signal,
    fit_time_signal,
    greedy_site_order,
    mds_positions,
    piegl_tiller_knots,
    shape_signal,
    shape_signal_from_examples,
    stress,
)

__all__ = [
    "MIN_FRAMES",
    "CanvasGeometry",
    "Hit",
    "PoseSignal",
    "PoseSpace",
    "ShapeSignal",
    "TimeSignal",
    "View",
    "build_pose_space",
    "canvas_geometry",
    "centripetal_params",
    "fit_pose_signal",
    "fit_space_view",
    "fit_time_signal",
    "fit_view",
    "greedy_site_order",
    "hit_test",
    "mds_positions",
    "piegl_tiller_knots",
    "render_png",
    "render_rgba",
    "shape_signal",
    "shape_signal_from_examples",
    "stress",
    "stroke_to_pose",
    "time_colors",
]
