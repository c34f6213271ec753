"""Picking frames on a dense pose space (issue 16, item 3).

The generated biped of ``scripts/demo.py`` (240 frames: a walk with a jump) gets a pose space with
131 time-signal control points, shown on a canvas of the sidebar's default size. Every frame's dot
is computed with the canvas's own view transform; a press 2 px from a dot, in eight directions,
must pick a frame, the nearest one (a control point within 8 px used to win every time: 3 of the
240 frames could be pinned).
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from anim_signals.posespace import build_pose_space
from anim_signals.posespace.canvas import canvas_geometry, fit_space_view, hit_test

DEMO = Path(__file__).resolve().parents[2] / "scripts" / "demo.py"
# the canvas at the sidebar's default size: 12 UI units high, a 280 px sidebar less tabs and margins
CANVAS_WIDTH, CANVAS_HEIGHT = 228, 236
CONTROL_POINTS = 131
FIGURE_HEIGHT = 1.72  # the demo biped's head top


def demo_motion() -> dict:
    """``generate_motion`` of scripts/demo.py, taken from its source (the script itself needs bpy)."""
    tree = ast.parse(DEMO.read_text())
    wanted = {"FPS", "N_FRAMES", "smoothstep", "generate_motion"}
    keep = [node for node in tree.body
            if (isinstance(node, ast.FunctionDef) and node.name in wanted)
            or (isinstance(node, ast.Assign) and any(getattr(t, "id", None) in wanted for t in node.targets))]
    namespace: dict = {"np": np}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(DEMO), "exec"), namespace)
    return namespace["generate_motion"]()


@pytest.fixture(scope="module")
def biped_canvas():
    motion = demo_motion()
    # locations weigh 2 / figure height against radians, as the armature build weighs them
    rows = np.column_stack([motion[key] * (2.0 / FIGURE_HEIGHT if key[1] == "location" else 1.0)
                            for key in sorted(motion)])
    space = build_pose_space(rows, k=CONTROL_POINTS, row_size=1)
    view = fit_space_view(space, CANVAS_WIDTH, CANVAS_HEIGHT)
    return space, view, canvas_geometry(space, view)


DIRECTIONS = [(math.cos(a), math.sin(a)) for a in np.linspace(0.0, 2.0 * math.pi, 8, endpoint=False)]


def presses(view, space, offset_px: float):
    """(frame row, its dot, the press position) for every frame and direction ``offset_px`` off
    the dot; the dots from the canvas's own transform, independent of the geometry."""
    dots = view.to_pixels(space.positions)
    for i, dot in enumerate(dots):
        for d in DIRECTIONS:
            yield i, dot, dot + offset_px * np.array(d)


def test_the_biped_is_dense(biped_canvas):
    space, view, g = biped_canvas
    assert space.n == 240 and space.k == CONTROL_POINTS
    d = np.linalg.norm(g.frame_points[:, None, :] - g.control[None, :, :], axis=2).min(axis=1)
    assert np.mean(d < 8.0) > 0.9  # nearly every frame has a control point within the pick radius


def test_a_press_within_3_px_of_a_dot_pins_a_frame_the_nearest(biped_canvas):
    """A press 2 px off a dot picks a frame (no control point steals it), and the frame whose dot is
    nearest the press: that frame itself unless another frame's dot lies as close (consecutive
    frames of a 240-frame walk on a 228 px canvas are often 1-2 px apart, and no press can tell
    them apart)."""
    space, view, g = biped_canvas
    dots = view.to_pixels(space.positions)
    frame_kind = own = own_possible = total = 0
    for i, _dot, xy in presses(view, space, 2.0):
        h = hit_test(g, xy)
        total += 1
        frame_kind += h.kind == "FRAME"
        if h.kind == "FRAME":
            dist = np.linalg.norm(dots - xy, axis=1)
            assert dist[h.index] <= dist.min() + 1e-9  # the nearest dot
        if np.linalg.norm(dots - xy, axis=1).argmin() == i:
            own_possible += 1
            own += h.kind == "FRAME" and h.index == i
    assert frame_kind / total >= 0.95, f"{frame_kind / total:.1%} of the presses picked a frame"
    assert own == own_possible and own_possible > 0.3 * total


def test_isolated_frames_are_always_pinned(biped_canvas):
    """Every frame whose dot is over 4 px from all others is picked from 2 px in every direction."""
    space, view, g = biped_canvas
    dots = view.to_pixels(space.positions)
    gaps = np.linalg.norm(dots[:, None] - dots[None], axis=2) + np.diag(np.full(len(dots), np.inf))
    isolated = set(np.flatnonzero(gaps.min(axis=1) > 4.0).tolist())
    assert len(isolated) >= 3
    for i, _dot, xy in presses(view, space, 2.0):
        if i in isolated:
            h = hit_test(g, xy)
            assert h.kind == "FRAME" and h.index == i


def test_the_nearest_wins_and_control_points_stay_reachable(biped_canvas):
    """A control point with no frame's dot within 3 px is picked on it; one under a dot is picked by
    the Edit Time tool, which looks for control points only."""
    space, view, g = biped_canvas
    reachable = 0
    for j, cp in enumerate(g.control):
        h = hit_test(g, cp)
        frame_d = float(np.min(np.linalg.norm(g.frame_points - cp, axis=1)))
        if frame_d > 3.0:  # no frame's dot under the mouse: the control point is the nearest
            assert h.kind == "CONTROL_POINT" and h.index == j
            reachable += 1
        only = hit_test(g, cp, kinds=("CONTROL_POINT",))  # a tool that edits control points only
        assert only.kind == "CONTROL_POINT" and only.index == j
    assert reachable >= 3


def test_frames_win_ties_and_far_control_points_lose():
    space = build_pose_space(np.column_stack([np.cos(np.linspace(0, 3, 12)), np.sin(np.linspace(0, 3, 12)),
                                              np.linspace(0, 1, 12)]), row_size=1)
    view = fit_space_view(space, 320, 240)
    g = canvas_geometry(space, view)
    frame = g.frame_points[5].copy()
    far = frame + [200.0, 200.0]
    g.control = np.array([frame + [5.0, 0.0], far])
    # 2.5 px from the frame, 2.5 px from the control point: the frame
    h = hit_test(g, frame + [2.5, 0.0])
    assert h.kind == "FRAME" and h.index == 5
    # 4 px from the frame, 1 px from the control point: the control point
    h = hit_test(g, frame + [4.0, 0.0])
    assert h.kind == "CONTROL_POINT" and h.index == 0
    # a control point right under the press loses to a frame 2.9 px away (within 3 px), except for
    # a tool that picks control points only
    g.control = np.array([frame + [2.9, 0.0]])
    h = hit_test(g, frame + [2.9, 0.0])
    assert h.kind == "FRAME" and h.index == 5
    assert hit_test(g, frame + [2.9, 0.0], kinds=("CONTROL_POINT",)).kind == "CONTROL_POINT"
