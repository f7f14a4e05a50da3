"""LLaDA2.0 / LLaDA2.1 (block diffusion, mixture of experts) on MEDAL's own code
(medal/models/native.py: ``Llada2Block``, ``GroupRoutedExperts``, ``block_causal_bias``;
medal/models/hf/adapter.py: ``Llada2LM``), against their genuine code, and what the
engine does with a block model: where MEDAL's search acts, token edits.

The checkpoints are ``tests/data/real-models/llada2`` (the shrunk config: 2 layers -- one
dense, one MoE of 8 experts in 4 groups, top 2, a shared expert --, width 64, the real
vocabulary of 157,184 and special ids; a tokenizer of ours with them) with seeded random
weights, in three variants: the config's own initialisation (std 0.02: near-uniform
distributions), "sharp" (std 1: peaked distributions, so thresholds and edits act) and
"switches" (every config switch the network reads flipped). The genuine code --
LLaDA2.0's and LLaDA2.1's ``modeling_*.py`` and dllm's samplers for them, fetched, never
committed -- comes from ``MEDAL_REAL_MODEL_CODE`` (``llada2/``, ``llada21/``,
``dllm-samplers/``; docs/REAL_MODELS.md); without it those comparisons skip and say so,
and the native side is checked against numbers recorded from it
(``tests/data/llada2-reference.json``), on any transformers.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest
import torch

import standins
from medal.config import GenerationConfig
from medal.engine import STRATEGIES, Run
from medal.errors import InputError, ModelLoadError, TraceError
from medal.models import hf, load_model
from medal.models.hf.adapter import BlockAttention
from medal.models.native import NativeConfig, block_causal_bias
from medal.runner import ties_by_token

PROMPT = "Use 4, 18, 13 to make 20."
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "llada2-reference.json"
GEN = {v: standins.genuine_llada2_code(v) for v in ("2.0", "2.1", "samplers")}
TF5 = int(__import__("transformers").__version__.split(".")[0]) >= 5


def _needs(*versions):
    """Skip marks: the genuine code of ``versions`` and transformers 4.x."""
    marks = [pytest.mark.skipif(TF5, reason="LLaDA2's own code needs transformers 4.x (on "
                                            "5.24.0: No module named "
                                            "'transformers.modeling_attn_mask_utils')")]
    for v in versions:
        marks.append(pytest.mark.skipif(GEN[v][0] is None, reason=GEN[v][1]))
    return marks


#: variant -> (seed, std of the matrices, config overrides)
VARIANTS = {
    "tiny": (0, None, {}),
    "sharp": (1, 1.0, {}),
    # the attention output's and q/k/v biases, one key/value head per query head (4: the
    # 2.0 code divides by 0 where 2.1's config reads 0 as that), every layer MoE, no
    # shared expert, one expert a token (no renormalisation), a tied output layer, RoPE
    # on the whole head
    "switches": (2, 0.5, {"use_bias": True, "use_qkv_bias": True, "num_key_value_heads": 4,
                          "first_k_dense_replace": 0, "num_shared_experts": None,
                          "num_experts_per_tok": 1, "tie_word_embeddings": True,
                          "partial_rotary_factor": 1.0}),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("llada2")
    built = {}

    def get(source: str, variant: str, version: str = "2.0"):
        key = (source, variant, version if source == "genuine" else "")
        if key not in built:
            seed, std, overrides = VARIANTS[variant]
            built[key] = standins.save_llada2(
                root / f"{source}-{variant}-{key[2]}-{root.name}".replace(".", "_"),
                version, source, seed=seed, std=std, overrides=overrides)
        return built[key]
    return get


@pytest.fixture(scope="module")
def loaded(folder):
    cache = {}

    def get(variant: str, dtype: str = "float32", source: str = "native",
            version: str = "2.0"):
        key = (variant, dtype, source, version)
        if key not in cache:
            if source == "native":
                cache[key] = load_model(f"llada:{folder('native', variant)}", device="cpu",
                                        dtype=dtype)
            else:
                cache[key] = load_model(f"llada:{folder('genuine', variant, version)}",
                                        trust_remote_code=True, device="cpu", dtype=dtype,
                                        implementation="remote")
        return cache[key]
    return get


def _batch(model, slots: int, batch: int = 3, seed: int = 0):
    """The chat prompt + ``slots`` answer slots, some masked, some random tokens."""
    g = torch.Generator().manual_seed(seed)
    prompt = model.encode_prompt(PROMPT)
    rows = []
    for _ in range(batch):
        answer = torch.randint(0, model.text_vocab, (slots,), generator=g)
        answer[torch.rand(slots, generator=g) < 0.6] = model.mask_id
        rows.append(prompt + answer.tolist())
    return torch.tensor(rows)


# ---------------------------------------------------------------------- the network

@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("version", [pytest.param("2.0", marks=_needs("2.0")),
                                     pytest.param("2.1", marks=_needs("2.1"))])
def test_logits_equal_the_genuine_code_bit_for_bit(loaded, version, variant, dtype):
    """One checkpoint, two codes: the genuine ``LLaDA2MoeModelLM`` (through transformers,
    remote code) and ours read the same safetensors; every logit of every position is the
    same to the bit, under the published samplers' block-causal mask at two block
    lengths, in float32 and bfloat16 (its mask in the model's dtype)."""
    remote = loaded(variant, dtype, "genuine", version)
    native = loaded(variant, dtype)
    dt = getattr(torch, dtype)
    ids = _batch(native, 19)
    T = ids.shape[1]
    for block in (4, 32):
        mask = block_causal_bias(T, block, dt)
        with torch.no_grad():
            theirs = remote.net(ids, attention_mask=mask,
                                position_ids=torch.arange(T)[None]).logits
            ours = native.net(ids, attention_bias=mask)
        assert theirs.dtype == torch.float32 and ours.dtype == dt
        assert torch.equal(theirs, ours.float()), (block, (theirs - ours.float()).abs().max())
        # the adapters, as a run calls them (its attention blocks with each forward)
        attention = BlockAttention(block)
        assert torch.equal(remote.logits(ids, 19, cache=attention),
                           native.logits(ids, 19, cache=attention))


def test_the_mask_is_the_published_samplers_mask():
    """``block_causal_bias`` holds the values of the samplers' ``tril(ones).log()`` mask."""
    for length, block in ((12, 4), (45, 8), (7, 32)):
        n = -(-length // block)
        theirs = (torch.tril(torch.ones(n, n)).repeat_interleave(block, 0)
                  .repeat_interleave(block, 1)[None, None].log())[..., :length, :length]
        for dtype in (torch.float32, torch.bfloat16):
            assert torch.equal(block_causal_bias(length, block, dtype), theirs.to(dtype))


def _network_logits(model, ids: torch.Tensor, block: int) -> torch.Tensor:
    """Every position's logits (float32) of the network, native or genuine, under the
    block-causal mask."""
    T = ids.shape[1]
    mask = block_causal_bias(T, block, model.dtype)
    with torch.no_grad():
        if model.implementation == "native":
            return model.net(ids, attention_bias=mask).float()
        return model.net(ids, attention_mask=mask, position_ids=torch.arange(T)[None]).logits


def _reference_numbers(model, variant: str) -> dict:
    """What the recorded reference holds for a checkpoint: per position of a fixed batch
    (the chat prompt and 19 answer slots), the top 3 ids and logits, at block lengths 4
    and 32."""
    ids = _batch(model, 19, batch=2, seed=7)
    out = {"ids": ids.tolist()}
    for block in (4, 32):
        # bfloat16 logits tie: equal ones in the order of their ids (medal.runner)
        values, top = ties_by_token(*_network_logits(model, ids, block).topk(16, dim=-1))
        out[f"block{block}"] = {"top_ids": top[..., :3].tolist(),
                                "top_logits": values[..., :3].tolist()}
    return out


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_native_equals_numbers_recorded_from_the_genuine_code(loaded, variant, dtype):
    """On any transformers (the tf5 lane too, where the genuine code cannot run): the
    native logits against the genuine code's, recorded (tests/data/llada2-reference.json,
    LLaDA2.0's code, transformers 4.57.6, this CPU). The top ids are compared exactly, the
    logits to float32 rounding (another CPU rounds the same forward differently)."""
    ref = json.loads(REFERENCE.read_text())[f"{variant}-{dtype}"]
    got = _reference_numbers(loaded(variant, dtype), variant)
    assert got["ids"] == ref["ids"]
    for block in ("block4", "block32"):
        assert got[block]["top_ids"] == ref[block]["top_ids"]
        torch.testing.assert_close(torch.tensor(got[block]["top_logits"]),
                                   torch.tensor(ref[block]["top_logits"]),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("version", [pytest.param("2.0", marks=_needs("2.0")),
                                     pytest.param("2.1", marks=_needs("2.1"))])
def test_the_recorded_numbers_are_the_genuine_codes(loaded, version, variant, dtype):
    """The reference numbers are the genuine code's own (both versions: one network)."""
    ref = json.loads(REFERENCE.read_text())[f"{variant}-{dtype}"]
    got = _reference_numbers(loaded(variant, dtype, "genuine", version), variant)
    for block in ("block4", "block32"):
        assert got[block]["top_ids"] == ref[block]["top_ids"]
        torch.testing.assert_close(torch.tensor(got[block]["top_logits"]),
                                   torch.tensor(ref[block]["top_logits"]),
                                   rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------- the samplers

def _dllm_samplers():
    """dllm's LLaDA2.0 and LLaDA2.1 samplers (genuine), with the three names they import
    from dllm's base module given by a small module of ours (what they use of it: a
    dataclass with ``model`` and ``tokenizer``, a config with ``return_dict``, an output
    with ``sequences``)."""
    base = types.ModuleType("dllm.core.samplers.base")

    @dataclasses.dataclass
    class BaseSamplerOutput:
        sequences: torch.Tensor
        histories: list | None = None

    @dataclasses.dataclass
    class BaseSamplerConfig:
        return_dict: bool = False

    @dataclasses.dataclass
    class BaseSampler:
        model: object
        tokenizer: object
        scheduler: object = None

    base.BaseSampler, base.BaseSamplerConfig = BaseSampler, BaseSamplerConfig
    base.BaseSamplerOutput = BaseSamplerOutput
    saved = {n: sys.modules.get(n) for n in ("dllm", "dllm.core", "dllm.core.samplers",
                                             "dllm.core.samplers.base")}
    for name in saved:
        sys.modules[name] = base if name.endswith("base") else types.ModuleType(name)
    try:
        out = {}
        for version, name in (("2.0", "llada2_sampler"), ("2.1", "llada21_sampler")):
            spec = importlib.util.spec_from_file_location(f"medal_test_{name}",
                                                          GEN["samplers"][0] / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            out[version] = module
        return out
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


class MaskInModelDtype(torch.nn.Module):
    """The genuine model as the samplers call it, with their mask cast to the model's
    dtype: they build it in bfloat16 (``.to(torch.bfloat16)``), which a float32 model's
    attention refuses ("Expected attn_mask dtype to be bool or float or to match query
    dtype"); the values (0 and -inf) are the same in either dtype."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    @property
    def device(self):
        return self.net.device

    def forward(self, ids, attention_mask=None, position_ids=None):
        return self.net(ids, attention_mask=attention_mask.to(self.net.dtype),
                        position_ids=position_ids)


#: (block, max new tokens, threshold, editing threshold, post steps): the samplers' settings
SAMPLER_CASES = {
    "2.0": [(8, 16, 0.5, None, None), (4, 12, 0.95, None, None), (4, 12, 1.0, None, None)],
    "2.1": [(8, 16, 0.5, None, 0), (8, 16, 0.3, 0.5, 4), (4, 12, 0.6, 0.2, 16)],
}


def _ours(native, block, new_tokens, threshold, edit, post):
    """Our strategy with the sampler's settings: ``threshold`` (every slot above the
    threshold, at least the best; LLaDA2.1's editing as edit_threshold/max_post_steps),
    or, at threshold 1 (nothing is above it), ``greedy`` one slot a step."""
    cfg = dict(gen_length=new_tokens, block_length=block, decompose=False)
    if edit is not None:
        cfg.update(edit_threshold=edit, max_post_steps=post)
    if threshold < 1:
        cfg.update(threshold=threshold)
    run = Run(native, task="countdown", prompt=PROMPT, config=GenerationConfig(**cfg),
              strategy="threshold" if threshold < 1 else "greedy", trace=True)
    return run, run.finish()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("version", [pytest.param("2.0", marks=_needs("2.0", "samplers")),
                                     pytest.param("2.1", marks=_needs("2.1", "samplers"))])
def test_the_genuine_samplers_write_what_our_strategies_write(loaded, version, dtype,
                                                             monkeypatch):
    """dllm's LLaDA2Sampler / LLaDA21Sampler and the model's own ``generate`` on the
    genuine code, against our ``threshold`` (and ``greedy``) strategy on ours with the
    same settings (one slot a step at least, as the samplers' ``steps_per_block`` =
    block length / ``num_to_transfer`` = 1; LLaDA2.1's editing threshold and post steps):
    the same answer, token for token -- over the whole canvas for the samplers, up to the
    first EOS for ``generate`` -- in float32 and bfloat16, with LLaDA2.1 editing 41 to 253
    tokens a run on the way. The "sharp" checkpoint: its probabilities pass the
    thresholds."""
    samplers = _dllm_samplers()[version]
    remote = loaded("sharp", dtype, "genuine", version)
    native = loaded("sharp", dtype)
    net = MaskInModelDtype(remote.net)
    # the model's own generate builds the same bfloat16 mask and calls its own forward
    forward = remote.net.forward

    def forward_with_mask_in_model_dtype(*args, attention_mask=None, **kwargs):
        if attention_mask is not None:
            attention_mask = attention_mask.to(remote.net.dtype)
        return forward(*args, attention_mask=attention_mask, **kwargs)
    monkeypatch.setattr(remote.net, "forward", forward_with_mask_in_model_dtype)
    for block, new, threshold, edit, post in SAMPLER_CASES[version]:
        run, result = _ours(native, block, new, threshold, edit, post)
        prompt = run.runner.prompt.tolist()
        assert prompt == remote.tokenizer.apply_chat_template(
            [{"role": "user", "content": PROMPT}], add_generation_prompt=True, tokenize=True)
        P, L = len(prompt), run.config.gen_length
        assert (P + L) % block == 0 and L >= new     # the samplers' canvas: whole blocks
        if version == "2.0":
            out = samplers.LLaDA2Sampler(model=net, tokenizer=remote.tokenizer).sample(
                [prompt], samplers.LLaDA2SamplerConfig(
                    max_new_tokens=new, block_size=block, steps_per_block=block,
                    threshold=threshold))
            gen = remote.net.generate(torch.tensor([prompt]), block_length=block, steps=block,
                                      gen_length=new, threshold=threshold)
        else:
            out = samplers.LLaDA21Sampler(model=net, tokenizer=remote.tokenizer).sample(
                [prompt], samplers.LLaDA21SamplerConfig(
                    max_new_tokens=new, block_size=block, threshold=threshold,
                    editing_threshold=2.0 if edit is None else edit, max_post_steps=post))
            gen = remote.net.generate(torch.tensor([prompt]), block_length=block,
                                      gen_length=new, threshold=threshold,
                                      editing_threshold=2.0 if edit is None else edit,
                                      max_post_steps=post)
        edits = sum(len(st.get("edits") or []) for st in run.trace["decode"])
        print(f"{version} {dtype} block {block}, {new} new, threshold {threshold}, edit "
              f"{edit}: {len(run.trace['decode'])} steps, {edits} edits")
        assert out[0, P:].tolist() == result.answer_ids
        assert gen[0].tolist() == result.answer_ids[:gen.shape[1]]
        assert bool(edits) == bool(edit)
        if edit:
            assert edits >= 40


# ---------------------------------------------------------------------- loading

def test_llada2_loads_natively_with_its_ids(folder):
    d = folder("native", "tiny")
    for spec in (f"llada:{d}", f"hf:{d}"):
        m = load_model(spec, device="cpu")
        assert (m.family, m.implementation, m.vocab_size) == ("llada2", "native", 157184)
        assert (m.mask_id, m.eos_id) == (hf.LLADA2_MASK_ID, hf.LLADA2_EOS_ID)
        assert set(m.end_ids) == {156892, 156900}   # EOS; <|role_end|>, found by its text
        assert m.token_text(m.mask_id) == "<|mask|>" and m.chat
        assert m.describe()["block_diffusion"] is True
        # the memory guard's count: every tensor of the weights (the routers' expert_bias
        # too, a buffer, not a parameter)
        assert sum(t.numel() for t in m.net.state_dict().values()) == hf.count_parameters(d)
    with pytest.raises(ModelLoadError, match="declares a llada2 model"):
        load_model(f"dream:{d}", device="cpu")
    with pytest.raises(InputError, match="LLaDA2 attends block-causally"):
        load_model(f"llada:{d}", device="cpu", kv_cache="dual")
    with pytest.raises(ModelLoadError, match="--trust-remote-code"):
        load_model(f"llada:{d}", device="cpu", implementation="remote")


def test_the_memory_guard_weighs_llada2(folder, monkeypatch):
    """Before a byte of the weights is read: a folder's parameters from its safetensors
    headers (the routers' expert_bias included), a hub id not yet downloaded at the
    family's size (LLaDA2.0-mini: 16.3B parameters, 37.5 GB in bfloat16 with the
    search's margin); not enough memory is a one-line error with the fix."""
    from medal.models.hf import memory_guard
    d = folder("native", "tiny")
    need = hf.memory_needed(hf.count_parameters(d), torch.float32)
    monkeypatch.setattr(memory_guard, "available_memory", lambda device=None: need / 2)
    with pytest.raises(ModelLoadError, match=f"not enough memory for llada:{d}"):
        load_model(f"llada:{d}", device="cpu")
    assert load_model(f"llada:{d}", device="cpu", memory_check=False).family == "llada2"
    hub = hf.parse_spec("llada:inclusionAI/LLaDA2.0-mini")
    monkeypatch.setattr(memory_guard, "available_memory", lambda device=None: 24e9)
    with pytest.raises(ModelLoadError, match=r"needs about 37\.5 GB"):
        hf.check_memory(hub, hf.Llada2LM.typical_parameters, torch.device("cpu"),
                        torch.bfloat16)


def test_the_committed_tokenizer_is_the_one_described():
    """tests/data/real-models/llada2's tokenizer files are what standins builds (its ids)."""
    for name, text in standins.llada2_tokenizer_files().items():
        assert (standins.REAL_CONFIGS / "llada2" / name).read_text(encoding="utf-8") == text


@pytest.mark.parametrize("change, message", [
    ({"rope_scaling": {"type": "linear", "factor": 2}}, "rope_scaling"),
    ({"head_dim": 32}, "head_dim"),
    ({"n_group": 3}, "n_group 3 does not split"),
    ({"topk_group": 5}, "topk_group is 5 of 4"),
    ({"num_experts_per_tok": 9}, "num_experts_per_tok is 9"),
    ({"partial_rotary_factor": 0.1}, "partial_rotary_factor"),
])
def test_settings_the_native_code_does_not_implement_are_refused(change, message):
    cfg = json.loads((standins.REAL_CONFIGS / "llada2" / "config.json").read_text())
    with pytest.raises(ModelLoadError, match=message):
        NativeConfig.from_dict("llada2", {**cfg, **change})


def test_the_full_size_config_is_llada2_mini():
    """config.full-size.json: LLaDA2.0-mini's network (16.3B parameters), for GPU memory
    and speed checks with random weights."""
    import torch as t
    from medal.models.native import NativeLM
    cfg = NativeConfig.from_dict("llada2", json.loads(
        (standins.REAL_CONFIGS / "llada2" / "config.full-size.json").read_text()))
    with t.device("meta"):
        net = NativeLM(cfg)
    assert round(sum(p.numel() for p in net.state_dict().values()) / 1e9, 2) == 16.26
    assert cfg.moe_layers == (False,) + (True,) * 19 and cfg.experts == 256


# ---------------------------------------------------------------------- blocks

def test_the_answers_blocks_are_the_attentions_blocks(loaded):
    """The answer's first block is the rest of the block the prompt ends in: the network
    sees slots 0..2 (prompt of 29 tokens, blocks of 4) as one block with the prompt's last
    token -- a change in slot 3 (the next block) leaves their logits alone, a change in
    slot 2 does not. A run's forward reads up to the end of the block being decoded."""
    m = loaded("sharp")
    P = len(m.encode_prompt(PROMPT))
    assert P % 4 == 1
    ids = _batch(m, 11, batch=1, seed=3)
    base = _network_logits(m, ids, 4)[:, P:P + 3]
    later, same = ids.clone(), ids.clone()
    later[0, P + 3] = 5
    same[0, P + 2] = 5
    assert torch.equal(_network_logits(m, later, 4)[:, P:P + 3], base)
    assert not torch.equal(_network_logits(m, same, 4)[:, P:P + 2], base[:, :2])
    # the forward of a state reads to the end of its first block with masks (or, in a
    # post step, of the block before it); what it does not read gets logits 0
    answer = ids[0, P:].clone()
    answer[:3] = 7
    answer[3:] = m.mask_id
    state = torch.cat([ids[0, :P], answer])[None]
    assert m.window_ends(state, 11, BlockAttention(4)) == [P + 7]
    assert m.window_ends(state, 11, BlockAttention(4, post=True)) == [P + 3]
    logits = m.logits(state, 11, cache=BlockAttention(4))
    assert torch.isfinite(logits[0, :7]).any(-1).all()
    finite = logits[0, 7:][torch.isfinite(logits[0, 7:])]
    assert finite.abs().max() == 0 and m.last_token_passes == P + 7


@pytest.mark.parametrize("steps, lc, schedule", [
    # (step, block, slots unmasked): blocks of 3 (the rest of the prompt's), 4 and 4 slots
    # -- L = 11 (29 + 11 = 40, whole blocks of 4); 12 steps: 4 a block
    (None, 2, [(0, 0, 1), (1, 0, 1), (2, 0, 1), (3, 1, 1), (4, 1, 1), (5, 1, 1), (6, 1, 1),
               (7, 2, 1), (8, 2, 1), (9, 2, 1), (10, 2, 1)]),
    # 3 steps, one a block: the search's commitment is block 0's step, so phase C writes
    # the rest of block 0 in one more step, then each later block in one
    (3, 1, [(0, 0, 1), (1, 0, 2), (2, 1, 4), (3, 2, 4)]),
])
def test_medal_on_a_block_model_follows_the_hand_worked_schedule(loaded, steps, lc, schedule):
    """MEDAL on a block model: the search makes the first L_c commitments of the current
    block -- the first block, the rest of the block the prompt ends in, as the paper's
    block mode -- and phase C finishes that block in the block's remaining steps, then
    each later block in its own. The schedule (each step's block and slot count) worked
    by hand from the prompt's 29 tokens, block length 4 and the steps."""
    m = loaded("sharp")
    cfg = GenerationConfig(gen_length=8, block_length=4, steps=steps, lc=lc, decompose=False,
                           max_iterations=6)
    run = Run(m, task="countdown", prompt=PROMPT, strategy="medal", config=cfg, trace=True)
    run.finish()
    t = run.trace
    assert (run.config.gen_length, run.config.lc) == (11, lc)
    assert len(run.runner.prompt) == 29
    block_slots = {0: range(0, 3), 1: range(3, 7), 2: range(7, 11)}
    # every node's action lies in block 0 (the search's block), every candidate is L_c deep
    for node in t["tree"]["nodes"][1:]:
        assert node["action"]["slot"] in block_slots[0]
    assert all(t["tree"]["nodes"][c]["depth"] == lc for c in t["search"]["candidates"])
    searched = [(d, 0, 1) for d in range(lc)]
    got = searched + [(st["step"], st["block"], len(st["slots"])) for st in t["decode"]
                      if st["phase"] == "phase_c"]
    assert got == schedule
    for st in t["decode"]:
        assert set(st["slots"]) <= set(block_slots[st["block"]])
    assert None not in t["result"]["order"]


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_strategy_runs_on_a_native_llada2(loaded, strategy):
    m = loaded("tiny")
    cfg = GenerationConfig(gen_length=6, block_length=4, max_iterations=4, samples=2,
                           decompose=False, ig_candidates=2)
    result = Run(m, task="countdown", prompt=PROMPT, strategy=strategy, config=cfg).finish()
    assert len(result.answer_ids) == 7 and m.mask_id not in result.answer_ids


# ---------------------------------------------------------------------- token edits

#: edits in mask steps (22) and in post steps (37) on the "sharp" checkpoint
EDITING = dict(gen_length=16, block_length=8, threshold=0.7, edit_threshold=0.5,
               max_post_steps=4, decompose=False)


@pytest.fixture(scope="module")
def edited(loaded):
    """A LLaDA2.1-style run with token edits (the "sharp" checkpoint, threshold decoding
    at 0.7 with an editing threshold of 0.5): its Run and trace."""
    run = Run(loaded("sharp"), task="countdown", prompt=PROMPT, strategy="threshold",
              config=GenerationConfig(**EDITING), trace=True)
    run.finish()
    return run, json.loads(json.dumps(run.trace))


def test_a_trace_with_edits_passes_the_gate_in_every_written_form(edited, tmp_path):
    """Each edit is recorded on its step -- slot, old and new token (ids and texts), the
    new token's probability and the threshold it passed -- and the trace goes through
    the gate as written (packed) and plain, unchanged."""
    from medal.trace import dumps, load_trace, loads_trace, write_trace
    run, trace = edited
    edits = [(st, e) for st in trace["decode"] for e in st.get("edits") or []]
    assert len(edits) >= 20
    for st, e in edits:
        assert set(e) == {"slot", "old_token", "new_token", "old_text", "new_text",
                          "confidence", "threshold"}
        assert e["threshold"] == 0.5 < e["confidence"] <= 1 and e["old_token"] != e["new_token"]
        assert e["slot"] not in st["slots"]
        assert e["new_text"] == run.model.token_text(e["new_token"])
    post = [st for st in trace["decode"] if not st["slots"]]
    assert post and all(st["forwards"] == 1 for st in post)
    assert any(st["slots"] for st, _ in edits) and any(not st["slots"] for st, _ in edits)
    assert trace["run"]["config"]["edit_threshold"] == 0.5
    assert trace["run"]["config"]["max_post_steps"] == 4
    write_trace(trace, tmp_path / "t.json")
    assert load_trace(tmp_path / "t.json") == trace
    assert loads_trace(dumps(trace)) == trace


def test_a_run_without_edits_records_nothing_new(loaded):
    """Editing off (the default): no step has an ``edits`` key and the configuration
    records no editing setting -- the trace is what it was before edits existed (the
    shipped examples and reference traces reproduce: tests/views/test_examples.py)."""
    cfg = {k: v for k, v in EDITING.items() if k not in ("edit_threshold", "max_post_steps")}
    run = Run(loaded("sharp"), task="countdown", prompt=PROMPT, strategy="threshold",
              config=GenerationConfig(**cfg), trace=True)
    run.finish()
    assert not any("edits" in st for st in run.trace["decode"])
    assert not {"edit_threshold", "max_post_steps"} & set(run.trace["run"]["config"])
    assert all(st["slots"] for st in run.trace["decode"])
    assert "edit_threshold" in GenerationConfig(edit_threshold=0.5).to_json()


def test_post_steps_follow_llada21(loaded):
    """Once a block has no mask left the decode stays on it: post steps rewrite it until
    one rewrites nothing or max_post_steps were run; with max_post_steps 0 every step
    unmasks (edits ride along), as LLaDA2.1's samplers do."""
    m = loaded("sharp")
    for post in (0, 1, 4):
        run = Run(m, task="countdown", prompt=PROMPT, strategy="threshold", trace=True,
                  config=GenerationConfig(**{**EDITING, "max_post_steps": post}))
        run.finish()
        steps = run.trace["decode"]
        blocks = sorted({st["block"] for st in steps})
        for b in blocks:
            mine = [st for st in steps if st["block"] == b]
            posts = [st for st in mine if not st["slots"]]
            assert len(posts) <= post
            assert all(st["slots"] for st in mine[:len(mine) - len(posts)])  # posts last
            if posts and len(posts) < post:
                assert not posts[-1].get("edits")        # stopped: nothing rewritten
            assert all(st.get("edits") for st in posts[:-1])
        assert bool([st for st in steps if not st["slots"]]) == (post > 0)


def _broken(trace: dict, change) -> dict:
    import copy
    t = copy.deepcopy(trace)
    change(t)
    return t


def _mask_step_with_edits(t: dict) -> dict:
    return next(st for st in t["decode"] if st.get("edits") and st["slots"])


def _first_edit(t: dict) -> dict:
    return next(e for st in t["decode"] for e in st.get("edits") or [])


@pytest.mark.parametrize("change, message", [
    (lambda t: _first_edit(t).update(old_token=_first_edit(t)["old_token"] + 1),
     "holds token"),
    (lambda t: _first_edit(t).update(confidence=0.4), "does not exceed the editing threshold"),
    (lambda t: _first_edit(t).update(threshold=0.4), "the run's edit_threshold is 0.5"),
    (lambda t: _first_edit(t).update(new_token=_first_edit(t)["old_token"]),
     "an edit changes the slot's token"),
    (lambda t: _first_edit(t).update(slot=10 ** 6), "slot outside the answer"),
    (lambda t: t["run"]["config"].update(edit_threshold=0.0), "editing off"),
    (lambda t: t["result"]["answer_ids"].__setitem__(0, 5), "not the answer its decode steps"),
    (lambda t: _mask_step_with_edits(t)["edits"].append(
        dict(_mask_step_with_edits(t)["edits"][0])), "edited twice in one step"),
    (lambda t: _mask_step_with_edits(t)["edits"][0].update(
        slot=_mask_step_with_edits(t)["slots"][0]), "unmasked by this step"),
])
def test_the_gate_refuses_edits_that_do_not_hold(edited, change, message):
    from medal.trace import dumps, loads_trace
    with pytest.raises(TraceError, match=message):
        loads_trace(dumps(_broken(edited[1], change)))


def test_fork_and_diff_understand_edits(edited, loaded):
    """A step fork may rewrite a written slot of the step's block: forcing the edit the
    step made changes nothing (the same trace, its fork record aside); forcing another
    token there is recorded as an edit with that token's probability, passes the gate
    (the fork names it), and ``medal diff`` says where and why the runs part. Two runs
    whose edits differ are told apart by them."""
    from medal.diff import diff_traces
    from medal.fork import fork
    from medal.trace import dumps, loads_trace
    run, trace = edited
    m = loaded("sharp")
    step = next(st for st in trace["decode"] if st.get("edits") and st["slots"])
    e = step["edits"][0]
    same = fork(trace, step=step["step"], actions=[(e["slot"], e["new_token"])], model=m)
    same.finish()
    assert diff_traces(trace, same.trace).identical
    other = next(t for t in (e["old_token"] + 1, e["old_token"] + 2)
                 if t not in (e["new_token"], m.mask_id))
    forked = fork(trace, step=step["step"], actions=[(e["slot"], other)], model=m)
    forked.finish()
    t2 = loads_trace(dumps(forked.trace))
    rec = next(st for st in t2["decode"] if st["step"] == step["step"])
    mine = next(x for x in rec["edits"] if x["slot"] == e["slot"])
    assert mine["new_token"] == other and mine["old_token"] == e["old_token"]
    d = diff_traces(trace, t2)
    assert not d.identical and d.first.cause == "forced action"
    assert d.first.position["step"] == step["step"]
    # a written slot outside the step's block, or a masked slot at a post step: refused
    with pytest.raises(InputError, match="already unmasked at step"):
        fork(trace, step=trace["decode"][-1]["step"], actions=[(0, 5)], model=m)
    # the same run with one edit fewer: the diff names the edits
    fewer = _broken(trace, lambda t: None)
    last = next(st for st in reversed(fewer["decode"]) if st.get("edits"))
    dropped = last["edits"].pop()
    fewer["result"]["answer_ids"][dropped["slot"]] = dropped["old_token"]
    d = diff_traces(trace, fewer)
    assert d.first.cause == "different edits" and "rewrites" in d.first.explanation
    assert d.side_by_side["edits"][0] == d.side_by_side["edits"][1] + 1


def test_medal_with_edits_on_a_block_model(loaded):
    """MEDAL's phase C edits like any decode: the search's commitments are written slots
    of the first block, so phase C may rewrite them; the trace passes the gate."""
    from medal.trace import dumps, loads_trace
    run = Run(loaded("sharp"), task="countdown", prompt=PROMPT, strategy="medal", trace=True,
              config=GenerationConfig(**{**EDITING, "max_iterations": 6}))
    run.finish()
    t = loads_trace(dumps(run.trace))
    assert any(st.get("edits") for st in t["decode"])


# ---------------------------------------------------------------------- the command line

def test_the_command_line_and_bench_run_llada2(folder, tmp_path, capsys):
    """``medal generate --model <folder>`` with token editing writes a trace with edits
    (the command docs/REAL_MODELS.md gives); ``medal diff`` and ``medal fork`` read it;
    ``medal bench`` runs the folder."""
    from medal import cli
    from medal.trace import load_trace
    d = folder("native", "sharp")
    out, forked = tmp_path / "edits.trace.json", tmp_path / "fork.trace.json"
    assert cli.main(["generate", "--model", f"hf:{d}", "--device", "cpu", "--prompt", PROMPT,
                     "--strategy", "threshold", "--gen-length", "16", "--block-length", "8",
                     "--threshold", "0.7", "--edit-threshold", "0.5", "--max-post-steps",
                     "4", "--no-compare", "--trace", str(out)]) == 0
    t = load_trace(out)
    step = next(st for st in t["decode"] if st.get("edits"))
    e = step["edits"][0]
    assert cli.main(["diff", str(out), str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["repro", str(out)]) == 0          # the edits reproduce
    assert "identical" in capsys.readouterr().out
    assert cli.main(["fork", str(out), "--step", str(step["step"]), "--action",
                     f"{e['slot']}:#{e['new_token']}", "--trace", str(forked)]) == 0
    assert load_trace(forked)["fork"]["forced"][0]["token_id"] == e["new_token"]
    capsys.readouterr()
    assert cli.main(["diff", str(out), str(forked)]) == 0   # the same edit: identical
    assert "identical" in capsys.readouterr().out
    bench = tmp_path / "bench.json"
    assert cli.main(["bench", "--model", f"hf:{d}", "--device", "cpu", "--task", "countdown",
                     "--n", "2", "--strategies", "greedy,threshold,medal", "--gen-length", "8",
                     "--block-length", "4", "--max-iterations", "4", "--edit-threshold",
                     "0.5", "--out", str(bench), "--no-progress"]) == 0
    records = json.loads(bench.read_text())
    assert records
    # lock-step: the runs' forwards grouped by the part of the sequence each reads
    joint = tmp_path / "bench-lock-step.json"
    assert cli.main(["bench", "--model", f"hf:{d}", "--device", "cpu", "--task", "countdown",
                     "--n", "2", "--strategies", "threshold", "--gen-length", "8",
                     "--block-length", "4", "--edit-threshold", "0.5", "--lock-step", "2",
                     "--out", str(joint), "--no-progress"]) == 0
    assert json.loads(joint.read_text())


def test_lm_eval_runs_llada2(folder):
    """lm-eval's ``MedalLM`` (the harness's model entry point) on the folder."""
    pytest.importorskip("lm_eval")
    from medal.lm_eval.model import MedalLM
    d = folder("native", "sharp")

    class Request:   # what lm-eval hands generate_until
        def __init__(self, context, gen_kwargs):
            self.args = (context, gen_kwargs)
            self.doc_id, self.idx, self.task_name = 0, 0, "t"

    lm = MedalLM(model=f"hf:{d}", device="cpu", strategy="threshold", gen_length=8,
                 block_length=4, edit_threshold=0.5)
    [text] = lm.generate_until([Request(PROMPT, {})], disable_tqdm=True)
    assert isinstance(text, str)


def test_the_apps_model_loader_runs_llada2(folder, monkeypatch):
    """The operator lists the folder (MEDAL_MODELS); the Run page loads it through the
    app's loader and runs a step with token editing, without an error."""
    pytest.importorskip("streamlit")
    from viz_support import Press, app_test
    spec = f"hf:{folder('native', 'sharp')}"
    monkeypatch.setenv("MEDAL_MODELS", spec)
    monkeypatch.setenv("MEDAL_DEVICE", "cpu")
    at = app_test(Path(__file__).resolve().parents[2] / "app.py").run()
    at.selectbox(key="w_model").set_value(spec)
    at.selectbox(key="w_strategy").set_value("threshold")
    at.number_input(key="w_gen_length").set_value(16)
    at.number_input(key="w_block_length").set_value(8)
    at.number_input(key="w_edit_threshold").set_value(0.5)
    Press(at, "Run to end").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    trace = at.session_state["run"].trace
    assert trace["run"]["model"]["family"] == "llada2" and trace["result"] is not None
    assert trace["run"]["config"]["edit_threshold"] == 0.5
