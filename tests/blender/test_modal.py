"""The modal (UI) path: one slice of optimiser work per timer event, ESC cancels and writes nothing.

Headless Blender never calls invoke()/modal() (there is no event loop), so these tests drive the
operator's own modal() and helpers with stand-in events, the way the window manager would.
"""

from __future__ import annotations

import types

import bpy
from _bl_helpers import assert_same_state, fcurves_of, make_object, snapshot_all


class _FakeOp:
    """Carries the operator's methods and settings without a registered instance."""

    def __init__(self, cls, context, **settings):
        self.reports: list = []
        for name in ("modal", "_cleanup", "_finish", "_fit_options", "_plan_or_report"):
            setattr(self, name, types.MethodType(getattr(cls, name), self))
        for name in ("STATUS_TEXT", "CANCELLED_TEXT", "REMOVED_TEXT", "FAILED_PREFIX", "FAILURES"):
            setattr(self, name, getattr(cls, name))  # the StepwiseModal texts of this operator
        props = bpy.ops.anim_signals.fit_latent_spline.get_rna_type().properties
        for prop in props:
            if prop.identifier != "rna_type":
                setattr(self, prop.identifier, prop.default)
        for k, v in settings.items():
            setattr(self, k, v)
        self._t0 = 0.0
        self.STEP_SECONDS = 0.0  # one optimiser step per event: deterministic
        self._plan = self._plan_or_report(context)
        assert self._plan is not None, self.reports
        fit_mod = __import__(cls.__module__, fromlist=["iter_plan"])
        self._gen = fit_mod.iter_plan(self._plan, **self._fit_options())
        context.window_manager.progress_begin(0, 100)
        self._timer = context.window_manager.event_timer_add(0.02, window=context.window)

    def report(self, level, message):
        self.reports.append((set(level), message))


def _event(kind: str, value: str = "NOTHING"):
    return types.SimpleNamespace(type=kind, value=value)


def test_modal_steps_until_finished_and_writes(scene):
    ob, frames, _ = make_object(n_frames=60)
    original = ob.animation_data.action
    op = _FakeOp(bpy.types.ANIM_SIGNALS_OT_fit_latent_spline, bpy.context, mode="AUTO")
    ctx = bpy.context
    assert op.modal(ctx, _event("MOUSEMOVE")) == {"RUNNING_MODAL"}  # other input is blocked
    assert ob.animation_data.action == original
    for _ in range(10_000):
        result = op.modal(ctx, _event("TIMER"))
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
    op = _FakeOp(bpy.types.ANIM_SIGNALS_OT_fit_latent_spline, bpy.context, mode="AUTO", keep_original=False)
    ctx = bpy.context
    assert op.modal(ctx, _event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(ctx, _event("ESC", "PRESS")) == {"CANCELLED"}
    assert op._timer is None and op._gen is None
    assert any("cancelled" in msg for _, msg in op.reports)
    assert_same_state(before, snapshot_all())
    assert not scene.anim_signals.last_fit.valid


def test_right_click_cancels(scene):
    make_object(n_frames=40)
    before = snapshot_all()
    op = _FakeOp(bpy.types.ANIM_SIGNALS_OT_fit_latent_spline, bpy.context, mode="LATENT")
    assert op.modal(bpy.context, _event("RIGHTMOUSE", "PRESS")) == {"CANCELLED"}
    assert_same_state(before, snapshot_all())
