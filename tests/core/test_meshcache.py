"""PC2 / MDD round trips and the shared horse's header (read by an independent struct parse)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from anim_signals.meshio.meshcache import read_cache_header, read_mdd, read_pc2, write_mdd, write_pc2

HORSE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mesh" / "horse_gallop" / "horse_gallop.pc2"


def test_pc2_round_trip(tmp_path):
    s = np.random.default_rng(0).normal(size=(5, 7, 3)).astype(np.float32)
    write_pc2(tmp_path / "a.pc2", s, start=2.0, rate=0.5)
    got, start, rate = read_pc2(tmp_path / "a.pc2")
    np.testing.assert_array_equal(got, s)
    assert (start, rate) == (2.0, 0.5)
    raw = (tmp_path / "a.pc2").read_bytes()
    assert raw[:12] == b"POINTCACHE2\0" and struct.unpack("<i", raw[16:20])[0] == 7 and len(raw) == 32 + 5 * 7 * 12


def test_mdd_round_trip_is_big_endian(tmp_path):
    s = np.random.default_rng(1).normal(size=(4, 3, 3)).astype(np.float32)
    write_mdd(tmp_path / "a.mdd", s, times=[0.0, 0.1, 0.2, 0.3])
    got, times = read_mdd(tmp_path / "a.mdd")
    np.testing.assert_array_equal(got, s)
    np.testing.assert_allclose(times, [0.0, 0.1, 0.2, 0.3], rtol=1e-6)
    raw = (tmp_path / "a.mdd").read_bytes()
    assert struct.unpack(">ii", raw[:8]) == (4, 3)


def test_bad_files(tmp_path):
    (tmp_path / "x.pc2").write_bytes(b"nope")
    with pytest.raises(ValueError, match="not a PC2"):
        read_pc2(tmp_path / "x.pc2")
    write_pc2(tmp_path / "t.pc2", np.zeros((3, 4, 3)))
    (tmp_path / "t.pc2").write_bytes((tmp_path / "t.pc2").read_bytes()[:-10])
    with pytest.raises(ValueError, match="truncated"):
        read_pc2(tmp_path / "t.pc2")


def test_shared_horse_header():
    if not HORSE.exists():
        pytest.skip(f"shared data not available: {HORSE}")
    samples, start, rate = read_pc2(HORSE)
    assert samples.shape == (48, 8431, 3) and start == 0.0
    assert np.all(np.isfinite(samples)) and np.ptp(samples[:, :, 0]) > 0


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
def test_cache_header_counts_and_truncation(tmp_path, fmt):
    """The header reader agrees with the full readers, and a cut file shows as truncated with the
    whole samples it still holds."""
    samples = np.random.default_rng(0).normal(size=(6, 5, 3))
    path = tmp_path / f"c.{fmt.lower()}"
    (write_pc2 if fmt == "PC2" else write_mdd)(path, samples)
    header = read_cache_header(path, fmt)
    assert (header.n_samples, header.n_vertices) == (6, 5)
    assert header.expected_bytes == header.actual_bytes == path.stat().st_size
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 12 * 5 * 2 - 7])  # two samples and a bit gone
    cut = read_cache_header(path, fmt)
    assert cut.actual_bytes < cut.expected_bytes and cut.whole_samples == 3
    with pytest.raises(ValueError, match="truncated"):
        (read_pc2 if fmt == "PC2" else read_mdd)(path)


def test_cache_header_refuses_what_is_no_cache(tmp_path):
    path = tmp_path / "x.pc2"
    path.write_bytes(b"hello")
    with pytest.raises(ValueError, match="not a PC2 file"):
        read_cache_header(path, "PC2")
    with pytest.raises(ValueError, match="not an MDD file"):
        read_cache_header(path, "MDD")
    with pytest.raises(ValueError, match="cache_format"):
        read_cache_header(path, "OBJ")
