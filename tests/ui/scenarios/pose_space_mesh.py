"""Pose space on a generated mesh (a PC2-played flag), used the way an animator does: built by the
panel's Build button; the canvas draws the frame dots where the core puts them and the current-frame
ring where the scene's frame is; the Navigate, Edit Time, Pin and Sketch buttons each start their
tool (issue 16 fault 1) and the same four jobs are done by dragging on the canvas directly; wheel
zoom, middle-mouse pan, Esc during a drag and Ctrl+Z after a pin; Bake and Resample x0.5 (issue 16
fault 4: the scene's range follows the new frames).

Every expectation comes from the core (the stored model, ``View`` arithmetic, ``PoseSpace.at``) or
from the state before the action, never from the tool's own report."""

from __future__ import annotations

from collections.abc import Iterator

import bpy
import numpy as np
from uikit import (
    RedrawCounter,
    Wait,
    canvas_geometry,
    check,
    ext,
    make_active,
    modal_running,
    move_mouse,
    press_drag,
    press_key,
    probe,
    region_of,
    region_pixels,
    screenshot,
    settle,
    ui_scale,
    wavy_flag,
    xdotool,
)
from uikit import evaluated_coords as kit_evaluated_coords

PS_NAME = "Flag.posespace"
BUILD = "anim_signals.build_pose_space"
NAVIGATE = "anim_signals.pose_space_navigate"
EDIT_TIME = "anim_signals.pose_space_edit_time"
PIN = "anim_signals.pose_space_pin"
SKETCH = "anim_signals.pose_space_sketch"
BAKE = "anim_signals.pose_space_bake"
RESAMPLE = "anim_signals.pose_space_resample"
VIEW_ALL = "anim_signals.pose_space_view_all"
TOOLS = (NAVIGATE, EDIT_TIME, PIN, SKETCH)
TOOL_NAMES = {NAVIGATE: "Navigate", EDIT_TIME: "Edit Time", PIN: "Pin", SKETCH: "Sketch"}
# Blender blends the shape keys in float32: coordinates of about 1 unit carry ~1e-7 of rounding per
# key, so 1e-5 is a hundred times that and still far below the changes a drag makes (> 1e-2).
COORD_TOL = 1e-5
CLEAR_PX = 12.0  # a "free" canvas spot: no frame dot or control point within this (> the 8 px hit radius)


# ----------------------------------------------------------------------------------------------
# reading the state
# ----------------------------------------------------------------------------------------------

def ps_object():
    return bpy.data.objects.get(PS_NAME)  # looked up by name: Ctrl+Z replaces the object


def stored_space():
    ob = ps_object()
    return None if ob is None else ext("operators.pose_space").load_space(ob)


def evaluated_coords(ob) -> np.ndarray:
    """The vertices Blender shows, flat (3V,)."""
    return kit_evaluated_coords(ob).ravel()


def stamp_of(ob) -> str | None:
    """The stored model's version (new on every save)."""
    return ext("operators.pose_space.storage").space_stamp(ob)


def cursor_of(ob):
    cur = ext("operators.pose_space.canvas_state").state_of(ob).cursor
    return None if cur is None else np.array(cur, dtype=float)


def pins_of(space) -> dict:
    return {int(i): np.asarray(p, dtype=float) for i, p in space.pins.items()}


def same_pins(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.allclose(a[i], b[i], atol=1e-12) for i in a)


# ----------------------------------------------------------------------------------------------
# pixels
# ----------------------------------------------------------------------------------------------

def inside(rect, xy, margin: float = 0.0) -> bool:
    x0, y0, w, h = rect
    return x0 + margin <= xy[0] <= x0 + w - margin and y0 + margin <= xy[1] <= y0 + h - margin


def dots_found(pixels: np.ndarray, rect, points, colors) -> tuple[int, int, float]:
    """How many frame dots inside the canvas are drawn at ``points`` in their own colour; and the
    share of canvas pixels that differ from its background."""
    x0, y0, w, h = (int(round(v)) for v in rect)
    canvas = pixels[y0:y0 + h, x0:x0 + w]
    background = np.median(canvas.reshape(-1, 3), axis=0)
    differs = np.abs(canvas - background).max(axis=2) > 0.08
    hits = n = 0
    for (px, py), color in zip(np.asarray(points), np.asarray(colors)[:, :3]):
        if not inside(rect, (px, py), 3.0):
            continue
        n += 1
        ix, iy = int(round(px)), int(round(py))
        patch = pixels[max(iy - 1, 0):iy + 2, max(ix - 1, 0):ix + 2].reshape(-1, 3)
        if patch.size and np.abs(patch - color).max(axis=1).min() < np.abs(background - color).max() * 0.5 + 0.05:
            hits += 1
    return hits, n, float(differs.mean())


def curve_shown(pixels: np.ndarray, rect, geom) -> tuple[int, int]:
    """Of the time signal's curve samples inside the canvas (every 4th), how many have a pixel of the
    curve's colour within 1 px."""
    color = np.asarray(ext("anim_signals.posespace.palette").CURVE[:3])
    shown = n = 0
    for x, y in geom.curve[::4]:
        if not inside(rect, (x, y), 3.0):
            continue
        n += 1
        ix, iy = int(round(x)), int(round(y))
        patch = pixels[iy - 1:iy + 2, ix - 1:ix + 2].reshape(-1, 3)
        shown += bool(patch.size and np.abs(patch - color).max(axis=1).min() < 0.15)
    return shown, n


def ring_angles(pixels: np.ndarray, center, scale: float = 1.0) -> int:
    """Of 16 directions, how many have a white pixel (the current-frame ring's colour, drawn over
    everything but the cursor) on the ring's annulus (radii 4.5-6 px) around ``center``."""
    found = 0
    for a in np.linspace(0.0, 2.0 * np.pi, 16, endpoint=False):
        for r in (4.6 * scale, 5.25 * scale, 5.9 * scale):
            x, y = int(round(center[0] + r * np.cos(a))), int(round(center[1] + r * np.sin(a)))
            if 0 <= y < pixels.shape[0] and 0 <= x < pixels.shape[1] and pixels[y, x].min() > 0.95:
                found += 1
                break
    return found


def sidebar_shot(area, name: str) -> np.ndarray:
    return region_pixels(screenshot(name), region_of(area, "UI"))


def free_spots(geom, rect, space, view) -> np.ndarray:
    """Whole canvas pixels with no frame dot or control point within CLEAR_PX, inside the frames'
    bounding box (so navigation is not held at its edge), best cleared first."""
    xs = np.arange(int(rect[0]) + 14, int(rect[0] + rect[2]) - 14, 4)
    ys = np.arange(int(rect[1]) + 14, int(rect[1] + rect[3]) - 14, 4)
    grid = np.array([(x, y) for x in xs for y in ys], dtype=float)
    marks = np.vstack([geom.frame_points, geom.control])
    clear = np.linalg.norm(grid[:, None] - marks[None], axis=2).min(axis=1)
    pose = view.to_pose(grid)
    lo, hi = space.positions.min(axis=0), space.positions.max(axis=0)
    ok = (clear >= CLEAR_PX) & np.all((pose >= lo) & (pose <= hi), axis=1)
    order = np.argsort(-clear[ok])
    return grid[ok][order]


def far_pair(spots: np.ndarray) -> tuple[tuple[float, float], tuple[float, float]]:
    """Two free spots far apart (the first well cleared, the second the farthest from it)."""
    a = spots[0]
    b = spots[int(np.argmax(np.linalg.norm(spots - a, axis=1)))]
    return (float(a[0]), float(a[1])), (float(b[0]), float(b[1]))


def lone_control_point(geom, rect, taken=()) -> int:
    """The control point farthest from every frame dot (and other control point), inside the canvas."""
    best, best_d = -1, -1.0
    for j, c in enumerate(geom.control):
        if j in taken or not inside(rect, c, 30.0):
            continue
        others = np.delete(geom.control, j, axis=0)
        d = min(np.linalg.norm(geom.frame_points - c, axis=1).min(), np.linalg.norm(others - c, axis=1).min())
        if d > best_d:
            best, best_d = j, float(d)
    return best


def px(xy) -> tuple[float, float]:
    """A whole region pixel (what an X event lands on)."""
    return float(round(xy[0])), float(round(xy[1]))


def main_region(area):
    return region_of(area, "WINDOW")


# ----------------------------------------------------------------------------------------------
# real events, one at a time
# ----------------------------------------------------------------------------------------------

def click(region, xy) -> Iterator[Wait]:
    """A left click once Blender has read everything sent before (the probe key's modifier releases,
    the move that makes the button hot)."""
    move_mouse(region, *xy)
    yield settle("pointer on the button", 2)
    xdotool("click", "1")


# ----------------------------------------------------------------------------------------------
# dragging: one X event at a time
# ----------------------------------------------------------------------------------------------

def drag_started(tool: str, ob):
    """The state a press on the canvas puts ``tool`` in (its drag has begun)."""
    st = ext("operators.pose_space.canvas_state").state_of(ob)
    cursor0 = st.cursor
    if tool == NAVIGATE:
        return lambda: modal_running(NAVIGATE) and st.cursor is not cursor0
    if tool == SKETCH:
        return lambda: modal_running(SKETCH) and st.stroke is not None
    if tool in (EDIT_TIME, PIN):
        return lambda: modal_running(tool) and st.preview is not None
    return lambda: modal_running(tool)


# ----------------------------------------------------------------------------------------------
# the scenario
# ----------------------------------------------------------------------------------------------

def run(area) -> Iterator[Wait]:
    scene = bpy.context.scene
    root = scene.anim_signals
    changed = [(root.pose_space, ("k", "l", "m")), (root.pose_space_canvas, ("sketch_frames",)),
               (root.pose_space_resample, ("mode", "speed")), (scene, ("frame_start", "frame_end"))]
    saved = [(owner, name, getattr(owner, name)) for owner, names in changed for name in names]
    frame = scene.frame_current
    try:
        yield from _scenario(area)
    finally:  # the settings and the scene's range as the next scenario expects them
        for owner, name, value in saved:
            setattr(owner, name, value)
        scene.frame_set(frame)


def _scenario(area) -> Iterator[Wait]:
    scene = bpy.context.scene
    root = scene.anim_signals
    sidebar = region_of(area, "UI")
    flag = wavy_flag()
    make_active(flag)
    # The defaults interpolate every frame (k = n + 2 = 26 control points among 24 dots); 12 / 12 / 4
    # keeps squares and dots apart, so presses on either are unambiguous. Set where the button reads them.
    root.pose_space.k, root.pose_space.l, root.pose_space.m = 12, 12, 4
    yield RedrawCounter.after(area, "sidebar redrawn for the flag", n=2)

    # 1. Build from the panel's button ----------------------------------------------------------
    found: dict = {}
    yield from scan_halves(sidebar, found, top=sidebar.height - 0.6 * 10.0 * ui_scale(), wanted=(BUILD,))
    build_xy = find(found, BUILD)
    if not check("Build Pose Space button found", build_xy is not None, str(sorted(found))):
        return
    check("the flag has no pose space before the build", ps_object() is None)
    yield from click(sidebar, build_xy)
    yield Wait("Build Pose Space finished", lambda: ps_object() is not None and not modal_running(BUILD)
               and bpy.context.view_layer.objects.active == ps_object(), 120.0)
    ps = ps_object()
    space = stored_space()
    check("the build used the sidebar's settings (n 24, k 12, l 12, m 4)",
          (space.n, space.k, space.l, space.m) == (24, 12, 12, 4), f"n {space.n} k {space.k} l {space.l} m {space.m}")
    yield RedrawCounter.after(area, "sidebar redrawn with the canvas", n=2)
    rect, geom = canvas_geometry(area, ps)
    if not check("the canvas appears in the sidebar", rect is not None, str(rect)):
        return
    pixels = sidebar_shot(area, "pose_space_mesh_built")
    hits, n, blank = dots_found(pixels, rect, geom.frame_points, geom.frame_colors)
    check("canvas is not blank", blank > 0.005, f"{100 * blank:.2f}% of the canvas differs from the background")
    # Some dots are covered by control points or the current-frame ring: 80 % must be found.
    check("frame dots drawn where the core puts them", hits >= 0.8 * n, f"{hits} of {n} dots found at their positions")

    # 5. The current-frame ring follows the scene's frame (real Right-arrow presses) ------------
    ring0 = geom.current.copy()
    check("current-frame ring drawn at the core's position for frame 1", ring_angles(pixels, ring0) >= 12,
          f"{ring_angles(pixels, ring0)} of 16 directions white at {np.round(ring0, 1)}")
    move_mouse(main_region(area), 300, 300)
    xdotool("key", "--repeat", "7", "--delay", "30", "Right")
    yield Wait("Right arrow x7: frame 8", lambda: scene.frame_current == 8, 20.0)
    yield RedrawCounter.after(area, "canvas redrawn at frame 8", n=2)
    rect, geom = canvas_geometry(area, ps)
    ring1 = geom.current.copy()
    pixels = sidebar_shot(area, "pose_space_mesh_ring_frame8")
    moved = float(np.linalg.norm(ring1 - ring0))
    check("the core moves the current frame's mark with the frame", moved > 15.0, f"{moved:.1f} px")
    check("current-frame ring drawn at the core's position for frame 8", ring_angles(pixels, ring1) >= 12,
          f"{ring_angles(pixels, ring1)} of 16 directions white at {np.round(ring1, 1)}")
    check("no ring left at frame 1's position", ring_angles(pixels, ring0) <= 4,
          f"{ring_angles(pixels, ring0)} of 16 directions white at {np.round(ring0, 1)}")

    # The panel's buttons below the canvas, found once (pins, which add a row above them, come last)
    root.pose_space_canvas.sketch_frames = 30  # the Sketch button carries it
    yield RedrawCounter.after(area, "sidebar redrawn with Sketch Frames 30", n=2)
    found = {}
    yield from scan_halves(sidebar, found, top=rect[1] - 4.0, wanted=(*TOOLS, VIEW_ALL, BAKE, RESAMPLE))
    buttons = {tool: find(found, tool, exact=f"bpy.ops.{tool}()" if tool == PIN else None)
               for tool in (*TOOLS, VIEW_ALL, BAKE, RESAMPLE)}
    if not check("Navigate, Edit Time, Pin, Sketch, Frame All, Bake and Resample buttons found",
                 all(buttons.values()), str({t.split(".")[1]: xy for t, xy in buttons.items()})):
        return

    # 2. The tool buttons (issue 16 fault 1) and 3. the same jobs by dragging on the canvas -------
    yield from button_navigate(area, buttons[NAVIGATE])
    yield from button_edit_time(area, buttons[EDIT_TIME])
    yield from button_sketch(area, buttons[SKETCH])
    yield from drag_navigate(area)
    yield from drag_edit_time(area)
    yield from drag_sketch(area)

    # 4. View: wheel zoom, middle-mouse pan, Frame All; Esc during a navigate drag -------------
    yield from zoom_and_pan(area)
    yield from frame_all(area, buttons[VIEW_ALL])
    yield from escape_navigate(area)

    # 6. Bake and Resample ------------------------------------------------------------------------
    yield from bake_and_resample(area, buttons[BAKE], buttons[RESAMPLE])

    # Pins last (a pin adds a "Pins" row above the buttons): the Pin button, a press near a dot, Ctrl+Z
    yield from button_pin(area, buttons[PIN])
    yield from drag_pin_and_undo(area)


def scan_halves(region, found: dict, *, top: float, wanted) -> Iterator[Wait]:
    """Map the operator buttons below ``top``: probe every 10 px (at UI scale 1) at 30 % of the width,
    and at 70 % where that found a button (this panel's rows hold one button or two halves), until
    every ``wanted`` operator has answered, and one line further (a second hit centres the last
    row). ``found``: {python command: (x, y) mean of the spots where it answered}. Fewer probes than
    uikit.scan_buttons, which crosses each row at ten spots; and each waits until Blender has read
    the pointer's move (a probe sent with the move answers for the button hot before it)."""
    step = 10.0 * ui_scale()
    spots: dict = {}
    y = top
    lines_left = -1  # counts down once every wanted button has answered
    while y > 0 and lines_left != 0:
        for fx in (0.3, 0.7):
            answer: list = []
            yield from probe(region, region.width * fx, y, answer)
            if not answer[0]:
                break
            spots.setdefault(answer[0], []).append((region.width * fx, y))
        if lines_left < 0 and all(any(c.startswith(f"bpy.ops.{w}(") for c in spots) for w in wanted):
            lines_left = 2
        lines_left -= 1 if lines_left > 0 else 0
        y -= step
    for command, xy in spots.items():
        found.setdefault(command, tuple(np.mean(np.asarray(xy), axis=0)))


def find(found: dict, idname: str, exact: str | None = None):
    for command, xy in found.items():
        if (exact is not None and command == exact) or (exact is None and command.startswith(f"bpy.ops.{idname}(")):
            return xy
    return None


def tool_waits(area, xy, tool: str) -> Iterator[Wait]:
    """Click a tool's button: the tool must start and wait for a press on the canvas (before the
    fix it ended at once: "the canvas is not visible")."""
    yield from click(region_of(area, "UI"), xy)
    yield Wait(f"{TOOL_NAMES[tool]} button starts its tool", lambda: modal_running(tool), 10.0, required=False)
    check(f"{TOOL_NAMES[tool]} button starts its tool (waits for a press on the canvas)", modal_running(tool))


def button_navigate(area, xy) -> Iterator[Wait]:
    ps = ps_object()
    before = evaluated_coords(ps)
    yield from tool_waits(area, xy, NAVIGATE)
    space = stored_space()
    rect, geom = canvas_geometry(area, ps)
    a, b = far_pair(free_spots(geom, rect, space, geom.view))
    mid = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2 + 10)
    yield from press_drag(region_of(area, "UI"), [a, mid, b], drag_started(NAVIGATE, ps), what="Navigate button")
    yield Wait("navigate (button) ends on release", lambda: not modal_running(NAVIGATE), 10.0)
    expect_pose(ps, space, geom.view, b, before, "Navigate button: drag")


def expect_pose(ps, space, view, release, before, what: str) -> None:
    """The cursor sits at the release point (held to the frames' neighbourhood) and Blender shows
    the core's pose there."""
    cv = ext("anim_signals.posespace.canvas")
    p = cv.near_the_frames(space.positions, view.to_pose(np.asarray(release)))[0]
    cursor = cursor_of(ps)
    check(f"{what}: cursor at the release point", cursor is not None and np.allclose(cursor, p, atol=1e-9),
          f"cursor {cursor}, release point {p}")
    coords = evaluated_coords(ps)
    err = float(np.abs(coords - space.at(p)).max())
    change = float(np.abs(coords - before).max())
    check(f"{what}: the mesh shows the core's pose at the release point", err < COORD_TOL,
          f"max |Blender - core| {err:.2e} (tolerance {COORD_TOL:g}); the drag changed it by {change:.3f}")
    check(f"{what}: the pose changed", change > 1e-2, f"{change:.3f}")


def edit_time_drag(area, pick_button: bool) -> Iterator[Wait]:
    """Drag a lone control point by (+24, -16) px; check it moved there and only part of the time
    signal changed (B-splines are local)."""
    ps = ps_object()
    space = stored_space()
    rect, geom = canvas_geometry(area, ps)
    j = lone_control_point(geom, rect)
    press = px(geom.control[j])
    release = (press[0] + 24.0, press[1] - 16.0)
    if not inside(rect, release, 10):
        release = (press[0] - 24.0, press[1] + 16.0)
    view = geom.view
    expected = space.time.control[j] + view.to_pose(np.asarray(release)) - view.to_pose(np.asarray(press))
    times = np.asarray(space.time.frames, dtype=float)
    curve_before = space.time.evaluate(times)
    what = "Edit Time button" if pick_button else "Drag on a control point"
    yield from press_drag(region_of(area, "UI"), [press, ((press[0] + release[0]) / 2, (press[1] + release[1]) / 2),
                                                  release], drag_started(EDIT_TIME, ps), what=what)
    yield Wait(f"{what}: edit time ends", lambda: not modal_running(EDIT_TIME)
               and not np.allclose(stored_space().time.control, space.time.control), 10.0, required=False)
    new = stored_space()
    err = float(np.abs(new.time.control[j] - expected).max())
    others = float(np.abs(np.delete(new.time.control, j, axis=0) - np.delete(space.time.control, j, axis=0)).max())
    check(f"{what}: control point {j} moved to the release point", err < 1e-9 and others == 0.0,
          f"|moved - expected| {err:.2e}, other control points moved by {others:.2e}")
    delta = np.linalg.norm(new.time.evaluate(times) - curve_before, axis=1)
    changed = int((delta > 1e-9).sum())
    check(f"{what}: the time signal changed, locally", 0 < changed < len(times),
          f"{changed} of {len(times)} frames moved on the canvas")


def button_edit_time(area, xy) -> Iterator[Wait]:
    yield from tool_waits(area, xy, EDIT_TIME)
    yield from edit_time_drag(area, pick_button=True)


def stroke_points(rect, upper: bool) -> list[tuple[float, float]]:
    """An arc over the upper (or, mirrored, the lower) part of the canvas, 14 whole pixels."""
    x0, y0, w, h = rect
    cx, cy = x0 + w / 2, y0 + h / 2
    side = 1.0 if upper else -1.0
    return [px((cx + 0.32 * w * np.cos(t), cy + side * 0.25 * h * np.sin(t))) for t in np.linspace(0.2, 2.6, 14)]


def sketch_drag(area, frames: int, what: str, modifiers: str = "", shot: str = "") -> Iterator[Wait]:
    """A stroke over the canvas: the stored time signal becomes a sequence of ``frames`` frames
    running from the stroke's first point to its last; the mesh shows that sequence's current frame."""
    ps = ps_object()
    rect, geom = canvas_geometry(area, ps)
    pts = stroke_points(rect, upper=not modifiers)
    yield from press_drag(region_of(area, "UI"), pts, drag_started(SKETCH, ps), modifiers=modifiers, what=what)
    stamp = stamp_of(ps)
    yield Wait(f"{what}: sketch stored", lambda: not modal_running(SKETCH) and stamp_of(ps_object()) != stamp, 10.0,
               required=False)
    new = stored_space()
    frames_new = np.asarray(new.time.frames, dtype=float)
    check(f"{what}: a new sequence of {frames} frames", frames_new.size == frames,
          f"{frames_new.size} frames ({frames_new[0]:g}-{frames_new[-1]:g})")
    ends = new.time.evaluate(frames_new[[0, -1]])
    want = geom.view.to_pose(np.asarray([pts[0], pts[-1]]))
    err = float(np.abs(ends - want).max())
    check(f"{what}: the sequence runs from the stroke's first point to its last", err < 1e-6,
          f"|f(first), f(last) - stroke ends| {err:.2e} pose units (1 px = {1 / geom.view.scale:.2e})")
    t = float(bpy.context.scene.frame_current)
    pose_err = float(np.abs(evaluated_coords(ps) - new.evaluate(np.array([t]))[0]).max())
    check(f"{what}: the mesh shows the new sequence at the current frame", pose_err < COORD_TOL,
          f"max |Blender - core psi({t:g})| {pose_err:.2e}")
    if shot:
        yield RedrawCounter.after(area, "canvas redrawn with the new sequence", n=2)
        rect, geom = canvas_geometry(area, ps)
        pixels = sidebar_shot(area, shot)
        shown, n = curve_shown(pixels, rect, geom)
        check(f"{what}: the new sequence's curve is visible (not hidden under its control points)", shown >= n / 3,
              f"{shown} of {n} curve samples drawn in the curve's colour; {len(geom.control)} control points")


def button_sketch(area, xy) -> Iterator[Wait]:
    yield from tool_waits(area, xy, SKETCH)
    yield from sketch_drag(area, 30, "Sketch button", shot="pose_space_mesh_sketched")


def pin_drag(area, i: int, press, release, what: str) -> Iterator[Wait]:
    ps = ps_object()
    space = stored_space()
    view = canvas_geometry(area, ps)[1].view
    pins_before = pins_of(space)
    expected = space.positions[i] + view.to_pose(np.asarray(release)) - view.to_pose(np.asarray(press))
    yield from press_drag(region_of(area, "UI"), [press, ((press[0] + release[0]) / 2, (press[1] + release[1]) / 2),
                                                  release], drag_started(PIN, ps), what=what)
    yield Wait(f"{what}: pin ends", lambda: not modal_running(PIN) and not same_pins(pins_of(stored_space()), pins_before),
               10.0)
    new = stored_space()
    pins = pins_of(new)
    check(f"{what}: frame {i} pinned at the release point", set(pins) == set(pins_before) | {i}
          and np.allclose(pins[i], expected, atol=1e-9), f"pins {sorted(pins)}; frame {i} at {pins.get(i)}, expected {expected}")
    check(f"{what}: the drag moved frame {i} there", np.allclose(new.positions[i], expected, atol=1e-9),
          f"position {new.positions[i]}, was {space.positions[i]}")
    return pins_before


def button_pin(area, xy) -> Iterator[Wait]:
    yield from tool_waits(area, xy, PIN)
    rect, geom = canvas_geometry(area, ps_object())
    i = int(np.argmax([inside(rect, p, 30.0) * np.linalg.norm(geom.control - p, axis=1).min()
                       for p in geom.frame_points]))
    press = px(geom.frame_points[i])
    yield from pin_drag(area, i, press, (press[0] - 20.0, press[1] + 14.0), "Pin button")


def drag_navigate(area) -> Iterator[Wait]:
    ps = ps_object()
    before = evaluated_coords(ps)
    space = stored_space()
    rect, geom = canvas_geometry(area, ps)
    spots = free_spots(geom, rect, space, geom.view)
    a, b = far_pair(spots[len(spots) // 3:])
    yield from press_drag(region_of(area, "UI"), [a, ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2), b],
                          drag_started(NAVIGATE, ps), what="Navigate drag")
    yield Wait("navigate drag ends", lambda: not modal_running(NAVIGATE) and cursor_of(ps) is not None
               and np.allclose(cursor_of(ps), geom.view.to_pose(np.asarray(b)), atol=1e-6), 10.0, required=False)
    expect_pose(ps, space, geom.view, b, before, "Drag elsewhere on the canvas (navigate)")


def drag_edit_time(area) -> Iterator[Wait]:
    yield from edit_time_drag(area, pick_button=False)


def drag_pin_and_undo(area) -> Iterator[Wait]:
    """A press within 3 px of a frame's dot, on the pixel nearest to a control point (the case issue
    16 fault 3 lost: a control point within 8 px won), pins that frame; Ctrl+Z takes the pin back."""
    rect, geom = canvas_geometry(area, ps_object())
    pinned = set(pins_of(stored_space()))
    offsets = [(dx, dy) for dx in range(-3, 4) for dy in range(-3, 4)]
    best = None  # (distance press - control point, frame, press, distance press - dot)
    for i, p in enumerate(geom.frame_points):
        if i in pinned or not inside(rect, p, 12.0):
            continue
        for dx, dy in offsets:
            press = (float(round(p[0])) + dx, float(round(p[1])) + dy)
            d_press = np.linalg.norm(geom.frame_points - np.asarray(press), axis=1)
            if int(np.argmin(d_press)) != i or d_press[i] > 2.9:  # 2.9: a 0.1 px margin to the 3 px promise
                continue
            d_control = float(np.linalg.norm(geom.control - np.asarray(press), axis=1).min())
            if best is None or d_control < best[0]:
                best = (d_control, i, press, float(d_press[i]))
    if not check("a frame to pin by a press within 3 px of its dot", best is not None):
        return
    d_control, i, press, d_frame = best
    release = (press[0] + 18.0, press[1] + 12.0)
    if not inside(rect, release, 8.0):
        release = (press[0] - 18.0, press[1] - 12.0)
    shown_before = evaluated_coords(ps_object())
    pins_before = yield from pin_drag(area, i, press, release,
                                      f"Press {d_frame:.1f} px from frame {i}'s dot ({d_control:.1f} px from a control point)")
    yield RedrawCounter.after(area, "canvas redrawn with the pin", n=2)
    screenshot("pose_space_mesh_pin_drag")
    pin_change = float(np.abs(evaluated_coords(ps_object()) - shown_before).max())
    move_mouse(main_region(area), 300, 300)
    xdotool("key", "ctrl+z")
    yield Wait("Ctrl+Z takes the pin back", lambda: stored_space() is not None
               and same_pins(pins_of(stored_space()), pins_before), 15.0, required=False)
    check("Ctrl+Z after a pin: the pins are back to before", same_pins(pins_of(stored_space()), pins_before),
          f"pins {sorted(pins_of(stored_space()))}, before {sorted(pins_before)}")
    err = float(np.abs(evaluated_coords(ps_object()) - shown_before).max())
    check("Ctrl+Z after a pin: the mesh shows the pose from before the pin", err < COORD_TOL < pin_change,
          f"max |after undo - before the pin| {err:.2e}; the pin had changed it by {pin_change:.3f}")


def drag_sketch(area) -> Iterator[Wait]:
    """Shift-drag: a sketch with the sidebar's Sketch Frames (changed to 40 here)."""
    bpy.context.scene.anim_signals.pose_space_canvas.sketch_frames = 40
    yield from sketch_drag(area, 40, "Shift-drag", modifiers="shift")


def zoom_and_pan(area) -> Iterator[Wait]:
    ps = ps_object()
    rect, geom = canvas_geometry(area, ps)
    step = ext("operators.pose_space.canvas_state").ZOOM_STEP
    about = px((rect[0] + 0.4 * rect[2], rect[1] + 0.55 * rect[3]))
    old = geom.frame_points.copy()
    scale = geom.view.scale
    move_mouse(region_of(area, "UI"), *about)
    xdotool("click", "--repeat", "2", "4")  # wheel up twice: zoom in
    yield Wait("two wheel clicks zoom", lambda: abs(canvas_geometry(area, ps)[1].view.scale - scale * step ** 2)
               < 1e-6 * scale, 10.0, required=False)
    yield RedrawCounter.after(area, "canvas redrawn zoomed", n=2)
    rect, geom = canvas_geometry(area, ps)
    want = np.asarray(about) + (old - np.asarray(about)) * step ** 2
    err = float(np.abs(geom.frame_points - want).max())
    # 1e-3 px: the keymap's factor is a float32 1.2 (1e-5 px off here); a zoom about a point 1 px off
    # would be 0.44 px off
    check("wheel zoom: the dots move away from the mouse by 1.2^2", err < 1e-3,
          f"max |dot - expected| {err:.2e} px; scale {scale:.1f} -> {geom.view.scale:.1f}")
    pixels = sidebar_shot(area, "pose_space_mesh_zoomed")
    hits, n, _ = dots_found(pixels, rect, geom.frame_points, geom.frame_colors)
    stale, _, _ = dots_found(pixels, rect, old[np.linalg.norm(old - want, axis=1) > 6], geom.frame_colors)
    check("wheel zoom: the dots are drawn at their zoomed positions", n > 0 and hits >= 0.8 * n,
          f"{hits} of {n} visible dots found; {stale} still found at their old places")

    old = geom.frame_points.copy()
    a = px((rect[0] + 0.5 * rect[2], rect[1] + 0.5 * rect[3]))
    b = (a[0] - 37.0, a[1] + 23.0)
    yield from press_drag(region_of(area, "UI"), [a, (a[0] - 15.0, a[1] + 10.0), b],
                          lambda: modal_running("anim_signals.pose_space_pan"), button=2, what="Middle-mouse pan")
    yield Wait("middle-mouse drag pans", lambda: np.allclose(canvas_geometry(area, ps)[1].frame_points,
                                                          old + np.subtract(b, a), atol=1e-6), 10.0, required=False)
    yield RedrawCounter.after(area, "canvas redrawn panned", n=2)
    rect, geom = canvas_geometry(area, ps)
    err = float(np.abs(geom.frame_points - (old + np.subtract(b, a))).max())
    check("middle-mouse pan: the dots shift by the drag (-37, +23) px", err < 1e-6, f"max |dot - expected| {err:.2e} px")
    pixels = sidebar_shot(area, "pose_space_mesh_panned")
    hits, n, _ = dots_found(pixels, rect, geom.frame_points, geom.frame_colors)
    check("middle-mouse pan: the dots are drawn at their shifted positions", n > 0 and hits >= 0.8 * n,
          f"{hits} of {n} visible dots found")


def frame_all(area, xy) -> Iterator[Wait]:
    """The Frame All button fits the view to the pose space again (the core's fit of the canvas)."""
    ps = ps_object()
    cv = ext("anim_signals.posespace.canvas")
    zoomed = canvas_geometry(area, ps)[1].view.scale
    yield from click(region_of(area, "UI"), xy)
    yield Wait("Frame All refits the view", lambda: canvas_geometry(area, ps)[1].view.scale != zoomed, 10.0,
               required=False)
    yield RedrawCounter.after(area, "canvas redrawn after Frame All", n=2)
    rect, geom = canvas_geometry(area, ps)
    fit = cv.fit_space_view(cv.drawable(stored_space()), int(rect[2]), int(rect[3]), origin=rect[:2])
    check("Frame All: the view is the core's fit of the canvas again",
          np.allclose(geom.view.center, fit.center) and abs(geom.view.scale - fit.scale) < 1e-9 * fit.scale
          and all(inside(rect, p) for p in geom.frame_points),
          f"scale {zoomed:.1f} -> {geom.view.scale:.1f} (fit {fit.scale:.1f})")


def escape_navigate(area) -> Iterator[Wait]:
    """Press, drag (the pose follows live), Esc before the release: the pose and cursor come back."""
    ps = ps_object()
    space = stored_space()
    rect, geom = canvas_geometry(area, ps)
    before, cursor_before = evaluated_coords(ps), cursor_of(ps)
    a, b = far_pair(free_spots(geom, rect, space, geom.view))
    sidebar = region_of(area, "UI")
    move_mouse(sidebar, *a)
    yield settle("Esc test: pointer at the press point")
    xdotool("mousedown", "1")
    yield Wait("Esc test: the press starts navigating", drag_started(NAVIGATE, ps), 5.0, required=False)
    move_mouse(sidebar, (a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    yield settle("Esc test: pointer moved")
    move_mouse(sidebar, *b)
    p = ext("anim_signals.posespace.canvas").near_the_frames(space.positions, geom.view.to_pose(np.asarray(b)))[0]
    yield Wait("the pose follows the drag", lambda: modal_running(NAVIGATE)
               and float(np.abs(evaluated_coords(ps) - space.at(p)).max()) < COORD_TOL, 10.0, required=False)
    live = float(np.abs(evaluated_coords(ps) - space.at(p)).max())
    check("navigate drag: before the release the mesh already shows the core's pose under the mouse",
          live < COORD_TOL and modal_running(NAVIGATE), f"max |Blender - core| {live:.2e}")
    press_key("Escape")
    yield Wait("Esc ends the drag", lambda: not modal_running(NAVIGATE), 10.0, required=False)
    xdotool("mouseup", "1")
    err = float(np.abs(evaluated_coords(ps) - before).max())
    cursor = cursor_of(ps)
    check("Esc during a navigate drag: the pose is back", err < COORD_TOL, f"max |after - before| {err:.2e}")
    check("Esc during a navigate drag: the cursor is back",
          (cursor is None and cursor_before is None) or (cursor is not None and cursor_before is not None
                                                         and np.allclose(cursor, cursor_before)),
          f"{cursor} vs {cursor_before}")


def bake_and_resample(area, bake_xy, resample_xy) -> Iterator[Wait]:
    """Bake keys the stored sequence on the shape keys; Resample x0.5 doubles it and sets the scene
    range to the new frames (issue 16 fault 4); a second Resample takes the sidebar's new Speed."""
    scene = bpy.context.scene
    sidebar = region_of(area, "UI")
    ps = ps_object()
    space = stored_space()
    frames = np.asarray(ext("anim_signals.posespace").bake_frames(space), dtype=float)
    scene_range = (scene.frame_start, scene.frame_end)
    key = ps.data.shape_keys
    action_before = key.animation_data.action if key.animation_data else None
    yield from click(sidebar, bake_xy)
    yield Wait("Bake writes an action", lambda: ps_object().data.shape_keys.animation_data is not None
               and ps_object().data.shape_keys.animation_data.action not in (None, action_before), 20.0)
    ps = ps_object()
    action = ps.data.shape_keys.animation_data.action
    curves = list(action.fcurves)
    counts = sorted({len(fc.keyframe_points) for fc in curves})
    key_frames = sorted({round(kp.co[0], 6) for fc in curves for kp in fc.keyframe_points})
    check("Bake: one curve per shape component, a key on every frame of the sequence",
          len(curves) == space.m and counts == [frames.size] and key_frames == [round(f, 6) for f in frames],
          f'action "{action.name}": {len(curves)} curves, keys per curve {counts}, frames {key_frames[0]:g}-'
          f"{key_frames[-1]:g} (sequence {frames[0]:g}-{frames[-1]:g}, {frames.size} frames)")
    check("Bake: the scene range is left alone (Set Scene Range off)", (scene.frame_start, scene.frame_end) == scene_range)
    errs = []
    for t in (frames[3], frames[frames.size // 2], frames[-2]):
        scene.frame_set(int(t))
        errs.append(float(np.abs(evaluated_coords(ps) - space.evaluate(np.array([t]))[0]).max()))
    check("Bake: played back, the mesh is the core's sequence psi(t)", max(errs) < COORD_TOL,
          f"max |Blender - core| at 3 frames {max(errs):.2e}")

    root = scene.anim_signals.pose_space_resample
    root.mode, root.speed = "SPEED", 0.5
    a, b = float(space.time.frames[0]), float(space.time.frames[-1])
    want = (int(a), int(round(a + (b - a) / 0.5)))
    yield from click(sidebar, resample_xy)
    yield Wait("Resample x0.5 stores the slowed sequence",
               lambda: stored_space().time.frames.size == want[1] - want[0] + 1, 20.0, required=False)
    new = stored_space()
    fr = np.asarray(new.time.frames, dtype=float)
    check("Resample x0.5: twice the frames", fr.size == want[1] - want[0] + 1 and (fr[0], fr[-1]) == want,
          f"{space.time.frames.size} frames {a:g}-{b:g} -> {fr.size} frames {fr[0]:g}-{fr[-1]:g}")
    check("Resample x0.5: the scene's frame range is the new frames", (scene.frame_start, scene.frame_end) == want,
          f"scene {scene.frame_start}-{scene.frame_end}, expected {want[0]}-{want[1]}")
    action = ps_object().data.shape_keys.animation_data.action
    ends = [fc.keyframe_points[-1].co[0] for fc in action.fcurves]
    check("Resample x0.5: baked to the new last frame", ends and all(abs(e - want[1]) < 1e-6 for e in ends),
          f"last keys at {sorted(set(ends))}")
    yield RedrawCounter.after(area, "window redrawn after the resample", n=2)
    screenshot("pose_space_mesh_resampled")

    # A second resample with another Speed in the sidebar: the button starts from the sidebar's
    # settings again (not from the operator's remembered last run).
    space = stored_space()
    a, b = float(space.time.frames[0]), float(space.time.frames[-1])
    root.speed = 2.0
    want = (int(a), int(round(a + (b - a) / 2.0)))
    yield from click(sidebar, resample_xy)
    yield Wait("Resample x2 stores the faster sequence",
               lambda: stored_space().time.frames.size == want[1] - want[0] + 1, 20.0, required=False)
    fr = np.asarray(stored_space().time.frames, dtype=float)
    check("Resample again with Speed 2 in the sidebar: half the frames", fr.size == want[1] - want[0] + 1
          and (fr[0], fr[-1]) == want, f"{space.time.frames.size} frames {a:g}-{b:g} -> {fr.size} frames "
          f"{fr[0]:g}-{fr[-1]:g}, expected {want[0]}-{want[1]}")
    check("Resample x2: the scene's frame range is the new frames", (scene.frame_start, scene.frame_end) == want,
          f"scene {scene.frame_start}-{scene.frame_end}")
