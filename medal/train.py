"""Train a built-in tiny diffusion LM with the masked-diffusion objective.

    python -m medal train --task countdown --steps 3000 --seed 0 --out medal/assets/countdown
    python -m medal train --task sudoku --out medal/assets/sudoku ...   (see its config.json)

Training data is generated on the fly (never the same problem list twice), so the
model is judged on problems it has not memorised.
"""
from __future__ import annotations

import math
import random
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm

from .errors import InputError
from .models.tiny import CharTokenizer, TinyConfig, TinyDLM, masked_diffusion_loss, save_checkpoint
from .tasks import (TASKS, avoid_training_example, countdown_training_example,
                    pick_training_example, sudoku_training_example,
                    twins_training_example)

EXAMPLE_MAKERS = {"countdown": countdown_training_example, "sudoku": sudoku_training_example,
                  "pick": pick_training_example, "twins": twins_training_example,
                  "avoid": avoid_training_example}
#: task -> (prompt_length, answer_length) used when train() is not given them
DEFAULT_LENGTHS = {"countdown": (24, 28), "sudoku": (26, 19), "pick": (32, 8), "twins": (41, 8),
                   "avoid": (44, 8)}


def encode_example(tok: CharTokenizer, cfg: TinyConfig, prompt: str, answer: str):
    p, a = tok.encode(prompt), tok.encode(answer)
    if len(p) > cfg.prompt_length or len(a) > cfg.answer_length:
        raise InputError(f"example too long for the model: {prompt!r} -> {answer!r}")
    return ([tok.pad_id] * (cfg.prompt_length - len(p)) + p,
            a + [tok.eos_id] * (cfg.answer_length - len(a)))


def _own_templates(task: str) -> int:
    """The templates a task's training data has without ``--templates``: Avoid's model
    always trains on both of its own; every other task's, on its own form."""
    return TASKS[task].prompt_templates if task == "avoid" else 1


def check_templates(task: str, templates: int | None) -> int:
    """How many prompt templates a model trained with ``--templates`` reads, or an
    InputError naming the task's range (Avoid: 2 only), or the tasks there is data for."""
    if task not in EXAMPLE_MAKERS:
        raise InputError(f"no training data generator for task {task!r}; "
                         f"choose one of: {', '.join(EXAMPLE_MAKERS)}")
    if templates is None:
        return _own_templates(task)
    # one example from a throwaway stream: the task's data function names a refused
    # value (its range; Avoid's 2 only) before any step
    EXAMPLE_MAKERS[task](random.Random(0), templates=templates)
    return templates


def train(task: str = "countdown", out: str | Path = "medal/assets/countdown", steps: int = 3000,
          batch_size: int = 128, lr: float = 1.5e-3, seed: int = 0, n_layer: int = 4,
          n_embd: int = 128, n_head: int = 4, prompt_length: int | None = None,
          answer_length: int | None = None, threads: int | None = None,
          decompose_share: float | None = None, four_share: float | None = None,
          uniform_target_share: float | None = None, canonical_answers: bool = False,
          init: str | Path | None = None, bf16: bool = False,
          templates: int | None = None, log_every: int = 100) -> dict:
    """Train (or, with ``init``, go on training) a built-in model and save it to ``out``.

    ``init`` starts from an existing checkpoint (its architecture wins; the width/layer
    arguments must agree with it) and records the earlier stages' commands and times in
    the new checkpoint, so the whole recipe stays reproducible.

    ``bf16`` runs the forward and backward under bfloat16 autocast (the weights, the
    optimizer and the loss stay float32). On a CPU with native bfloat16 (AVX-512 BF16,
    AMX) a step takes about 0.7x the time; elsewhere it may be slower. The saved weights
    are float32 either way.

    ``templates``: train on the task's first ``templates`` prompt templates, each example's
    drawn uniformly (default: 1, the task's own form, on the data stream the shipped models
    were trained on; Avoid always trains on its 2). The checkpoint records it
    (``training.templates``) and a run in another template is refused."""
    if task not in EXAMPLE_MAKERS:
        raise InputError(f"no training data generator for task {task!r}; "
                         f"choose one of: {', '.join(EXAMPLE_MAKERS)}")
    default_prompt, default_answer = DEFAULT_LENGTHS[task]
    prompt_length = prompt_length or default_prompt
    answer_length = answer_length or default_answer
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    tok = CharTokenizer()
    cfg = TinyConfig(vocab_size=len(tok), prompt_length=prompt_length,
                     answer_length=answer_length, n_layer=n_layer, n_head=n_head, n_embd=n_embd)
    previous_stages: list[dict] = []
    if init is not None:
        from .models.tiny import load_checkpoint
        model, meta = load_checkpoint(init)
        if (model.cfg.n_layer, model.cfg.n_embd, model.cfg.n_head, model.cfg.prompt_length,
                model.cfg.answer_length) != (n_layer, n_embd, n_head, prompt_length, answer_length):
            raise InputError(f"--init {init}: its model is {model.cfg.n_layer} layers x "
                             f"{model.cfg.n_embd} wide ({model.cfg.prompt_length}+"
                             f"{model.cfg.answer_length} tokens); pass the same --layers, "
                             "--width and lengths")
        model.train()
        old = meta.get("training", {})
        previous_stages = old.pop("stages", []) + [old]
    else:
        model = TinyDLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98))
    warmup = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))))
    gen = torch.Generator().manual_seed(seed)
    make = EXAMPLE_MAKERS[task]
    data_options = {}
    if task == "countdown":
        # shares of the training prompts that ask for the step form / use four numbers
        for name, value in (("p_decompose", decompose_share), ("p_four", four_share),
                            ("p_uniform_target", uniform_target_share)):
            if value is not None:
                if not 0.0 <= value <= 1.0:
                    raise InputError(f"{name.replace('p_', '--').replace('_', '-')}-share must lie "
                                     f"in 0..1, got {value}")
                data_options[name] = value
        if canonical_answers:
            if not uniform_target_share:
                raise InputError("--canonical-answers answers the test-like problems; give it "
                                 "with --uniform-target-share above 0")
            data_options["canonical"] = True
    elif any(v is not None for v in (decompose_share, four_share, uniform_target_share)) \
            or canonical_answers:
        raise InputError("--decompose-share, --four-share, --uniform-target-share and "
                         "--canonical-answers are Countdown training options")
    trained_templates = check_templates(task, templates)
    if templates is not None and templates != _own_templates(task):
        data_options["templates"] = templates
    t0, cpu0, losses = time.time(), time.process_time(), []
    bar = tqdm(range(steps), desc=f"train {task}", unit="step")
    for step in bar:
        rows = [encode_example(tok, cfg, *make(rng, max_answer=answer_length, **data_options))
                for _ in range(batch_size)]
        prompts = torch.tensor([r[0] for r in rows])
        answers = torch.tensor([r[1] for r in rows])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = masked_diffusion_loss(model, answers, prompts, tok.mask_id, generator=gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if (step + 1) % log_every == 0:
            bar.set_postfix(loss=f"{sum(losses[-log_every:]) / log_every:.3f}")
    seconds = time.time() - t0
    # the CPU time of this process: on a shared machine the wall time also counts the
    # other programs' turns on the cores
    cpu_seconds = time.process_time() - cpu0
    info = {"task": task, "training": {
        "steps": steps, "batch_size": batch_size, "lr": lr, "seed": seed,
        "data_options": data_options, "templates": trained_templates, "bf16": bf16,
        "seconds": round(seconds, 1), "cpu_seconds": round(cpu_seconds, 1),
        "threads": torch.get_num_threads(),
        "final_loss": round(sum(losses[-log_every:]) / min(log_every, len(losses)), 4),
        "parameters": model.n_params(),
        "command": (f"python -m medal train --task {task} --steps {steps} --batch-size {batch_size} "
                    f"--lr {lr} --seed {seed} --layers {n_layer} --width {n_embd} "
                    f"--prompt-length {prompt_length} --answer-length {answer_length} "
                    + (f"--decompose-share {decompose_share} " if decompose_share is not None else "")
                    + (f"--four-share {four_share} " if four_share is not None else "")
                    + (f"--uniform-target-share {uniform_target_share} "
                       if uniform_target_share is not None else "")
                    + ("--canonical-answers " if canonical_answers else "")
                    + (f"--templates {templates} " if templates is not None else "")
                    + (f"--init {init} " if init is not None else "")
                    + ("--bf16 " if bf16 else "")
                    + (f"--threads {threads} " if threads else "") + f"--out {out}"),
    }}
    if previous_stages:
        info["training"]["stages"] = previous_stages
        info["training"]["total_seconds"] = round(
            seconds + sum(st.get("seconds", 0) for st in previous_stages), 1)
    save_checkpoint(model, out, info)
    return info
