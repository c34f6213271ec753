"""Seamless loops by closed-curve projection, plus the baselines it is measured against.

Eslitzbichler, "Modelling Character Motions on Infinite-Dimensional Manifolds", §4.1.

Pipeline of :func:`make_loop` on a continuous clip ``c`` (frames x channels):

1. travel channels (root horizontal location) lose their straight-line trend ``D t`` so a
   walk becomes a closable curve; ``D`` (one cycle's travel) is added back at the end, which is
   what a Cycles modifier with *Repeat with Offset* then continues;
2. ``q = R[c]`` (square-root velocity);
3. Algorithm 1 projects q onto the closed curves C^c, and ``R^-1`` restores the start pose and
   the length: the result starts and ends on the same pose (eq. 13);
4. the velocity seam (eq. 14, the paper's "higher-order continuity" outlook): the first and last
   frame steps are bent to their mean by cubic Hermite bumps over a short window at each end.  The
   bumps are zero at the seam and at the window's inner edge (value and slope), so the closed pose
   stays closed and the middle of the clip is untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..validation import MAX_MAGNITUDE, finite_array, finite_result, index_list, positive, positive_int
from .srv import project_closed, srv, srv_inverse, srv_length

__all__ = ["Cycle", "LoopResult", "SeamJump", "crossfade_loop", "find_cycle", "joint_seam", "make_loop",
           "median_frame_change", "nearly_closed", "seam_jump", "select_travel"]

MIN_FRAMES = 4  # a loop needs a first and last step plus one frame between them
# find_cycle compares every pair of frames (two N x N Gram matrices, 2 x 32 MB here); longer
# clips are searched on every k-th frame first, then refined at full resolution.
MAX_SEARCH_FRAMES = 2000


@dataclass
class SeamJump:
    """Discontinuity when the clip repeats, per channel, per frame (as Blender's Cycles modifier plays it).

    Attributes
    ----------
    pose : ndarray, shape (n,)
        ``|c[N-1] - c[0]|`` (0 on travel channels), in channel units.
    velocity : ndarray, shape (n,)
        ``|(c[N-1] - c[N-2]) - (c[1] - c[0])|``, in channel units per frame.
    """

    pose: np.ndarray
    velocity: np.ndarray


@dataclass
class LoopResult:
    """Result of :func:`make_loop`.

    Attributes
    ----------
    values : ndarray, shape (N, n)
        The looped clip: last row = first row (+ one cycle's travel on travel channels).
    before, after : SeamJump
        Seam of the input and of the result.
    deviation_rms : ndarray, shape (n,)
        RMS difference from the input, per channel, in channel units.
    iterations : int
        Newton steps of the closure projection.
    residual : float
        Closure residual relative to the curve length, before the final snap.
    converged : bool
        The projection reached its tolerance.
    """

    values: np.ndarray
    before: SeamJump
    after: SeamJump
    deviation_rms: np.ndarray
    iterations: int
    residual: float
    converged: bool


@dataclass
class Cycle:
    """A loopable range found by :func:`find_cycle`.

    Attributes
    ----------
    start : int
        First sample of the cycle.
    stop : int
        Last sample (inclusive): the pose that should equal ``start``'s.
    score : float
        Seam mismatch in units of typical frame-to-frame change (lower is better).
    search_step : int
        1 when every pair of frames was compared; k > 1 when the clip was too long for that
        (more than :data:`MAX_SEARCH_FRAMES` frames) and the search compared every k-th frame,
        then refined the range at full resolution (+-k frames of start, +-2k of period).
    """

    start: int
    stop: int
    score: float
    search_step: int = 1

    @property
    def period(self) -> int:
        """Frames in one cycle (``stop - start``)."""
        return self.stop - self.start


def _check(values: np.ndarray) -> np.ndarray:
    c = finite_array("values", values, ndim=(1, 2), min_length=None, max_abs=MAX_MAGNITUDE)
    if c.ndim == 1:
        c = c[:, None]
    if c.shape[0] < MIN_FRAMES:
        raise ValueError(f"values: the clip has {c.shape[0]} frame(s): a loop needs at least {MIN_FRAMES}")
    if c.shape[1] == 0:
        raise ValueError(f"values has no channels (shape {c.shape})")
    return c


def _weights(weights, n: int) -> np.ndarray:
    if weights is None:
        return np.ones(n)
    w = finite_array("weights", weights, min_length=None).reshape(-1)
    if w.shape[0] != n or np.any(w <= 0.0) or np.any(w > MAX_MAGNITUDE):
        raise ValueError(f"weights must be {n} positive finite numbers (one per channel), got {w.shape[0]}")
    return w


def _power_of_two_normalised(c: np.ndarray) -> np.ndarray:
    """``c`` scaled by a power of two (exact) so its largest magnitude is in [0.5, 1)."""
    peak = float(np.abs(c).max()) if c.size else 0.0
    if peak == 0.0 or not np.isfinite(peak):
        return c
    return np.ldexp(c, -int(np.frexp(peak)[1]))


def _travel_mask(n: int, travel: Sequence[int]) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[index_list("travel", travel, n)] = True
    return mask


def select_travel(values: np.ndarray, candidates: Sequence[int], *, ratio: float = 0.5) -> list[int]:
    """The candidate channels (horizontal root location) that really travel over the clip.

    A channel travels when its net displacement is at least ``ratio`` of its range: walking forward
    does, the side-to-side sway of the same walk does not (looped as velocity, the sway's small
    start-end gap would become a drift that grows every cycle).

    Parameters
    ----------
    values : ndarray, shape (N, n)
    candidates : sequence of int
        Columns to test.
    ratio : float
        Net displacement needed, as a fraction of the channel's range.

    Returns
    -------
    list of int
        The travelling candidates, in the given order.
    """
    c = np.asarray(values, dtype=float)
    out = []
    for j in candidates:
        span = float(np.ptp(c[:, j]))
        if span > 0.0 and abs(float(c[-1, j] - c[0, j])) >= ratio * span:
            out.append(int(j))
    return out


def seam_jump(values: np.ndarray, travel: Sequence[int] = ()) -> SeamJump:
    """Pose and velocity jump where the clip repeats.

    Parameters
    ----------
    values : ndarray, shape (N, n)
        At least 4 frames.
    travel : sequence of int
        Channels looped as velocity (no pose jump counted).

    Returns
    -------
    SeamJump

    Raises
    ------
    ValueError
        On fewer than 4 frames, non-finite values or a travel index out of range.
    """
    c = _check(values)
    mask = _travel_mask(c.shape[1], travel)
    gap = c[-1] - c[0]
    pose = np.abs(np.where(mask, 0.0, gap))
    velocity = np.abs((c[-1] - c[-2]) - (c[1] - c[0]))
    return SeamJump(pose, velocity)


def median_frame_change(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Typical per-frame change of each channel.

    Parameters
    ----------
    values : ndarray, shape (N, n)
        At least 4 frames.

    Returns
    -------
    step : ndarray, shape (n,)
        Median |first difference| per channel.
    bend : ndarray, shape (n,)
        Median |second difference| per channel.
    """
    c = _check(values)
    return np.median(np.abs(np.diff(c, axis=0)), axis=0), np.median(np.abs(np.diff(c, n=2, axis=0)), axis=0)


def nearly_closed(values: np.ndarray, travel: Sequence[int] = ()) -> bool:
    """Whether the clip ends close to where it starts (so it may be treated as a cycle).

    Every channel's seam jump (:func:`seam_jump`) must be within three median frame-to-frame
    changes (:func:`median_frame_change`) plus 1 % of the channel's range (plus 1e-6).

    Parameters
    ----------
    values : ndarray, shape (N, n)
        A continuous clip, at least 4 frames.
    travel : sequence of int
        Channels looped as velocity: measured net of their travel over the clip (no pose jump).

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        On the input errors of :func:`seam_jump`.

    Examples
    --------
    >>> t = np.linspace(0.0, 2.0 * np.pi, 50)[:, None]
    >>> nearly_closed(np.sin(t)), nearly_closed(t)
    (True, False)
    """
    jump = seam_jump(values, travel=travel)
    med, _ = median_frame_change(values)
    allowed = 3.0 * np.asarray(med) + 0.01 * np.ptp(values, axis=0) + 1e-6
    return bool(np.all(np.asarray(jump.pose) <= allowed))


def joint_seam(heads: np.ndarray, roots: Sequence[int] | None) -> tuple[float, float]:
    """The seam jump of joints in space as a loop over frames lo..hi plays.

    Parameters
    ----------
    heads : ndarray, shape (4, n_joints, 3)
        Joint positions at frames lo, lo + 1, hi - 1 and hi (z up), in any length unit.
    roots : sequence of int or None
        Root joints whose mean horizontal (x, y) displacement from lo to hi is the travel ``d``
        over one cycle (``None``: the loop plays in place, ``d`` = 0).

    Returns
    -------
    pose : float
        The largest joint distance ``|h(hi) - h(lo) - d|``, in the units of ``heads``.
    velocity : float
        The largest change of a joint's step across the seam
        ``|(h(hi) - h(hi-1)) - (h(lo+1) - h(lo))|``, in the units of ``heads`` per frame.

    Examples
    --------
    >>> walk = np.array([[[0.0, 0.0, 1.0]], [[1.0, 0.0, 1.0]], [[9.0, 0.0, 1.0]], [[10.0, 0.0, 1.0]]])
    >>> joint_seam(walk, [0]), joint_seam(walk, None)
    ((0.0, 0.0), (10.0, 0.0))
    """
    offset = np.zeros(3)
    if roots is not None:
        offset = (heads[3, list(roots)] - heads[0, list(roots)]).mean(axis=0)
        offset[2] = 0.0
    pose = np.linalg.norm(heads[3] - heads[0] - offset, axis=-1).max()
    velocity = np.linalg.norm((heads[3] - heads[2]) - (heads[1] - heads[0]), axis=-1).max()
    return float(pose), float(velocity)


def _match_seam_velocity(c: np.ndarray, window: int) -> np.ndarray:
    """Bend the first and last frame steps of a closed clip to their mean, locally (see module doc)."""
    n_frames = c.shape[0]
    window = int(max(1, min(window, (n_frames - 1) // 2)))
    c = c.copy()
    v_start = c[1] - c[0]
    v_end = c[-1] - c[-2]
    target = 0.5 * (v_start + v_end)
    s = np.arange(window + 1) / window  # 0 at the seam end of each window
    h10 = s**3 - 2.0 * s**2 + s  # value 0 at both ends, slope 1 at s=0, slope 0 at s=1
    # start: c[k] += A h10(k / W), first step changes by A h10(1/W)
    c[: window + 1] += ((target - v_start) / h10[1])[None, :] * h10[:, None]
    # end (mirrored): c[N-1-k] += B h10(k / W); the last step c[N-1] - c[N-2] changes by -B h10(1/W)
    c[n_frames - 1 - np.arange(window + 1)] += (-(target - v_end) / h10[1])[None, :] * h10[:, None]
    return c


def make_loop(
    values: np.ndarray,
    *,
    travel: Sequence[int] = (),
    velocity_window: int | None = None,
    tol: float = 1e-6,
    max_iter: int = 100,
    weights: np.ndarray | Sequence[float] | None = None,
) -> LoopResult:
    """Make a continuous clip seamlessly cyclic (see the module docstring for the steps).

    Parameters
    ----------
    values : ndarray, shape (N, n) or (N,)
        A continuous clip (angles unwrapped: :func:`.clips.to_motion_curve`), N >= 4.
    travel : sequence of int
        Channels looped as velocity (root horizontal location).
    velocity_window : int, optional
        Frames at each end over which the velocity seam is matched (default: a tenth of the
        clip, 3..24; 0 leaves the velocity seam as the projection makes it).
    tol : float
        Closure residual of the projection, relative to the curve length.
    max_iter : int
        Newton steps at most.
    weights : array_like, shape (n,), optional
        Positive per-channel scales that put channels of different units on one scale before the
        SRV map (e.g. radians and location / half the figure's height); the result is returned
        in the input's units.

    Returns
    -------
    LoopResult
        The looped clip, in the input's units, and the seams before and after.

    Raises
    ------
    ValueError
        On fewer than 4 frames, non-finite values, bad weights or a travel index out of range.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0.0, 1.0, 40)
    >>> clip = np.column_stack([np.sin(2 * np.pi * t) + 0.3 * t, 2.0 * t])  # a drift, a travel
    >>> res = make_loop(clip, travel=[1])
    >>> bool(res.before.pose[0] > 0.2), bool(res.after.pose[0] < 1e-12)
    (True, True)
    >>> float(res.values[-1, 1] - res.values[0, 1])  # one cycle's travel kept
    2.0
    """
    c = _check(values)
    scale = _weights(weights, c.shape[1])
    tol = positive("tol", tol)
    max_iter = positive_int("max_iter", max_iter, minimum=1)
    if velocity_window is not None:
        velocity_window = positive_int("velocity_window", velocity_window, minimum=0)
    n_frames, n = c.shape
    mask = _travel_mask(n, travel)
    t = np.linspace(0.0, 1.0, n_frames)[:, None]
    displacement = np.where(mask, c[-1] - c[0], 0.0)
    trend = t * displacement
    base = (c - trend) * scale
    q = srv(base)
    m = n_frames - 1
    if velocity_window is None:
        velocity_window = int(np.clip(round(m / 10), 3, 24))
    iterations, residual, converged = 0, 0.0, True
    if srv_length(q) > 0.0:
        closure = project_closed(q, tol=tol, max_iter=max_iter)
        iterations, residual, converged = closure.iterations, closure.residual, closure.converged
        looped = srv_inverse(closure.q, base[0])
    else:
        looped = base.copy()  # nothing moves apart from travel: already a loop
    looped[-1] = looped[0]  # remove the last ~tol of closure gap: Cycles sees identical end keys
    if velocity_window > 0 and n_frames >= 5:
        looped = _match_seam_velocity(looped, velocity_window)
    looped = finite_result("the looped clip", looped / scale + trend)
    return LoopResult(
        values=looped,
        before=seam_jump(c, travel),
        after=seam_jump(looped, travel),
        deviation_rms=np.sqrt(np.mean((looped - c) ** 2, axis=0)),
        iterations=iterations,
        residual=residual,
        converged=converged,
    )


def crossfade_loop(values: np.ndarray, window: int, travel: Sequence[int] = ()) -> np.ndarray:
    """Baseline: the last ``window`` frames fade linearly into the first frame's pose.

    Parameters
    ----------
    values : ndarray, shape (N, n)
        At least 4 frames.
    window : int
        Frames of the fade (clamped to 1 .. N - 1).
    travel : sequence of int
        Channels left as they are.

    Returns
    -------
    ndarray, shape (N, n)
    """
    c = _check(values)
    mask = _travel_mask(c.shape[1], travel)
    window = positive_int("window", window, minimum=1)
    window = int(max(1, min(window, c.shape[0] - 1)))
    out = c.copy()
    gap = np.where(mask, 0.0, c[0] - c[-1])
    alpha = np.linspace(0.0, 1.0, window + 1)[:, None]
    out[-window - 1:] += alpha * gap
    return out


def _typical_step(speed: np.ndarray) -> float:
    """The median frame-to-frame change over the frames that move (0: nothing moves).

    Held frames (a clip exported with every frame doubled) are left out: with more than half of
    them the plain median would be 0 and a moving clip would read as still.
    """
    moving = speed[speed > 0.0]
    return float(np.median(moving)) if moving.size else 0.0


def _cycle_scores(c: np.ndarray, mask: np.ndarray, p_min: int, p_max: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per period P: the best start's score, that start, and the lag profile D(P) (see find_cycle).

    Two N x N Gram matrices: the quadratic step, run on at most MAX_SEARCH_FRAMES frames.
    """
    n_frames = c.shape[0]
    pose = c[:, ~mask]
    vel = np.diff(c, axis=0)  # (N-1, n)
    speed = np.linalg.norm(vel, axis=1)
    step = _typical_step(speed)
    g_pose = pose @ pose.T
    n_pose = np.diag(g_pose)
    g_vel = vel @ vel.T
    n_vel = np.diag(g_vel)
    cum_speed = np.concatenate([[0.0], np.cumsum(speed)])
    best_per_p = np.full(p_max + 1, np.inf)
    typical = np.full(p_max + 1, np.nan)  # D(P)
    best_start = np.zeros(p_max + 1, dtype=int)
    for p in range(1, p_max + 1):
        s = np.arange(0, n_frames - p)
        gap_pose = n_pose[s] + n_pose[s + p] - 2.0 * g_pose[s, s + p]
        # velocity leaving the start (s -> s+1) vs arriving at the end (s+p-1 -> s+p)
        gap_vel = n_vel[s] + n_vel[s + p - 1] - 2.0 * g_vel[s, s + p - 1]
        score = np.sqrt(np.maximum(gap_pose, 0.0) + 4.0 * np.maximum(gap_vel, 0.0)) / step
        mean_speed = (cum_speed[s + p] - cum_speed[s]) / p
        moving = mean_speed >= 0.5 * step
        if not moving.any():
            continue
        typical[p] = float(np.median(score[moving]))
        if p >= p_min:
            score = np.where(moving, score, np.inf)
            i = int(np.argmin(score))
            best_per_p[p], best_start[p] = score[i], s[i]
    return best_per_p, best_start, typical


def _choose_period(best_per_p: np.ndarray, typical: np.ndarray, p_min: int, p_max: int) -> int:
    """The first clear dip of D(P), refined within +-5 %; else the best score / sqrt(P)."""
    rise = np.fmax.accumulate(np.nan_to_num(typical, nan=0.0))  # highest D at lags up to P
    best = float(np.min(best_per_p))
    p = -1
    for q in range(p_min, p_max + 1):
        if not np.isfinite(best_per_p[q]) or not np.isfinite(typical[q]):
            continue
        lo, hi = max(1, int(0.9 * q)), min(p_max, int(np.ceil(1.1 * q)))
        around = typical[lo:hi + 1]
        if (typical[q] <= np.nanmin(around) + 1e-12 and typical[q] <= 0.75 * rise[q]
                and best_per_p[q] <= 1.5 * best + 1.0):
            p = q
            break
    if p >= 0:
        lo, hi = max(p_min, int(0.95 * p)), min(p_max, int(np.ceil(1.05 * p)))
        return lo + int(np.argmin(best_per_p[lo:hi + 1]))
    # no clear repeat: balance the seam against the period (seam / sqrt(period)); a seam
    # grows about linearly with the period where nothing repeats, so a weak cycle still wins
    # over both a few frames and the whole clip
    return int(np.argmin(best_per_p / np.sqrt(np.maximum(np.arange(p_max + 1), 1))))


def _refine_cycle(
    c: np.ndarray, mask: np.ndarray, start: int, period: int, radius: int, period_radius: int, p_min: int, p_max: int
) -> tuple[int, int, float] | None:
    """The best (start, period) within +-radius starts and +-period_radius periods of a coarse
    pick, scored at full resolution; O(radius period_radius channels) work, one period at a time."""
    n_frames = c.shape[0]
    pose = c[:, ~mask]
    vel = np.diff(c, axis=0)
    speed = np.linalg.norm(vel, axis=1)
    step = _typical_step(speed)
    cum_speed = np.concatenate([[0.0], np.cumsum(speed)])
    best: tuple[int, int, float] | None = None
    for p in range(max(p_min, period - period_radius), min(p_max, period + period_radius) + 1):
        s = np.arange(max(0, start - radius), min(n_frames - 1 - p, start + radius) + 1)
        if s.size == 0:
            continue
        gap_pose = ((pose[s + p] - pose[s]) ** 2).sum(axis=1)
        gap_vel = ((vel[s + p - 1] - vel[s]) ** 2).sum(axis=1)
        score = np.sqrt(gap_pose + 4.0 * gap_vel) / step
        moving = (cum_speed[s + p] - cum_speed[s]) / p >= 0.5 * step
        score = np.where(moving, score, np.inf)
        i = int(np.argmin(score))
        if np.isfinite(score[i]) and (best is None or score[i] < best[2]):
            best = (int(s[i]), int(s[i] + p), float(score[i]))
    return best


def find_cycle(
    values: np.ndarray,
    *,
    travel: Sequence[int] = (),
    min_period: int | None = None,
    max_period: int | None = None,
    weights: np.ndarray | None = None,
) -> Cycle:
    """The best loopable range inside a longer clip: matching pose *and* velocity at its two ends.

    A (start s, period P) pair is scored by ``sqrt(|pose gap|^2 + (2 |velocity gap|)^2) / step``
    (step: the clip's median frame-to-frame change, so the score reads "frames of motion"); only
    segments moving at least half as fast as the clip's median count (a standing start would
    otherwise win).  The period comes from the lag profile D(P), the median score over all starts
    (an average-magnitude-difference function, as in pitch detection): the motion moves away from
    itself, then comes back at the period.  The first clear dip of D (a local minimum at most 75 %
    of the highest D at shorter lags, whose best start scores within 1.5x + 1 of the best overall)
    is refined to the best-scoring period within +-5 %, and the
    start with the best score at that period is returned.  Without a clear dip the smallest
    score / sqrt(period) wins (a weak cycle rather than a few frames or the whole clip).  Default
    bounds: a tenth of the clip to all of it.  This is a heuristic: clips holding less than one
    whole cycle get a poor range (the operator warns when the score is high).
    Travel channels count by velocity only; ``weights`` put channels of different units on one
    scale (see :func:`make_loop`).

    Comparing every pair of frames is quadratic, so a clip longer than
    :data:`MAX_SEARCH_FRAMES` frames is searched coarse-to-fine: the search above runs on every
    k-th frame (k = ceil(N / MAX_SEARCH_FRAMES)), and the best range is refined at full
    resolution within +-k frames of its start and +-2k of its period. Memory and time then grow
    about linearly with N; the result says so (``Cycle.search_step`` = k > 1). A period shorter
    than a few k frames is under-sampled by the coarse pass, which may then settle on a whole
    multiple of it (still a seamless range, just longer).

    Parameters
    ----------
    values : ndarray, shape (N, n)
        A continuous clip, N >= 4.
    travel : sequence of int
        Channels counted by velocity only.
    min_period, max_period : int, optional
        Period bounds in frames (default: N // 10 and N - 1).
    weights : ndarray, shape (n,), optional
        Positive per-channel scales.

    Returns
    -------
    Cycle

    Raises
    ------
    ValueError
        When the clip does not move, no period fits the bounds, no segment moves enough, or on
        the input errors of :func:`make_loop` (non-finite or huge values, bad bounds).
    """
    c = _check(values)
    n_frames, n = c.shape
    mask = _travel_mask(n, travel)
    if weights is not None:
        c = c * _weights(weights, n)[None, :]
    # scores are relative to the clip's step: a power-of-two rescale changes no score, and
    # keeps the Gram matrices of huge (or subnormal) values finite (and normal)
    c = _power_of_two_normalised(c)
    if min_period is not None:
        min_period = positive_int("min_period", min_period, minimum=0)
    if max_period is not None:
        max_period = positive_int("max_period", max_period, minimum=0)
    step = _typical_step(np.linalg.norm(np.diff(c, axis=0), axis=1))
    if step <= 0.0:
        raise ValueError("the clip does not move: there is no cycle to find")
    p_min = max(MIN_FRAMES - 1, int(min_period) if min_period else n_frames // 10)
    p_max = min(n_frames - 1, int(max_period) if max_period else n_frames - 1)
    if p_min > p_max:
        raise ValueError(f"no period between {p_min} and {p_max} frames fits in {n_frames} frames")
    k = max(1, -(-n_frames // MAX_SEARCH_FRAMES))
    if k == 1:
        best_per_p, best_start, typical = _cycle_scores(c, mask, p_min, p_max)
        if not np.isfinite(best_per_p).any():
            raise ValueError("no moving segment long enough to loop")
        p = _choose_period(best_per_p, typical, p_min, p_max)
        cycle = Cycle(int(best_start[p]), int(best_start[p] + p), float(best_per_p[p]))
    else:
        cycle = _coarse_to_fine_cycle(c, mask, k, p_min, p_max)
    finite_result("the cycle's score", cycle.score)
    return cycle


def _coarse_to_fine_cycle(c: np.ndarray, mask: np.ndarray, k: int, p_min: int, p_max: int) -> Cycle:
    """find_cycle on every k-th frame, refined at full resolution (see find_cycle)."""
    coarse = c[::k]
    cp_min = max(MIN_FRAMES - 1, p_min // k)
    cp_max = min(coarse.shape[0] - 1, max(cp_min, p_max // k))
    best_per_p, best_start, typical = _cycle_scores(coarse, mask, cp_min, cp_max)
    if not np.isfinite(best_per_p).any():
        raise ValueError("no moving segment long enough to loop")
    p = _choose_period(best_per_p, typical, cp_min, cp_max)
    # the coarse period is known to about one coarse sample either way: search +-2k periods
    refined = _refine_cycle(c, mask, int(best_start[p]) * k, p * k, k, 2 * k, p_min, p_max)
    if refined is None:
        raise ValueError("no moving segment long enough to loop")
    start, stop, score = refined
    return Cycle(start, stop, score, search_step=k)
