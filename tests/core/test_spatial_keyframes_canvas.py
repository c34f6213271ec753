"""Spatial keyframes on the pose-space canvas: marker edits of a compacted clip (Igarashi et al.'s
spatial keyframing on Costa and Esperança's compaction), the clip presented to the canvas
(anim_signals.spatialkeys.canvas.canvas_model with posespace.canvas / shapes / render), and
performances recorded there (timed_stroke_frames, even_stroke_frames).

Expectations are independent of the code under test: the RBF must give back each key pose at its
marker (the poses themselves, as matrices), pixels come from the view's own transform, diamonds
are checked by their areas and vertex offsets, and the stroke samplers against hand-computed
values and slow loops written plainly here (with exact integer arithmetic for frame counts).
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from anim_signals.posespace import palette, shapes
from anim_signals.posespace.canvas import HIT_KINDS, canvas_geometry, fit_space_view, hit_test
from anim_signals.posespace.render import render_rgba
from anim_signals.spatialkeys import (
    MARKER_SPACING,
    MAX_RECORDED_FRAMES,
    SpatialKeyframeClip,
    TrajectoryCurve,
    as_matrices,
    as_quaternions,
    canvas_model,
    compact_clip,
    even_stroke_frames,
    timed_stroke_frames,
)
from anim_signals.spatialkeys.generated import articulated_chain, generated_biped

N_FRAMES, N_JOINTS, N_KEYS = 40, 3, 5
WIDTH, HEIGHT = 320, 240


@pytest.fixture(scope="module")
def chain():
    return articulated_chain(N_FRAMES, N_JOINTS, seed=2)


@pytest.fixture(scope="module")
def clip(chain):
    return compact_clip(chain.quaternions, chain.parents, count=N_KEYS, optimise=False)


def other_pose(n_joints: int, seed: int) -> np.ndarray:
    """A pose that is no frame of any clip here: random rotations (scipy), as matrices (J, 3, 3)."""
    return Rotation.random(n_joints, random_state=seed).as_matrix()


def poses_at(sk: SpatialKeyframeClip, points) -> np.ndarray:
    """What the RBF of ``sk`` gives at ``points``, (K, J, 3, 3)."""
    return sk.reconstruct(np.asarray(points, dtype=float).reshape(-1, 2))


def extent(sk: SpatialKeyframeClip) -> float:
    return float(np.max(np.ptp(np.concatenate([sk.trajectory, sk.markers]), axis=0)))


def free_point(sk: SpatialKeyframeClip) -> np.ndarray:
    """A point of the plane away from every marker: the trajectory's centre shifted off the markers."""
    lo, hi = sk.trajectory.min(axis=0), sk.trajectory.max(axis=0)
    candidates = lo + (hi - lo) * np.array([[0.37, 0.61], [0.52, 0.23], [0.81, 0.77]])
    gaps = [float(np.min(np.linalg.norm(sk.markers - c, axis=1))) for c in candidates]
    return candidates[int(np.argmax(gaps))]


# ---------------------------------------------------------------------------------------------
# marker edits


def test_an_unedited_clip_has_its_markers_on_the_trajectory(clip, chain):
    assert clip.marker_points is None and len(clip.keys) == N_KEYS
    np.testing.assert_array_equal(clip.markers, clip.trajectory[clip.keys])
    np.testing.assert_allclose(poses_at(clip, clip.markers), as_matrices(chain.quaternions[clip.keys]), atol=1e-9)


@pytest.mark.parametrize("i", [0, 2, N_KEYS - 1])
def test_a_moved_marker_carries_its_pose_and_the_others_stay(clip, i):
    target = free_point(clip)
    moved = clip.with_marker_moved(i, target)
    np.testing.assert_array_equal(moved.markers[i], target)
    others = np.arange(N_KEYS) != i
    np.testing.assert_array_equal(moved.markers[others], clip.markers[others])
    np.testing.assert_array_equal(moved.keys, clip.keys)
    np.testing.assert_array_equal(moved.key_rotations, clip.key_rotations)
    # exact at every marker, the moved one at its new point
    np.testing.assert_allclose(poses_at(moved, moved.markers), clip.key_rotations, atol=1e-9)
    # the old point is no marker any more: the pose there is no longer key pose i
    old = poses_at(moved, clip.markers[i])[0]
    assert np.max(np.abs(old - clip.key_rotations[i])) > 1e-3
    # and the trajectory played through the moved marker is another motion
    assert np.max(np.abs(moved.reconstruct() - clip.reconstruct())) > 1e-3
    np.testing.assert_array_equal(moved.trajectory, clip.trajectory)


def test_moving_a_marker_onto_its_own_point_is_allowed(clip):
    same = clip.with_marker_moved(1, clip.markers[1])
    np.testing.assert_array_equal(same.markers, clip.markers)


def test_negative_marker_indices_count_from_the_end(clip):
    target = free_point(clip)
    np.testing.assert_array_equal(clip.with_marker_moved(-1, target).markers,
                                  clip.with_marker_moved(N_KEYS - 1, target).markers)
    np.testing.assert_array_equal(clip.with_marker_moved(-N_KEYS, target).markers[0], target)
    removed = clip.without_marker(-1)
    np.testing.assert_array_equal(removed.keys, clip.keys[:-1])
    np.testing.assert_array_equal(removed.markers, clip.markers[:-1])


@pytest.mark.parametrize("i", [N_KEYS, N_KEYS + 3, -N_KEYS - 1])
def test_unknown_markers_are_refused(clip, i):
    with pytest.raises(ValueError, match=rf"Marker {i} does not exist: the model has {N_KEYS} markers"):
        clip.with_marker_moved(i, free_point(clip))
    with pytest.raises(ValueError, match="does not exist"):
        clip.without_marker(i)


@pytest.mark.parametrize("xy", [(np.nan, 0.0), (0.0, np.inf), (-np.inf, 1.0), (1.0, 2.0, 3.0), (1.0,)])
def test_a_marker_needs_two_finite_numbers(clip, chain, xy):
    with pytest.raises(ValueError, match="two finite numbers"):
        clip.with_marker_moved(0, xy)
    with pytest.raises(ValueError, match="two finite numbers"):
        clip.with_marker_added(chain.quaternions[7], xy)


def test_markers_must_stay_distinct_points(clip, chain):
    size = extent(clip)
    with pytest.raises(ValueError, match="Another marker is already at that point"):
        clip.with_marker_moved(0, clip.markers[3])
    with pytest.raises(ValueError, match="Another marker is already at that point"):
        clip.with_marker_added(chain.quaternions[7], clip.markers[2])
    # within MARKER_SPACING of the layout's extent is the same point; ten times that is not
    nudge = np.array([0.5 * MARKER_SPACING * size, 0.0])
    with pytest.raises(ValueError, match="Another marker"):
        clip.with_marker_moved(0, clip.markers[3] + nudge)
    with pytest.raises(ValueError, match="Another marker"):
        clip.with_marker_added(chain.quaternions[7], clip.markers[2] - nudge)
    apart = clip.with_marker_moved(0, clip.markers[3] + 20 * nudge)
    np.testing.assert_array_equal(apart.markers[0], clip.markers[3] + 20 * nudge)


def test_a_marker_added_from_a_pose_gives_that_pose_back(clip):
    pose = other_pose(N_JOINTS, seed=11)
    point = free_point(clip)
    added = clip.with_marker_added(as_quaternions(pose), point)
    assert added.keys.tolist() == clip.keys.tolist() + [-1]
    np.testing.assert_array_equal(added.markers[:-1], clip.markers)
    np.testing.assert_array_equal(added.markers[-1], point)
    np.testing.assert_allclose(poses_at(added, point)[0], pose, atol=1e-9)
    np.testing.assert_allclose(poses_at(added, clip.markers), clip.key_rotations, atol=1e-9)
    # matrices are accepted as well as quaternions, and a frame of the clip may be named
    framed = clip.with_marker_added(pose, point, frame=17)
    assert framed.keys[-1] == 17
    np.testing.assert_allclose(framed.key_rotations[-1], pose, atol=1e-12)


def test_edits_compose_and_stay_exact(clip, chain):
    pose = other_pose(N_JOINTS, seed=12)
    lo, hi = clip.trajectory.min(axis=0), clip.trajectory.max(axis=0)
    edited = (clip.with_marker_added(pose, lo - 0.3 * (hi - lo))
              .with_marker_moved(1, hi + 0.2 * (hi - lo))
              .without_marker(3)
              .with_marker_added(chain.quaternions[5], free_point(clip), frame=5))
    assert edited.keys.tolist() == [clip.keys[0], clip.keys[1], clip.keys[2], clip.keys[4], -1, 5]
    expected = np.concatenate([clip.key_rotations[[0, 1, 2, 4]], pose[None],
                               as_matrices(chain.quaternions[5])[None]])
    np.testing.assert_allclose(poses_at(edited, edited.markers), expected, atol=1e-9)


def test_removing_markers_keeps_the_rest_exact_and_stops_at_three(clip):
    removed = clip.without_marker(2)
    np.testing.assert_array_equal(removed.keys, np.delete(clip.keys, 2))
    np.testing.assert_array_equal(removed.markers, np.delete(clip.markers, 2, axis=0))
    np.testing.assert_allclose(poses_at(removed, removed.markers), np.delete(clip.key_rotations, 2, axis=0),
                               atol=1e-9)
    assert np.max(np.abs(poses_at(removed, clip.markers[2])[0] - clip.key_rotations[2])) > 1e-3
    three = removed.without_marker(0)
    assert len(three.keys) == 3
    np.testing.assert_allclose(poses_at(three, three.markers), three.key_rotations, atol=1e-9)
    with pytest.raises(ValueError, match="at least 3 are needed"):
        three.without_marker(1)


@pytest.mark.parametrize("shape", [(N_JOINTS - 1, 4), (N_JOINTS + 1, 4), (N_JOINTS + 2, 3, 3)])
def test_a_pose_of_another_joint_count_is_refused(clip, shape):
    pose = np.zeros(shape)
    pose[..., 0] = 1.0  # identity quaternions, or valid-looking matrix rows
    if len(shape) == 3:
        pose = np.broadcast_to(np.eye(3), shape)
    with pytest.raises(ValueError, match=rf"The pose has {shape[0]} joints; the model has {N_JOINTS}"):
        clip.with_marker_added(pose, free_point(clip))


def test_a_non_finite_pose_is_refused(clip):
    pose = as_quaternions(other_pose(N_JOINTS, seed=3))
    pose[1, 2] = np.nan
    with pytest.raises(ValueError):
        clip.with_marker_added(pose, free_point(clip))
    matrices = other_pose(N_JOINTS, seed=3)
    matrices[0, 0, 0] = np.inf
    with pytest.raises(ValueError):
        clip.with_marker_added(matrices, free_point(clip))


@pytest.mark.parametrize("frame", [N_FRAMES, N_FRAMES + 60, -2])
def test_a_marker_frame_outside_the_trajectory_is_refused(clip, chain, frame):
    # else the edit would save a record that from_dict rejects as damaged
    with pytest.raises(ValueError, match=rf"Frame {frame} is no row of the trajectory \(0-{N_FRAMES - 1}"):
        clip.with_marker_added(chain.quaternions[7], free_point(clip), frame=frame)


def test_edits_leave_the_original_clip_as_it_was(chain):
    # a clip of its own: this test writes into arrays, and must not spoil the shared fixture if it fails
    clip = compact_clip(chain.quaternions, chain.parents, count=N_KEYS, optimise=False)
    before = {name: np.array(getattr(clip, name), copy=True) for name in ("keys", "key_rotations", "trajectory",
                                                                         "markers")}
    edits = [clip.with_marker_moved(0, free_point(clip)),
             clip.with_marker_added(chain.quaternions[7], free_point(clip)),
             clip.without_marker(1)]
    for edited in edits:  # writing into an edit's arrays must not reach the original
        edited.keys[:] = 99
        edited.key_rotations[...] = 0.0
        edited.markers[...] = -7.0
    for name, value in before.items():
        np.testing.assert_array_equal(getattr(clip, name), value, err_msg=name)
    assert clip.marker_points is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        clip.keys = np.arange(3)  # type: ignore[misc]
    # nor does writing into the original reach an edit made before
    moved = clip.with_marker_moved(0, free_point(clip))
    original_rotations = clip.key_rotations.copy()
    clip.key_rotations[0] = 0.0
    np.testing.assert_array_equal(moved.key_rotations, original_rotations)


# ---------------------------------------------------------------------------------------------
# storage


def test_an_edited_clip_survives_a_json_round_trip(clip, chain):
    pose = other_pose(N_JOINTS, seed=21)
    edited = (clip.with_marker_moved(2, free_point(clip) * 1.1 + 0.013)
              .with_marker_added(pose, (np.pi, -np.e))
              .without_marker(0))
    data = edited.to_dict()
    assert data["keys"] == edited.keys.tolist() and data["keys"][-1] == -1
    back = SpatialKeyframeClip.from_dict(json.loads(json.dumps(data)))
    np.testing.assert_array_equal(back.keys, edited.keys)
    assert back.marker_points is not None
    np.testing.assert_array_equal(back.markers, edited.markers)  # floats survive JSON exactly
    np.testing.assert_array_equal(back.trajectory, edited.trajectory)
    np.testing.assert_allclose(back.key_rotations, edited.key_rotations, atol=1e-12)
    np.testing.assert_allclose(poses_at(back, (np.pi, -np.e))[0], pose, atol=1e-9)
    np.testing.assert_allclose(back.reconstruct(), edited.reconstruct(), atol=1e-9)
    assert back.blend == edited.blend


def test_an_unedited_clip_is_stored_without_marker_positions(clip):
    back = SpatialKeyframeClip.from_dict(json.loads(json.dumps(clip.to_dict())))
    assert back.marker_points is None
    np.testing.assert_array_equal(back.keys, clip.keys)
    np.testing.assert_array_equal(back.markers, clip.trajectory[clip.keys])
    # a marker moved away and back is the unedited layout again
    there_and_back = clip.with_marker_moved(1, free_point(clip)).with_marker_moved(1, clip.markers[1])
    assert SpatialKeyframeClip.from_dict(there_and_back.to_dict()).marker_points is None


def test_a_damaged_record_is_refused(clip):
    added = clip.with_marker_added(other_pose(N_JOINTS, seed=4), free_point(clip))
    beyond = dict(clip.to_dict(), keys=[0, 10, 20, 29, N_FRAMES])
    with pytest.raises(ValueError, match=rf"do not fit a trajectory of {N_FRAMES} frames"):
        SpatialKeyframeClip.from_dict(beyond)
    below = dict(clip.to_dict(), keys=[0, 10, -2, 29, 39])
    with pytest.raises(ValueError, match="do not fit"):
        SpatialKeyframeClip.from_dict(below)
    for missing in ({k: v for k, v in added.to_dict().items() if k != "markers"},
                    dict(added.to_dict(), markers=[]), dict(added.to_dict(), markers=None)):
        with pytest.raises(ValueError, match="markers without a frame need their stored positions"):
            SpatialKeyframeClip.from_dict(missing)
    with pytest.raises(ValueError):  # marker positions of another count
        SpatialKeyframeClip.from_dict(dict(added.to_dict(), markers=added.to_dict()["markers"][:-2]))


# ---------------------------------------------------------------------------------------------
# the canvas


FIRST_FRAME = 1.0


@pytest.fixture(scope="module")
def edited(clip):
    lo, hi = clip.trajectory.min(axis=0), clip.trajectory.max(axis=0)
    return clip.with_marker_moved(3, lo + np.array([0.5, 0.9]) * (hi - lo)).with_marker_added(
        other_pose(N_JOINTS, seed=5), lo + np.array([0.1, 0.5]) * (hi - lo))


def test_canvas_model_presents_frames_markers_and_times(edited):
    shown = canvas_model(edited, first_frame=FIRST_FRAME)
    view = fit_space_view(shown, WIDTH, HEIGHT)
    g = canvas_geometry(shown, view)
    np.testing.assert_allclose(g.frame_points, view.to_pixels(edited.trajectory), rtol=0, atol=1e-9)
    np.testing.assert_allclose(g.markers, view.to_pixels(edited.markers), rtol=0, atol=1e-9)
    assert g.marker_frames.tolist() == edited.keys.tolist() and g.marker_frames[-1] == -1
    np.testing.assert_array_equal(g.frame_numbers, FIRST_FRAME + np.arange(N_FRAMES))
    assert shown.n == N_FRAMES and len(g.sites) == 0 and len(g.pins) == 0 and len(g.control) == 0
    # the curve runs through the frames, first to last
    np.testing.assert_allclose(g.curve[[0, -1]], g.frame_points[[0, -1]], atol=1e-9)
    inside = (g.frame_points >= 0) & (g.frame_points <= [WIDTH, HEIGHT])
    assert inside.all()


def test_trajectory_curve_is_straight_between_frames():
    curve = TrajectoryCurve(np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 4.0]]), np.array([5.0, 6.0, 7.0]))
    np.testing.assert_allclose(curve.evaluate(6.5), [2.0, 2.0])
    np.testing.assert_allclose(curve.evaluate([[5.25, 6.0], [3.0, 9.0]]),
                               [[[0.5, 0.0], [2.0, 0.0]], [[0.0, 0.0], [2.0, 4.0]]])  # clamped outside
    assert curve.control.shape == (0, 2)


def test_the_current_frame_ring_follows_the_trajectory(clip):
    shown = canvas_model(clip, first_frame=FIRST_FRAME)
    view = fit_space_view(shown, WIDTH, HEIGHT)
    dots = view.to_pixels(clip.trajectory)
    # curve samples on whole frames (3 per frame): the ring sits exactly on a frame's dot, and on
    # the straight line between two dots at a half frame
    aligned = 3 * (N_FRAMES - 1) + 1
    for row in (0, 11, 23, N_FRAMES - 1):
        g = canvas_geometry(shown, view, current_time=FIRST_FRAME + row, curve_samples=aligned)
        np.testing.assert_allclose(g.current, dots[row], atol=1e-9)
        assert g.current_time == FIRST_FRAME + row
    g = canvas_geometry(shown, view, current_time=FIRST_FRAME + 17.5, curve_samples=2 * (N_FRAMES - 1) + 1)
    np.testing.assert_allclose(g.current, 0.5 * (dots[17] + dots[18]), atol=1e-9)
    g = canvas_geometry(shown, view, current_time=FIRST_FRAME + 17.25, curve_samples=4 * (N_FRAMES - 1) + 1)
    np.testing.assert_allclose(g.current, 0.75 * dots[17] + 0.25 * dots[18], atol=1e-9)
    # with the canvas's default sampling the ring is within a fraction of a pixel of the dot
    # (samples straddling a frame cut the polyline's corner there)
    for row in range(N_FRAMES):
        g = canvas_geometry(shown, view, current_time=FIRST_FRAME + row)
        assert np.linalg.norm(g.current - dots[row]) < 0.25
    # clamped to the clip's frames
    before = canvas_geometry(shown, view, current_time=FIRST_FRAME - 30.0)
    np.testing.assert_allclose(before.current, dots[0], atol=1e-9)
    assert before.current_time == FIRST_FRAME


def test_a_marker_is_picked_before_the_frame_under_it(clip):
    shown = canvas_model(clip, first_frame=FIRST_FRAME)
    view = fit_space_view(shown, WIDTH, HEIGHT)
    g = canvas_geometry(shown, view)
    assert HIT_KINDS[0] == "MARKER"
    for i, key in enumerate(clip.keys):
        dot = view.to_pixels(clip.trajectory[key])
        hit = hit_test(g, dot)
        assert (hit.kind, hit.index) == ("MARKER", i) and hit.distance_px == pytest.approx(0.0, abs=1e-9)
        off = hit_test(g, dot + [3.0, -4.0])  # 5 px off, within the 8 px pick radius
        assert (off.kind, off.index) == ("MARKER", i) and off.distance_px == pytest.approx(5.0, abs=1e-9)
        frame = hit_test(g, dot, kinds=("FRAME",))
        assert (frame.kind, frame.index, frame.time) == ("FRAME", key, FIRST_FRAME + key)
    # a press on a frame's dot away from the markers picks that frame
    dots = view.to_pixels(clip.trajectory)
    lonely = [i for i in range(N_FRAMES) if np.min(np.linalg.norm(g.markers - dots[i], axis=1)) > 8.0]
    assert len(lonely) > N_FRAMES // 2
    for i in lonely:
        assert (hit_test(g, dots[i]).kind, hit_test(g, dots[i]).index) == ("FRAME", i)


def test_a_moved_marker_is_picked_where_it_was_moved(clip):
    lo, hi = clip.trajectory.min(axis=0), clip.trajectory.max(axis=0)
    moved = clip.with_marker_moved(2, lo + np.array([0.5, 0.9]) * (hi - lo))
    shown = canvas_model(moved, first_frame=FIRST_FRAME)
    view = fit_space_view(shown, WIDTH, HEIGHT)
    g = canvas_geometry(shown, view)
    assert hit_test(g, view.to_pixels(moved.markers[2])).index == 2
    old = hit_test(g, view.to_pixels(clip.markers[2]))  # its frame's dot is a frame again
    assert old.kind == "FRAME" and old.index == clip.keys[2]


def test_the_fitted_view_shows_a_marker_moved_far_away(clip):
    lo, hi = clip.trajectory.min(axis=0), clip.trajectory.max(axis=0)
    far = hi + 3.0 * (hi - lo)
    moved = clip.with_marker_moved(0, far)
    plain_view = fit_space_view(canvas_model(clip), WIDTH, HEIGHT)
    x, y = plain_view.to_pixels(far)
    assert not (0 <= x <= WIDTH and 0 <= y <= HEIGHT)  # the trajectory's view would lose it
    view = fit_space_view(canvas_model(moved), WIDTH, HEIGHT)
    margin = 0.08 * np.array([WIDTH, HEIGHT])
    for point in np.concatenate([view.to_pixels(moved.markers), view.to_pixels(moved.trajectory)]):
        assert np.all(point >= margin - 1e-6) and np.all(point <= np.array([WIDTH, HEIGHT]) - margin + 1e-6)
    # the far marker is the top-right corner of everything drawn: it touches the margin on one side
    x, y = view.to_pixels(far)
    assert math.isclose(x, WIDTH - margin[0], abs_tol=1e-6) or math.isclose(y, HEIGHT - margin[1], abs_tol=1e-6)


def diamond_area(half_diagonal: float) -> float:
    return 2.0 * half_diagonal * half_diagonal


@pytest.mark.parametrize("ui_scale", [1.0, 2.0])
def test_markers_are_drawn_as_outlined_diamonds(edited, ui_scale):
    shown = canvas_model(edited, first_frame=FIRST_FRAME)
    view = fit_space_view(shown, WIDTH, HEIGHT)
    g = canvas_geometry(shown, view, current_time=FIRST_FRAME + 4)
    marks = shapes.canvas_marks(g, (0.0, 0.0, WIDTH, HEIGHT), ui_scale)
    fills = [i for i, m in enumerate(marks) if m.color == palette.MARKER]
    assert len(fills) == 1
    fill, outline = marks[fills[0]], marks[fills[0] - 1]
    assert outline.color == palette.OUTLINE and fill.primitive == outline.primitive == "TRIS"
    m = len(edited.markers)
    for mark, half in ((outline, shapes.MARKER_HALF * ui_scale), (fill, (shapes.MARKER_HALF - 1.5) * ui_scale)):
        tris = mark.vertices.reshape(m, 4, 3, 2)  # marker, segment, vertex, xy
        centres = view.to_pixels(edited.markers)
        np.testing.assert_allclose(tris[:, :, 0], np.repeat(centres[:, None], 4, axis=1), atol=1e-9)
        rim = tris[:, :, 1:].reshape(m, 8, 2) - centres[:, None]
        # a diamond: every corner on an axis through the centre, at the half diagonal
        np.testing.assert_allclose(np.min(np.abs(rim), axis=-1), 0.0, atol=1e-9)
        np.testing.assert_allclose(np.max(np.abs(rim), axis=-1), half, atol=1e-9)
        a, b, c = tris[..., 0, :], tris[..., 1, :], tris[..., 2, :]
        areas = 0.5 * np.abs((b[..., 0] - a[..., 0]) * (c[..., 1] - a[..., 1])
                             - (c[..., 0] - a[..., 0]) * (b[..., 1] - a[..., 1]))
        np.testing.assert_allclose(areas.sum(axis=1), diamond_area(half), rtol=1e-12)
    # markers come above the frame dots and below the current frame's ring
    kinds = [(mk.primitive, mk.color) for mk in marks]
    assert kinds.index(("TRIS", palette.CURRENT)) > fills[0]
    # a pose space has no markers and draws none
    plain = dataclasses.replace(g, markers=np.zeros((0, 2)), marker_frames=np.zeros(0, dtype=int))
    assert not [mk for mk in shapes.canvas_marks(plain, (0, 0, WIDTH, HEIGHT)) if mk.color == palette.MARKER]


def test_render_paints_markers_in_the_marker_colour(edited):
    shown = canvas_model(edited, first_frame=FIRST_FRAME)
    view = fit_space_view(shown, WIDTH, HEIGHT)
    img = render_rgba(canvas_geometry(shown, view), title="", legend=False)
    assert img.shape == (HEIGHT, WIDTH, 4)

    def pixel(xy):
        col, row = int(math.floor(xy[0])), HEIGHT - 1 - int(math.floor(xy[1]))
        return img[row, col, :3]

    marker_rgb = np.asarray(palette.MARKER[:3], dtype=np.float32)
    for xy in view.to_pixels(edited.markers):
        np.testing.assert_allclose(pixel(xy), marker_rgb, atol=1e-6)
    # a frame that is no key, far from every marker, keeps its time colour
    dots = view.to_pixels(edited.trajectory)
    markers_px = view.to_pixels(edited.markers)
    lonely = [i for i in range(N_FRAMES) if np.min(np.linalg.norm(markers_px - dots[i], axis=1)) > 12.0]
    assert lonely
    for i in lonely:
        assert np.max(np.abs(pixel(dots[i]) - marker_rgb)) > 0.05


# ---------------------------------------------------------------------------------------------
# recorded performances: a timed cursor path


def test_timed_stroke_frames_by_hand():
    got = timed_stroke_frames([[0.0, 0.0], [2.0, 0.0], [2.0, 2.0]], [0.0, 1.0, 1.5], 4.0)
    # frames at 0, .25, ..., 1.5 s: along x at 2 units/s, then up at 4 units/s
    expected = [[0, 0], [0.5, 0], [1, 0], [1.5, 0], [2, 0], [2, 1], [2, 2]]
    np.testing.assert_allclose(got, expected, atol=1e-12)
    # any time origin; a last frame before the last sample (0.9 s at 10 fps: 10 frames, the last at 0.9 s)
    shifted = timed_stroke_frames([[0.0, 0.0], [1.0, 3.0]], [1000.0, 1000.95], 10.0)
    assert len(shifted) == 10
    np.testing.assert_allclose(shifted[-1], [0.9 / 0.95, 3 * 0.9 / 0.95], atol=1e-9)
    # a second at 24 fps is 25 frames
    assert len(timed_stroke_frames([[0.0, 0.0], [1.0, 0.0]], [0.0, 1.0], 24)) == 25


def test_timed_stroke_frames_keep_the_last_of_equal_timestamps():
    got = timed_stroke_frames([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0], [2.0, 0.0]], [0.0, 1.0, 1.0, 2.0], 2.0)
    np.testing.assert_allclose(got, [[0, 0], [2.5, 2.5], [5, 5], [3.5, 2.5], [2, 0]], atol=1e-12)
    start = timed_stroke_frames([[9.0, 9.0], [0.0, 0.0], [4.0, 0.0]], [0.0, 0.0, 1.0], 4.0)
    np.testing.assert_allclose(start[0], [0.0, 0.0])


def slow_timed_frames(points, seconds, fps, count):
    """Positions at ``count`` frames, found by walking the samples (the last of equal timestamps)."""
    times, where = [], []
    for t, p in zip(seconds, points):
        if times and t == times[-1]:
            where[-1] = p
        else:
            times.append(t)
            where.append(p)
    out = []
    for k in range(count):
        u = times[0] + k / fps
        if u >= times[-1]:
            out.append(where[-1])
            continue
        j = 0
        while times[j + 1] <= u:
            j += 1
        a = (u - times[j]) / (times[j + 1] - times[j])
        out.append([where[j][0] + a * (where[j + 1][0] - where[j][0]),
                    where[j][1] + a * (where[j + 1][1] - where[j][1])])
    return np.array(out, dtype=float)


coordinate = st.floats(-100.0, 100.0, allow_nan=False)


@st.composite
def recordings(draw):
    """Cursor samples with millisecond timestamps (some equal), an origin and an integer frame rate."""
    n = draw(st.integers(2, 12))
    points = [[draw(coordinate), draw(coordinate)] for _ in range(n)]
    steps = [draw(st.integers(0, 400)) for _ in range(n - 1)]
    if sum(steps) == 0:
        steps[-1] = 1
    origin_ms = draw(st.integers(0, 10**6))
    ticks = origin_ms + np.concatenate([[0], np.cumsum(steps)])
    fps = draw(st.sampled_from([1, 12, 24, 25, 30, 60, 120]))
    return points, [int(t) for t in ticks], fps


@settings(max_examples=80, deadline=None)
@given(recordings())
def test_timed_stroke_frames_properties(recording):
    points, ticks, fps = recording
    seconds = np.array(ticks, dtype=float) / 1000.0
    got = timed_stroke_frames(points, seconds, fps)
    total_ms = ticks[-1] - ticks[0]
    count = total_ms * fps // 1000 + 1  # floor(duration * fps) + 1, in exact integers
    assert got.shape == (count, 2)
    np.testing.assert_allclose(got, slow_timed_frames(points, seconds.tolist(), fps, count), rtol=0, atol=1e-9)
    first = max(i for i, t in enumerate(ticks) if t == ticks[0])
    np.testing.assert_allclose(got[0], points[first], rtol=0, atol=1e-12)
    if total_ms * fps % 1000 == 0:  # the last frame falls on the last sample
        np.testing.assert_allclose(got[-1], points[-1], rtol=0, atol=1e-9)
    lo, hi = np.min(points, axis=0), np.max(points, axis=0)
    assert np.all(got >= lo - 1e-9) and np.all(got <= hi + 1e-9)


@pytest.mark.parametrize(("points", "seconds", "fps", "message"), [
    ([[0.0, 0.0]], [0.0], 24, "at least 2 timed points"),
    (np.zeros((0, 2)), [], 24, "at least 2 timed points, got 0 points"),
    ([[0.0, 0.0], [1.0, 1.0]], [0.0, 0.5, 1.0], 24, "at least 2 timed points, got 2 points and 3 times"),
    ([[0.0, np.nan], [1.0, 1.0]], [0.0, 1.0], 24, "NaN or infinite"),
    ([[0.0, 0.0], [1.0, 1.0]], [0.0, np.inf], 24, "NaN or infinite"),
    ([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]], [0.0, 1.0, 0.5], 24, "timestamps go backwards"),
    ([[0.0, 0.0], [1.0, 1.0]], [3.0, 3.0], 24, "No time elapsed"),
    ([[0.0, 0.0], [1.0, 1.0]], [0.0, 1.0], 0.0, "frame rate must be a positive number"),
    ([[0.0, 0.0], [1.0, 1.0]], [0.0, 1.0], -24.0, "frame rate must be a positive number"),
    ([[0.0, 0.0], [1.0, 1.0]], [0.0, 1.0], float("nan"), "frame rate must be a positive number"),
    ([[0.0, 0.0], [1.0, 1.0]], [0.0, 1.0], float("inf"), "frame rate must be a positive number"),
    ([[0.0, 0.0], [1.0, 1.0]], [0.0, MAX_RECORDED_FRAMES / 24.0], 24, f"more than {MAX_RECORDED_FRAMES}"),
])
def test_timed_stroke_frames_refuse_bad_recordings(points, seconds, fps, message):
    with pytest.raises(ValueError, match=message):
        timed_stroke_frames(points, seconds, fps)


def test_timed_stroke_frames_up_to_the_limit():
    longest = timed_stroke_frames([[0.0, 0.0], [1.0, 0.0]], [0.0, (MAX_RECORDED_FRAMES - 1) / 24.0], 24)
    assert len(longest) == MAX_RECORDED_FRAMES
    np.testing.assert_allclose(longest[-1], [1.0, 0.0], atol=1e-9)


# ---------------------------------------------------------------------------------------------
# recorded performances: a drawn stroke at constant speed


def test_even_stroke_frames_by_hand():
    # an L of lengths 3 and 1: 5 frames at steps of 1
    got = even_stroke_frames([[0.0, 0.0], [3.0, 0.0], [3.0, 1.0]], 5)
    np.testing.assert_allclose(got, [[0, 0], [1, 0], [2, 0], [3, 0], [3, 1]], atol=1e-12)
    # repeated mouse positions change nothing
    again = even_stroke_frames([[0.0, 0.0], [0.0, 0.0], [3.0, 0.0], [3.0, 0.0], [3.0, 1.0]], 5)
    np.testing.assert_allclose(again, got, atol=1e-12)
    np.testing.assert_array_equal(even_stroke_frames([[1.0, 2.0], [4.0, 6.0]], 2), [[1.0, 2.0], [4.0, 6.0]])


def slow_even_frames(points, frames):
    """Walk the stroke segment by segment, dropping a point at every arc-length step."""
    lengths = [math.dist(a, b) for a, b in zip(points[:-1], points[1:])]
    total = sum(lengths)
    out = []
    for k in range(frames):
        s = total * k / (frames - 1)
        walked = 0.0
        for (a, b), length in zip(zip(points[:-1], points[1:]), lengths):
            if length > 0.0 and s <= walked + length:
                f = (s - walked) / length
                out.append([a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1])])
                break
            walked += length
        else:
            out.append(points[-1])
    return np.array(out)


@st.composite
def strokes(draw):
    n = draw(st.integers(2, 10))
    points = [[draw(coordinate), draw(coordinate)] for _ in range(n)]
    for i in draw(st.lists(st.integers(1, n - 1), max_size=3)):  # repeated mouse positions
        points[i] = list(points[i - 1])
    if all(p == points[0] for p in points):
        points[-1] = [points[0][0] + 1.0, points[0][1]]
    return points, draw(st.integers(2, 60))


@settings(max_examples=80, deadline=None)
@given(strokes())
def test_even_stroke_frames_properties(stroke):
    points, frames = stroke
    got = even_stroke_frames(points, frames)
    assert got.shape == (frames, 2)
    np.testing.assert_array_equal(got[0], points[0])
    np.testing.assert_array_equal(got[-1], points[-1])
    scale = 1.0 + float(np.max(np.abs(points)))
    np.testing.assert_allclose(got, slow_even_frames(points, frames), rtol=0, atol=1e-9 * scale)
    # equal arc-length steps: no chord longer than a step, and the chords add up to at most the length
    total = sum(math.dist(a, b) for a, b in zip(points[:-1], points[1:]))
    chords = np.linalg.norm(np.diff(got, axis=0), axis=1)
    assert np.all(chords <= total / (frames - 1) + 1e-9 * scale)
    assert chords.sum() <= total + 1e-9 * scale


def test_even_stroke_frames_on_a_straight_stroke_are_evenly_spaced():
    # drawn with an uneven hand: the frames do not care how fast it was drawn
    xs = np.array([0.0, 0.1, 0.15, 2.0, 2.05, 7.0, 10.0])
    got = even_stroke_frames(np.column_stack([xs, 0.5 * xs]), 11)
    np.testing.assert_allclose(got, np.column_stack([np.arange(11.0), 0.5 * np.arange(11.0)]), atol=1e-12)


@pytest.mark.parametrize(("points", "frames", "message"), [
    ([[0.0, 0.0], [1.0, 0.0]], 1, "2 to"),
    ([[0.0, 0.0], [1.0, 0.0]], 0, "2 to"),
    ([[0.0, 0.0], [1.0, 0.0]], MAX_RECORDED_FRAMES + 1, f"2 to {MAX_RECORDED_FRAMES} frames"),
    ([[0.0, 0.0], [np.nan, 0.0]], 10, "NaN or infinite"),
    ([[0.0, 0.0], [1.0, -np.inf]], 10, "NaN or infinite"),
    ([[1.0, 1.0]], 10, "no length"),
    ([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], 10, "no length"),
    (np.zeros((0, 2)), 10, "no length"),
])
def test_even_stroke_frames_refuse_bad_strokes(points, frames, message):
    with pytest.raises(ValueError, match=message):
        even_stroke_frames(points, frames)


# ---------------------------------------------------------------------------------------------
# a larger rig


def test_biped_markers_stay_exact_through_edits_and_storage():
    biped = generated_biped(90)
    sk = compact_clip(biped.quaternions, biped.parents, count=6, optimise=False)
    pose = biped.quaternions[37]  # a frame that is no key, added as a pose
    lo, hi = sk.trajectory.min(axis=0), sk.trajectory.max(axis=0)
    edited = sk.with_marker_added(pose, lo + 0.3 * (hi - lo)).with_marker_moved(0, hi + 0.1 * (hi - lo))
    back = SpatialKeyframeClip.from_dict(json.loads(json.dumps(edited.to_dict())))
    expected = np.concatenate([as_matrices(biped.quaternions[sk.keys]), as_matrices(pose)[None]])
    np.testing.assert_allclose(poses_at(back, back.markers), expected, atol=1e-9)
