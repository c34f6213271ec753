"""Point-cache files of deforming meshes: PC2 (POINTCACHE2) and MDD, read and written with numpy.

Both hold one (V, 3) float32 block per sample; Blender's Mesh Cache modifier plays them.  PC2 is
little-endian with a 32-byte header; MDD is big-endian with a per-sample time table.
"""

from __future__ import annotations

import os
import struct

import numpy as np

__all__ = ["read_mdd", "read_pc2", "write_mdd", "write_pc2"]

_PC2_SIGNATURE = b"POINTCACHE2\0"


def read_pc2(path: str | os.PathLike) -> tuple[np.ndarray, float, float]:
    """(samples (n, V, 3) float64, start frame, sample rate)."""
    with open(path, "rb") as fh:
        header = fh.read(32)
        if len(header) < 32 or header[:12] != _PC2_SIGNATURE:
            raise ValueError(f"{path}: not a PC2 (POINTCACHE2) file")
        _, n_verts, start, rate, n_samples = struct.unpack("<iiffi", header[12:32])
        data = np.fromfile(fh, dtype="<f4", count=n_samples * n_verts * 3)
    if data.size != n_samples * n_verts * 3:
        raise ValueError(f"{path}: truncated ({data.size // 3} of {n_samples * n_verts} points)")
    return data.reshape(n_samples, n_verts, 3).astype(np.float64), float(start), float(rate)


def write_pc2(path: str | os.PathLike, samples: np.ndarray, *, start: float = 0.0, rate: float = 1.0) -> None:
    s = np.asarray(samples, dtype="<f4")
    if s.ndim != 3 or s.shape[2] != 3:
        raise ValueError(f"samples must be (n, V, 3), got {s.shape}")
    with open(path, "wb") as fh:
        fh.write(_PC2_SIGNATURE + struct.pack("<iiffi", 1, s.shape[1], float(start), float(rate), s.shape[0]))
        fh.write(s.tobytes())


def read_mdd(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """(samples (n, V, 3) float64, times (n,))."""
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise ValueError(f"{path}: not an MDD file")
        n_samples, n_verts = struct.unpack(">ii", head)
        if n_samples <= 0 or n_verts <= 0:
            raise ValueError(f"{path}: not an MDD file")
        times = np.fromfile(fh, dtype=">f4", count=n_samples).astype(np.float64)
        data = np.fromfile(fh, dtype=">f4", count=n_samples * n_verts * 3)
    if data.size != n_samples * n_verts * 3:
        raise ValueError(f"{path}: truncated")
    return data.reshape(n_samples, n_verts, 3).astype(np.float64), times


def write_mdd(path: str | os.PathLike, samples: np.ndarray, times: np.ndarray | None = None) -> None:
    s = np.asarray(samples, dtype=">f4")
    if s.ndim != 3 or s.shape[2] != 3:
        raise ValueError(f"samples must be (n, V, 3), got {s.shape}")
    t = np.arange(s.shape[0], dtype=float) if times is None else np.asarray(times, dtype=float)
    with open(path, "wb") as fh:
        fh.write(struct.pack(">ii", s.shape[0], s.shape[1]))
        fh.write(t.astype(">f4").tobytes())
        fh.write(s.tobytes())
