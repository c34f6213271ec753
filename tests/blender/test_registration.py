"""The extension registers its operator, menus, panel and scene settings, and unregisters cleanly."""

from __future__ import annotations

import addon_utils
import bpy
from _bl_helpers import draw_fit_panel, make_object, run_fit
from conftest import EXT_MODULE


def _menu_has_entry(menu) -> bool:
    funcs = getattr(menu.draw, "_draw_funcs", [])
    return any(getattr(f, "__module__", "").startswith(EXT_MODULE) for f in funcs)


def test_registered(scene):
    assert hasattr(bpy.types, "ANIM_SIGNALS_OT_fit_latent_spline")
    assert hasattr(bpy.types, "ANIM_SIGNALS_PT_fit_spline")
    assert bpy.types.ANIM_SIGNALS_PT_fit_spline.bl_space_type == "GRAPH_EDITOR"
    assert bpy.types.ANIM_SIGNALS_PT_fit_spline.bl_category == "Signals"
    assert _menu_has_entry(bpy.types.GRAPH_MT_key)
    assert _menu_has_entry(bpy.types.DOPESHEET_MT_key)
    rna = bpy.ops.anim_signals.fit_latent_spline.get_rna_type()
    assert {"REGISTER", "UNDO"} <= set(rna.bl_options if hasattr(rna, "bl_options") else bpy.types.ANIM_SIGNALS_OT_fit_latent_spline.bl_options)
    props = rna.properties
    for name in ("channels", "mode", "max_error_rotation", "max_error_location", "max_error_other",
                 "internal_knots", "degree", "population", "seed", "snap_to_frames", "keep_original"):
        assert name in props, name
        assert props[name].description, f"{name} has no tooltip"
    settings = scene.anim_signals.fit
    assert settings.max_error_rotation == 0.5 and settings.keep_original
    assert not scene.anim_signals.last_fit.valid


def test_invoke_without_window_runs_synchronously(scene):
    ob, _, _ = make_object(n_frames=40)
    action = ob.animation_data.action
    # Headless there is no event loop: INVOKE falls back to execute(), a complete fit.
    assert bpy.ops.anim_signals.fit_latent_spline("INVOKE_DEFAULT", mode="LATENT") == {"FINISHED"}
    assert scene.anim_signals.last_fit.valid
    assert ob.animation_data.action.name == action.name + ".fit"


def test_disable_and_enable_again(scene):
    addon_utils.disable(EXT_MODULE, default_set=True)
    try:
        assert not hasattr(bpy.types, "ANIM_SIGNALS_OT_fit_latent_spline")
        assert not hasattr(bpy.types, "ANIM_SIGNALS_PT_fit_spline")
        assert not hasattr(bpy.types.Scene, "anim_signals")
        assert not _menu_has_entry(bpy.types.GRAPH_MT_key)
    finally:
        assert addon_utils.enable(EXT_MODULE, default_set=True) is not None
    make_object(n_frames=30)
    assert run_fit(mode="LATENT") == {"FINISHED"}


def test_panel_draws_settings_and_last_fit(scene):
    calls = draw_fit_panel(scene)
    assert ("operator", "anim_signals.fit_latent_spline") in calls
    set_names = {c[1] for c in calls if c[0] == "set"}
    assert {"max_error_rotation", "max_error_location", "mode", "keep_original"} <= set_names
    assert not any(c[0] == "label" and "Keys:" in c[1] for c in calls)  # no fit yet

    make_object(n_frames=30)
    assert run_fit(mode="LATENT") == {"FINISHED"}
    calls = draw_fit_panel(scene)
    labels = [c[1] for c in calls if c[0] == "label"]
    r = scene.anim_signals.last_fit
    assert any(f"Keys: {r.keys_before} \u2192 {r.keys_after}" in t for t in labels), labels
    assert any(t.startswith("Rotation:") for t in labels)


def test_the_kernel_warm_up_starts_only_in_the_ui_and_compiles_in_a_thread(extension):
    import sys
    import threading

    warm_up = sys.modules[f"{EXT_MODULE}.operators.fit_spline.warm_up"]
    segment_fit = sys.modules[f"{EXT_MODULE}.anim_signals.splines.segment_fit"]
    # headless (--background, pipelines): nothing scheduled at registration
    assert bpy.app.background and not bpy.app.timers.is_registered(warm_up.start)
    assert warm_up.STATE["state"] == ""
    try:
        warm_up.start()  # what the UI's timer runs
        for thread in threading.enumerate():
            if thread.name == "anim_signals_warm_up":
                thread.join(600)
        assert warm_up.STATE["state"] == segment_fit.kernel_location() != "numpy"
    finally:
        warm_up.STATE["state"] = ""


def test_a_modal_fit_waits_for_the_warm_up_step_by_step(extension):
    """While the warm-up compiles, the fit's steps are waits (progress 0, nothing run); the work
    runs once it is done."""
    import sys

    warm_up = sys.modules[f"{EXT_MODULE}.operators.fit_spline.warm_up"]
    ran = []

    def work():
        ran.append(True)
        yield 0.5
        yield 1.0

    warm_up.STATE["state"] = "running"
    try:
        steps = warm_up.after_warm_up(work())
        assert [next(steps) for _ in range(3)] == [0.0, 0.0, 0.0] and not ran
        warm_up.STATE["state"] = "worker"
        assert list(steps) == [0.5, 1.0] and ran
    finally:
        warm_up.STATE["state"] = ""
