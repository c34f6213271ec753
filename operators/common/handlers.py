"""Blender app handlers (``bpy.app.handlers.*``) a tool installs and takes out again, once each."""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["install_handlers", "remove_handlers"]

HandlerPairs = Iterable[tuple[list, Callable]]  # (bpy.app.handlers.<event>, function)


def install_handlers(pairs: HandlerPairs) -> None:
    """Append each function to its handler list unless it is there already (reloads add no twin)."""
    for handlers, handler in pairs:
        if handler not in handlers:
            handlers.append(handler)


def remove_handlers(pairs: HandlerPairs) -> None:
    """Take each function out of its handler list, every copy of it."""
    for handlers, handler in pairs:
        while handler in handlers:
            handlers.remove(handler)
