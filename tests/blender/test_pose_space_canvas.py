"""The pose-space canvas (operators/pose_space/canvas_*.py, panels/pose_space*.py) on generated meshes.

Every interaction is checked through its ``execute()`` (the operator called with its result as
properties) and through its modal path driven with stand-in events, the way the window manager
would (headless Blender has no event loop): navigate writes g(p) as shape-key values (and Blender's
own blend of the keys is h(g(p))), a control-point edit leaves frames outside its support exactly as
they were, a pin is kept exactly and lowers the stress from its start, a sketch makes a time signal
of the requested length along the stroke, and ESC during a drag restores everything.
"""

from __future__ import annotations

import importlib
import inspect
import math
import time
import types

import addon_utils
import bpy
import numpy as np
import pytest
from _bl_helpers import FakeLayout, ext_module, make_armature, shared_data
from conftest import EXT_MODULE

EXT = EXT_MODULE
N_FRAMES = 24
RECT = (10.0, 20.0, 400.0, 300.0)  # a stand-in canvas rectangle in region pixels


@pytest.fixture
def pc(extension):
    """The canvas's runtime state and geometry."""
    return ext_module("operators.pose_space.canvas_state")


@pytest.fixture
def tools(extension):
    """The canvas's drag tools (navigate, edit time, pin, sketch)."""
    return ext_module("operators.pose_space.canvas_tools")


@pytest.fixture
def draw(extension):
    """The canvas's gpu layer (panels)."""
    return ext_module("panels.pose_space_canvas_draw")


@pytest.fixture
def data(extension):
    """The pose space's script API (build, load, save, apply)."""
    return ext_module("operators.pose_space")


@pytest.fixture
def core(extension):
    return importlib.import_module(f"{EXT}.anim_signals.posespace")


def _grid_frames(n_frames: int = N_FRAMES, nx: int = 9) -> tuple[np.ndarray, list, np.ndarray]:
    """A flag-like grid deformed by three modes with different phases (a 2-D-ish pose manifold)."""
    return ext_module("anim_signals.posespace.generated").wavy_flag(n_frames, nx)


def make_space(data, tmp_path, *, k: int = 12, ell: int = 12, m: int = 4, name: str = "flag"):
    """A mesh played by a Mesh Cache (PC2) and its pose space built by the data layer."""
    meshcache = importlib.import_module(f"{EXT}.anim_signals.meshio.meshcache")
    ext_module("operators.pose_space.canvas_state").forget_states()  # views and cursors of earlier tests
    verts, faces, frames = _grid_frames()
    path = str(tmp_path / f"{name}.pc2")
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
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, N_FRAMES
    ps_ob, _, _ = data.build(ob, scene, frame_start=1, frame_end=N_FRAMES, k=k, l=ell, m=m)
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    bpy.context.view_layer.objects.active = ps_ob
    ps_ob.select_set(True)
    return ps_ob, data.load_space(ps_ob)  # as stored (h read back from the float32 shape keys)


def key_values(ps_ob, data) -> np.ndarray:
    info = data.load_info(ps_ob)
    blocks = ps_ob.data.shape_keys.key_blocks
    return np.array([blocks[name].value for name in info["key_names"]])


def expected_values(ps_ob, data, space, p) -> np.ndarray:
    """g(p) as the data layer stores it: value_j = g_j(p) / s_j, s_j = max_i |x_ij| (clipped to the sliders)."""
    scales = np.asarray(data.load_info(ps_ob)["scales"], dtype=float)
    limit = ext_module("operators.pose_space.storage").SLIDER_RANGE
    return np.clip(space.weights_at(np.asarray(p, dtype=float)) / scales, -limit, limit)


def evaluated_coords(ob) -> np.ndarray:
    depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    ev = ob.evaluated_get(depsgraph)
    buf = np.empty(3 * len(ev.data.vertices), dtype=np.float32)
    ev.data.vertices.foreach_get("co", buf)
    return buf.astype(float)


def token(ps_ob, data) -> str:
    return str(data.load_info(ps_ob)["token"])


# ----------------------------------------------------------------------------------------------
# registration, panel, gpu layer helpers
# ----------------------------------------------------------------------------------------------

OPERATORS = ("pose_space_navigate", "pose_space_edit_time", "pose_space_pin", "pose_space_sketch",
             "pose_space_zoom", "pose_space_pan", "pose_space_view_all", "pose_space_canvas_press",
             "pose_space_save_png")


def test_registered(scene, draw):
    for name in OPERATORS:
        assert hasattr(bpy.types, f"ANIM_SIGNALS_OT_{name}"), name
    for name in OPERATORS[:4]:
        cls = getattr(bpy.types, f"ANIM_SIGNALS_OT_{name}")
        assert {"REGISTER", "UNDO"} <= set(cls.bl_options), name
        props = getattr(bpy.ops.anim_signals, name).get_rna_type().properties
        for prop in props:
            if prop.identifier not in {"rna_type", "start_drag"}:
                assert prop.description, f"{name}.{prop.identifier} has no tooltip"
    props = bpy.ops.anim_signals.pose_space_sketch.get_rna_type().properties
    assert props["stroke"].type == "COLLECTION" and props["frames"].type == "INT"
    props = bpy.ops.anim_signals.pose_space_pin.get_rna_type().properties
    assert {"frame", "position", "clear"} <= set(props.keys())
    for panel in ("ANIM_SIGNALS_PT_pose_space_canvas", "ANIM_SIGNALS_PT_pose_space"):
        cls = getattr(bpy.types, panel)
        assert (cls.bl_space_type, cls.bl_region_type, cls.bl_category) == ("VIEW_3D", "UI", "Signals")
    assert "HIDE_HEADER" in bpy.types.ANIM_SIGNALS_PT_pose_space_canvas.bl_options
    assert draw._handle is not None  # the draw handler registers headless (it only draws with a GPU)
    assert draw._on_frame_change in bpy.app.handlers.frame_change_post
    settings = scene.anim_signals.pose_space_canvas
    assert settings.height == ext_module("operators.pose_space.properties").CANVAS_UNITS
    assert settings.sketch_frames == 0
    kc = bpy.context.window_manager.keyconfigs.addon
    if kc is not None:
        km = kc.keymaps.get(ext_module("operators.pose_space.canvas_view").KEYMAP_NAME)
        assert km is not None
        assert {k.idname for k in km.keymap_items} >= {"anim_signals.pose_space_canvas_press",
                                                       "anim_signals.pose_space_zoom", "anim_signals.pose_space_pan"}


def test_disable_removes_handlers(scene, draw):
    keymap = ext_module("operators.pose_space.canvas_view").KEYMAP_NAME
    addon_utils.disable(EXT, default_set=True)
    try:
        assert not hasattr(bpy.types, "ANIM_SIGNALS_OT_pose_space_navigate")
        assert not hasattr(bpy.types, "ANIM_SIGNALS_PT_pose_space_canvas")
        assert draw._handle is None
        assert not any(getattr(f, "__module__", "").startswith(EXT) for f in bpy.app.handlers.frame_change_post)
        assert not any(getattr(f, "__module__", "").startswith(EXT) for f in bpy.app.handlers.load_post)
        kc = bpy.context.window_manager.keyconfigs.addon
        if kc is not None and kc.keymaps.get(keymap) is not None:
            assert not any(k.idname.startswith("anim_signals.") for k in kc.keymaps[keymap].keymap_items)
    finally:
        assert addon_utils.enable(EXT, default_set=True) is not None
    assert hasattr(bpy.types, "ANIM_SIGNALS_OT_pose_space_navigate")


def _draw_panel(cls, scene):
    calls: list = []
    me = types.SimpleNamespace(layout=FakeLayout(calls))
    for name, attr in vars(cls).items():
        if isinstance(attr, staticmethod):
            setattr(me, name, attr.__func__)
    ctx = types.SimpleNamespace(scene=scene, active_object=bpy.context.view_layer.objects.active)
    cls.draw(me, ctx)
    return calls


def test_panels(scene, data, tmp_path):
    canvas_panel = bpy.types.ANIM_SIGNALS_PT_pose_space_canvas
    panel = bpy.types.ANIM_SIGNALS_PT_pose_space
    assert not canvas_panel.poll(bpy.context)  # no pose space: no canvas
    calls = _draw_panel(panel, scene)
    assert not any(c[0] == "operator" and "navigate" in c[1] for c in calls)
    ps_ob, space = make_space(data, tmp_path)
    assert canvas_panel.poll(bpy.context)
    calls = _draw_panel(canvas_panel, scene)
    reserved = [c[1] for c in calls if c[0] == "child"]
    assert reserved and reserved[0].scale_y == scene.anim_signals.pose_space_canvas.height
    calls = _draw_panel(panel, scene)
    ops = {c[1] for c in calls if c[0] == "operator"}
    assert {"anim_signals.build_pose_space", "anim_signals.pose_space_navigate", "anim_signals.pose_space_edit_time",
            "anim_signals.pose_space_pin", "anim_signals.pose_space_sketch", "anim_signals.pose_space_bake",
            "anim_signals.pose_space_resample", "anim_signals.pose_space_save_png"} <= ops
    labels = " | ".join(c[1] for c in calls if c[0] == "label")
    assert f"k {space.k}" in labels and f"l {space.l}" in labels and f"m {space.m}" in labels, labels
    assert "Error: RMS" in labels


def test_canvas_rect_follows_the_sidebar(pc):
    """The canvas rectangle from a stand-in region: inside it, right under the top, the reserved height."""

    class _V2D:
        def __init__(self, scroll: float):
            self.scroll = scroll

        def region_to_view(self, x, y):
            return float(x), float(y) - 500.0 + self.scroll  # the region's top at view y = scroll

        def view_to_region(self, x, y, clip=True):
            return float(x), float(y) + 500.0 - self.scroll

    prefs = types.SimpleNamespace(system=types.SimpleNamespace(ui_scale=1.0, pixel_size=1.0))
    scene = types.SimpleNamespace(anim_signals=types.SimpleNamespace(pose_space_canvas=types.SimpleNamespace(height=10)))
    region = types.SimpleNamespace(width=300, height=500, alignment="RIGHT", view2d=_V2D(0.0), type="UI")
    ctx = types.SimpleNamespace(preferences=prefs, scene=scene, region=region)
    x0, y0, w, h = pc.canvas_rect(ctx)
    assert 0 < x0 < 30 and x0 + w < 300 - 20  # clear of the category tabs on the right
    assert 480 < y0 + h < 500 and abs(h - (10 * 20 - 4)) < 1e-9
    region.view2d = _V2D(-120.0)  # scrolled down by 120 px: the canvas moves up
    assert abs(pc.canvas_rect(ctx)[1] - (y0 + 120.0)) < 1e-9
    region.alignment = "LEFT"  # tabs on the left
    assert pc.canvas_rect(ctx)[0] > x0
    region.width = 30
    assert pc.canvas_rect(ctx) is None


def test_gpu_layer(scene, draw, data, tmp_path, core):
    """The draw handler returns at once in background mode; what it would draw (the core's marks,
    tested in tests/core/test_canvas_shapes.py) is built from a stored model's geometry."""
    draw._draw_callback()  # background: returns without touching the gpu module
    _, space = make_space(data, tmp_path)
    view = core.fit_space_view(space, int(RECT[2]), int(RECT[3]), origin=RECT[:2])
    marks = core.shapes.canvas_marks(core.canvas_geometry(space, view, current_time=3.0), RECT)
    assert [m.primitive for m in marks[:2]] == ["TRIS", "LINES"] and marks[-1].primitive == "LINES"
    assert sum(len(m.vertices) for m in marks if m.colors is not None) == space.n * 12 * 3


# ----------------------------------------------------------------------------------------------
# execute(): each interaction with its result as properties
# ----------------------------------------------------------------------------------------------


def test_navigate_sets_g_of_p(scene, data, tmp_path, pc):
    ps_ob, space = make_space(data, tmp_path)
    lo, hi = space.positions.min(axis=0), space.positions.max(axis=0)
    for p in (0.5 * (lo + hi), lo + 0.3 * (hi - lo), space.positions[5]):
        assert bpy.ops.anim_signals.pose_space_navigate(position=tuple(p)) == {"FINISHED"}
        assert np.allclose(key_values(ps_ob, data), expected_values(ps_ob, data, space, p), atol=1e-6)
        # Blender's own blend of the keys is the shape h(g(p)) (float32)
        assert np.abs(evaluated_coords(ps_ob) - space.at(p)).max() < 1e-5
        assert np.allclose(pc.state_of(ps_ob).cursor, p)
    # at a frame's position g reproduces (up to the fit) that frame's shape coordinates
    i = 5
    assert np.allclose(space.weights_at(space.positions[i]), space.pose.evaluate(space.positions[i]))


def test_navigate_from_the_source_object(scene, data, tmp_path):
    ps_ob, space = make_space(data, tmp_path)
    src = bpy.data.objects["flag"]
    bpy.context.view_layer.objects.active = src
    p = space.positions[3]
    assert bpy.ops.anim_signals.pose_space_navigate(position=tuple(p)) == {"FINISHED"}
    assert np.allclose(key_values(ps_ob, data), expected_values(ps_ob, data, space, p), atol=1e-6)


def _frame_values(space) -> np.ndarray:
    return space.evaluate(space.frames)


def test_edit_time_is_local(scene, data, tmp_path):
    ps_ob, space = make_space(data, tmp_path)
    j = space.k // 2
    new_xy = space.time.control[j] + np.array([0.3, -0.2]) * np.ptp(space.positions, axis=0)
    before = _frame_values(space)
    assert bpy.ops.anim_signals.pose_space_edit_time(index=j, position=tuple(new_xy)) == {"FINISHED"}
    new = data.load_space(ps_ob)
    assert np.allclose(new.time.control[j], new_xy) and np.array_equal(np.delete(new.time.control, j, 0),
                                                                       np.delete(space.time.control, j, 0))
    after = _frame_values(new)
    u0, u1 = space.time.support(j)
    params = space.time.params
    outside = (params <= u0) | (params >= u1)
    assert outside.any() and (~outside).any()
    assert np.abs(after[outside] - before[outside]).max() < 1e-9
    assert np.abs(after[~outside] - before[~outside]).max() > 1e-3
    # the current frame's pose follows the edited model
    t = float(scene.frame_current)
    assert np.allclose(key_values(ps_ob, data), expected_values(ps_ob, data, new, new.time.evaluate(np.array([t]))[0]),
                       atol=1e-6)


def test_pin_keeps_the_pin_and_lowers_stress(scene, data, tmp_path, core):
    ps_ob, space = make_space(data, tmp_path)
    i = 7
    # operator properties are single precision: the pin is the float32 value passed in, kept exactly
    target = (space.positions[i] + 0.25 * np.ptp(space.positions, axis=0)).astype(np.float32).astype(float)
    assert bpy.ops.anim_signals.pose_space_pin(frame=i, position=tuple(target)) == {"FINISHED"}
    new = data.load_space(ps_ob)
    assert np.array_equal(new.positions[i], target)
    assert set(new.pins) == {i} and np.array_equal(new.pins[i], target)
    start = space.positions.copy()
    start[i] = target
    assert core.stress(new.positions, new.latent) <= core.stress(start, space.latent) + 1e-12
    # a second pin keeps the first
    j = 15
    assert bpy.ops.anim_signals.pose_space_pin(frame=j, position=tuple(new.positions[j] - 0.1)) == {"FINISHED"}
    new2 = data.load_space(ps_ob)
    assert set(new2.pins) == {i, j} and np.array_equal(new2.positions[i], target)
    # clear one, then all
    assert bpy.ops.anim_signals.pose_space_pin(frame=j, clear=True) == {"FINISHED"}
    assert set(data.load_space(ps_ob).pins) == {i}
    assert bpy.ops.anim_signals.pose_space_pin(frame=-1, clear=True) == {"FINISHED"}
    assert not data.load_space(ps_ob).pins
    assert bpy.ops.anim_signals.pose_space_pin(frame=-1, clear=True) == {"CANCELLED"}  # nothing to clear


def test_sketch_makes_a_sequence_along_the_stroke(scene, data, tmp_path, pc, tools):
    ps_ob, space = make_space(data, tmp_path)
    lo, hi = space.positions.min(axis=0), space.positions.max(axis=0)
    a = np.linspace(0.0, np.pi, 15)
    stroke = 0.5 * (lo + hi) + 0.4 * (hi - lo) * np.column_stack([np.cos(a), np.sin(a)])
    assert bpy.ops.anim_signals.pose_space_sketch(stroke=tools.stroke_items(stroke), frames=40) == {"FINISHED"}
    new = data.load_space(ps_ob)
    assert new.time.frames.size == 40 and np.array_equal(new.time.frames, np.arange(1.0, 41.0))
    path = new.time.evaluate(new.time.frames)
    assert np.allclose(path[0], stroke[0]) and np.allclose(path[-1], stroke[-1])
    # every sample of the new time signal stays near the stroke
    d = np.min(np.linalg.norm(path[:, None, :] - stroke[None], axis=2), axis=1)
    assert d.max() < 0.1 * float(np.ptp(stroke, axis=0).max())
    assert np.array_equal(new.positions, space.positions) and new.pose is not None  # g and h kept
    # frames=0: as many frames as before
    assert bpy.ops.anim_signals.pose_space_sketch(stroke=tools.stroke_items(stroke[::3])) == {"FINISHED"}
    assert data.load_space(ps_ob).time.frames.size == new.time.frames.size
    # the canvas draws a model whose time signal has another frame count
    geom = pc.canvas_geometry_for(bpy.context, ps_ob, data.load_space(ps_ob), RECT)
    assert len(geom.frame_points) == space.n and geom.current is not None


def test_bad_input_changes_nothing(scene, data, tmp_path):
    ps_ob, space = make_space(data, tmp_path)
    tok = token(ps_ob, data)
    with pytest.raises(RuntimeError, match="outside"):
        bpy.ops.anim_signals.pose_space_edit_time(index=space.k + 3, position=(0.0, 0.0))
    with pytest.raises(RuntimeError, match="outside"):
        bpy.ops.anim_signals.pose_space_pin(frame=space.n, position=(0.0, 0.0))
    with pytest.raises(RuntimeError, match="at least 2"):
        bpy.ops.anim_signals.pose_space_sketch(stroke=[{"name": "", "co": (0.0, 0.0)}])
    assert token(ps_ob, data) == tok
    other = bpy.data.objects.new("empty", None)
    scene.collection.objects.link(other)
    bpy.context.view_layer.objects.active = other
    for name in OPERATORS[:4] + ("pose_space_save_png",):
        assert not getattr(bpy.ops.anim_signals, name).poll(), name
    with pytest.raises(RuntimeError):
        bpy.ops.anim_signals.pose_space_navigate(position=(0.0, 0.0))


def test_save_png(scene, data, tmp_path):
    make_space(data, tmp_path)
    path = tmp_path / "canvas.png"
    assert bpy.ops.anim_signals.pose_space_save_png(filepath=str(path), width=320, height=200) == {"FINISHED"}
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")
    assert (w, h) == (320, 200)


# ----------------------------------------------------------------------------------------------
# the modal paths, with stand-in events
# ----------------------------------------------------------------------------------------------


class _Collection(list):
    def add(self):
        item = types.SimpleNamespace(co=(0.0, 0.0))
        self.append(item)
        return item


def fake_op(idname: str, ps_ob, space, **settings):
    """The operator's methods and properties on a plain object (no registered instance needed)."""
    cls = getattr(bpy.types, "ANIM_SIGNALS_OT_" + idname)
    op = types.SimpleNamespace(reports=[])
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith(EXT):
            for name, attr in vars(klass).items():
                if inspect.isfunction(attr):
                    setattr(op, name, types.MethodType(attr, op))
                elif name.startswith("_") and not name.startswith("__") or name == "HINT":
                    setattr(op, name, attr)
    for prop in getattr(bpy.ops.anim_signals, idname).get_rna_type().properties:
        if prop.identifier == "rna_type":
            continue
        if prop.type == "COLLECTION":
            value = _Collection()
        elif getattr(prop, "is_array", False):
            value = list(prop.default_array)
        else:
            value = prop.default
        setattr(op, prop.identifier, value)
    for k, v in settings.items():
        setattr(op, k, v)
    op.report = lambda level, message: op.reports.append((set(level), message))
    op._ob, op._space, op._rect = ps_ob, space, RECT
    op._dragging, op._panning = False, None
    return op


def ev(kind: str, value: str = "NOTHING", xy=(0.0, 0.0), **mods):
    return types.SimpleNamespace(type=kind, value=value, mouse_region_x=float(xy[0]), mouse_region_y=float(xy[1]),
                                 ctrl=mods.get("ctrl", False), shift=mods.get("shift", False),
                                 alt=mods.get("alt", False))


def _view(pc, ps_ob, space):
    return pc.view_for(pc.state_of(ps_ob), space, RECT)


def _free_xy(pc, ps_ob, space, view):
    """A pixel inside the canvas away from every control point and frame."""
    geom = pc.canvas_geometry_for(bpy.context, ps_ob, space, RECT)
    best, best_d = None, -1.0
    for x in np.linspace(RECT[0] + 20, RECT[0] + RECT[2] - 20, 15):
        for y in np.linspace(RECT[1] + 20, RECT[1] + RECT[3] - 20, 15):
            pts = np.vstack([geom.control, geom.frame_points, geom.sites])
            d = float(np.min(np.linalg.norm(pts - (x, y), axis=1)))
            if d > best_d:
                best, best_d = (float(x), float(y)), d
    assert best_d > 20.0
    return best


def test_modal_navigate_drag_release_and_escape(scene, data, tmp_path, pc):
    ps_ob, space = make_space(data, tmp_path)
    ctx = bpy.context
    before = key_values(ps_ob, data)
    op = fake_op("pose_space_navigate", ps_ob, space)
    view = _view(pc, ps_ob, space)
    xy0 = _free_xy(pc, ps_ob, space, view)
    xy1 = (xy0[0] + 25.0, xy0[1] - 15.0)
    assert op.modal(ctx, ev("MOUSEMOVE", xy=xy0)) == {"PASS_THROUGH"}  # waiting: the UI stays usable
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"} and op._dragging
    assert op.modal(ctx, ev("MOUSEMOVE", xy=xy1)) == {"RUNNING_MODAL"}
    p1, _ = pc.cv.near_the_frames(space.positions, view.to_pose(np.array(xy1)))  # held near the frames
    assert np.allclose(key_values(ps_ob, data), expected_values(ps_ob, data, space, p1), atol=1e-6)
    assert np.allclose(pc.state_of(ps_ob).cursor, p1)
    assert op.modal(ctx, ev("ESC", "PRESS")) == {"CANCELLED"}
    assert np.allclose(key_values(ps_ob, data), before, atol=0.0) and pc.state_of(ps_ob).cursor is None

    op = fake_op("pose_space_navigate", ps_ob, space)
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("MOUSEMOVE", xy=xy1)) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("LEFTMOUSE", "RELEASE", xy1)) == {"FINISHED"}
    assert np.allclose(op.position, p1)  # the result is the operator's property (redo / repeat)
    assert np.allclose(key_values(ps_ob, data), expected_values(ps_ob, data, space, p1), atol=1e-6)

    op = fake_op("pose_space_navigate", ps_ob, space)  # right-click cancels too
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("RIGHTMOUSE", "PRESS", xy0)) == {"CANCELLED"}
    assert np.allclose(key_values(ps_ob, data), expected_values(ps_ob, data, space, p1), atol=1e-6)


def _bone_state(ob) -> np.ndarray:
    out = []
    for attr, size in (("location", 3), ("rotation_quaternion", 4), ("rotation_euler", 3), ("scale", 3)):
        buf = np.empty(len(ob.pose.bones) * size, dtype=np.float32)
        ob.pose.bones.foreach_get(attr, buf)
        out.append(buf)
    return np.concatenate(out)


def test_armature_navigate_and_escape(scene, data, pc):
    """An armature's pose space poses its bones; ESC during a drag puts every bone back."""
    pc.forget_states()
    ob, frames, _ = make_armature(n_frames=40)
    ps_ob, _, _ = data.build(ob, scene)
    assert ps_ob == ob
    space = data.load_space(ob)
    before = _bone_state(ob)
    p = space.positions[10]
    assert bpy.ops.anim_signals.pose_space_navigate(position=tuple(p)) == {"FINISHED"}
    posed = _bone_state(ob)
    assert np.abs(posed - before).max() > 1e-3
    assert bpy.ops.anim_signals.pose_space_navigate(position=tuple(p)) == {"FINISHED"}
    assert np.array_equal(_bone_state(ob), posed)  # the same point, the same pose
    op = fake_op("pose_space_navigate", ob, space)
    xy0 = _free_xy(pc, ob, space, _view(pc, ob, space))
    assert op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, ev("MOUSEMOVE", xy=(xy0[0] + 40.0, xy0[1]))) == {"RUNNING_MODAL"}
    assert np.abs(_bone_state(ob) - posed).max() > 1e-4
    assert op.modal(bpy.context, ev("ESC", "PRESS")) == {"CANCELLED"}
    assert np.array_equal(_bone_state(ob), posed)


def test_modal_view_zoom_pan_and_leaving(scene, data, tmp_path, pc):
    ps_ob, space = make_space(data, tmp_path)
    ctx = bpy.context
    op = fake_op("pose_space_navigate", ps_ob, space)
    view = _view(pc, ps_ob, space)
    st = pc.state_of(ps_ob)
    xy = (RECT[0] + 100.0, RECT[1] + 80.0)
    p = view.to_pose(np.array(xy))
    assert op.modal(ctx, ev("WHEELUPMOUSE", "PRESS", xy)) == {"RUNNING_MODAL"}
    assert math.isclose(st.scale, view.scale * pc.ZOOM_STEP)
    assert np.allclose(_view(pc, ps_ob, space).to_pose(np.array(xy)), p)  # zoom about the mouse
    assert op.modal(ctx, ev("WHEELDOWNMOUSE", "PRESS", (2000.0, 5.0))) == {"PASS_THROUGH"}  # outside
    assert op.modal(ctx, ev("MIDDLEMOUSE", "PRESS", xy)) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("MOUSEMOVE", xy=(xy[0] + 30.0, xy[1]))) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("MIDDLEMOUSE", "RELEASE", (xy[0] + 30.0, xy[1]))) == {"RUNNING_MODAL"}
    assert np.allclose(_view(pc, ps_ob, space).to_pose(np.array((xy[0] + 30.0, xy[1]))), p)  # content followed
    assert not op._dragging and op._panning is None
    # a click outside the canvas ends the tool and goes on to what was clicked
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", (2000.0, 5.0))) == {"CANCELLED", "PASS_THROUGH"}
    # Frame All
    assert bpy.ops.anim_signals.pose_space_view_all() == {"FINISHED"}
    assert st.scale is None and st.center is None


def _pixel_of(view, point):
    return tuple(float(v) for v in view.to_pixels(np.asarray(point, dtype=float)))


def test_modal_edit_time_escape_restores_and_release_commits(scene, data, tmp_path, pc):
    ps_ob, space = make_space(data, tmp_path)
    ctx = bpy.context
    tok, before = token(ps_ob, data), key_values(ps_ob, data)
    view = _view(pc, ps_ob, space)
    j = space.k // 2
    # pick a control point that hit-testing resolves to itself (control points win over frames)
    geom = pc.canvas_geometry_for(ctx, ps_ob, space, RECT)
    hit = pc.cv.hit_test(geom, geom.control[j])
    assert hit.kind == "CONTROL_POINT"
    j = hit.index
    xy0 = _pixel_of(view, space.time.control[j])
    xy1 = (xy0[0] + 30.0, xy0[1] + 12.0)

    op = fake_op("pose_space_edit_time", ps_ob, space)
    free = _free_xy(pc, ps_ob, space, view)
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", free)) == {"RUNNING_MODAL"} and not op._dragging  # missed
    assert any("control point" in m for _, m in op.reports)
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"} and op._dragging and op.index == j
    assert op.modal(ctx, ev("MOUSEMOVE", xy=xy1)) == {"RUNNING_MODAL"}
    preview = pc.state_of(ps_ob).preview
    assert preview is not None and np.allclose(preview.time.control[j], view.to_pose(np.array(xy1)), atol=1e-9)
    assert token(ps_ob, data) == tok  # nothing stored during the drag
    assert op.modal(ctx, ev("ESC", "PRESS")) == {"CANCELLED"}
    assert pc.state_of(ps_ob).preview is None and token(ps_ob, data) == tok
    assert np.array_equal(key_values(ps_ob, data), before)

    op = fake_op("pose_space_edit_time", ps_ob, space)
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("MOUSEMOVE", xy=xy1)) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("LEFTMOUSE", "RELEASE", xy1)) == {"FINISHED"}
    new = data.load_space(ps_ob)
    assert token(ps_ob, data) != tok and pc.state_of(ps_ob).preview is None
    assert np.allclose(new.time.control[j], view.to_pose(np.array(xy1)), atol=1e-9)
    assert np.allclose(op.position, new.time.control[j]) and op.index == j
    u0, u1 = space.time.support(j)
    outside = (space.time.params <= u0) | (space.time.params >= u1)
    assert np.abs(_frame_values(new)[outside] - _frame_values(space)[outside]).max() < 1e-9


def test_modal_pin_escape_restores_and_release_commits(scene, data, tmp_path, pc, core):
    ps_ob, space = make_space(data, tmp_path)
    ctx = bpy.context
    tok = token(ps_ob, data)
    view = _view(pc, ps_ob, space)
    geom = pc.canvas_geometry_for(ctx, ps_ob, space, RECT)
    # a frame whose dot is not covered by a control point
    i = next(i for i in range(space.n) if pc.cv.hit_test(geom, geom.frame_points[i]).kind == "FRAME"
             and pc.cv.hit_test(geom, geom.frame_points[i]).index == i)
    xy0 = _pixel_of(view, space.positions[i])
    path = [(xy0[0] + 8.0 * s, xy0[1] - 5.0 * s) for s in range(1, 6)]

    op = fake_op("pose_space_pin", ps_ob, space)
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"} and op.frame == i
    for xy in path:
        assert op.modal(ctx, ev("MOUSEMOVE", xy=xy)) == {"RUNNING_MODAL"}
    preview = pc.state_of(ps_ob).preview
    assert preview is not None and np.allclose(preview.positions[i], view.to_pose(np.array(path[-1])), atol=1e-9)
    assert op.modal(ctx, ev("RIGHTMOUSE", "PRESS")) == {"CANCELLED"}
    assert token(ps_ob, data) == tok and pc.state_of(ps_ob).preview is None

    op = fake_op("pose_space_pin", ps_ob, space)
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"}
    for xy in path:
        op.modal(ctx, ev("MOUSEMOVE", xy=xy))
    assert op.modal(ctx, ev("LEFTMOUSE", "RELEASE", path[-1])) == {"FINISHED"}
    new = data.load_space(ps_ob)
    target = view.to_pose(np.array(path[-1]))
    assert set(new.pins) == {i} and np.allclose(new.positions[i], target, atol=1e-9)
    assert np.allclose(new.pins[i], op.position) and not op.clear
    start = space.positions.copy()
    start[i] = new.positions[i]
    assert core.stress(new.positions, new.latent) <= core.stress(start, space.latent) + 1e-12


def test_modal_sketch(scene, data, tmp_path, pc):
    ps_ob, space = make_space(data, tmp_path)
    ctx = bpy.context
    tok = token(ps_ob, data)
    view = _view(pc, ps_ob, space)
    cx, cy = RECT[0] + RECT[2] / 2, RECT[1] + RECT[3] / 2
    a = np.linspace(0.0, 1.5 * np.pi, 30)
    pts = [(cx + 90.0 * math.cos(t), cy + 70.0 * math.sin(t)) for t in a]

    op = fake_op("pose_space_sketch", ps_ob, space, frames=30)
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", pts[0])) == {"RUNNING_MODAL"}
    for xy in pts[1:10]:
        op.modal(ctx, ev("MOUSEMOVE", xy=xy))
    assert pc.state_of(ps_ob).stroke is not None and len(pc.state_of(ps_ob).stroke) == 10
    assert op.modal(ctx, ev("ESC", "PRESS")) == {"CANCELLED"}
    assert pc.state_of(ps_ob).stroke is None and token(ps_ob, data) == tok

    op = fake_op("pose_space_sketch", ps_ob, space, frames=30)
    op.modal(ctx, ev("LEFTMOUSE", "PRESS", pts[0]))
    for xy in pts[1:]:
        op.modal(ctx, ev("MOUSEMOVE", xy=xy))
    assert op.modal(ctx, ev("LEFTMOUSE", "RELEASE", pts[-1])) == {"FINISHED"}
    new = data.load_space(ps_ob)
    assert new.time.frames.size == 30 and len(op.stroke) >= 2
    assert np.allclose(new.time.evaluate(np.array([1.0]))[0], view.to_pose(np.array(pts[0])), atol=1e-9)
    assert np.allclose(new.time.evaluate(np.array([30.0]))[0], view.to_pose(np.array(pts[-1])), atol=1e-9)
    assert pc.state_of(ps_ob).stroke is None

    op = fake_op("pose_space_sketch", ps_ob, space)  # a click without a stroke changes nothing
    tok = token(ps_ob, data)
    op.modal(ctx, ev("LEFTMOUSE", "PRESS", pts[0]))
    assert op.modal(ctx, ev("LEFTMOUSE", "RELEASE", pts[0])) == {"CANCELLED"}
    assert token(ps_ob, data) == tok


# ----------------------------------------------------------------------------------------------
# speed of one navigate update on the shared horse (8,431 vertices, 48 frames)
# ----------------------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_navigate_latency_on_the_horse(scene, data, tools, capsys):
    pc2 = shared_data("mesh", "horse_gallop", "horse_gallop.pc2")
    obj = shared_data("mesh", "horse_gallop", "horse_gallop_reference.obj")
    meshcache = importlib.import_module(f"{EXT}.anim_signals.meshio.meshcache")
    samples, _, _ = meshcache.read_pc2(pc2)
    faces = np.array([[int(v.split("/")[0]) - 1 for v in line.split()[1:4]]
                      for line in obj.read_text().splitlines() if line.startswith("f ")])
    me = bpy.data.meshes.new("horse")
    me.from_pydata(samples[0].tolist(), [], faces.tolist())
    me.update()
    ob = bpy.data.objects.new("horse", me)
    scene.collection.objects.link(ob)
    mod = ob.modifiers.new("cache", "MESH_CACHE")
    mod.cache_format, mod.filepath, mod.frame_start = "PC2", str(pc2), 1.0
    n = samples.shape[0]
    ps_ob, space, _ = data.build(ob, scene, frame_start=1, frame_end=n)
    bpy.context.view_layer.objects.active = ps_ob
    rng = np.random.default_rng(0)
    lo, hi = space.positions.min(axis=0), space.positions.max(axis=0)
    pts = lo + (hi - lo) * rng.random((200, 2))
    tools.navigate_latency(ps_ob, space, pts[:10])  # warm the caches
    ms = tools.navigate_latency(ps_ob, space, pts)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    t0 = time.perf_counter()
    for p in pts[:50]:
        data.apply_position(ps_ob, space, p)
        depsgraph.update()
    ms_eval = 1e3 * (time.perf_counter() - t0) / 50
    p = pts[-1]
    data.apply_position(ps_ob, space, p)
    assert np.abs(evaluated_coords(ps_ob) - space.at(p)).max() < 1e-4
    with capsys.disabled():
        print(f"\n[horse {len(me.vertices)} vertices, m {space.m}, l {space.l}] navigate update "
              f"(TPS + {space.m} shape-key values): {ms:.3f} ms; with Blender's depsgraph blend: {ms_eval:.3f} ms")
    assert ms < 5.0


# ----------------------------------------------------------------------------------------------
# the panel's buttons (issue 16, item 1): a button runs its tool in the viewport's main region
# ----------------------------------------------------------------------------------------------


class _SidebarView2D:
    """The sidebar's view: unscrolled, view y 0 at the region's top."""

    def __init__(self, height: float):
        self.height = height

    def region_to_view(self, x, y):
        return float(x), float(y) - self.height

    def view_to_region(self, x, y, clip=True):
        return float(x), float(y) + self.height


def _viewport_area(category: str = "Signals", show_sidebar: bool = True):
    """A 3D Viewport area as a button press sees it: its main region (the operator's context) and,
    to its right, the sidebar showing the canvas."""
    main = types.SimpleNamespace(type="WINDOW", x=0, y=40, width=900, height=600)
    sidebar = types.SimpleNamespace(type="UI", x=900, y=40, width=300, height=600, alignment="RIGHT",
                                    view2d=_SidebarView2D(600.0), active_panel_category=category)
    area = types.SimpleNamespace(type="VIEW_3D", regions=[main, sidebar],
                                 spaces=types.SimpleNamespace(active=types.SimpleNamespace(show_region_ui=show_sidebar)))
    return area, main, sidebar


def _button_context(area, main):
    handlers: list = []
    wm = types.SimpleNamespace(windows=(), modal_handler_add=handlers.append)
    ctx = types.SimpleNamespace(area=area, region=main, window_manager=wm, workspace=None,
                                preferences=bpy.context.preferences, scene=bpy.context.scene,
                                active_object=bpy.context.view_layer.objects.active)
    return ctx, handlers


def _window_event(kind, value, region_xy, sidebar, main):
    """An event at ``region_xy`` of the sidebar, as the main region's modal handler receives it."""
    x, y = sidebar.x + region_xy[0], sidebar.y + region_xy[1]
    return types.SimpleNamespace(type=kind, value=value, mouse_x=x, mouse_y=y, mouse_region_x=x - main.x,
                                 mouse_region_y=y - main.y, ctrl=False, shift=False, alt=False)


def test_buttons_start_their_tool_from_the_main_region(scene, data, tmp_path, pc):
    """Navigate / Edit Time / Pin / Sketch pressed in the panel: the tool finds the sidebar of its
    area, waits for a press on the canvas and reads the mouse in the sidebar's pixels."""
    ps_ob, space = make_space(data, tmp_path)
    area, main, sidebar = _viewport_area()
    ctx, handlers = _button_context(area, main)
    assert pc.canvas_region(ctx) is sidebar
    rect = pc.canvas_rect(ctx, sidebar)
    assert rect is not None
    for idname in ("pose_space_navigate", "pose_space_edit_time", "pose_space_pin", "pose_space_sketch"):
        op = fake_op(idname, ps_ob, space)
        assert op._start(ctx, _window_event("LEFTMOUSE", "RELEASE", (0, 0), sidebar, main)) == {"RUNNING_MODAL"}, \
            (idname, op.reports)
        assert handlers[-1] is op and op._rect == rect
    view = pc.view_for(pc.state_of(ps_ob), space, rect)
    geom = pc.canvas_geometry_for(bpy.context, ps_ob, space, rect)

    # Pin: a press on a frame's dot in the sidebar pins that frame
    i = int(np.argmax(np.linalg.norm(geom.control[:, None] - geom.frame_points[None], axis=2).min(axis=0)))
    xy = _pixel_of(view, space.positions[i])
    op = fake_op("pose_space_pin", ps_ob, space)
    op._start(ctx, _window_event("LEFTMOUSE", "RELEASE", (0, 0), sidebar, main))
    assert op.modal(ctx, _window_event("LEFTMOUSE", "PRESS", xy, sidebar, main)) == {"RUNNING_MODAL"}
    assert op._dragging and op.frame == i
    assert op.modal(ctx, _window_event("ESC", "PRESS", xy, sidebar, main)) == {"CANCELLED"}

    # Navigate: the cursor lands where the press is in the sidebar, not at the main region's pixel
    op = fake_op("pose_space_navigate", ps_ob, space)
    op._start(ctx, _window_event("LEFTMOUSE", "RELEASE", (0, 0), sidebar, main))
    free = (rect[0] + 5.0, rect[1] + 5.0)
    assert op.modal(ctx, _window_event("LEFTMOUSE", "PRESS", free, sidebar, main)) == {"RUNNING_MODAL"}
    assert op.modal(ctx, _window_event("LEFTMOUSE", "RELEASE", free, sidebar, main)) == {"FINISHED"}
    assert np.allclose(pc.state_of(ps_ob).cursor, view.to_pose(np.array(free)))

    # a hidden sidebar, or one showing another tab: the canvas is not visible, said so
    for hidden in (_viewport_area(show_sidebar=False), _viewport_area(category="Item")):
        ctx2, _ = _button_context(hidden[0], hidden[1])
        assert pc.canvas_region(ctx2) is None
        op = fake_op("pose_space_navigate", ps_ob, space)
        op._rect = None
        assert op._start(ctx2, _window_event("LEFTMOUSE", "RELEASE", (0, 0), hidden[2], hidden[1])) == {"CANCELLED"}
        assert any("Signals tab" in message for _, message in op.reports)


def test_the_canvas_and_the_pose_space_controls_stay_together(scene):
    """The Signals tab of the 3D Viewport sidebar lists the canvas, then the Pose Space panel, then the
    rest (Blender orders a tab's panels by bl_order, ties by registration: the Motion Database used
    to sit between the canvas and its controls)."""
    panels = [cls for cls in bpy.types.Panel.__subclasses__()
              if cls.__module__.startswith(EXT) and getattr(cls, "bl_space_type", "") == "VIEW_3D"
              and getattr(cls, "bl_region_type", "") == "UI" and getattr(cls, "bl_category", "") == "Signals"
              and not getattr(cls, "bl_parent_id", "")]
    names = [cls.__name__ for cls in sorted(panels, key=lambda cls: getattr(cls, "bl_order", 0))]
    assert names[:2] == ["ANIM_SIGNALS_PT_pose_space_canvas", "ANIM_SIGNALS_PT_pose_space"], names
    assert {"ANIM_SIGNALS_PT_motion_db", "ANIM_SIGNALS_PT_deformation_transfer"} <= set(names[2:]), names
    orders = [getattr(cls, "bl_order", 0) for cls in panels]
    assert len(set(orders)) == len(orders), "equal bl_order: the order would depend on registration"


def test_the_view_refits_a_resized_canvas_until_zoomed(scene, data, tmp_path, pc, core):
    """A wider or shorter canvas gets the view fitted to it again (issue 16, item 4), unless the user
    zoomed or panned: that view is kept on the new size."""
    ps_ob, space = make_space(data, tmp_path)
    st = pc.state_of(ps_ob)
    first = pc.view_for(st, space, RECT)
    small = (RECT[0], RECT[1], 200.0, 120.0)
    refit = pc.view_for(st, space, small)
    expected = core.fit_space_view(core.canvas.drawable(space), 200, 120, origin=small[:2])
    assert refit.scale == pytest.approx(expected.scale) and refit.scale < 0.7 * first.scale
    assert np.allclose(refit.center, expected.center)
    assert pc.view_for(st, space, small).scale == refit.scale  # the same size: the same view
    st.scale = refit.scale * 1.5  # zoomed by the user
    kept = pc.view_for(st, space, RECT)
    assert kept.scale == pytest.approx(refit.scale * 1.5) and (kept.width, kept.height) == (400, 300)


def test_navigate_stops_at_the_edge_of_the_frames(scene, data, tmp_path, pc, core):
    """Dragging the cursor far outside the frames (zoomed out) holds it on their bounding box grown by
    a quarter: the pose there is g at the held point, not a wild extrapolation (issue 16, item 4)."""
    ps_ob, space = make_space(data, tmp_path)
    st = pc.state_of(ps_ob)
    _view(pc, ps_ob, space)
    st.scale /= 8.0  # zoomed out: the canvas shows far beyond the frames
    view = _view(pc, ps_ob, space)
    lo, hi = space.positions.min(axis=0), space.positions.max(axis=0)
    edge = hi + 0.25 * float(np.max(hi - lo))
    corner = (RECT[0] + RECT[2] - 2.0, RECT[1] + RECT[3] - 2.0)
    assert np.all(view.to_pose(np.array(corner)) > edge + 0.1)  # the corner lies well outside
    op = fake_op("pose_space_navigate", ps_ob, space)
    assert op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", corner)) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, ev("LEFTMOUSE", "RELEASE", corner)) == {"FINISHED"}
    assert np.allclose(st.cursor, edge) and np.allclose(op.position, edge)
    assert np.allclose(key_values(ps_ob, data), expected_values(ps_ob, data, space, edge), atol=1e-6)
    inner = view.to_pixels(0.5 * (lo + hi))  # inside: the cursor goes where the mouse is
    op = fake_op("pose_space_navigate", ps_ob, space)
    op.modal(bpy.context, ev("LEFTMOUSE", "PRESS", inner))
    op.modal(bpy.context, ev("LEFTMOUSE", "RELEASE", inner))
    assert np.allclose(st.cursor, view.to_pose(np.array(inner)))
    held, moved = core.canvas.near_the_frames(space.positions, (1e6, -1e6))
    assert moved and np.allclose(held, (edge[0], lo[1] - 0.25 * float(np.max(hi - lo))))


def test_canvas_region_of_a_real_viewport(scene, pc):
    """canvas_region on Blender's own area and regions (both versions' RNA): the sidebar when it is the
    context's region, nothing from the main region while the sidebar is hidden."""
    window = bpy.context.window_manager.windows[0]
    area = next(a for a in window.screen.areas if a.type == "VIEW_3D")
    main = next(r for r in area.regions if r.type == "WINDOW")
    sidebar = next(r for r in area.regions if r.type == "UI")
    space = area.spaces.active
    shown = space.show_region_ui
    try:
        space.show_region_ui = False
        with bpy.context.temp_override(window=window, area=area, region=main):
            assert pc.canvas_region(bpy.context) is None
        with bpy.context.temp_override(window=window, area=area, region=sidebar):
            assert pc.canvas_region(bpy.context) == sidebar
    finally:
        space.show_region_ui = shown


def test_shift_press_sketches_with_the_sidebars_sketch_frames(scene, data, tmp_path, pc, monkeypatch):
    """Shift-drag on the canvas makes a sequence of the sidebar's Sketch Frames, as the Sketch button
    does (the press dispatcher used to start the sketch with 0 = as many frames as before; found in
    the real window, tests/ui/scenarios/pose_space_mesh.py)."""
    ps_ob, space = make_space(data, tmp_path)
    canvas_view = ext_module("operators.pose_space.canvas_view")
    started: list = []
    fake_bpy = types.SimpleNamespace(ops=types.SimpleNamespace(anim_signals=types.SimpleNamespace(
        pose_space_sketch=lambda how, **props: started.append((how, props)) or {"RUNNING_MODAL"})))
    monkeypatch.setattr(canvas_view, "bpy", fake_bpy)
    source = ext_module("operators.pose_space.canvas_state").shown_on_canvas(bpy.context)[2]
    assert source.kind == "POSE_SPACE"
    monkeypatch.setattr(canvas_view, "_canvas_under_mouse", lambda context, event: (ps_ob, space, RECT, source))
    bpy.context.scene.anim_signals.pose_space_canvas.sketch_frames = 40
    press = canvas_view.ANIM_SIGNALS_OT_pose_space_canvas_press
    result = press.invoke(types.SimpleNamespace(), bpy.context, ev("LEFTMOUSE", "PRESS", (50.0, 60.0), shift=True))
    assert result == {"FINISHED"}
    assert started == [("INVOKE_DEFAULT", {"start_drag": True, "frames": 40})]


def test_clear_pins_button_clears_at_once(scene, data, tmp_path, pc, monkeypatch):
    """The panel's Clear Pins button (pin with clear=True) clears the pins when pressed in a window;
    it used to start the drag tool, which waited for a press on the canvas and cleared nothing
    (found in the real window, tests/ui/scenarios/pose_space_armature.py)."""
    ps_ob, space = make_space(data, tmp_path)
    data.save_space(ps_ob, space.with_pins({2: space.positions[2] + 0.1}))
    assert data.load_space(ps_ob).pins
    canvas_tools = ext_module("operators.pose_space.canvas_tools")
    # a window session (bpy.app.background is read-only): the button invokes, it does not execute
    monkeypatch.setattr(canvas_tools, "bpy", types.SimpleNamespace(app=types.SimpleNamespace(background=False)))
    area, main, sidebar = _viewport_area()
    ctx, handlers = _button_context(area, main)
    ctx.window = object()
    op = fake_op("pose_space_pin", ps_ob, data.load_space(ps_ob), clear=True, frame=-1)
    assert op.invoke(ctx, _window_event("LEFTMOUSE", "RELEASE", (0, 0), sidebar, main)) == {"FINISHED"}, op.reports
    assert not handlers and not data.load_space(ps_ob).pins


def test_a_sketched_curve_stays_visible_between_its_control_points(scene, data, tmp_path, pc):
    """A sketch's control points are spaced so that its curve shows between their squares (they were
    placed every 6 px, so the 7 px squares covered the whole curve: found in the real window,
    tests/ui/scenarios/pose_space_mesh.py)."""
    ps_ob, space = make_space(data, tmp_path)
    ctx = bpy.context
    cx, cy = RECT[0] + RECT[2] / 2, RECT[1] + RECT[3] / 2
    pts = [(cx + 90.0 * math.cos(t), cy + 70.0 * math.sin(t)) for t in np.linspace(0.0, 1.5 * np.pi, 60)]
    op = fake_op("pose_space_sketch", ps_ob, space, frames=30)
    op.modal(ctx, ev("LEFTMOUSE", "PRESS", pts[0]))
    for xy in pts[1:]:
        op.modal(ctx, ev("MOUSEMOVE", xy=xy))
    assert op.modal(ctx, ev("LEFTMOUSE", "RELEASE", pts[-1])) == {"FINISHED"}
    new = data.load_space(ps_ob)
    geom = pc.canvas_geometry_for(ctx, ps_ob, new, RECT)
    # a square covers 3.5 px (x UI scale) around its point, plus its outline; the curve is 2 px wide
    chebyshev = np.abs(geom.curve[:, None, :] - geom.control[None, :, :]).max(axis=2).min(axis=1)
    visible = float(np.mean(chebyshev > 3.5 + 1.0 + 1.0))
    assert visible >= 0.5, f"{100 * visible:.0f}% of the curve shows between {len(geom.control)} control points"
    # still the stroke: it runs from the press to the release
    view = _view(pc, ps_ob, new)
    ends = new.time.evaluate(np.array([1.0, 30.0]))
    assert np.allclose(ends, view.to_pose(np.array([pts[0], pts[-1]])), atol=1e-9)
