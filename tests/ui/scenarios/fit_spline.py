"""Fit Spline from the Graph Editor's Signals tab: a real click runs the modal fit; Esc cancels it."""

from __future__ import annotations

from collections.abc import Iterator

import bpy
from uikit import (
    Wait,
    check,
    click_button,
    click_then_escape,
    demo_biped,
    find_button,
    key_count,
    make_active,
    modal_running,
    open_signals_sidebar,
    region_of,
    screenshot,
)

FIT = "anim_signals.fit_latent_spline"


def run(area) -> Iterator[Wait]:
    biped = demo_biped("UI_Biped")
    make_active(biped)
    before = key_count(biped)
    # The big area becomes a Graph Editor for the fit (other areas are too narrow or too low for
    # the Graph Editor's sidebar to show) and a 3D Viewport again at the end.
    area.type = "GRAPH_EDITOR"
    area.ui_type = "FCURVES"
    yield from open_signals_sidebar(area)
    sidebar = region_of(area, "UI")
    check("Graph Editor sidebar shows the Signals tab", sidebar.active_panel_category == "Signals")
    button: list = []
    yield from find_button(sidebar, FIT, button)
    if not check("Fit Spline button found in the Graph Editor sidebar", bool(button)):
        return
    last = bpy.context.scene.anim_signals.last_fit
    click_button(sidebar, button[0])  # a real click on the panel's button
    # finished = the biped's result is shown and the modal run is over (not merely "not running",
    # which is also true before Blender has handled the click)
    yield Wait("Fit Spline finished", lambda: last.valid and last.object_name == biped.name
               and not modal_running(FIT), 300.0)
    after = key_count(biped)
    check("Fit Spline reduces the keys", 0 < after < before, f"{before} -> {after} keys")
    check("Fit Spline result shown for the biped", last.valid and last.object_name == biped.name
          and last.keys_before == before and last.keys_after == after,
          f"last fit: {last.object_name} {last.keys_before} -> {last.keys_after}")
    screenshot("fit_spline_done")

    biped2 = demo_biped("UI_Biped_Esc")
    make_active(biped2)
    before2 = key_count(biped2)
    action2 = biped2.animation_data.action
    actions_before = set(bpy.data.actions.keys())
    yield from click_then_escape(sidebar, button[0], FIT, "the fit")
    check("Esc cancels the fit: keys unchanged", key_count(biped2) == before2
          and biped2.animation_data.action == action2, f"{before2} -> {key_count(biped2)} keys")
    check("Esc cancels the fit: no action added", set(bpy.data.actions.keys()) == actions_before,
          f"new: {sorted(set(bpy.data.actions.keys()) - actions_before)}")
    check("Esc cancels the fit: last fit still the first run", last.object_name == biped.name)
