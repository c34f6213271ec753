"""The library core: clip discovery, the resumable manifest, and the candidate-based k-NN comparison
checked against the full elastic distance matrix."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anim_signals.library import (
    Manifest,
    cheap_distances,
    compare_library,
    embed,
    exact_knn,
    file_digest,
    find_clips,
    knn_graph,
    knn_recall,
    options_digest,
    propose_pairs,
    replace_file,
)
from anim_signals.manifolds import elastic

# --------------------------------------------------------------------------------------------------
# discovery


def test_find_clips_recursive_sorted_and_skips_hidden(tmp_path):
    for rel in ("b/x.bvh", "a.blend", "b/c/y.BVH", "b/notes.txt", ".hidden/z.bvh", "b/.x.partial-1a2b.bvh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    clips = find_clips(tmp_path)
    assert [c.name for c in clips] == ["a.blend", "b/c/y.BVH", "b/x.bvh"]
    assert [c.kind for c in clips] == ["blend", "bvh", "bvh"]
    assert all(os.path.isabs(c.path) and os.path.isfile(c.path) for c in clips)


def test_find_clips_missing_folder_and_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        find_clips(tmp_path / "nope")
    (tmp_path / "f.bvh").write_text("")
    with pytest.raises(NotADirectoryError, match="is a file"):
        find_clips(tmp_path / "f.bvh")


# --------------------------------------------------------------------------------------------------
# manifest


def test_file_digest_is_sha256(tmp_path):
    import hashlib

    data = os.urandom(3_000_001)
    (tmp_path / "f").write_bytes(data)
    assert file_digest(tmp_path / "f", chunk=4096) == hashlib.sha256(data).hexdigest()


def test_manifest_resume_skips_done_redoes_changed(tmp_path):
    path = tmp_path / "manifest.json"
    (tmp_path / "a.blend").write_text("out")
    m = Manifest(path, "fit")
    opts = {"tol": 0.5}
    plan = m.plan({"a": "h1", "b": "h2", "c": "h3"}, opts)
    assert plan.todo == ["a", "b", "c"] and plan.new == ["a", "b", "c"]
    m.record("a", "h1", opts, result={"keys": 3}, outputs=["a.blend"])
    m.record("b", "h2", opts, error="corrupt file")
    m.save()
    again = Manifest(path, "fit")
    plan = again.plan({"a": "h1", "b": "h2", "c": "h3"}, opts)
    assert plan.skipped == ["a", "b"] and plan.todo == ["c"]
    assert again.failed()["b"]["error"] == "corrupt file" and again.done()["a"]["result"] == {"keys": 3}
    assert again.plan({"a": "h1", "b": "h2"}, opts, retry_failed=True).retried == ["b"]
    assert again.plan({"a": "CHANGED", "b": "h2"}, opts).changed == ["a"]
    assert again.plan({"a": "h1", "b": "h2"}, {"tol": 0.25}).changed == ["a", "b"]
    os.remove(tmp_path / "a.blend")
    assert again.plan({"a": "h1"}, opts).missing_outputs == ["a"]


def test_manifest_refuses_damaged_or_other_command(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text('{"clips": {"a": ')  # cut short
    with pytest.raises(ValueError, match="not a readable manifest"):
        Manifest(path, "fit")
    path.write_text(json.dumps({"command": "loop", "clips": {}}))
    with pytest.raises(ValueError, match="'loop' run"):
        Manifest(path, "fit")


def test_replace_file_leaves_old_content_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "manifest.json"
    replace_file(path, "old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        replace_file(path, "new")
    monkeypatch.undo()
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]  # no temporary left


@given(st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.floats(allow_nan=False), st.text()),
                       max_size=5))
def test_options_digest_ignores_key_order(options):
    assert options_digest(dict(reversed(list(options.items())))) == options_digest(options)


# --------------------------------------------------------------------------------------------------
# library-scale comparison


def family_curves(n_per_family=6, seed=0):
    """Clips of three motion families (different harmonics), each clip varied in amplitude, phase
    (start point), speed profile and length -- what the elastic distance is built to see through."""
    rng = np.random.default_rng(seed)
    curves, families = [], []
    for fam, harmonics in enumerate(((1, 2), (1, 3), (2, 3))):
        for _ in range(n_per_family):
            n = int(rng.integers(50, 90))
            t = np.linspace(0.0, 1.0, n)
            warp = t + 0.08 * rng.normal() * np.sin(2 * np.pi * t) / (2 * np.pi)
            ph = rng.uniform(0, 2 * np.pi)
            a = 1.0 + 0.15 * rng.normal(size=4)
            h1, h2 = harmonics
            curves.append(np.column_stack([
                a[0] * np.sin(2 * np.pi * h1 * warp + ph), a[1] * np.cos(2 * np.pi * h1 * warp + ph),
                a[2] * np.sin(2 * np.pi * h2 * warp + ph), a[3] * np.cos(2 * np.pi * h2 * warp + ph)]))
            families.append(fam)
    return curves, np.array(families)


def test_cheap_distance_sees_through_a_start_point_shift():
    t = np.linspace(0.0, 1.0, 65)
    walk = np.column_stack([np.sin(2 * np.pi * t), np.cos(2 * np.pi * t), 0.5 * np.sin(4 * np.pi * t)])
    shifted = np.vstack([np.roll(walk[:-1], 24, axis=0), np.roll(walk[:-1], 24, axis=0)[:1]])
    other = np.column_stack([np.sin(6 * np.pi * t), np.cos(2 * np.pi * t), t])
    e = embed([walk, shifted, other], n_samples=65, coarse=16)
    d = cheap_distances(e)
    assert d[0, 1] < 1e-6 and d[0, 2] > 0.3
    np.testing.assert_allclose(d, d.T, atol=1e-9)
    open_d = cheap_distances(embed([walk, shifted, other], n_samples=65, coarse=16, closed=False))
    assert open_d[0, 1] > 0.3  # open curves are not shifted


def test_all_candidates_give_the_exact_knn_of_the_full_matrix():
    curves, _ = family_curves(4)
    full = elastic.distance_matrix(curves, closed=True, n_samples=40)
    r = compare_library(curves, k=3, n_candidates=len(curves) - 1, n_samples=40, coarse=13)
    assert r.graph.pair_fraction == 1.0
    np.testing.assert_array_equal(r.graph.indices, exact_knn(full, 3))
    assert knn_recall(r.graph.indices, full, 3) == 1.0
    for (i, j), d in zip(r.graph.pairs, r.graph.pair_distances):
        assert d == pytest.approx(full[i, j], abs=1e-12)


def test_few_candidates_keep_high_recall_and_find_the_families():
    curves, families = family_curves(8, seed=1)
    m = len(curves)
    full = elastic.distance_matrix(curves, closed=True, n_samples=40)
    r = compare_library(curves, k=3, n_candidates=6, n_samples=40, coarse=13, n_clusters=3)
    assert r.graph.pair_fraction < 0.4
    assert knn_recall(r.graph.indices, full, 3) >= 0.9
    # one cluster per family, a representative from each
    assert len(set(zip(families.tolist(), r.labels.tolist()))) == 3
    assert sorted(families[r.representatives].tolist()) == [0, 1, 2]
    assert r.representative_distances.shape == (3, 3)
    for a, i in enumerate(r.representatives):
        for b, j in enumerate(r.representatives):
            assert r.representative_distances[a, b] == pytest.approx(full[i, j], abs=1e-12)
    assert r.representative_clustering is not None and len(r.representative_clustering.leaves) == 3
    assert m == 24


def test_knn_graph_orders_and_pads():
    g = knn_graph(4, np.array([[0, 1], [0, 2], [1, 2]]), np.array([0.3, 0.1, 0.2]), k=3)
    assert g.indices.tolist() == [[2, 1, -1], [2, 0, -1], [0, 1, -1], [-1, -1, -1]]
    assert np.isinf(g.distances[3]).all() and g.distances[0, 0] == 0.1


@settings(max_examples=30, deadline=None)
@given(st.integers(3, 12), st.integers(1, 12), st.integers(0, 10_000))
def test_propose_pairs_covers_each_clips_nearest(m, c, seed):
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(m, 2))
    d = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    pairs = propose_pairs(d, c)
    assert (pairs[:, 0] < pairs[:, 1]).all() and len({tuple(p) for p in pairs.tolist()}) == len(pairs)
    have = {tuple(p) for p in pairs.tolist()}
    for i, row in enumerate(exact_knn(d, min(c, m - 1))):
        for j in row:
            assert (min(i, j), max(i, j)) in have


def test_embed_refuses_mixed_rigs_and_still_clips():
    t = np.linspace(0, 1, 30)
    with pytest.raises(ValueError, match="different channel counts.*body features"):
        embed([np.column_stack([t, t**2]), np.column_stack([t, t**2, t**3])], n_samples=20, coarse=8)
    with pytest.raises(ValueError, match=r"curves\[1\]"):
        embed([np.column_stack([t, t**2]), np.zeros((30, 2))], n_samples=20, coarse=8)


def test_warping_brings_a_retimed_copy_close_where_the_shift_alone_cannot():
    t = np.linspace(0.0, 1.0, 121)
    warped = t + 0.12 * np.sin(2 * np.pi * t)  # the same motion, slower then faster (monotone)
    moves = lambda u: np.column_stack([np.sin(2 * np.pi * u), np.cos(4 * np.pi * u), np.sin(6 * np.pi * u)])  # noqa: E731
    e = embed([moves(t), moves(warped)], n_samples=121, coarse=24)
    with_warp, shift_only = cheap_distances(e)[0, 1], cheap_distances(e, warp=False)[0, 1]
    exact = elastic.elastic_distance(moves(t), moves(warped), closed=True, n_samples=121)
    assert with_warp < 0.5 * shift_only
    assert abs(with_warp - exact) < abs(shift_only - exact)
