"""Operator ``poll`` checks several tools share; each sets Blender's poll message when it fails."""

from __future__ import annotations

from typing import Any

from ..blender_data.actions import animated_ids

__all__ = ["has_active_object", "has_animated_object"]

NO_ACTIVE_OBJECT = "No active object"
NOT_ANIMATED = "The active object has no action (nor animated shape keys)"


def has_active_object(cls: Any, context: Any) -> bool:
    """There is an active object (else the poll message says so)."""
    if context.active_object is None:
        cls.poll_message_set(NO_ACTIVE_OBJECT)
        return False
    return True


def has_animated_object(cls: Any, context: Any) -> bool:
    """The active object has an action or animated shape keys (else the poll message says why not)."""
    if not has_active_object(cls, context):
        return False
    if not animated_ids(context.active_object, "AUTO"):
        cls.poll_message_set(NOT_ANIMATED)
        return False
    return True
