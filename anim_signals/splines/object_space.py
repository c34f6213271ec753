"""Object-space error bounds for a rig: per-channel tolerances that keep every joint within X.

The anchor is ACL (the Animation Compression Library used in Unreal): the error a viewer sees is
measured in object space on *virtual vertices*, points at a shell distance from each bone. Here a
bone's virtual vertices are its head moved by the shell distance both ways along each of its three
local axes, and its tail. Given the rig's rest pose and which channels are fitted, :func:`joint_tolerances`
returns per-channel tolerances such that, to first order, no virtual vertex of any bone moves by
more than a target distance ``X`` at any frame when every channel stays within its tolerance.

The bound
---------
A fitted channel's error moves points of its bone and of every descendant:

* Euler angles: an error ``d`` in one angle rotates the bone by exactly ``d`` (the other two angles
  are fixed rotations on either side); errors in several angles add (triangle inequality on
  rotation angles). A rotation by ``theta`` about the bone's head moves a point at distance ``R``
  by ``2 R sin(theta / 2) <= theta R``.
* Quaternion components (Blender normalises the quaternion): an error vector ``e`` of a unit
  quaternion turns it by at most ``arcsin |e|``, the rotation by twice that; four components each
  within ``d`` give ``|e| <= 2 d``, a rotation of about ``4 d``.
* Location components: the bone and all its descendants move by the error vector, ``sqrt(k) d``
  for ``k`` components each within ``d`` (``sqrt(3) d`` for three).
* Scale components (first order only): a point at distance ``R`` moves by at most ``d R``.

The distance ``R`` from a bone's head to a virtual vertex of a descendant changes with the pose, so
it is bounded by the chain: the sum of the rest offsets from each bone's head to its child's head
along the path (plus the largest animated location of the bones in between, and the location
tolerance itself) and the vertex's own distance from its bone's head (the shell distance or the
bone's length). ``reach[b]`` is the largest such distance over ``b``'s subtree. Errors along a
chain add: the error at a vertex is at most the sum, over its bone and every ancestor, of each
animated *group* (a bone's Euler, quaternion, location or scale channels) times its reach.

Distributing X
--------------
Every root-to-leaf path is a sequence of groups; the budget ``X`` is shared along paths top-down:
a group gets what its ancestors left of ``X``, divided by the largest number of groups on any path
from it down to a leaf (itself included). On the path with the most groups every group gets the
same share ``X / n``; a shorter branch shares what is left among its own groups, so the shares sum
to exactly ``X`` along every path. A group's share ``S`` (a displacement) then becomes a rotation
angle ``S / reach`` (Euler: split equally over its angles; quaternion: ``sin(angle / 2) / sqrt(k)``
per component), a translation ``S / sqrt(k)`` per location component, or a scale ``S / reach``.

Given each channel's roughness (:func:`channel_roughness`: how far it strays from a cubic over a
few samples), the split is weighted instead of equal: a group's weight is how rough its roughest
channel is against the tolerance an equal split gives it, relative to the median group, to the
power ``SHARE_WEIGHT_POWER`` and kept within ``SHARE_WEIGHT_RANGE``; every path shares its budget
in proportion to its groups' weights. A trunk bone whose small angle moves the whole body then gets
more than a finger, if it needs it. On the iClone walk (171 frames x 306 curves, 1 cm) Fewest Keys
keeps 10 % fewer keys this way.

Channels on the armature object itself (bone index ``-1``) act as a root above every bone at the
origin. Any other kind of channel (custom properties, constraint influences...) has no bound: it
keeps the tolerance given as ``other_tolerance``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "BOUNDED_KINDS",
    "bone_reach",
    "chain_bones",
    "channel_roughness",
    "joint_error_bound",
    "joint_tolerances",
    "tighten_chains",
]

EULER_KIND, QUATERNION_KIND, LOCATION_KIND, SCALE_KIND = "EULER", "QUATERNION", "LOCATION", "SCALE"
_KIND_NAMES = {
    "rotation_euler": EULER_KIND,
    "euler": EULER_KIND,
    "rotation_quaternion": QUATERNION_KIND,
    "quaternion": QUATERNION_KIND,
    "location": LOCATION_KIND,
    "scale": SCALE_KIND,
}
BOUNDED_KINDS = (EULER_KIND, QUATERNION_KIND, LOCATION_KIND, SCALE_KIND)
"""The kinds :func:`joint_tolerances` bounds (also accepted as Blender property names, any case)."""
_GROUPS = BOUNDED_KINDS
# With roughness: a group's weight in the split is its roughness ratio to the median group's to
# this power, kept within SHARE_WEIGHT_RANGE of it. The full ratio (power 1) equalises how hard the
# curves are to key but moves too much of the budget on 31-bone CMU rigs (2-8 % more keys there at
# 1 cm, 10 % fewer on the 102-bone iClone rigs); the square root keeps most of the gain on the large
# rigs and breaks even on the small ones (scripts/benchmark_fit_object_space.py).
SHARE_WEIGHT_POWER = 0.5
SHARE_WEIGHT_RANGE = 4.0
# Window of :func:`channel_roughness` (samples): about the length of a shared-key segment.
ROUGHNESS_SPAN = 8


def _kind(name: str) -> str | None:
    key = str(name).lower()
    return _KIND_NAMES.get(key) or (str(name).upper() if str(name).upper() in BOUNDED_KINDS else None)


def _rig(parents, heads, tails) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """Checked arrays and a parent-first order of the bones."""
    parents = np.asarray(parents, dtype=np.int64).reshape(-1)
    heads = np.asarray(heads, dtype=np.float64).reshape(-1, 3)
    tails = np.asarray(tails, dtype=np.float64).reshape(-1, 3)
    n = parents.size
    if heads.shape[0] != n or tails.shape[0] != n:
        raise ValueError(f"parents ({n}), heads ({heads.shape[0]}) and tails ({tails.shape[0]}) must describe the same bones")
    if n and (parents.min() < -1 or parents.max() >= n):
        raise ValueError("a parent index is out of range (-1 for a root)")
    if not (np.isfinite(heads).all() and np.isfinite(tails).all()):
        raise ValueError("bone heads and tails must be finite")
    order: list[int] = []
    children: list[list[int]] = [[] for _ in range(n)]
    for b, p in enumerate(parents):
        if p >= 0:
            children[p].append(b)
    stack = [b for b in range(n) if parents[b] < 0]
    while stack:
        b = stack.pop()
        order.append(b)
        stack.extend(children[b])
    if len(order) != n:
        raise ValueError("the parent indices contain a cycle")
    return parents, heads, tails, order


def _offsets(parents, heads, extra) -> np.ndarray:
    """Upper bound of each bone's head distance from its parent's head (from the origin for roots)."""
    ref = np.where(parents[:, None] >= 0, heads[np.maximum(parents, 0)], 0.0)
    return np.linalg.norm(heads - ref, axis=1) + extra


def bone_reach(parents, heads, tails, shell_distance: float, *, max_translation=None) -> np.ndarray:
    """The farthest any virtual vertex of a bone's subtree can be from the bone's head, any pose.

    Parameters
    ----------
    parents : array_like of int, shape (B,)
        Parent index of each bone, -1 for roots.
    heads, tails : array_like, shape (B, 3)
        Rest-pose head and tail of each bone in object space (scene or armature units).
    shell_distance : float
        Distance of the virtual vertices from each bone's head along its local axes.
    max_translation : array_like, shape (B,), optional
        Largest length of each bone's animated location over the clip (added to its offset from
        its parent's head).

    Returns
    -------
    ndarray, shape (B,)
        Chain bound: rest offsets from head to child head summed down the subtree, plus the
        farthest own vertex (``max(shell_distance, bone length)``) of the farthest bone.

    Examples
    --------
    >>> bone_reach([-1, 0], [[0, 0, 0], [0, 0, 2]], [[0, 0, 2], [0, 0, 3]], 0.5).tolist()
    [3.0, 1.0]
    """
    parents, heads, tails, order = _rig(parents, heads, tails)
    extra = np.zeros(parents.size) if max_translation is None else np.asarray(max_translation, dtype=np.float64)
    offsets = _offsets(parents, heads, extra)
    own = np.maximum(float(shell_distance), np.linalg.norm(tails - heads, axis=1))
    reach = own.copy()
    for b in reversed(order):  # children before parents
        p = parents[b]
        if p >= 0:
            reach[p] = max(reach[p], offsets[b] + reach[b])
    return reach


def _groups(bones, kinds, n_bones: int):
    """Per channel its group index (bone slot, kind) or -1; bone slot n_bones is the object."""
    bones = np.asarray(bones, dtype=np.int64).reshape(-1)
    if len(kinds) != bones.size:
        raise ValueError(f"{bones.size} channel bones but {len(kinds)} channel kinds")
    if bones.size and (bones.min() < -1 or bones.max() >= n_bones):
        raise ValueError("a channel's bone index is out of range (-1 for the object itself)")
    slot = np.where(bones < 0, n_bones, bones)
    group = np.full(bones.size, -1, dtype=np.int64)
    for c, k in enumerate(kinds):
        kind = _kind(k)
        if kind is not None:
            group[c] = slot[c] * len(_GROUPS) + _GROUPS.index(kind)
    return slot, group


def _extended(parents, heads, tails, shell_distance, max_translation, location_slack: np.ndarray):
    """The rig with the object as a root bone at the origin above every bone (slot B);
    ``location_slack`` (B,) is added to each bone's offset from its parent."""
    n = parents.size
    p_ext = np.append(np.where(parents < 0, n, parents), -1)
    h_ext = np.vstack([heads, np.zeros((1, 3))])
    t_ext = np.vstack([tails, np.zeros((1, 3))])
    extra = np.zeros(n + 1)
    if max_translation is not None:
        extra[:n] = np.asarray(max_translation, dtype=np.float64).reshape(-1)
    extra[:n] += location_slack
    reach = bone_reach(p_ext, h_ext, t_ext, shell_distance, max_translation=extra)
    return p_ext, reach


def joint_tolerances(
    parents: Sequence[int] | np.ndarray,
    heads: np.ndarray,
    tails: np.ndarray,
    channel_bones: Sequence[int] | np.ndarray,
    channel_kinds: Sequence[str],
    max_error: float,
    shell_distance: float,
    *,
    max_translation: np.ndarray | None = None,
    other_tolerance: float | np.ndarray = np.inf,
    roughness: np.ndarray | None = None,
) -> np.ndarray:
    """Per-channel tolerances that keep every virtual vertex within ``max_error`` (first order).

    Parameters
    ----------
    parents : array_like of int, shape (B,)
        Parent index of each bone (-1 for roots), any order.
    heads, tails : array_like, shape (B, 3)
        Rest-pose heads and tails in object space, in the units of ``max_error``.
    channel_bones : array_like of int, shape (M,)
        The bone each fitted channel animates; -1 for channels of the object itself.
    channel_kinds : sequence of str, length M
        ``'rotation_euler'``, ``'rotation_quaternion'``, ``'location'``, ``'scale'`` (or the core's
        kinds ``EULER``, ``QUATERNION``, ``LOCATION``, ``SCALE``); anything else is not bounded.
    max_error : float
        The target X: the largest displacement of any virtual vertex, in scene units.
    shell_distance : float
        Distance of the virtual vertices from each bone's head along its local axes (ACL's shell
        distance, e.g. 3 cm in scene units).
    max_translation : array_like, shape (B,), optional
        Largest length of each bone's animated location over the clip (a translated bone's
        descendants can be that much farther away).
    other_tolerance : float or array_like of shape (M,)
        Tolerance of channels of other kinds (default inf: whatever the caller chooses).
    roughness : array_like, shape (M,), optional
        How hard each channel is to key, in channel units (:func:`channel_roughness`). Without it
        every group on a path gets an equal share of ``max_error``; with it a group's share grows
        with how rough its channels are against the tolerance an equal share would give them
        (that ratio to the median group's, to the power ``SHARE_WEIGHT_POWER``, kept between
        ``1 / SHARE_WEIGHT_RANGE`` and ``SHARE_WEIGHT_RANGE``), so
        the curves that would need the most keys get more of the budget. The shares still sum to
        at most ``max_error`` along every path: the bound holds either way.

    Returns
    -------
    ndarray, shape (M,)
        Tolerances in channel units: radians for Euler angles, quaternion units, scene units for
        location, scale factor. See the module docstring for how ``max_error`` is shared.

    Examples
    --------
    A two-bone chain of length 1 + 1 rotating about X: three groups on the one path
    (root location, root rotation, child rotation), each gets a third of X.

    >>> tol = joint_tolerances([-1, 0], [[0, 0, 0], [0, 1, 0]], [[0, 1, 0], [0, 2, 0]],
    ...                        [0, 0, 0, 0, 1], ["location"] * 3 + ["rotation_euler"] * 2, 0.03, 0.01)
    >>> np.round(tol, 5).tolist()  # location: 0.01 / sqrt(3); angles: 0.01 / reach (2 and 1)
    [0.00577, 0.00577, 0.00577, 0.005, 0.01]
    """
    if not (np.isfinite(max_error) and max_error > 0.0):
        raise ValueError("max_error must be positive and finite")
    if not (np.isfinite(shell_distance) and shell_distance >= 0.0):
        raise ValueError("shell_distance must be non-negative and finite")
    parents, heads, tails, _ = _rig(parents, heads, tails)
    n = parents.size
    slot, group = _groups(channel_bones, channel_kinds, n)
    m = slot.size
    out = np.broadcast_to(np.asarray(other_tolerance, dtype=np.float64), (m,)).copy()
    if not (group >= 0).any():
        return out
    ng = len(_GROUPS)
    present = np.zeros((n + 1, ng), dtype=bool)
    count = np.zeros((n + 1, ng), dtype=np.int64)
    for g in group[group >= 0]:
        present[g // ng, g % ng] = True
        count[g // ng, g % ng] += 1
    # A bone's location error moves it away from its parent: by at most max_error.
    slack = np.where(present[:n, _GROUPS.index(LOCATION_KIND)], float(max_error), 0.0)
    p_ext, reach = _extended(parents, heads, tails, shell_distance, max_translation, slack)
    _, _, _, order = _rig(p_ext, np.zeros((n + 1, 3)), np.zeros((n + 1, 3)))
    weight = present.astype(np.float64)  # (bone slot, kind): each present group's weight
    share = _shares(p_ext, order, weight, float(max_error))
    out = _to_channels(out, share, reach, slot, group, count)
    if roughness is not None:
        rough = np.asarray(roughness, dtype=np.float64).reshape(-1)
        if rough.size != m:
            raise ValueError(f"{m} channels but {rough.size} roughness values")
        bounded = group >= 0
        # how rough each channel is against its equal-share tolerance; a group is as hard as its hardest channel
        ratio = np.where(bounded & np.isfinite(rough) & (out > 0), np.abs(rough) / np.maximum(out, 1e-300), 0.0)
        hardest = np.zeros(weight.size)
        np.maximum.at(hardest, group[bounded], ratio[bounded])
        hardest = hardest.reshape(weight.shape)
        typical = np.median(hardest[present]) if present.any() else 0.0
        if typical > 0.0:
            rel = np.clip((hardest / typical) ** SHARE_WEIGHT_POWER, 1.0 / SHARE_WEIGHT_RANGE, SHARE_WEIGHT_RANGE)
            share = _shares(p_ext, order, np.where(present, rel, 0.0), float(max_error))
            out = _to_channels(
                np.broadcast_to(np.asarray(other_tolerance, dtype=np.float64), (m,)).copy(),
                share, reach, slot, group, count)
    return out


def _shares(p_ext: np.ndarray, order: list[int], weight: np.ndarray, max_error: float) -> np.ndarray:
    """Each group's displacement share (bone slot, kind), ``max_error`` split along every path in
    proportion to the groups' weights, top-down (see the module docstring)."""
    own = weight.sum(axis=1)
    # depth[b]: the heaviest path from b (its own groups included) down to a leaf.
    depth = own.copy()
    below = np.zeros(own.size)
    for b in reversed(order):
        depth[b] = own[b] + below[b]
        p = p_ext[b]
        if p >= 0:
            below[p] = max(below[p], depth[b])
    left = np.full(own.size, max_error)  # what the ancestors left, per bone
    unit = np.zeros(own.size)  # share per unit of weight on bone b
    for b in order:
        p = p_ext[b]
        if p >= 0:
            left[b] = left[p] - own[p] * unit[p]
        unit[b] = left[b] / depth[b] if depth[b] > 0 else 0.0
    return weight * unit[:, None]


def _to_channels(out: np.ndarray, share: np.ndarray, reach: np.ndarray, slot: np.ndarray, group: np.ndarray,
                 count: np.ndarray) -> np.ndarray:
    """The groups' displacement shares as tolerances in each channel's own units."""
    ng = len(_GROUPS)
    for c in np.flatnonzero(group >= 0):
        b, ki = int(slot[c]), int(group[c] % ng)
        k = _GROUPS[ki]
        s, r, kcount = share[b, ki], max(reach[b], 1e-300), count[b, ki]
        if k == EULER_KIND:
            out[c] = s / r / kcount
        elif k == QUATERNION_KIND:
            out[c] = np.sin(min(s / r, np.pi) / 2.0) / np.sqrt(kcount)
        elif k == LOCATION_KIND:
            out[c] = s / np.sqrt(kcount)
        else:
            out[c] = s / r
    return out


def channel_roughness(values: np.ndarray, span: int = ROUGHNESS_SPAN) -> np.ndarray:
    """How far each channel strays from a cubic over ``span`` samples: a measure of how hard it is to key.

    The residual of a least-squares cubic over every window of ``span`` consecutive samples, its
    largest absolute value per window, and the 90th percentile of that over the windows (robust to
    a few spikes). A channel whose roughness is well below its tolerance can be keyed every
    ``span`` samples or sparser.

    Parameters
    ----------
    values : array_like, shape (N, M)
        Samples of M channels (Euler angles unwrapped).
    span : int
        Window length in samples (at least 5).

    Returns
    -------
    ndarray, shape (M,)
        In each channel's units; 0 for clips shorter than ``span``.

    Examples
    --------
    >>> x = np.arange(40.0)
    >>> r = channel_roughness(np.stack([x ** 3 / 1e3, np.sin(x)], axis=1))
    >>> bool(r[0] < 1e-9 < r[1])
    True
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError("values must be (samples, channels)")
    if span < 5:
        raise ValueError("span must be at least 5 samples")
    n, m = values.shape
    if n < span:
        return np.zeros(m)
    t = np.linspace(-1.0, 1.0, span)
    basis = np.vander(t, 4)
    # residual maker: I - B (B^T B)^-1 B^T, applied to every window at once
    resid = np.eye(span) - basis @ np.linalg.pinv(basis)
    windows = np.lib.stride_tricks.sliding_window_view(values, span, axis=0)  # (N - span + 1, M, span)
    worst = np.abs(np.einsum("wms,ts->wmt", windows, resid)).max(axis=2)
    return np.percentile(worst, 90, axis=0)


def joint_error_bound(
    parents: Sequence[int] | np.ndarray,
    heads: np.ndarray,
    tails: np.ndarray,
    channel_bones: Sequence[int] | np.ndarray,
    channel_kinds: Sequence[str],
    tolerances: np.ndarray,
    shell_distance: float,
    *,
    max_translation: np.ndarray | None = None,
) -> np.ndarray:
    """The first-order bound on each bone's virtual-vertex displacement for given tolerances.

    The sum over the bone and its ancestors (and the object) of each animated group's error times
    the chain distance from that bone's head to the farthest of this bone's vertices; channels of
    unbounded kinds are left out. Parameters as :func:`joint_tolerances`; ``tolerances`` (M,).

    Returns
    -------
    ndarray, shape (B,)
        The bound per bone, in the units of ``heads``.

    Examples
    --------
    >>> joint_error_bound([-1, 0], [[0, 0, 0], [0, 1, 0]], [[0, 1, 0], [0, 2, 0]],
    ...                   [0, 1], ["rotation_euler", "rotation_euler"], [0.01, 0.01], 0.1).round(6).tolist()
    [0.01, 0.03]
    """
    parents, heads, tails, order = _rig(parents, heads, tails)
    n = parents.size
    slot, group = _groups(channel_bones, channel_kinds, n)
    tol = np.abs(np.asarray(tolerances, dtype=np.float64).reshape(-1))
    ng = len(_GROUPS)
    euler = np.zeros(n + 1)
    quat2 = np.zeros(n + 1)
    loc2 = np.zeros(n + 1)
    scale = np.zeros(n + 1)
    for c in np.flatnonzero(group >= 0):
        b, k = int(slot[c]), _GROUPS[group[c] % ng]
        if k == EULER_KIND:
            euler[b] += tol[c]
        elif k == QUATERNION_KIND:
            quat2[b] += tol[c] ** 2
        elif k == LOCATION_KIND:
            loc2[b] += tol[c] ** 2
        else:
            scale[b] = max(scale[b], tol[c])
    angle = euler + 2.0 * np.arcsin(np.minimum(np.sqrt(quat2), 1.0)) + scale
    shift = np.sqrt(loc2)
    extra = np.zeros(n + 1)
    if max_translation is not None:
        extra[:n] = np.asarray(max_translation, dtype=np.float64).reshape(-1)
    extra[:n] += shift[:n]  # a location error moves the bones below it too
    p_ext = np.append(np.where(parents < 0, n, parents), -1)
    h_ext = np.vstack([heads, np.zeros((1, 3))])
    offsets = _offsets(p_ext, h_ext, extra)
    own = np.maximum(float(shell_distance), np.linalg.norm(tails - heads, axis=1))
    out = np.zeros(n)
    for bone in range(n):
        dist = own[bone]
        total = 0.0
        b = bone
        while b >= 0:
            total += shift[b] + angle[b] * dist
            dist += offsets[b] if b < n else 0.0
            b = int(p_ext[b])
        out[bone] = total
    return out


def chain_bones(parents: Sequence[int] | np.ndarray, bones: Sequence[int] | np.ndarray) -> np.ndarray:
    """``bones`` and all their ancestors, sorted.

    Examples
    --------
    >>> chain_bones([-1, 0, 1, 0], [2]).tolist()
    [0, 1, 2]
    """
    parents = np.asarray(parents, dtype=np.int64).reshape(-1)
    seen: set[int] = set()
    for b in np.asarray(bones, dtype=np.int64).reshape(-1):
        b = int(b)
        while 0 <= b < parents.size and b not in seen:
            seen.add(b)
            b = int(parents[b])
    return np.array(sorted(seen), dtype=np.int64)


def tighten_chains(
    tolerances: np.ndarray,
    parents: Sequence[int] | np.ndarray,
    channel_bones: Sequence[int] | np.ndarray,
    bones: Sequence[int] | np.ndarray,
    *,
    factor: float | Sequence[float] | np.ndarray = 0.5,
    channel_kinds: Sequence[str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Tighten the tolerances of every channel on the chains of ``bones`` (for a verification loop).

    The channels of each bone in ``bones``, of its ancestors and of the object itself (bone -1)
    are multiplied by ``factor``: all the channels that move those bones' virtual vertices. With
    one factor per bone, a channel on several of the chains gets the smallest of their factors.

    Parameters
    ----------
    tolerances : array_like, shape (M,)
    parents : array_like of int, shape (B,)
    channel_bones : array_like of int, shape (M,)
        The bone of each channel (-1: the object).
    bones : array_like of int, shape (K,)
        Bones whose virtual vertices missed the target.
    factor : float or array_like of shape (K,)
        In (0, 1): e.g. 0.5, or per bone the target over the measured error (with a margin).
    channel_kinds : sequence of str, optional
        When given, channels of kinds :func:`joint_tolerances` does not bound are left alone.

    Returns
    -------
    tolerances : ndarray, shape (M,)
        The new tolerances.
    changed : ndarray of bool, shape (M,)
        Which channels were tightened (the ones to refit).

    Examples
    --------
    >>> tol, changed = tighten_chains([1.0, 1.0, 1.0], [-1, 0, 0], [0, 1, 2], [1])
    >>> tol.tolist(), changed.tolist()
    ([0.5, 0.5, 1.0], [True, True, False])
    >>> tighten_chains([1.0, 1.0, 1.0], [-1, 0, 0], [0, 1, 2], [1, 2], factor=[0.5, 0.25])[0].tolist()
    [0.25, 0.5, 0.25]
    """
    bones = np.asarray(bones, dtype=np.int64).reshape(-1)
    f_arr = np.asarray(factor, dtype=np.float64)
    if f_arr.ndim > 1 or (f_arr.ndim == 1 and f_arr.size != bones.size):
        raise ValueError("factor must be a number or one per bone")
    if not np.all((f_arr > 0.0) & (f_arr < 1.0)):
        raise ValueError("factor must be in (0, 1)")
    factors = np.broadcast_to(f_arr, bones.shape)
    tol = np.asarray(tolerances, dtype=np.float64).reshape(-1).copy()
    cb = np.asarray(channel_bones, dtype=np.int64).reshape(-1)
    if cb.size != tol.size:
        raise ValueError(f"{tol.size} tolerances but {cb.size} channel bones")
    scale = np.ones(tol.size)
    for b, f in zip(bones, factors, strict=True):
        on_chain = np.isin(cb, chain_bones(parents, [b])) | (cb < 0)
        scale[on_chain] = np.minimum(scale[on_chain], f)
    if channel_kinds is not None:
        scale[~np.array([_kind(k) is not None for k in channel_kinds], dtype=bool)] = 1.0
    changed = scale < 1.0
    tol *= scale
    return tol, changed
