"""Skeleton-independent body features (anim_signals.manifolds.skeleton): canonical joints and invariances."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from anim_signals.manifolds import skeleton
from anim_signals.manifolds.skeleton import (
    REQUIRED,
    body_features,
    canonical_joints,
    feature_names,
    split_side,
)

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "mocap"

# canonical joint -> name in three naming schemes (CMU / Xia, Daz / acrnn, iClone CC)
CMU = {"hips": "Hips", "spine": "Spine", "neck": "Neck", "head": "Head",
       "upper_arm_l": "LeftArm", "forearm_l": "LeftForeArm", "hand_l": "LeftHand",
       "upper_arm_r": "RightArm", "forearm_r": "RightForeArm", "hand_r": "RightHand",
       "thigh_l": "LeftUpLeg", "shin_l": "LeftLeg", "foot_l": "LeftFoot",
       "thigh_r": "RightUpLeg", "shin_r": "RightLeg", "foot_r": "RightFoot"}
DAZ = {"hips": "hip", "spine": "abdomen", "neck": "neck", "head": "head",
       "upper_arm_l": "lShldr", "forearm_l": "lForeArm", "hand_l": "lHand",
       "upper_arm_r": "rShldr", "forearm_r": "rForeArm", "hand_r": "rHand",
       "thigh_l": "lThigh", "shin_l": "lShin", "foot_l": "lFoot",
       "thigh_r": "rThigh", "shin_r": "rShin", "foot_r": "rFoot"}
ICLONE = {"hips": "CC_Base_Hip", "spine": "CC_Base_Waist", "neck": "CC_Base_NeckTwist01", "head": "CC_Base_Head",
          "upper_arm_l": "CC_Base_L_Upperarm", "forearm_l": "CC_Base_L_Forearm", "hand_l": "CC_Base_L_Hand",
          "upper_arm_r": "CC_Base_R_Upperarm", "forearm_r": "CC_Base_R_Forearm", "hand_r": "CC_Base_R_Hand",
          "thigh_l": "CC_Base_L_Thigh", "shin_l": "CC_Base_L_Calf", "foot_l": "CC_Base_L_Foot",
          "thigh_r": "CC_Base_R_Thigh", "shin_r": "CC_Base_R_Calf", "foot_r": "CC_Base_R_Foot"}
ORDER = ["hips", "spine", "neck", "head", "upper_arm_l", "forearm_l", "hand_l", "upper_arm_r", "forearm_r",
         "hand_r", "thigh_l", "shin_l", "foot_l", "thigh_r", "shin_r", "foot_r"]


def rot_z(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rot_x(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def walk_local(n=40, seed=0, height=1.0):
    """Joint positions (n, 16, 3) of a walking figure in its own frame: facing +Y, left = -X, up = +Z."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 2.0 * np.pi, n)
    swing = 0.5 * np.sin(t)[:, None]
    p = np.zeros((n, len(ORDER), 3))
    J = {k: i for i, k in enumerate(ORDER)}
    hips = np.array([0.0, 0.0, 0.95]) * height
    p[:, J["hips"]] = hips + 0.02 * np.sin(2 * t)[:, None] * [0, 0, 1]
    p[:, J["spine"]] = p[:, J["hips"]] + [0.0, 0.02, 0.15 * height]
    p[:, J["neck"]] = p[:, J["hips"]] + [0.0, 0.05, 0.55 * height]
    p[:, J["head"]] = p[:, J["neck"]] + [0.0, 0.03, 0.15 * height]
    for side, sx in (("l", -1.0), ("r", 1.0)):
        ph = swing if side == "l" else -swing
        sh = p[:, J["neck"]] + [sx * 0.18 * height, 0.0, -0.05 * height]
        p[:, J[f"upper_arm_{side}"]] = sh
        el = sh + 0.3 * height * np.column_stack([np.zeros(n), np.sin(-ph[:, 0]), -np.cos(ph[:, 0])])
        p[:, J[f"forearm_{side}"]] = el
        p[:, J[f"hand_{side}"]] = el + 0.25 * height * np.column_stack(
            [np.zeros(n), np.sin(-ph[:, 0] + 0.4), -np.cos(-ph[:, 0] + 0.4)])
        th = p[:, J["hips"]] + [sx * 0.1 * height, 0.0, -0.05 * height]
        p[:, J[f"thigh_{side}"]] = th
        kn = th + 0.45 * height * np.column_stack([np.zeros(n), np.sin(ph[:, 0]), -np.cos(ph[:, 0])])
        p[:, J[f"shin_{side}"]] = kn
        p[:, J[f"foot_{side}"]] = kn + 0.42 * height * np.column_stack(
            [np.zeros(n), np.sin(ph[:, 0] - 0.3), -np.cos(ph[:, 0] - 0.3)])
    return p + 0.001 * rng.normal(size=p.shape)


def place(local, yaw, offset=(0.0, 0.0, 0.0), scale=1.0):
    """World positions: per-frame yaw (scalar or (n,)), then uniform scale and translation."""
    yaw = np.broadcast_to(np.asarray(yaw, dtype=float), (local.shape[0],))
    out = np.empty_like(local)
    for k in range(local.shape[0]):
        out[k] = local[k] @ rot_z(yaw[k]).T
    return scale * out + np.asarray(offset)


def names_of(scheme):
    return [scheme[k] for k in ORDER]


@pytest.mark.parametrize("scheme", [CMU, DAZ, ICLONE], ids=["cmu", "daz", "iclone"])
def test_canonical_joints_of_three_naming_schemes(scheme):
    names = names_of(scheme)
    j = canonical_joints(names)
    for key in REQUIRED:
        assert names[j[key]] == scheme[key], key


def test_split_side():
    assert split_side("LeftUpLeg") == ("l", "upleg")
    assert split_side("RightForeArm") == ("r", "forearm")
    assert split_side("CC_Base_R_Calf") == ("r", "calf")
    assert split_side("lShldr") == ("l", "shldr")
    assert split_side("rButtock") == ("r", "buttock")
    assert split_side("thigh.L") == ("l", "thigh")
    assert split_side("DEF-upper_arm.R.001") == ("r", "upperarm")
    assert split_side("mixamorig:Hips") == (None, "hips")
    assert split_side("Bip01 L Forearm") == ("l", "forearm")
    assert split_side("lowerback") == (None, "lowerback")  # not "l" + "owerback"
    assert split_side("RL_BoneRoot") == (None, "rlboneroot")


def test_shoulder_is_upper_arm_only_without_an_arm_bone():
    # CMU / Mixamo: LeftShoulder is the clavicle, LeftArm the upper arm
    xia = ["Hips", "Spine", "LeftShoulder", "LeftArm", "LeftForeArm", "LeftHand"]
    assert canonical_joints(xia)["upper_arm_l"] == 3
    # cgspeed CMU: LeftCollar -> LeftShoulder (upper arm) -> LeftElbow -> LeftWrist -> lhand
    cgs = ["Hips", "LHipJoint", "LeftHip", "LeftKnee", "LeftAnkle", "LeftCollar", "LeftShoulder", "LeftElbow",
           "LeftWrist", "lhand", "lowerneck", "Neck", "Head"]
    parents = [-1, 0, 1, 2, 3, 0, 5, 6, 7, 8, 0, 10, 11]
    j = canonical_joints(cgs, parents)
    assert cgs[j["upper_arm_l"]] == "LeftShoulder"
    assert cgs[j["forearm_l"]] == "LeftElbow"
    assert cgs[j["hand_l"]] == "LeftWrist"  # nearest the root of LeftWrist, lhand
    assert cgs[j["thigh_l"]] == "LeftHip" and cgs[j["shin_l"]] == "LeftKnee" and cgs[j["foot_l"]] == "LeftAnkle"
    assert cgs[j["neck"]] == "lowerneck"  # the base of the neck
    assert "hips" in j and cgs[j["hips"]] == "Hips"


def test_twist_and_finger_bones_are_not_picked():
    names = ["CC_Base_Hip", "CC_Base_L_ThighTwist01", "CC_Base_L_Thigh", "CC_Base_L_ForearmTwist01",
             "CC_Base_L_Forearm", "LeftHandIndex1", "LeftHand"]
    j = canonical_joints(names)
    assert names[j["thigh_l"]] == "CC_Base_L_Thigh"
    assert names[j["forearm_l"]] == "CC_Base_L_Forearm"
    assert names[j["hand_l"]] == "LeftHand"


def test_feature_layout_and_values_of_an_upright_figure():
    local = walk_local()
    f = body_features(local, names_of(CMU))
    assert f.shape == (local.shape[0], len(feature_names()))
    assert f.shape[1] == 3 * len(skeleton.SEGMENTS) + 1
    names = feature_names()
    spine = f[:, names.index("spine.side"):names.index("spine.side") + 3]
    assert np.all(spine[:, 2] > 0.95)  # the spine points up
    # left and right directions are unit vectors; the legs point down
    for seg in ("thigh_l", "shin_r", "forearm_l"):
        i = names.index(f"{seg}.side")
        assert np.allclose(np.linalg.norm(f[:, i:i + 3], axis=1), 1.0)
        assert np.all(f[:, i + 2] < 0.0)
    # the left thigh swings forward as sin(t) grows: forward component follows the swing
    i = names.index("thigh_l.forward")
    t = np.linspace(0.0, 2.0 * np.pi, local.shape[0])
    assert np.corrcoef(f[:, i], np.sin(t))[0, 1] > 0.99
    # hips height over leg length: positive, near 1 for a standing figure
    h = f[:, -1]
    assert np.all((h > 0.8) & (h < 1.3))
    assert body_features(local, names_of(CMU), height=False).shape[1] == f.shape[1] - 1


def test_invariant_to_yaw_translation_and_uniform_scale():
    local = walk_local()
    names = names_of(CMU)
    ref = body_features(local, names)
    for yaw, offset, scale in ((0.7, (3.0, -2.0, 0.5), 1.0), (-2.5, (0.0, 10.0, -4.0), 100.0), (3.1, (0, 0, 0), 0.02)):
        got = body_features(place(local, yaw, offset, scale), names)
        assert np.allclose(got, ref, atol=1e-9), (yaw, offset, scale)
    # turning while walking (yaw changing every frame) does not matter either
    turning = place(local, np.linspace(0.0, 3.0, local.shape[0]), (5.0, 1.0, 0.0))
    assert np.allclose(body_features(turning, names), ref, atol=1e-9)


def test_not_invariant_to_tilt():
    local = walk_local()
    names = names_of(CMU)
    tilted = local @ rot_x(0.5).T
    assert not np.allclose(body_features(tilted, names), body_features(local, names), atol=1e-3)


def test_same_motion_on_different_rigs_gives_the_same_features():
    local = walk_local()
    a = body_features(local, names_of(CMU))
    # a Daz rig: different names, extra bones, other order, centimetres, another place and heading
    extra = ["rCollar", "lCollar", "rButtock", "lButtock", "leftEye"]
    names_b = extra[:2] + names_of(DAZ)[::-1] + extra[2:]
    world = place(local, 1.2, (40.0, -300.0, 0.0), 100.0)[:, ::-1]
    pos_b = np.concatenate([world[:, :2] * 0 + 7.0, world, world[:, :3] * 0 - 1.0], axis=1)
    b = body_features(pos_b, names_b)
    assert np.allclose(a, b, atol=1e-9)
    # with the parent list given as well
    parents = [-1] * len(names_b)
    assert np.allclose(body_features(pos_b, names_b, parents), b)


def test_up_axis():
    local = walk_local()
    names = names_of(CMU)
    y_up = local[..., [0, 2, 1]] * [1.0, 1.0, -1.0]  # (x, z, -y): right-handed with +Y up
    assert np.allclose(body_features(y_up, names, up_axis=1), body_features(local, names), atol=1e-9)
    with pytest.raises(ValueError, match="up_axis"):
        body_features(local, names, up_axis=3)


def test_missing_joints_are_named():
    local = walk_local()
    names = names_of(CMU)
    keep = [i for i, n in enumerate(names) if "Hand" not in n and n != "Head"]
    with pytest.raises(ValueError) as ex:
        body_features(local[:, keep], [names[i] for i in keep])
    msg = str(ex.value)
    assert "head" in msg and "hand_l" in msg and "hand_r" in msg
    assert "thigh_l" not in msg.split("among")[0]
    with pytest.raises(ValueError, match="canonical joints"):
        body_features(np.zeros((3, 2, 3)), ["Root", "Bone.001"])


def test_bad_shapes():
    local = walk_local()
    with pytest.raises(ValueError, match="names"):
        body_features(local, names_of(CMU)[:-1])
    with pytest.raises(ValueError, match="frames, bones, 3"):
        body_features(local[..., :2], names_of(CMU))
    bad = local.copy()
    bad[3, 2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        body_features(bad, names_of(CMU))


def _bvh_joints(path):
    names, parents, stack, pending = [], [], [], None
    with open(path) as fh:
        for line in fh:
            tok = line.split()
            if not tok:
                continue
            if tok[0] in ("ROOT", "JOINT"):
                names.append(tok[1])
                parents.append(stack[-1] if stack else -1)
                pending = len(names) - 1
            elif tok[0] == "End":
                pending = -1
            elif tok[0] == "{":
                stack.append(pending)
            elif tok[0] == "}":
                stack.pop()
            elif tok[0] == "MOTION":
                break
    return names, parents


@pytest.mark.skipif(not DATA.is_dir(), reason="shared mocap data (../shared/data/mocap) not present")
@pytest.mark.parametrize("clip,expect", [
    ("angry_13_000", {"upper_arm_l": "LeftArm", "shin_r": "RightLeg", "neck": "Neck", "hips": "Hips"}),
    ("cmu_131_01", {"upper_arm_l": "LeftShoulder", "thigh_r": "RightHip", "hand_l": "LeftWrist",
                    "neck": "lowerneck"}),
    ("acrnn_salsa_10", {"upper_arm_r": "rShldr", "thigh_l": "lThigh", "hips": "hip", "foot_l": "lFoot"}),
    ("cmu_iclone_02_01_walk", {"shin_l": "CC_Base_L_Calf", "hips": "CC_Base_Hip", "neck": "CC_Base_NeckTwist01",
                               "forearm_r": "CC_Base_R_Forearm"}),
])
def test_the_shared_rigs(clip, expect):
    names, parents = _bvh_joints(DATA / f"{clip}.bvh")
    j = canonical_joints(names, parents)
    assert not [k for k in REQUIRED if k not in j]
    for key, name in expect.items():
        assert names[j[key]] == name, key
