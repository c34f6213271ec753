"""What the four benchmarks share to report a run: numbers and markdown tables, the run's metadata
(commit, machine), timing, progress messages, and writing the markdown and JSON.

Progress goes to stderr (:func:`log`); the markdown report to stdout (:func:`publish`), so
``benchmark_x.py > table.md`` keeps just the report.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import _blender_env as be
import numpy as np

ALIGN = {"l": "---", "r": "---:", "c": ":---:"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fmt(v, digits: int = 3, *, digits_from_one: int | None = None) -> str:
    """A table cell: ``digits`` significant digits (``digits_from_one`` for magnitudes of 1 and more),
    whole numbers from 1000 on; None "—", NaN "–", booleans ✓ / ✗, anything else as ``str``."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "✓" if v else "✗"
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        if v == 0:
            return "0"
        if abs(v) >= 1000:
            return f"{v:.0f}"
        if digits_from_one is not None and abs(v) >= 1:
            return f"{v:.{digits_from_one}g}"
        return f"{v:.{digits}g}"
    return str(v)


def table(header: Sequence[str], align: str, rows: Iterable[Sequence[object]]) -> list[str]:
    """Markdown table lines; ``align`` has one letter per column: l(eft), r(ight) or c(entre).

    Cells are written with ``str``: format numbers first (:func:`fmt`).
    """
    if len(align) != len(header):
        raise ValueError(f"{len(header)} columns but alignment {align!r}")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(ALIGN[a] for a in align) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def source_commit(measured: Sequence[str] = ("anim_signals",)) -> str:
    """The checkout's commit, ``+dirty`` when the ``measured`` folders have uncommitted changes;
    ``ANIM_SIGNALS_COMMIT`` overrides (a snapshot without .git)."""
    env = os.environ.get("ANIM_SIGNALS_COMMIT")
    if env:
        return env
    git = ["git", "-C", str(be.REPO_ROOT)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--", *measured], capture_output=True,
                               text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except Exception:
        return "unknown"


def machine() -> str:
    """``"x86_64, 2 cores, Linux"``."""
    return f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}"


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, list[float], object]:
    """Median seconds of ``repeats`` calls after one warm-up call; returns (median, every run, last result)."""
    fn()
    runs: list[float] = []
    res = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), runs, res


def json_default(o):
    """numpy scalars and arrays as JSON numbers and lists; anything else as its string."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def write_report(out: str | os.PathLike, stem: str, markdown: str, payload: dict) -> None:
    """``OUT/<stem>.md`` and ``OUT/<stem>.json`` (the folder is created)."""
    out = be.ensure_dir(out)
    (out / f"{stem}.md").write_text(markdown)
    (out / f"{stem}.json").write_text(json.dumps(payload, indent=1, default=json_default))


def publish(out: str | os.PathLike, stem: str, markdown: str, payload: dict) -> None:
    """Write the report (:func:`write_report`) and print the markdown."""
    write_report(out, stem, markdown, payload)
    print(markdown)
    log(f"wrote {Path(out) / stem}.md and .json")


def run_cases_apart(script: str, cases: Iterable[str], extra: Sequence[str] = (),
                    timeout: float | None = None) -> list[dict]:
    """Run ``script --one CASE *extra`` once per case, each in its own Python process (so its peak
    memory is its own), and collect the JSON row each prints last. A failed case is reported on
    stderr and left out; a case over ``timeout`` seconds gets a ``timed_out`` row."""
    rows = []
    for case in cases:
        cmd = [sys.executable, os.path.abspath(script), "--one", case, *extra]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
        except subprocess.TimeoutExpired:
            row = {"case": case, "seconds": f"> {timeout:g}", "peak_rss_mb": "-", "timed_out": True}
        else:
            if done.returncode != 0:
                print(f"{case}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows
