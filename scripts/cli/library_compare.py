"""``library compare``'s last step: the k-NN graph, clusters and dendrogram of every clip's features.

The per-clip features (``OUT/clips/<clip>.npz``, written by the tasks) are embedded here
(:func:`anim_signals.library.embed`), candidates proposed by the cheap distance (coarse SRVs, FFT shift + time warping), and the
exact elastic distances of the candidate pairs computed on the cluster in blocks (the prepared clips
scattered to every worker once). Writes ``OUT/neighbours.json``, ``OUT/compare.md`` and
``OUT/dendrogram.png`` (the clusters' representatives); skipped when the inputs and options are those of
the files already there.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping

import numpy as np

from .errors import CliError, failed
from .outputs import write_text, written_atomically

__all__ = ["compare_step", "load_features", "step_digest"]

COMPARE_FILES = ("neighbours.json", "compare.md", "dendrogram.png")


def step_digest(manifest, opts: Mapping) -> str:
    """What the final step depends on: every finished clip's content digest and the options."""
    from anim_signals.library import options_digest

    return options_digest({"clips": {n: e["digest"] for n, e in sorted(manifest.done().items())}, "options": dict(opts)})


def step_is_current(out: str, manifest, opts: Mapping) -> bool:
    """The compare files are there and were made from these clips with these options."""
    try:
        with open(os.path.join(out, "neighbours.json"), encoding="utf-8") as fh:
            stamp = json.load(fh).get("inputs_digest")
    except (OSError, ValueError):
        return False
    return stamp == step_digest(manifest, opts) and all(os.path.isfile(os.path.join(out, f)) for f in COMPARE_FILES[:2])


def load_features(manifest, out: str, features: str) -> tuple[list[str], list[np.ndarray]]:
    """The finished clips' curves (sorted by name); CHANNELS: every clip must have the same channels
    (a clip of another rig is named, with the way out: body features), and Euler turns and quaternion
    signs are harmonised to the first clip's as Compare Actions does."""
    from anim_signals.manifolds import harmonise

    names, curves, keys, kinds, owners = [], [], [], [], []
    for name, entry in sorted(manifest.done().items()):
        with np.load(os.path.join(out, entry["outputs"][0])) as data:
            curves.append(np.asarray(data["curve"], dtype=float))
            keys.append([str(k) for k in data["keys"]])
            kinds.append([str(k) for k in data["kinds"]])
            owners.append([str(k) for k in data["owners"]])
        names.append(name)
    if features == "CHANNELS" and names:
        for i in range(1, len(names)):
            if keys[i] != keys[0]:
                missing = sorted(set(keys[0]) - set(keys[i]))[:3]
                extra = sorted(set(keys[i]) - set(keys[0]))[:3]
                raise CliError(
                    f"{names[i]} has other rotation channels than {names[0]} ({len(keys[i])} vs {len(keys[0])}; "
                    f"missing {', '.join(missing) or 'none'}, extra {', '.join(extra) or 'none'}): clips of different "
                    "rigs can only be compared by body features (--features BODY)")
        curves = [curves[0]] + [harmonise(c, curves[0], kinds[0], owners[0]) for c in curves[1:]]
    return names, curves


def dask_mappers(client, echo):
    """``map_blocks`` and ``map_rows`` for :func:`anim_signals.library.compare_library`: each block of
    pairs (exact distances) and of rows (cheap distances) one task, the embedding scattered to every
    worker once."""
    from anim_signals.library import cheap_distances, pair_distances

    scattered: dict[int, object] = {}

    def on_cluster(embedding):
        key = id(embedding)
        if key not in scattered:
            scattered.clear()
            scattered[key] = client.scatter(embedding, broadcast=True)
        return scattered[key]

    def gather(futures, what):
        results = []
        for i, f in enumerate(futures, 1):
            results.append(f.result())
            if i == len(futures) or i % max(1, len(futures) // 10) == 0:
                echo(f"  {what}: block {i}/{len(futures)}")
        return results

    def map_blocks(embedding, blocks):
        emb = on_cluster(embedding)
        return gather([client.submit(pair_distances, emb, b, pure=False) for b in blocks], "exact distances")

    def map_rows(embedding, rows):
        emb = on_cluster(embedding)
        return gather([client.submit(cheap_distances, emb, r, pure=False) for r in rows], "cheap distances")

    return map_blocks, map_rows


def compare_step(client, manifest, out: str, opts: Mapping, echo) -> dict:
    """The library's k-NN graph, clusters and representatives' dendrogram; writes the compare files."""
    from anim_signals.imaging import raster
    from anim_signals.library import compare_library, default_candidates

    if step_is_current(out, manifest, opts):
        echo("compare: neighbours.json is current (same clips, same options): nothing to do")
        with open(os.path.join(out, "neighbours.json"), encoding="utf-8") as fh:
            return {"compare": json.load(fh).get("stats", {})}
    names, curves = load_features(manifest, out, str(opts["features"]))
    if len(names) < 2:
        raise failed(f"need at least 2 clips whose features could be read to compare, got {len(names)}")
    k = min(int(opts["k"]), len(names) - 1)
    t0 = time.perf_counter()
    echo(f"compare: {len(names)} clips, k = {k}, {int(opts['candidates']) or default_candidates(k)} candidates per clip ...")
    try:
        r = compare_library(curves, k=k, n_candidates=int(opts["candidates"]) or None, closed=bool(opts["closed"]),
                            n_samples=int(opts["n_samples"]), coarse=min(int(opts["coarse"]), int(opts["n_samples"]) - 1),
                            n_clusters=int(opts["clusters"]) or None,
                            **(dict(zip(("map_blocks", "map_rows"), dask_mappers(client, echo)))
                               if client is not None else {}))
    except ValueError as ex:
        raise failed(f"cannot compare: {ex}") from ex
    seconds = time.perf_counter() - t0
    g = r.graph
    stats = {"clips": len(names), "k": k, "pairs": int(len(g.pairs)), "pair_fraction": g.pair_fraction,
             "clusters": len(r.representatives), "seconds": seconds}
    neighbours = {names[i]: [[names[j], float(d)] for j, d in zip(g.indices[i], g.distances[i]) if j >= 0]
                  for i in range(len(names))}
    labels = {n: int(c) for n, c in zip(names, r.labels)}
    reps = [names[i] for i in r.representatives]
    payload = {"inputs_digest": step_digest(manifest, opts), "options": dict(opts), "stats": stats, "clips": names,
               "neighbours": neighbours, "clusters": labels, "representatives": reps,
               "representative_distances": r.representative_distances.tolist()}
    png = os.path.join(out, "dendrogram.png")
    if r.representative_clustering is not None:
        rgba = raster.dendrogram_image(r.representative_clustering.linkage, reps, clusters=list(range(1, len(reps) + 1)),
                                       title=f"{len(reps)} cluster representatives ({opts['features'].lower()} features)")
        with written_atomically(png) as temporary:
            raster.write_png(temporary, rgba)
    write_text(os.path.join(out, "compare.md"), _markdown(names, labels, reps, neighbours, stats, opts))
    write_text(os.path.join(out, "neighbours.json"), json.dumps(payload, indent=1))
    echo(f"compare: {stats['pairs']} exact pairs ({100 * g.pair_fraction:.1f} % of all), {stats['clusters']} clusters, "
         f"{seconds:.1f} s -> {os.path.join(out, 'compare.md')}")
    return {"compare": stats}


def _markdown(names, labels, reps, neighbours, stats, opts) -> str:
    from anim_signals.library import default_candidates

    md = [f"# Library compare: {stats['clips']} clips ({opts['features'].lower()} features, elastic distance"
          f"{', as cycles' if opts['closed'] else ''})", "",
          f"Exact distances for {stats['pairs']} pairs ({100 * stats['pair_fraction']:.1f} % of all): each clip's "
          f"{int(opts['candidates']) or default_candidates(stats['k'])} candidates by the cheap distance (coarse SRVs "
          f"aligned by FFT correlation and time warping); {stats['seconds']:.1f} s.",
          "", "Dendrogram of the representatives: `dendrogram.png`", "",
          "## Clusters", "", "| cluster | representative | clips |", "|---:|---|---|"]
    for c, rep in enumerate(reps, 1):
        members = [n for n in names if labels[n] == c]
        md.append(f"| {c} | {rep} | {len(members)}: {', '.join(members[:12])}{' ...' if len(members) > 12 else ''} |")
    md += ["", f"## Nearest neighbours (k = {stats['k']}, the first 3)", "", "| clip | cluster | nearest (distance) |",
           "|---|---:|---|"]
    for n in names:
        md.append(f"| {n} | {labels[n]} | " + ", ".join(f"{o} ({d:.3g})" for o, d in neighbours[n][:3]) + " |")
    return "\n".join(md) + "\n"
