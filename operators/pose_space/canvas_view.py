"""The pose-space canvas's view and mouse: zoom, pan and frame-all operators, the press dispatcher
bound in the sidebar's keymap (on a pose space a press on a control point edits time, on a frame
pins it, elsewhere navigates, Shift sketches; on another model its :class:`~.canvas_state.CanvasSource`
handles the press), and the canvas written to a PNG file. Zoom, pan, Frame All and the PNG work on
whatever the canvas shows.

* ``anim_signals.pose_space_zoom`` / ``_pan`` / ``_view_all``: the view of the canvas
* ``anim_signals.pose_space_canvas_press``: the mouse dispatcher of the canvas
* ``anim_signals.pose_space_save_png``: a PNG of the canvas (the core's software rendering)
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import bpy
from bpy.props import FloatProperty, IntProperty, StringProperty

from ...anim_signals.posespace import canvas as cv
from ...anim_signals.posespace.render import render_png
from .canvas_state import (
    CATEGORY,
    HIT_RADIUS,
    POSE_SPACE,
    SURE_RADIUS,
    ZOOM_STEP,
    canvas_rect,
    current_time,
    shown_on_canvas,
    state_of,
    tag_redraw,
    ui_metrics,
    view_for,
)

__all__ = [
    "ANIM_SIGNALS_OT_pose_space_canvas_press",
    "ANIM_SIGNALS_OT_pose_space_pan",
    "ANIM_SIGNALS_OT_pose_space_save_png",
    "ANIM_SIGNALS_OT_pose_space_view_all",
    "ANIM_SIGNALS_OT_pose_space_zoom",
    "KEYMAP_NAME",
    "add_keymaps",
    "remove_keymaps",
    "resolve_png_path",
]

PNG_FILE = "pose_space.png"
KEYMAP_NAME = "View2D Buttons List"  # the keymap of panel regions (the sidebar), space EMPTY, region WINDOW


NOTHING_SHOWN = "The canvas shows nothing: build a pose space or spatial keyframes for the active object"


def _canvas_under_mouse(context, event):
    """(object, model, rect, source) when the mouse is over the canvas showing a model of the
    active object, else None."""
    if context.region is None or context.region.type != "UI" or context.area is None \
            or context.area.type != "VIEW_3D" or context.region.active_panel_category != CATEGORY:
        return None
    ob, model, source = shown_on_canvas(context)
    if model is None:
        return None
    rect = canvas_rect(context)
    if not cv.inside(rect, (event.mouse_region_x, event.mouse_region_y)):
        return None
    return ob, model, rect, source


def _poll_shown(cls, context) -> bool:
    if shown_on_canvas(context)[1] is None:
        cls.poll_message_set(NOTHING_SHOWN)
        return False
    return True


class ANIM_SIGNALS_OT_pose_space_zoom(bpy.types.Operator):
    """Zoom the pose-space canvas about the mouse"""

    bl_idname = "anim_signals.pose_space_zoom"
    bl_label = "Zoom Pose-Space Canvas"
    bl_options = {"INTERNAL"}

    factor: FloatProperty(  # type: ignore[valid-type]
        name="Factor", description="Zoom factor (> 1 zooms in)", default=ZOOM_STEP, min=0.01, max=100.0
    )

    def invoke(self, context, event):
        hit = _canvas_under_mouse(context, event)
        if hit is None:
            return {"PASS_THROUGH"}
        ob, model, rect, source = hit
        st = state_of(ob, source.kind)
        v = view_for(st, model, rect).zoomed(self.factor, (event.mouse_region_x, event.mouse_region_y))
        st.center, st.scale = v.center, v.scale
        context.region.tag_redraw()
        return {"FINISHED"}

    def execute(self, context):
        ob, model, source = shown_on_canvas(context)
        if model is None:
            return {"CANCELLED"}
        st = state_of(ob, source.kind)
        if st.scale is not None:
            st.scale *= float(self.factor)
        tag_redraw(context)
        return {"FINISHED"}


class ANIM_SIGNALS_OT_pose_space_pan(bpy.types.Operator):
    """Pan the pose-space canvas (drag)"""

    bl_idname = "anim_signals.pose_space_pan"
    bl_label = "Pan Pose-Space Canvas"
    bl_options = {"INTERNAL"}

    _ob: Any = None
    _kind = POSE_SPACE
    _last: Any = None

    def invoke(self, context, event):
        hit = _canvas_under_mouse(context, event)
        if hit is None:
            return {"PASS_THROUGH"}
        self._ob, self._kind = hit[0], hit[3].kind
        self._last = (event.mouse_region_x, event.mouse_region_y)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type in {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE"}:
            xy = (event.mouse_region_x, event.mouse_region_y)
            st = state_of(self._ob, self._kind)
            if st.scale is not None and st.center is not None:
                st.center = (st.center[0] - (xy[0] - self._last[0]) / st.scale,
                             st.center[1] - (xy[1] - self._last[1]) / st.scale)
            self._last = xy
            context.region.tag_redraw()
            return {"RUNNING_MODAL"}
        if event.value == "RELEASE" or event.type in {"ESC", "RIGHTMOUSE"}:
            return {"FINISHED"}
        return {"RUNNING_MODAL"}


class ANIM_SIGNALS_OT_pose_space_view_all(bpy.types.Operator):
    """Fit the canvas view to everything it shows (frames, sites, curve, control points, markers)"""

    bl_idname = "anim_signals.pose_space_view_all"
    bl_label = "Frame All"

    @classmethod
    def poll(cls, context):
        return _poll_shown(cls, context)

    def execute(self, context):
        ob, _, source = shown_on_canvas(context)
        st = state_of(ob, source.kind)
        st.center = st.scale = None
        tag_redraw(context)
        return {"FINISHED"}


class ANIM_SIGNALS_OT_pose_space_canvas_press(bpy.types.Operator):
    """Press on the canvas: on a pose space a control point edits the time signal, a frame is pinned, elsewhere the cursor navigates, Shift sketches; on spatial keyframes a marker moves, elsewhere the cursor poses the rig, Shift records"""

    bl_idname = "anim_signals.pose_space_canvas_press"
    bl_label = "Pose-Space Canvas Press"
    bl_options = {"INTERNAL"}

    def invoke(self, context, event):
        hit = _canvas_under_mouse(context, event)
        if hit is None:
            return {"PASS_THROUGH"}
        ob, space, rect, source = hit
        if source.kind != POSE_SPACE:
            return source.press(context, event, ob, space, rect) if source.press is not None else {"PASS_THROUGH"}
        xy = (event.mouse_region_x, event.mouse_region_y)
        if event.shift:  # with the sidebar's Sketch Frames, as the Sketch button passes it
            frames = int(context.scene.anim_signals.pose_space_canvas.sketch_frames)
            bpy.ops.anim_signals.pose_space_sketch("INVOKE_DEFAULT", start_drag=True, frames=frames)
            return {"FINISHED"}
        view = view_for(state_of(ob), space, rect)
        _, scale = ui_metrics(context)
        h = cv.hit_test(cv.canvas_geometry(cv.drawable(space), view), xy, radius_px=HIT_RADIUS * max(scale, 1.0),
                        sure_px=SURE_RADIUS * max(scale, 1.0))
        if h.kind == "CONTROL_POINT":
            bpy.ops.anim_signals.pose_space_edit_time("INVOKE_DEFAULT", index=h.index, start_drag=True)
        elif h.kind == "FRAME":
            bpy.ops.anim_signals.pose_space_pin("INVOKE_DEFAULT", frame=h.index, start_drag=True)
        else:
            bpy.ops.anim_signals.pose_space_navigate("INVOKE_DEFAULT", start_drag=True)
        return {"FINISHED"}


def resolve_png_path(path: str, ob_name: str) -> str:
    """'' -> "//<object>_pose_space.png" next to a saved .blend, else the temp dir; '.png' appended."""
    name = f"{bpy.path.clean_name(ob_name)}_{PNG_FILE}"
    if not path.strip():
        if bpy.data.is_saved:
            return bpy.path.abspath("//" + name)
        return os.path.join(tempfile.gettempdir(), name)
    out = bpy.path.abspath(path.strip())
    if os.path.isdir(out) or out.endswith(os.sep):
        out = os.path.join(out, name)
    if not out.lower().endswith(".png"):
        out += ".png"
    return out


class ANIM_SIGNALS_OT_pose_space_save_png(bpy.types.Operator):
    """Write the canvas of the active object to a PNG file as it shows it (pose space: frames, sites, curve, pins; spatial keyframes: markers, trajectory; the current frame and the cursor)"""

    bl_idname = "anim_signals.pose_space_save_png"
    bl_label = "Save Canvas PNG"

    filepath: StringProperty(  # type: ignore[valid-type]
        name="File",
        description='PNG file to write ("": <object>_pose_space.png next to the .blend, or in the temp folder)',
        default="",
        subtype="FILE_PATH",
    )
    width: IntProperty(name="Width", description="Image width in pixels", default=640, min=64, max=8192)  # type: ignore[valid-type]
    height: IntProperty(name="Height", description="Image height in pixels", default=480, min=64, max=8192)  # type: ignore[valid-type]

    @classmethod
    def poll(cls, context):
        return _poll_shown(cls, context)

    def execute(self, context):
        ob, model, source = shown_on_canvas(context)
        if model is None:
            self.report({"ERROR"}, NOTHING_SHOWN)
            return {"CANCELLED"}
        path = resolve_png_path(self.filepath, ob.name)
        st = state_of(ob, source.kind)
        view = cv.fit_space_view(cv.drawable(model), self.width, self.height)
        geom = cv.canvas_geometry(cv.drawable(model), view, current_time=current_time(context.scene), cursor=st.cursor)
        try:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            written = render_png(geom, path, title=f"{source.title or source.label}: {ob.name}")
        except OSError as err:
            self.report({"ERROR"}, f"Could not write {path}: {err}")
            return {"CANCELLED"}
        self.filepath = written
        self.report({"INFO"}, f"Wrote {written}")
        return {"FINISHED"}


classes = (
    ANIM_SIGNALS_OT_pose_space_zoom,
    ANIM_SIGNALS_OT_pose_space_pan,
    ANIM_SIGNALS_OT_pose_space_view_all,
    ANIM_SIGNALS_OT_pose_space_canvas_press,
    ANIM_SIGNALS_OT_pose_space_save_png,
)

_keymaps: list = []


def add_keymaps() -> None:
    """The canvas's mouse bindings in the sidebar's keymap (the operators pass other events through)."""
    wm: Any = bpy.context.window_manager
    kc = wm.keyconfigs.addon if wm is not None else None
    if kc is None:
        return
    km = kc.keymaps.new(name=KEYMAP_NAME, space_type="EMPTY", region_type="WINDOW")
    items = [
        km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_canvas_press.bl_idname, "LEFTMOUSE", "PRESS"),
        km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_canvas_press.bl_idname, "LEFTMOUSE", "PRESS", shift=True),
        km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_pan.bl_idname, "MIDDLEMOUSE", "PRESS"),
        km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_pan.bl_idname, "LEFTMOUSE", "PRESS", ctrl=True),
    ]
    zin: Any = km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_zoom.bl_idname, "WHEELUPMOUSE", "PRESS")
    zin.properties.factor = ZOOM_STEP
    zout: Any = km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_zoom.bl_idname, "WHEELDOWNMOUSE", "PRESS")
    zout.properties.factor = 1.0 / ZOOM_STEP
    _keymaps.extend((km, kmi) for kmi in (*items, zin, zout))


def remove_keymaps() -> None:
    for km, kmi in _keymaps:
        try:
            km.keymap_items.remove(kmi)
        except (ReferenceError, RuntimeError):  # pragma: no cover - keyconfig already gone
            pass
    _keymaps.clear()
