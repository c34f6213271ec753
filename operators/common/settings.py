"""One definition of a tool's settings, used by its operator and by the sidebar.

A tool declares its settings once, as a plain class of ``bpy.props`` annotations (a *settings
mixin*, e.g. ``FitSettings``). Its operator inherits the mixin, so F3, menus, the redo panel and
scripts see the properties; the tool's scene PropertyGroup inherits the same mixin, so the sidebar
shows the same names, defaults and tooltips (Blender registers annotations of mixin bases).

When an operator is called from a menu or F3 its unset properties take the sidebar's values
(:func:`fill_unset`); a panel button passes them explicitly (``panels.common.settings_button``),
except collection properties (lists of items), which the operator's ``invoke`` copies.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["as_keywords", "copy_collection", "draw_frame_range", "fill_unset", "is_collection", "setting_names"]


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


def is_collection(value: Any) -> bool:
    """``value`` is a collection property (a list of PropertyGroup items), which cannot be assigned."""
    return hasattr(value, "add") and hasattr(value, "clear") and hasattr(value, "foreach_get")


def copy_collection(target: Any, source: Any) -> None:
    """Make the collection ``target`` hold copies of the items of ``source`` (same item type)."""
    target.clear()
    for item in source:
        new = target.add()
        for key in item.bl_rna.properties.keys():
            if key != "rna_type" and not item.bl_rna.properties[key].is_readonly:
                setattr(new, key, getattr(item, key))


def fill_unset(op: Any, stored: Any, names: Iterable[str]) -> None:
    """Properties of ``op`` not given explicitly take their values from ``stored`` (the sidebar's);
    collection properties take copies of its items."""
    if stored is None:
        return
    for name in names:
        if op.properties.is_property_set(name) or not hasattr(stored, name):
            continue
        value = getattr(stored, name)
        if is_collection(value):
            copy_collection(getattr(op, name), value)
        else:
            setattr(op, name, value)


def draw_frame_range(layout: Any, settings: Any) -> None:
    """Draw a tool's ``range_mode`` and, for a Custom range, its ``frame_start`` / ``frame_end``
    (the same in an operator's redo panel and in the sidebar)."""
    layout.prop(settings, "range_mode")
    if settings.range_mode == "CUSTOM":
        col = layout.column(align=True)
        col.prop(settings, "frame_start")
        col.prop(settings, "frame_end")
