"""Optional query feature for the motion database: the pose plus its recent velocity.

Richert, "Animation Database for real-time motion reconstruction" (2012), matches each query frame
by its pose alone.  Slow motion is then ambiguous: a face holding or slowly leaving an expression
looks the same on the way in and on the way out, and per-frame noise hides which frame of a slow
stretch is meant.  This module appends to every pose a causal velocity estimate of each channel
(the slope of a least-squares line through the frame and its last ``window`` predecessors, times
``weight`` frames), so the k-NN search also compares how the pose is moving.

The slope is causal (only the current and past frames: a live stream has no future) and is a fit,
not a single difference, because the query stream is noisy: the least-squares slope over m frames
has a noise standard deviation of sigma * sqrt(12 / (m (m^2 - 1))), e.g. sigma / 7.7 at m = 9,
where the plain difference x_t - x_{t-1} has sigma * sqrt(2).  The database gets the same feature
computed per clip from its own (noise-free) frames; a clip's first frames, like a stream's first
frames, fit the frames there are (the first frame has slope 0).

Use: ``feature.database(db)`` once, then :func:`reconstruct_with_feature` (a whole clip) or
:class:`FeatureReconstructor` (one frame at a time); both return poses of the original channels.
``graph.py`` is used through its public API only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..validation import finite_scalar, positive_int
from .graph import Batch, MotionDatabase, OLNGParams, Reconstructor, Step, reconstruct

__all__ = [
    "DELTA_PREFIX",
    "FeatureReconstructor",
    "FeatureStream",
    "MotionFeature",
    "causal_slope",
    "reconstruct_with_feature",
]

DELTA_PREFIX = "d/"  # the velocity channel of channel c is named 'd/' + c


def _slope_weights(m: int) -> np.ndarray:
    """Least-squares slope over m equally spaced frames as weights on x_t, x_{t-1}, ..., x_{t-m+1}."""
    if m < 2:
        return np.zeros(max(m, 1))
    u = -np.arange(m, dtype=float)  # time of x_{t-k} relative to t
    c = u - u.mean()
    return c / float(c @ c)


def causal_slope(x: np.ndarray, window: int) -> np.ndarray:
    """Per-frame slope of the least-squares line through each frame and its ``window`` predecessors.

    Frame t uses frames max(0, t - window) .. t (fewer at the start; frame 0 has slope 0), so row t
    depends on no later frame.

    Parameters
    ----------
    x : ndarray, shape (n, D)
        Equally spaced frames, finite.
    window : int
        Past frames used besides the current one (>= 1).

    Returns
    -------
    ndarray, shape (n, D)
        Units of ``x`` per frame.

    Raises
    ------
    ValueError
        On a window below 1, a non-2D array, or NaN / infinite values.

    Examples
    --------
    >>> import numpy as np
    >>> ramp = np.arange(6.0)[:, None] * 0.5
    >>> np.round(causal_slope(ramp, 3)[:, 0], 12).tolist()
    [0.0, 0.5, 0.5, 0.5, 0.5, 0.5]
    """
    window = positive_int("window", window)
    a = np.asarray(x, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"frames must be (frames, channels), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("frames have NaN or infinite values")
    n = a.shape[0]
    out = np.zeros_like(a)
    m = window + 1
    if n >= m:  # full windows: one fixed filter
        w = _slope_weights(m)
        acc = np.zeros((n - window, a.shape[1]))
        for k in range(m):
            acc += w[k] * a[window - k: n - k]
        out[window:] = acc
    for t in range(min(window, n)):  # the first frames: the frames there are
        w = _slope_weights(t + 1)
        out[t] = w @ a[t::-1]
    return out


@dataclass(frozen=True)
class MotionFeature:
    """Pose plus weighted causal velocity: the optional query feature.

    Attributes
    ----------
    window : int
        Past frames in the velocity fit besides the current one (>= 1).  Longer is less noisy but
        lags behind changes of speed.
    weight : float
        Frames (>= 0): a velocity v (channel units per frame) counts like a pose offset of
        ``weight * v``.  0 leaves the search as without the feature (up to exact ties between
        database frames, which the k-d tree may break the other way in more dimensions).
    components : int, optional
        None (default): one velocity channel per query channel (``'d/<channel>'``), which doubles
        the searched dimensions.  An int r: the velocities projected on their r principal directions
        over the database (``'d/pc<i>'``, an SVD of the database's velocities of the query channels,
        not centred: zero velocity stays zero): fewer dimensions, a faster k-NN.

    The defaults (16, 8) won a grid of windows 4-32 x weights 4-64 on scenario #1 of the seed
    (database clip + medium noise) over clips held out of the benchmark's report, by the mean
    correct-hit rate over the facial and the BVH data (ties: the lower best-frame error).  On the
    benchmark's own #1 they raise the hits from 63.6 to 80.6 % (facial takes, 52 channels) and from
    82.6 to 92.0 % (BVH clips, 96); the k-NN then searches twice the dimensions (facial: median
    1.1 ms per frame without, 12-40 ms with, on a loaded 2-core machine).  ``components=16`` kept
    the facial hits (80.5 %) at 1.2-1.3 ms but lost some on the BVH clips (88.2 %).

    Raises
    ------
    ValueError
        On a window below 1, a negative, NaN or infinite weight, or components below 1.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0.0, 4 * np.pi, 200)
    >>> clip = np.column_stack([np.sin(t), np.cos(t)])
    >>> db = MotionDatabase.from_clips([clip], ["a", "b"])
    >>> feature = MotionFeature(window=4, weight=4.0)
    >>> feature.database(db).channels
    ['a', 'b', 'd/a', 'd/b']
    >>> batch = reconstruct_with_feature(db, clip[20:60], OLNGParams(k=16, window=8, paths=4), feature)
    >>> batch.poses.shape, batch.best_index[-1]
    ((40, 2), 59)
    """

    window: int = 16
    weight: float = 8.0
    components: int | None = None

    def __post_init__(self) -> None:
        positive_int("window", self.window)
        w = finite_scalar("weight", self.weight)
        if w < 0.0:
            raise ValueError(f"weight must be >= 0 (frames), got {w}")
        if self.components is not None:
            positive_int("components", self.components)

    @staticmethod
    def channels(names: Sequence[str]) -> list[str]:
        """``names`` then their velocity channels ``'d/' + name`` (the layout without components)."""
        return list(names) + [DELTA_PREFIX + n for n in names]

    def feature_names(self, query_channels: Sequence[str], basis: np.ndarray | None = None) -> list[str]:
        """Names of the velocity channels: ``'d/<channel>'``, or ``'d/pc<i>'`` per column of ``basis``."""
        if basis is None:
            return [DELTA_PREFIX + n for n in query_channels]
        return [f"{DELTA_PREFIX}pc{i}" for i in range(basis.shape[1])]

    def basis(self, db: MotionDatabase, query_channels: Sequence[str] | None = None) -> np.ndarray | None:
        """The principal directions (Q, r) of the database's velocities of the query channels (None without components).

        Signs are fixed (each column's largest entry positive) so the basis is reproducible.
        """
        if self.components is None:
            return None
        cols = np.arange(len(db.channels)) if query_channels is None else db.columns(query_channels)[0]
        slopes = self._slopes(db, cols)
        _, _, vt = np.linalg.svd(slopes, full_matrices=False)
        b = vt[: min(self.components, cols.size)].T.copy()
        top = np.argmax(np.abs(b), axis=0)
        return b * np.where(b[top, np.arange(b.shape[1])] < 0, -1.0, 1.0)

    def _slopes(self, db: MotionDatabase, cols: np.ndarray) -> np.ndarray:
        s = db.clip_starts
        return np.vstack([causal_slope(db.frames[s[i]: s[i + 1]][:, cols], self.window) for i in range(db.n_clips)])

    def rows(self, frames: np.ndarray, basis: np.ndarray | None = None) -> np.ndarray:
        """Augmented rows of one gap-free clip (n, Q): the frames, then ``weight`` x their causal slope.

        Returns
        -------
        ndarray, shape (n, 2 Q), or (n, Q + r) with a ``basis`` (Q, r) (the slopes projected on it)

        Raises
        ------
        ValueError
            As :func:`causal_slope`.
        """
        a = np.asarray(frames, dtype=float)
        slope = causal_slope(a, self.window)
        return np.hstack([a, float(self.weight) * (slope if basis is None else slope @ basis)])

    def database(self, db: MotionDatabase, query_channels: Sequence[str] | None = None,
                 basis: np.ndarray | None = None) -> MotionDatabase:
        """The database with its velocity channels, computed per clip (a clip's first frames fit what is there).

        Parameters
        ----------
        db : MotionDatabase
            D channels.
        query_channels : sequence of str, optional
            Only with components: the channels whose velocities are projected (default all).  Without
            components every channel gets its velocity channel and any query subset can be searched.
        basis : ndarray, optional
            :meth:`basis` of the same database and query channels, if already computed.

        Returns
        -------
        MotionDatabase
            D + D channels (``'d/<channel>'``), or D + r (``'d/pc<i>'``); the same clips and frame rows.
        """
        if self.components is None:
            basis, cols = None, np.arange(len(db.channels))
        else:
            basis = self.basis(db, query_channels) if basis is None else basis
            cols = np.arange(len(db.channels)) if query_channels is None else db.columns(query_channels)[0]
        slopes = self._slopes(db, cols)
        extra = float(self.weight) * (slopes if basis is None else slopes @ basis)
        s = db.clip_starts
        clips = [np.hstack([db.frames[s[i]: s[i + 1]], extra[s[i]: s[i + 1]]]) for i in range(db.n_clips)]
        names = [db.channels[c] for c in cols]
        return MotionDatabase.from_clips(clips, list(db.channels) + self.feature_names(names, basis), db.clip_names)

    def stream(self, width: int, basis: np.ndarray | None = None) -> FeatureStream:
        """A per-frame feature of ``width`` query channels (:class:`FeatureStream`)."""
        return FeatureStream(self, width, basis)

    def queries(self, queries: np.ndarray, basis: np.ndarray | None = None) -> np.ndarray:
        """Augmented query rows of a whole query clip, causal, as :class:`FeatureStream` gives them.

        NaN rows (dropped frames) stay NaN rows and the slope of later frames spans the gap in time.

        Parameters
        ----------
        queries : ndarray, shape (n, Q)
        basis : ndarray, shape (Q, r), optional
            :meth:`basis` (with components).

        Returns
        -------
        ndarray, shape (n, 2 Q), or (n, Q + r) with a basis

        Raises
        ------
        ValueError
            On a non-2D array or infinite values.
        """
        q = np.asarray(queries, dtype=float)
        if q.ndim != 2:
            raise ValueError(f"queries must be (frames, channels), got shape {q.shape}")
        if np.any(np.isinf(q)):
            raise ValueError(f"queries: frame {int(np.argmax(np.any(np.isinf(q), axis=1)))} has an infinite value")
        if np.all(np.isfinite(q)):
            return self.rows(q, basis)
        st = self.stream(q.shape[1], basis)
        extra = q.shape[1] if basis is None else basis.shape[1]
        return np.vstack([st.push(r) for r in q]) if q.shape[0] else np.zeros((0, q.shape[1] + extra))


class FeatureStream:
    """The feature of a live stream, one frame at a time (the same rows as :meth:`MotionFeature.queries`).

    A frame with NaN values (dropped) gives a NaN row and is left out of later fits, which then use
    the frames' true times.

    Parameters
    ----------
    feature : MotionFeature
    width : int
        Query channels Q.
    basis : ndarray, shape (Q, r), optional
        :meth:`MotionFeature.basis` (with components).
    """

    def __init__(self, feature: MotionFeature, width: int, basis: np.ndarray | None = None):
        self.feature = feature
        self.width = positive_int("width", width)
        if basis is not None and (basis.ndim != 2 or basis.shape[0] != self.width):
            raise ValueError(f"basis must be ({self.width}, r), got shape {basis.shape}")
        self.basis = basis
        self.reset()

    def reset(self) -> None:
        """Forget the past frames."""
        self.t = -1
        self._past: deque[tuple[int, np.ndarray]] = deque()

    def push(self, frame: np.ndarray) -> np.ndarray:
        """The augmented row (Q + Q or Q + r,) of the next frame (Q,).

        Raises
        ------
        ValueError
            On a wrong number of values or infinite values.
        """
        x = np.asarray(frame, dtype=float).reshape(-1)
        if x.size != self.width:
            raise ValueError(f"frame has {x.size} values, the stream {self.width}")
        if np.any(np.isinf(x)):
            raise ValueError("frame has infinite values")
        self.t += 1
        while self._past and self._past[0][0] < self.t - self.feature.window:
            self._past.popleft()
        extra = self.width if self.basis is None else self.basis.shape[1]
        if not np.all(np.isfinite(x)):
            return np.full(self.width + extra, np.nan)
        self._past.append((self.t, x))
        times = np.array([t for t, _ in self._past], dtype=float)
        if times.size < 2:
            slope = np.zeros(self.width)
        else:
            c = times - times.mean()
            slope = (c / float(c @ c)) @ np.vstack([v for _, v in self._past])
        return np.concatenate([x, float(self.feature.weight) * (slope if self.basis is None else slope @ self.basis)])


def _query_names(db: MotionDatabase, query_channels: Sequence[str] | None) -> list[str]:
    names = list(db.channels) if query_channels is None else list(query_channels)
    _, missing = db.columns(names)
    if missing:
        raise ValueError(f"query channels not in the database: {', '.join(missing[:8])}"
                         + (f" and {len(missing) - 8} more" if len(missing) > 8 else ""))
    if not names:
        raise ValueError("no query channel in common with the database")
    return names


def _prepared(db: MotionDatabase, feature: MotionFeature, names: list[str], db_aug: MotionDatabase | None
              ) -> tuple[MotionDatabase, np.ndarray | None, list[str]]:
    """The augmented database (made or checked), the basis and the channels the search runs over."""
    basis = feature.basis(db, names)
    if db_aug is None:
        db_aug = feature.database(db, names, basis)
    elif (db_aug.n_frames != db.n_frames or db_aug.channels[: len(db.channels)] != list(db.channels)
          or not np.array_equal(db_aug.frames[:, : len(db.channels)], db.frames)):
        raise ValueError("db_aug is not this database with its velocity channels (use feature.database(db))")
    search = names + feature.feature_names(names, basis)
    _, missing = db_aug.columns(search)
    if missing:
        raise ValueError(f"db_aug has no velocity channel {missing[0]!r}: made with other components or query "
                         "channels (use feature.database(db, query_channels))")
    s = db.clip_starts
    j = int(np.argmax(np.diff(s)))  # on its longest clip (cheap): the same velocities (window, weight, basis)?
    want = feature.rows(db.frames[s[j]: s[j + 1]][:, db.columns(names)[0]], basis)
    if not np.allclose(db_aug.frames[s[j]: s[j + 1]][:, db_aug.columns(search)[0]], want, rtol=1e-9, atol=1e-12):
        raise ValueError("db_aug's velocity channels differ from this feature's (other window, weight or "
                         "components): use feature.database(db, query_channels)")
    return db_aug, basis, search


def reconstruct_with_feature(db: MotionDatabase, queries: np.ndarray, params: OLNGParams | None = None,
                             feature: MotionFeature | None = None, query_channels: Sequence[str] | None = None,
                             db_aug: MotionDatabase | None = None) -> Batch:
    """:func:`~.graph.reconstruct` with the velocity feature; poses of the database's own channels.

    The k-NN search runs over the query channels and their velocity channels only (a partial query
    gets the velocities of its own channels).

    Parameters
    ----------
    db : MotionDatabase
        D channels.
    queries : ndarray, shape (n, Q)
        Query frames (NaN rows: dropped frames).
    params : OLNGParams, optional
    feature : MotionFeature, optional
        None: the plain reconstruction.
    query_channels : sequence of str, optional
        The query columns' channels (default: all of the database's).
    db_aug : MotionDatabase, optional
        ``feature.database(db)`` (with components: ``feature.database(db, query_channels)``) if
        already made; checked to match ``db``.

    Returns
    -------
    Batch
        ``poses`` and ``best`` (n, D); ``best_index`` rows of ``db`` (the same in ``db_aug``).

    Raises
    ------
    ValueError
        As :func:`~.graph.reconstruct`, or on a ``db_aug`` of another database or feature.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0.0, 4 * np.pi, 200)
    >>> clip = np.column_stack([np.sin(t), np.cos(t), np.sin(2 * t)])
    >>> db = MotionDatabase.from_clips([clip], ["a", "b", "c"])
    >>> b = reconstruct_with_feature(db, clip[50:80, :2], OLNGParams(k=16, window=8, paths=4),
    ...                              MotionFeature(window=4, weight=4.0), query_channels=["a", "b"])
    >>> b.poses.shape
    (30, 3)
    """
    if feature is None:
        return reconstruct(db, queries, params, query_channels)
    names = _query_names(db, query_channels)
    aug, basis, search = _prepared(db, feature, names, db_aug)
    q = np.asarray(queries, dtype=float)
    if q.ndim != 2 or q.shape[1] != len(names):
        raise ValueError(f"queries must be (frames, {len(names)}) (one column per query channel), got shape {q.shape}")
    b = reconstruct(aug, feature.queries(q, basis), params, search)
    d = len(db.channels)
    return Batch(b.poses[:, :d].copy(), b.best[:, :d].copy(), b.best_index, b.best_length, b.best_cost, b.seconds)


class FeatureReconstructor:
    """:class:`~.graph.Reconstructor` with the velocity feature, one query frame at a time.

    Parameters
    ----------
    db : MotionDatabase
    params : OLNGParams, optional
    feature : MotionFeature, optional
        Default ``MotionFeature()``.
    query_channels : sequence of str, optional
    db_aug : MotionDatabase, optional
        As :func:`reconstruct_with_feature`.

    Raises
    ------
    ValueError
        As :class:`~.graph.Reconstructor`.
    """

    def __init__(self, db: MotionDatabase, params: OLNGParams | None = None, feature: MotionFeature | None = None,
                 query_channels: Sequence[str] | None = None, db_aug: MotionDatabase | None = None):
        self.feature = feature or MotionFeature()
        self.names = _query_names(db, query_channels)
        self.db = db
        self.db_aug, basis, search = _prepared(db, self.feature, self.names, db_aug)
        self.reconstructor = Reconstructor(self.db_aug, params, search)
        self.stream = self.feature.stream(len(self.names), basis)

    def reset(self) -> None:
        """Forget the graph and the past frames."""
        self.reconstructor.reset()
        self.stream.reset()

    def step(self, query: np.ndarray) -> Step | None:
        """One query frame (Q,): the step with the pose of the database's channels (None for a NaN frame).

        Raises
        ------
        ValueError
            On a wrong number of values or infinite values.
        """
        row = self.stream.push(query)
        if not np.all(np.isfinite(row)):
            return None
        s = self.reconstructor.step(row)
        d = len(self.db.channels)
        return Step(s.pose[:d].copy(), s.best[:d].copy(), s.best_index, s.best_length, s.best_cost, s.n_paths,
                    s.seconds)
