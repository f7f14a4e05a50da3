"""Command line: ``medal {generate,bench,app,export,repro,fork,diff,candidates,train,...} ...``
(the same as ``python -m medal ...``).

``arguments`` builds the parser; ``settings`` turns the run's settings into flags and back;
``checks`` refuses bad values with one line; ``run_commands`` and ``trace_commands`` are
the commands' bodies; ``main`` runs one. ``medal --help`` imports no torch: every heavy
import waits inside the command that needs it."""
from __future__ import annotations

from .arguments import build_parser
from .main import main
from .run_commands import train_memory_estimate
from .settings import add_config_arguments, config_from_args

__all__ = ["main", "build_parser", "add_config_arguments", "config_from_args",
           "train_memory_estimate"]
