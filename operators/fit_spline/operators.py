"""Operator ``anim_signals.fit_latent_spline``: dense F-curves -> a few exact Bezier keys.

Thin: :mod:`.fitting` reads and checks the curves, the core fits them, :mod:`.fitting` writes the
keys. Nothing is written until the fit has finished, so a cancelled or failed fit leaves the
user's data untouched.
"""

from __future__ import annotations

import bpy

from ...anim_signals import FitCancelled
from ..common import StepwiseOperator
from ..common.menus import add_to_menus, remove_from_menus
from ..common.polls import has_animated_object
from ..common.transaction import current_transaction
from .fitting import FitInputError, FitPlan, iter_plan, kept_text, plan_fit, write_plan
from .object_space import iter_joint_plan, plan_joint_fit
from .properties import FIT_SETTINGS, FitSettings
from .warm_up import after_warm_up, warming_up

__all__ = ["ANIM_SIGNALS_OT_fit_latent_spline"]


class ANIM_SIGNALS_OT_fit_latent_spline(FitSettings, StepwiseOperator, bpy.types.Operator):
    """Replace dense keys (mocap, baked animation) with a few exact Bezier keys on optimally placed frames, every original frame within the max error"""

    bl_idname = "anim_signals.fit_latent_spline"
    bl_label = "Fit Spline"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = FIT_SETTINGS
    STATUS_TEXT = "Fitting spline... Esc / right-click to cancel"
    CANCELLED_TEXT = "Fit cancelled: nothing changed"
    REMOVED_TEXT = "The animated data was removed during the fit: nothing written"
    FAILED_PREFIX = "Fit failed: "
    INPUT_ERRORS = (FitInputError,)
    FAILURES = (ValueError, FitCancelled)

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.fit

    @classmethod
    def poll(cls, context):
        return has_animated_object(cls, context)

    def fit_options(self) -> dict:
        """Keyword arguments of the core's ``iter_fit_channels``."""
        return {
            "mode": self.mode,
            "internal_knots": self.internal_knots,
            "degree": self.degree,
            "population": self.population or None,
            "max_iterations": self.max_iterations or None,
            "seed": self.seed,
            "snap_to_frames": self.snap_to_frames,
            "free_handles": self.free_handles,
            "continuity": self.continuity,
        }

    def curve_degree(self) -> int:
        """The fewest keyed frames a curve needs, minus one: Fewest and Editable Keys reduce any
        curve keyed on two frames or more; the spline modes need degree + 1."""
        return 1 if self.mode in ("FEWEST", "EDITABLE") else self.degree

    def prepare(self, context) -> FitPlan:
        if self.error_space == "JOINTS":
            return plan_joint_fit(context.active_object, context.scene, max_joint_error=self.max_joint_error,
                                  shell_distance=self.shell_distance, **self.plan_options())
        return plan_fit(context.active_object, **self.plan_options())

    def plan_options(self) -> dict:
        """Keyword arguments of :func:`.fitting.plan_fit`."""
        return dict(
            target=self.target,
            channels=self.channels,
            degree=self.curve_degree(),
            max_error_rotation=self.max_error_rotation,
            max_error_location=self.max_error_location,
            max_error_other=self.max_error_other,
            watch_edits=not self.blocking,
        )

    def steps(self, plan: FitPlan):
        if plan.joints is not None:
            work = iter_joint_plan(plan, share_keys=self.share_keys, **self.fit_options())
        else:
            work = iter_plan(plan, share_keys=self.share_keys, **self.fit_options())
        if self.blocking or not warming_up():
            return work
        # the first fit after an install, started while the kernel compiles at startup: wait on the
        # timer (Esc stays live) rather than in the kernel's lock (the UI would freeze)
        self.STATUS_TEXT = ("Fitting spline once the fitting kernel is compiled (the first fit after installing "
                            "or updating)... Esc / right-click to cancel")
        return after_warm_up(work)

    def finish(self, context, plan: FitPlan) -> set[str]:
        summary = write_plan(plan, keep_original=self.keep_original, scene=context.scene)
        summary.seconds = self.elapsed()
        current_transaction().keep_fields(context.scene.anim_signals.last_fit)
        context.scene.anim_signals.last_fit.store(summary, plan.object_name)
        msg = summary.message()
        if plan.kept:
            msg += f"; curves left as they are: {kept_text(plan, self.curve_degree())}"
        if plan.joints is not None:
            msg += "; " + plan.joints.message()
        if summary.within_tolerance:
            self.report({"INFO"}, msg)
        else:
            self.report({"WARNING"}, msg + " (some frames exceed the max error)")
        return {"FINISHED"}


def menu_func(self, context):
    self.layout.separator()
    self.layout.operator(ANIM_SIGNALS_OT_fit_latent_spline.bl_idname, text="Fit Spline (Anim Signals)")


MENUS = ("GRAPH_MT_key", "DOPESHEET_MT_key")
classes = (ANIM_SIGNALS_OT_fit_latent_spline,)


def add_menus() -> None:
    add_to_menus(MENUS, menu_func)


def remove_menus() -> None:
    remove_from_menus(MENUS, menu_func)
