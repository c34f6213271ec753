"""Sidebar helpers of the loop/blend/compare, motion database and transfer scenarios (not a scenario).

Blender 4.3's Python can neither open a panel nor say where its header is, and a closed panel
(``DEFAULT_CLOSED``) draws nothing. So a panel's draws are watched (``Panel.append``: called only
while the panel is open and drawn), and its header is found by clicking down the sidebar below the
last button of the panel above it, where only labels and headers are, until the panel draws.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import bpy
from uikit import Wait, button_of, move_mouse, scan_buttons, ui_scale, wheel, xdotool


class PanelDraws:
    """Counts the draws of one panel class (only an open panel is drawn); with ``state``, also
    records ``state()`` at each draw in ``seen`` (what the panel was drawn showing)."""

    def __init__(self, panel_idname: str, state: Callable[[], object] | None = None):
        self.panel = getattr(bpy.types, panel_idname)
        self.count = 0
        self.state, self.seen = state, []
        self.panel.append(self._drawn)

    def _drawn(self, panel, context) -> None:
        self.count += 1
        if self.state is not None:
            self.seen.append(self.state())

    def close(self) -> None:
        self.panel.remove(self._drawn)


class RegionDraws:
    """Counts the draws of the sidebars of one editor type (a POST_PIXEL handler of our own)."""

    def __init__(self, space_type):
        self.space_type, self.count = space_type, 0
        self.handle = space_type.draw_handler_add(self._tick, (), "UI", "POST_PIXEL")

    def _tick(self) -> None:
        if bpy.context.region is not None and bpy.context.region.type == "UI":
            self.count += 1

    def close(self) -> None:
        self.space_type.draw_handler_remove(self.handle, "UI")

    def after(self, area, what: str, n: int = 2) -> Wait:
        """A Wait for ``n`` further sidebar draws (tagging the area each tick)."""
        target = self.count + n

        def drawn() -> bool:
            area.tag_redraw()
            return self.count >= target

        return Wait(what, drawn, 20.0)


def open_panel(area, region, panel_idname: str, below_y: float, redraws: RegionDraws,
               opened: list) -> Iterator[Wait]:
    """Open the closed panel ``panel_idname`` of ``region`` by a real click on its header.

    Clicks down the sidebar from ``below_y`` (region pixels, under the last button of the panel
    above, so only labels and headers are hit) in half-row steps, waiting for the sidebar to redraw
    (``redraws``) after each, until the panel draws. Appends True to ``opened`` when it did (also when it was open already)."""
    target = PanelDraws(panel_idname)
    try:
        yield redraws.after(area, "sidebar drawn before opening a panel")
        y = below_y
        step = 10.0 * ui_scale()
        while target.count == 0 and y > step:
            move_mouse(region, region.width * 0.4, y)
            xdotool("click", "1")
            yield redraws.after(area, "sidebar drawn after a click on a header")
            y -= step
        move_mouse(region, region.width * 0.4, 4.0 * step)  # off the header, no tooltip
        if target.count:
            yield redraws.after(area, "panel opened: layout settled", 4)
        opened.append(target.count > 0)
    finally:
        target.close()


def scroll_to_bottom(area, sidebar, redraws, *, up: bool = False) -> Iterator[Wait]:
    """Roll the mouse wheel down (``up``: up) over the sidebar until it no longer scrolls (after a
    redraw: the wheel scrolls as far as the last drawn layout reaches)."""
    view = sidebar.view2d
    yield redraws.after(area, "sidebar laid out before scrolling")

    def top() -> float:
        return view.region_to_view(0, sidebar.height)[1]

    while True:
        before = top()
        wheel(sidebar, (sidebar.width * 0.5, sidebar.height * 0.5), 15 if up else -15)
        # at the bottom nothing moves: a soft wait
        yield Wait("sidebar scrolled", lambda before=before: abs(top() - before) >= 1.0, 1.0, required=False)
        if abs(top() - before) < 1.0:
            break
    yield redraws.after(area, "sidebar drawn scrolled")


def button_near(region, idname: str, below: float, found: dict) -> Iterator[Wait]:
    """Map the buttons of ``region`` down to the one of ``idname``, starting at ``below`` of the
    region's height (a scan of the whole sidebar takes half a minute over the 3D Viewport, which
    software GL redraws on every probe), and from the top when it is not there. Returns its (x, y)
    or None."""
    yield from scan_buttons(region, found, stop_at=f"bpy.ops.{idname}(", top=region.height * below)
    if button_of(found, idname) is None:
        yield from scan_buttons(region, found, stop_at=f"bpy.ops.{idname}(")
    return button_of(found, idname)
