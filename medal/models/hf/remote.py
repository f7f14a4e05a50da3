"""Loading through ``transformers``: the remote-code opt-in, the one ``from_pretrained`` door.

Also transformers' version and its known vulnerabilities (:func:`security_warnings`).
"""
from __future__ import annotations

import os

import torch

from ...errors import ModelLoadError
from ...memory import is_out_of_memory
from .checkpoint import _missing_files_message
from .memory_guard import out_of_memory
from .spec import ModelSource

TRUST_REMOTE_CODE_ENV = "MEDAL_TRUST_REMOTE_CODE"


def remote_code_opted_in(option: bool | None = None) -> bool:
    """True if the user opted in to running checkpoint code: the ``trust_remote_code``
    option, or the environment variable ``MEDAL_TRUST_REMOTE_CODE=1``."""
    env = os.environ.get(TRUST_REMOTE_CODE_ENV, "").strip().lower()
    return option is True or env in ("1", "true", "yes", "on")


def remote_code_refusal(source: ModelSource, lead: str = "") -> ModelLoadError:
    where = (f"in {source.target}" if source.local else
             f"on https://huggingface.co/{source.target} under 'Files'")
    return ModelLoadError(
        f"{lead}{source.name} needs remote code, which MEDAL runs only if you opt in",
        fix=f"pass --trust-remote-code (CLI), trust_remote_code=True (load_model), or set "
            f"{TRUST_REMOTE_CODE_ENV}=1 -- after reading the code ({where}) and pinning a "
            "revision (spec@<commit> or --revision)",
        details="The checkpoint ships its own Python model code (modeling_*.py), which "
                "transformers would import and run on this machine with your permissions; "
                "a pinned revision cannot change under you.")


def from_pretrained(auto_class, source: ModelSource, *, needs_remote_code: bool,
                    trust_remote_code: bool | None, **kwargs):
    """Every checkpoint load in MEDAL goes through here: ``auto_class.from_pretrained`` with
    ``trust_remote_code`` set from the user's opt-in and nothing else.

    Refuses a family that needs remote code before anything is read when the user has not
    opted in; turns transformers' errors into :class:`ModelLoadError` with the fix."""
    if "trust_remote_code" in kwargs:
        raise TypeError("trust_remote_code is decided here, from the user's opt-in only")
    opted_in = remote_code_opted_in(trust_remote_code)
    if needs_remote_code and not opted_in:
        raise remote_code_refusal(source)
    if source.revision:
        kwargs["revision"] = source.revision
    try:
        return auto_class.from_pretrained(source.target, trust_remote_code=opted_in, **kwargs)
    except ModelLoadError:
        raise
    except OSError as exc:
        raise ModelLoadError(_missing_files_message(source, exc)) from exc
    except Exception as exc:  # remote code or a config this transformers cannot read
        if is_out_of_memory(exc):                     # torch.cuda.OutOfMemoryError included
            device = torch.device("cuda" if isinstance(exc, torch.cuda.OutOfMemoryError)
                                  else "cpu")
            dtype = kwargs.get("dtype", kwargs.get("torch_dtype"))
            raise out_of_memory(source.name, exc, device,
                                dtype if isinstance(dtype, torch.dtype) else None) from exc
        text = str(exc)
        if "trust_remote_code" in text:
            raise remote_code_refusal(source, lead="custom code that transformers would "
                                                   "need to run: ") from exc
        raise ModelLoadError(
            f"could not load {source.name}'s own code with transformers "
            f"{_transformers_version()}",
            fix="for LLaDA, LLaDA-MoE and Dream use MEDAL's native code (--implementation "
                "native, the default), which runs on any transformers; otherwise install "
                "transformers 4.x (pip install 'transformers>=4.50,<5'; docs/REAL_MODELS.md)",
            details=f"transformers said: {type(exc).__name__}: {text[:400]}\n"
                    "A checkpoint's own code is written for the transformers of its day "
                    "(LLaDA's, LLaDA-MoE's and Dream's need 4.x; tested: 4.57.6, and they "
                    "fail on 5.x).") from exc


def _transformers_version() -> str:
    import transformers
    return transformers.__version__


def _dtype_keyword() -> str:
    """transformers 4.56 renamed ``torch_dtype`` to ``dtype``."""
    from packaging.version import Version
    return "dtype" if Version(_transformers_version()) >= Version("4.56") else "torch_dtype"


#: is installed (fixed in 5.3.0): [first affected, first fixed)
KERNELS_CVE = ("CVE-2026-4372", "4.56", "5.3.0")


def security_warnings() -> list[str]:
    """Known vulnerabilities of this environment that a model load would touch."""
    import importlib.util

    from packaging.version import Version
    cve, first, fixed = KERNELS_CVE
    version = Version(_transformers_version())
    if Version(first) <= version < Version(fixed) and importlib.util.find_spec("kernels"):
        return [f"transformers {version} with the 'kernels' package installed is affected by "
                f"{cve} (fixed in transformers {fixed}): upgrade transformers "
                f"(pip install 'transformers>={fixed}') or uninstall kernels"]
    return []
