"""Channel and action names as users type them and as rigs spell them (pure Python, no bpy)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["is_eye_channel", "match_names"]


def match_names(wanted: Sequence[str], have: Sequence[str]) -> dict[str, str]:
    """Each name of ``wanted`` found in ``have``, mapped to its spelling there.

    Exact matches first, else case-insensitive: ARKit rigs often use 'eyeBlinkLeft' where Live Link
    Face writes 'EyeBlinkLeft'. Names not found are left out of the result.

    >>> match_names(["EyeBlinkLeft", "JawOpen", "Nose"], ["eyeBlinkLeft", "JawOpen"])
    {'EyeBlinkLeft': 'eyeBlinkLeft', 'JawOpen': 'JawOpen'}
    """
    exact = set(have)
    lower = {h.lower(): h for h in have}
    out = {}
    for w in wanted:
        if w in exact:
            out[w] = w
        elif w.lower() in lower:
            out[w] = lower[w.lower()]
    return out


def is_eye_channel(name: str) -> bool:
    """Whether a channel belongs to the eyes (``Drop Eyes`` leaves these out of a query)."""
    return "eye" in name.lower()
