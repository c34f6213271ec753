"""Live Link Face CSV reading / writing / resampling (anim_signals.motiondb.livelink) and the generated ARKit face
(anim_signals.motiondb.generated)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from anim_signals.motiondb import generated as gen
from anim_signals.motiondb import livelink as ll

FACIAL = (Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "facial").resolve()


def _shared_csvs() -> list[Path]:
    files = sorted(FACIAL.glob("*.csv")) if FACIAL.is_dir() else []
    if not files:
        pytest.skip(f"shared facial data not available: {FACIAL}")
    return files


def test_names():
    assert len(ll.ARKIT_BLENDSHAPES) == 52 and len(set(ll.ARKIT_BLENDSHAPES)) == 52
    assert len(ll.CHANNELS) == 61
    assert set(ll.EYE_BLENDSHAPES) <= set(ll.ARKIT_BLENDSHAPES) and len(ll.EYE_BLENDSHAPES) == 14
    assert all("Eye" in n for n in ll.EYE_CHANNELS)


def test_timecode():
    assert ll.timecode_seconds("00:00:01:30.000", 60) == pytest.approx(1.5)
    assert ll.timecode_seconds("01:02:03:06.500", 30) == pytest.approx(3723 + 6.5 / 30)
    for s in (0.0, 12.345, 3723.5 + 1 / 60):
        assert ll.timecode_seconds(ll.format_timecode(s, 60), 60) == pytest.approx(s, abs=1e-5)
    with pytest.raises(ll.LiveLinkError):
        ll.split_timecode("12:00:00")


@pytest.mark.shared_data
def test_shared_csvs_parse():
    for path in _shared_csvs():
        rec = ll.read_csv(path)
        times, values, names = rec
        assert names[:52] == list(ll.ARKIT_BLENDSHAPES) and names[52:] == list(ll.ROTATIONS)
        assert values.shape == (times.size, 61)
        assert np.all(np.diff(times) > 0)
        assert rec.timecode_rate == 60.0
        ok = np.isfinite(values).all(axis=1)
        assert values[ok, :52].min() >= 0.0 and values[ok, :52].max() < 1.5
        if "S88" in path.name:  # the ~26/s take with gaps, and rows with BlendShapeCount 0
            assert rec.gaps and rec.nan_rows.size > 0
            assert 28 < rec.rate < 32
        if "JMTechArt" in path.name:
            assert rec.rate == pytest.approx(60.0, rel=0.02) and not rec.nan_rows.size
        res = ll.resample(times, values, 24.0)
        assert np.isfinite(res.values).all()
        assert res.times[-1] <= times[-1] + 1e-9


def _write_gappy(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    rate = 30.0
    n = 60
    times = np.arange(n) / rate
    keep = np.ones(n, dtype=bool)
    keep[20:26] = False  # 6 dropped frames (0.2 s gap)
    keep[40:52] = False  # 12 dropped frames (0.4 s gap: a long one)
    times = times[keep]
    values = gen.generated_expressions(n, seed=3, fps=rate)[keep]
    values = np.column_stack([values, np.zeros((values.shape[0], 9))])
    values[5] = np.nan  # tracking lost: the whole row
    values[9, 3] = np.nan  # one empty cell
    path = tmp_path / "gappy.csv"
    ll.write_csv(path, times, values, start_seconds=12 * 3600 + 0.5)
    return path, times, values


def test_gaps_and_nan_cells(tmp_path):
    path, times, values = _write_gappy(tmp_path)
    text = path.read_text().splitlines()
    assert text[6].endswith(",0") and text[6].count(",") == 1  # the all-NaN row as Live Link writes it
    rec = ll.read_csv(path)
    np.testing.assert_allclose(rec.times, times, atol=1e-5)
    assert list(rec.nan_rows) == [5, 9]
    assert np.isnan(rec.values[5]).all() and np.isnan(rec.values[9, 3]) and np.isfinite(rec.values[9, 4])
    assert [g.missing for g in rec.gaps] == [6, 12]
    assert rec.dropped_frames == 18
    assert rec.rate == pytest.approx(30.0, rel=1e-3)
    res = ll.resample(rec.times, rec.values, 30.0)
    assert res.values.shape == (60, 61) and np.isfinite(res.values).all()
    # Frames inside the gaps and at the NaN row are filled; only the 0.4 s gap is long.
    assert res.filled[21:26].all() and res.filled[41:52].all() and res.filled[5]
    assert not res.filled[:5].any() and not res.filled[30:40].any()
    assert res.long_gap[41:52].all() and not res.long_gap[21:26].any()
    # Linear fill across the gap.
    a, b = rec.values[19], rec.values[20]
    t = (res.times[22] - rec.times[19]) / (rec.times[20] - rec.times[19])
    np.testing.assert_allclose(res.values[22], a + t * (b - a), atol=1e-9)
    # Where there was data, the resampled values are the captured ones.
    np.testing.assert_allclose(res.values[0], values[0], atol=1e-9)


def test_round_trip(tmp_path):
    times = np.arange(50) / 60.0
    values = np.column_stack([gen.generated_expressions(50, seed=1, fps=60.0), np.linspace(-0.2, 0.3, 50)[:, None] * np.ones(9)])
    path = tmp_path / "rt.csv"
    ll.write_csv(path, times, values, start_seconds=3600 * 23 + 59 * 60 + 59.5)  # crosses midnight
    rec = ll.read_csv(path)
    np.testing.assert_allclose(rec.times, times, atol=2e-5)
    np.testing.assert_allclose(rec.values, values, atol=1e-9)
    assert rec.names == list(ll.CHANNELS) and not rec.gaps and not rec.nan_rows.size
    path2 = tmp_path / "rt2.csv"
    ll.write_csv(path2, rec.times, rec.values, rec.names, start_seconds=rec.start_seconds)
    assert path2.read_text() == path.read_text()


def test_bad_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ll.LiveLinkError):
        ll.read_csv(empty)
    other = tmp_path / "other.csv"
    other.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ll.LiveLinkError, match="Timecode"):
        ll.read_csv(other)
    header_only = tmp_path / "h.csv"
    header_only.write_text("Timecode,BlendShapeCount,JawOpen\n")
    with pytest.raises(ll.LiveLinkError, match="no frames"):
        ll.read_csv(header_only)
    with pytest.raises(ll.LiveLinkError):
        ll.read_csv(tmp_path / "missing.csv")
    all_nan = tmp_path / "nan.csv"
    all_nan.write_text("Timecode,BlendShapeCount,JawOpen\n00:00:00:00.000,0\n00:00:00:01.000,0\n")
    rec = ll.read_csv(all_nan)
    with pytest.raises(ValueError, match="no frame"):
        ll.resample(rec.times, rec.values, 24.0)


def test_generated_face():
    face = gen.generated_face(resolution=16)
    assert face.vertices.shape == (17 * 17, 3) and len(face.faces) == 256
    assert list(face.shape_keys) == list(ll.ARKIT_BLENDSHAPES)
    again = gen.generated_face(resolution=16)
    for name in ll.ARKIT_BLENDSHAPES:
        delta = face.shape_keys[name] - face.vertices
        assert np.abs(delta).max() > 1e-3, name  # every key moves something
        np.testing.assert_array_equal(face.shape_keys[name], again.shape_keys[name])
    # Regions: the jaw opens downwards below the mouth, the left blink moves the +x upper face.
    jaw = face.shape_keys["JawOpen"] - face.vertices
    moved = np.abs(jaw).max(axis=1) > 1e-4
    assert face.vertices[moved, 2].mean() < 0 and jaw[:, 2].min() < 0
    blink = face.shape_keys["EyeBlinkLeft"] - face.vertices
    moved = np.abs(blink).max(axis=1) > 1e-4
    assert face.vertices[moved, 0].min() > 0 and face.vertices[moved, 2].mean() > 0
    # Left/right mirror.
    right = face.shape_keys["EyeBlinkRight"] - face.vertices
    assert np.abs(right).max() == pytest.approx(np.abs(blink).max())
    w = np.zeros(52)
    w[ll.ARKIT_BLENDSHAPES.index("JawOpen")] = 1.0
    np.testing.assert_allclose(face.pose(w), face.shape_keys["JawOpen"])


def test_generated_expressions():
    a = gen.generated_expressions(120, seed=4)
    b = gen.generated_expressions(120, seed=4)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (120, 52) and a.min() >= 0 and a.max() <= 1
    assert np.abs(np.diff(a, axis=0)).max() < 0.5  # smooth
    assert not np.array_equal(a, gen.generated_expressions(120, seed=5))


def test_generated_names_importable_from_the_package():
    import anim_signals.motiondb as mdb

    assert mdb.generated_face is gen.generated_face and mdb.generated_expressions is gen.generated_expressions
    assert mdb.FaceMesh is gen.FaceMesh
