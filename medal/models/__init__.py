"""Model loading: ``load_model(spec)`` turns a model spec into a :class:`DiffusionLM`.

Specs: ``builtin:<task>`` (shipped tiny models). Adapters for LLaDA, Dream and any
HF masked LM register more prefixes.
"""
from __future__ import annotations

from ..errors import ModelLoadError
from .base import DiffusionLM
from .builtin import BuiltinModel, builtin_names

__all__ = ["DiffusionLM", "BuiltinModel", "load_model", "builtin_names",
           "add_model_arguments", "model_options"]

DEFAULT_MODEL = "builtin:countdown"


def add_model_arguments(parser) -> None:
    """The command-line flags that choose and load a model."""
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="model spec: builtin:<task> (default: %(default)s)")


def model_options(args) -> dict:
    """Keyword options for :func:`load_model` from parsed command-line flags."""
    return {}


def load_model(spec: str, **options) -> DiffusionLM:
    """Load a model from its spec; raises :class:`ModelLoadError` with the fix on failure."""
    spec = (spec or "").strip()
    if spec.startswith("builtin:"):
        return BuiltinModel.load(spec.split(":", 1)[1])
    raise ModelLoadError(f"unknown model spec {spec!r}; use builtin:<task> "
                         f"(shipped: {', '.join('builtin:' + n for n in builtin_names()) or 'none'})")
