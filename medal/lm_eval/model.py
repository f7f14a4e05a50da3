"""The ``medal`` model of lm-evaluation-harness: every ``generate_until`` request is one
MEDAL run (:class:`medal.engine.Run`) of the chosen strategy.

model_args (``--model_args key=value,...``):

* ``model``: a model spec :func:`medal.models.load_model` takes (``builtin:countdown``,
  ``llada-8b-instruct``, ``dream:<hub id or dir>``...); loading options ``device``,
  ``dtype``, ``revision``, ``trust_remote_code``, ``chat_template`` (only ever from the
  person running the command);
* ``strategy``: one of :data:`medal.engine.STRATEGIES` (default ``medal``);
* ``task``: the MEDAL task whose prompt path applies (default: a built-in model's own task,
  since it reads nothing else; ``text`` -- the prompt as written -- for every other model);
* any :class:`~medal.config.GenerationConfig` field: ``lc``, ``k1``, ``k2``,
  ``candidates``, ``steps``, ``gen_length``, ``block_length``, ``seed``, ``temperature``...,
  validated by it;
* ``trace_dir``: write each request's MEDAL trace there (see :meth:`MedalLM.trace_path`).

Request ``doc_id`` d of a task runs with seed ``seed + d``, as ``medal bench`` runs
problem i with ``seed + i``: the same problems in the same order give the same answers.
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import fields, replace
from pathlib import Path

from lm_eval.api.model import LM
from lm_eval.api.registry import get_model, register_model
from tqdm.auto import tqdm

from .. import __version__
from ..config import GenerationConfig
from ..engine import ALIASES, STRATEGIES, Run
from ..errors import InputError
from ..models import LOAD_OPTIONS, load_model
from ..tasks import TASKS, get_task

log = logging.getLogger(__name__)

NAME = "medal"
CONFIG_FIELDS = tuple(f.name for f in fields(GenerationConfig))
#: options lm-eval's command line passes to every model (--batch_size, --device): a MEDAL
#: run answers one request at a time, so the batch sizes are accepted and not used
HARNESS_OPTIONS = ("batch_size", "max_batch_size")
#: seeds of a request's repeats after the first are this far apart
REPEAT_SEED_STRIDE = 1_000_003
SEED_MODULUS = 2 ** 32


def harness_device(device) -> str:
    """lm-eval's ``--device`` as a MEDAL load option. lm-eval sends ``cuda:0`` when the
    user names none (its default, on any machine): ``cuda`` or ``cuda:0`` run on the GPU
    when torch sees one, else on the CPU with a warning; ``cpu`` and ``auto`` as they are.
    ``device=`` in --model_args is taken as written (no fallback)."""
    text = str(device).strip().lower()
    if text in ("cpu", "auto"):
        return text
    if text in ("cuda", "cuda:0"):
        import torch
        if torch.cuda.is_available():
            return "cuda"
        log.warning("lm-eval's --device %s (its default when none is given), but torch sees "
                    "no CUDA GPU: running on the CPU (pass --device cpu to silence this)", text)
        return "cpu"
    raise InputError(f"--device {str(device)[:40]}: MEDAL runs on cpu, cuda or cuda:0 (set "
                     "CUDA_VISIBLE_DEVICES to choose another GPU)")


class UnsupportedRequestError(InputError, NotImplementedError):
    """A request type a masked diffusion LM cannot answer."""


def unsupported(request_type: str, requests) -> UnsupportedRequestError:
    tasks = sorted({str(r.task_name) for r in requests if getattr(r, "task_name", None)})
    where = f" (task{'s' if len(tasks) > 1 else ''} {', '.join(tasks)})" if tasks else ""
    return UnsupportedRequestError(
        f"the medal model cannot answer {request_type} requests{where}: a masked diffusion "
        "LM has no exact autoregressive log-likelihood -- it fills masked slots in any "
        "order, so log p(continuation | context) is only bounded (the ELBO), not computed, "
        "and scoring it would need Monte-Carlo estimates, not MEDAL's search. Use tasks "
        "whose requests are generate_until (gsm8k, minerva_math, humaneval, the shipped "
        "medal_countdown...), not multiple-choice or perplexity tasks.")


def stop_at(text: str, until) -> str:
    """``text`` cut before the first of the stop strings ``until`` that occurs in it."""
    stops = [until] if isinstance(until, str) else list(until or [])
    cut = len(text)
    for s in stops:
        if s:
            i = text.find(s)
            if 0 <= i < cut:
                cut = i
    return text[:cut]


class MedalLM(LM):
    """lm-eval's view of MEDAL: ``generate_until`` runs the strategy; log-likelihood
    requests raise :class:`UnsupportedRequestError` (see :func:`unsupported`)."""

    def __init__(self, model: str | None = None, strategy: str = "medal",
                 task: str | None = None, trace_dir: str | None = None, **options):
        super().__init__()
        if not model:
            raise InputError("give the model to evaluate: --model_args model=<spec> "
                             "(builtin:countdown, llada-8b-instruct, dream:<hub id or dir>...)")
        strategy = ALIASES.get(str(strategy), str(strategy))
        if strategy not in STRATEGIES:
            raise InputError(f"unknown strategy {strategy!r}; choose one of: "
                             f"{', '.join(STRATEGIES)} (aliases: {', '.join(ALIASES)})")
        load = {k: options.pop(k) for k in list(options) if k in LOAD_OPTIONS}
        load = {k: v for k, v in load.items() if v is not None}
        for k in HARNESS_OPTIONS:
            options.pop(k, None)
        unknown = sorted(set(options) - set(CONFIG_FIELDS))
        if unknown:
            raise InputError(f"unknown model_args: {', '.join(unknown)}; known: model, strategy, "
                             f"task, trace_dir, {', '.join(LOAD_OPTIONS)}, "
                             f"{', '.join(CONFIG_FIELDS)}")
        self.config = GenerationConfig(**options)  # validated: a bad value says what is allowed
        if "trust_remote_code" in load and not isinstance(load["trust_remote_code"], bool):
            raise InputError("trust_remote_code must be true or false, "
                             f"got {load['trust_remote_code']!r}")
        self.model = load_model(str(model), **load)
        self.strategy = strategy
        if task is None:
            own = self.model.name.split(":", 1)[1] if self.model.builtin else None
            task = own if own in TASKS else "text"
        self.task = get_task(str(task))
        self.trace_dir = Path(trace_dir) if trace_dir else None
        self._index = None
        if self.trace_dir is not None:
            try:
                self.trace_dir.mkdir(parents=True, exist_ok=True)
                self._index = self.trace_dir / "index.jsonl"
                self._index.write_text("")
            except OSError as exc:
                raise InputError(f"trace_dir={str(trace_dir)[:120]}: cannot write there "
                                 f"({exc.strerror or exc}); give a folder you can write") \
                    from None
        self._warned: set[str] = set()
        #: each request's cost (medal.cost), in order; also in the trace index rows
        self.costs: list[dict] = []
        # the instruct model's adapter applies its chat template unless lm-eval does
        self._harness_chat = False

    # ------------------------------------------------------------------ construction
    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """``--model_args`` as lm-eval's command line gives them: parsed here, so a bad
        string is an :class:`InputError` (one error line), not a traceback."""
        from lm_eval import utils
        try:
            args = utils.simple_parse_args_string(arg_string or "")
        except Exception as exc:
            raise InputError(f"--model_args {str(arg_string)[:80]!r} is not key=value,"
                             f"key=value... ({type(exc).__name__}: {str(exc)[:120]})") from None
        return cls.create_from_arg_obj(args, additional_config)

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: dict | None = None):
        """lm-eval's own options (``--device``, ``--batch_size``...) combined with
        ``--model_args`` as docs/LM_EVAL.md says: ``device=`` in --model_args is the same
        as ``--device``, and wins when both are given (lm-eval passed both as keywords:
        "got multiple values for keyword argument 'device'")."""
        if not isinstance(arg_dict, dict):
            raise InputError("--model_args are key=value pairs")
        extra = {k: v for k, v in (additional_config or {}).items() if v is not None}
        if "device" in extra and "device" not in arg_dict:
            extra["device"] = harness_device(extra["device"])
        merged = {**extra, **arg_dict}
        bad = [k for k in merged if not isinstance(k, str) or not k.isidentifier()]
        if bad:
            raise InputError(f"--model_args: {str(bad[0])[:40]!r} is not an option name; "
                             "known: model, strategy, task, trace_dir, a GenerationConfig "
                             "field or a loading option")
        try:
            return cls(**merged)
        except InputError:
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            raise InputError(f"--model_args: {type(exc).__name__}: {str(exc)[:200]}") from None

    # ------------------------------------------------------------------ requests
    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise unsupported("loglikelihood", requests)

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise unsupported("loglikelihood_rolling", requests)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        out = []
        repeats: Counter = Counter()
        bar = tqdm(requests, desc=f"medal {self.strategy}", unit="request",
                   disable=disable_tqdm or self.rank != 0)
        for req in bar:
            context, gen_kwargs = req.args
            gen_kwargs = dict(gen_kwargs or {})
            repeat = repeats[id(req)]
            repeats[id(req)] += 1
            doc_id = req.doc_id if req.doc_id is not None else req.idx
            config = self.request_config(doc_id, repeat, gen_kwargs)
            try:
                run = Run(self.model, task=self.task, prompt=context, strategy=self.strategy,
                          config=config, trace=self.trace_dir is not None)
                result = run.finish()
            except InputError as exc:
                raise InputError(f"request {doc_id} of {req.task_name}: {exc}") from None
            text = stop_at(result.text, gen_kwargs.get("until"))
            self.costs.append(result.cost())
            if self.trace_dir is not None:
                self._write_trace(req, doc_id, repeat, run, text)
            self.cache_hook.add_partial("generate_until", req.args, text)
            out.append(text)
        if self.costs:
            total = {k: sum(c[k] for c in self.costs)
                     for k in ("model_calls", "sequence_forwards", "token_passes",
                               "valid_tokens")}
            tpf = total["valid_tokens"] / total["sequence_forwards"] \
                if total["sequence_forwards"] else None
            log.info("medal cost over %d requests (medal.cost): %s; TPF %s", len(self.costs),
                     total, f"{tpf:.3f}" if tpf is not None else "n/a")
        return out

    def request_config(self, doc_id: int, repeat: int, gen_kwargs: dict) -> GenerationConfig:
        """The run's config for one request: the seed ``seed + doc_id`` (repeats after the
        first further apart), the answer capped at the request's ``max_gen_toks``."""
        seed = (self.config.seed + int(doc_id) + repeat * REPEAT_SEED_STRIDE) % SEED_MODULUS
        config = replace(self.config, seed=seed)
        ignored = sorted(set(gen_kwargs) - {"until", "max_gen_toks", "do_sample", "temperature"})
        sampling = gen_kwargs.get("do_sample") or gen_kwargs.get("temperature")
        if sampling and "sampling" not in self._warned:
            self._warned.add("sampling")
            log.warning("the task asks for sampling (%s); MEDAL decodes as its strategy and "
                        "model_args say (temperature=%s): set temperature in --model_args",
                        {k: gen_kwargs.get(k) for k in ("do_sample", "temperature")},
                        self.config.temperature)
        if ignored and "ignored" not in self._warned:
            self._warned.add("ignored")
            log.warning("generation options not used by MEDAL: %s", ", ".join(ignored))
        return self.capped(config, gen_kwargs.get("max_gen_toks"))

    def capped(self, config: GenerationConfig, max_gen_toks) -> GenerationConfig:
        """``config`` with the answer no longer than ``max_gen_toks`` slots. A block
        length that no longer divides the answer shortens it to whole blocks (or to one
        block); set steps keep their slots-per-step rate."""
        if max_gen_toks is None:
            return config
        if type(max_gen_toks) is not int or max_gen_toks < 1:
            raise InputError(f"max_gen_toks must be a whole number >= 1, got {max_gen_toks!r}")
        length = config.gen_length or self.model.default_gen_length
        if max_gen_toks >= length:
            return config
        new = max_gen_toks
        block = config.block_length
        if block is not None:
            if new >= block:
                new -= new % block
            else:
                block = new
        steps = config.steps
        if steps is not None:
            blocks = new // (block or new)
            steps = max(blocks, min(new, -(-steps * new // length)))
            steps += -steps % blocks
        if "cap" not in self._warned:
            self._warned.add("cap")
            log.warning("the task's max_gen_toks (%d) caps gen_length %d to %d", max_gen_toks,
                        length, new)
        return replace(config, gen_length=new, block_length=block, steps=steps)

    # ------------------------------------------------------------------ traces
    def trace_path(self, task_name: str | None, doc_id: int, repeat: int = 0) -> Path:
        """Where request ``doc_id`` of ``task_name`` writes its trace: named by the task
        and the doc id that lm-eval's ``--log_samples`` records for the sample."""
        name = f"{task_name or 'task'}-doc{doc_id}" + (f"-repeat{repeat}" if repeat else "")
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        return self.trace_dir / f"{safe}.trace.json"

    def _write_trace(self, req, doc_id: int, repeat: int, run: Run, response: str) -> None:
        from ..trace import write_trace
        path = self.trace_path(req.task_name, doc_id, repeat)
        write_trace(run.trace, path)
        with open(self._index, "a") as fh:
            fh.write(json.dumps({"task": req.task_name, "doc_id": doc_id, "repeat": repeat,
                                 "strategy": self.strategy, "seed": run.config.seed,
                                 "trace": path.name, "response": response,
                                 "cost": self.costs[-1] if self.costs else None}) + "\n")

    # ------------------------------------------------------------------ chat templates
    @property
    def tokenizer_name(self) -> str:
        return self.model.name.replace("/", "__")

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        template = getattr(getattr(self.model, "tokenizer", None), "chat_template", None)
        return template if isinstance(template, str) else None

    def apply_chat_template(self, chat_history, add_generation_prompt: bool = True) -> str:
        """lm-eval's ``--apply_chat_template``: the model's own template renders the
        messages, and the adapter then reads the prompt as it is (no second template)."""
        if self.chat_template() is None:
            raise InputError(f"{self.model.name} has no chat template; run without "
                             "--apply_chat_template (instruct models' adapters apply their "
                             "template themselves)")
        if hasattr(self.model, "chat"):
            self.model.chat = False
        self._harness_chat = True
        return self.model.tokenizer.apply_chat_template(
            chat_history, tokenize=False, add_generation_prompt=add_generation_prompt)

    def get_model_info(self) -> dict:
        """Recorded in lm-eval's results (``config``)."""
        return {"medal_version": __version__, "medal_model": self.model.name,
                "medal_strategy": self.strategy, "medal_task": self.task.name,
                "medal_config": self.config.to_json(),
                "medal_chat_template_by": "lm-eval" if self._harness_chat else "medal adapter"}


def register() -> None:
    """Register :class:`MedalLM` as lm-eval's ``medal`` model (once; a registration from
    the ``lm_eval.models`` entry point that names this class is left as it is)."""
    import lm_eval.models  # noqa: F401  lm-eval's own models first: its get_model imports
    #                        them only into an empty registry
    try:
        existing = get_model(NAME)
    except ValueError:  # lm-eval's answer for a name it does not know
        register_model(NAME)(MedalLM)
        return
    if existing is not MedalLM:
        raise InputError(f"lm-eval already has a model named {NAME!r} ({existing!r})")


register()
