"""Input files checked before Blender loads anything: a missing, empty, binary, truncated or malformed
file is refused with one line naming the file and the problem (exit code 2), instead of an importer's
traceback after Blender has started.

The checks are cheap and need no Blender: a BVH is read as text and walked as Blender's importer walks it
(hierarchy, MOTION header, one line of finite numbers per frame, as many as the hierarchy's channels); a
.blend's header is looked at; PC2/MDD caches, Live Link Face CSV takes and markers files are read with the
core's own readers. ``check_inputs`` dispatches on the extension.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import _blender_env as be

from .errors import CliError

BVH_CHANNELS = {"xposition", "yposition", "zposition", "xrotation", "yrotation", "zrotation"}
BLEND_MAGIC = (b"BLENDER", b"\x1f\x8b", b"\x28\xb5\x2f\xfd")  # plain, gzip- and zstd-compressed .blend


def check_file(path: str, exts: Sequence[str]) -> str:
    """The extension (lower case) of ``path``; CliError unless it is an existing file with one of ``exts``."""
    if os.path.isdir(path):
        raise CliError(f"{path} is a folder, expected a {kinds_text(exts)} file")
    if not os.path.isfile(path):
        raise CliError(f"{path} is not a regular file" if os.path.exists(path) else f"no such file: {path}")
    ext = os.path.splitext(path)[1].lower()
    if ext not in exts:
        raise CliError(f"unsupported input {path!r}: expected a {kinds_text(exts)} file")
    if not os.access(path, os.R_OK):
        raise CliError(f"cannot read {path}: permission denied")
    return ext


def kinds_text(exts: Sequence[str]) -> str:
    return " or ".join(exts) if len(exts) < 3 else f"{', '.join(exts[:-1])}, or {exts[-1]}"


def expand_folders(paths: Iterable[str], exts: Sequence[str]) -> list[str]:
    """Absolute paths; a folder stands for its files with one of the extensions ``exts`` (sorted).

    Files are returned as given (any extension: the caller sorts them out), duplicates included.
    """
    out: list[str] = []
    for p in paths:
        p = os.path.abspath(p)
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p) if f.lower().endswith(tuple(exts)))
            if not found:
                raise CliError(f"no {' or '.join(exts)} files in the folder {p}")
            out += found
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise CliError(f"no such file or folder: {p}")
    return out


def read_bytes(path: str, what: str) -> bytes:
    """The file's bytes; CliError when it cannot be read or is empty."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as ex:
        raise CliError(f"cannot read {path}: {ex.strerror or ex}") from ex
    if not data.strip():
        raise CliError(f"{path}: the file is empty, not a {what}")
    return data


def text_of(path: str, data: bytes, what: str) -> str:
    """``data`` as UTF-8 text; CliError for binary data or another encoding."""
    if b"\0" in data[:65536]:
        raise CliError(f"{path}: a binary file, not a {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as ex:
        line = data[:ex.start].count(b"\n") + 1
        raise CliError(f"{path}: not UTF-8 text (byte 0x{data[ex.start]:02x} on line {line}); "
                       f"Blender reads a {what} as UTF-8") from ex


# --------------------------------------------------------------------------------------------------
# BVH


@dataclass(frozen=True)
class BvhSummary:
    joints: int
    channels: int
    frames: int
    frame_time: float


class _BvhLines:
    """The non-empty lines of an open BVH file as (line number, tokens), read one at a time (a long clip
    is never held in memory whole)."""

    def __init__(self, path: str, fh):
        self.path = path
        self.rest = self._non_empty(fh)

    def _non_empty(self, fh) -> Iterator[tuple[int, list[str]]]:
        try:
            for n, line in enumerate(fh, 1):
                tokens = line.split()
                if tokens:
                    yield n, tokens
        except UnicodeDecodeError:
            with open(self.path, "rb") as raw:
                text_of(self.path, raw.read(), "BVH file")  # raises, naming the byte and its line
            raise

    def error(self, problem: str, line: int | None = None) -> CliError:
        where = f" (line {line})" if line is not None else ""
        return CliError(f"{self.path}: malformed BVH{where}: {problem}")

    def next(self, expected: str) -> tuple[int, list[str]]:
        item = next(self.rest, None)
        if item is None:
            raise self.error(f"the file ends where {expected} was expected (truncated?)")
        return item

    def numbers(self, line: int, tokens: Sequence[str], what: str) -> list[float]:
        try:
            values = [float(x) for x in tokens]
        except ValueError:
            bad = next(x for x in tokens if not _is_number(x))
            raise self.error(f"{what}: {bad!r} is not a number", line) from None
        total = sum(values)
        if total - total != 0.0:  # a nan or inf among them (or finite values whose sum overflows): look closer
            infinite = next((x for x, v in zip(tokens, values) if not math.isfinite(v)), None)
            if infinite is not None:
                raise self.error(f"{what}: {infinite!r} is not a finite number", line)
        return values


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _bvh_joint(lines: _BvhLines, line: int, tokens: list[str]) -> int:
    """A ROOT/JOINT header, its '{', OFFSET and CHANNELS lines (the layout Blender's importer reads);
    returns the joint's number of channels."""
    if len(tokens) < 2:
        raise lines.error(f"{tokens[0]} without a name", line)
    n, t = lines.next("'{'")
    if t != ["{"]:
        raise lines.error(f"expected '{{' on its own line after {tokens[0]} {tokens[1]}, got {' '.join(t)!r}", n)
    n, t = lines.next("OFFSET")
    if t[0].upper() != "OFFSET" or len(t) != 4:
        raise lines.error(f"expected 'OFFSET x y z' for {tokens[1]}, got {' '.join(t)!r}", n)
    lines.numbers(n, t[1:], "OFFSET")
    n, t = lines.next("CHANNELS")
    if t[0].upper() != "CHANNELS" or len(t) < 2:
        raise lines.error(f"expected 'CHANNELS n ...' for {tokens[1]}, got {' '.join(t)!r}", n)
    try:
        count = int(t[1])
    except ValueError:
        raise lines.error(f"CHANNELS count {t[1]!r} is not a whole number", n) from None
    names = [c.lower() for c in t[2:]]
    if count != len(names):
        raise lines.error(f"CHANNELS says {count} but names {len(names)} channel(s)", n)
    unknown = [c for c in t[2:] if c.lower() not in BVH_CHANNELS]
    if unknown:
        raise lines.error(f"unknown channel {unknown[0]!r} (expected X/Y/Z position or rotation)", n)
    rotations = sum(c.endswith("rotation") for c in names)
    if rotations not in (0, 3):
        raise lines.error(f"{tokens[1]} has {rotations} rotation channel(s): Blender's importer needs all three "
                          "or none", n)
    return count


def _bvh_end_site(lines: _BvhLines, line: int) -> None:
    n, t = lines.next("'{'")
    if t != ["{"]:
        raise lines.error(f"expected '{{' on its own line after End Site, got {' '.join(t)!r}", n)
    n, t = lines.next("OFFSET")
    if t[0].upper() != "OFFSET" or len(t) != 4:
        raise lines.error(f"expected 'OFFSET x y z' in End Site, got {' '.join(t)!r}", n)
    lines.numbers(n, t[1:], "OFFSET")


def check_bvh(path: str) -> BvhSummary:
    """Check a BVH file as Blender's importer reads it; CliError naming the file, the line and the problem.

    Checked: text (UTF-8, not binary, not empty), HIERARCHY first, every ROOT/JOINT with '{', OFFSET and
    CHANNELS lines (known channel names, all three rotations or none), End Site blocks, balanced braces,
    a MOTION section with 'Frames: N' (N >= 1) and 'Frame Time: t' (t > 0), then exactly N lines of
    exactly as many finite numbers as the hierarchy has channels.
    """
    try:
        with open(path, "rb") as raw:
            head = raw.read(65536)
    except OSError as ex:
        raise CliError(f"cannot read {path}: {ex.strerror or ex}") from ex
    if not head.strip() and os.path.getsize(path) <= len(head):
        raise CliError(f"{path}: the file is empty, not a BVH file")
    if b"\0" in head:
        raise CliError(f"{path}: a binary file, not a BVH file")
    with open(path, encoding="utf-8") as fh:  # universal newlines: \r and \r\n end lines, as for the importer
        return _check_bvh_lines(_BvhLines(path, fh))


def _check_bvh_lines(lines: _BvhLines) -> BvhSummary:
    path = lines.path
    n, t = lines.next("HIERARCHY")
    if t[0].upper() != "HIERARCHY":
        raise CliError(f"{path}: not a BVH file (it does not start with HIERARCHY)")
    depth, joints, channels = 0, 0, 0
    while True:
        n, t = lines.next("MOTION" if depth == 0 and joints else "the hierarchy")
        word = t[0].upper()
        if word in ("ROOT", "JOINT"):
            if (word == "ROOT") != (depth == 0):
                raise lines.error(f"{word} {' '.join(t[1:2])} at nesting depth {depth}", n)
            channels += _bvh_joint(lines, n, t)
            joints += 1
            depth += 1
        elif word == "END" and len(t) >= 2 and t[1].upper() == "SITE":
            _bvh_end_site(lines, n)
            depth += 1
        elif t == ["}"]:
            if depth == 0:
                raise lines.error("'}' without a matching '{'", n)
            depth -= 1
        elif word == "MOTION":
            break
    if not joints:
        raise lines.error("no ROOT joint before MOTION", n)
    if depth:
        raise lines.error(f"{depth} joint block(s) not closed with '}}' before MOTION", n)
    if not channels:
        raise lines.error("the hierarchy has no channels: nothing is animated", n)
    n, t = lines.next("'Frames: N'")
    if len(t) != 2 or t[0].lower() != "frames:":
        raise lines.error(f"expected 'Frames: N' after MOTION, got {' '.join(t)!r}", n)
    try:
        frames = int(t[1])
    except ValueError:
        raise lines.error(f"the frame count {t[1]!r} is not a whole number", n) from None
    if frames < 1:
        raise lines.error(f"'Frames: {frames}': no frames to import", n)
    n, t = lines.next("'Frame Time: t'")
    if len(t) != 3 or t[0].lower() != "frame" or t[1].lower() != "time:":
        raise lines.error(f"expected 'Frame Time: seconds' after 'Frames:', got {' '.join(t)!r}", n)
    frame_time = lines.numbers(n, t[2:], "Frame Time")[0]
    if frame_time <= 0:
        raise lines.error(f"'Frame Time: {t[2]}' must be positive (seconds per frame)", n)
    count = 0
    for n, t in lines.rest:
        count += 1
        if len(t) != channels:
            cut = " (truncated?)" if len(t) < channels and next(lines.rest, None) is None else ""
            raise lines.error(f"frame {count} has {len(t)} values, the hierarchy has {channels} channels{cut}", n)
        if count == frames + 1:
            extra = 1 + sum(1 for _ in lines.rest)
            raise lines.error(f"{frames + extra} frame lines, the header announces {frames}", n)
        lines.numbers(n, t, f"frame {count}")
    if count < frames:
        raise lines.error(f"{count} frame line(s), the header announces {frames} (truncated?)")
    return BvhSummary(joints=joints, channels=channels, frames=frames, frame_time=frame_time)


# --------------------------------------------------------------------------------------------------
# other inputs


def check_blend(path: str) -> None:
    """A .blend's header (plain, gzip or zstd); CliError for an empty or foreign file."""
    data = b""
    try:
        with open(path, "rb") as fh:
            data = fh.read(16)
    except OSError as ex:
        raise CliError(f"cannot read {path}: {ex.strerror or ex}") from ex
    if not data:
        raise CliError(f"{path}: the file is empty, not a .blend file")
    if not data.startswith(BLEND_MAGIC):
        raise CliError(f"{path}: not a .blend file (no BLENDER header)")


def check_obj(path: str) -> int:
    """The number of vertex ('v') lines of an OBJ; CliError for an empty, binary or vertex-less file."""
    data = read_bytes(path, "OBJ file")
    if b"\0" in data[:65536]:
        raise CliError(f"{path}: a binary file, not an OBJ file")
    vertices = sum(1 for line in data.splitlines() if line.startswith((b"v ", b"v\t")))
    if not vertices:
        raise CliError(f"{path}: no vertices ('v x y z' lines): not an OBJ mesh")
    return vertices


def cache_samples(path: str) -> tuple[int, int]:
    """(samples, vertices) of a PC2 or MDD point cache; CliError when it is missing or unreadable."""
    ext = check_file(path, (".pc2", ".mdd"))
    be.add_core_to_path()
    from anim_signals.meshio.meshcache import read_mdd, read_pc2  # noqa: PLC0415 - the checkout's core

    try:
        samples = read_pc2(path)[0] if ext == ".pc2" else read_mdd(path)[0]
    except (OSError, ValueError) as ex:
        raise CliError(f"cannot read the point cache {path}: {ex}") from ex
    if samples.shape[0] < 1 or samples.shape[1] < 1:
        raise CliError(f"the point cache {path} holds {samples.shape[0]} samples of {samples.shape[1]} vertices: "
                       "nothing to play")
    return int(samples.shape[0]), int(samples.shape[1])


def check_live_link_csv(path: str, fps: float | None = None) -> None:
    """A Live Link Face CSV take, read with the core's reader (and resampled at ``fps`` when given);
    CliError with the reader's message when it is not one, or has no ARKit blendshape column."""
    be.add_core_to_path()
    from anim_signals.motiondb import livelink  # noqa: PLC0415 - the checkout's core

    text_of(path, read_bytes(path, "Live Link Face CSV"), "Live Link Face CSV")
    try:
        rec = livelink.read_csv(path)
        cols = [j for j, n in enumerate(rec.names) if n in livelink.ARKIT_BLENDSHAPES]
        if not cols:
            raise CliError(f"{path}: no ARKit blendshape column (eyeBlinkLeft, jawOpen, ...)")
        if fps is not None:
            livelink.resample(rec.times, rec.values[:, cols], fps, rate=rec.rate)
    except (OSError, ValueError) as ex:
        raise CliError(naming(path, ex)) from ex


def check_markers(path: str) -> None:
    """A markers file (YAML "source:target" pairs), read with the core's reader."""
    be.add_core_to_path()
    from anim_signals.transfer import read_markers  # noqa: PLC0415 - the checkout's core

    text_of(path, read_bytes(path, "markers file"), "markers file")
    try:
        markers = read_markers(path)
    except (OSError, ValueError) as ex:
        raise CliError(f"bad markers file: {naming(path, ex)}") from ex
    if not len(markers.markers):
        raise CliError(f"{path}: no markers (expected '- \"source:target\"' lines under markers:)")


def naming(path: str, ex: Exception) -> str:
    """The exception's message, starting with ``path`` unless it names the file already."""
    text = (ex.strerror if isinstance(ex, OSError) and ex.strerror else str(ex)).strip()
    return text if path in text else f"{path}: {text}"


def check_inputs(paths: Iterable[str], *, csv_fps: float | None = None) -> None:
    """Check every file by its extension (.bvh, .blend, .obj, .pc2/.mdd, .csv, .yml/.yaml)."""
    for path in paths:
        ext = os.path.splitext(path)[1].lower()
        if ext == ".bvh":
            check_bvh(path)
        elif ext == ".blend":
            check_blend(path)
        elif ext == ".obj":
            check_obj(path)
        elif ext in (".pc2", ".mdd"):
            cache_samples(path)
        elif ext == ".csv":
            check_live_link_csv(path, csv_fps)
        elif ext in (".yml", ".yaml"):
            check_markers(path)
