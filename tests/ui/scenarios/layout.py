"""The pose-space canvas and the Pose Space panel at UI scale 1.5 and 2 and in a scrolled sidebar
(issue 16; Preferences > Interface > Resolution Scale, ``preferences.view.ui_scale``): the canvas
rectangle stays inside the sidebar and where the panel reserves it (the Pose Space panel's first
button 2.5-4.5 UI units below it at every scale, and the same pixels below it in a scrolled
sidebar), the frame dots are drawn where the core puts them, the panel's buttons are found and work
(Frame All after a wheel zoom), and in a scrolled sidebar a press on a frame's dot pins that frame.
Runs last; puts the UI scale, the canvas height and the scroll back."""

from __future__ import annotations

from collections.abc import Iterator

import bpy
import numpy as np
from uikit import (
    RedrawCounter,
    Wait,
    button_of,
    canvas_geometry,
    check,
    click_button,
    ext,
    make_active,
    modal_running,
    move_mouse,
    probe,
    region_of,
    region_pixels,
    screenshot,
    ui_scale,
    wavy_flag,
    wheel,
)

from scenarios.pose_space_armature import (
    dots_found,
    held_drag,
    scan_below_canvas,
    uncovered_dots,
)

BUILD = "anim_signals.build_pose_space"
VIEW_ALL = "anim_signals.pose_space_view_all"
PIN = "anim_signals.pose_space_pin"
EDIT_TIME = "anim_signals.pose_space_edit_time"
SCALES = (1.5, 2.0)
# Canvas height (UI units) while the scale changes: at UI scale 2 the default 12 units push Frame
# All below the sidebar's bottom; and while scrolling: tall enough that the sidebar scrolls.
SCALED_CANVAS_UNITS = 8
SCROLLED_CANVAS_UNITS = 24
SCROLL_CLICKS = 3


def unit_px() -> float:
    """Blender's widget unit in pixels (U.widget_unit: round(18 x scale) + 2 x pixel size; the
    system's scale is the Resolution Scale times the display's DPI factor)."""
    system = bpy.context.preferences.system
    return float(round(18.0 * system.ui_scale) + 2.0 * system.pixel_size)


def view_top(region) -> float:
    """The sidebar's view-space y at its top edge (0 unscrolled; lower when scrolled down)."""
    return float(region.view2d.region_to_view(0, region.height)[1])


def run(area) -> Iterator[Wait]:
    data = ext("operators.pose_space")
    scene = bpy.context.scene
    prefs = bpy.context.preferences.view  # Resolution Scale (system.ui_scale is read-only: it is this x the DPI's)
    canvas = scene.anim_signals.pose_space_canvas
    scale_before, height_before = float(prefs.ui_scale), int(canvas.height)
    range_before = (scene.frame_start, scene.frame_end)
    flag = wavy_flag(name="LayoutFlag")
    ps_ob, _, _ = data.build(flag, scene, frame_start=1, frame_end=24, k=12, l=12, m=4)
    make_active(ps_ob)
    sidebar = region_of(area, "UI")
    top_before = view_top(sidebar)
    try:
        yield from _scenario(area, ps_ob, data, prefs, canvas, scale_before)
    finally:
        prefs.ui_scale = scale_before
        canvas.height = height_before
        scene.frame_start, scene.frame_end = range_before
        if view_top(sidebar) < top_before - 0.5:  # scrolled: back to the top
            wheel(sidebar, (4.0, sidebar.height / 2), 30)


def _scenario(area, ps_ob, data, prefs, canvas, scale_before) -> Iterator[Wait]:
    gaps: dict[float, tuple[float, float]] = {}  # resolution scale: (gap px, widget unit px)
    canvas.height = SCALED_CANVAS_UNITS
    for scale in (scale_before, *SCALES):
        prefs.ui_scale = scale
        yield from _at_scale(area, ps_ob, data, scale, gaps)
    # Blender lays the panel out, canvas_rect computes where the canvas goes: a term of either that
    # did not scale with the UI would change the gap in units with the scale. Measured 3.43, 3.57,
    # 3.57 units at x1, x1.5, x2 (Blender's margins scale with the UI scale, rows with the rounded
    # widget unit), so 0.3 units.
    units = [g / u for g, u in gaps.values()]
    check("canvas to first panel button: the same UI units at every scale", len(gaps) == 1 + len(SCALES)
          and max(units) - min(units) < 0.3,
          ", ".join(f"x{s:g}: {g:.0f} px = {g / u:.2f} units of {u:.0f} px" for s, (g, u) in gaps.items()))
    prefs.ui_scale = scale_before
    yield from _scrolled(area, ps_ob, data, canvas, gaps.get(scale_before, (None,))[0])


def button_top(region, found: dict, idname: str, out: list) -> Iterator[Wait]:
    """The top edge (region pixels) of ``idname``'s button found by ``scan_buttons``, to a pixel:
    bisected between where it answered and 1.5 units above (the scan's 10 px rows place a button
    only to +-5 px; above the Build button is the Build Settings header, no operator button)."""
    xy = button_of(found, idname)
    if xy is None:
        return
    x, low = xy
    high = low + 1.5 * unit_px()

    def on_button(answer: list) -> bool:
        return f"bpy.ops.{idname}(" in answer[0]

    answer: list = []
    yield from probe(region, x, high, answer)
    if on_button(answer):  # not the layout this expects: no edge to find
        return
    while high - low > 1.0:
        mid = float(int((low + high) / 2))
        if mid <= low:
            break
        answer = []
        yield from probe(region, x, mid, answer)
        low, high = (mid, high) if on_button(answer) else (low, mid)
    out.append(low)


def _gap_px(area, found: dict, rect) -> Iterator[Wait]:
    """Yields the probes; returns the pixels from the canvas's bottom down to the top of the
    Build/Rebuild button (None when either is missing). Measured until two measurements agree:
    Blender slides panels into a changed layout over a few redraws, so a first measurement can
    catch the panel on its way."""
    tops: list = []
    for _ in range(4):
        yield RedrawCounter.after(area, "sidebar redrawn before measuring", n=2)
        yield from button_top(region_of(area, "UI"), found, BUILD, tops)
        if len(tops) >= 2 and abs(tops[-1] - tops[-2]) <= 1.0:
            break
    return None if not tops or rect is None else rect[1] - tops[-1]


def _tagged(area) -> bool:
    area.tag_redraw()
    return True


def _inside(rect, region) -> bool:
    x0, y0, w, h = rect
    return 0.0 <= x0 and x0 + w <= region.width - unit_px() and 0.0 <= y0 and y0 + h <= region.height


def _at_scale(area, ps_ob, data, scale: float, gaps: dict) -> Iterator[Wait]:
    name = f"x{scale:g}"
    sidebar = region_of(area, "UI")
    move_mouse(sidebar, 4, 4)
    yield RedrawCounter.after(area, f"sidebar redrawn at UI scale {scale:g}", n=3)
    sidebar = region_of(area, "UI")
    rect, geom = canvas_geometry(area, ps_ob)
    if not check(f"{name}: canvas has a rectangle", rect is not None, str(rect)):
        return
    check(f"{name}: canvas inside the sidebar", _inside(rect, sidebar),
          f"rect {tuple(round(v, 1) for v in rect)}, sidebar {sidebar.width} x {sidebar.height}")
    shot = screenshot(f"layout_scale_{int(round(scale * 100))}")
    free = uncovered_dots(geom, ui_scale())
    hits, n, blank = dots_found(region_pixels(shot, sidebar), rect, geom, free)
    check(f"{name}: frame dots drawn where the core puts them", n >= 0.5 * len(geom.frame_points) and hits >= n - 1,
          f"{hits} of the {n} uncovered dots ({len(geom.frame_points)} frames); {100 * blank:.1f}% of the canvas drawn")

    found: dict = {}
    yield from scan_below_canvas(area, ps_ob, found, f"bpy.ops.{VIEW_ALL}(")
    gap = yield from _gap_px(area, found, rect)
    if gap is not None:
        gaps[scale] = (gap, unit_px())
    # below it: the Pose Space header, the Build Settings header and their margins, 2.5-4.5 units
    # (a canvas reaching over the header or leaving a gap of a row would fall outside)
    check(f"{name}: canvas ends where the panel's reserved space ends (Build button below it)",
          gap is not None and 2.5 < gap / unit_px() < 4.5,
          f"{gap} px = {gap / unit_px() if gap else 0:.2f} units of {unit_px():.0f} px; buttons: {len(found)}")
    top0 = view_top(sidebar)
    for _ in range(3):  # at a big scale the panel's lower rows are below the sidebar's bottom: scroll
        if button_of(found, VIEW_ALL) is not None:
            break
        top = view_top(sidebar)
        wheel(sidebar, (4.0, sidebar.height * 0.1), -4)  # the left margin: not the canvas
        yield Wait(f"{name}: sidebar scrolls down", lambda t=top: _tagged(area) and view_top(sidebar) < t - 1.0,
                   10.0, required=False)
        yield from scan_below_canvas(area, ps_ob, found, f"bpy.ops.{VIEW_ALL}(")
    xy = button_of(found, VIEW_ALL)
    if not check(f"{name}: Frame All button found", xy is not None,
                 f"sidebar scrolled {top0 - view_top(sidebar):.0f} px to reach it"):
        return
    # a wheel zoom on the canvas (its part in view), then Frame All fits the view again (the core's
    # fit of the canvas)
    rect, _ = canvas_geometry(area, ps_ob)
    st = data.canvas_state.state_of(ps_ob)
    fitted = st.scale
    low, high = max(rect[1], 0.0), min(rect[1] + rect[3], sidebar.height)
    wheel(sidebar, (rect[0] + rect[2] / 2, (low + high) / 2), 2)
    yield Wait(f"{name}: wheel zooms the canvas", lambda: st.scale is not None and fitted is not None
               and st.scale > 1.3 * fitted, 20.0)
    zoomed = st.scale
    cv = ext("anim_signals.posespace.canvas")
    space = data.load_space(ps_ob)
    fit = cv.fit_space_view(cv.drawable(space), max(int(rect[2]), 1), max(int(rect[3]), 1), origin=rect[:2])
    click_button(sidebar, xy)

    def refitted() -> bool:
        area.tag_redraw()
        return st.scale is not None and abs(st.scale - fit.scale) < 1e-9 * fit.scale

    yield Wait(f"{name}: Frame All fits the view", refitted, 20.0, required=False)
    check(f"{name}: Frame All (clicked) fits the view again", refitted(),
          f"scale {st.scale:.4f} (core fit {fit.scale:.4f}; the wheel zoomed it to {zoomed:.4f})")
    if view_top(sidebar) < top0 - 0.5:
        wheel(sidebar, (4.0, sidebar.height * 0.1), 30)
        yield Wait(f"{name}: sidebar scrolled back", lambda: _tagged(area) and abs(view_top(sidebar) - top0) < 0.5, 20.0)


def _scrolled(area, ps_ob, data, canvas, gap_unscrolled) -> Iterator[Wait]:
    canvas.height = SCROLLED_CANVAS_UNITS
    sidebar = region_of(area, "UI")
    move_mouse(sidebar, 4, 4)
    yield RedrawCounter.after(area, "sidebar redrawn with a tall canvas", n=3)
    top0 = view_top(sidebar)
    rect0, _ = canvas_geometry(area, ps_ob)
    # the wheel over the sidebar's left margin, not the canvas (there it zooms the canvas)
    wheel(sidebar, (4.0, sidebar.height * 0.1), -SCROLL_CLICKS)

    def scrolled() -> bool:
        area.tag_redraw()
        return view_top(sidebar) < top0 - 1.0

    yield Wait("the wheel scrolls the sidebar", scrolled, 20.0)
    yield RedrawCounter.after(area, "scrolled sidebar redrawn", n=3)
    shift = top0 - view_top(sidebar)
    rect, geom = canvas_geometry(area, ps_ob)
    check("scrolled: the canvas moves up with the panel", rect is not None and abs(rect[1] - rect0[1] - shift) < 1.0,
          f"scrolled {shift:.0f} px; canvas bottom {rect0[1]:.0f} -> {rect[1] if rect else None}")
    shot = screenshot("layout_scrolled")
    dots = np.asarray(geom.frame_points)
    seen = [int(i) for i in uncovered_dots(geom, ui_scale())
            if 3 <= dots[i][1] <= sidebar.height - 3]
    hits, n, _ = dots_found(region_pixels(shot, sidebar), rect, geom, seen)
    check("scrolled: frame dots drawn where the core puts them", n >= 5 and hits >= n - 1,
          f"{hits} of the {n} uncovered dots in view")
    found: dict = {}
    yield from scan_below_canvas(area, ps_ob, found, f"bpy.ops.{BUILD}(")
    gap = yield from _gap_px(area, found, rect)
    # the tall canvas moves the button down by the extra units, nothing else
    extra = SCROLLED_CANVAS_UNITS - SCALED_CANVAS_UNITS
    check("scrolled: Build button where the panel puts it below the canvas",
          gap is not None and gap_unscrolled is not None and abs(gap - gap_unscrolled) < 2.5,
          f"{gap} px (unscrolled, {extra} units shorter canvas: {gap_unscrolled} px)")

    # a press on a frame's dot of the scrolled canvas pins that frame
    if not seen:
        check("scrolled: a frame dot in view to press", False)
        return
    row = max(seen, key=lambda i: np.min(np.linalg.norm(np.delete(dots, i, axis=0) - dots[i], axis=1)))
    at = np.round(dots[row])
    to = at + np.round(np.array([5.0, -4.0]) * ui_scale())
    yield from held_drag(sidebar, [at, to], (PIN, EDIT_TIME))
    yield Wait("scrolled: pin stored", lambda: not modal_running(PIN) and row in data.load_space(ps_ob).pins,
               30.0, required=False)
    pins = data.load_space(ps_ob).pins
    # the pin goes where the drag moved the dot: its dot plus the mouse's displacement
    miss = float(np.linalg.norm(geom.view.to_pixels(pins[row]) - (dots[row] + to - at))) if row in pins else None
    check("scrolled: a press on a frame's dot pins that frame where dragged", miss is not None and miss < 0.05,
          f"frame row {row}; pins {sorted(pins)}; pin {miss} px from where the drag put it")
    screenshot("layout_scrolled_pinned")
    wheel(sidebar, (4.0, sidebar.height * 0.1), SCROLL_CLICKS + 5)

    def back() -> bool:
        area.tag_redraw()
        return abs(view_top(sidebar) - top0) < 0.5

    yield Wait("the wheel scrolls the sidebar back", back, 20.0)
    check("sidebar scrolled back to the top", back())
