"""Skeleton-independent body features: compare clips of different rigs.

Extends the clip comparison of Eslitzbichler, "Modelling Character Motions on
Infinite-Dimensional Manifolds", §4.3, to clips of different skeletons.

Joint angles of two rigs are not comparable (different bones, rest poses, channel orders), but the
directions of the big body segments are.  :func:`canonical_joints` finds the canonical joints of a
humanoid rig from its bone names (case-insensitive patterns for CMU / cgspeed, Mixamo, Daz / Poser,
iClone Character Creator, 3ds Max Biped, Unity humanoid and Rigify deform names);
:func:`body_features` turns world joint positions into unit direction vectors of the canonical
segments expressed in the character's own heading frame, so that where the character stands, which
way it walks or turns, and how tall it is do not matter.

numpy only, never bpy: positions come from the caller (in Blender: pose bone heads in world space).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

__all__ = ["CANONICAL", "REQUIRED", "SEGMENTS", "body_features", "canonical_joints", "feature_names",
           "heading_frames", "split_side"]

# Canonical joints and, for each, regular expressions on the normalised base name (lower case,
# side token and separators removed), in priority order: the first pattern with any match wins and
# among its matches the joint nearest the root (lowest depth, then first in the list).
_LIMBS: dict[str, tuple[str, ...]] = {
    # "shoulder" is the clavicle on CMU / Mixamo rigs (LeftShoulder -> LeftArm) and the upper arm on
    # cgspeed CMU rigs (LeftCollar -> LeftShoulder -> LeftElbow): an arm name, when present, wins.
    "upper_arm": (r"upperarm|uparm|arm|armupper|shldr|humerus", r"shoulder"),
    "forearm": (r"forearm|lowerarm|loarm|armlower|radius|ulna", r"elbow"),
    "hand": (r"hand|wrist",),
    # cgspeed CMU: LeftHip is the thigh (LHipJoint is the pelvis bone leading to it)
    "thigh": (r"upleg|upperleg|legupper|thigh|femur", r"hip"),
    "shin": (r"leg|lowerleg|leglower|loleg|shin|calf|crus|tibia", r"knee"),
    "foot": (r"foot", r"ankle"),
}
_CENTRAL: dict[str, tuple[str, ...]] = {
    "hips": (r"hips?|pelvis", r"root"),
    "spine": (r"abdomen|lowerback|waist|spine0*1?|torso",),
    "chest": (r"chest\d*|upperchest|spine0*[23]|thorax",),
    "neck": (r"(lower)?neck(twist)?\d*",),
    "head": (r"head",),
}
SIDES = ("l", "r")
CANONICAL: tuple[str, ...] = tuple(_CENTRAL) + tuple(f"{limb}_{s}" for limb in _LIMBS for s in SIDES)
# joints body_features needs
REQUIRED: tuple[str, ...] = ("hips", "neck", "head") + tuple(
    f"{limb}_{s}" for s in SIDES for limb in ("upper_arm", "forearm", "hand", "thigh", "shin", "foot"))
# (feature name, from joint, to joint): unit direction vectors
SEGMENTS: tuple[tuple[str, str, str], ...] = (
    ("spine", "hips", "neck"),
    ("neck", "neck", "head"),
    ("upper_arm_l", "upper_arm_l", "forearm_l"),
    ("forearm_l", "forearm_l", "hand_l"),
    ("upper_arm_r", "upper_arm_r", "forearm_r"),
    ("forearm_r", "forearm_r", "hand_r"),
    ("thigh_l", "thigh_l", "shin_l"),
    ("shin_l", "shin_l", "foot_l"),
    ("thigh_r", "thigh_r", "shin_r"),
    ("shin_r", "shin_r", "foot_r"),
)

# words a one-letter side prefix may stand before ("lThigh", "rShldr", "lhand", "RHipJoint")
_PART_WORDS = ("thigh", "shin", "foot", "hand", "forearm", "shldr", "shoulder", "collar", "buttock", "arm",
               "uparm", "upleg", "upperarm", "upperleg", "lowerarm", "lowerleg", "leg", "hip", "knee", "ankle",
               "elbow", "wrist", "calf", "clavicle", "toe", "thumb", "index", "mid", "ring", "pinky", "finger",
               "eye", "breast", "ear")
_PREFIX = re.compile(r"^(cc_base|bip0*1|def|org|mch|jnt|bn|b|j)[ _.\-]+")
_SEP = re.compile(r"[ _.\-]+")


def split_side(name: str) -> tuple[str | None, str]:
    """A bone name's side and its normalised base name (lower case, no side, no separators).

    Parameters
    ----------
    name : str
        Bone name in any of the supported rig conventions.

    Returns
    -------
    side : {'l', 'r', None}
    base : str

    Examples
    --------
    >>> [split_side(n) for n in ("LeftUpLeg", "CC_Base_R_Calf", "lShldr", "thigh.L", "mixamorig:Hips")]
    [('l', 'upleg'), ('r', 'calf'), ('l', 'shldr'), ('l', 'thigh'), (None, 'hips')]
    """
    s = str(name).strip().lower()
    s = re.split(r"[:|]", s)[-1]  # namespaces: mixamorig:LeftArm, Armature|Hips
    s = _PREFIX.sub("", s)
    s = re.sub(r"[._]\d{3}$", "", s)  # Blender duplicates: thigh.L.001
    side: str | None = None
    if "left" in s:
        side, s = "l", s.replace("left", "", 1)
    elif "right" in s:
        side, s = "r", s.replace("right", "", 1)
    else:
        tokens = [t for t in _SEP.split(s) if t]
        if len(tokens) > 1 and any(t in SIDES for t in tokens):
            side = next(t for t in tokens if t in SIDES)
            tokens.remove(side)
            s = "_".join(tokens)
        elif len(s) > 1 and s[0] in SIDES and s[1:].startswith(_PART_WORDS):
            side, s = s[0], s[1:]
    return side, _SEP.sub("", s)


def _depths(n: int, parents: Sequence[int] | None) -> np.ndarray:
    if parents is None:
        return np.zeros(n, dtype=int)
    if len(parents) != n:
        raise ValueError(f"parents has {len(parents)} entries for {n} names")
    depth = np.full(n, -1, dtype=int)
    for i in range(n):
        chain, j = [], i
        while j >= 0 and depth[j] < 0 and j not in chain:
            chain.append(j)
            p = int(parents[j])
            j = p if 0 <= p < n else -1
        d = depth[j] if j >= 0 and depth[j] >= 0 else -1
        for k in reversed(chain):
            d += 1
            depth[k] = d
    return depth


def canonical_joints(names: Sequence[str], parents: Sequence[int] | None = None) -> dict[str, int]:
    """The canonical joints of a humanoid rig, found by bone name.

    Matching is by case-insensitive name patterns; when several bones match (``Neck``, ``Neck1``;
    ``LeftWrist``, ``lhand``) the one nearest the root wins.

    Parameters
    ----------
    names : sequence of str, length B
        Bone names.
    parents : sequence of int, length B, optional
        Index of each bone's parent, -1 for roots; without it, the first match in ``names`` wins
        (parent-first order for BVH files and Blender armatures).

    Returns
    -------
    dict of str to int
        Canonical joint -> index into ``names``, in :data:`CANONICAL` order, for the joints
        found: ``hips``, ``spine``, ``chest``, ``neck``, ``head`` and ``upper_arm_l``,
        ``forearm_l``, ``hand_l``, ``thigh_l``, ``shin_l``, ``foot_l`` (and ``_r``).

    Raises
    ------
    ValueError
        If ``parents`` has a different length than ``names``.
    """
    names = [str(n) for n in names]
    depth = _depths(len(names), parents)
    parsed = [split_side(n) for n in names]
    found: dict[str, int] = {}
    used: set[int] = set()

    def pick(patterns: tuple[str, ...], side: str | None) -> int | None:
        for pat in patterns:
            rx = re.compile(pat)
            hits = [i for i, (sd, base) in enumerate(parsed)
                    if sd == side and i not in used and rx.fullmatch(base)]
            if hits:
                return min(hits, key=lambda i: (depth[i], i))
        return None

    for key, patterns in _CENTRAL.items():
        i = pick(patterns, None)
        if i is not None:
            found[key] = i
            used.add(i)
    for limb, patterns in _LIMBS.items():
        for s in SIDES:
            i = pick(patterns, s)
            if i is not None:
                found[f"{limb}_{s}"] = i
                used.add(i)
    return {k: found[k] for k in CANONICAL if k in found}


def feature_names(height: bool = True) -> list[str]:
    """Column names of :func:`body_features`.

    Parameters
    ----------
    height : bool
        Include the ``hips_height`` column.

    Returns
    -------
    list of str
        ``<segment>.<side|forward|up>`` per segment of :data:`SEGMENTS`, then ``hips_height``.
    """
    out = [f"{seg}.{ax}" for seg, _, _ in SEGMENTS for ax in ("side", "forward", "up")]
    if height:
        out.append("hips_height")
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v), where=n > 1e-12)


def heading_frames(heads: np.ndarray, joints: dict[str, int], up_axis: int = 2) -> np.ndarray:
    """Per-frame orthonormal heading frame of the character.

    Left is the hips' left-right axis (right thigh -> left thigh) projected on the ground plane;
    where that is vertical (the character lies on its side), the shoulders' axis, else the last
    frame's heading is used.

    Parameters
    ----------
    heads : ndarray, shape (N, B, 3)
        World joint positions.
    joints : dict of str to int
        Canonical joints (:func:`canonical_joints`); needs hips, head, thighs and upper arms.
    up_axis : {0, 1, 2}
        World up axis (Blender: 2).

    Returns
    -------
    ndarray, shape (N, 3, 3)
        Rows: the character's left, forward, up, as world unit vectors.
    """
    heads = np.asarray(heads, dtype=float)
    up = np.zeros(3)
    up[up_axis] = 1.0

    def ground(v):
        return v - np.outer(v @ up, up)

    lat = ground(heads[:, joints["thigh_l"]] - heads[:, joints["thigh_r"]])
    size = np.linalg.norm(heads[:, joints["head"]] - heads[:, joints["hips"]], axis=1) + 1e-12
    weak = np.linalg.norm(lat, axis=1) < 1e-3 * size
    if weak.any():
        alt = ground(heads[:, joints["upper_arm_l"]] - heads[:, joints["upper_arm_r"]])
        lat[weak] = alt[weak]
        weak = np.linalg.norm(lat, axis=1) < 1e-3 * size
    if weak.any():
        default = np.roll(up, 1)  # any horizontal axis
        last = default
        for k in range(len(lat)):
            if weak[k]:
                lat[k] = last
            else:
                last = lat[k]
    left = _unit(lat)
    forward = np.cross(left, up)  # left x up = forward for a right-handed world
    frames = np.empty((len(left), 3, 3))
    frames[:, 0] = left
    frames[:, 1] = forward
    frames[:, 2] = up
    return frames


def body_features(heads: np.ndarray, names: Sequence[str], parents: Sequence[int] | None = None,
                  up_axis: int = 2, *, height: bool = True) -> np.ndarray:
    """Skeleton-independent features of a clip from its world joint positions.

    Columns (see :func:`feature_names`): for each segment of :data:`SEGMENTS` (spine hips->neck,
    neck->head, upper arm, forearm, thigh, shin left and right) its unit direction in the
    character's heading frame (left, forward, up; root yaw removed, see :func:`heading_frames`),
    3 columns each; then, with ``height``, the hips' height above the lowest foot joint of the whole
    clip divided by the leg length (median thigh + shin length, both legs).  Invariant to where the
    character stands, which way it faces or walks, and uniform scale; a right-handed world is
    assumed.

    Parameters
    ----------
    heads : ndarray, shape (N, B, 3)
        World positions of the B bones' heads per frame (any length unit).
    names : sequence of str, length B
        Bone names.
    parents : sequence of int, length B, optional
        Parent index per bone (-1 for roots).
    up_axis : {0, 1, 2}
        World up axis (Blender: 2).
    height : bool
        Append the normalised hips height.

    Returns
    -------
    ndarray, shape (N, F)
        F = 3 * len(SEGMENTS) (+ 1 with ``height``): unit directions and a height in leg lengths.

    Raises
    ------
    ValueError
        Naming the canonical joints that cannot be found in ``names``; on a shape mismatch, a bad
        ``up_axis`` or NaN / infinite positions.
    """
    heads = np.asarray(heads, dtype=float)
    if heads.ndim != 3 or heads.shape[2] != 3:
        raise ValueError(f"heads must be (frames, bones, 3), got shape {heads.shape}")
    if heads.shape[1] != len(names):
        raise ValueError(f"heads has {heads.shape[1]} bones but {len(names)} names were given")
    if up_axis not in (0, 1, 2):
        raise ValueError(f"up_axis must be 0, 1 or 2, got {up_axis}")
    joints = canonical_joints(names, parents)
    missing = [k for k in REQUIRED if k not in joints]
    if missing:
        raise ValueError(
            "cannot find the canonical joints " + ", ".join(missing) + " among the bone names ("
            + ", ".join(list(map(str, names))[:40]) + (" ..." if len(names) > 40 else "") + ")")
    if not np.all(np.isfinite(heads)):
        raise ValueError("joint positions contain NaN or infinite values")
    frames = heading_frames(heads, joints, up_axis)
    cols = []
    for _, a, b in SEGMENTS:
        d = _unit(heads[:, joints[b]] - heads[:, joints[a]])
        cols.append(np.einsum("nij,nj->ni", frames, d))
    out = np.concatenate(cols, axis=1)
    if height:
        leg = np.mean([np.linalg.norm(heads[:, joints[f"shin_{s}"]] - heads[:, joints[f"thigh_{s}"]], axis=1)
                       + np.linalg.norm(heads[:, joints[f"foot_{s}"]] - heads[:, joints[f"shin_{s}"]], axis=1)
                       for s in SIDES], axis=0)
        leg_length = float(np.median(leg))
        floor = float(min(heads[:, joints["foot_l"], up_axis].min(), heads[:, joints["foot_r"], up_axis].min()))
        h = (heads[:, joints["hips"], up_axis] - floor) / (leg_length if leg_length > 0 else 1.0)
        out = np.concatenate([out, h[:, None]], axis=1)
    return out
