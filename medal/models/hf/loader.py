"""The loader: a ``llada:``/``dream:``/``mlm:``/``hf:`` spec to a loaded adapter, checks first."""
from __future__ import annotations

from pathlib import Path

from .adapter import ADAPTERS, HFDiffusionLM
from .checkpoint import _hub_config, check_hub_reachable, check_local_files, read_json
from .families import refuse_what_the_engine_cannot_honour, resolve_family
from .remote import remote_code_opted_in, remote_code_refusal, security_warnings
from .spec import choose_implementation, parse_spec

def load_hf_model(spec: str, *, trust_remote_code: bool | None = None, device: str | None = "auto",
                  dtype: str | None = "auto", revision: str | None = None,
                  chat_template: bool | None = None, implementation: str | None = None,
                  mask_id: int | None = None, memory_check: bool = True) -> HFDiffusionLM:
    """Load a ``llada:``/``dream:``/``mlm:``/``hf:`` spec or a shortcut (see the module
    docstring). The family is the one config.json declares (the prefix where it declares
    none); LLaDA, LLaDA-MoE and Dream run on MEDAL's own code unless
    ``implementation="remote"`` (or ``MEDAL_IMPLEMENTATION=remote``)."""
    source = parse_spec(spec, revision)
    impl = choose_implementation(implementation)
    import warnings

    from ...errors import MedalWarning
    for message in security_warnings():
        warnings.warn(message, MedalWarning, stacklevel=2)
    if impl == "remote" and source.family != "mlm" and not remote_code_opted_in(
            trust_remote_code):
        raise remote_code_refusal(source)  # before touching any file
    if source.local:
        check_local_files(Path(source.target), source.name)
        config = read_json(Path(source.target) / "config.json")
        where = str(Path(source.target) / "config.json")
    else:
        check_hub_reachable(source)
        config = _hub_config(source)
        where = f"{source.target}'s config.json"
    family = resolve_family(source.family, config, where)
    refuse_what_the_engine_cannot_honour(config, Path(source.target) if source.local else None,
                                         source.name)
    cls = ADAPTERS[family]
    if impl == "native" and not cls.native:
        if family == "mlm":
            impl = "remote"  # transformers' own BERT-style classes: no checkpoint code runs
        elif not remote_code_opted_in(trust_remote_code):
            raise remote_code_refusal(source, lead=(
                f"a {family} model, which MEDAL has no native code for (it runs only on the "
                "checkpoint's own code): "))
        else:
            impl = "remote"
    return cls.load(source, trust_remote_code=trust_remote_code, device=device, dtype=dtype,
                    chat_template=chat_template, implementation=impl, config=config,
                    mask_id=mask_id, memory_check=memory_check)
