"""How a tolerance build of a pose space grows with the sequence's length (core only, no Blender).

Run from the repository root::

    .venv/bin/python scripts/benchmarking/pose_space_scaling.py                 # the default table
    .venv/bin/python scripts/benchmarking/pose_space_scaling.py --cases mesh:1000,armature:5000
    .venv/bin/python scripts/benchmarking/pose_space_scaling.py --core /tmp/old_checkout  # another core

Every case runs in its own process (so its peak resident memory is its own), with a time limit
(``--timeout``, a case over it is reported as such), on generated sequences whose motion repeats
with a fixed period in frames: a longer sequence has more cycles, not faster motion, so for a fixed
tolerance l and m stay about the same and k grows about linearly with the frames.

* ``armature``: 120 channels of a walk-like cycle (period 36 frames; each channel a few harmonics
  with its own amplitude, 0.05-0.6 rad, and phase), the amplitudes drifting slowly (+-15 % over a few
  hundred frames) and a little smoothed noise; tolerance 0.5 deg (in radians, per channel).
* ``mesh``: a 1000-vertex cylinder (3000 values) twisting (period 48 frames) and bending (period 70
  frames); tolerance :func:`~anim_signals.posespace.default_tolerance` (0.2 % of its size, per vertex).

Prints one JSON line per case (seconds, peak RSS in MB, n, k, l, m, RMS error against the tolerance,
largest time-signal control point against the layout's extent) and a markdown table.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO_ROOT / "scripts"))  # run as a script: benchmarking/ is not a package on the path
from benchmarking.report import run_cases_apart  # noqa: E402

DEFAULT_CASES = ("armature:250,armature:500,armature:1000,armature:2000,armature:5000,"
                 "mesh:250,mesh:500,mesh:1000,mesh:2000,mesh:5000")
ARMATURE_CHANNELS = 120
ROTATION_TOLERANCE = float(np.radians(0.5))


def _smoothed_noise(rng: np.random.Generator, n: int, scale: float) -> np.ndarray:
    from scipy.ndimage import gaussian_filter1d

    out = gaussian_filter1d(rng.normal(size=n), scale, mode="reflect")
    return out / max(float(out.std()), 1e-12)


def armature_like(n: int, channels: int = ARMATURE_CHANNELS, seed: int = 0) -> np.ndarray:
    """(n, channels) joint angles in radians of a drifting walk-like cycle."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    phase = 2 * np.pi * t / 36.0
    cols = []
    for _ in range(channels):
        amplitude = float(np.exp(rng.uniform(np.log(0.05), np.log(0.6))))
        wave = sum(rng.uniform(0.2, 1.0) / h * np.sin(h * phase + rng.uniform(0, 2 * np.pi)) for h in (1, 2, 3))
        drift = 1.0 + 0.15 * _smoothed_noise(rng, n, 150.0)
        cols.append(amplitude * (drift * wave + 0.02 * _smoothed_noise(rng, n, 4.0)))
    return np.column_stack(cols)


def mesh_like(n: int, rings: int = 25, around: int = 40) -> np.ndarray:
    """(n, 3 * rings * around) vertex positions of a twisting, bending cylinder."""
    h = np.repeat(np.linspace(0.0, 2.0, rings), around)
    a = np.tile(np.linspace(0.0, 2 * np.pi, around, endpoint=False), rings)
    t = np.arange(n, dtype=float)[:, None]
    twist = 1.2 * np.sin(2 * np.pi * t / 48.0) * h / 2.0
    bend = 0.35 * np.sin(2 * np.pi * t / 70.0 + 0.5)
    x = 0.3 * np.cos(a + twist) + bend * h**2 / 4.0
    y = 0.3 * np.sin(a + twist)
    zc = np.broadcast_to(h, x.shape)
    return np.stack([x, y, zc], axis=2).reshape(n, -1)


def run_one(kind: str, n: int) -> dict:
    from anim_signals import posespace as ps

    if kind == "armature":
        z, tol, row_size = armature_like(n), ROTATION_TOLERANCE, 1
    else:
        z = mesh_like(n)
        tol, row_size = ps.default_tolerance(z), 3
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    t0 = time.perf_counter()
    space = ps.build_pose_space(z, tolerance=tol, row_size=row_size)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    err = space.reconstruction_error(z)
    extent = float(np.ptp(space.positions, axis=0).max())
    reach = float(np.abs(space.time.control - space.positions.mean(axis=0)).max())
    return {
        "case": f"{kind}:{n}", "values": int(z.shape[1]), "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak, 1), "rss_before_build_mb": round(rss_before, 1),
        "n": space.n, "k": space.k, "l": space.l, "m": space.m,
        "rms": err["rms"], "tolerance": tol, "within_tolerance": bool(err["rms"] <= tol * (1 + 1e-9)),
        "control_reach_over_extent": round(reach / max(extent, 1e-300), 3),
        "core": str(Path(ps.__file__).resolve().parent.parent.parent),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", default=DEFAULT_CASES, help="comma-separated kind:frames (kind: armature, mesh)")
    p.add_argument("--core", default=str(REPO_ROOT), help="folder holding the anim_signals package to measure")
    p.add_argument("--timeout", type=float, default=1200.0, help="seconds a case may take")
    p.add_argument("--out", default="", help="also write the results as JSON here")
    p.add_argument("--one", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        sys.path.insert(0, args.core)
        kind, n = args.one.split(":")
        print(json.dumps(run_one(kind, int(n))), flush=True)
        return 0
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    rows = run_cases_apart(__file__, cases, ["--core", args.core], timeout=args.timeout)
    print("\n| case | s | peak RSS MB | k | l | m | RMS / tolerance | control reach / extent |"
          "\n|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ratio = f"{r['rms'] / r['tolerance']:.3f}" if "rms" in r else "-"
        print(f"| {r['case']} | {r['seconds']} | {r['peak_rss_mb']} | {r.get('k', '-')} | {r.get('l', '-')} | "
              f"{r.get('m', '-')} | {ratio} | {r.get('control_reach_over_extent', '-')} |")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
