"""Shared machinery of the real-window UI stage (runs inside Blender 4.3, imported by driver.py).

Scenarios (``tests/ui/scenarios/*.py``) are generators that act, then yield :class:`Wait` conditions;
the driver resumes them from ``bpy.app.timers`` once the condition holds. Everything a scenario needs
to act like an animator is here: real X events (``xdotool``), screenshots (``xwd``), the region
geometry, a button finder (Blender 4.3's Python cannot say where a button is), sidebar helpers and
the generated test data.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import bpy
import numpy as np

EXT_MODULE = "bl_ext.user_default.anim_signals"
REPO = Path(__file__).resolve().parent.parent.parent  # the linked working tree


def _out_dir() -> Path:
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else REPO / "out" / "ui"
    out.mkdir(parents=True, exist_ok=True)
    return out


OUT = _out_dir()
RESULT: dict = {"blender": bpy.app.version_string, "checks": [], "screenshots": [], "scenarios": {},
                "error": None}
CURRENT = {"scenario": ""}  # the scenario running, named in every check


def check(name: str, ok: bool, detail: str = "") -> bool:
    """Record one assertion (the run fails if any is False) and print it to the console log."""
    scenario = CURRENT["scenario"]
    RESULT["checks"].append({"scenario": scenario, "name": name, "ok": bool(ok), "detail": detail})
    tag = f"[{scenario}] " if scenario else ""
    print(f"UI-CHECK {'PASS' if ok else 'FAIL'}: {tag}{name}" + (f" ({detail})" if detail else ""), flush=True)
    return bool(ok)


class Wait:
    """Yielded by a scenario: resume when ``condition()`` is true. A required wait that times out is a
    failed check and ends the scenario; ``required=False`` resumes it after ``timeout`` s anyway."""

    def __init__(self, what: str, condition: Callable[[], bool], timeout: float = 60.0, *, required: bool = True):
        self.what, self.condition, self.deadline = what, condition, time.monotonic() + timeout
        self.timeout, self.required = timeout, required


def ext(name: str):
    """The extension's module ``name`` (dotted, below the extension package)."""
    return sys.modules[f"{EXT_MODULE}.{name}"]


# ----------------------------------------------------------------------------------------------
# X11: window geometry, real events, screenshots
# ----------------------------------------------------------------------------------------------

def xdotool(*args: str) -> str:
    return subprocess.run(["xdotool", *args], check=True, capture_output=True, text=True).stdout


class Screen:
    """Where Blender's window is on the X screen (Blender's region coordinates have y up)."""

    wid = ""
    x = y = width = height = 0

    @classmethod
    def find(cls) -> None:
        cls.wid = xdotool("search", "--sync", "--onlyvisible", "--name", "Blender").split()[0]
        geo = dict(line.split("=", 1) for line in xdotool("getwindowgeometry", "--shell", cls.wid).split())
        cls.x, cls.y, cls.width, cls.height = (int(geo[k]) for k in ("X", "Y", "WIDTH", "HEIGHT"))

    @classmethod
    def to_screen(cls, region, rx: float, ry: float) -> tuple[int, int]:
        """Region pixel (x right, y up) -> X screen pixel (y down)."""
        return cls.x + int(region.x + rx), cls.y + cls.height - 1 - int(region.y + ry)


def move_mouse(region, rx: float, ry: float) -> None:
    """Put the pointer on region pixel (rx, ry). Not sent when the pointer is there already:
    ``xdotool mousemove --sync`` to the pointer's own position waits for a motion that never comes."""
    sx, sy = Screen.to_screen(region, rx, ry)
    where = dict(line.split("=", 1) for line in xdotool("getmouselocation", "--shell").split())
    if (int(where["X"]), int(where["Y"])) != (sx, sy):
        xdotool("mousemove", "--sync", str(sx), str(sy))


def settle(what: str, ticks: int = 1) -> Wait:
    """Resume after ``ticks`` driver ticks: Blender's event loop has read and handled the X events
    sent so far (they are in its queue before the next timer call)."""
    calls = [0]

    def seen() -> bool:
        calls[0] += 1
        return calls[0] >= ticks

    return Wait(what, seen, 5.0)


def press_key(key: str) -> None:
    xdotool("key", key)


def screenshot(name: str) -> Path:
    """The whole X screen as ``OUT/name.png`` (xwd + ImageMagick)."""
    path = OUT / f"{name}.png"
    display = os.environ.get("DISPLAY", ":99")
    xwd = subprocess.run(["xwd", "-root", "-silent", "-display", display], check=True, capture_output=True).stdout
    subprocess.run(["convert", "xwd:-", str(path)], input=xwd, check=True)
    RESULT["screenshots"].append(path.name)
    return path


def region_pixels(path: Path, region) -> np.ndarray:
    """The region's pixels from a screenshot: float RGB array indexed [y, x] with y up, like the region."""
    img = bpy.data.images.load(str(path), check_existing=False)
    try:
        w, h = img.size
        px = np.empty(w * h * 4, dtype=np.float32)
        img.pixels.foreach_get(px)
    finally:
        bpy.data.images.remove(img)
    px = px.reshape(h, w, 4)[:, :, :3]  # Blender image rows run bottom-up, like region y
    x0 = Screen.x + region.x
    y0 = (h - Screen.y - Screen.height) + region.y  # the window's bottom row in image rows
    return px[y0:y0 + region.height, x0:x0 + region.width]


# ----------------------------------------------------------------------------------------------
# Blender helpers
# ----------------------------------------------------------------------------------------------

def window():
    return bpy.context.window_manager.windows[0]


def area_of(kind: str):
    return next((a for a in window().screen.areas if a.type == kind), None)


def region_of(area, kind: str):
    return next(r for r in area.regions if r.type == kind)


def override(area=None, region=None):
    win = window()
    kw = {"window": win, "screen": win.screen}
    if area is not None:
        kw["area"] = area
    if region is not None:
        kw["region"] = region
    return bpy.context.temp_override(**kw)


def modal_running(idname_py: str) -> bool:
    """Is operator ``anim_signals.x`` (Python id) running modal in the window?"""
    rna = idname_py.replace(".", "_OT_", 1).upper()
    return any(op.bl_idname.upper() in (idname_py.upper(), rna) for op in window().modal_operators)


def key_count(ob) -> int:
    action = ob.animation_data.action if ob.animation_data else None
    if action is None:
        return 0
    return sum(len(fc.keyframe_points) for fc in action.fcurves)


def make_active(ob) -> None:
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    bpy.context.view_layer.objects.active = ob
    ob.select_set(True)


def open_signals_sidebar(area) -> Iterator[Wait]:
    """Show ``area``'s sidebar and click its Signals tab (``Region.active_panel_category`` is
    read-only in 4.3). The tabs are a vertical strip along the sidebar's right edge whose labels
    Python cannot locate: click down the strip until the Signals tab is the active one."""
    area.spaces.active.show_region_ui = True
    area.tag_redraw()
    yield Wait("sidebar shown", lambda: region_of(area, "UI").width > 50, 20.0)
    region = region_of(area, "UI")  # looked up again: changing an area's type replaces its regions
    unit = 20.0 * bpy.context.preferences.system.ui_scale
    ry = region.height - 0.4 * unit
    while region.active_panel_category != "Signals" and ry > 0:
        move_mouse(region, region.width - 0.5 * unit, ry)
        xdotool("click", "1")

        def on_signals() -> bool:
            area.tag_redraw()
            return region.active_panel_category == "Signals"

        yield Wait("Signals tab active", on_signals, 0.5, required=False)
        ry -= 0.5 * unit
    move_mouse(region, region.width / 2, region.height / 2)  # off the tabs, so no tooltip covers the panels


class RedrawCounter:
    """Counts redraws of the 3D Viewport sidebar (a POST_PIXEL handler of our own), so a screenshot
    waits until the sidebar has drawn the state it should show."""

    count = 0
    handle = None

    @classmethod
    def _tick(cls) -> None:
        if bpy.context.region is not None and bpy.context.region.type == "UI":
            cls.count += 1

    @classmethod
    def install(cls) -> None:
        cls.handle = bpy.types.SpaceView3D.draw_handler_add(cls._tick, (), "UI", "POST_PIXEL")

    @classmethod
    def after(cls, area, what: str, n: int = 2) -> Wait:
        """A Wait for ``n`` further sidebar redraws (tagging the area each tick)."""
        target = cls.count + n

        def drawn() -> bool:
            area.tag_redraw()
            return cls.count >= target

        return Wait(what, drawn, 30.0)


def ui_scale() -> float:
    return float(bpy.context.preferences.system.ui_scale)


def press_drag(region, points, started: Callable[[], bool] | None = None, *, button: int = 1,
               modifiers: str = "", what: str = "drag") -> Iterator[Wait]:
    """Press ``button`` at the first point (region pixels), move through the others, release at the
    last, with ``modifiers`` ("shift", "ctrl") held throughout. Blender reads each X event before the
    next is sent: Blender 4.3 under Xvfb gives a button event the pointer position it finds when it
    reads the event, so a press sent together with the moves after it would land at the drag's end.
    ``started()``, if given, is the state the press puts the tool in (a soft wait)."""
    if modifiers:
        xdotool("keydown", modifiers)
    try:
        move_mouse(region, *points[0])
        xdotool("mousedown", str(button))
        if started is not None:
            yield Wait(f"{what}: the press starts the drag", started, 5.0, required=False)
        else:
            yield settle(f"{what}: press read")
        for p in points[1:]:
            move_mouse(region, *p)
            yield settle(f"{what}: pointer moved")
        xdotool("mouseup", str(button))
    finally:
        if modifiers:
            xdotool("keyup", modifiers)


def wheel(region, xy, clicks: int) -> None:
    """Mouse wheel at ``xy``: positive ``clicks`` roll up (zoom in), negative down."""
    move_mouse(region, *xy)
    xdotool("click", "--repeat", str(abs(clicks)), "4" if clicks > 0 else "5")


# ----------------------------------------------------------------------------------------------
# operator buttons: found by probing
# ----------------------------------------------------------------------------------------------

PROBE_KEY = ("F9", "ctrl+alt+shift+F9")  # Blender key, xdotool key


PROBE_MISS = "<no operator button>"


class UI_TEST_OT_probe_miss(bpy.types.Operator):
    """The probe key's answer when no operator button is under the mouse (its event reached the window)."""

    bl_idname = "ui_test.probe_miss"
    bl_label = "UI test probe: no button"

    def execute(self, context):
        context.window_manager.clipboard = PROBE_MISS
        return {"FINISHED"}


def install_button_probe() -> None:
    """Ctrl+Alt+Shift+F9 over an operator button runs "Copy Python Command" (the User Interface
    keymap); anywhere else the event falls through to the Window keymap's probe_miss. So every probe
    is answered and the driver learns which operator button is under the mouse (Blender 4.3's Python
    cannot say where a button is)."""
    bpy.utils.register_class(UI_TEST_OT_probe_miss)
    keymaps = bpy.context.window_manager.keyconfigs.addon.keymaps
    for km_name, idname in (("User Interface", "ui.copy_python_command_button"), ("Window", UI_TEST_OT_probe_miss.bl_idname)):
        km = keymaps.new(name=km_name)
        km.keymap_items.new(idname, PROBE_KEY[0], "PRESS", ctrl=True, alt=True, shift=True)


def probe(region, x: float, y: float, answer: list) -> Iterator[Wait]:
    """The Python command of the operator button at region pixel (x, y), or "" (appended to ``answer``).
    The key goes out only once Blender has read the move (two ticks: the move and Blender's own
    re-hover of the button), or the answer would come from the button that was hot before."""
    wm = bpy.context.window_manager
    move_mouse(region, x, y)
    yield settle("probe: pointer on the spot", 2)
    wm.clipboard = ""
    press_key(PROBE_KEY[1])
    yield Wait("probe answered", lambda: wm.clipboard != "", 20.0)
    text = wm.clipboard
    answer.append("" if text == PROBE_MISS else text)


ROW_XS = tuple(i / 20 for i in range(1, 20, 2))  # where a row is probed across once it has a button


def scan_buttons(region, found: dict, *, stop_at: str | None = None, top: float | None = None,
                 bottom: float = 0.0) -> Iterator[Wait]:
    """Map the operator buttons of ``region``: hover down its middle (10 px steps at UI scale 1, so
    every row is hit at least once), and across each row that has a button. ``found`` gets
    ``{python command: (x, y)}``: the command as "Copy Python Command" gives it (for example
    ``bpy.ops.anim_signals.pose_space_pin(clear=True, frame=-1)``), (x, y) the middle of the spots
    where it answered, in region pixels. With ``stop_at``, stops one row after a command containing
    it was found (the second row centres the button vertically)."""
    step = 10.0 * ui_scale()
    y = region.height - 0.6 * step if top is None else top
    spots: dict = {}
    rows_left = -1
    while y > bottom and rows_left != 0:
        answer: list = []
        yield from probe(region, region.width * 0.55, y, answer)
        if answer[0]:
            for fx in ROW_XS:
                answer = []
                yield from probe(region, region.width * fx, y, answer)
                if answer[0]:
                    spots.setdefault(answer[0], []).append((region.width * fx, y))
            if rows_left < 0 and stop_at is not None and any(stop_at in c for c in spots):
                rows_left = 2
        rows_left -= 1 if rows_left > 0 else 0
        y -= step
    for command, xy in spots.items():
        found.setdefault(command, tuple(np.mean(np.asarray(xy), axis=0)))


def button_of(found: dict, idname: str, **args) -> tuple[float, float] | None:
    """Where the button of ``anim_signals.idname`` (with these keyword values, if given) was found."""
    for command, xy in found.items():
        if f"bpy.ops.{idname}(" not in command:
            continue
        if all(f"{k}={v!r}" in command for k, v in args.items()):
            return xy
    return None


def find_button(region, idname: str, found: list) -> Iterator[Wait]:
    """Scan ``region`` until the button of operator ``idname`` (``anim_signals.x``) is found; appends
    its (x, y) region pixels to ``found``."""
    buttons: dict = {}
    yield from scan_buttons(region, buttons, stop_at=f"bpy.ops.{idname}(")
    xy = button_of(buttons, idname)
    if xy is not None:
        found.append(xy)


def click_button(region, xy) -> None:
    """A real click at ``xy`` (region pixels). The pointer arrives from one pixel aside, so Blender
    sees a motion onto the button even when the pointer was on it already (after a modal run the
    button is not hot until the pointer moves)."""
    move_mouse(region, xy[0] + 1, xy[1])
    move_mouse(region, *xy)
    xdotool("click", "1")


def paced_click(region, xy, what: str) -> Iterator[Wait]:
    """:func:`click_button` with each X event read by Blender before the next is sent (the press
    and the release apart). After a tool that ran modal from a sidebar button has ended and the
    sidebar was scrolled, Blender 4.3 under Xvfb took no quick click on the next button (measured:
    Remove Marker and Play Back after Add Marker, tests/ui/scenarios/spatial_keyframes_canvas.py)."""
    move_mouse(region, xy[0] + 1, xy[1])
    yield settle(f"{what}: pointer beside the button")
    move_mouse(region, *xy)
    yield settle(f"{what}: pointer on the button", 2)
    xdotool("mousedown", "1")
    yield settle(f"{what}: button pressed")
    xdotool("mouseup", "1")


def click_then_escape(region, xy, idname: str, what: str) -> Iterator[Wait]:
    """A real click on the button at ``xy`` starts operator ``idname`` (checked: it runs modal in
    the window), then a real Esc, with the pointer off the button, ends it."""
    click_button(region, xy)
    yield Wait(f"the click starts {what}", lambda: modal_running(idname), 20.0)
    check(f"{what} runs modal in the window", modal_running(idname))
    move_mouse(region, region.width / 2, 40)
    press_key("Escape")
    yield Wait(f"Esc ends {what}", lambda: not modal_running(idname), 60.0)


def evaluated_coords(ob) -> np.ndarray:
    """The vertices Blender shows for mesh ``ob`` (modifiers and shape keys evaluated by Blender
    itself), (V, 3) float."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    ev = ob.evaluated_get(depsgraph)
    buf = np.empty(3 * len(ev.data.vertices), dtype=np.float32)
    ev.data.vertices.foreach_get("co", buf)
    return buf.astype(float).reshape(-1, 3)


# ----------------------------------------------------------------------------------------------
# the pose-space canvas
# ----------------------------------------------------------------------------------------------

def canvas_geometry(area, ob):
    """The canvas rectangle in ``area``'s sidebar (x, y, w, h region pixels) and the core's geometry
    of what it shows for the active object ``ob`` (its pose space or its spatial keyframes): what the
    draw callback draws (view, frames, control points, markers, current frame, cursor). (None, None)
    when the canvas is not shown."""
    canvas_state = ext("operators.pose_space.canvas_state")
    sidebar = region_of(area, "UI")
    with override(area, sidebar):
        rect = canvas_state.canvas_rect(bpy.context, sidebar)
        shown_ob, model, source = canvas_state.shown_on_canvas(bpy.context)
        kind = source.kind if model is not None and shown_ob == ob else canvas_state.POSE_SPACE
        if kind == canvas_state.POSE_SPACE:  # also for a pose space not the active object's
            model = ext("operators.pose_space").load_space(ob)
        geom = canvas_state.canvas_geometry_for(bpy.context, ob, model, rect, kind) if rect and model else None
    return rect, geom


# ----------------------------------------------------------------------------------------------
# generated data (the project's own generators where there is one)
# ----------------------------------------------------------------------------------------------

def demo_biped(name: str):
    """The demo's biped (scripts/demo.py): 240 frames, one LINEAR key per frame on every channel."""
    sys.path.insert(0, str(REPO / "scripts"))
    import demo  # noqa: PLC0415  the demo's generator, unchanged

    ob = demo.build_armature()
    ob.name = name
    demo.animate(ob, demo.generate_motion())
    return ob


def wavy_flag(n_frames: int = 24, nx: int = 9, name: str = "Flag"):
    """A grid played by a Mesh Cache (PC2): three waves with different phases, a 2-D pose manifold
    (``anim_signals.posespace.generated.wavy_flag``, as in tests/blender/test_pose_space_canvas.py)."""
    meshcache = ext("anim_signals.meshio.meshcache")
    generated = ext("anim_signals.posespace.generated")
    verts, faces, frames = generated.wavy_flag(n_frames, nx)
    path = str(OUT / f"{name.lower()}.pc2")
    meshcache.write_pc2(path, frames, start=1.0, rate=1.0)
    me = bpy.data.meshes.new(name)
    me.from_pydata(verts.tolist(), [], faces)
    me.update()
    ob = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(ob)
    mod = ob.modifiers.new("cache", "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = path
    mod.frame_start = 1.0
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, n_frames
    return ob


