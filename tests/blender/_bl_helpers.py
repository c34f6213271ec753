"""Helpers for the Blender tests: read and build animation independently of the extension's data layer."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import bpy
import numpy as np
import pytest
from conftest import EXT_MODULE

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = (REPO / ".." / "shared" / "data").resolve()
IS_SLOTTED = "action_slot" in bpy.types.AnimData.bl_rna.properties


def ext_module(path: str) -> types.ModuleType:
    """A module of the installed extension by its path inside it, e.g. ``"operators.pose_space"``."""
    return sys.modules[f"{EXT_MODULE}.{path}"]


def shared_data(*parts: str) -> Path:
    """A file under ../shared/data, or skip the test when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path} (expected ../shared/data next to the checkout)")
    return path


# ----------------------------------------------------------------------------------------------
# Independent helpers (deliberately not the extension's data layer) to read and build animation
# ----------------------------------------------------------------------------------------------


def fcurves_of(id_data) -> list:
    """The F-curves animating an ID (legacy action.fcurves on 4.2/4.3, channelbag on 4.4+)."""
    adt = id_data.animation_data
    if adt is None or adt.action is None:
        return []
    action = adt.action
    if IS_SLOTTED:
        slot = adt.action_slot
        for layer in action.layers:
            for strip in layer.strips:
                cb = strip.channelbag(slot)
                if cb is not None:
                    return list(cb.fcurves)
        return []
    return list(action.fcurves)


def action_fcurves_all(action) -> list:
    if IS_SLOTTED:
        return [fc for layer in action.layers for strip in layer.strips for cb in strip.channelbags for fc in cb.fcurves]
    return list(action.fcurves)


def key_array(fc, prop: str = "co") -> np.ndarray:
    n = len(fc.keyframe_points)
    buf = np.empty(2 * n, dtype=np.float32)
    fc.keyframe_points.foreach_get(prop, buf)
    return buf.reshape(n, 2).astype(np.float64)


def snapshot_action(action) -> dict:
    """Every key of every curve of the action (co and both handles), for before/after comparison."""
    return {
        (fc.data_path, fc.array_index): np.concatenate([key_array(fc, p) for p in ("co", "handle_left", "handle_right")], axis=1)
        for fc in action_fcurves_all(action)
    }


ID_COLLECTIONS = ("objects", "actions", "meshes", "armatures", "images", "texts", "cache_files", "collections")


def _custom_properties(id_data) -> dict:
    out = {}
    for key in id_data.keys():
        value = id_data[key]
        out[key] = repr(value.to_dict() if hasattr(value, "to_dict") else
                        value.to_list() if hasattr(value, "to_list") else value)
    return out


def _mesh_state(mesh) -> tuple:
    co = np.empty(3 * len(mesh.vertices), dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    keys = mesh.shape_keys
    # names and shapes, not values: an animated value follows the frame, which operators may visit
    blocks = []
    for kb in (keys.key_blocks if keys is not None else ()):
        data = np.empty(3 * len(kb.data), dtype=np.float32)
        kb.data.foreach_get("co", data)
        blocks.append((kb.name, data.tobytes()))
    return len(mesh.vertices), co.tobytes(), tuple(blocks)


def snapshot_all() -> dict:
    """All actions in the file (every key), which action every animated ID uses, which datablocks
    exist, the objects' custom properties, every mesh's vertices and shape keys, and the scene's
    frame range: what "nothing changed" means for a refused operator."""
    state: dict = {"actions": {a.name: snapshot_action(a) for a in bpy.data.actions}}
    assigned = {}
    for ob in bpy.data.objects:
        for idb in (ob, getattr(getattr(ob, "data", None), "shape_keys", None)):
            if idb is not None and idb.animation_data is not None and idb.animation_data.action is not None:
                assigned[idb.name] = idb.animation_data.action.name
    state["assigned"] = assigned
    state["ids"] = {name: sorted(i.name for i in getattr(bpy.data, name)) for name in ID_COLLECTIONS}
    state["fake_users"] = {a.name: a.use_fake_user for a in bpy.data.actions}
    state["properties"] = {ob.name: _custom_properties(ob) for ob in bpy.data.objects}
    state["meshes"] = {m.name: _mesh_state(m) for m in bpy.data.meshes}
    scene = bpy.context.scene
    state["scene"] = (scene.frame_start, scene.frame_end, scene.frame_current)
    return state


def assert_same_state(before: dict, after: dict) -> None:
    for part in ("ids", "assigned", "fake_users", "properties", "meshes", "scene"):
        if part in before:
            assert before[part] == after[part], part
    assert sorted(before["actions"]) == sorted(after["actions"])
    for name, curves in before["actions"].items():
        other = after["actions"][name]
        assert sorted(curves) == sorted(other), name
        for key, arr in curves.items():
            np.testing.assert_array_equal(arr, other[key], err_msg=f"{name} {key}")


def assert_refused(call, match: str) -> None:
    """``call()`` (an operator call through ``bpy.ops``, which raises the error it reports as a
    RuntimeError) is refused with a message matching ``match`` and the file is unchanged: no key,
    assignment, datablock, custom property, mesh or frame range differs afterwards."""
    before = snapshot_all()
    with pytest.raises(RuntimeError, match=match):
        call()
    assert_same_state(before, snapshot_all())


def evaluate(fc, frames) -> np.ndarray:
    ev = fc.evaluate
    return np.array([ev(float(f)) for f in frames])


def set_dense_keys(fc, frames: np.ndarray, values: np.ndarray) -> None:
    """Replace the keys of ``fc`` with one key per frame (linear interpolation, like a bake)."""
    kps = fc.keyframe_points
    kps.clear()
    n = len(frames)
    kps.add(n)
    co = np.column_stack([frames, values]).astype(np.float32)
    kps.foreach_set("co", co.ravel())
    kps.foreach_set("handle_left", co.ravel())
    kps.foreach_set("handle_right", co.ravel())
    lin = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value
    kps.foreach_set("interpolation", np.full(n, lin, dtype=np.int32))
    fc.update()


def keyed(owner, prop: str, frames: np.ndarray, values: np.ndarray, id_data=None) -> list:
    """Key ``owner.prop`` (array property: values (N, k); scalar: (N,)) densely on ``frames``."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    owner.keyframe_insert(prop, frame=float(frames[0]))
    id_data = id_data or owner.id_data
    path_end = prop
    out = []
    for fc in fcurves_of(id_data):
        if fc.data_path.endswith(path_end) and (
            owner == id_data or fc.data_path.startswith(owner.path_from_id())
        ):
            idx = fc.array_index
            if idx < values.shape[1]:
                set_dense_keys(fc, frames, values[:, idx])
                out.append(fc)
    return out


def motion(frames: np.ndarray, rng: np.random.Generator, amplitude: float, n: int) -> np.ndarray:
    """Mocap-like channels: a walk cycle (two harmonics) plus a sudden burst; (N, n)."""
    t = (frames - frames[0]) / 24.0
    out = np.empty((frames.size, n))
    centre = 0.5 * (frames[0] + frames[-1])
    for j in range(n):
        a1, a2, ph = rng.uniform(0.4, 1.0), rng.uniform(0.1, 0.3), rng.uniform(0, 2 * np.pi)
        burst = rng.uniform(0.3, 0.8) * np.exp(-(((frames - centre) / 3.0) ** 2))
        out[:, j] = amplitude * (a1 * np.sin(2 * np.pi * t + ph) + a2 * np.sin(4 * np.pi * t + 2 * ph) + burst)
    return out


def make_object(name: str = "Mover", n_frames: int = 96, seed: int = 1, *, quaternion: bool = False):
    """An empty with dense location, rotation and scale keys (one per frame)."""
    ob = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    ob.select_set(True)
    frames = np.arange(1, n_frames + 1, dtype=np.float64)
    rng = np.random.default_rng(seed)
    expected = {}
    keyed(ob, "location", frames, motion(frames, rng, 1.0, 3))
    if quaternion:
        ob.rotation_mode = "QUATERNION"
        q = quaternion_track(frames, rng)
        keyed(ob, "rotation_quaternion", frames, q)
    else:
        keyed(ob, "rotation_euler", frames, motion(frames, rng, 0.6, 3))
    keyed(ob, "scale", frames, 1.0 + 0.2 * motion(frames, rng, 1.0, 3))
    for fc in fcurves_of(ob):
        expected[(fc.data_path, fc.array_index)] = key_array(fc)[:, 1]
    return ob, frames, expected


def quaternion_track(frames: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    ang = motion(frames, rng, 0.8, 3)
    half = 0.5 * np.linalg.norm(ang, axis=1)
    axis = ang / np.maximum(np.linalg.norm(ang, axis=1, keepdims=True), 1e-9)
    return np.column_stack([np.cos(half), axis * np.sin(half)[:, None]])


def new_armature(name: str, bones) -> bpy.types.Object:
    """An armature object linked to the scene and made active, its bones from ``bones``: (name,
    head, tail, parent name or None, connected) in parent-first order."""
    arm = bpy.data.armatures.new(name)
    ob = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    ob.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    for bone, head, tail, parent, connected in bones:
        eb = arm.edit_bones.new(bone)
        eb.head, eb.tail = tuple(head), tuple(tail)
        if parent is not None:
            eb.parent = arm.edit_bones[parent]
            eb.use_connect = bool(connected)
    bpy.ops.object.mode_set(mode="OBJECT")
    return ob


def make_armature(name: str = "Rig", n_frames: int = 80, seed: int = 2):
    """A 4-bone chain: root with location + euler keys, a quaternion bone, two euler bones."""
    ob = new_armature(name, [(f"B{i}", (0.0, 0.0, float(i)), (0.0, 0.0, float(i + 1)), f"B{i - 1}" if i else None, True)
                             for i in range(4)])
    frames = np.arange(1, n_frames + 1, dtype=np.float64)
    rng = np.random.default_rng(seed)
    for i, pb in enumerate(ob.pose.bones):
        if i == 0:
            keyed(pb, "location", frames, 0.5 * motion(frames, rng, 1.0, 3), id_data=ob)
        if i == 1:
            pb.rotation_mode = "QUATERNION"
            keyed(pb, "rotation_quaternion", frames, quaternion_track(frames, rng), id_data=ob)
        else:
            pb.rotation_mode = "XYZ" if i != 3 else "ZXY"
            keyed(pb, "rotation_euler", frames, motion(frames, rng, 0.5, 3), id_data=ob)
    expected = {(fc.data_path, fc.array_index): key_array(fc)[:, 1] for fc in fcurves_of(ob)}
    return ob, frames, expected


def make_shape_keys(name: str = "Face", n_frames: int = 90, seed: int = 3):
    """A plane with two animated shape keys (dense weights in [0, 1])."""
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)], [], [(0, 1, 2, 3)])
    ob = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    ob.shape_key_add(name="Basis")
    frames = np.arange(1, n_frames + 1, dtype=np.float64)
    rng = np.random.default_rng(seed)
    for kname in ("Smile", "Blink"):
        kb = ob.shape_key_add(name=kname)
        w = np.clip(0.5 + 0.45 * motion(frames, rng, 0.6, 1)[:, 0], 0.0, 1.0)
        keyed(kb, "value", frames, w, id_data=mesh.shape_keys)
    keys = mesh.shape_keys
    expected = {(fc.data_path, fc.array_index): key_array(fc)[:, 1] for fc in fcurves_of(keys)}
    return ob, frames, expected


def run_fit(**kwargs) -> set[str]:
    """Run the operator the way a script does (EXEC_DEFAULT)."""
    return bpy.ops.anim_signals.fit_latent_spline("EXEC_DEFAULT", **kwargs)


def world_heads(ob, frames) -> np.ndarray:
    """World-space pose bone heads (frames, bones, 3), evaluated frame by frame (test oracle)."""
    scene = bpy.context.scene
    out = []
    for f in frames:
        scene.frame_set(int(f))
        ob_eval = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
        mw = np.array(ob_eval.matrix_world)
        out.append([(mw @ np.append(np.array(pb.head), 1.0))[:3] for pb in ob_eval.pose.bones])
    return np.array(out)


def assign_action(ob, action) -> None:
    ob.animation_data.action = action
    if IS_SLOTTED:
        ob.animation_data.action_slot = action.slots[0]


# ----------------------------------------------------------------------------------------------
# Stand-ins for what headless Blender lacks: events for modal operators, a layout that records
# ----------------------------------------------------------------------------------------------


def event(kind: str, value: str = "NOTHING", **fields):
    """A stand-in window-manager event (headless Blender delivers none)."""
    return types.SimpleNamespace(type=kind, value=value, **fields)


class StepwiseDriver:
    """Carries a StepwiseOperator's methods and settings without a registered instance.

    Headless Blender never calls invoke()/modal(), so the tests prepare the plan, start the steps
    and feed ``modal`` stand-in events the way the window manager would: one step per event.
    """

    def __init__(self, cls, context, **settings):
        self.reports: list = []
        for klass in reversed(cls.__mro__):
            if klass is object or klass.__module__.startswith(("bpy", "_bpy")):
                continue
            for name, value in vars(klass).items():
                if name.startswith("__") or name in ("report", "bl_rna"):
                    continue
                if isinstance(value, classmethod):
                    setattr(self, name, types.MethodType(value.__func__, cls))
                elif isinstance(value, staticmethod):
                    setattr(self, name, value.__func__)
                elif isinstance(value, types.FunctionType):
                    setattr(self, name, types.MethodType(value, self))
                elif not callable(value):
                    setattr(self, name, value)
        group, name = cls.bl_idname.split(".")
        for prop in getattr(getattr(bpy.ops, group), name).get_rna_type().properties:
            if prop.identifier == "rna_type" or prop.type in {"POINTER", "COLLECTION"}:
                continue
            setattr(self, prop.identifier, prop.default_array if getattr(prop, "is_array", False) else prop.default)
        for k, v in settings.items():
            setattr(self, k, v)
        self.STEP_SECONDS = 0.0  # one step per event: deterministic
        self._plan = self.prepare_or_report(context)
        assert self._plan is not None, self.reports
        self._gen = self.steps(self._plan)
        context.window_manager.progress_begin(0, 100)
        self._timer = context.window_manager.event_timer_add(0.02, window=context.window)

    def report(self, level, message):
        self.reports.append((set(level), message))

    def run_to_end(self, context, limit: int = 100_000) -> set[str]:
        """Timer events until the operator finishes; returns its final result."""
        for _ in range(limit):
            result = self.modal(context, event("TIMER"))
            if result != {"RUNNING_MODAL"}:
                return result
        raise AssertionError("the modal operator did not finish")


class FakeLayout:
    """Records what a panel draws into ``calls``; every drawn property must exist and have a tooltip,
    every operator argument set must be a property of the operator.

    Recorded: ``("child", layout)`` for each sub-layout, ``("label", text)``, ``("prop", name)``,
    ``("list", listtype)``, ``("operator", idname)`` and ``("set", name, value)`` for the operator's
    arguments.
    """

    def __init__(self, calls: list):
        self.calls = calls
        self.use_property_split = self.use_property_decorate = False
        self.scale_y = 1.0
        self.enabled = True

    def _child(self, *args, **kwargs):
        child = FakeLayout(self.calls)
        self.calls.append(("child", child))
        return child

    column = row = box = split = _child

    def panel(self, idname, default_closed=False):
        return FakeLayout(self.calls), FakeLayout(self.calls)

    def label(self, text="", icon="NONE"):
        self.calls.append(("label", text))

    def separator(self, **kwargs):
        pass

    def prop(self, data, name, **kwargs):
        assert name in data.bl_rna.properties, f"panel draws unknown property {name!r}"
        assert data.bl_rna.properties[name].description, f"{name!r} has no tooltip"
        self.calls.append(("prop", name))

    def prop_search(self, data, name, search_data, search_prop, **kwargs):
        self.prop(data, name)

    def template_list(self, listtype, list_id, data, prop, active_data, active_prop, **kwargs):
        assert prop in data.bl_rna.properties and active_prop in active_data.bl_rna.properties
        self.calls.append(("list", listtype))

    def operator(self, idname, **kwargs):
        module, name = idname.split(".")
        rna = getattr(getattr(bpy.ops, module), name).get_rna_type()
        calls = self.calls
        calls.append(("operator", idname))

        class _Props:
            def __setattr__(self, key, value):
                assert key in rna.properties, f"{idname} has no property {key!r}"
                calls.append(("set", key, value))

        return _Props()


def draw_fit_panel(scene) -> list:
    """What the Fit Spline sidebar panel draws for ``scene`` (a :class:`FakeLayout`'s calls)."""
    panel_cls = bpy.types.ANIM_SIGNALS_PT_fit_spline
    calls: list = []
    panel = types.SimpleNamespace(layout=FakeLayout(calls), _draw_result=panel_cls._draw_result)
    panel_cls.draw(panel, types.SimpleNamespace(scene=scene))
    return calls


def linked_copy(ob, folder, scene):
    """``ob`` written to a library in ``folder``, removed here, linked back from the library into
    ``scene`` and made active (read-only data); returns the linked object."""
    name = ob.name
    lib = str(folder / f"{name}_lib.blend")
    bpy.data.libraries.write(lib, {ob}, fake_user=True)
    bpy.data.objects.remove(ob)
    with bpy.data.libraries.load(lib, link=True) as (_src, dst):
        dst.objects = [name]
    linked = dst.objects[0]
    scene.collection.objects.link(linked)
    bpy.context.view_layer.objects.active = linked
    return linked
