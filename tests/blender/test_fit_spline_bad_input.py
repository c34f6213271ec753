"""Bad input: a clear message and nothing changed (every key of every action compared before/after)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    IS_SLOTTED,
    assert_same_state,
    fcurves_of,
    key_array,
    keyed,
    make_object,
    run_fit,
    snapshot_all,
)


def _expect_cancelled(ext, ob, match: str, **kwargs) -> None:
    """The operator reports an error naming the problem (bpy.ops raises it for scripts) and
    nothing changes; plan_fit (what the modal invoke runs first) raises the same message."""
    before = snapshot_all()
    with pytest.raises(RuntimeError, match=match):
        run_fit(**kwargs)
    assert_same_state(before, snapshot_all())
    plan_kwargs = {k: v for k, v in kwargs.items() if k in {"target", "channels", "degree"}}
    with pytest.raises(ext.fit.FitInputError, match=match):
        ext.fit.plan_fit(ob, **plan_kwargs)


def test_no_active_object(scene, ext):
    make_object(n_frames=20)
    bpy.context.view_layer.objects.active = None
    before = snapshot_all()
    with pytest.raises(RuntimeError, match="No active object"):
        run_fit()
    assert_same_state(before, snapshot_all())
    with pytest.raises(ext.fit.FitInputError, match="No active object"):
        ext.fit.plan_fit(None)


def test_no_animation_data(scene, ext):
    ob = bpy.data.objects.new("Still", None)
    scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    with pytest.raises(RuntimeError, match="no action"):
        run_fit()
    with pytest.raises(ext.fit.FitInputError, match="no animation data"):
        ext.fit.plan_fit(ob)
    ob.animation_data_create()  # animation data but no action
    with pytest.raises(ext.fit.FitInputError, match="no animation data"):
        ext.fit.plan_fit(ob)


def test_no_shape_keys(scene, ext):
    ob, _, _ = make_object(n_frames=20)
    _expect_cancelled(ext, ob, "no shape keys", target="SHAPE_KEYS")


def test_nothing_selected(scene, ext):
    ob, _, _ = make_object(n_frames=30)
    for fc in fcurves_of(ob):
        fc.select = False
    _expect_cancelled(ext, ob, "No F-curves selected", channels="SELECTED")


def test_fewer_keys_than_degree_plus_one(scene, ext):
    ob, _, _ = make_object(n_frames=3)
    _expect_cancelled(ext, ob, "fewer than 4 frames", degree=3, mode="PER_CHANNEL")
    # Degree 1 needs only 2 keys: the same clip fits; so does Fewest Keys, whatever the degree.
    assert run_fit(degree=1, mode="LATENT") == {"FINISHED"}
    assert run_fit(degree=3) == {"FINISHED"}


def test_every_curve_constant(scene, ext):
    ob = bpy.data.objects.new("Constant", None)
    scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    frames = np.arange(1, 41, dtype=np.float64)
    keyed(ob, "location", frames, np.tile([1.0, 2.0, 3.0], (40, 1)))
    _expect_cancelled(ext, ob, "constant")


def test_nan_and_inf_values(scene, ext):
    ob, _, _ = make_object(n_frames=30)
    fc = next(f for f in fcurves_of(ob) if f.data_path == "rotation_euler" and f.array_index == 1)
    co = key_array(fc)
    co[10, 1] = np.nan
    fc.keyframe_points.foreach_set("co", co.astype(np.float32).ravel())
    fc.update()
    _expect_cancelled(ext, ob, r"rotation_euler\[1\]'.* value nan at frame 11")
    co[10, 1] = np.inf
    fc.keyframe_points.foreach_set("co", co.astype(np.float32).ravel())
    fc.update()
    _expect_cancelled(ext, ob, r"rotation_euler\[1\]'.* value inf at frame 11")


def test_all_curves_locked(scene, ext):
    ob, _, _ = make_object(n_frames=30)
    for fc in fcurves_of(ob):
        fc.lock = True
    _expect_cancelled(ext, ob, "locked")


def test_locked_curves_are_skipped(scene, ext):
    ob, frames, expected = make_object(n_frames=40)
    locked = {}
    for fc in fcurves_of(ob):
        if fc.data_path == "scale":
            fc.lock = True
            locked[fc.array_index] = key_array(fc)
    plan = ext.fit.plan_fit(ob)
    assert any("locked" in w for w in plan.warnings)
    assert run_fit(mode="LATENT", keep_original=False) == {"FINISHED"}
    for fc in fcurves_of(ob):
        if fc.data_path == "scale":
            np.testing.assert_array_equal(key_array(fc), locked[fc.array_index])
        else:
            assert len(fc.keyframe_points) < len(frames)


def test_linked_action_is_read_only(scene, ext, tmp_path):
    ob, _, _ = make_object(n_frames=30)
    action = ob.animation_data.action
    name = action.name
    lib_path = str(tmp_path / "lib.blend")
    bpy.data.libraries.write(lib_path, {action}, fake_user=True)
    ob.animation_data.action = None
    bpy.data.actions.remove(action)
    with bpy.data.libraries.load(lib_path, link=True) as (_src, dst):
        dst.actions = [name]
    linked = dst.actions[0]
    assert linked.library is not None
    ob.animation_data.action = linked
    if IS_SLOTTED:
        ob.animation_data.action_slot = linked.slots[0]
    assert fcurves_of(ob)
    _expect_cancelled(ext, ob, "linked")
    _expect_cancelled(ext, ob, "linked", keep_original=False)


def test_bad_tolerance(scene, ext):
    ob, _, _ = make_object(n_frames=20)
    with pytest.raises(ext.fit.FitInputError, match="must be positive"):
        ext.fit.plan_fit(ob, max_error_location=0.0)


def test_cancelled_fit_writes_nothing(scene, ext):
    """What ESC does in the modal operator: stop stepping the fit and drop it."""
    ob, _, _ = make_object(n_frames=60)
    before = snapshot_all()
    plan = ext.fit.plan_fit(ob)
    gen = ext.fit.iter_plan(plan, mode="AUTO", seed=0)
    fractions = [next(gen) for _ in range(2)]
    assert all(0.0 <= f <= 1.0 for f in fractions)
    gen.close()
    assert plan.jobs[0].result is None
    assert_same_state(before, snapshot_all())
    # A progress callback that asks to stop raises FitCancelled before anything is written.
    job = plan.jobs[0]
    with pytest.raises(ext.core.FitCancelled):
        ext.core.fit_channels(job.fit_values, job.frames, job.tolerance, progress=lambda f: False)
    assert_same_state(before, snapshot_all())
