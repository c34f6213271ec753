"""Shared pieces of the benchmarks ``scripts/benchmark_*.py``.

``report``: what all four share to report a run (table cells and markdown tables, commit and machine,
timing, progress, writing the markdown and JSON). ``fit_measure`` and ``fit_peers``: the fit
benchmark's clip, result rows and peers (Blender's Decimate, uniform B-spline, the seed method,
scipy FITPACK). Imported with ``scripts/`` on ``sys.path`` (each benchmark puts it there), next to
``_blender_env``.
"""
