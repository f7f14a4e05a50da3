"""``medal ...``: parse, run the command, and turn every refusal into one ``error:`` line."""
from __future__ import annotations

import argparse
import sys

from ..errors import MedalError, error_line
from .arguments import build_parser
from .checks import check_mask_id, check_range
from .run_commands import lm_eval_command


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """MEDAL's own warnings as ``medal: warning: ...`` lines; others as Python shows them."""
    from ..errors import MedalWarning
    if issubclass(category, MedalWarning):
        print(f"medal: warning: {message}", file=file or sys.stderr)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


def main(argv: list[str] | None = None) -> int:
    import warnings
    global _python_show_warning
    if warnings.showwarning is not _show_warning:
        _python_show_warning = warnings.showwarning
        warnings.showwarning = _show_warning
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    serving_flags: list[str] = []
    if argv[:1] == ["lm-eval"]:  # every flag is lm-eval's (--help included)
        return lm_eval_command(argparse.Namespace(harness_args=argv[1:]))
    if argv[:1] in (["app"], ["serve"]):  # its own flags; the rest: the operator's settings
        args, serving_flags = parser.parse_known_args(argv)
    else:
        args = parser.parse_args(argv)
    args.serving_flags = serving_flags
    from ..provenance import set_command
    set_command(argv)  # recorded in every trace and bench result this command writes
    try:
        if args.command in ("app", "serve"):
            check_range("port", args.port, 1, 65535)
        check_mask_id(args)
        return args.func(args)
    except MedalError as exc:
        print(error_line(exc), file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. the disk filled up while writing an output
        where = f" {exc.filename}" if exc.filename else ""
        print(error_line(f"cannot write or read{where}: {exc.strerror or exc}"), file=sys.stderr)
        return 2
    except RecursionError:
        print(error_line("an input is nested too deeply"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
