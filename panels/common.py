"""What every tool's panels share: a property-split layout, and a big button that runs an
operator with the sidebar's settings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..operators.common.settings import is_collection

__all__ = ["settings_button", "split_layout"]


def split_layout(layout: Any) -> Any:
    """The panel's layout with labels left of the values (Blender's property-split style)."""
    layout.use_property_split = True
    layout.use_property_decorate = False
    return layout


def settings_button(layout: Any, idname: str, settings: Any, names: Iterable[str], *, text: str, icon: str = "NONE") -> Any:
    """A large button for operator ``idname`` carrying the sidebar's ``settings`` (the given names).

    Collection properties cannot be passed by a button: the operator's ``invoke`` copies them from
    the same settings (``operators.common.settings.fill_unset``).
    """
    row = layout.row()
    row.scale_y = 1.4
    op = row.operator(idname, text=text, icon=icon)
    for name in names:
        value = getattr(settings, name)
        if not is_collection(value):
            setattr(op, name, value)
    return op
