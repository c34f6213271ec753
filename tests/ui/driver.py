"""Real-window UI driver: runs inside Blender 4.3 (``blender --python tests/ui/driver.py -- --out DIR``).

Started by ``tests/ui/run.sh`` in the Debian trixie root under Xvfb. Enables the extension (linked
as the folder extension ``user_default/anim_signals``), then runs the scenario from
``bpy.app.timers``: a scenario is a generator that yields :class:`Wait` conditions between its
actions, so the driver gives Blender's event loop back while it waits for a *state* (a modal tool
finished, the sidebar redrew), never for a fixed time alone. Mouse and keyboard go through
``xdotool``, so real X events reach modal operators and draw handlers; screenshots come from ``xwd``
(``bpy.ops.screen.screenshot`` gives black images under llvmpipe).

Writes ``DIR/*.png`` and ``DIR/result.json`` (every check with its outcome) and quits Blender.
run.sh fails the stage on any failed check, a missing result, or a Python traceback in the console.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import addon_utils
import bpy
import numpy as np

EXT_MODULE = "bl_ext.user_default.anim_signals"
REPO = Path(__file__).resolve().parent.parent.parent  # the linked working tree
TICK = 0.05  # seconds between timer calls while a step waits


def _out_dir() -> Path:
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else REPO / "out" / "ui"
    out.mkdir(parents=True, exist_ok=True)
    return out


OUT = _out_dir()
RESULT: dict = {"blender": bpy.app.version_string, "checks": [], "screenshots": [], "error": None}


def check(name: str, ok: bool, detail: str = "") -> bool:
    """Record one assertion (the run fails if any is False) and print it to the console log."""
    RESULT["checks"].append({"name": name, "ok": bool(ok), "detail": detail})
    print(f"UI-CHECK {'PASS' if ok else 'FAIL'}: {name}" + (f" ({detail})" if detail else ""), flush=True)
    return bool(ok)


class Wait:
    """Yielded by a scenario: resume when ``condition()`` is true; a failed check after ``timeout`` s."""

    def __init__(self, what: str, condition: Callable[[], bool], timeout: float = 60.0, *, required: bool = True):
        self.what, self.condition, self.deadline = what, condition, time.monotonic() + timeout
        self.timeout, self.required = timeout, required


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
    sx, sy = Screen.to_screen(region, rx, ry)
    xdotool("mousemove", "--sync", str(sx), str(sy))


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


def wavy_flag(n_frames: int = 24, nx: int = 9):
    """A grid played by a Mesh Cache (PC2): three waves with different phases, a 2-D pose manifold
    (``anim_signals.posespace.generated.wavy_flag``, as in tests/blender/test_pose_space_canvas.py)."""
    meshcache = sys.modules[f"{EXT_MODULE}.anim_signals.meshio.meshcache"]
    generated = sys.modules[f"{EXT_MODULE}.anim_signals.posespace.generated"]
    verts, faces, frames = generated.wavy_flag(n_frames, nx)
    path = str(OUT / "flag.pc2")
    meshcache.write_pc2(path, frames, start=1.0, rate=1.0)
    me = bpy.data.meshes.new("Flag")
    me.from_pydata(verts.tolist(), [], faces)
    me.update()
    ob = bpy.data.objects.new("Flag", me)
    bpy.context.scene.collection.objects.link(ob)
    mod = ob.modifiers.new("cache", "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = path
    mod.frame_start = 1.0
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, n_frames
    return ob


# ----------------------------------------------------------------------------------------------
# the scenario
# ----------------------------------------------------------------------------------------------

FIT = "anim_signals.fit_latent_spline"


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


def find_button(region, idname: str, found: list) -> Iterator[Wait]:
    """Hover down the middle of ``region`` and probe each spot until the button of operator
    ``idname`` (``anim_signals.x``) is under the mouse; appends its (x, y) region pixels to ``found``."""
    wm = bpy.context.window_manager
    x = region.width * 0.55
    for y in range(region.height - 12, 0, -10):  # 10 px steps: a 1.4-high button is ~28 px
        wm.clipboard = ""
        move_mouse(region, x, y)  # X delivers the move before the key: the button is hot when probed
        press_key(PROBE_KEY[1])
        yield Wait("probe answered", lambda: wm.clipboard != "", 20.0)
        if f"bpy.ops.{idname}(" in wm.clipboard:
            found.append((x, y))
            return


def click_button(region, xy) -> None:
    move_mouse(region, *xy)
    xdotool("click", "1")


def scenario() -> Iterator[Wait]:
    win = window()
    # Fill the X screen so every region is on it (no window manager runs under Xvfb).
    Screen.find()
    xdotool("windowmove", "--sync", Screen.wid, "0", "0")
    xdotool("windowsize", "--sync", Screen.wid, "1600", "1000")
    yield Wait("window fills the screen", lambda: win.width == 1600 and win.height == 1000, 20.0)
    Screen.find()
    RedrawCounter.install()

    loaded = addon_utils.check(EXT_MODULE)[1]
    check("extension enabled", loaded and hasattr(bpy.ops.anim_signals, "fit_latent_spline"), EXT_MODULE)
    if not loaded:
        return

    view3d = area_of("VIEW_3D")
    if not check("a 3D Viewport in the default screen", view3d is not None):
        return
    screenshot("00_start")
    yield from open_signals_sidebar(view3d)
    sidebar3d = region_of(view3d, "UI")
    yield RedrawCounter.after(view3d, "3D Viewport sidebar drawn")
    check("3D Viewport sidebar shows the Signals tab", sidebar3d.active_panel_category == "Signals"
          and sidebar3d.width > 50, f"width {sidebar3d.width}")
    screenshot("01_sidebar_signals")

    # -- Fit Spline: run, then a second run cancelled with Esc -----------------------------------
    biped = demo_biped("UI_Biped")
    make_active(biped)
    before = key_count(biped)
    # The big area becomes a Graph Editor for the fit and a 3D Viewport again for the pose space
    # (other areas are too narrow or too low for the Graph Editor's sidebar to show).
    graph = view3d
    graph.type = "GRAPH_EDITOR"
    graph.ui_type = "FCURVES"
    yield from open_signals_sidebar(graph)
    graph_sidebar = region_of(graph, "UI")
    check("Graph Editor sidebar shows the Signals tab", graph_sidebar.active_panel_category == "Signals")
    install_button_probe()
    button: list = []
    yield from find_button(graph_sidebar, FIT, button)
    if not check("Fit Spline button found in the Graph Editor sidebar", bool(button)):
        return
    last = bpy.context.scene.anim_signals.last_fit
    click_button(graph_sidebar, button[0])  # a real click on the panel's button
    # finished = the biped's result is shown and the modal run is over (not merely "not running",
    # which is also true before Blender has handled the click)
    yield Wait("Fit Spline finished", lambda: last.valid and last.object_name == biped.name
               and not modal_running(FIT), 300.0)
    after = key_count(biped)
    check("Fit Spline reduces the keys", 0 < after < before, f"{before} -> {after} keys")
    check("Fit Spline result shown for the biped", last.valid and last.object_name == biped.name
          and last.keys_before == before and last.keys_after == after,
          f"last fit: {last.object_name} {last.keys_before} -> {last.keys_after}")
    screenshot("02_fit_spline_done")

    biped2 = demo_biped("UI_Biped_Esc")
    make_active(biped2)
    before2 = key_count(biped2)
    action2 = biped2.animation_data.action
    actions_before = set(bpy.data.actions.keys())
    click_button(graph_sidebar, button[0])
    yield Wait("the click starts the fit", lambda: modal_running(FIT), 10.0)
    check("Fit Spline runs modal in the window", modal_running(FIT))
    move_mouse(graph_sidebar, graph_sidebar.width / 2, graph_sidebar.height / 2)
    press_key("Escape")  # a real key press through X
    yield Wait("Esc ends the fit", lambda: not modal_running(FIT), 60.0)
    check("Esc cancels the fit: keys unchanged", key_count(biped2) == before2
          and biped2.animation_data.action == action2, f"{before2} -> {key_count(biped2)} keys")
    check("Esc cancels the fit: no action added", set(bpy.data.actions.keys()) == actions_before,
          f"new: {sorted(set(bpy.data.actions.keys()) - actions_before)}")
    check("Esc cancels the fit: last fit still the first run", last.object_name == biped.name)
    for ob in (biped, biped2):
        ob.hide_set(True)
    view3d.type = "VIEW_3D"
    yield Wait("3D Viewport back with its sidebar", lambda: region_of(view3d, "UI").width > 50, 20.0)
    sidebar3d = region_of(view3d, "UI")
    check("3D Viewport sidebar still on the Signals tab", sidebar3d.active_panel_category == "Signals")

    # -- Pose space on a generated mesh: the canvas draws its frame dots ------------------------
    data = sys.modules[f"{EXT_MODULE}.operators.pose_space"]
    canvas_state = sys.modules[f"{EXT_MODULE}.operators.pose_space.canvas_state"]
    flag = wavy_flag()
    scene = bpy.context.scene
    ps_ob, _, _ = data.build(flag, scene, frame_start=1, frame_end=24, k=12, l=12, m=4)
    make_active(ps_ob)
    yield RedrawCounter.after(view3d, "sidebar redrawn with the canvas", n=3)
    with override(view3d, sidebar3d):
        rect = canvas_state.canvas_rect(bpy.context, sidebar3d)
        space = data.load_space(ps_ob)
        geom = canvas_state.canvas_geometry_for(bpy.context, ps_ob, space, rect) if rect else None
    if not check("canvas has a rectangle in the sidebar", rect is not None, str(rect)):
        return
    shot = screenshot("03_pose_space_canvas")
    pixels = region_pixels(shot, sidebar3d)
    x0, y0, w, h = (int(round(v)) for v in rect)
    canvas = pixels[y0:y0 + h, x0:x0 + w]
    background = np.median(canvas.reshape(-1, 3), axis=0)
    differs = np.abs(canvas - background).max(axis=2) > 0.08
    check("canvas is not blank", differs.mean() > 0.005,
          f"{100 * differs.mean():.2f}% of {w}x{h} pixels differ from the background")
    # Every frame dot where the core puts it: the pixel there is near the dot's colour, not the background.
    hits = 0
    points = np.asarray(geom.frame_points)
    for (px, py), color in zip(points, np.asarray(geom.frame_colors)[:, :3]):
        ix, iy = int(round(px)), int(round(py))
        patch = pixels[max(iy - 1, 0):iy + 2, max(ix - 1, 0):ix + 2].reshape(-1, 3)
        if patch.size and np.abs(patch - color).max(axis=1).min() < np.abs(background - color).max() * 0.5 + 0.05:
            hits += 1
    check("frame dots drawn where the core puts them", hits >= 0.8 * len(points),
          f"{hits} of {len(points)} dots found at their positions")


# ----------------------------------------------------------------------------------------------
# timer plumbing
# ----------------------------------------------------------------------------------------------

def finish() -> None:
    RESULT["passed"] = RESULT["error"] is None and bool(RESULT["checks"]) and all(c["ok"] for c in RESULT["checks"])
    (OUT / "result.json").write_text(json.dumps(RESULT, indent=2))
    print(f"UI-RESULT {'PASSED' if RESULT['passed'] else 'FAILED'}: {OUT / 'result.json'}", flush=True)
    with override():
        bpy.ops.wm.quit_blender()


def start() -> None:
    bpy.context.preferences.view.show_splash = False
    steps = scenario()
    waiting: list[Wait | None] = [None]

    def tick() -> float | None:
        try:
            wait = waiting[0]
            if wait is not None:
                if not wait.condition():
                    if time.monotonic() < wait.deadline:
                        return TICK
                    if wait.required:
                        check(f"wait: {wait.what}", False, f"not reached within {wait.timeout:.0f} s")
                        finish()
                        return None
                    print(f"UI-WAIT gave up: {wait.what}", flush=True)
                print(f"UI-WAIT done: {wait.what}", flush=True)
            waiting[0] = next(steps)
            return TICK
        except StopIteration:
            finish()
            return None
        except Exception:  # noqa: BLE001  the driver's own failure fails the run, with its traceback
            RESULT["error"] = traceback.format_exc()
            traceback.print_exc()
            finish()
            return None

    bpy.app.timers.register(tick, first_interval=1.0)


def enable_extension() -> None:
    try:
        addon_utils.enable(EXT_MODULE, default_set=True, handle_error=None)
    except Exception:  # noqa: BLE001
        RESULT["error"] = traceback.format_exc()
        traceback.print_exc()


enable_extension()
start()
