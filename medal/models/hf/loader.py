"""The loader: a ``llada:``/``dream:``/``mlm:``/``hf:`` spec to a loaded adapter, checks first
(:func:`load_hf_model`), and a checkpoint's network and tokenizer loaded into its adapter
class (:func:`load_adapter`)."""
from __future__ import annotations

from pathlib import Path

import torch

from ...errors import ModelLoadError
from ...memory import is_out_of_memory
from .adapter import ADAPTERS, HFDiffusionLM
from .checkpoint import (_hub_config, check_hub_reachable, check_local_files,
                         download_checkpoint, read_json)
from .families import refuse_what_the_engine_cannot_honour, resolve_family
from .memory_guard import check_memory, out_of_memory
from .remote import (_dtype_keyword, from_pretrained, remote_code_opted_in, remote_code_refusal,
                     security_warnings)
from .spec import ModelSource, choose_device, choose_dtype, choose_implementation, parse_spec

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
    return load_adapter(cls, source, trust_remote_code=trust_remote_code, device=device,
                        dtype=dtype, chat_template=chat_template, implementation=impl,
                        config=config, mask_id=mask_id, memory_check=memory_check)


def load_adapter(cls: type[HFDiffusionLM], source: ModelSource, *,
                 trust_remote_code: bool | None = None, device: str | None = "auto",
                 dtype: str | None = "auto", chat_template: bool | None = None,
                 implementation: str = "remote", config: dict | None = None,
                 mask_id: int | None = None, memory_check: bool = True) -> HFDiffusionLM:
    """The checkpoint of ``source`` as adapter class ``cls``: its files checked, its
    memory guarded, its network and tokenizer loaded (MEDAL's native code, or the
    checkpoint's own through transformers), then the adapter made."""
    native = implementation == "native"
    if native and not cls.native:
        raise ModelLoadError(f"{source.name}: MEDAL has no native code for the "
                             f"{cls.family} family; use --implementation remote "
                             "(with --trust-remote-code where the checkpoint ships code)")
    needs_code = cls.needs_remote_code and not native
    if needs_code and not remote_code_opted_in(trust_remote_code):
        raise remote_code_refusal(source)  # before touching any file
    if source.local:
        check_local_files(Path(source.target), source.name)
    else:
        check_hub_reachable(source)
    dev = choose_device(device)
    dt = choose_dtype(dtype, dev)
    if native and dt == torch.float16 and (dtype or "auto") == "auto":
        dt = torch.float32  # a GPU without bfloat16: float16 would overflow (below)
    if native and dt == torch.float16:
        raise ModelLoadError(
            f"{source.name}: float16 is not safe for {cls.family}: its activations "
            "overflow float16's range (65504) and the logits turn to NaN/inf. Use "
            "--dtype bfloat16 (GPUs from Ampere on, and CPUs) or --dtype float32")
    if native and source.local:
        from ..native import weight_files
        weight_files(Path(source.target))  # safetensors only: say so before anything else
    if memory_check:
        check_memory(source, cls.typical_parameters, dev, dt)
    if native:
        from ..native import load_native
        from ..tokenizers import load_tokenizer
        directory = Path(source.target) if source.local else download_checkpoint(source)
        config = config if config is not None else read_json(directory / "config.json")
        tokenizer = load_tokenizer(directory)
        try:
            net = load_native(directory, cls.family, dev, dt, config)
        except Exception as exc:   # MemoryError, torch's (CUDA's too), safetensors' ENOMEM
            if not is_out_of_memory(exc):
                raise
            raise out_of_memory(source.name, exc, dev, dt) from exc
        generation = read_json(directory / "generation_config.json", missing_ok=True)
        return cls(net, tokenizer, source, device=dev, dtype=dt,
                   chat_template=chat_template, config=config, implementation="native",
                   mask_id=mask_id, generation_config=generation)
    import transformers
    tokenizer = from_pretrained(transformers.AutoTokenizer, source,
                                needs_remote_code=needs_code,
                                trust_remote_code=trust_remote_code)
    # safetensors only, from a folder or the hub: never a pickled pytorch_model.bin
    kwargs = {_dtype_keyword(): dt, "use_safetensors": True}
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        kwargs["device_map"] = {"": index}  # straight to the GPU, no CPU copy
    net = from_pretrained(getattr(transformers, cls.auto_class), source,
                          needs_remote_code=needs_code,
                          trust_remote_code=trust_remote_code, **kwargs)
    if dev.type != "cuda":
        try:
            net = net.to(dev)
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            raise out_of_memory(source.name, exc, dev, dt) from exc
    generation = getattr(net, "generation_config", None)
    generation = generation.to_dict() if hasattr(generation, "to_dict") else None
    return cls(net, tokenizer, source, device=dev, dtype=dt, chat_template=chat_template,
               config=config, implementation="remote", mask_id=mask_id,
               generation_config=generation)
