"""The Examples sections of the core's docstrings run and give what they show.

Every module listed must hold at least one example, and the main entry point of each subpackage
must carry its own, so the docs cannot silently lose them.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "anim_signals.channels",
    "anim_signals.validation",
    "anim_signals.steps",
    "anim_signals.splines.bspline",
    "anim_signals.splines.bezier",
    "anim_signals.splines.key_reduction",
    "anim_signals.splines.segment_fit",
    "anim_signals.splines.segment_process",
    "anim_signals.splines.object_space",
    "anim_signals.splines.latent",
    "anim_signals.splines.fitting",
    "anim_signals.splines.cma_es",
    "anim_signals.manifolds.srv",
    "anim_signals.manifolds.clips",
    "anim_signals.manifolds.loop",
    "anim_signals.manifolds.elastic",
    "anim_signals.manifolds.clustering",
    "anim_signals.manifolds.skeleton",
    "anim_signals.posespace.signals",
    "anim_signals.posespace.sites",
    "anim_signals.posespace.space",
    "anim_signals.posespace.retime",
    "anim_signals.posespace.controls",
    "anim_signals.posespace.canvas",
    "anim_signals.posespace.generated",
    "anim_signals.posespace.shapes",
    "anim_signals.posespace.render",
    "anim_signals.motiondb.graph",
    "anim_signals.motiondb.knn",
    "anim_signals.motiondb.index_store",
    "anim_signals.motiondb.features",
    "anim_signals.motiondb.channels",
    "anim_signals.motiondb.livelink",
    "anim_signals.motiondb.generated",
    "anim_signals.transfer.meshes",
    "anim_signals.transfer.gradients",
    "anim_signals.transfer.correspondence",
    "anim_signals.transfer.examples",
    "anim_signals.transfer.generated",
    "anim_signals.meshio.meshcache",
    "anim_signals.imaging.raster",
    "anim_signals.spatialkeys.rotations",
    "anim_signals.spatialkeys.distance",
    "anim_signals.spatialkeys.projection",
    "anim_signals.spatialkeys.selection",
    "anim_signals.spatialkeys.backprojection",
    "anim_signals.spatialkeys.temporal",
    "anim_signals.spatialkeys.compaction",
    "anim_signals.spatialkeys.canvas",
    "anim_signals.spatialkeys.generated",
    "anim_signals.spatialkeys.bvh",
    "anim_signals.library.discovery",
    "anim_signals.library.manifest",
    "anim_signals.library.neighbours",
    "anim_signals.library.generated",
]

# The entry point of each tool, which must show how it is called.
ENTRY_POINTS = [
    ("anim_signals.splines.fitting", "fit_channels"),
    ("anim_signals.splines.key_reduction", "fewest_keys"),
    ("anim_signals.splines.latent", "fit_latent_spline"),
    ("anim_signals.manifolds.loop", "make_loop"),
    ("anim_signals.manifolds.elastic", "elastic_distance"),
    ("anim_signals.posespace.space", "PoseSpace"),
    ("anim_signals.posespace.retime", "resample_times"),
    ("anim_signals.posespace.canvas", "canvas_geometry"),
    ("anim_signals.posespace.render", "render_png"),
    ("anim_signals.motiondb.graph", "MotionDatabase"),
    ("anim_signals.motiondb.graph", "reconstruct"),
    ("anim_signals.transfer.examples", "transfer_by_examples"),
    ("anim_signals.transfer.correspondence", "transfer_by_correspondence"),
    ("anim_signals.meshio.meshcache", "read_pc2"),
    ("anim_signals.imaging.raster", "encode_png"),
    ("anim_signals.imaging.raster", "dendrogram_image"),
    ("anim_signals.spatialkeys.compaction", "compact_clip"),
    ("anim_signals.spatialkeys.backprojection", "fit_rotation_rbf"),
    ("anim_signals.spatialkeys.backprojection", "optimise_projection"),
    ("anim_signals.library.neighbours", "compare_library"),
    ("anim_signals.library.manifest", "Manifest"),
]


@pytest.mark.parametrize("name", MODULES)
def test_module_examples_run(name):
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    assert tests, f"{name} has no docstring examples"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name} (see output)"


@pytest.mark.parametrize(("module", "name"), ENTRY_POINTS)
def test_entry_points_have_examples(module, name):
    obj = getattr(importlib.import_module(module), name)
    doc = obj.__doc__ or ""
    assert "Examples\n" in doc and ">>> " in doc, f"{module}.{name} has no Examples section"
    for section in ("Parameters\n", "Returns\n") if callable(obj) and not isinstance(obj, type) else ():
        assert section in doc, f"{module}.{name} has no {section.strip()} section"


def test_every_core_module_declares_all():
    import pkgutil

    import anim_signals

    names = ["anim_signals"] + [
        m.name for m in pkgutil.walk_packages(anim_signals.__path__, prefix="anim_signals.")
    ]
    for name in names:
        module = importlib.import_module(name)
        assert isinstance(getattr(module, "__all__", None), list), f"{name} has no explicit __all__"
        for exported in module.__all__:
            assert hasattr(module, exported), f"{name}.__all__ names {exported!r}, which it does not define"
