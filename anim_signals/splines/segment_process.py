"""The compiled kernels in a worker process, for processes where numba must not run.

numba compiles with llvmlite, which carries its own LLVM. On Linux, a process that already holds
another LLVM in its global symbol scope (Mesa's OpenGL drivers link libLLVM: Blender with an Intel
or AMD GPU, or software GL) makes llvmlite call into that LLVM and crash the process. There the
segment test runs in a child Python process instead: it gets the clip's values once per fit and
then one request per batch of segments (a few tens of microseconds of pipe traffic each), and
answers with the same arrays :func:`.segment_kernel.fit_segment_batch` returns. The spline modes'
kernels (:mod:`.spline_kernel`: knot scoring, insertion, local refits) run there too
(:attr:`WorkerKernel.spline_kernel`): a fit's big read-only arrays (sample times, the tolerance-scaled
curves) go over once and are named by a token in later requests. The child is started on first use,
kept for later fits and ended with the parent.

:func:`foreign_llvm_loaded` is the test; :mod:`.segment_fit` picks in-process, this worker, or
numpy.
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from typing import NoReturn

import numpy as np

__all__ = ["WorkerKernel", "foreign_llvm_loaded", "python_executable"]

# A symbol of LLVM's C API and one of its C++ internals (the one the crash went through).
_LLVM_SYMBOLS = ("LLVMContextCreate", "_ZN4llvm15ValueHandleBase12AddToUseListEv")
_HEADER = struct.Struct("<Q")
# The core package's parent folder (the extension's root): the child imports ``anim_signals`` from it.
_CORE_PARENT = Path(__file__).resolve().parents[2]


def foreign_llvm_loaded(maps_text: str | None = None) -> bool:
    """Whether this process already holds an LLVM that llvmlite's would clash with (Linux only).

    True when a ``libLLVM`` library is mapped (``/proc/self/maps``) or an LLVM symbol resolves in the
    global symbol scope (a statically linked LLVM exported by the executable). ``maps_text``
    replaces the maps file (tests). Other systems resolve symbols per library: False.

    Examples
    --------
    >>> foreign_llvm_loaded("7f00-7f10 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libLLVM.so.19.1")
    True
    """
    if maps_text is None:
        if not sys.platform.startswith("linux"):
            return False
        try:
            maps_text = Path("/proc/self/maps").read_text(errors="replace")
        except OSError:
            maps_text = ""
        try:
            import ctypes

            scope = ctypes.CDLL(None)
            if any(hasattr(scope, name) for name in _LLVM_SYMBOLS):
                return True
        except OSError:
            pass
    return any("/libLLVM" in line and "llvmlite" not in line for line in maps_text.splitlines())


def python_executable() -> str | None:
    """A Python interpreter of this process's version to run the worker with, or None.

    ``sys.executable`` when it is one (Blender 4.2+ sets it to its bundled Python; scripts and
    pipelines run in one); else ``python3.X`` beside it, under ``sys.prefix`` or on the PATH.
    """
    import shutil

    name = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    if sys.executable and "python" in Path(sys.executable).name.lower():
        return sys.executable
    for folder in (Path(sys.executable).parent if sys.executable else None, Path(sys.prefix) / "bin"):
        if folder is not None and (folder / name).is_file():
            return str(folder / name)
    return shutil.which(name)


# A batch goes over as raw arrays, not pickled: a request is a header and nine arrays of n values,
# an answer seven arrays (the pipe's round trip is then most of the cost, ~0.1 ms).
_BATCH = struct.Struct("<QQ?qd")  # message size, n, between, Lawson iterations, ridge
# chan, start, length, limit, slope, gate, start alpha, start beta, warm decides
_BATCH_IN = (np.int64, np.int64, np.int64, np.float64, np.float64, np.float64, np.float64, np.float64, np.bool_)
_BATCH_OUT = (np.bool_, np.int64, np.float64, np.float64, np.float64, np.float64, np.float64)  # ok, pair, alpha, beta, c1, c2, error
_PICKLED, _BATCH_TAG = b"P", b"B"
# The spline kernels' functions the child answers.
SPLINE_FUNCTIONS = ("score_candidates", "local_refits", "split_spans", "split_lane_spans")
# A read-only array argument of at least this many bytes is sent once and named by a token after that;
# the child keeps the last _HELD_MAX of them (the parent says which to drop).
_HELD_MIN_BYTES = 8192
_HELD_MAX = 16
# How an argument of a spline request travels: as it is, as a token of an array the child holds, or as
# an array the child is to hold under a new token.
_VALUE, _TOKEN, _HOLD = 0, 1, 2


def _read_exactly(fd: int, size: int) -> bytes:
    parts = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("the segment worker closed its pipe")
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _send(fd: int, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    _write_all(fd, _PICKLED + _HEADER.pack(len(data)) + data)


def _receive(fd: int):
    tag = _read_exactly(fd, 1)
    if tag == _BATCH_TAG:
        head = _read_exactly(fd, _BATCH.size)
        size, n, between, iterations, ridge = _BATCH.unpack(head)
        body = _read_exactly(fd, size)
        arrays, offset = [], 0
        for dtype in _BATCH_IN:
            width = np.dtype(dtype).itemsize * n
            arrays.append(np.frombuffer(body, dtype=dtype, count=n, offset=offset))
            offset += width
        return "batch", (*arrays, between, iterations, ridge)
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size))
    return pickle.loads(_read_exactly(fd, size))


def _send_batch(fd: int, arrays, between, iterations, ridge) -> None:
    body = b"".join(np.ascontiguousarray(a, dtype=t).tobytes() for a, t in zip(arrays, _BATCH_IN))
    _write_all(fd, _BATCH_TAG + _BATCH.pack(len(body), len(arrays[0]), bool(between), int(iterations), float(ridge))
               + body)


def _send_answer(fd: int, arrays) -> None:
    _write_all(fd, _BATCH_TAG + b"".join(np.ascontiguousarray(a, dtype=t).tobytes() for a, t in zip(arrays, _BATCH_OUT)))


def _receive_answer(fd: int, n: int):
    tag = _read_exactly(fd, 1)
    if tag == _PICKLED:  # an error message
        (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size))
        return pickle.loads(_read_exactly(fd, size))
    body = _read_exactly(fd, sum(np.dtype(t).itemsize for t in _BATCH_OUT) * n)
    out, offset = [], 0
    for dtype in _BATCH_OUT:
        out.append(np.frombuffer(body, dtype=dtype, count=n, offset=offset).copy())
        offset += np.dtype(dtype).itemsize * n
    return tuple(out)


class WorkerKernel:
    """:func:`.segment_kernel.fit_segment_batch` answered by a child Python process.

    Parameters
    ----------
    python : str, optional
        The interpreter to start (default :func:`python_executable`: in Blender, its own Python).
    """

    def __init__(self, python: str | None = None) -> None:
        self.python = python or python_executable() or sys.executable
        self._process: subprocess.Popen | None = None
        self._clip: tuple | None = None  # the (frames, columns) the child holds, kept alive here
        # id -> (array, token): read-only arrays the child holds (kept alive here, so no other array
        # takes their id)
        self._held: OrderedDict[int, tuple[np.ndarray, int]] = OrderedDict()
        self._next_token = 0
        self._lock = threading.Lock()
        self.spline_kernel = _SplineKernel(self)
        atexit.register(self.close)

    def _start(self) -> subprocess.Popen:
        paths = [str(_CORE_PARENT)] + [p for p in sys.path if p and os.path.isdir(p)]
        env = dict(os.environ, ANIM_SIGNALS_KERNEL="local", PYTHONPATH=os.pathsep.join(paths))
        # the core first on the path, whatever the working folder holds
        code = (f"import sys; sys.path.insert(0, {str(_CORE_PARENT)!r}); "
                "from anim_signals.splines.segment_process import serve; serve()")
        process = subprocess.Popen([self.python, "-u", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   env=env)
        assert process.stdin is not None and process.stdout is not None
        try:
            _send(process.stdin.fileno(), ("hello", None))
            status = _receive(process.stdout.fileno())
        except (OSError, EOFError) as exc:
            # A child that exits at once closes the pipe before or after the greeting is written:
            # either way (broken pipe or end of file) it did not start.
            status = f"it did not start ({type(exc).__name__}: {exc})"
        if status != "compiled":
            _end(process)
            raise RuntimeError(f"the segment worker cannot run the compiled kernel: {status}")
        self._process = process
        self._clip = None
        self._held.clear()
        return process

    def __call__(self, frames, columns, chan, start, length, limit, slope, ab, table, between, lawson_iterations,
                 ridge, refine_gate=None, start_alpha=None, start_beta=None, warm_decides=None):
        with self._lock:
            process = self._running()
            stdin, stdout = self._send_clip(process, frames, columns, ab, table)
            try:
                n = len(chan)
                gate, sa, sb, warm = (np.full(n, fill) if given is None else np.broadcast_to(given, (n,))
                                      for given, fill in ((refine_gate, 0.0), (start_alpha, np.nan),
                                                          (start_beta, np.nan), (warm_decides, False)))
                _send_batch(stdin, (chan, start, length, limit, slope, gate, sa, sb, warm), between, lawson_iterations,
                            ridge)
                answer = _receive_answer(stdout, len(chan))
            except (OSError, EOFError) as exc:
                self._stopped(process, exc)
        return _answered(answer)

    def search(self, frames, columns, chan, limit, ab, table, between, lawson_iterations, ridge, refine_gate,
               probes, first_length, free_values=False, units=None, start=None, stop_at=None, editable=None):
        """:func:`.search_kernel.search_channels` answered by the child."""
        with self._lock:
            process = self._running()
            self._send_clip(process, frames, columns, ab, table)
            answer = self._ask(process, ("search", (
                np.ascontiguousarray(chan, dtype=np.int64), np.ascontiguousarray(limit, dtype=np.float64),
                bool(between), int(lawson_iterations), float(ridge), float(refine_gate), int(probes),
                int(first_length), bool(free_values), None if units is None else np.asarray(units, dtype=np.int64),
                None if start is None else tuple(np.asarray(a) for a in start),
                None if stop_at is None else int(stop_at),
                None if editable is None else (float(editable[0]), int(editable[1])))))
        return _answered(answer)

    def bezier_values(self, frames, y0, y1, alpha, beta, c1, c2):
        """:func:`.segment_kernel.bezier_values` answered by the child (the clip stays as it is)."""
        with self._lock:
            process = self._running()
            answer = self._ask(process, ("values", tuple(np.ascontiguousarray(a, dtype=np.float64)
                                                         for a in (frames, y0, y1, alpha, beta, c1, c2))))
        return _answered(answer)

    def _running(self) -> subprocess.Popen:
        if self._process is not None and self._process.poll() is not None:
            _end(self._process)  # it died since the last request: reap it, start another
            self._process = None
        process = self._process if self._process is not None else self._start()
        assert process.stdin is not None and process.stdout is not None
        return process

    def _send_clip(self, process, frames, columns, ab, table) -> tuple[int, int]:
        """Send the clip (and the handle-pair tables) once per fit: the search passes the same arrays to
        every request (held here, their identity cannot be reused by other arrays)."""
        assert process.stdin is not None and process.stdout is not None
        clip = (frames, columns, ab, table)
        stdin, stdout = process.stdin.fileno(), process.stdout.fileno()
        if self._clip is None or any(a is not b for a, b in zip(self._clip, clip)):
            try:
                _send(stdin, ("clip", tuple(np.ascontiguousarray(a, dtype=np.float64) for a in clip)))
            except (OSError, EOFError) as exc:
                self._stopped(process, exc)
            self._clip = clip
        return stdin, stdout

    def spline(self, name: str, args: tuple, kwargs: dict):
        """:mod:`.spline_kernel`'s function ``name`` answered by the child (:attr:`spline_kernel`).

        The arrays the request hands the child to hold count as held once it has answered; a request
        that fails any other way (an error in the child, an interrupted write) ends the child, so
        the two sides never disagree on what is held (the next request starts another)."""
        if name not in SPLINE_FUNCTIONS:
            raise ValueError(f"no spline kernel function {name!r}")
        with self._lock:
            process = self._running()
            pending: dict[int, tuple[np.ndarray, int]] = {}
            packed = [self._pack(a, pending) for a in args]
            packed_kwargs = {k: self._pack(v, pending) for k, v in kwargs.items()}
            drops = []
            while self._held and len(self._held) + len(pending) > _HELD_MAX:  # (the least recently used)
                drops.append(self._held.popitem(last=False)[1][1])
            try:
                answer = self._ask(process, ("spline", (name, packed, packed_kwargs, drops)))
            except BaseException:
                self._forget(process)
                raise
            if isinstance(answer, str):
                self._forget(process)
            else:
                self._held.update(pending)
        return _answered(answer)

    def _forget(self, process: subprocess.Popen) -> None:
        """End the child and forget what it held."""
        self._held.clear()
        if self._process is process:
            self._process, self._clip = None, None
        _end(process)

    def _ask(self, process: subprocess.Popen, message: tuple):
        """Send a pickled request and read the child's answer (the caller holds the lock); a child
        that stopped is ended and reported."""
        assert process.stdin is not None and process.stdout is not None
        try:
            _send(process.stdin.fileno(), message)
            return _receive_answer(process.stdout.fileno(), 0)
        except (OSError, EOFError) as exc:
            self._stopped(process, exc)

    def _pack(self, value, pending: dict) -> tuple:
        """One argument of a spline request: a read-only array the child holds goes as its token, a
        new one goes whole with a new token (noted in ``pending`` until the child answers).

        Read-only is taken to mean unchanging while held (the arrays of a
        :class:`.knots.KnotProblem`: views of data nothing writes to); a read-only view of memory
        written through another array would leave the child with the old values."""
        if not (isinstance(value, np.ndarray) and not value.flags.writeable and value.nbytes >= _HELD_MIN_BYTES):
            return (_VALUE, value)
        for table in (self._held, pending):
            held = table.get(id(value))
            if held is not None and held[0] is value:
                if table is self._held:
                    self._held.move_to_end(id(value))
                return (_TOKEN, held[1])
        token, self._next_token = self._next_token, self._next_token + 1
        pending[id(value)] = (value, token)
        return (_HOLD, (token, value))

    def _stopped(self, process, exc) -> NoReturn:
        self._process, self._clip = None, None
        self._held.clear()
        _end(process)
        raise RuntimeError(f"the segment worker stopped ({type(exc).__name__}: {exc})") from exc

    def close(self) -> None:
        """End the child process (it is started again when needed)."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            try:
                assert process.stdin is not None
                process.stdin.close()  # the child's loop ends at the end of its input
                process.wait(timeout=2)
            except Exception:  # noqa: BLE001 - a worker that does not stop is killed
                pass
        _end(process)


def _answered(answer):
    """The child's answer, or its error message raised."""
    if isinstance(answer, str):
        raise RuntimeError(f"the segment worker failed: {answer}")
    return answer


class _SplineKernel:
    """:mod:`.spline_kernel`'s functions (:data:`SPLINE_FUNCTIONS`), same arguments and results,
    answered by a :class:`WorkerKernel`'s child."""

    def __init__(self, worker: WorkerKernel) -> None:
        self._worker = worker

    def score_candidates(self, *args, **kwargs):
        return self._worker.spline("score_candidates", args, kwargs)

    def local_refits(self, *args, **kwargs):
        return self._worker.spline("local_refits", args, kwargs)

    def split_spans(self, *args, **kwargs):
        return self._worker.spline("split_spans", args, kwargs)

    def split_lane_spans(self, *args, **kwargs):
        return self._worker.spline("split_lane_spans", args, kwargs)


def _unpack(packed: tuple, held: dict):  # pragma: no cover - runs in the child process
    kind, value = packed
    if kind == _TOKEN:
        return held[value]
    if kind == _HOLD:
        token, array = value
        held[token] = np.array(array)  # (a writeable copy, made once: what pickle hands back is read-only)
        return held[token]
    return value


def _end(process: subprocess.Popen) -> None:
    """Kill a child that failed and reap it (no zombie, no ResourceWarning)."""
    for stream in (process.stdin, process.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
    process.kill()
    try:
        process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass


def serve() -> None:  # pragma: no cover - runs in the child process (tested through WorkerKernel)
    """The child's loop: requests on stdin, answers on stdout, until stdin closes."""
    stdin, stdout = sys.stdin.fileno(), os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # nothing printed may reach the pipe
    clip = None
    kernel = None
    held: dict[int, np.ndarray] = {}
    while True:
        try:
            op, payload = _receive(stdin)
        except EOFError:
            return
        try:
            if op == "hello":
                from .segment_kernel import fit_segment_batch

                kernel = fit_segment_batch
                _send(stdout, "compiled")
            elif op == "clip":
                clip = payload
            elif op == "search":
                assert clip is not None
                from .search_kernel import search_channels

                frames, columns, ab, table = clip
                (chan, limit, between, lawson_iterations, ridge, gate, probes, first_length, free_values,
                 units, start, stop_at, editable) = payload
                _send(stdout, search_channels(frames, columns, chan, limit, ab, table, between, lawson_iterations,
                                              ridge, gate, probes, first_length, free_values, units, start, stop_at,
                                              editable))
            elif op == "spline":
                from . import spline_kernel

                name, packed, packed_kwargs, drops = payload
                for token in drops:
                    held.pop(token, None)
                args = [_unpack(a, held) for a in packed]
                kwargs = {k: _unpack(v, held) for k, v in packed_kwargs.items()}
                if name not in SPLINE_FUNCTIONS:
                    raise ValueError(f"no spline kernel function {name!r}")
                _send(stdout, getattr(spline_kernel, name)(*args, **kwargs))
            elif op == "values":
                from .segment_kernel import bezier_values

                _send(stdout, bezier_values(*payload))
            elif op == "batch":
                assert kernel is not None and clip is not None
                frames, columns, ab, table = clip
                chan, start, length, limit, slope, gate, sa, sb, warm, between, lawson_iterations, ridge = payload
                _send_answer(stdout, kernel(frames, columns, chan, start, length, limit, slope, ab, table, between,
                                            lawson_iterations, ridge, gate, sa, sb, warm))
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which falls back to numpy
            if op == "clip":
                clip = None  # the next batch reports it
            else:
                _send(stdout, f"{type(exc).__name__}: {exc}")
