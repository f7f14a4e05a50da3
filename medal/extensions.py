"""What the layers above the engine lend its :class:`~medal.engine.Run`, so that no import
goes up: ``run.fork(...)`` is :func:`medal.fork.fork` and a traced run's notebook display is
:func:`medal.viewer.show`. Each registers itself here when its module is imported, and
``import medal`` imports both the first time it hands out ``Run``."""
from __future__ import annotations

from typing import Callable

from .errors import InputError

_LENT: dict[str, Callable] = {}
_FROM = {"fork": "medal.fork", "show": "medal.viewer"}


def lend(name: str, function: Callable) -> None:
    _LENT[name] = function


def borrowed(name: str) -> Callable:
    """The function ``name`` a higher layer lent; a clear error when it was never imported."""
    if name not in _LENT:
        raise InputError(f"run.{name} comes from {_FROM[name]}: import {_FROM[name]} (or "
                         "import medal, which does) before using it")
    return _LENT[name]
