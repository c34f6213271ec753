"""A motion database's k-NN index on disk: built once, loaded on open, rebuilt when its data change.

File layout (little-endian)::

    magic        8 bytes   b"ASKNNIX1"
    version      uint32    FORMAT_VERSION
    header_len   uint32
    header_sha   32 bytes  sha256 of the header
    header       JSON      backend, settings, content_hash, recall, recall_k, n, dim, build_seconds,
                           message, payload_length, payload_sha256, faiss_version
    payload      bytes     faiss.serialize_index of an HNSW / IVF index; empty for KDTREE and FLAT,
                           which are rebuilt from the frames on load (cKDTree: 0.1 s at 30k frames)

Files are written to a temporary file beside the target and moved over it (``os.replace``): a reader
sees the old file or the new one, never half of one.  :func:`load_index` checks everything before it
builds anything and raises :class:`IndexFileError` (with the reason) for a truncated, corrupt,
foreign, other-version or other-data file; :func:`cached_index` then rebuilds and says why.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .copies import RepeatedFrames, group_copies
from .knn import (
    IndexOptions,
    IndexTooLarge,
    NeighbourIndex,
    available_memory,
    build_index,
    import_faiss,
)

if TYPE_CHECKING:
    from .graph import MotionDatabase

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "IndexFileError",
    "cached_index",
    "content_hash",
    "index_path",
    "load_index",
    "save_index",
]

MAGIC = b"ASKNNIX1"
FORMAT_VERSION = 1
_FIXED = struct.Struct("<8sII32s")  # magic, version, header length, header sha256
_MAX_HEADER = 1 << 20


class IndexFileError(ValueError):
    """An index file that must not be used; ``reason`` says why (truncated, corrupt, foreign, ...)."""

    def __init__(self, reason: str, path: str | os.PathLike | None = None):
        self.reason = reason
        self.path = None if path is None else str(path)
        super().__init__(f"index file {self.path}: {reason}" if path is not None else reason)


def content_hash(db: MotionDatabase, cols: Sequence[int] | np.ndarray | None, options: IndexOptions) -> str:
    """sha256 (hex) of what an index answers for: the frames over ``cols``, clips, channels and options.

    Parameters
    ----------
    db : MotionDatabase
    cols : sequence of int, optional
        Query columns (default: all channels).
    options : IndexOptions

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> from anim_signals.motiondb.graph import MotionDatabase
    >>> db = MotionDatabase.from_clips([np.eye(3)], ["a", "b", "c"])
    >>> content_hash(db, [0, 1], IndexOptions()) == content_hash(db, [0, 2], IndexOptions())
    False
    """
    c = np.arange(db.frames.shape[1]) if cols is None else np.asarray(cols, dtype=np.int64)
    h = hashlib.sha256(b"anim-signals motiondb knn index\0")
    h.update(json.dumps({"columns": [db.channels[int(i)] for i in c], "cols": [int(i) for i in c],
                         "shape": list(db.frames.shape), "options": options.checked().as_dict()},
                        sort_keys=True).encode())
    h.update(np.ascontiguousarray(db.clip_starts, dtype="<i8").tobytes())
    step = max(1, (1 << 24) // max(1, 8 * c.size))  # about 16 MB of frames at a time
    for s in range(0, db.frames.shape[0], step):
        h.update(np.ascontiguousarray(db.frames[s:s + step][:, c], dtype="<f8").tobytes())
    return h.hexdigest()


def index_path(cache_dir: str | os.PathLike, digest: str) -> Path:
    """The cache file of an index with content hash ``digest`` in ``cache_dir``."""
    return Path(cache_dir) / f"knn-{digest[:24]}.asknn"


def save_index(index: NeighbourIndex, path: str | os.PathLike, digest: str) -> int:
    """Write ``index`` to ``path`` atomically (temporary file, then ``os.replace``).

    Parameters
    ----------
    index : NeighbourIndex
    path : str or path-like
    digest : str
        :func:`content_hash` of the data and options the index was built for.

    Returns
    -------
    int
        Bytes written.

    Raises
    ------
    OSError
        When the folder cannot be written (no file is left behind).
    """
    faiss, _ = import_faiss()
    inner = index.inner if isinstance(index, RepeatedFrames) else index  # copies: the distinct frames' index
    if index.backend in ("HNSW", "IVF"):
        payload = bytes(faiss.serialize_index(inner._impl))  # noqa: SLF001 - the store owns the format
    else:
        payload = b""
    header = json.dumps({
        "distinct": index.copies.distinct if isinstance(index, RepeatedFrames) else None,
        "backend": index.backend, "settings": index.settings, "content_hash": digest, "recall": index.recall,
        "recall_k": index.recall_k, "n": index.n, "dim": index.dim, "build_seconds": index.build_seconds,
        "message": index.message, "payload_length": len(payload),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
        "faiss_version": getattr(faiss, "__version__", None) if faiss is not None else None,
    }, sort_keys=True).encode()
    blob_head = _FIXED.pack(MAGIC, FORMAT_VERSION, len(header), hashlib.sha256(header).digest())
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob_head)
            f.write(header)
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return len(blob_head) + len(header) + len(payload)


def _read_header(path: Path) -> tuple[dict, int]:
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            fixed = f.read(_FIXED.size)
            if len(fixed) < 8:
                raise IndexFileError(f"truncated: {size} bytes, not even the magic number", path)
            if fixed[:8] != MAGIC:
                raise IndexFileError("not an Anim Signals k-NN index (foreign magic number)", path)
            if len(fixed) < _FIXED.size:
                raise IndexFileError(f"truncated: {size} bytes, the fixed header needs {_FIXED.size}", path)
            _, version, header_len, header_sha = _FIXED.unpack(fixed)
            if version != FORMAT_VERSION:
                raise IndexFileError(f"format version {version}, this version reads {FORMAT_VERSION}", path)
            if header_len > _MAX_HEADER:
                raise IndexFileError(f"corrupt: header length {header_len}", path)
            raw = f.read(header_len)
    except OSError as err:
        raise IndexFileError(f"cannot be read: {err}", path) from err
    if len(raw) < header_len:
        raise IndexFileError(f"truncated in the header ({size} bytes)", path)
    if hashlib.sha256(raw).digest() != header_sha:
        raise IndexFileError("corrupt: the header's checksum does not match", path)
    try:
        header = json.loads(raw.decode())
        for key in ("backend", "settings", "content_hash", "n", "dim", "payload_length", "payload_sha256"):
            header[key]  # noqa: B018 - presence check
    except (ValueError, KeyError, TypeError) as err:
        raise IndexFileError(f"corrupt header: {err}", path) from err
    return header, _FIXED.size + header_len


def load_index(path: str | os.PathLike, expected_hash: str, points: Any) -> NeighbourIndex:
    """The index saved at ``path``, after checking it was built for ``expected_hash`` and is intact.

    Parameters
    ----------
    path : str or path-like
    expected_hash : str
        :func:`content_hash` of the database, query columns and options now.
    points : ndarray, shape (N, Q)
        The database frames over the query columns (exact backends are rebuilt from them; approximate
        ones re-rank and measure distances with them).

    Returns
    -------
    NeighbourIndex

    Raises
    ------
    IndexFileError
        Truncated, corrupt, foreign, other format version, built for other data or options, or an
        approximate index without faiss to read it.  Nothing is returned in these cases.
    IndexTooLarge
        When the index would not fit in the memory available (the message gives the size).
    """
    p = Path(path)
    header, offset = _read_header(p)
    if header["content_hash"] != expected_hash:
        raise IndexFileError("built for other clips, channels or options (content hash differs)", p)
    x = np.asarray(points, dtype=float)
    if x.ndim != 2 or tuple(x.shape) != (header["n"], header["dim"]):
        raise IndexFileError(f"built for {header['n']} x {header['dim']} frames, the database has "
                             f"{'x'.join(map(str, x.shape))}", p)
    backend, settings, length = header["backend"], dict(header["settings"]), int(header["payload_length"])
    if backend not in ("KDTREE", "FLAT", "HNSW", "IVF"):
        raise IndexFileError(f"corrupt: unknown backend {backend!r}", p)
    size = p.stat().st_size
    if size < offset + length:
        raise IndexFileError(f"truncated: {size} bytes, the header announces {offset + length}", p)
    if size > offset + length:
        raise IndexFileError(f"corrupt: {size - offset - length} bytes after the index", p)
    have = available_memory()
    if have is not None and 2 * length > 0.8 * have:  # the bytes read, then the index made from them
        raise IndexTooLarge(f"the index {p} needs about {2 * length / 2**30:.2f} GiB to load, "
                            f"{have / 2**30:.2f} GiB are available")
    with open(p, "rb") as f:
        f.seek(offset)
        payload = f.read(length)
    if len(payload) != length:
        raise IndexFileError("truncated while reading", p)
    if hashlib.sha256(payload).hexdigest() != header["payload_sha256"]:
        raise IndexFileError("corrupt: the index data's checksum does not match", p)
    recall = header.get("recall")
    message = str(header.get("message", ""))
    copies = None
    if header.get("distinct"):  # built over the distinct frames: group them again (deterministic)
        copies = group_copies(x)
        if copies is None or copies.distinct != int(header["distinct"]):
            raise IndexFileError(f"built for {header['distinct']} distinct frames, the database has "
                                 f"{x.shape[0] if copies is None else copies.distinct}", p)
        x = x[copies.first]
    if backend in ("KDTREE", "FLAT"):
        rebuilt = build_index(x, options=IndexOptions(backend=backend, eps=float(settings.get("eps", 0.0)),
                                                      recall_target=1.0))
        if backend == "FLAT" and settings.get("impl") != rebuilt.settings.get("impl"):
            message = "; ".join(filter(None, [message, f"saved with a {settings.get('impl')} flat scan, loaded "
                                                       f"as {rebuilt.settings.get('impl')}"]))
        settings = rebuilt.settings
        impl = rebuilt._impl  # noqa: SLF001
    else:
        faiss, missing = import_faiss()
        if faiss is None:
            raise IndexFileError(f"a {backend} index needs faiss: {missing}", p)
        try:
            impl = faiss.deserialize_index(np.frombuffer(payload, dtype=np.uint8))
        except RuntimeError as err:  # pragma: no cover - the checksum matched
            raise IndexFileError(f"corrupt: faiss could not read it ({err})", p) from err
        if impl.ntotal != x.shape[0] or impl.d != x.shape[1]:
            raise IndexFileError(f"corrupt: faiss index of {impl.ntotal} x {impl.d}", p)
    index = NeighbourIndex(backend, x, impl, settings, recall=None if recall is None else float(recall),
                           recall_k=int(header.get("recall_k", 0)), build_seconds=float(header.get("build_seconds", 0.0)),
                           message=message)
    if backend == "HNSW":
        index.set_effort(int(settings["efSearch"]))
    elif backend == "IVF":
        index.set_effort(int(settings["nprobe"]))
    if copies is not None:
        return RepeatedFrames(index, np.asarray(points, dtype=float), copies)
    return index


def cached_index(db: MotionDatabase, cols: Sequence[int] | np.ndarray | None = None,
                 options: IndexOptions | None = None, cache_dir: str | os.PathLike | None = None,
                 path: str | os.PathLike | None = None, progress=None, cancel=None) -> tuple[NeighbourIndex, str]:
    """The index for ``db`` over ``cols``: loaded from its file when valid, else built and saved.

    The file is ``path`` (for instance beside the .blend; it is replaced when the data change) or, in
    ``cache_dir``, one named by the content hash.  The index is also kept by ``db`` (:meth:`index`),
    so a :class:`~anim_signals.motiondb.graph.Reconstructor` with the same options uses it.

    Parameters
    ----------
    db : MotionDatabase
    cols : sequence of int, optional
        Query columns (default: all channels).
    options : IndexOptions, optional
    cache_dir, path : str or path-like
        One of them.
    progress, cancel : callable, optional
        As :func:`.knn.build_index`; a cancelled build writes nothing.

    Returns
    -------
    (NeighbourIndex, str)
        The index and its status: ``'loaded <path>'``, ``'built <path>'`` (no file before) or
        ``'rebuilt <path>: <why the file was not used>'``; ``' (not saved: ...)'`` appended when
        the file could not be written.

    Raises
    ------
    ValueError
        Neither ``cache_dir`` nor ``path``, or bad options.
    IndexTooLarge, IndexBuildCancelled
        As :func:`.knn.build_index`.
    """
    o = (options or IndexOptions()).checked()
    c = np.arange(db.frames.shape[1]) if cols is None else np.asarray(cols, dtype=np.int64)
    if o.k > db.n_frames:
        o = IndexOptions(**{**o.as_dict(), "k": db.n_frames})
    digest = content_hash(db, c, o)
    if path is None:
        if cache_dir is None:
            raise ValueError("cached_index needs a cache_dir or a path")
        path = index_path(cache_dir, digest)
    target = Path(path)
    points = db.query_points(c)
    status = f"built {target}"
    index = None
    if target.exists():
        try:
            index = load_index(target, digest, points)
            status = f"loaded {target}"
        except IndexFileError as err:
            status = f"rebuilt {target}: {err.reason}"
    if index is None:
        index = build_index(points, options=o, progress=progress, cancel=cancel)
        try:
            save_index(index, target, digest)
        except OSError as err:
            status += f" (not saved: {err})"
    db._indexes[(tuple(int(i) for i in c), o)] = index  # noqa: SLF001 - the database's index cache
    return index, status
