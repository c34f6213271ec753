"""Point-cache files of deforming meshes: PC2 (POINTCACHE2) and MDD, read and written with numpy.

Both hold one (V, 3) float32 block per sample; Blender's Mesh Cache modifier plays them.  PC2 is
little-endian with a 32-byte header; MDD is big-endian with a per-sample time table.
"""

from __future__ import annotations

import math
import os
import struct
from typing import NamedTuple

import numpy as np

__all__ = ["CacheHeader", "read_cache_header", "read_mdd", "read_pc2", "write_mdd", "write_pc2"]

_PC2_SIGNATURE = b"POINTCACHE2\0"


class CacheHeader(NamedTuple):
    """What a point-cache file's header says, and how many bytes the file really has."""

    n_vertices: int
    n_samples: int
    expected_bytes: int  # the size the header promises
    actual_bytes: int

    @property
    def whole_samples(self) -> int:
        """Complete samples in the file (fewer than ``n_samples`` when it is truncated)."""
        body = self.expected_bytes - 12 * self.n_vertices * self.n_samples  # header (+ MDD time table)
        return max(0, min(self.n_samples, (self.actual_bytes - body) // (12 * self.n_vertices)))


def read_cache_header(path: str | os.PathLike, cache_format: str) -> CacheHeader:
    """Read only the header of a PC2 or MDD file (the file itself can be gigabytes).

    Parameters
    ----------
    path : str or os.PathLike
    cache_format : {"PC2", "MDD"}

    Returns
    -------
    CacheHeader
        Vertex and sample counts, and the promised and real file sizes: a file is truncated when
        ``actual_bytes < expected_bytes``.

    Raises
    ------
    ValueError
        If ``cache_format`` is neither, or the header is missing or damaged (the message says which,
        without the path: callers name the file their own way).
    OSError
        If the file cannot be read.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "cloth.pc2")
    ...     write_pc2(path, np.zeros((4, 10, 3)))
    ...     header = read_cache_header(path, "PC2")
    >>> header.n_samples, header.n_vertices, header.expected_bytes == header.actual_bytes
    (4, 10, True)
    """
    if cache_format not in ("PC2", "MDD"):
        raise ValueError(f"cache_format must be 'PC2' or 'MDD', got {cache_format!r}")
    with open(path, "rb") as fh:
        head = fh.read(32 if cache_format == "PC2" else 8)
    if cache_format == "PC2":
        if len(head) < 32 or head[:12] != _PC2_SIGNATURE:
            raise ValueError("is not a PC2 file (no POINTCACHE2 header)")
        _, n_vert, _, _, n_samples = struct.unpack("<iiffi", head[12:32])
        size = 32 + 12 * n_vert * n_samples
    else:
        if len(head) < 8:
            raise ValueError("is not an MDD file (no header)")
        n_samples, n_vert = struct.unpack(">ii", head)
        size = 8 + 4 * n_samples + 12 * n_vert * n_samples
    if n_vert <= 0 or n_samples <= 0:
        raise ValueError(f"has a damaged header ({n_vert} vertices, {n_samples} samples)")
    return CacheHeader(int(n_vert), int(n_samples), int(size), os.path.getsize(path))


def read_pc2(path: str | os.PathLike) -> tuple[np.ndarray, float, float]:
    """Read a PC2 point cache.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    samples : ndarray of float64, shape (n, V, 3)
        Vertex positions per sample, in the file's units (Blender: local coordinates).
    start : float
        Frame of the first sample.
    rate : float
        Frames per sample (the PC2 "sample rate").

    Raises
    ------
    ValueError
        If the file is not a PC2 file, is truncated, or holds NaN / infinite values.
    OSError
        If the file cannot be read.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> samples = np.arange(2 * 3 * 3, dtype=float).reshape(2, 3, 3)  # 2 samples of 3 vertices
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "cloth.pc2")
    ...     write_pc2(path, samples, start=10.0, rate=0.5)
    ...     back, start, rate = read_pc2(path)
    >>> bool(np.array_equal(back, samples)), start, rate
    (True, 10.0, 0.5)
    """
    with open(path, "rb") as fh:
        header = fh.read(32)
        if len(header) < 32 or header[:12] != _PC2_SIGNATURE:
            raise ValueError(f"{path}: not a PC2 (POINTCACHE2) file")
        _, n_verts, start, rate, n_samples = struct.unpack("<iiffi", header[12:32])
        if n_samples <= 0 or n_verts <= 0:
            raise ValueError(f"{path}: not a PC2 file with points ({n_samples} samples of {n_verts} vertices)")
        if not (math.isfinite(start) and math.isfinite(rate)):
            raise ValueError(f"{path}: the header's start frame or sample rate is not a finite number")
        data = np.fromfile(fh, dtype="<f4", count=n_samples * n_verts * 3)
    if data.size != n_samples * n_verts * 3:
        raise ValueError(f"{path}: truncated ({data.size // 3} of {n_samples * n_verts} points)")
    return _finite_points(path, data, n_samples, n_verts), float(start), float(rate)


def _finite_points(path: str | os.PathLike, data: np.ndarray, n_samples: int, n_verts: int) -> np.ndarray:
    """The points as (n, V, 3) float64, or ValueError naming the file and the first bad sample."""
    points = data.reshape(n_samples, n_verts, 3).astype(np.float64)
    bad = ~np.isfinite(points)
    if bad.any():
        sample = int(np.argmax(bad.any(axis=(1, 2))))
        raise ValueError(f"{path}: sample {sample} has NaN or infinite coordinates")
    return points


def write_pc2(path: str | os.PathLike, samples: np.ndarray, *, start: float = 0.0, rate: float = 1.0) -> None:
    """Write a PC2 point cache (float32, little-endian).

    Parameters
    ----------
    path : str or os.PathLike
    samples : ndarray, shape (n, V, 3)
        Vertex positions per sample.
    start : float
        Frame of the first sample.
    rate : float
        Frames per sample.

    Raises
    ------
    ValueError
        If ``samples`` is not (n, V, 3).
    OSError
        If the file cannot be written.
    """
    s = np.asarray(samples, dtype="<f4")
    if s.ndim != 3 or s.shape[2] != 3:
        raise ValueError(f"samples must be (n, V, 3), got {s.shape}")
    with open(path, "wb") as fh:
        fh.write(_PC2_SIGNATURE + struct.pack("<iiffi", 1, s.shape[1], float(start), float(rate), s.shape[0]))
        fh.write(s.tobytes())


def read_mdd(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read an MDD point cache.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    samples : ndarray of float64, shape (n, V, 3)
        Vertex positions per sample.
    times : ndarray of float64, shape (n,)
        The file's time of each sample (seconds, as written by the exporter).

    Raises
    ------
    ValueError
        If the file is not an MDD file, is truncated, or holds NaN / infinite values.
    OSError
        If the file cannot be read.
    """
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise ValueError(f"{path}: not an MDD file")
        n_samples, n_verts = struct.unpack(">ii", head)
        if n_samples <= 0 or n_verts <= 0:
            raise ValueError(f"{path}: not an MDD file")
        times = np.fromfile(fh, dtype=">f4", count=n_samples).astype(np.float64)
        data = np.fromfile(fh, dtype=">f4", count=n_samples * n_verts * 3)
    if data.size != n_samples * n_verts * 3 or times.size != n_samples:
        raise ValueError(f"{path}: truncated ({data.size // 3} of {n_samples * n_verts} points)")
    if not np.all(np.isfinite(times)):
        raise ValueError(f"{path}: the sample times have NaN or infinite values")
    return _finite_points(path, data, n_samples, n_verts), times


def write_mdd(path: str | os.PathLike, samples: np.ndarray, times: np.ndarray | None = None) -> None:
    """Write an MDD point cache (float32, big-endian).

    Parameters
    ----------
    path : str or os.PathLike
    samples : ndarray, shape (n, V, 3)
        Vertex positions per sample.
    times : ndarray, shape (n,), optional
        Time of each sample (default ``0 .. n-1``).

    Raises
    ------
    ValueError
        If ``samples`` is not (n, V, 3).
    OSError
        If the file cannot be written.
    """
    s = np.asarray(samples, dtype=">f4")
    if s.ndim != 3 or s.shape[2] != 3:
        raise ValueError(f"samples must be (n, V, 3), got {s.shape}")
    t = np.arange(s.shape[0], dtype=float) if times is None else np.asarray(times, dtype=float)
    with open(path, "wb") as fh:
        fh.write(struct.pack(">ii", s.shape[0], s.shape[1]))
        fh.write(t.astype(">f4").tobytes())
        fh.write(s.tobytes())
