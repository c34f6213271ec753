"""The built Linux extension zip installs headless with Blender's real installer and works.

Runs Blender's ``extensions.package_install_files`` on ``dist/anim_signals-*-linux_x64.zip`` (built
with ``scripts/build_extension.py --platform linux-x64`` when missing or older than the sources) in a
*subprocess* of this venv's Python, with its own fresh ``BLENDER_USER_RESOURCES`` and a fresh user
repository: the pytest process already has the checkout enabled as ``bl_ext.dev.anim_signals``
(conftest.py) and scipy imported from the venv, which would hide what the zip itself provides.

Checks: the add-on is enabled; every operator ``bl_idname`` declared in the packaged sources (and
every Operator/Panel/Menu class of the package) is registered; ``bpy.ops.anim_signals.fit_latent_spline``
resolves; scipy, faiss and numba import from the wheels Blender extracted into
``<user>/extensions/.local/lib/python3.11/site-packages`` and not from the venv (whose copies the
subprocess hides, as real Blender has none); the spline fits run without pycma, which is not shipped;
disabling unregisters.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "dist"
EXT_ID = "anim_signals"
REQUIRED_OPERATORS = {"anim_signals.fit_latent_spline"}
SOURCES = ["__init__.py", "blender_manifest.toml", "anim_signals", "operators", "panels"]

# Run in a fresh interpreter: argv = [zip_path, user_resources_dir]. Prints one JSON line.
_INSTALL_SCRIPT = r'''
import json, os, sys, traceback
zip_path, user_dir = sys.argv[1], sys.argv[2]
os.environ["BLENDER_USER_RESOURCES"] = user_dir
out = {"errors": []}

# Real Blender has no scipy or numba of its own: hide the venv's copies so that they can only be
# imported from the extension's site-packages (<user>/extensions/.local/...), as in Blender. pycma is
# hidden too: the extension does not ship it (the knot searches run their own batched CMA-ES).
import importlib.abc, importlib.machinery
class _OnlyBundled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name not in ("scipy", "cma", "faiss", "numba", "llvmlite"):
            return None  # submodules are found through their package's __path__
        local = [p for p in sys.path if "/extensions/.local/" in p.replace(os.sep, "/")]
        spec = importlib.machinery.PathFinder.find_spec(name, local)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r} in the extension's wheels: {local}")
        return spec
sys.meta_path.insert(0, _OnlyBundled())
try:
    import bpy, addon_utils
    out["blender"] = bpy.app.version_string
    bpy.ops.wm.read_factory_settings(use_empty=True)
    repo_dir = os.path.join(user_dir, "zip_repo")
    os.makedirs(repo_dir, exist_ok=True)
    bpy.context.preferences.extensions.repos.new(
        name="ZipTest", module="ziptest", custom_directory=repo_dir, source="USER")
    ret = bpy.ops.extensions.package_install_files(
        filepath=zip_path, repo="ziptest", enable_on_install=True)
    out["install_result"] = sorted(ret)
    mod_name = "bl_ext.ziptest.anim_signals"
    out["installed_files"] = sorted(os.listdir(os.path.join(repo_dir, "anim_signals"))) \
        if os.path.isdir(os.path.join(repo_dir, "anim_signals")) else []
    loaded, enabled = addon_utils.check(mod_name)
    out["enabled"] = bool(enabled and loaded)
    out["in_prefs"] = mod_name in bpy.context.preferences.addons

    # Every bpy class defined by the package, and whether Blender registered it.
    classes = {}
    for name, mod in list(sys.modules.items()):
        if not (name == mod_name or name.startswith(mod_name + ".")) or mod is None:
            continue
        for obj in vars(mod).values():
            if isinstance(obj, type) and getattr(obj, "__module__", "").startswith(mod_name) and issubclass(
                    obj, (bpy.types.Operator, bpy.types.Panel, bpy.types.Menu)):
                classes[f"{obj.__module__}.{obj.__qualname__}"] = bool(getattr(obj, "is_registered", False))
    out["classes"] = classes

    def op_exists(idname):
        cat, _, name = idname.partition(".")
        try:
            getattr(getattr(bpy.ops, cat), name).get_rna_type()
            return True
        except Exception:
            return False
    out["op_exists"] = {i: op_exists(i) for i in json.loads(sys.argv[3])}
    out["poll"] = bool(bpy.ops.anim_signals.fit_latent_spline.poll()) if out["op_exists"].get(
        "anim_signals.fit_latent_spline") else None

    import scipy, scipy.interpolate, scipy.linalg, numpy
    out["scipy"] = [scipy.__version__, scipy.__file__]
    import faiss  # the motion database's approximate index, from its wheel, beside Blender's numpy
    index = faiss.IndexFlatL2(3)
    index.add(numpy.eye(3, dtype="float32"))
    out["faiss"] = [faiss.__version__, faiss.__file__]
    out["faiss_search"] = index.search(numpy.array([[0.9, 0.1, 0.0]], dtype="float32"), 2)[1].tolist()
    out["numpy"] = [numpy.__version__, numpy.__file__]
    import numba, llvmlite  # Fewest Keys' compiled segment test, from their wheels
    out["numba"] = [numba.__version__, numba.__file__]
    out["llvmlite"] = [llvmlite.__version__, llvmlite.__file__]
    out["site_packages"] = os.path.join(bpy.utils.user_resource("EXTENSIONS"), ".local", "lib",
                                        "python%d.%d" % sys.version_info[:2], "site-packages")
    out["extracted"] = sorted(os.listdir(out["site_packages"])) if os.path.isdir(out["site_packages"]) else []
    # The core's own fit runs on the bundled wheels alone.
    core = sys.modules[mod_name + ".anim_signals"]
    out["core_fit_ok"] = hasattr(core, "fit_latent_spline")
    # Fewest Keys runs the compiled segment test there (numba caches beside the installed source).
    seg = sys.modules[mod_name + ".anim_signals.splines.segment_fit"]
    out["compiled_kernel"] = seg.compiled_kernel()
    x = numpy.arange(60.0)
    few = core.fewest_keys(numpy.sin(x / 9.0), x, 1e-3)
    out["fewest_ok"] = [bool(few.within_tolerance), int(few.n_keys)]
    # the knot searches (CMA-ES) run without pycma, which the extension does not ship
    spline = core.fit_latent_spline(numpy.sin(x / 9.0), x, internal_knots=3, population=20, max_iterations=4)
    per_curve = core.fit_channels(numpy.sin(x / 9.0), x, 1e-3, mode="PER_CHANNEL")
    out["spline_ok"] = [int(spline.internal_knots.size), bool(per_curve.curves[0].n_keys > 1)]
    out["modules_after_fit"] = sorted(m for m in sys.modules if m.split(".")[0] == "cma")

    addon_utils.disable(mod_name, default_set=True)
    out["after_disable_op_exists"] = {i: op_exists(i) for i in json.loads(sys.argv[3])}
except Exception:
    out["errors"].append(traceback.format_exc())
print("RESULT " + json.dumps(out), flush=True)
'''


def _newest_source_mtime() -> float:
    newest = 0.0
    for s in SOURCES:
        p = REPO / s
        files = [p] if p.is_file() else list(p.rglob("*.py")) if p.is_dir() else []
        for f in files:
            newest = max(newest, f.stat().st_mtime)
    return newest


def _find_zip() -> Path | None:
    hits = sorted(DIST.glob(f"{EXT_ID}-*-linux_x64.zip"), key=lambda p: p.stat().st_mtime)
    return hits[-1] if hits else None


@pytest.fixture(scope="module")
def linux_zip() -> Path:
    z = _find_zip()
    if z is None or z.stat().st_mtime < _newest_source_mtime():
        proc = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "build_extension.py"), "--platform", "linux-x64"],
            capture_output=True, text=True, cwd=REPO,
        )
        if proc.returncode != 0:
            out = proc.stdout + proc.stderr
            if "pip download" in out and "failed" in out:
                pytest.skip(f"cannot build the zip: wheels could not be downloaded (no network?):\n{out[-2000:]}")
            pytest.fail(f"scripts/build_extension.py failed:\n{out[-4000:]}")
        z = _find_zip()
    assert z is not None, f"no {EXT_ID}-*-linux_x64.zip in {DIST}"
    return z


def _declared_operator_idnames(zip_path: Path) -> set[str]:
    """Operator bl_idnames ("category.name") declared in the packaged Python sources."""
    ids: set[str] = set()
    with zipfile.ZipFile(zip_path) as zf:
        for name in zf.namelist():
            if name.endswith(".py"):
                text = zf.read(name).decode("utf-8")
                ids |= set(re.findall(r"""bl_idname\s*(?::\s*\w+\s*)?=\s*["']([a-z0-9_]+\.[a-z0-9_]+)["']""", text))
    return ids


def test_zip_contents(linux_zip: Path) -> None:
    with zipfile.ZipFile(linux_zip) as zf:
        names = set(zf.namelist())
        manifest = zf.read("blender_manifest.toml").decode()
    assert "__init__.py" in names and "blender_manifest.toml" in names
    wheels = sorted(n for n in names if n.startswith("wheels/") and n.endswith(".whl"))
    assert any(n.startswith("wheels/scipy-") and "manylinux" in n and "x86_64" in n for n in wheels), wheels
    assert not any(n.startswith("wheels/cma-") for n in wheels), wheels  # the knot searches need no pycma
    assert any(n.startswith("wheels/scikit_learn-") and "manylinux" in n and "x86_64" in n for n in wheels), wheels
    assert any(n.startswith("wheels/faiss_cpu-") and "manylinux" in n and "x86_64" in n for n in wheels), wheels
    for compiled in ("numba", "llvmlite"):
        assert any(n.startswith(f"wheels/{compiled}-") and "manylinux" in n and "x86_64" in n for n in wheels), wheels
    for dep in ("joblib", "threadpoolctl", "packaging"):  # scikit-learn's and faiss's runtime dependencies
        assert any(n.startswith(f"wheels/{dep}-") and n.endswith("py3-none-any.whl") for n in wheels), wheels
    assert len(wheels) == 8, ("only the Linux scipy, scikit-learn, faiss-cpu, numba and llvmlite wheels, joblib, "
                              "threadpoolctl "
                              f"and packaging belong in the Linux zip: {wheels}")
    assert 'platforms = ["linux-x64"]' in manifest
    # Development files stay out of the package.
    for prefix in ("tests/", "scripts/", ".venv", ".git/", "dist/", "docs/", ".ci/"):
        assert not any(n.startswith(prefix) for n in names), prefix


def test_install_zip_headless(linux_zip: Path, tmp_path: Path) -> None:
    declared = _declared_operator_idnames(linux_zip)
    expected_ops = sorted(declared | REQUIRED_OPERATORS)
    user_dir = tmp_path / "blender_user"
    user_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    proc = subprocess.run(
        [sys.executable, "-c", _INSTALL_SCRIPT, str(linux_zip), str(user_dir), json.dumps(expected_ops)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"installer subprocess failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    res = json.loads(lines[-1][len("RESULT "):])
    log = f"\nresult: {json.dumps(res, indent=1)}\nstderr tail:\n{proc.stderr[-3000:]}"

    assert not res["errors"], log
    assert res["install_result"] == ["FINISHED"], log
    assert res["enabled"] and res["in_prefs"], f"add-on not enabled after install{log}"

    # Every operator (and every Operator/Panel/Menu class) of the package is registered.
    missing = [i for i, ok in res["op_exists"].items() if not ok]
    assert not missing, f"operators not registered: {missing}{log}"
    unregistered = [c for c, ok in res["classes"].items() if not ok]
    assert not unregistered, f"classes defined but not registered: {unregistered}{log}"
    assert res["core_fit_ok"], log
    assert res["compiled_kernel"] and res["fewest_ok"][0] and res["fewest_ok"][1] < 12, log
    assert res["spline_ok"] == [3, True], log

    # scipy, faiss and numba come from the wheels Blender extracted for the extension, not from the venv.
    site = os.path.realpath(res["site_packages"])
    assert os.path.realpath(str(user_dir)) in site, log
    for mod in ("scipy", "faiss", "numba", "llvmlite"):
        version, path = res[mod]
        assert os.path.realpath(path).startswith(site + os.sep), f"{mod} imported from {path}, not {site}{log}"
    assert res["scipy"][0] == re.search(r"scipy-([\d.]+)-", " ".join(_wheel_names(linux_zip))).group(1)
    assert {"scipy", "faiss", "numba", "llvmlite"} <= set(res["extracted"]), log
    assert "cma" not in res["extracted"] and res["modules_after_fit"] == [], log
    assert res["faiss_search"] == [[0, 1]], log  # nearest of (0.9, 0.1, 0) among the unit vectors
    # numpy is Blender's own (1.26.x), not bundled.
    assert res["numpy"][0].startswith("1.26"), log
    assert not os.path.realpath(res["numpy"][1]).startswith(site + os.sep), log

    # Disabling unregisters the operators again.
    still = [i for i, ok in res["after_disable_op_exists"].items() if ok]
    assert not still, f"operators still registered after disable: {still}{log}"


def _wheel_names(zip_path: Path) -> list[str]:
    with zipfile.ZipFile(zip_path) as zf:
        return [n for n in zf.namelist() if n.endswith(".whl")]
