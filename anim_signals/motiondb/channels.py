"""Channel names as users type them and as rigs spell them (pure Python).

Live Link Face writes ARKit names such as ``EyeBlinkLeft``; many ARKit rigs spell them
``eyeBlinkLeft``. Names are matched exactly first, then without regard to case.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["is_eye_channel", "match_names"]


def match_names(wanted: Sequence[str], have: Sequence[str]) -> dict[str, str]:
    """Each name of ``wanted`` found in ``have``, mapped to its spelling there.

    Parameters
    ----------
    wanted : sequence of str
        Names to look for.
    have : sequence of str
        Names available.

    Returns
    -------
    dict of str to str
        Wanted name -> the name in ``have``: the same name when it is there, else the one equal
        to it without regard to case (the last such one). Names not found are left out, in
        ``wanted``'s order otherwise.

    Examples
    --------
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
    """Whether a channel belongs to the eyes (a query may leave these out).

    Parameters
    ----------
    name : str
        A channel name (ARKit blendshape, Live Link rotation, bone path, ...).

    Returns
    -------
    bool
        ``"eye"`` occurs in the name, in any case.

    Examples
    --------
    >>> [is_eye_channel(n) for n in ("EyeBlinkLeft", "LeftEyeYaw", "JawOpen")]
    [True, True, False]
    """
    return "eye" in name.lower()
