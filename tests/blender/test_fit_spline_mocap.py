"""Real motion capture from ../shared/data: Blender's BVH importer, then the fit at 0.5 deg / 0.01."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    assign_action,
    evaluate,
    fcurves_of,
    key_array,
    run_fit,
    shared_data,
    snapshot_action,
    world_heads,
)

pytestmark = pytest.mark.shared_data


# strutting_01_000 once produced two keys 1e-14 frames apart, which float32 merged in Blender
@pytest.mark.parametrize("clip, mode", [("angry_13_000", "AUTO"), ("strutting_01_000", "PER_CHANNEL")])
def test_bvh_clip_meets_tolerance_at_every_frame(scene, clip, mode):
    path = shared_data("mocap", f"{clip}.bvh")
    assert bpy.ops.import_anim.bvh(filepath=str(path)) == {"FINISHED"}
    ob = bpy.context.active_object
    assert ob is not None and ob.type == "ARMATURE"
    original = ob.animation_data.action
    orig_name = original.name
    before = snapshot_action(original)
    expected = {(fc.data_path, fc.array_index): key_array(fc) for fc in fcurves_of(ob)}
    keys_before = sum(len(v) for v in expected.values())

    assert run_fit(mode=mode, max_error_rotation=0.5, max_error_location=0.01) == {"FINISHED"}

    after = snapshot_action(bpy.data.actions[orig_name])
    for key, arr in before.items():
        np.testing.assert_array_equal(arr, after[key])
    fcs = fcurves_of(ob)
    assert ob.animation_data.action.name == f"{orig_name}.fit"
    keys_after = sum(len(fc.keyframe_points) for fc in fcs)
    assert keys_after < keys_before / 3, (keys_before, keys_after)
    worst = {"rot": 0.0, "loc": 0.0}
    for fc in fcs:
        co = expected[(fc.data_path, fc.array_index)]
        err = evaluate(fc, co[:, 0]) - co[:, 1]
        if "rotation_euler" in fc.data_path:
            err = (err + np.pi) % (2 * np.pi) - np.pi
            worst["rot"] = max(worst["rot"], math.degrees(np.abs(err).max()))
        else:
            assert fc.data_path.endswith("location"), fc.data_path
            worst["loc"] = max(worst["loc"], np.abs(err).max())
    assert worst["rot"] <= 0.5 + 2e-3, worst
    assert worst["loc"] <= 0.01 + 2e-5, worst
    res = scene.anim_signals.last_fit
    assert res.keys_before == keys_before and res.keys_after == keys_after
    # The reported joint error (sampled frames) is bounded by comparing every frame here; BVH
    # units are whatever the file uses (this clip: about 1 unit = 1 cm, so "cm" reads as 100x).
    full = _joint_error(ob, original, ob.animation_data.action, int(co[0, 0]), int(co[-1, 0]))
    assert 0.0 < res.joint_error_cm <= 100.0 * full + 1e-3


def _joint_error(ob, original, fitted, first: int, last: int) -> float:
    heads_fit = world_heads(ob, range(first, last + 1))
    assign_action(ob, original)
    heads_orig = world_heads(ob, range(first, last + 1))
    assign_action(ob, fitted)
    return float(np.linalg.norm(heads_fit - heads_orig, axis=-1).max())
