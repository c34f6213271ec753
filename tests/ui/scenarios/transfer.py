"""Placeholder: filled in by the scenario's author (issue 16)."""

from __future__ import annotations

from collections.abc import Iterator

from uikit import Wait


def run(area) -> Iterator[Wait]:
    yield from ()
