"""The flat module paths of earlier releases resolve to the very module objects that replaced them.

``anim_signals.loop`` -> ``anim_signals.manifolds.loop`` and the like, kept for one release through
the one table ``anim_signals._MOVED`` (an import hook, no stub files), also when the core is a
subpackage of the extension (``bl_ext.<repo>.anim_signals.anim_signals`` in Blender).
"""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import anim_signals

CORE = Path(anim_signals.__file__).resolve().parent

EXPECTED = {
    "fit": "splines.fitting",
    "bspline": "splines.bspline",
    "bezier": "splines.bezier",
    "srv": "manifolds.srv",
    "elastic": "manifolds.elastic",
    "loop": "manifolds.loop",
    "motion": "manifolds.clips",
    "skeleton": "manifolds.skeleton",
    "canvas": "posespace.canvas",
    "livelink": "motiondb.livelink",
    "meshcache": "meshio.meshcache",
    "raster": "imaging.raster",
}


def _run(code: str, cwd: Path) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_the_table_maps_every_old_module():
    assert anim_signals._MOVED == EXPECTED


def test_no_stub_files_for_the_old_paths():
    for old in EXPECTED:
        assert not (CORE / f"{old}.py").exists(), old
        assert (CORE / (EXPECTED[old].replace(".", "/") + ".py")).is_file(), EXPECTED[old]


@pytest.mark.parametrize("old", sorted(EXPECTED))
def test_old_path_is_the_new_module(old):
    new = importlib.import_module(f"anim_signals.{EXPECTED[old]}")
    assert importlib.import_module(f"anim_signals.{old}") is new
    assert sys.modules[f"anim_signals.{old}"] is new
    assert getattr(anim_signals, old) is new
    namespace: dict = {}
    exec(f"from anim_signals import {old} as m\nimport anim_signals.{old} as n", namespace)
    assert namespace["m"] is new and namespace["n"] is new
    # the module keeps its own identity (reload, pickling)
    assert new.__name__ == new.__spec__.name == f"anim_signals.{EXPECTED[old]}"


def test_public_names_through_old_and_new_paths():
    from anim_signals.manifolds import loop
    from anim_signals.motiondb import MotionDatabase, OLNGParams, Reconstructor
    from anim_signals.posespace import PoseSpace, TimeSignal

    assert anim_signals.loop.make_loop is loop.make_loop
    assert anim_signals.motiondb.graph.MotionDatabase is MotionDatabase
    assert anim_signals.motiondb.OLNGParams is OLNGParams and anim_signals.motiondb.Reconstructor is Reconstructor
    assert anim_signals.posespace.space.PoseSpace is PoseSpace and anim_signals.posespace.signals.TimeSignal is TimeSignal
    assert anim_signals.fit.fit_channels is anim_signals.fit_channels
    for name in anim_signals.__all__:
        assert getattr(anim_signals, name) is not None, name


def test_type_checking_mirror_matches_the_table():
    """The static imports for mypy list the same moves as the runtime table."""
    tree = ast.parse((CORE / "__init__.py").read_text())
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    mirror = {}
    for node in guarded.body:
        assert isinstance(node, ast.ImportFrom)
        for alias in node.names:
            if alias.asname:
                mirror[alias.asname] = f"{node.module}.{alias.name}"
    assert mirror == EXPECTED


def test_reload_keeps_one_finder_and_the_module_names():
    """A reload (Blender's script reload) replaces the hook instead of stacking a second one."""
    _run(
        """
        import importlib, sys
        import anim_signals
        import anim_signals.loop
        importlib.reload(anim_signals)
        importlib.reload(anim_signals.loop)
        assert [f.package for f in sys.meta_path if hasattr(f, "moved")] == ["anim_signals"]
        assert anim_signals.loop is sys.modules["anim_signals.manifolds.loop"]
        assert anim_signals.loop.__spec__.name == "anim_signals.manifolds.loop"
        assert importlib.import_module("anim_signals.srv") is anim_signals.manifolds.srv
        """,
        CORE.parent,
    )


def test_attribute_access_without_any_import_and_cheap_package_import():
    out = _run(
        """
        import sys
        import anim_signals
        lazy = ("imaging", "manifolds", "meshio", "motiondb", "posespace")
        print(sorted(p for p in lazy if f"anim_signals.{p}" in sys.modules))
        assert anim_signals.loop.make_loop is sys.modules["anim_signals.manifolds.loop"].make_loop
        assert sys.modules["anim_signals.loop"] is anim_signals.manifolds.loop
        assert anim_signals.posespace.canvas is anim_signals.canvas
        """,
        CORE.parent,
    )
    assert out.strip() == "[]"


def test_aliases_follow_the_package_name_inside_an_extension(tmp_path):
    """Blender loads the core as ``bl_ext.dev.anim_signals.anim_signals``; the operators import the
    old paths relative to it."""
    ext = tmp_path / "bl_ext" / "dev" / "anim_signals"
    (ext / "operators").mkdir(parents=True)
    for pkg in (tmp_path / "bl_ext", tmp_path / "bl_ext" / "dev", ext, ext / "operators"):
        (pkg / "__init__.py").write_text("")
    shutil.copytree(CORE, ext / "anim_signals", ignore=shutil.ignore_patterns("__pycache__"))
    (ext / "operators" / "ops.py").write_text(
        textwrap.dedent(
            """
            from ..anim_signals import FitCancelled, iter_fit_channels
            from ..anim_signals import canvas as cv
            from ..anim_signals import livelink, loop
            from ..anim_signals.channels import check_finite
            from ..anim_signals.motiondb import MotionDatabase, OLNGParams, Reconstructor
            from ..anim_signals.posespace import PoseSpace, TimeSignal
            """
        )
    )
    out = _run(
        """
        import sys
        from bl_ext.dev.anim_signals.operators import ops
        core = "bl_ext.dev.anim_signals.anim_signals"
        assert ops.loop is sys.modules[core + ".manifolds.loop"]
        assert sys.modules[core + ".livelink"] is sys.modules[core + ".motiondb.livelink"] is ops.livelink
        assert ops.cv is sys.modules[core + ".posespace.canvas"]
        assert ops.PoseSpace.__module__ == core + ".posespace.space"
        import importlib
        assert importlib.import_module(core + ".meshcache") is importlib.import_module(core + ".meshio.meshcache")
        print(sorted(name for name in sys.modules if name.split(".")[0] == "anim_signals"))
        """,
        tmp_path,
    )
    assert out.strip() == "[]"


@pytest.mark.parametrize("package", ["splines", "manifolds", "posespace", "motiondb", "meshio", "imaging"])
def test_no_exported_name_hides_a_submodule(package):
    """``from anim_signals.manifolds import srv`` must give the module, not a same-named function."""
    pkg = importlib.import_module(f"anim_signals.{package}")
    for path in (CORE / package).glob("*.py"):
        if path.stem != "__init__":
            module = importlib.import_module(f"anim_signals.{package}.{path.stem}")
            assert getattr(pkg, path.stem) is module, f"{package}.{path.stem}"
            assert path.stem not in pkg.__all__
