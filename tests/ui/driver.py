"""Real-window UI driver: runs inside Blender 4.3 (``blender --python tests/ui/driver.py -- --out DIR
[--only a,b]``).

Started by ``tests/ui/run.sh`` in the Debian trixie root under Xvfb. Enables the extension (linked
as the folder extension ``user_default/anim_signals``), then runs the scenarios of
``tests/ui/scenarios`` (``SCENARIOS``, or those named by ``--only``) from ``bpy.app.timers``. A
scenario is a generator that yields :class:`uikit.Wait` conditions between its actions, so the
driver gives Blender's event loop back while it waits for a *state* (a modal tool finished, the
sidebar redrew), never for a fixed time alone. A scenario whose required wait times out, or that
raises, fails and ends; the next one still runs, in the same Blender session.

Writes ``DIR/*.png`` and ``DIR/result.json`` (every check with its scenario and outcome) and quits.
run.sh fails the stage on any failed check, a missing result, or a Python traceback in the console.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # uikit and scenarios

import addon_utils  # noqa: E402
import bpy  # noqa: E402
import uikit  # noqa: E402
from scenarios import SCENARIOS  # noqa: E402
from uikit import (  # noqa: E402
    CURRENT,
    EXT_MODULE,
    OUT,
    RESULT,
    RedrawCounter,
    Screen,
    Wait,
    area_of,
    check,
    install_button_probe,
    open_signals_sidebar,
    region_of,
    screenshot,
    window,
    xdotool,
)

TICK = 0.05  # seconds between timer calls while a step waits


def chosen_scenarios() -> list[str]:
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    if "--only" in argv and argv[argv.index("--only") + 1]:
        names = argv[argv.index("--only") + 1].split(",")
        unknown = [n for n in names if n not in SCENARIOS]
        if unknown:
            raise SystemExit(f"unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}")
        return names
    return list(SCENARIOS)


def setup() -> Iterator[Wait]:
    """The window fills the X screen; the extension is enabled; the 3D Viewport's sidebar is on Signals."""
    win = window()
    Screen.find()  # no window manager runs under Xvfb: place the window so every region is on screen
    xdotool("windowmove", "--sync", Screen.wid, "0", "0")
    xdotool("windowsize", "--sync", Screen.wid, "1600", "1000")
    yield Wait("window fills the screen", lambda: win.width == 1600 and win.height == 1000, 20.0)
    Screen.find()
    RedrawCounter.install()
    loaded = addon_utils.check(EXT_MODULE)[1]
    if not check("extension enabled", loaded and hasattr(bpy.ops.anim_signals, "fit_latent_spline"), EXT_MODULE):
        raise RuntimeError("the extension is not enabled: no scenario can run")
    view3d = area_of("VIEW_3D")
    if not check("a 3D Viewport in the default screen", view3d is not None):
        raise RuntimeError("no 3D Viewport")
    screenshot("00_start")
    install_button_probe()
    yield from main_area_on_signals(view3d)
    screenshot("01_sidebar_signals")


def main_area_on_signals(area) -> Iterator[Wait]:
    """The big area back to a 3D Viewport whose sidebar shows the Signals tab."""
    if area.type != "VIEW_3D":
        area.type = "VIEW_3D"
        yield Wait("3D Viewport back", lambda: area.type == "VIEW_3D", 20.0)
    yield from open_signals_sidebar(area)
    sidebar = region_of(area, "UI")
    yield RedrawCounter.after(area, "3D Viewport sidebar drawn")
    check("3D Viewport sidebar shows the Signals tab", sidebar.active_panel_category == "Signals"
          and sidebar.width > 50, f"width {sidebar.width}")


def hide_new_objects(before: set) -> None:
    """A scenario's objects are hidden once it ends, so the next one starts from a clear viewport."""
    for ob in bpy.context.view_layer.objects:
        if ob.name not in before:
            ob.hide_set(True)


def all_scenarios() -> Iterator[tuple[str, Iterator[Wait]]]:
    yield "setup", setup()
    area = area_of("VIEW_3D")
    for name in chosen_scenarios():
        before = {ob.name for ob in bpy.data.objects}
        module = importlib.import_module(f"scenarios.{name}")
        yield name, module.run(area)
        hide_new_objects(before)
        yield f"{name}: restore", main_area_on_signals(area)


def finish() -> None:
    RESULT["passed"] = RESULT["error"] is None and bool(RESULT["checks"]) and all(c["ok"] for c in RESULT["checks"])
    (OUT / "result.json").write_text(json.dumps(RESULT, indent=2))
    print(f"UI-RESULT {'PASSED' if RESULT['passed'] else 'FAILED'}: {OUT / 'result.json'}", flush=True)
    with uikit.override():
        bpy.ops.wm.quit_blender()


class Runner:
    """Steps through every scenario from a timer; a failure ends the scenario it happened in."""

    def __init__(self):
        self.scenarios = all_scenarios()
        self.name = ""
        self.steps: Iterator[Wait] | None = None
        self.wait: Wait | None = None
        self.started = time.monotonic()

    def fail_scenario(self, what: str, detail: str) -> None:
        check(what, False, detail)
        RESULT["scenarios"][self.name] = "failed"
        if self.name == "setup":
            RESULT["error"] = detail
        self.steps = None

    def next_scenario(self) -> bool:
        if RESULT["error"] is not None:  # setup failed: nothing else can run
            return False
        try:
            self.name, self.steps = next(self.scenarios)
        except StopIteration:
            return False
        CURRENT["scenario"] = self.name.split(":")[0]
        self.started = time.monotonic()
        print(f"UI-SCENARIO {self.name}", flush=True)
        return True

    def tick(self) -> float | None:
        try:
            if self.wait is not None:
                if not self.wait.condition():
                    if time.monotonic() < self.wait.deadline:
                        return TICK
                    if self.wait.required:
                        self.fail_scenario(f"wait: {self.wait.what}", f"not reached within {self.wait.timeout:.0f} s")
                    else:
                        print(f"UI-WAIT gave up: {self.wait.what}", flush=True)
                self.wait = None
            while True:
                if self.steps is None and not self.next_scenario():
                    finish()
                    return None
                try:
                    self.wait = next(self.steps)
                    return TICK
                except StopIteration:
                    RESULT["scenarios"].setdefault(self.name, f"done in {time.monotonic() - self.started:.1f} s")
                    self.steps = None
        except Exception:  # noqa: BLE001  a scenario's own failure fails it, with its traceback
            detail = traceback.format_exc()
            traceback.print_exc()
            self.fail_scenario("scenario raised", detail.strip().splitlines()[-1])
            if self.name == "setup":
                finish()
                return None
            return TICK


def enable_extension() -> None:
    try:
        addon_utils.enable(EXT_MODULE, default_set=True, handle_error=None)
    except Exception:  # noqa: BLE001
        RESULT["error"] = traceback.format_exc()
        traceback.print_exc()


def start() -> None:
    bpy.context.preferences.view.show_splash = False
    runner = Runner()
    bpy.app.timers.register(runner.tick, first_interval=1.0)


enable_extension()
start()
