"""The modal (UI) path: one slice of optimiser work per timer event, ESC cancels and writes nothing.

Headless Blender never calls invoke()/modal() (there is no event loop), so these tests drive the
operator's own modal() and helpers with stand-in events, the way the window manager would.
"""

from __future__ import annotations

import bpy
from _bl_helpers import StepwiseDriver, assert_same_state, event, fcurves_of, make_object, snapshot_all


def test_modal_steps_until_finished_and_writes(scene):
    ob, frames, _ = make_object(n_frames=60)
    original = ob.animation_data.action
    op = StepwiseDriver(bpy.types.ANIM_SIGNALS_OT_fit_latent_spline, bpy.context, mode="AUTO")
    ctx = bpy.context
    assert op.modal(ctx, event("MOUSEMOVE")) == {"RUNNING_MODAL"}  # other input is blocked
    assert ob.animation_data.action == original
    for _ in range(10_000):
        result = op.modal(ctx, event("TIMER"))
        if result != {"RUNNING_MODAL"}:
            break
    assert result == {"FINISHED"}
    assert op._timer is None and op._gen is None
    assert ob.animation_data.action.name == original.name + ".fit"
    assert sum(len(fc.keyframe_points) for fc in fcurves_of(ob)) < 9 * len(frames) / 2
    assert any("Fitted" in msg for _, msg in op.reports)
    assert scene.anim_signals.last_fit.valid


def test_escape_cancels_and_leaves_the_original(scene):
    make_object(n_frames=60)
    before = snapshot_all()
    op = StepwiseDriver(bpy.types.ANIM_SIGNALS_OT_fit_latent_spline, bpy.context, mode="AUTO", keep_original=False)
    ctx = bpy.context
    assert op.modal(ctx, event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(ctx, event("ESC", "PRESS")) == {"CANCELLED"}
    assert op._timer is None and op._gen is None
    assert any("cancelled" in msg for _, msg in op.reports)
    assert_same_state(before, snapshot_all())
    assert not scene.anim_signals.last_fit.valid


def test_right_click_cancels(scene):
    make_object(n_frames=40)
    before = snapshot_all()
    op = StepwiseDriver(bpy.types.ANIM_SIGNALS_OT_fit_latent_spline, bpy.context, mode="LATENT")
    assert op.modal(bpy.context, event("RIGHTMOUSE", "PRESS")) == {"CANCELLED"}
    assert_same_state(before, snapshot_all())
