"""The sub-commands of ``scripts/anim_signals_cli.py``, one module per tool.

Each tool module defines its ``cmd_<name>(args) -> exit code`` functions and the parser builders it
lists in ``PARSERS``; ``common`` holds what they share (``CliError``, input and output files, picking
objects, enabling the extension, calling an operator, the shared arguments). Imported with
``scripts/`` on ``sys.path`` (the entry point puts it there), next to ``_blender_env``.
"""
