"""No strategy mixes devices: proven without a GPU (issue 8, item 3).

Every test here runs on the CPU, so a CPU tensor meeting a GPU one -- which crashes
every real GPU run ("Expected all tensors to be on the same device") -- is invisible to
the rest of the suite. :class:`FakeAccelerator` makes it visible: a dispatch mode under
which tensors on the accelerator (``meta``: the one non-CPU device a CPU-only PyTorch
can name) keep real values in hidden CPU storage, so models compute and strategies run
to the end, while every operation checks its tensors' devices the way CUDA does:

* a CPU tensor (other than a 0-dim scalar, which CUDA kernels accept) meeting an
  accelerator tensor in one operation raises, like CUDA;
* a CPU random generator used on accelerator tensors raises, like CUDA;
* ``.numpy()`` of an accelerator tensor raises, like CUDA;
* copies to the CPU (``.cpu()``, ``.to("cpu")``, ``.tolist()``, ``.item()``) are
  allowed and recorded, so a test can check what comes back from the device.

The model's weights are moved onto the accelerator, so the adapters' own code (not a
mock) runs there; the runner receives logits that live on the accelerator.
"""
from __future__ import annotations

import contextlib

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

import standins
from medal.config import GenerationConfig
from medal.engine import STRATEGIES, Run
from medal.models import load_model
from medal.models.builtin import BuiltinModel
from medal.models.tiny import CharTokenizer, TinyConfig, TinyDLM

ACCELERATOR = torch.device("meta")
PROBLEM = {"numbers": [4, 18, 13], "target": 20}


class OnAccelerator(torch.Tensor):
    """A tensor the program sees on the accelerator; its values live in ``elem`` (CPU)."""

    @staticmethod
    def __new__(cls, elem: torch.Tensor):
        t = torch.Tensor._make_wrapper_subclass(
            cls, elem.shape, dtype=elem.dtype, device=ACCELERATOR, strides=elem.stride(),
            storage_offset=elem.storage_offset(), requires_grad=elem.requires_grad)
        t.elem = elem
        return t

    def tolist(self):
        FakeAccelerator.active.record(self.elem)
        return self.elem.tolist()

    def numpy(self, *args, **kwargs):
        raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() "
                        "to copy the tensor to host memory first (as CUDA says)")

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return NotImplemented  # the mode handles every operation

    def __repr__(self):
        return f"OnAccelerator({self.elem!r})"


class DeviceMixing(RuntimeError):
    pass


class FakeAccelerator(TorchDispatchMode):
    """See the module docstring. ``copies``: shapes of the tensors copied to the CPU."""

    active: "FakeAccelerator | None" = None

    def __init__(self):
        super().__init__()
        self.copies: list[tuple[int, ...]] = []
        self.operations = 0

    def record(self, t: torch.Tensor) -> None:
        self.copies.append(tuple(t.shape))

    def __enter__(self):
        FakeAccelerator.active = self
        return super().__enter__()

    def __exit__(self, *exc):
        FakeAccelerator.active = None
        return super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.operations += 1
        tensors = [a for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        on_acc = [a for a in tensors if isinstance(a, OnAccelerator)]
        name = func.overloadpacket.__name__
        to_device = kwargs.get("device")
        to_device = torch.device(to_device) if to_device is not None else None
        if on_acc and name not in ("copy_", "_to_copy", "_copy_from"):
            on_cpu = [a for a in tensors if not isinstance(a, OnAccelerator) and a.dim() > 0]
            if on_cpu:
                raise DeviceMixing(
                    f"Expected all tensors to be on the same device, but found at least two "
                    f"devices, meta and cpu! ({func}: CPU tensors of shapes "
                    f"{[tuple(a.shape) for a in on_cpu]})")
            gen = kwargs.get("generator")
            if gen is not None and gen.device.type == "cpu":
                raise DeviceMixing(f"Expected a 'meta' device type for generator but found "
                                   f"'cpu' ({func})")
        unwrap = lambda a: a.elem if isinstance(a, OnAccelerator) else a  # noqa: E731
        if to_device is not None:
            kwargs = dict(kwargs, device=torch.device("cpu"))
        if name == "_local_scalar_dense" and on_acc:
            self.record(on_acc[0].elem)
        if to_device is not None and to_device.type == "cpu" and on_acc:
            self.record(on_acc[0].elem)
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
        if to_device is not None:
            wrap = to_device == ACCELERATOR
        elif name == "copy_":
            wrap = isinstance(args[0], OnAccelerator)
            if wrap:  # in place into the accelerator tensor: it is args[0]
                return args[0]
            if on_acc:
                self.record(on_acc[0].elem)
        else:
            wrap = bool(on_acc)
        if not wrap:
            return out
        # made outside inference mode: a view of a normal tensor (a buffer) must be able
        # to share its version counter, as it would on a real device
        with torch.inference_mode(False):
            return tree_map(lambda o: OnAccelerator(o) if isinstance(o, torch.Tensor)
                            and not isinstance(o, OnAccelerator) else o, out)


@contextlib.contextmanager
def on_fake_accelerator(model):
    """The model's network moved onto the accelerator, and the mode active."""
    swap = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        with FakeAccelerator() as mode:
            model.net.to(ACCELERATOR)
            model.device = ACCELERATOR
            yield mode
    finally:
        torch.__future__.set_swap_module_params_on_conversion(swap)


def builtin_random():
    torch.manual_seed(0)
    net = TinyDLM(TinyConfig(vocab_size=len(CharTokenizer()), n_layer=1, n_embd=32)).eval()
    return BuiltinModel(net, {}, "builtin:random-test")


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("standins")
    return {"llada": standins.save_llada(root / "llada"),
            "dream": standins.save_dream(root / "dream"),
            "mlm": standins.save_bert(root / "bert")}


def hf_model(hf_dirs, family):
    return load_model(f"{family}:{hf_dirs[family]}", trust_remote_code=True, device="cpu",
                      dtype="float32")


# every strategy, and the options that take other paths through the search and decoders
CONFIGS = [(s, {}) for s in STRATEGIES] + [
    ("medal", dict(simulation="sample", temperature=0.7, complete_candidates=True)),
    ("medal", dict(reward="ig+verifier", slot_temperature=0.5, one_per_parent=True)),
]


def _run_everything(model, gen_length, lc, block):
    results = []
    for strategy, extra in CONFIGS:
        cfg = GenerationConfig(seed=0, gen_length=gen_length, lc=lc, block_length=block,
                               steps=gen_length, max_iterations=12, **extra)
        run = Run(model, problem=PROBLEM, strategy=strategy, config=cfg, trace=True,
                  compare_greedy=strategy == "medal")
        results.append(run.finish())
    return results


def _check_copies(mode, vocab):
    """Only top-k tokens/probabilities and per-slot figures came back: no copy has a
    vocabulary-sized dimension, and none is larger than a batch of top-k figures."""
    assert mode.copies, "nothing was copied from the accelerator: did the model run there?"
    for shape in mode.copies:
        assert vocab not in shape, f"a [{shape}] tensor (full vocabulary) came back to the CPU"


def test_the_fake_accelerator_catches_what_cuda_refuses():
    """The check can fail: the line runner.py had before this fix (a CPU index into
    accelerator logits), a CPU generator, and numpy() all raise as on CUDA."""
    with FakeAccelerator():
        logits = torch.zeros(2, 3, 5).to(ACCELERATOR)
        assert isinstance(logits, OnAccelerator) and logits.device == ACCELERATOR
        with pytest.raises(DeviceMixing, match="same device"):
            logits.index_fill(-1, torch.tensor([4]), float("-inf"))
        with pytest.raises(DeviceMixing, match="same device"):
            logits + torch.ones(5)
        with pytest.raises(DeviceMixing, match="generator"):
            torch.multinomial(logits[0].softmax(-1), 1, generator=torch.Generator())
        with pytest.raises(TypeError, match="numpy"):
            logits.numpy()
        fine = logits.softmax(-1) * torch.tensor(2.0)  # a 0-dim CPU scalar is accepted
        assert isinstance(fine, OnAccelerator)
        assert fine.sum().item() == pytest.approx(2 * 6)
        assert fine.cpu().shape == (2, 3, 5) and not isinstance(fine.cpu(), OnAccelerator)


def test_the_old_runner_line_fails_under_the_fake_accelerator():
    """Today's bug, reproduced: runner.py's old scoring line on accelerator logits."""
    model = builtin_random()
    with on_fake_accelerator(model):
        ids = torch.tensor([model.encode_prompt("Use 4, 18, 13 to make 20.") + [model.mask_id] * 28])
        logits = model.logits(ids.to(ACCELERATOR), 28)
        assert isinstance(logits, OnAccelerator)
        with pytest.raises(DeviceMixing):
            logits.index_fill(-1, torch.tensor([model.mask_id]), float("-inf"))  # the old line


def test_every_strategy_on_the_accelerator_builtin():
    model = builtin_random()
    with on_fake_accelerator(model) as mode:
        results = _run_everything(model, 28, 4, 7)
    assert mode.operations > 1000
    _check_copies(mode, model.vocab_size)
    for res in results:
        assert model.mask_id not in res.answer_ids and res.forwards >= 1


@pytest.mark.parametrize("family", ["llada", "dream", "mlm"])
def test_every_strategy_on_the_accelerator_hf(hf_dirs, family):
    model = hf_model(hf_dirs, family)
    cpu_results = _run_everything(model, 8, 2, None)
    with on_fake_accelerator(model) as mode:
        results = _run_everything(model, 8, 2, None)
    _check_copies(mode, model.vocab_size)
    # the same numbers on the accelerator as on the CPU: same answers, same costs
    assert [(r.answer_ids, r.forwards, r.sequence_forwards) for r in results] == \
        [(r.answer_ids, r.forwards, r.sequence_forwards) for r in cpu_results]


def test_only_answer_rows_reach_the_output_layer(hf_dirs):
    """The adapters' output layer computes the answer slots' rows only (Dream: the row
    before each slot), never the prompt's: [B, L, V], not [B, T, V]."""
    for family in ("llada", "dream", "mlm"):
        model = hf_model(hf_dirs, family)
        head = model.net.get_output_embeddings()
        if head is None:  # the genuine LLaDA and Dream code name theirs (ff_out, lm_head)
            head = model.net.head
            model.net.get_output_embeddings = lambda head=head: head
        seen = []
        handle = head.register_forward_hook(lambda m, a, out: seen.append(tuple(out.shape)))
        try:
            ids = torch.tensor([model.encode_prompt("Use 4, 18, 13 to make 20.")
                                + [model.mask_id] * 6] * 2)
            out = model.logits(ids, 6)
        finally:
            handle.remove()
        rows = 7 if model.shifted_logits else 6
        assert seen == [(2, rows, model.vocab_size)], family
        assert out.shape == (2, 6, model.vocab_size)


def test_lock_step_bench_on_the_accelerator_builtin():
    """`medal bench --device cuda --lock-step N` (the GPU check's lock-step figures): the
    joint forwards of several runs on the accelerator give what the CPU gives."""
    from medal.bench import bench
    from medal.tasks import get_task
    task = get_task("countdown")
    problems = task.generate(3, seed=10_000)
    cfg = GenerationConfig(seed=0, lc=2, candidates=2, max_iterations=12)

    def answers(model):
        rows = bench(model, "countdown", problems, ["medal", "greedy"], cfg, lock_step=4)
        return [(r["index"], r["strategy"], r["text"], r["forwards"], r["sequence_forwards"])
                for r in rows]
    model = builtin_random()
    on_cpu = answers(model)
    with on_fake_accelerator(model) as mode:
        on_device = answers(model)
    assert mode.operations > 1000
    _check_copies(mode, model.vocab_size)
    assert on_device == on_cpu


def test_a_builtin_model_goes_where_it_is_told():
    """``--device``: auto and cpu keep a built-in model on the CPU (faster there); cuda
    puts it on the GPU, or says what to do where there is none."""
    from medal.errors import ModelLoadError
    for device in (None, "auto", "cpu"):
        model = load_model("builtin:sudoku", device=device)
        assert model.device.type == "cpu" and next(model.net.parameters()).device.type == "cpu"
    if torch.cuda.is_available():
        model = load_model("builtin:sudoku", device="cuda")
        assert next(model.net.parameters()).device.type == "cuda"
    else:
        with pytest.raises(ModelLoadError, match="--device cpu"):
            load_model("builtin:sudoku", device="cuda")
