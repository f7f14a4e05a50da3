"""The run's settings as flags and back: every GenerationConfig field's flag, built from its
declaration (:data:`medal.config.SETTINGS`), and the config a command line asks for."""
from __future__ import annotations

from ..errors import InputError


#: the settings' help is written for the app too; a terminal gets it in ASCII (a Windows
#: console's code page has no γ or √)
PLAIN = str.maketrans({"γ": "gamma", "σ": "sigmoid", "√": "sqrt", "−": "-", "∝": "~",
                        "Σ": "sum ", "·": "*", "≤": "<=", "→": "->"})


def add_config_arguments(g) -> None:
    """Flags for every GenerationConfig field (generate and bench share them), built from
    the fields' declarations (:data:`medal.config.SETTINGS`); each help ends with the
    range the engine accepts."""
    from ..config import SEARCH_MODES, SETTINGS
    titles = {"search": "search (MEDAL)", "decoding": "decoding", "prompt": "prompt"}
    groups = {name: g.add_argument_group(title) for name, title in titles.items()}
    groups["search"].add_argument(
        "--search", default="paper", choices=list(SEARCH_MODES),
        help="search mode: paper (the defaults: with L_c=2 every candidate shares one first "
             "commitment) or explore (the tree branches: one candidate per parent, c=1; a "
             "setting changed from its default wins)")
    own = {st.name: st for st in SETTINGS if st.cli_flag is None}
    for action in g._actions:  # a setting each command declares itself (--seed)
        if action.dest in own and "range" not in (action.help or ""):
            action.help = f"{action.help}; range {own[action.dest].range_text}"
    for st in SETTINGS:
        if st.cli_flag is None:
            continue
        where = groups[st.group]
        help = (st.help + (f"; range {st.range_text}" if st.low is not None else "")
                ).translate(PLAIN)
        if st.kind == "bool":
            where.add_argument(st.cli_flag, dest=st.name, action="store_true", help=help)
        elif st.kind == "optional_bool":
            where.add_argument(st.cli_flag, dest=st.name, action="store_true", default=None,
                               help=help)
            where.add_argument("--no-" + st.cli_flag[2:], dest=st.name, action="store_false",
                               default=None, help=f"the opposite of {st.cli_flag}")
        elif st.kind == "choice":
            where.add_argument(st.cli_flag, dest=st.name, default=st.default,
                               choices=list(st.choices), help=help)
        else:
            where.add_argument(st.cli_flag, dest=st.name, default=st.default, help=help,
                               type=float if st.kind == "float" else int,
                               metavar=st.cli_flag[2:].upper().replace("-", "_"))


def config_from_args(args, **override):
    from dataclasses import replace

    from ..config import SETTINGS, GenerationConfig
    if override:
        return replace(config_from_args(args), **override)
    return GenerationConfig(**{st.name: getattr(args, st.name) for st in SETTINGS}
                            ).with_search_mode(getattr(args, "search", None) or "paper")


SWEEPABLE = {"lc": int, "k2": int, "k1": int, "max_iterations": int, "candidates": int,
             "c": float, "gamma": float}


def parse_sweep(text: str) -> tuple[str, list]:
    name, _, values = text.partition("=")
    if name not in SWEEPABLE or not values:
        raise InputError(f"--sweep takes PARAM=V1,V2 with PARAM one of {', '.join(SWEEPABLE)}; "
                         f"got {text!r}")
    try:
        return name, [SWEEPABLE[name](v) for v in values.split(",")]
    except ValueError:
        raise InputError(f"--sweep {name}: values must be numbers, got {values!r}") from None
