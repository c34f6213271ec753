"""Blender tests: run inside a venv with the ``bpy`` module (5.0.x or 4.2 LTS).

The checkout is installed headless as an extension (``bl_ext.dev.anim_signals``) from a repository
folder holding a symlink to it; Blender's user resources go to ``.blender_user/`` in the checkout
(git-ignored), never to the user's own configuration.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXT_ID = "anim_signals"
EXT_MODULE = f"bl_ext.dev.{EXT_ID}"

_USER = REPO / ".blender_user" / f"pytest-{os.getpid()}"
os.environ["BLENDER_USER_RESOURCES"] = str(_USER / "resources")

import bpy  # noqa: E402, I001  (bpy must come after BLENDER_USER_RESOURCES)
import addon_utils  # noqa: E402  (on sys.path once bpy is imported)

# Test modules import their helpers with `from _bl_helpers import ...`.
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _install_extension() -> None:
    repo_dir = _USER / "extensions"
    repo_dir.mkdir(parents=True, exist_ok=True)
    link = repo_dir / EXT_ID
    if not link.exists():
        link.symlink_to(REPO, target_is_directory=True)
    prefs = bpy.context.preferences.extensions
    if not any(r.module == "dev" for r in prefs.repos):
        prefs.repos.new(name="Dev", module="dev", custom_directory=str(repo_dir), source="USER")
    mod = addon_utils.enable(EXT_MODULE, default_set=True)
    if mod is None:
        raise RuntimeError(f"could not enable {EXT_MODULE} (see the traceback above)")


@pytest.fixture(scope="session", autouse=True)
def extension():
    """Factory settings once, then the checkout installed and enabled as an extension."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    _install_extension()
    yield sys.modules[EXT_MODULE]
    addon_utils.disable(EXT_MODULE, default_set=True)
    shutil.rmtree(_USER, ignore_errors=True)


@pytest.fixture
def ext(extension):
    """The extension's modules: ext.core (anim_signals), ext.fit (operators.fit_spline.fitting), ext.data
    (operators.blender_data, the Blender data layer: ``ext.data.channels.channel_specs`` ...)."""

    class _Ext:
        core = sys.modules[f"{EXT_MODULE}.anim_signals"]
        fit = sys.modules[f"{EXT_MODULE}.operators.fit_spline.fitting"]
        data = sys.modules[f"{EXT_MODULE}.operators.blender_data"]

    return _Ext


def _clear_data() -> None:
    """An empty scene without reloading factory settings (which would drop the extension repo)."""
    for ob in list(bpy.data.objects):
        bpy.data.objects.remove(ob)
    # Actions and libraries go whatever their users (fake users included); the rest once unused.
    # (bpy.data.<collection> is a new Python object on every access: compare names, not identity.)
    for name in ("meshes", "armatures", "actions", "shape_keys", "materials", "libraries"):
        coll = getattr(bpy.data, name)
        ids = [i for i in coll if i.users == 0 or name in {"actions", "libraries"}]
        if ids:
            bpy.data.batch_remove(ids)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end, scene.frame_current = 1, 250, 1
    scene.unit_settings.scale_length = 1.0
    if hasattr(bpy.types.Scene, "anim_signals"):
        scene.property_unset("anim_signals")  # settings and last-fit numbers back to defaults


@pytest.fixture
def scene(extension):
    """A fresh, empty scene per test."""
    _clear_data()
    yield bpy.context.scene
    _clear_data()



@pytest.fixture
def skf(extension):
    """operators.spatial_keyframes (its script API) of the installed extension."""
    return sys.modules[f"{EXT_MODULE}.operators.spatial_keyframes"]


@pytest.fixture
def sk(extension):
    """The core: anim_signals.spatialkeys of the installed extension."""
    return sys.modules[f"{EXT_MODULE}.anim_signals.spatialkeys"]
