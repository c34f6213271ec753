"""Shared pieces of the benchmarks ``scripts/benchmark_*.py``.

``report``: what all five share to report a run (table cells and markdown tables, commit and machine,
timing, progress, writing the markdown and JSON). ``fit_measure`` and ``fit_peers``: the fit
benchmark's clip, result rows and peers (Blender's Decimate, uniform B-spline, the seed method,
scipy FITPACK). ``remesh``: reproducible remeshing with a known vertex map (midpoint subdivision,
half-edge collapses with Delaunay flips), for exact ground truth between two connectivities.
``transfer_data``: the deformation-transfer benchmark's meshes (cat/lion, horse gallop, generated
tube), heuristic quadruped markers, its measures and the nearest-point baseline. Imported with
``scripts/`` on ``sys.path`` (each benchmark puts it there), next to ``_blender_env``.
"""
