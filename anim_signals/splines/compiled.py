"""What the compiled kernels share (:mod:`.segment_kernel`, :mod:`.spline_kernel`): numba's disk
cache for each, and the threads their batches are split over.

Importing this module imports numba: only the kernels do, and only where numba may load (see
:mod:`.segment_process`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from numba import njit
from numba.core import config as numba_config

__all__ = ["THREADS", "compile_lazily", "pool"]

# Batches are split over this many threads (numba's own parallel layer is avoided: its default
# work queue aborts the process when two Python threads, a Dask worker's for example, launch
# parallel kernels at once).
THREADS = max(1, min(4, os.cpu_count() or 1))


@functools.lru_cache(maxsize=1)
def pool() -> ThreadPoolExecutor:
    """The kernels' worker threads (the calling thread takes a share of each batch too)."""
    return ThreadPoolExecutor(max_workers=max(1, THREADS - 1), thread_name_prefix="anim_signals_segments")


def cache_dir(module: str, depends: Iterable[str] = ()) -> str:
    """Where numba keeps the compiled functions of ``module``: one folder per name it was imported under.

    numba's cache records the module's import name, and the same source is imported as
    ``anim_signals`` (scripts, tests, pipelines) and as ``bl_ext.<repository>.anim_signals...`` (in
    Blender): a cache written under one name cannot be loaded under the other. Beside the source when
    writable, else in the temporary folder; "" (numba's own choice) when neither is.

    numba checks a cached function against its own file's modification time only, not against the
    files of the compiled functions it calls: a module calling into another (``depends``, file names
    beside this one) gets a folder per content of those files, so a change there is compiled anew.
    """
    tag = module.replace(".", "_")
    if depends:
        digest = hashlib.sha1()
        for name in depends:
            digest.update((Path(__file__).resolve().parent / name).read_bytes())
        tag += "-" + digest.hexdigest()[:12]
    for base in (Path(__file__).resolve().parent / "__pycache__", Path(tempfile.gettempdir()) / "anim_signals_numba"):
        folder = base / f"numba-{tag}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError:
            continue
        return str(folder)
    return ""


# numba's cache folder is a process-wide setting, swapped while a kernel module wraps its functions:
# two modules imported from two threads (the warm-up's and a fit's) must not interleave the swap.
_CACHE_DIR_LOCK = threading.Lock()


def compile_lazily(namespace: dict, names: Iterable[str], depends: Iterable[str] = ()) -> None:
    """Make the functions ``names`` of a module's ``namespace`` (its globals) numba dispatchers:
    compiled at first call, without the GIL, cached on disk (:func:`cache_dir`; ``depends``: the
    files of other modules whose compiled functions these call)."""
    with _CACHE_DIR_LOCK:
        previous = numba_config.CACHE_DIR
        numba_config.CACHE_DIR = cache_dir(namespace["__name__"], tuple(depends)) or previous
        try:
            for name in names:
                namespace[name] = njit(cache=True, nogil=True)(namespace[name])
        finally:
            numba_config.CACHE_DIR = previous
