"""Object-space error bounds (anim_signals.splines.object_space) against independent expectations:
a two-bone planar chain in closed form, a small forward kinematics written here (perturb every
channel by its tolerance in the worst direction, measure the virtual vertices), hypothesis."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anim_signals.splines import object_space as osp
from anim_signals.splines.object_space import (
    bone_reach,
    chain_bones,
    channel_roughness,
    joint_error_bound,
    joint_tolerances,
    tighten_chains,
)


def test_docstring_examples_run():
    assert doctest.testmod(osp).failed == 0


# ------------------------------------------------------------------------------------------
# A small forward kinematics, written for the test (Blender's conventions: a bone's matrix is
# parent @ rest offset @ (translate(location) @ rotation); the tail on the local Y axis)
# ------------------------------------------------------------------------------------------


def _axis_rot(axis: int, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    r = np.eye(3)
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    return r


def _euler(order: str, angles: np.ndarray) -> np.ndarray:
    """Blender's Euler: order 'XYZ' applies X first (R = Rz @ Ry @ Rx); ``angles`` by axis."""
    r = np.eye(3)
    for ch in order:
        axis = "XYZ".index(ch)
        r = _axis_rot(axis, angles[axis]) @ r
    return r


def _quat(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


class Rig:
    """A random rig: bones with rest offsets, rest orientations, lengths; channels per bone."""

    def __init__(self, rng: np.random.Generator, n_bones: int, *, object_channels: bool = False,
                 child_locations: bool = False):
        self.parents = np.array([-1] + [int(rng.integers(0, b)) for b in range(1, n_bones)])
        self.offset = rng.normal(size=(n_bones, 3)) * rng.uniform(0.2, 1.5, size=(n_bones, 1))
        self.rest = [_quat(rng.normal(size=4)) for _ in range(n_bones)]
        self.length = rng.uniform(0.05, 1.2, size=n_bones)
        self.bones: list[int] = []
        self.kinds: list[str] = []
        self.comp: list[int] = []
        self.orders: dict[int, str] = {}
        for b in range(n_bones):
            if b == 0 or (child_locations and rng.random() < 0.3):
                for i in range(3):
                    self._add(b, "location", i)
            if rng.random() < 0.5:
                self.orders[b] = "".join(rng.permutation(list("XYZ")))
                for i in sorted(rng.choice(3, size=int(rng.integers(1, 4)), replace=False)):
                    self._add(b, "rotation_euler", int(i))
            else:
                for i in range(4):
                    self._add(b, "rotation_quaternion", i)
        if object_channels:
            for i in range(3):
                self._add(-1, "location", i)
            for i in range(3):
                self._add(-1, "rotation_euler", i)
            self.orders[-1] = "XYZ"
        self.values = np.zeros(len(self.bones))

    def _add(self, b: int, kind: str, i: int) -> None:
        self.bones.append(b)
        self.kinds.append(kind)
        self.comp.append(i)

    def random_pose(self, rng: np.random.Generator, loc_scale: float = 0.3) -> np.ndarray:
        v = np.zeros(len(self.bones))
        for c, k in enumerate(self.kinds):
            if k == "location":
                v[c] = rng.normal() * loc_scale
            elif k == "rotation_euler":
                v[c] = rng.uniform(-np.pi, np.pi)
        for b in set(self.bones):
            cols = [c for c in range(len(self.bones)) if self.bones[c] == b and self.kinds[c] == "rotation_quaternion"]
            if cols:
                q = rng.normal(size=4)
                v[cols] = q / np.linalg.norm(q)
        return v

    def _local(self, b: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loc, eul, quat = np.zeros(3), np.zeros(3), np.array([1.0, 0, 0, 0])
        for c in range(len(self.bones)):
            if self.bones[c] != b:
                continue
            if self.kinds[c] == "location":
                loc[self.comp[c]] = values[c]
            elif self.kinds[c] == "rotation_euler":
                eul[self.comp[c]] = values[c]
            else:
                quat[self.comp[c]] = values[c]
        rot = _euler(self.orders[b], eul) if b in self.orders else _quat(quat)
        return loc, rot

    def vertices(self, values: np.ndarray, shell: float) -> np.ndarray:
        """Virtual vertices (B, 4, 3): head + shell along x, y, z, and the tail."""
        n = self.parents.size
        obj_loc, obj_rot = self._local(-1, values) if -1 in self.bones else (np.zeros(3), np.eye(3))
        heads = np.zeros((n, 3))
        rots = np.zeros((n, 3, 3))
        for b in range(n):  # parents come first
            p = self.parents[b]
            ph, pr = (heads[p], rots[p]) if p >= 0 else (obj_loc, obj_rot)
            loc, rot = self._local(b, values)
            heads[b] = ph + pr @ self.offset[b] + pr @ self.rest[b] @ loc
            rots[b] = pr @ self.rest[b] @ rot
        local = np.array([[shell, 0, 0], [0, shell, 0], [0, 0, shell]], dtype=float)
        out = np.empty((n, 4, 3))
        for b in range(n):
            pts = np.vstack([local, [0.0, self.length[b], 0.0]])
            out[b] = heads[b] + pts @ rots[b].T
        return out

    def rest_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Rest heads and tails in object space (no pose, no object transform)."""
        rest_values = np.zeros(len(self.bones))
        for c, k in enumerate(self.kinds):
            if k == "rotation_quaternion" and self.comp[c] == 0:
                rest_values[c] = 1.0
        v = self.vertices(rest_values, 0.0)
        return v[:, 0], v[:, 3]


def _worst_displacement(rig: Rig, values: np.ndarray, tol: np.ndarray, shell: float, rng) -> float:
    """The largest virtual-vertex displacement over perturbations of every channel by +-tol, signs
    from the Jacobian (worst first-order direction per vertex), plus random signs."""
    base = rig.vertices(values, shell).reshape(-1, 3)
    m = values.size
    h = 1e-7
    jac = np.empty((base.shape[0], 3, m))
    for c in range(m):
        dv = values.copy()
        dv[c] += h
        jac[:, :, c] = (rig.vertices(dv, shell).reshape(-1, 3) - base) / h
    candidates = []
    for v in range(base.shape[0]):
        scaled = jac[v] * tol  # (3, m)
        u, _, _ = np.linalg.svd(scaled)
        for direction in (u[:, 0], -u[:, 0], *np.eye(3), *(-np.eye(3))):
            candidates.append(np.sign(direction @ jac[v]))
    candidates += [rng.choice([-1.0, 1.0], size=m) for _ in range(20)]
    worst = 0.0
    for signs in candidates:
        signs = np.where(signs == 0, 1.0, signs)
        moved = rig.vertices(values + signs * tol, shell).reshape(-1, 3)
        worst = max(worst, float(np.linalg.norm(moved - base, axis=1).max()))
    return worst


def _max_translation(rig: Rig, poses: list[np.ndarray]) -> np.ndarray:
    out = np.zeros(rig.parents.size)
    for b in range(rig.parents.size):
        cols = [c for c in range(len(rig.bones)) if rig.bones[c] == b and rig.kinds[c] == "location"]
        if cols:
            out[b] = max(float(np.linalg.norm(p[cols])) for p in poses)
    return out


# ------------------------------------------------------------------------------------------
# Closed form
# ------------------------------------------------------------------------------------------


def test_two_bone_planar_chain_closed_form():
    """Bones of lengths a and b along Y, each rotating about Z: two groups on one path, X/2 each;
    the tolerances are X / (2 (a + b)) and X / (2 b), and a straight chain bent by both errors the
    same way moves its tail by X to first order."""
    a, b, x, shell = 2.0, 1.0, 0.01, 0.3
    heads = [[0, 0, 0], [0, a, 0]]
    tails = [[0, a, 0], [0, a + b, 0]]
    tol = joint_tolerances([-1, 0], heads, tails, [0, 1], ["rotation_euler", "rotation_euler"], x, shell)
    np.testing.assert_allclose(tol, [x / (2 * (a + b)), x / (2 * b)])
    np.testing.assert_allclose(bone_reach([-1, 0], heads, tails, shell), [a + b, b])
    d0, d1 = tol
    tip = a * np.array([np.sin(d0), np.cos(d0) - 1]) + b * np.array([np.sin(d0 + d1), np.cos(d0 + d1) - 1])
    moved = np.linalg.norm(tip)
    assert moved <= x
    assert moved > 0.999 * x  # the bound is tight on this chain
    bound = joint_error_bound([-1, 0], heads, tails, [0, 1], ["rotation_euler"] * 2, tol, shell)
    np.testing.assert_allclose(bound, [d0 * a, x])  # bone 0's own vertices: its tail at a


def test_shell_distance_counts_when_longer_than_the_bone():
    # a short bone (0.1) with a 0.5 shell: its vertices are 0.5 from its head
    tol = joint_tolerances([-1], [[0, 0, 0]], [[0, 0.1, 0]], [0], ["rotation_euler"], 0.01, 0.5)
    np.testing.assert_allclose(tol, [0.01 / 0.5])


def test_quaternion_and_location_groups():
    # one bone: location (3) and quaternion (4) share X equally; reach 1
    tol = joint_tolerances([-1], [[0, 0, 0]], [[0, 1, 0]], [0] * 7, ["location"] * 3 + ["rotation_quaternion"] * 4, 0.02, 0.1)
    np.testing.assert_allclose(tol[:3], 0.01 / np.sqrt(3))
    np.testing.assert_allclose(tol[3:], np.sin(0.01 / 2) / 2)  # ~ angle / 4


def test_other_kinds_keep_the_given_tolerance_and_shorter_branches_share_what_is_left():
    # a root with a long branch (3 bones) and a short one (1 bone)
    parents = [-1, 0, 1, 2, 0]
    heads = [[0, 0, 0], [0, 1, 0], [0, 2, 0], [0, 3, 0], [1, 0, 0]]
    tails = [[0, 1, 0], [0, 2, 0], [0, 3, 0], [0, 4, 0], [2, 0, 0]]
    bones = [0, 1, 2, 3, 4, 2]
    kinds = ["rotation_euler"] * 5 + ["custom"]
    tol = joint_tolerances(parents, heads, tails, bones, kinds, 0.04, 0.03, other_tolerance=0.7)
    assert tol[5] == 0.7
    bound = joint_error_bound(parents, heads, tails, bones, kinds, tol, 0.03)
    # the long path: 4 x X/4; the short branch gets what the root left (3 X/4) for its one bone,
    # and the root's rotation moves it by its angle (X/4 over the root's reach, 4) times 2
    np.testing.assert_allclose(tol[4], 0.03)
    np.testing.assert_allclose(bound[[3, 4]], [0.04, 0.03 + 0.01 / 4 * 2])


# ------------------------------------------------------------------------------------------
# Forward kinematics: perturb every channel by its tolerance, the vertices stay within X
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_random_rigs_stay_within_the_target_under_forward_kinematics(seed):
    rng = np.random.default_rng(seed)
    rig = Rig(rng, int(rng.integers(2, 7)), object_channels=seed % 2 == 1, child_locations=seed % 3 == 0)
    heads, tails = rig.rest_pose()
    x, shell = float(rng.uniform(0.005, 0.05)), float(rng.uniform(0.01, 0.5))
    poses = [rig.random_pose(rng) for _ in range(3)]
    max_t = _max_translation(rig, poses)
    tol = joint_tolerances(rig.parents, heads, tails, rig.bones, rig.kinds, x, shell, max_translation=max_t)
    assert np.all(tol > 0)
    bound = joint_error_bound(rig.parents, heads, tails, rig.bones, rig.kinds, tol, shell, max_translation=max_t)
    assert bound.max() <= x * (1 + 1e-9)
    for values in poses:
        worst = _worst_displacement(rig, values, tol, shell, rng)
        assert worst <= x * (1 + 1e-9), (worst, x)


def test_straight_chain_reaches_most_of_the_target():
    """Not vacuous: a straight chain bending about one axis moves its tail by nearly X."""
    n, x = 5, 0.01
    heads = np.array([[0, i, 0] for i in range(n)], dtype=float)
    tails = heads + [0, 1, 0]
    tol = joint_tolerances(np.arange(n) - 1, heads, tails, range(n), ["rotation_euler"] * n, x, 0.03)
    # all bend about Z (planar): tail of the last bone
    angles = np.cumsum(tol)
    pts = np.cumsum(np.column_stack([-np.sin(angles), np.cos(angles)]), axis=0)
    moved = np.linalg.norm(pts[-1] - [0, n])
    assert 0.99 * x < moved <= x


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_bones=st.integers(1, 12),
    x=st.floats(1e-4, 1.0),
    shell=st.floats(0.0, 2.0),
)
def test_bound_of_the_tolerances_is_within_target(seed, n_bones, x, shell):
    rng = np.random.default_rng(seed)
    rig = Rig(rng, n_bones, object_channels=bool(seed % 2), child_locations=bool(seed % 3 == 0))
    heads, tails = rig.rest_pose()
    tol = joint_tolerances(rig.parents, heads, tails, rig.bones, rig.kinds, x, shell)
    assert np.all(np.isfinite(tol)) and np.all(tol > 0)
    bound = joint_error_bound(rig.parents, heads, tails, rig.bones, rig.kinds, tol, shell)
    assert bound.max() <= x * (1 + 1e-9)
    # a chain uses its whole budget at its last bone (quaternions: sin(a/2) is just below a/2;
    # location errors, at most X, are added to the offsets, so X is small beside the bones)
    x = x / 100.0
    chain = np.arange(n_bones) - 1
    heads = np.column_stack([np.zeros(n_bones), np.arange(n_bones), np.zeros(n_bones)]).astype(float)
    tails = heads + [0.0, 1.0, 0.0]
    cb = [min(b, n_bones - 1) for b in rig.bones]
    tol = joint_tolerances(chain, heads, tails, cb, rig.kinds, x, shell)
    bound = joint_error_bound(chain, heads, tails, cb, rig.kinds, tol, shell)
    assert x * 0.99 <= bound[-1] <= x * (1 + 1e-9)


# ------------------------------------------------------------------------------------------
# Shares weighted by roughness
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_rough_shares_keep_the_bound_and_forward_kinematics_within_the_target(seed):
    rng = np.random.default_rng(100 + seed)
    rig = Rig(rng, int(rng.integers(2, 9)), object_channels=seed % 2 == 1, child_locations=seed % 3 == 0)
    heads, tails = rig.rest_pose()
    x, shell = float(rng.uniform(0.005, 0.05)), float(rng.uniform(0.01, 0.5))
    rough = rng.lognormal(-6.0, 2.0, len(rig.kinds))  # spread far beyond SHARE_WEIGHT_RANGE
    tol = joint_tolerances(rig.parents, heads, tails, rig.bones, rig.kinds, x, shell, roughness=rough)
    even = joint_tolerances(rig.parents, heads, tails, rig.bones, rig.kinds, x, shell)
    assert np.all(tol > 0) and not np.allclose(tol, even)
    assert joint_error_bound(rig.parents, heads, tails, rig.bones, rig.kinds, tol, shell).max() <= x * (1 + 1e-9)
    for values in [rig.random_pose(rng) for _ in range(3)]:
        assert _worst_displacement(rig, values, tol, shell, rng) <= x * (1 + 1e-9)


def test_the_roughest_group_of_a_chain_gets_the_largest_share():
    n, x = 4, 0.01
    heads = np.array([[0, i, 0] for i in range(n)], dtype=float)
    tails = heads + [0, 1, 0]
    parents, bones, kinds = np.arange(n) - 1, list(range(n)), ["rotation_euler"] * n
    even = joint_tolerances(parents, heads, tails, bones, kinds, x, 0.03)
    # equally rough against the equal split: the equal split again
    same = joint_tolerances(parents, heads, tails, bones, kinds, x, 0.03, roughness=3.0 * even)
    np.testing.assert_allclose(same, even, rtol=1e-12)
    # bone 0 four times as rough as the others: a weight of 4 ** SHARE_WEIGHT_POWER against their 1,
    # shares summing to X
    rough = even.copy()
    rough[0] *= 4.0
    tol = joint_tolerances(parents, heads, tails, bones, kinds, x, 0.03, roughness=rough)
    reach = bone_reach(parents, heads, tails, 0.03)
    w = 4.0 ** osp.SHARE_WEIGHT_POWER
    np.testing.assert_allclose(tol * reach, np.array([w, 1, 1, 1]) * x / (w + 3), rtol=1e-12)
    assert w > 1.0
    # far rougher: the weight stops at SHARE_WEIGHT_RANGE times the median group's
    rough[0] *= 1e12
    tol = joint_tolerances(parents, heads, tails, bones, kinds, x, 0.03, roughness=rough)
    w = osp.SHARE_WEIGHT_RANGE
    np.testing.assert_allclose(tol * reach, np.array([w, 1, 1, 1]) * x / (w + 3), rtol=1e-12)


def test_channel_roughness_against_a_polyfit_reference():
    rng = np.random.default_rng(5)
    n, span = 60, osp.ROUGHNESS_SPAN
    x = np.arange(n, dtype=float)
    values = np.column_stack([0.01 * x**3 - x, np.sin(x / 3) + 0.01 * rng.standard_normal(n),
                              rng.standard_normal(n), np.zeros(n)])
    got = channel_roughness(values)
    expected = []
    for col in values.T:
        worst = []
        for w in range(n - span + 1):
            seg = col[w:w + span]
            t = np.arange(span, dtype=float)
            worst.append(np.abs(seg - np.polyval(np.polyfit(t, seg, 3), t)).max())
        expected.append(np.percentile(worst, 90))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)
    assert got[0] < 1e-9 and got[3] == 0.0 and got[2] > got[1] > 0.0
    assert np.all(channel_roughness(values[:span - 1]) == 0.0)
    with pytest.raises(ValueError):
        channel_roughness(values[:, 0])
    with pytest.raises(ValueError):
        joint_tolerances([-1], [[0, 0, 0]], [[0, 1, 0]], [0], ["rotation_euler"], 0.01, 0.03, roughness=[1.0, 2.0])


# ------------------------------------------------------------------------------------------
# Tightening chains; bad input
# ------------------------------------------------------------------------------------------


def test_tighten_chains_halves_the_bones_ancestors_and_object_only():
    parents = [-1, 0, 1, 0]
    bones = [-1, 0, 1, 2, 3, 2]
    kinds = ["location", "rotation_euler", "rotation_euler", "rotation_quaternion", "rotation_euler", "custom"]
    tol = np.ones(6)
    new, changed = tighten_chains(tol, parents, bones, [2], channel_kinds=kinds)
    assert changed.tolist() == [True, True, True, True, False, False]
    np.testing.assert_allclose(new, [0.5, 0.5, 0.5, 0.5, 1.0, 1.0])
    new, changed = tighten_chains(tol, parents, bones, [], factor=0.25)
    assert not changed.any()
    assert chain_bones(parents, [2, 3]).tolist() == [0, 1, 2, 3]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="same bones"):
        joint_tolerances([-1, 0], [[0, 0, 0]], [[0, 1, 0]], [0], ["location"], 0.01, 0.03)
    with pytest.raises(ValueError, match="cycle"):
        joint_tolerances([1, 0], np.zeros((2, 3)), np.ones((2, 3)), [0], ["location"], 0.01, 0.03)
    with pytest.raises(ValueError, match="positive"):
        joint_tolerances([-1], np.zeros((1, 3)), np.ones((1, 3)), [0], ["location"], 0.0, 0.03)
    with pytest.raises(ValueError, match="out of range"):
        joint_tolerances([-1], np.zeros((1, 3)), np.ones((1, 3)), [3], ["location"], 0.01, 0.03)
    with pytest.raises(ValueError, match="factor"):
        tighten_chains([1.0], [-1], [0], [0], factor=1.5)


def test_tighten_chains_per_bone_factors_take_the_smallest_on_shared_ancestors():
    parents = [-1, 0, 1, 0]
    tol, changed = tighten_chains(np.ones(4), parents, [0, 1, 2, 3], [2, 3], factor=[0.6, 0.3])
    np.testing.assert_allclose(tol, [0.3, 0.6, 0.6, 0.3])
    assert changed.all()
    with pytest.raises(ValueError, match="one per bone"):
        tighten_chains(np.ones(4), parents, [0, 1, 2, 3], [2, 3], factor=[0.5])
