"""MEDAL's native LLaDA, LLaDA-MoE and Dream code (medal/models/native.py) against the
checkpoints' own code, on tiny checkpoints with the real configs, tokenizers and seeded
random weights (LLaDA-MoE: a tiny config of ours with the genuine config's keys, LLaDA's
tokenizer with the mask named ``<|mask|>``; it has no stand-in, so it is compared with the
genuine code only, and with numbers recorded from it).

Each comparison loads ONE checkpoint folder twice: ``implementation="remote"`` (the folder's
code through transformers) and ``implementation="native"`` (MEDAL's code, the same
safetensors read by name). The code in the folder is, in turn:

* ``standin`` -- ``tests/standin_code/``, ours; the same network as the genuine code
  (same parameter names, same operations; always runs);
* ``genuine`` -- the upstream files from ``MEDAL_REAL_MODEL_CODE`` (skipped, with the
  reason, when it is not set; see docs/REAL_MODELS.md).

Where the checkpoints' code cannot run (transformers 5.x: it fails by design, see
docs/REAL_MODELS.md), the remote side is skipped and the native side is checked against
reference numbers recorded from it (``tests/data/native-reference.json``).
"""
from __future__ import annotations

import copy
import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

import standins
from medal.config import GenerationConfig
from medal.engine import STRATEGIES, Run
from medal.errors import ModelLoadError
from medal.models import hf, load_model, native
from medal.models.native import NativeConfig, NativeLM, checkpoint_name
from medal.models.tokenizers import load_tokenizer
from trace_compare import differences

PROMPT = "Use 4, 18, 13 to make 20."
SMALL = dict(gen_length=8, lc=2, steps=8, max_iterations=6, samples=2, seed=0, decompose=False)
GENUINE, WHY_NOT = standins.genuine_code()
GENUINE_MOE, WHY_NOT_MOE = standins.genuine_moe_code()
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "native-reference.json"


def _remote_code_runs() -> tuple[bool, str]:
    import transformers
    major = int(transformers.__version__.split(".")[0])
    if major >= 5:
        return False, (f"transformers {transformers.__version__}: LLaDA's, LLaDA-MoE's and "
                       "Dream's own code (and the stand-ins, which treat transformers as it "
                       "does) fail on 5.x by design; the native side is checked against "
                       "recorded numbers")
    return True, ""


REMOTE_RUNS, REMOTE_WHY_NOT = _remote_code_runs()
needs_remote = pytest.mark.skipif(not REMOTE_RUNS, reason=REMOTE_WHY_NOT)
CODES = [pytest.param("standin", marks=needs_remote),
         pytest.param("genuine", marks=[needs_remote, pytest.mark.skipif(
             GENUINE is None, reason=WHY_NOT)])]
#: checkpoints compared: the real tiny configs; LLaDA-1.5 (the same architecture and code
#: as LLaDA-8B-Instruct, other weights); and variants that exercise the config switches
#: the native code reads (grouped-query attention, q/k/v biases, tied output)
VARIANTS = {
    "llada": ("llada", 0, None),
    "llada-1.5": ("llada", 15, None),
    "llada-gqa-bias-tied": ("llada", 3, {"n_kv_heads": 2, "include_qkv_bias": True,
                                         "weight_tying": True}),
    "dream": ("dream", 0, None),
    "dream-tied": ("dream", 4, {"tie_word_embeddings": True, "num_key_value_heads": 1}),
    # LLaDA-MoE: layers dense, MoE, MoE; 8 experts, top 2, expert bias, shared expert,
    # q/k norms; and a variant with the other switches: partial RoPE, clip_qkv, q/k/v/o
    # biases, GQA, tied output, MoE-dense-MoE, no shared expert, and the routing keys the
    # published code reads but does not use (sigmoid, norm_topk_prob, scaling, groups)
    "llada-moe": ("llada-moe", 0, None),
    "llada-moe-switches": ("llada-moe", 5, {
        "partial_rotary_factor": 0.5, "clip_qkv": 0.05, "attention_bias": True,
        "num_key_value_heads": 2, "tie_word_embeddings": True, "moe_layer_freq": [1, 0, 1],
        "shared_expert_intermediate_size": None, "moe_router_score_function": "sigmoid",
        "norm_topk_prob": True, "routed_scaling_factor": 2.5, "router_num_group": 2,
        "router_topk_group": 1}),
}
MOE_VARIANTS = ["llada-moe", "llada-moe-switches"]
MOE_CODES = [pytest.param("genuine", marks=[needs_remote, pytest.mark.skipif(
    GENUINE_MOE is None, reason=WHY_NOT_MOE)])]


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    monkeypatch.delenv(hf.TRUST_REMOTE_CODE_ENV, raising=False)
    monkeypatch.delenv(hf.IMPLEMENTATION_ENV, raising=False)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("native")
    built = {}

    def get(code: str, variant: str):
        if (code, variant) not in built:
            family, seed, overrides = VARIANTS[variant]
            built[code, variant] = standins.save_checkpoint(
                root / f"{code}-{variant}-{root.name}", family, code, seed=seed,
                overrides=overrides)
        return built[code, variant]
    return get


def _pair(folder, code, variant, dtype="float32"):
    d = folder(code, variant)
    family = VARIANTS[variant][0]
    prefix = family.split("-")[0]  # llada-moe checkpoints load as llada: (or hf:)
    remote = load_model(f"{prefix}:{d}", trust_remote_code=True, device="cpu", dtype=dtype,
                        implementation="remote")
    native = load_model(f"{prefix}:{d}", device="cpu", dtype=dtype)
    assert remote.family == native.family == family
    assert remote.implementation == "remote" and native.implementation == "native"
    return remote, native


def _batch(model, slots=10, batch=3, seed=0):
    """Prompt + answer slots: some masked, some filled with random ids that have text."""
    g = torch.Generator().manual_seed(seed)
    prompt = model.encode_prompt(PROMPT)
    rows = []
    for _ in range(batch):
        answer = torch.randint(0, model.text_vocab, (slots,), generator=g)
        answer[torch.rand(slots, generator=g) < 0.6] = model.mask_id
        rows.append(prompt + answer.tolist())
    return torch.tensor(rows), slots


def _finite(x):
    return x[torch.isfinite(x)]


# ---------------------------------------------------------------------- logits

DENSE_VARIANTS = [v for v in VARIANTS if v not in MOE_VARIANTS]


def _cases(dense, moe=MOE_VARIANTS):
    """(code, variant) pairs: the dense variants with every code, LLaDA-MoE's with the
    genuine code only (it has no stand-in)."""
    return ([pytest.param(c.values[0], v, marks=c.marks) for c in CODES for v in dense]
            + [pytest.param(c.values[0], v, marks=c.marks) for c in MOE_CODES for v in moe])


@pytest.mark.parametrize("code, variant", _cases(DENSE_VARIANTS))
def test_float32_logits_equal_the_checkpoint_code(folder, code, variant):
    remote, native = _pair(folder, code, variant)
    ids, slots = _batch(native)
    a, b = remote.logits(ids, slots), native.logits(ids, slots)
    assert torch.equal(torch.isfinite(a), torch.isfinite(b))
    diff = (_finite(a) - _finite(b)).abs().max().item()
    scale = _finite(a).abs().max().item()
    print(f"{code} {variant} float32: max |diff| {diff:.3g}, max |logit| {scale:.3g}")
    assert diff <= 4 * torch.finfo(torch.float32).eps * scale  # float32 rounding
    # the raw network, every position (the adapters keep the answer rows only)
    kw = {"attention_mask": hf.DREAM_FULL_ATTENTION} if native.family == "dream" else {}
    with torch.no_grad():
        raw = remote.net(input_ids=ids, **kw).logits
        ours = native.net(ids)
    torch.testing.assert_close(ours, raw, rtol=0, atol=4 * torch.finfo(torch.float32).eps * scale)


@pytest.mark.parametrize("code, variant", _cases(("llada", "llada-1.5", "dream")))
def test_bfloat16_logits_within_bfloat16_rounding(folder, code, variant):
    remote, native = _pair(folder, code, variant, dtype="bfloat16")
    ids, slots = _batch(native, batch=4)
    a, b = remote.logits(ids, slots), native.logits(ids, slots)
    fin = torch.isfinite(a)
    assert torch.equal(fin, torch.isfinite(b))
    diff = (a[fin] - b[fin]).abs().max().item()
    scale = a[fin].abs().max().item()
    eps = torch.finfo(torch.bfloat16).eps
    # a decision: the argmax token of a slot, and the order of the slots by top probability
    argmax_differs = (a.argmax(-1) != b.argmax(-1)).float().mean().item()
    order_differs = (a.softmax(-1).amax(-1).argsort(-1)
                     != b.softmax(-1).amax(-1).argsort(-1)).float().mean().item()
    print(f"{code} {variant} bfloat16: max |diff| {diff:.3g} (bf16 eps x max |logit| = "
          f"{eps * scale:.3g}); argmax differs {argmax_differs:.1%}, order {order_differs:.1%}")
    assert diff <= 2 * eps * scale
    assert argmax_differs <= 0.01 and order_differs <= 0.05


# ---------------------------------------------------------------------- traces

def _trace(model, strategy):
    run = Run(model, task="countdown", prompt=PROMPT, strategy=strategy,
              config=GenerationConfig(**SMALL), trace=True)
    result = run.finish()
    trace = copy.deepcopy(run.trace)
    trace.pop("timing", None)
    for key in ("implementation", "remote_code"):  # what differs by construction
        trace["run"]["model"].pop(key, None)
    return result, trace


@pytest.mark.parametrize("code, variant", _cases(("llada", "llada-1.5", "dream")))
@pytest.mark.parametrize("strategy", ["greedy", "medal"])
def test_greedy_and_medal_traces_are_identical(folder, code, variant, strategy):
    remote, native = _pair(folder, code, variant)
    res_r, trace_r = _trace(remote, strategy)
    res_n, trace_n = _trace(native, strategy)
    assert res_r.answer_ids == res_n.answer_ids and res_r.forwards == res_n.forwards
    assert differences(trace_r, trace_n) == []
    assert differences(trace_n, trace_r) == []


# ---------------------------------------------------------------------- any transformers

def _reference_numbers(model):
    ids, slots = _batch(model, batch=2)
    out = model.logits(ids, slots)
    top = out.topk(3, dim=-1)
    return {"ids": ids.tolist(), "top_ids": top.indices.tolist(),
            "top_logits": top.values.tolist()}


@pytest.mark.parametrize("family", ["llada", "dream", "llada-moe", "llada-moe-switches"])
def test_native_matches_the_recorded_reference(folder, family):
    """Native logits on a checkpoint written without any model code equal the numbers
    recorded from the genuine code (transformers 4.57.6, float32), on whatever
    transformers is installed (the CI's 5.x lane included)."""
    native = load_model(f"hf:{folder('native', family)}", device="cpu")
    assert native.implementation == "native"
    ref = json.loads(REFERENCE.read_text())[family]
    got = _reference_numbers(native)
    assert got["ids"] == ref["ids"]
    assert got["top_ids"] == ref["top_ids"]
    torch.testing.assert_close(torch.tensor(got["top_logits"]), torch.tensor(ref["top_logits"]),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("code, family", _cases(("llada", "dream")))
def test_checkpoint_code_matches_the_recorded_reference(folder, code, family):
    """The reference numbers are the checkpoint code's own (standin, and genuine when
    MEDAL_REAL_MODEL_CODE is set): the same seeds and names give the same weights."""
    remote, _ = _pair(folder, code, family)
    ref = json.loads(REFERENCE.read_text())[family]
    got = _reference_numbers(remote)
    assert got["top_ids"] == ref["top_ids"]
    torch.testing.assert_close(torch.tensor(got["top_logits"]), torch.tensor(ref["top_logits"]),
                               rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- Dream's tokenizer

#: ids of the Dream test tokenizer (tests/data/real-models/dream: the real special ids),
#: recorded from the slow DreamTokenizer (genuine code, transformers 4.57.6)
DREAM_TEXT = "Use 4, 18, 13 to make 20.<|im_end|>\n<|mask|><|mask|> done<|endoftext|>"


def _slow_dream_tokenizer():
    spec = importlib.util.spec_from_file_location(
        "tokenization_dream", GENUINE / "dream" / "tokenization_dream.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("tokenization_dream", module)
    spec.loader.exec_module(module)
    return module.DreamTokenizer.from_pretrained(str(standins.REAL_CONFIGS / "dream"))


def test_dream_fast_tokenizer_ids():
    fast = load_tokenizer(standins.REAL_CONFIGS / "dream")
    expected = json.loads(REFERENCE.read_text())["dream_tokenizer"]
    chat = fast.apply_chat_template([{"role": "user", "content": PROMPT}],
                                    add_generation_prompt=True, tokenize=False)
    assert fast(chat, add_special_tokens=False)["input_ids"] == expected["chat"]
    assert fast(DREAM_TEXT, add_special_tokens=False)["input_ids"] == expected["special"]
    assert expected["special"].count(hf.DREAM_MASK_ID) == 2
    assert fast.mask_token_id == hf.DREAM_MASK_ID and fast.eos_token_id == hf.DREAM_EOS_ID


@pytest.mark.skipif(GENUINE is None, reason=WHY_NOT)
def test_dream_fast_tokenizer_equals_the_slow_one():
    fast = load_tokenizer(standins.REAL_CONFIGS / "dream")
    slow = _slow_dream_tokenizer()
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": PROMPT + "\n  Ünïcödé   tabs\tand 1234567 digits"}]
    for tok in (fast, slow):
        assert tok.chat_template
    a = slow.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert fast.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) == a
    for text in (a, DREAM_TEXT, " leading space, 'quotes' and it's\n\nnewlines  "):
        assert fast(text)["input_ids"] == slow(text)["input_ids"], text
        ids = slow(text)["input_ids"]
        assert fast.decode(ids) == slow.decode(ids)


# ---------------------------------------------------------------------- loading errors

def test_pickled_weights_are_refused(folder, tmp_path):
    d = tmp_path / "pickled"
    src = folder("native", "llada")
    d.mkdir()
    for f in src.iterdir():
        if f.suffix != ".safetensors":
            (d / f.name).write_bytes(f.read_bytes())
    (d / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(ModelLoadError, match="pickle.*safetensors"):
        load_model(f"llada:{d}", device="cpu")


def test_unknown_settings_and_mismatched_weights_say_what_to_do(folder, tmp_path):
    cfg = json.loads((standins.REAL_CONFIGS / "llada" / "config.json").read_text())
    with pytest.raises(ModelLoadError, match="alibi.*--implementation remote"):
        NativeConfig.from_dict("llada", {**cfg, "alibi": True, "rope": False})
    dream = json.loads((standins.REAL_CONFIGS / "dream" / "config.json").read_text())
    with pytest.raises(ModelLoadError, match="rope_scaling"):
        NativeConfig.from_dict("dream", {**dream, "rope_scaling": {"type": "yarn"}})
    d = tmp_path / "wrong"
    d.mkdir()
    src = folder("native", "llada")
    for f in src.iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    (d / "config.json").write_text(json.dumps({**cfg, "n_layers": 3}))
    with pytest.raises(ModelLoadError, match="missing.*blocks.2"):
        load_model(f"llada:{d}", device="cpu")


def test_float16_is_refused_natively(folder):
    with pytest.raises(ModelLoadError, match="float16.*bfloat16.*float32"):
        load_model(f"llada:{folder('native', 'llada')}", device="cpu", dtype="float16")


def test_checkpoint_names_cover_every_parameter():
    for family in ("llada", "dream", "llada-moe"):
        cfg = NativeConfig.from_dict(family, json.loads(
            (standins.REAL_CONFIGS / standins.FOLDER[family] / "config.json").read_text()))
        with torch.device("meta"):
            names = [checkpoint_name(family, n) for n in NativeLM(cfg).state_dict()]
        assert len(set(names)) == len(names)


def test_native_forward_takes_positions_and_an_attention_bias(folder):
    """Room for a key/value cache and padded batches: explicit positions equal the
    default; a bias that hides a padding position changes nothing for the others when the
    padding is at the end and removed."""
    m = load_model(f"dream:{folder('native', 'dream')}", device="cpu")
    ids, _ = _batch(m, batch=1)
    with torch.no_grad():
        full = m.net(ids)
        same = m.net(ids, positions=torch.arange(ids.shape[1])[None])
        padded = torch.cat([ids, ids[:, :2]], dim=1)
        keep = torch.ones(1, 1, 1, padded.shape[1], dtype=torch.bool)
        keep[..., -2:] = False
        masked = m.net(padded, attention_bias=keep)[:, :-2]
    assert torch.equal(full, same)
    torch.testing.assert_close(masked, full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rotary_dims", [None, 6])
def test_rotary_equals_the_published_form_to_the_bit(dtype, rotary_dims):
    """The forward turns q and k as ``x * cos + x.roll(d/2) * signed_sin`` (one operation
    where the published codes take three); it must be their ``x * cos + rotate_half(x) *
    sin`` to the bit, full and partial (LLaDA-MoE) rotary, in float32 and bfloat16."""
    cfg = NativeConfig.from_dict("dream", {
        "num_attention_heads": 2, "hidden_size": 32, "num_hidden_layers": 1,
        "intermediate_size": 8, "vocab_size": 8, "rope_theta": 10000.0})
    if rotary_dims:
        cfg = dataclasses.replace(cfg, rotary_dims=rotary_dims)
    d = cfg.rope_dims
    g = torch.Generator().manual_seed(0)
    positions = torch.randint(0, 4096, (3, 7), generator=g)
    x = (torch.randn(3, 2, 7, cfg.head_dim, generator=g) * 100).to(dtype)
    cos, signed_sin = (t.to(dtype) for t in native.rotary_tables(cfg, positions))
    angles = positions.float()[..., None] * (
        1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float) / d)))
    angles = torch.cat((angles, angles), dim=-1)[:, None]
    assert torch.equal(cos, angles.cos().to(dtype))
    sin = angles.sin().to(dtype)
    turned = x[..., :d] * cos + native.rotate_half(x[..., :d]) * sin
    expected = torch.cat((turned, x[..., d:]), dim=-1)
    got = native.apply_rotary(x, cos, signed_sin)
    assert got.dtype == dtype and torch.equal(got, expected)
    assert not torch.equal(got, x)


def _ops_per_layer(family: str, dtype: torch.dtype) -> float:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))
    counts = []
    for layers in (2, 4):
        cfg = dataclasses.replace(NativeConfig.from_dict(family, json.loads(
            (standins.REAL_CONFIGS / standins.FOLDER[family] / "config.json").read_text())),
            layers=layers, vocab_size=64)
        net = NativeLM(cfg).to(dtype).eval()
        Count.n = 0
        with torch.no_grad(), Count():
            net(torch.randint(0, 64, (2, 12)), rows=4)
        counts.append(Count.n)
    return (counts[1] - counts[0]) / 2


@pytest.mark.parametrize("family, dtype, most", [
    ("llada", torch.float32, 50), ("llada", torch.bfloat16, 58),
    ("dream", torch.float32, 58), ("dream", torch.bfloat16, 62)])
def test_a_layer_dispatches_few_operations(family, dtype, most):
    """On a GPU a cached forward of a few dozen tokens costs what the host takes to issue
    its operations, ~10 us each (docs/SPEED.md: 20-23 ms a call for LLaDA-8B whatever the
    tokens), so each layer's operation count is its floor. Each linear layer is one matrix
    product (no 3-d reshapes), RoPE one roll (not rotate_half's three operations), and
    Dream's cos/sin cast once a forward. Operations a layer, before -> after: LLaDA float32
    65 -> 47, bfloat16 73 -> 55; Dream 73 -> 55 and 79 -> 59 (Dream's grouped-query
    attention repeats k and v: 4 more)."""
    per_layer = _ops_per_layer(family, dtype)
    print(f"{family} {dtype}: {per_layer} operations a layer")
    assert per_layer <= most


# ---------------------------------------------------------------------- LLaDA-MoE, any transformers

def test_llada_moe_is_native_by_default_with_its_mask_named_mask(folder):
    m = load_model(f"llada:{folder('native', 'llada-moe')}", device="cpu")
    assert m.family == "llada-moe" and m.implementation == "native"
    assert m.token_text(m.mask_id) == "<|mask|>" and not m.describe()["remote_code"]
    net = m.net
    assert [b.moe is not None for b in net.blocks] == [False, True, True]
    assert all(b.shared is not None for b in net.blocks[1:])
    assert len(net.blocks[1].moe.experts) == 8 and net.blocks[1].moe.top_k == 2


def test_llada_moe_routing_matters(folder):
    """The experts a token goes to differ between tokens, and the expert bias changes the
    logits (the test weights give it a random value): the routing is exercised."""
    m = load_model(f"hf:{folder('native', 'llada-moe')}", device="cpu")
    ids, _ = _batch(m, batch=1)
    block = m.net.blocks[1]
    seen = []
    handle = block.moe.router.register_forward_hook(lambda mod, a, out: seen.append(out))
    with torch.no_grad():
        before = m.net(ids)
        handle.remove()
        chosen = torch.topk(seen[0].softmax(-1) + block.moe.expert_bias, 2, dim=-1).indices
        assert len({tuple(sorted(r)) for r in chosen.tolist()}) > 2
        for b in m.net.blocks[1:]:
            b.moe.expert_bias.zero_()
        after = m.net(ids)
    assert (before - after).abs().max() > 1e-4


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_runs_on_native_llada_moe(folder, strategy):
    m = load_model(f"hf:{folder('native', 'llada-moe')}", device="cpu")
    run = Run(m, task="countdown", prompt=PROMPT, strategy=strategy,
              config=GenerationConfig(**SMALL), trace=True)
    res = run.finish()
    assert len(res.answer_ids) == SMALL["gen_length"] and m.mask_id not in res.answer_ids
    assert res.forwards > 0 and run.trace["run"]["model"]["family"] == "llada-moe"
    assert run.trace["run"]["model"]["implementation"] == "native"


def test_llada_moe_settings_it_cannot_run_are_refused():
    cfg = json.loads((standins.REAL_CONFIGS / "lladamoe" / "config.json").read_text())
    for change, said in (({"rope_scaling": {"type": "yarn"}}, "rope_scaling"),
                         ({"partial_rotary_factor": 0.1}, "partial_rotary_factor"),
                         ({"moe_layer_freq": [1]}, "moe_layer_freq"),
                         ({"hidden_act": "gelu"}, "hidden_act"),
                         ({"head_dim": 8}, "head_dim"),
                         ({"shared_expert_intermediate_size": -1}, "shared_expert")):
        with pytest.raises(ModelLoadError, match=f"{said}.*--implementation remote"):
            NativeConfig.from_dict("llada-moe", {**cfg, **change})
