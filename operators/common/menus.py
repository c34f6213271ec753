"""Adding an operator's entry to Blender menus, and taking it out again (missing menus are skipped)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import bpy


def add_to_menus(menus: Iterable[str], draw: Callable) -> None:
    for name in menus:
        menu = getattr(bpy.types, name, None)
        if menu is not None:
            menu.append(draw)


def remove_from_menus(menus: Iterable[str], draw: Callable) -> None:
    for name in menus:
        menu = getattr(bpy.types, name, None)
        if menu is not None:
            menu.remove(draw)
