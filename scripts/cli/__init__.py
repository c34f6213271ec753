"""The sub-commands of ``scripts/anim_signals_cli.py``, one module per tool.

Each tool module defines its ``cmd_<name>(args) -> exit code`` functions and the parser builders it
lists in ``PARSERS``. What they share: ``errors`` (the exit-code scheme, ``CliError``), ``values`` (the
argparse types of numeric options), ``inputs`` and ``outputs`` (files checked before Blender starts;
outputs written under a temporary name), ``common`` (loading inputs into Blender, picking objects,
enabling the extension, calling an operator, saving, the shared arguments). A command checks its
values, outputs and inputs first, then works. Imported with ``scripts/`` on ``sys.path`` (the entry
point puts it there), next to ``_blender_env``.
"""
