"""What every tool's panels share: a property-split layout, and a big button that runs an
operator with the sidebar's settings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["settings_button", "split_layout"]


def split_layout(layout: Any) -> Any:
    """The panel's layout with labels left of the values (Blender's property-split style)."""
    layout.use_property_split = True
    layout.use_property_decorate = False
    return layout


def settings_button(layout: Any, idname: str, settings: Any, names: Iterable[str], *, text: str, icon: str = "NONE") -> Any:
    """A large button for operator ``idname`` carrying the sidebar's ``settings`` (the given names)."""
    row = layout.row()
    row.scale_y = 1.4
    op = row.operator(idname, text=text, icon=icon)
    for name in names:
        setattr(op, name, getattr(settings, name))
    return op
