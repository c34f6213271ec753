"""How the fit's time and peak memory grow with the clip's length (core only, no Blender).

Run from the repository root::

    .venv/bin/python scripts/benchmarking/fit_scaling.py                  # the default table
    .venv/bin/python scripts/benchmarking/fit_scaling.py --cases per_channel:1000:100,latent:25000:3
    .venv/bin/python scripts/benchmarking/fit_scaling.py --core /tmp/old_checkout   # another version's core

Every case runs in its own process (so its peak resident memory is its own) on generated clips
with a fixed density of features per frame: the keys grow linearly with the frames, and so should
the time and memory of a fit whose cost is linear.

* ``per_channel``: mocap-like curves, each smoothed noise with its own time scale (10-40 frames) and
  amplitude (0.02-0.5 rad; three 'location' curves of a few units), tolerances 0.5 deg / 0.01.
* ``latent``: smooth curves (sums of sines of 60-400 frame periods plus smoothed noise), one shared
  knot vector, tolerance 1 % of a unit amplitude.

Prints one JSON line per case (seconds, peak RSS in MB, keys, within tolerance) and a markdown table.
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

DEFAULT_CASES = (
    "per_channel:1000:100,per_channel:2500:100,per_channel:5000:100,per_channel:10000:100,"
    "latent:25000:3,latent:50000:3,latent:100000:3"
)
ROTATION_TOLERANCE = np.radians(0.5)
LOCATION_TOLERANCE = 0.01
LATENT_TOLERANCE = 0.01
LOCATION_CURVES = 3


def _smoothed_noise(rng: np.random.Generator, n: int, scale: float) -> np.ndarray:
    """Unit-std noise smoothed by a Gaussian of ``scale`` frames (FFT convolution: linear-ish in n)."""
    from scipy.ndimage import gaussian_filter1d

    out = gaussian_filter1d(rng.normal(size=n), scale, mode="reflect")
    return out / max(float(out.std()), 1e-12)


def mocap_like(n: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Frames (n,), values (n, m) and tolerances (m,) of a mocap-like clip."""
    rng = np.random.default_rng(seed)
    frames = np.arange(1.0, n + 1.0)
    cols, tol = [], []
    for j in range(m):
        scale = rng.uniform(10.0, 40.0)
        if j < LOCATION_CURVES:
            cols.append(rng.uniform(1.0, 5.0) * _smoothed_noise(rng, n, scale))
            tol.append(LOCATION_TOLERANCE)
        else:
            amplitude = float(np.exp(rng.uniform(np.log(0.02), np.log(0.5))))
            cols.append(amplitude * _smoothed_noise(rng, n, scale))
            tol.append(ROTATION_TOLERANCE)
    return frames, np.column_stack(cols), np.array(tol)


def smooth_curves(n: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Frames (n,), values (n, m) and tolerances (m,) of a smooth clip."""
    rng = np.random.default_rng(seed)
    frames = np.arange(1.0, n + 1.0)
    cols = []
    for _ in range(m):
        periods = rng.uniform(60.0, 400.0, size=3)
        phases = rng.uniform(0.0, 2 * np.pi, size=3)
        wave = sum(np.sin(2 * np.pi * frames / p + ph) for p, ph in zip(periods, phases, strict=True)) / 3
        cols.append(wave + 0.3 * _smoothed_noise(rng, n, 25.0))
    return frames, np.column_stack(cols), np.full(m, LATENT_TOLERANCE)


def run_one(kind: str, n: int, m: int) -> dict:
    import anim_signals

    frames, values, tol = (mocap_like if kind == "per_channel" else smooth_curves)(n, m)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    t0 = time.perf_counter()
    fit = anim_signals.fit_channels(values, frames, tol, mode="PER_CHANNEL" if kind == "per_channel" else "LATENT",
                                    seed=0)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    err = np.abs(fit.evaluate(frames) - values)
    return {
        "case": f"{kind}:{n}:{m}",
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak, 1),
        "rss_before_fit_mb": round(rss_before, 1),
        "keys": int(fit.n_keys),
        "within_tolerance": bool(np.all(err <= tol * (1 + 1e-6))),
        "core": str(Path(anim_signals.__file__).resolve().parent.parent),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", default=DEFAULT_CASES, help="comma-separated kind:frames:curves")
    p.add_argument("--core", default=str(REPO_ROOT), help="folder holding the anim_signals package to measure")
    p.add_argument("--out", default="", help="also write the results as JSON here")
    p.add_argument("--one", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        sys.path.insert(0, args.core)
        kind, n, m = args.one.split(":")
        print(json.dumps(run_one(kind, int(n), int(m))), flush=True)
        return 0
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    rows = run_cases_apart(__file__, cases, ["--core", args.core])
    print("\n| case | s | peak RSS MB | keys | within tolerance |\n|---|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['case']} | {r['seconds']} | {r['peak_rss_mb']} | {r['keys']} | {r['within_tolerance']} |")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
