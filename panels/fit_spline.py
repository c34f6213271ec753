"""Graph Editor sidebar, tab "Signals": Fit Spline settings, the Fit button, the last fit's numbers.

Reads ``scene.anim_signals.fit`` / ``.last_fit`` (owned by ``operators/fit_spline``); only draws
and calls the operator.
"""

from __future__ import annotations

import bpy

from ..operators.fit_spline.operators import ANIM_SIGNALS_OT_fit_latent_spline
from ..operators.fit_spline.properties import FIT_SETTINGS
from .common import settings_button, split_layout


class ANIM_SIGNALS_PT_fit_spline(bpy.types.Panel):
    """Fit dense keys with a few exact spline keys"""

    bl_space_type = "GRAPH_EDITOR"
    bl_region_type = "UI"
    bl_category = "Signals"
    bl_label = "Fit Spline"

    def draw(self, context):
        layout = split_layout(self.layout)
        root = context.scene.anim_signals
        s = root.fit
        col = layout.column()
        col.prop(s, "target")
        col.prop(s, "channels")
        col.prop(s, "mode")
        sub = col.column()
        sub.active = s.mode != "PER_CHANNEL"
        sub.prop(s, "share_keys")
        spline = s.mode not in ("FEWEST", "EDITABLE")  # the spline settings do not apply to these
        sub = col.column()
        sub.active = spline
        sub.prop(s, "continuity")
        col = layout.column()
        col.prop(s, "error_space")
        if s.error_space == "JOINTS":  # armatures: the armature's curves get tolerances from the bone lengths
            sub = col.column(align=True)
            sub.prop(s, "max_joint_error", text="Max Joint Error (cm)")
            sub.prop(s, "shell_distance", text="Shell Distance (cm)")
        col = layout.column(align=True)
        if s.error_space == "JOINTS":  # the bones' tolerances come from the joint error; these cover the rest
            col.label(text="Curves without a joint bound:")
        col.prop(s, "max_error_rotation", text="Max Error Rotation")
        col.prop(s, "max_error_location", text="Location")
        col.prop(s, "max_error_other", text="Other")
        col = layout.column()
        col.active = spline
        col.prop(s, "snap_to_frames")
        col.prop(s, "free_handles")
        layout.prop(s, "keep_original")

        header, body = layout.panel("anim_signals_fit_advanced", default_closed=True)
        header.label(text="Optimiser")
        if body is not None:
            col = body.column()
            col.active = spline
            col.prop(s, "internal_knots")
            col.prop(s, "degree")
            col.prop(s, "population")
            col.prop(s, "max_iterations")
            col.prop(s, "seed")

        settings_button(layout, ANIM_SIGNALS_OT_fit_latent_spline.bl_idname, s, FIT_SETTINGS, text="Fit Spline", icon="IPO_BEZIER")

        self._draw_result(layout, root.last_fit)

    @staticmethod
    def _draw_result(layout, r) -> None:
        if not r.valid:
            return
        box = layout.box()
        box.use_property_split = False
        col = box.column(align=True)
        col.label(text=f"Last fit: {r.object_name}", icon="CHECKMARK" if r.within_tolerance else "ERROR")
        col.label(text=f"Action: {r.action_name}")
        pct = 100.0 * r.keys_after / max(r.keys_before, 1)
        col.label(text=f"Keys: {r.keys_before} \u2192 {r.keys_after} ({pct:.1f}%)")
        col.label(text=f"Curves: {r.curves}   Mode: {r.mode_used}")
        col.label(text=f"Keyed frames: {r.keyed_frames}   Broken handles: {r.broken_keys}")
        col.label(text=f"E_D: {r.distortion:.3g}")
        if r.max_rotation_deg or r.rms_rotation_deg:
            col.label(text=f"Rotation: RMS {r.rms_rotation_deg:.3g}\u00b0, max {r.max_rotation_deg:.3g}\u00b0")
        if r.max_location or r.rms_location:
            col.label(text=f"Location: RMS {r.rms_location:.3g}, max {r.max_location:.3g}")
        if r.max_other or r.rms_other:
            col.label(text=f"Other: RMS {r.rms_other:.3g}, max {r.max_other:.3g}")
        if r.joint_error_cm >= 0.0:
            col.label(text=f"Joints: max {r.joint_error_cm:.3g} cm")
        col.label(text=f"Time: {r.seconds:.2f} s")


classes = (ANIM_SIGNALS_PT_fit_spline,)
register, unregister = bpy.utils.register_classes_factory(classes)
