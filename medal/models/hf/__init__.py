"""Real diffusion LLMs behind the one model interface.

Specs (see :func:`parse_spec`)::

    llada:<hub id or local dir>[@revision]   LLaDA-8B-Instruct, LLaDA-1.5, LLaDA-8B-Base
    dream:<hub id or local dir>[@revision]   Dream-v0-Instruct-7B, Dream-Coder, DiffuCoder
    hf:<hub id or local dir>[@revision]      the family named by the checkpoint's config.json
    mlm:<hub id or local dir>[@revision]     any AutoModelForMaskedLM checkpoint (BERT-style)
    llada-8b-instruct, llada-1.5, dream-7b-instruct   shortcuts for the official hub ids

LLaDA, LLaDA-MoE and Dream run on MEDAL's own model code (:mod:`medal.models.native`, the
default) or, with ``implementation="remote"``, on the checkpoint's own code through
``transformers`` (opt-in). The family is read from ``config.json`` (:func:`detect_family`);
block-causal and uniform-noise families are refused there, with the reason.

What differs between the families, and where this package handles it:

* **Mask and end tokens.** Each family names its special tokens once, below. The ids the
  checkpoint declares (config.json, generation_config.json, the tokenizer) come first
  (:meth:`HFDiffusionLM._resolve_mask_id`); otherwise the ids are
  looked up in the checkpoint's tokenizer by token text (so a fine-tune with a moved
  vocabulary still works) and fall back to the official ids. Answers are padded with EOS
  after they end, and instruct models close the turn first (LLaDA ``<|eot_id|>``, Dream
  ``<|im_end|>``): :attr:`HFDiffusionLM.end_ids` lists them; text after the first one is
  padding, and :meth:`~HFDiffusionLM.decode` stops there.
* **Logit alignment.** LLaDA and masked LMs predict slot i at position i. Dream was adapted
  from an autoregressive model and predicts slot i at position i-1; :meth:`DreamLM.logits`
  shifts its output right by one, exactly as Dream's own sampler does, so everything above
  this layer sees per-slot logits.
* **The mask token is never a prediction**: its logit is set to -inf. A slot "filled" with
  the mask token would stay masked, and a deterministic decoder would try it forever.
* **Remote code.** LLaDA and Dream ship their model code with the weights;
  :func:`from_pretrained` -- the only function here that loads through transformers --
  refuses it unless the user opted in (``--trust-remote-code``, ``trust_remote_code=True`` or
  ``MEDAL_TRUST_REMOTE_CODE=1``).
* **Precision and devices.** A CUDA GPU when there is one, in bfloat16; otherwise the CPU in
  float32. Both can be overridden. Before loading, the memory the weights need is compared
  with what the device has free, so a too-small GPU gives a message, not a crash.

``transformers`` is imported only when a checkpoint is loaded (it takes seconds).

The package, by job: :mod:`.spec` (a spec and a load's options), :mod:`.checkpoint` (the
checkpoint's files), :mod:`.families` (special tokens, family detection and refusals),
:mod:`.memory_guard` (will it fit), :mod:`.remote` (loading through transformers, the
remote-code opt-in), :mod:`.adapter` (a checkpoint as a :class:`DiffusionLM`: the network's
side, the forward), :mod:`.tokens` (its tokenizer's side: special ids, the prompt, the
answer's text) and :mod:`.loader` (:func:`load_hf_model`; :func:`load_adapter` loads a
checkpoint into its adapter class). The names here are the ones the rest of MEDAL uses.
"""
from __future__ import annotations


from .adapter import (ADAPTERS, BlockAttention, DreamLM, HFDiffusionLM, Llada2LM, LLaDALM,
                      LLaDAMoELM, MaskedLM)
from .checkpoint import (HUB_PROBE_SECONDS, NATIVE_FILES, check_hub_reachable, check_local_files,
                         download_checkpoint, read_json, refuse_pickled_weights)
from .families import (CANVAS_KEYS, DREAM_EOS_ID, DREAM_EOS_TOKEN, DREAM_FULL_ATTENTION,
                       DREAM_IM_END_ID, DREAM_IM_END_TOKEN, DREAM_MASK_ID, DREAM_MASK_TOKEN,
                       EDIT_TOKENS, EDIT_WORDS, LLADA2_EOS_ID, LLADA2_EOS_TOKEN,
                       LLADA2_EOT_TOKEN, LLADA2_MASK_ID, LLADA2_MASK_TOKEN, LLADA_EOS_ID,
                       LLADA_EOS_TOKEN, LLADA_EOT_ID, LLADA_EOT_TOKEN, LLADA_MASK_ID,
                       LLADA_MASK_TOKEN, MASK_TEXTS,
                       detect_family, refuse_what_the_engine_cannot_honour, resolve_family)
from .loader import load_hf_model
from .memory_guard import (GB, MEMORY_FACTOR, check_memory, checkpoint_directory,
                           count_parameters, memory_message, memory_needed, out_of_memory)
from .remote import (KERNELS_CVE, TRUST_REMOTE_CODE_ENV, from_pretrained, remote_code_opted_in,
                     remote_code_refusal, security_warnings)
from .spec import (DEVICES, DTYPE_CHOICES, DTYPES, FAMILIES, IMPLEMENTATION_ENV, IMPLEMENTATIONS,
                   NATIVE_FAMILIES, SHORTCUTS, ModelSource, choose_device, choose_dtype,
                   choose_implementation, is_hf_spec, parse_spec)

__all__ = [
    "ADAPTERS", "BlockAttention", "DreamLM", "HFDiffusionLM", "Llada2LM", "LLaDALM",
    "LLaDAMoELM", "MaskedLM",
    "HUB_PROBE_SECONDS", "NATIVE_FILES", "check_hub_reachable", "check_local_files",
    "download_checkpoint", "read_json", "refuse_pickled_weights",
    "CANVAS_KEYS", "DREAM_EOS_ID", "DREAM_EOS_TOKEN", "DREAM_FULL_ATTENTION", "DREAM_IM_END_ID",
    "DREAM_IM_END_TOKEN", "DREAM_MASK_ID", "DREAM_MASK_TOKEN", "EDIT_TOKENS", "EDIT_WORDS",
    "LLADA2_EOS_ID", "LLADA2_EOS_TOKEN", "LLADA2_EOT_TOKEN", "LLADA2_MASK_ID",
    "LLADA2_MASK_TOKEN", "LLADA_EOS_ID", "LLADA_EOS_TOKEN", "LLADA_EOT_ID", "LLADA_EOT_TOKEN",
    "LLADA_MASK_ID", "LLADA_MASK_TOKEN", "MASK_TEXTS", "detect_family", "refuse_what_the_engine_cannot_honour",
    "resolve_family", "load_hf_model", "GB", "MEMORY_FACTOR", "check_memory",
    "checkpoint_directory", "count_parameters", "memory_message", "memory_needed",
    "out_of_memory", "KERNELS_CVE", "TRUST_REMOTE_CODE_ENV", "from_pretrained",
    "remote_code_opted_in", "remote_code_refusal", "security_warnings", "DEVICES",
    "DTYPE_CHOICES", "DTYPES", "FAMILIES", "IMPLEMENTATION_ENV", "IMPLEMENTATIONS",
    "NATIVE_FAMILIES", "SHORTCUTS", "ModelSource", "choose_device", "choose_dtype",
    "choose_implementation", "is_hf_spec", "parse_spec"]
