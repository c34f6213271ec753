"""The shared progress and handler machinery (operators/common/progress.py, handlers.py)."""

from __future__ import annotations

import bpy
import pytest
from _bl_helpers import ext_module


def _progress():
    return ext_module("operators.common.progress")  # the enabled extension's module (after conftest)


def _work(fractions, result, log):
    try:
        yield from fractions
    finally:
        log.append("closed")
    return result


def test_scaled_maps_fractions_into_its_part_and_returns_the_result():
    seen: list = []
    outer = _progress().scaled(_work([0.0, 0.5, 1.0, 1.5, -1.0], "done", []), 0.2, 0.6, seen=seen)
    out, result = ext_module("anim_signals.steps").run_steps(outer)
    assert result == "done"
    assert out == pytest.approx([0.2, 0.4, 0.6, 0.6, 0.2])  # clamped to [lo, hi]
    assert seen == [0.0, 0.5, 1.0, 1.5, -1.0]


def test_closing_scaled_closes_the_work_at_once():
    log: list = []
    outer = _progress().scaled(_work([0.1, 0.2, 0.3], None, log), 0.0, 1.0)
    next(outer)
    assert log == []
    outer.close()  # Esc on the operator stepping it
    assert log == ["closed"]


def test_run_blocking_returns_the_result():
    log: list = []
    assert _progress().run_blocking(_work([0.25, 0.75], 42, log)) == 42
    assert log == ["closed"]


def test_run_blocking_passes_an_error_on_and_closes_the_work():
    log: list = []

    def failing():
        try:
            yield 0.5
            raise ValueError("bad frame")
        finally:
            log.append("closed")

    with pytest.raises(ValueError, match="bad frame"):
        _progress().run_blocking(failing())
    assert log == ["closed"]
    # the progress bar was ended: a second run starts and finishes normally
    assert _progress().run_blocking(_work([1.0], "again", [])) == "again"


def test_handlers_are_installed_once_and_removed_entirely():
    def on_frame(scene, depsgraph=None):
        pass

    pairs = ((bpy.app.handlers.frame_change_post, on_frame),)
    try:
        h = ext_module("operators.common.handlers")
        h.install_handlers(pairs)
        h.install_handlers(pairs)
        assert bpy.app.handlers.frame_change_post.count(on_frame) == 1
        bpy.app.handlers.frame_change_post.append(on_frame)  # a twin added by hand
        h.remove_handlers(pairs)
        assert on_frame not in bpy.app.handlers.frame_change_post
    finally:
        while on_frame in bpy.app.handlers.frame_change_post:
            bpy.app.handlers.frame_change_post.remove(on_frame)
