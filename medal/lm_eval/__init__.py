"""MEDAL as a model of lm-evaluation-harness (``lm_eval --model medal``).

    medal-lm-eval --model medal \\
        --model_args model=builtin:countdown,strategy=medal,seed=0 --tasks medal_countdown

* :class:`~medal.lm_eval.model.MedalLM` (in :mod:`medal.lm_eval.model`, which needs the
  ``eval`` extra) is an lm-eval ``LM`` registered under the name ``medal``; its
  ``generate_until`` runs a MEDAL strategy per request.
* How lm-eval finds it: the package declares it in the ``lm_eval.models`` entry-point
  group (pyproject.toml), for lm-eval releases that read that group. lm-eval 0.4.13 --
  the newest on the package index as this is written -- does not: its ``lm_eval`` command
  knows only the models in its own source tree. :func:`main` (the ``medal-lm-eval``
  command, also ``python -m medal.lm_eval`` and ``medal lm-eval``) imports our model,
  which registers it through lm-eval's own ``register_model``, and then runs lm-eval's
  own command line, unchanged, with the same flags.
* :data:`TASKS_DIR`: lm-eval task configs shipped with the package (``medal_countdown``).
  :func:`main` adds it as ``--include_path`` unless one is given; with plain lm-eval
  calls, pass ``--include_path`` yourself (``medal lm-eval-tasks`` prints the folder).

See docs/LM_EVAL.md.
"""
from __future__ import annotations

import sys
from pathlib import Path

#: the folder of lm-eval task configs shipped with the package (an ``--include_path``)
TASKS_DIR = Path(__file__).resolve().parents[1] / "assets" / "lm_eval_tasks"

#: lm-eval's subcommands that read ``--include_path`` (a first argument that is a flag is
#: lm-eval's legacy form, which it runs as ``run``)
_TASK_COMMANDS = ("run", "ls", "validate")
_HELP = ("-h", "--help")


def __getattr__(name: str):
    if name == "MedalLM":  # lazily: importing it needs lm-eval (the eval extra)
        from .model import MedalLM
        return MedalLM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def harness_arguments(argv: list[str]) -> list[str]:
    """lm-eval's command line with our task folder added as ``--include_path`` when the
    command reads tasks and names no include path of its own."""
    argv = list(argv)
    if not argv or any(a in _HELP for a in argv):
        return argv
    if any(a == "--include_path" or a.startswith("--include_path=") for a in argv):
        return argv
    if argv[0] in _TASK_COMMANDS or argv[0].startswith("-"):  # "-...": lm-eval's legacy
        return argv + ["--include_path", str(TASKS_DIR)]      # form, run as "run"
    return argv

def main(argv: list[str] | None = None) -> int:
    """lm-eval's own command line, with the ``medal`` model registered."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        from . import model  # noqa: F401  (registers "medal" with lm-eval)
        from lm_eval.__main__ import cli_evaluate
    except ImportError as exc:
        if getattr(exc, "name", "") and str(exc.name).split(".")[0] == "lm_eval":
            print("error: lm-evaluation-harness is not installed: "
                  "pip install \"medal-explorer[eval]\" (from a checkout: pip install -e \".[eval]\")",
                  file=sys.stderr)
            return 2
        raise
    from ..errors import error_line
    from ..errors import MedalError
    saved = sys.argv
    sys.argv = ["lm-eval", *harness_arguments(argv)]
    try:
        cli_evaluate()
    except MedalError as exc:    # a bad --model_args value, a model that does not load...
        print(error_line(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        sys.argv = saved
    return 0
