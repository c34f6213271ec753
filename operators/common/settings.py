"""One definition of a tool's settings, used by its operator and by the sidebar.

A tool declares its settings once, as a plain class of ``bpy.props`` annotations (a *settings
mixin*, e.g. ``FitSettings``). Its operator inherits the mixin, so F3, menus, the redo panel and
scripts see the properties; the tool's scene PropertyGroup inherits the same mixin, so the sidebar
shows the same names, defaults and tooltips (Blender registers annotations of mixin bases).

When an operator is called from a menu or F3 its unset properties take the sidebar's values
(:func:`fill_unset`); a panel button passes them explicitly (``panels.common.settings_button``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["as_keywords", "fill_unset", "setting_names"]


def setting_names(mixin: type) -> tuple[str, ...]:
    """The property names a settings mixin declares (its own and its bases'), in declaration order."""
    names: dict[str, None] = {}
    for cls in reversed(mixin.__mro__):
        for name in getattr(cls, "__annotations__", {}):
            if not name.startswith("_"):
                names[name] = None
    return tuple(names)


def as_keywords(source: Any, names: Iterable[str]) -> dict[str, Any]:
    """``{name: source.name}`` for the given property names (an operator's or a PropertyGroup's)."""
    return {name: getattr(source, name) for name in names}


def fill_unset(op: Any, stored: Any, names: Iterable[str]) -> None:
    """Properties of ``op`` not given explicitly take their values from ``stored`` (the sidebar's)."""
    if stored is None:
        return
    for name in names:
        if not op.properties.is_property_set(name) and hasattr(stored, name):
            setattr(op, name, getattr(stored, name))
