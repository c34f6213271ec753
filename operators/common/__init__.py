"""Machinery every tool's operators share, written once.

- :mod:`.settings`: one definition of a tool's settings for its operator and the sidebar
  (a settings mixin), and the fill of unset operator properties from the scene's settings.
- :mod:`.modal`: the operator base classes: settings fill + execute, and long work stepped on a
  timer with progress, status text and Esc.
- :mod:`.transaction`: all or nothing: datablocks created and values recorded by an operator that
  fails or is cancelled are taken back (stepwise operators and ``@transactional`` executes).
- :mod:`.menus`: adding an operator's entry to Blender menus and taking it out again.
- :mod:`.progress`: progress generators chained under one bar (``scaled``) or run blocking (``run_blocking``).
- :mod:`.threaded`: work that reports progress by callback, run in a worker thread as a progress generator.
- :mod:`.handlers`: app handlers installed and removed once each.
"""

from .modal import InputError, SettingsOperator, StepwiseOperator
from .settings import as_keywords, fill_unset, setting_names
from .transaction import Transaction, current_transaction, transaction, transactional

__all__ = ["InputError", "SettingsOperator", "StepwiseOperator", "Transaction", "as_keywords", "current_transaction",
           "fill_unset", "setting_names", "transaction", "transactional"]
