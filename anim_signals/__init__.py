"""Anim Signals algorithm core: arrays in, arrays out, never bpy.

numpy and scipy throughout; scikit-learn, faiss and numba where a tool asks for them.

One subpackage per tool, plus the channel conventions every tool shares:

=================  ==========================================================================
``splines``        Fit spline: dense curves -> few exact Bezier keys (Mukai, "Latent
                   Nonuniform Splines for Animation Approximation")
``manifolds``      Loop / blend / compare clips as square-root-velocity curves (Eslitzbichler,
                   "Modelling Character Motions on Infinite-Dimensional Manifolds")
``posespace``      Time, pose and shape signals and the 2D canvas geometry (Cashman and
                   Hormann, "A continuous, editable representation for deforming mesh
                   sequences with separate signals for time, pose and shape")
``motiondb``       Motion database: k-NN and the online lazy neighbourhood graph (Richert,
                   "Animation Database for real-time motion reconstruction"), Live Link Face CSV
``transfer``       Deformation transfer between meshes: by example poses (Cashman and
                   Hormann §4.3) or by marker correspondence (Sumner and Popović,
                   "Deformation Transfer for Triangle Meshes")
``meshio``         Mesh caches (PC2 / MDD point caches)
``imaging``        Raster drawing and PNG writing (dendrograms, canvas snapshots)
``channels``       Channel kinds, Euler / quaternion continuity, units by kind, finite checks
=================  ==========================================================================

Usable from any Python (the Blender console, a pipeline script, a notebook)::

    import anim_signals
    model = anim_signals.fit_latent_spline(values, internal_knots=8)
    fit = anim_signals.fit_channels(values, frames, tolerance)
    from anim_signals.manifolds import elastic_distance, make_loop

The subpackages other than ``splines`` (and ``channels``) are imported on first use (``anim_signals.manifolds``
works without an explicit import), so ``import anim_signals`` does not pay for all of them.

The flat module paths of earlier releases (``anim_signals.loop``, ``anim_signals.fit``, ...) still
import, for one release, as aliases of the modules that replaced them: see ``_MOVED``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from . import channels
from .splines import (
    BezierCurve,
    ChannelsFit,
    FewestKeys,
    FitCancelled,
    SplineModel,
    distortion,
    fewest_keys,
    fit_channels,
    fit_latent_spline,
    fit_uniform_spline,
    interpolating_curve,
    iter_fit_channels,
)

__all__ = [
    "BezierCurve",
    "ChannelsFit",
    "FitCancelled",
    "SplineModel",
    "FewestKeys",
    "distortion",
    "fewest_keys",
    "fit_channels",
    "fit_latent_spline",
    "fit_uniform_spline",
    "interpolating_curve",
    "iter_fit_channels",
    # subpackages
    "channels",
    "imaging",
    "manifolds",
    "meshio",
    "motiondb",
    "posespace",
    "splines",
    "transfer",
    # flat modules of earlier releases that this package exported (aliases, see _MOVED)
    "bspline",
    "elastic",
    "loop",
    "motion",
    "srv",
]

# Old flat module -> the module that replaced it, both relative to this package. The only table
# of moved modules: the import hook and the attribute access below both read it. Kept for one
# release so that callers (the extension's operators, user scripts) can move at their own pace.
_MOVED: dict[str, str] = {
    "bezier": "splines.bezier",
    "bspline": "splines.bspline",
    "canvas": "posespace.canvas",
    "elastic": "manifolds.elastic",
    "fit": "splines.fitting",
    "livelink": "motiondb.livelink",
    "loop": "manifolds.loop",
    "meshcache": "meshio.meshcache",
    "motion": "manifolds.clips",
    "raster": "imaging.raster",
    "skeleton": "manifolds.skeleton",
    "srv": "manifolds.srv",
}

if TYPE_CHECKING:  # the same table for the type checker, which cannot run the import hook
    from . import imaging, manifolds, meshio, motiondb, posespace, transfer
    from .imaging import raster as raster
    from .manifolds import clips as motion
    from .manifolds import elastic as elastic
    from .manifolds import loop as loop
    from .manifolds import skeleton as skeleton
    from .manifolds import srv as srv
    from .meshio import meshcache as meshcache
    from .motiondb import livelink as livelink
    from .posespace import canvas as canvas
    from .splines import bezier as bezier
    from .splines import bspline as bspline
    from .splines import fitting as fit

# Imported on first attribute access rather than with the package.
_LAZY_SUBPACKAGES = frozenset({"imaging", "manifolds", "meshio", "motiondb", "posespace", "transfer"})


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolve ``<package>.<old>`` to the already-moved module object (one object, two names).

    ``<package>`` is this package's ``__name__`` (``anim_signals`` from a checkout,
    ``bl_ext.<repo>.anim_signals.anim_signals`` inside Blender), so the hook never assumes
    where the core is installed. ``import <package>.loop``, ``from <package> import loop`` and
    ``<package>.loop.make_loop`` all give the module ``<package>.manifolds.loop``, and
    ``sys.modules`` holds it under both names.
    """

    def __init__(self, package: str, moved: dict[str, str]) -> None:
        self.package = package
        self.moved = moved
        # the target's own spec while the import system briefly stamps the alias spec on it
        self._own_specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        parent, _, old = fullname.rpartition(".")
        if parent != self.package or old not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        old = spec.name.rpartition(".")[2]
        module = importlib.import_module(f"{self.package}.{self.moved[old]}")
        self._own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system set module.__spec__ to the alias spec; the module keeps its own, so
        # that importlib.reload() and pickling still see the real name.
        alias_spec = module.__spec__
        if alias_spec is not None and alias_spec.name in self._own_specs:
            module.__spec__ = self._own_specs.pop(alias_spec.name)


def _install_moved_module_finder() -> None:
    """Put the finder first on sys.meta_path, replacing one left by an earlier load of this package
    (Blender's script reload, an extension re-enabled)."""
    for finder in list(sys.meta_path):
        if type(finder).__name__ == _MovedModuleFinder.__name__ and getattr(finder, "package", None) == __name__:
            sys.meta_path.remove(finder)
    sys.meta_path.insert(0, _MovedModuleFinder(__name__, _MOVED))


_install_moved_module_finder()


def __getattr__(name: str) -> ModuleType:
    """Import lazy subpackages and moved modules on first attribute access."""
    if name in _MOVED or name in _LAZY_SUBPACKAGES:
        # through the import system, so the alias lands in sys.modules and on this package
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_MOVED))
