"""The command line's one exit-code scheme and the error that carries a message to the user.

0: success. 2: the command line, or an input or output file it names, is unusable -- refused before any
work starts (argparse errors, missing / unreadable / malformed inputs, unwritable outputs, bad values).
1: the work itself failed (an operator refused or raised; its message is printed). Every command uses
this scheme; the entry point prints one ``error: ...`` line and no traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_UNUSABLE = 2

EXIT_CODES_HELP = (
    "exit codes: 0 success; 2 the command line or a file it names is unusable (bad option value, missing, "
    "unreadable or malformed input, unwritable output): refused before any work, nothing written; 1 the work "
    "itself failed (the operator's message is printed). Errors are one 'error: ...' line on stderr; set "
    "ANIM_SIGNALS_DEBUG=1 for the traceback of an unexpected error."
)


class CliError(Exception):
    """A clear message for the user; exit code 2 (unusable input or output) unless ``code`` says 1 (the
    work failed)."""

    def __init__(self, msg: str, code: int = EXIT_UNUSABLE):
        super().__init__(msg)
        self.code = code


def failed(msg: str) -> CliError:
    """A CliError for work that failed (exit code 1)."""
    return CliError(msg, code=EXIT_FAILED)
