#!/usr/bin/env python3
"""Build the installable Anim Signals extension zips with Blender's own extension builder.

Run with the project's venv (it needs the ``bpy`` module for Blender's builder and pip for wheels)::

    .venv/bin/python scripts/build_extension.py                       # all four platforms
    .venv/bin/python scripts/build_extension.py --platform linux-x64  # only the Linux zip

Steps:
1. download the scipy, scikit-learn, faiss-cpu, numba and llvmlite (cp311, per platform) and packaging, joblib, threadpoolctl
   (py3-none-any; the runtime dependencies of faiss and scikit-learn) wheels into ``wheels/``
   (git-ignored; already present wheels are reused, nothing is downloaded again);
2. copy the extension's source into a staging folder ``build/staging/anim_signals`` (respecting the
   manifest's ``paths_exclude_pattern``) whose ``blender_manifest.toml`` lists those wheels and the
   platforms; the checkout's own ``blender_manifest.toml`` is never modified;
3. run ``blender_ext.py build --split-platforms`` from the bpy module into ``dist/``, then
   ``blender_ext.py validate`` on every zip, and print the zips with their sizes.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent
WHEELS_DIR = ROOT / "wheels"
STAGING_PARENT = ROOT / "build" / "staging"
DIST_DIR = ROOT / "dist"

SCIPY_VERSION = "1.16.3"  # wheels for cp311 on all four platforms; works with numpy 1.26 (>=1.25.2)
# scikit-learn (Isomap, LLE, t-SNE, kernel PCA for the spatial keyframes): 1.6.x has cp311 wheels on
# all four platforms and needs numpy >= 1.19.5, so it runs on Blender's numpy 1.26; joblib and
# threadpoolctl are its pure-Python runtime dependencies (Blender ships neither).
SKLEARN_VERSION = "1.6.1"
JOBLIB_VERSION = "1.6.0"
THREADPOOLCTL_VERSION = "3.8.0"
# faiss-cpu (the motion database's approximate nearest-neighbour index; optional at run time: without
# it the database falls back to exact search and says so). 1.10.0 is the newest release with cp311
# wheels on all four platforms at macOS 10.14 / 11.0 (1.11+ need macOS 13-14 on Intel and arm64);
# one version everywhere keeps the index files one format. ``packaging`` is its pure-Python dependency.
FAISS_VERSION = "1.10.0"
PACKAGING_VERSION = "26.3"
# numba and llvmlite (Fewest Keys' compiled segment test; optional at run time: without them the
# numpy cascade runs, 5-8x slower). 0.61.2 has cp311 wheels on all four platforms (macOS 10.14 /
# 11.0) and supports numpy 1.24-2.2, Blender's numpy 1.26 included.
NUMBA_VERSION = "0.61.2"
LLVMLITE_VERSION = "0.44.0"
PY_VERSION = "3.11"
ABI = "cp311"

# Blender platform -> (pip --platform tags, glob that the downloaded scipy wheel matches)
PLATFORMS: dict[str, tuple[list[str], str]] = {
    "linux-x64": (
        ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"],
        f"scipy-{SCIPY_VERSION}-cp311-cp311-*manylinux*_x86_64.whl",
    ),
    # macOS 11+ (Blender 4.2 requires 11.2); avoid the macOS 14 Accelerate-only arm64 build.
    "macos-x64": (["macosx_11_0_x86_64"], f"scipy-{SCIPY_VERSION}-cp311-cp311-macosx_*_x86_64.whl"),
    "macos-arm64": (["macosx_12_0_arm64"], f"scipy-{SCIPY_VERSION}-cp311-cp311-macosx_*_arm64.whl"),
    "windows-x64": (["win_amd64"], f"scipy-{SCIPY_VERSION}-cp311-cp311-win_amd64.whl"),
}
# Blender platform -> glob of the scikit-learn wheel (same pip platform tags as scipy's)
SKLEARN_GLOBS: dict[str, str] = {
    "linux-x64": f"scikit_learn-{SKLEARN_VERSION}-cp311-cp311-*manylinux*_x86_64.whl",
    "macos-x64": f"scikit_learn-{SKLEARN_VERSION}-cp311-cp311-macosx_*_x86_64.whl",
    "macos-arm64": f"scikit_learn-{SKLEARN_VERSION}-cp311-cp311-macosx_*_arm64.whl",
    "windows-x64": f"scikit_learn-{SKLEARN_VERSION}-cp311-cp311-win_amd64.whl",
}
# Blender platform -> glob of the faiss-cpu wheel (pip platform tags as scipy's, the Intel Mac's too old
# for scipy's tag list: faiss's wheel there is macosx_10_14)
FAISS_PLATFORMS: dict[str, list[str]] = {
    "linux-x64": PLATFORMS["linux-x64"][0],
    "macos-x64": ["macosx_11_0_x86_64", "macosx_10_14_x86_64"],
    "macos-arm64": ["macosx_12_0_arm64", "macosx_11_0_arm64"],
    "windows-x64": ["win_amd64"],
}
FAISS_GLOBS: dict[str, str] = {
    "linux-x64": f"faiss_cpu-{FAISS_VERSION}-cp311-cp311-*manylinux*_x86_64.whl",
    "macos-x64": f"faiss_cpu-{FAISS_VERSION}-cp311-cp311-macosx_*_x86_64.whl",
    "macos-arm64": f"faiss_cpu-{FAISS_VERSION}-cp311-cp311-macosx_*_arm64.whl",
    "windows-x64": f"faiss_cpu-{FAISS_VERSION}-cp311-cp311-win_amd64.whl",
}
# (requirement, Blender platform -> glob) of the other compiled wheels, with faiss's platform tags
COMPILED_WHEELS: list[tuple[str, dict[str, str]]] = [
    (f"{name}=={version}", {
        "linux-x64": f"{name}-{version}-cp311-cp311-*manylinux*_x86_64.whl",
        "macos-x64": f"{name}-{version}-cp311-cp311-macosx_*_x86_64.whl",
        "macos-arm64": f"{name}-{version}-cp311-cp311-macosx_*_arm64.whl",
        "windows-x64": f"{name}-{version}-cp311-cp311-win_amd64.whl",
    })
    for name, version in (("numba", NUMBA_VERSION), ("llvmlite", LLVMLITE_VERSION))
]
PURE_WHEELS: list[tuple[str, str]] = [  # (requirement, glob) of the py3-none-any wheels
    (f"packaging=={PACKAGING_VERSION}", f"packaging-{PACKAGING_VERSION}-py3-none-any.whl"),
    (f"joblib=={JOBLIB_VERSION}", f"joblib-{JOBLIB_VERSION}-py3-none-any.whl"),
    (f"threadpoolctl=={THREADPOOLCTL_VERSION}", f"threadpoolctl-{THREADPOOLCTL_VERSION}-py3-none-any.whl"),
]

# Never copied into the staging folder, whatever the manifest says (build outputs, venvs, VCS).
ALWAYS_EXCLUDE = ["/.git/", "/.venv*/", "/build/", "/dist/", "/wheels/", "__pycache__/", "*.pyc"]


def log(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def die(msg: str) -> NoReturn:
    print(f"[build] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


# --------------------------------------------------------------------------------------------
# Wheels


def pip_download(spec: str, platforms: list[str] | None) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet",
           "--only-binary=:all:", "--no-deps", "--dest", str(WHEELS_DIR)]
    if platforms:
        for p in platforms:
            cmd += ["--platform", p]
        cmd += ["--python-version", PY_VERSION, "--implementation", "cp", "--abi", ABI]
    cmd.append(spec)
    log(f"downloading {spec} for {', '.join(platforms) if platforms else 'any platform'}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        err = "\n".join(line for line in (proc.stdout + proc.stderr).splitlines()
                        if "is ignored: it is neither a file nor a directory" not in line)
        die(f"pip download {spec} failed (no network or no such wheel?):\n{err}")


def find_one(pattern: str) -> Path | None:
    hits = sorted(WHEELS_DIR.glob(pattern))
    return hits[0] if hits else None


def fetch_wheel(requirement: str, tags, pattern: str) -> Path:
    """The cached wheel matching pattern, downloaded first when it is not in wheels/."""
    whl = find_one(pattern)
    if whl is not None:
        log(f"cached {whl.name}")
        return whl
    pip_download(requirement, tags)
    whl = find_one(pattern)
    if whl is None:
        die(f"pip downloaded no wheel matching {pattern} for {requirement}")
    return whl


def ensure_wheels(platforms: list[str]) -> list[Path]:
    """Return the wheels to bundle (downloading the missing ones into wheels/)."""
    WHEELS_DIR.mkdir(exist_ok=True)
    wheels = [fetch_wheel(f"scipy=={SCIPY_VERSION}", *PLATFORMS[plat]) for plat in platforms]
    wheels += [fetch_wheel(f"scikit-learn=={SKLEARN_VERSION}", PLATFORMS[plat][0], SKLEARN_GLOBS[plat])
               for plat in platforms]
    wheels += [fetch_wheel(f"faiss-cpu=={FAISS_VERSION}", FAISS_PLATFORMS[plat], FAISS_GLOBS[plat])
               for plat in platforms]
    wheels += [fetch_wheel(req, FAISS_PLATFORMS[plat], globs[plat]) for req, globs in COMPILED_WHEELS
               for plat in platforms]
    wheels += [fetch_wheel(req, None, pattern) for req, pattern in PURE_WHEELS]
    return wheels


# --------------------------------------------------------------------------------------------
# Staging copy


def _matches(rel: str, is_dir: bool, patterns: list[str]) -> bool:
    """gitignore-like match used by Blender's ``paths_exclude_pattern`` (enough for ours).

    ``rel`` is POSIX, relative to the root, without leading slash. A pattern ending in ``/`` only
    matches directories; a pattern starting with ``/`` is anchored at the root, otherwise it
    matches the basename at any depth (or any trailing part of the path if it has a ``/``).
    """
    name = rel.rsplit("/", 1)[-1]
    for pat in patterns:
        p = pat
        if p.startswith("!"):
            continue  # negation is not used by this project
        dir_only = p.endswith("/")
        if dir_only:
            if not is_dir:
                continue
            p = p.rstrip("/")
        if p.startswith("/"):
            if fnmatch.fnmatchcase(rel, p[1:]):
                return True
        elif "/" in p:
            if fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(rel, "*/" + p):
                return True
        elif fnmatch.fnmatchcase(name, p):
            return True
    return False


def copy_sources(dst: Path, patterns: list[str]) -> int:
    count = 0
    for dirpath, dirnames, filenames in os.walk(ROOT):
        here = Path(dirpath)
        rel_dir = here.relative_to(ROOT).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if not _matches(rel, True, patterns):
                keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            rel = f"{rel_dir}/{f}" if rel_dir else f
            if _matches(rel, False, patterns):
                continue
            target = dst / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(here / f, target)
            count += 1
    return count


def staged_manifest(text: str, wheels: list[Path], platforms: list[str]) -> str:
    """Return the manifest text with top-level ``wheels`` and ``platforms`` set."""
    lines = text.splitlines()
    # Drop existing top-level `wheels = ...` / `platforms = ...` (single- or multi-line arrays).
    out: list[str] = []
    i = 0
    in_table = False
    while i < len(lines):
        line = lines[i]
        if re.match(r"^\s*\[", line):
            in_table = True
        if not in_table and re.match(r"^\s*(wheels|platforms)\s*=", line):
            depth = line.count("[") - line.count("]")
            i += 1
            while depth > 0 and i < len(lines):
                depth += lines[i].count("[") - lines[i].count("]")
                i += 1
            continue
        out.append(line)
        i += 1
    insert_at = next((k for k, ln in enumerate(out) if re.match(r"^\s*\[", ln)), len(out))
    block = [
        "# Added by scripts/build_extension.py",
        "platforms = [" + ", ".join(f'"{p}"' for p in platforms) + "]",
        "wheels = [",
        *[f'  "./wheels/{w.name}",' for w in wheels],
        "]",
        "",
    ]
    new_text = "\n".join(out[:insert_at] + block + out[insert_at:]) + "\n"
    data = tomllib.loads(new_text)  # must still parse, with exactly our values
    assert data["platforms"] == platforms, data.get("platforms")
    assert data["wheels"] == [f"./wheels/{w.name}" for w in wheels], data.get("wheels")
    return new_text


# --------------------------------------------------------------------------------------------
# Blender's builder


def find_blender_ext() -> Path:
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations and not spec.origin:
        die("the bpy module is not installed in this Python: run with .venv/bin/python "
            "(bash scripts/bootstrap.sh creates it)")
    assert spec is not None
    base = Path(spec.origin).parent if spec.origin else Path(list(spec.submodule_search_locations)[0])
    hits = sorted(base.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    if not hits:
        die(f"Blender's extension builder blender_ext.py not found under {base}")
    return hits[-1]


def run_builder(blender_ext: Path, *args: str) -> str:
    cmd = [sys.executable, str(blender_ext), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    out = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        die(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", action="append", choices=sorted(PLATFORMS),
                    help="build only this platform's zip (repeatable; default: all four)")
    ap.add_argument("--output-dir", default=str(DIST_DIR), help="where the zips go (default: dist/)")
    args = ap.parse_args(argv)
    platforms = args.platform or list(PLATFORMS)
    platforms = [p for p in PLATFORMS if p in platforms]  # stable order

    manifest_path = ROOT / "blender_manifest.toml"
    manifest_text = manifest_path.read_text()
    manifest = tomllib.loads(manifest_text)
    ext_id = manifest["id"]
    patterns = list(manifest.get("build", {}).get("paths_exclude_pattern", [])) + ALWAYS_EXCLUDE

    wheels = ensure_wheels(platforms)

    staging = STAGING_PARENT / ext_id
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    n = copy_sources(staging, patterns)
    (staging / "wheels").mkdir()
    for w in wheels:
        shutil.copy2(w, staging / "wheels" / w.name)
    (staging / "blender_manifest.toml").write_text(staged_manifest(manifest_text, wheels, platforms))
    log(f"staged {n} source files + {len(wheels)} wheels in {staging.relative_to(ROOT)}")

    out_dir = Path(args.output_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = f"{ext_id}-{manifest['version']}-"
    for plat in platforms:  # remove stale zips of the platforms being rebuilt
        stale = out_dir / f"{prefix}{plat.replace('-', '_')}.zip"
        stale.unlink(missing_ok=True)

    blender_ext = find_blender_ext()
    log(f"building with {blender_ext.relative_to(blender_ext.parents[6])}")
    out = run_builder(blender_ext, "build", "--source-dir", str(staging), "--output-dir", str(out_dir),
                      "--split-platforms")
    zips = sorted(out_dir / m for m in re.findall(r"(" + re.escape(prefix) + r"[\w\-]+\.zip)", out))
    zips = sorted(set(zips))
    if not zips:
        zips = sorted(out_dir.glob(f"{prefix}*.zip"))
    if len(zips) != len(platforms):
        die(f"expected {len(platforms)} zip(s), builder reported {len(zips)}:\n{out}")
    for z in zips:
        run_builder(blender_ext, "validate", str(z))
    log(f"validated {len(zips)} zip(s):")
    for z in zips:
        rel = z.relative_to(ROOT) if z.is_relative_to(ROOT) else z
        print(f"  {rel}  {z.stat().st_size / 1e6:.1f} MB", flush=True)
    # The checkout's manifest must be untouched (we only ever wrote the staging copy).
    assert manifest_path.read_text() == manifest_text
    return 0


if __name__ == "__main__":
    sys.exit(main())
