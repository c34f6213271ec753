"""Raster canvas, bitmap text, dendrogram image and the pure-zlib PNG writer (anim_signals.imaging.raster)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from anim_signals.imaging import raster


def decode_png(data: bytes) -> np.ndarray:
    """A tiny independent PNG decoder (8-bit RGB/RGBA, non-interlaced, all five filter types)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "bad signature"
    pos, idat, header, seen = 8, b"", None, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, f"bad CRC in {kind!r}"
        seen.append(kind)
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert seen[0] == b"IHDR" and seen[-1] == b"IEND"
    w, h, depth, ctype, _, _, interlace = header
    assert depth == 8 and ctype in (2, 6) and interlace == 0
    ch = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = w * ch
    assert len(raw) == h * (stride + 1)
    out = np.zeros((h, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        if f in (0, 2):  # none / up: no dependency along the row
            out[y] = prev = (line + (prev if f == 2 else 0)) & 0xFF
            continue
        for x in range(stride):
            a = cur[x - ch] if x >= ch else 0
            b = prev[x]
            c = prev[x - ch] if x >= ch else 0
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + p) & 0xFF
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch).astype(np.uint8)


def test_png_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    img = rng.random((7, 11, 4)).astype(np.float32)
    path = raster.write_png(tmp_path / "sub" / "x.png", img)
    dec = decode_png(open(path, "rb").read())
    assert dec.shape == (7, 11, 4)
    assert np.array_equal(dec, np.rint(img * 255).astype(np.uint8))
    # uint8 and RGB input; values outside [0, 1] are clipped
    u8 = rng.integers(0, 256, size=(3, 5, 4), dtype=np.uint8)
    assert np.array_equal(decode_png(raster.encode_png(u8)), u8)
    rgb = np.full((2, 3, 3), 2.0)
    dec = decode_png(raster.encode_png(rgb))
    assert dec.shape == (2, 3, 4) and np.all(dec == 255)
    with pytest.raises(ValueError):
        raster.encode_png(np.zeros((2, 2, 5)))
    with pytest.raises(ValueError, match="NaN"):
        raster.encode_png(np.full((2, 2, 4), np.nan))


def test_lines_rects_circles():
    img = raster.new_canvas(40, 60)
    assert img.shape == (40, 60, 4) and img.dtype == np.float32 and np.all(img == 1.0)
    red = (1.0, 0.0, 0.0, 1.0)
    raster.draw_line(img, 5, 10, 50, 10, red)  # horizontal, inclusive ends
    assert np.all(img[10, 5:51, 1] == 0.0) and img[10, 4, 1] == 1.0 and img[10, 51, 1] == 1.0
    assert np.all(img[9, :, 1] == 1.0) and np.all(img[11, :, 1] == 1.0)
    raster.draw_line(img, 30, 2, 30, 35, red, width=3)  # vertical, 3 px wide
    assert np.all(img[2:36, 29:32, 1] == 0.0) and np.all(img[20, 28, :] == 1.0)
    img2 = raster.new_canvas(20, 20)
    raster.draw_line(img2, 0, 0, 19, 19, (0, 0, 0, 1))  # diagonal
    assert all(img2[k, k, 0] == 0.0 for k in range(20))
    assert int(np.sum(img2[..., 0] == 0.0)) == 20
    raster.draw_line(img2, -50, 5, 100, 12, (0, 0, 0, 1))  # clipped, no error
    raster.fill_rect(img2, -5, -5, 3, 3, (0, 1, 0, 1))
    assert np.all(img2[:3, :3, 1] == 1.0) and np.all(img2[:3, :3, 0] == 0.0)
    raster.draw_rect(img2, 5, 5, 15, 15, (0, 0, 1, 1))
    assert img2[5, 10, 2] == 1.0 and img2[5, 10, 0] == 0.0 and img2[12, 9, 0] == 1.0  # outline only
    disc = raster.new_canvas(20, 20)
    raster.fill_circle(disc, 10, 10, 3, (0, 0, 0, 1))
    assert disc[10, 10, 0] == 0.0 and disc[10, 13, 0] == 0.0 and disc[10, 14, 0] == 1.0
    assert disc[12, 12, 0] == 0.0 and disc[13, 13, 0] == 1.0
    # alpha blending: half-transparent black over white is mid grey with full alpha
    img3 = raster.new_canvas(4, 4)
    raster.fill_rect(img3, 0, 0, 4, 4, (0, 0, 0, 0.5))
    assert np.allclose(img3[..., :3], 0.5) and np.allclose(img3[..., 3], 1.0)


def test_text():
    assert raster.text_size("abc", 1) == (17, raster.FONT_H)
    assert raster.text_size("abc", 2) == (34, 2 * raster.FONT_H)
    img = raster.new_canvas(20, 40)
    w, h = raster.draw_text(img, 2, 3, "I")
    assert (w, h) == (5, raster.FONT_H)
    ink = img[..., 0] < 0.5
    # the glyph 'I': a 3-wide bar on top and bottom rows and a 1-wide stem in the middle column
    assert np.array_equal(ink[3, 2:7], [False, True, True, True, False])
    assert np.all(ink[4:9, 4]) and not ink[5, 3] and not ink[5, 5]
    assert np.array_equal(ink[9, 2:7], [False, True, True, True, False])
    assert ink.sum() == 3 + 5 + 3
    # glyphs differ, unknown characters draw as '?', anchors move the text
    assert not np.array_equal(raster.glyph("A"), raster.glyph("B"))
    assert np.array_equal(raster.glyph("é"), raster.glyph("?"))
    assert raster.glyph("g")[7].any() and not raster.glyph("a")[7].any()  # descender row
    img = raster.new_canvas(20, 60)
    raster.draw_text(img, 50, 2, "ab", anchor="right", scale=2)
    cols = np.flatnonzero((img[..., 0] < 0.5).any(axis=0))
    assert cols.max() < 50 and cols.min() >= 50 - 22
    with pytest.raises(ValueError):
        raster.draw_text(img, 0, 0, "x", anchor="middle")


def test_to_blender_pixels_flips_rows():
    img = raster.new_canvas(2, 3)
    img[0] = (1.0, 0.0, 0.0, 1.0)  # top row red
    flat = raster.to_blender_pixels(img)
    assert flat.dtype == np.float32 and flat.shape == (2 * 3 * 4,)
    assert np.allclose(flat[-4:], (1.0, 0.0, 0.0, 1.0)) and np.allclose(flat[:4], 1.0)


def _three_groups(seed=0):
    from scipy.cluster.hierarchy import linkage

    rng = np.random.default_rng(seed)
    pts = np.concatenate([rng.normal(0, 0.3, (4, 2)), rng.normal((5, 0), 0.3, (3, 2)),
                          rng.normal((0, 9), 0.3, (3, 2))])
    return linkage(pts, "average"), [f"clip {i}" for i in range(10)]


def test_dendrogram_image(tmp_path):
    z, labels = _three_groups()
    img = raster.dendrogram_image(z, labels, width=600, highlight=[2], title="test", n_clusters=3)
    assert img.dtype == np.float32 and img.ndim == 3 and img.shape[1] == 600 and img.shape[2] == 4
    assert img.min() >= 0.0 and img.max() <= 1.0
    # decodes back as a PNG of the same size
    dec = decode_png(open(raster.write_png(tmp_path / "d.png", img), "rb").read())
    assert dec.shape == img.shape
    rgb = img[..., :3]
    # three clusters -> three palette colours present, plus grey links joining clusters
    for col in raster.PALETTE[:3]:
        assert np.any(np.all(np.abs(rgb - np.asarray(col[:3])) < 1e-6, axis=-1))
    assert np.any(np.all(np.abs(rgb - np.asarray(raster.GREY[:3])) < 1e-6, axis=-1))
    # the highlighted leaf's yellow band
    assert np.any(np.all(np.abs(rgb - np.asarray(raster.HIGHLIGHT[:3])) < 1e-6, axis=-1))
    # labels: ink in the label column on every leaf row (10 rows of text)
    tree_x0 = 10 + raster.text_size("clip 0", 2)[0] + 28
    ink_rows = np.flatnonzero((rgb[:, : tree_x0 - 20] < 0.8).any(axis=(1, 2)))
    groups = np.split(ink_rows, np.flatnonzero(np.diff(ink_rows) > 1) + 1)
    assert len(groups) >= 10 + 1  # title + ten labels
    # the root merge: a long vertical line near the right end of the tree
    linkish = ~np.all(rgb > 0.8, axis=-1)
    col_runs = linkish[40:, :].sum(axis=0)
    right = np.flatnonzero(col_runs > 60)
    assert right.size and right.max() > 600 - 60


def test_dendrogram_colours_from_given_clusters_and_errors():
    z, labels = _three_groups()
    flat = np.array([1, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    a = raster.dendrogram_image(z, labels, clusters=flat)
    b = raster.dendrogram_image(z, labels, n_clusters=3)
    assert np.array_equal(a, b)
    one = raster.dendrogram_image(np.zeros((0, 4)), ["only"])
    assert one.shape[0] > 10
    with pytest.raises(ValueError, match="linkage"):
        raster.dendrogram_image(z, labels[:-1])
    with pytest.raises(ValueError, match="clusters"):
        raster.dendrogram_image(z, labels, clusters=[1, 2])
    # many leaves switch to the small font and stay fast
    from scipy.cluster.hierarchy import linkage

    pts = np.random.default_rng(1).normal(size=(80, 3))
    big = raster.dendrogram_image(linkage(pts, "average"), [f"w{i}" for i in range(80)])
    assert big.shape[0] < 80 * 20
