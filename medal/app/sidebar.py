"""The Run page's sidebar settings: a model from the operator's list, the task, the prompt,
the strategy and one widget for every setting (:data:`medal.config.SETTINGS`)."""
from __future__ import annotations

import streamlit as st

from .. import serving
from ..engine import STRATEGIES
from ..errors import MedalError
from ..tasks import TASKS
from .controller import PARAMETERS, prompt_note
from ..views.safe import md
from .session import DEFAULT_MODEL, DEVICES, DTYPES, STATE, K, index_of, serving_settings


def cached_model(spec: str, options: tuple):
    """The model, loaded once for every session: in the server's own cache, which a
    visitor's ``clear_cache`` message does not reach (st.cache_resource's would)."""
    key = (spec, options)
    if key not in serving.MODEL_CACHE:
        with st.spinner("Loading the model…"):
            return serving.MODEL_CACHE.get(
                key, lambda: serving.load_allowed_model(serving_settings(), spec, dict(options)))
    return serving.MODEL_CACHE.get(key, lambda: None)


def load_model_or_error(spec: str, options: dict):
    """The model, or None after showing why it could not be loaded (one message for a
    model that is not on the list and one that fails: the page reveals no server files)."""
    try:
        return cached_model(serving.check_model(serving_settings(), spec), tuple(sorted(options.items())))
    except MedalError as exc:
        st.error(md(f"Could not load the model: {exc}"))
    return None


def model_settings(sb) -> tuple[str, dict]:
    """The sidebar's model section: a model from the operator's list, device and dtype;
    a read-only line says whether remote code is allowed."""
    sb.subheader("Model")
    allowed = serving_settings().models
    if STATE.get(K("w_model")) not in allowed:
        STATE[K("w_model")] = DEFAULT_MODEL if DEFAULT_MODEL in allowed else allowed[0]
    spec = sb.selectbox("Model", allowed, key=K("w_model"), index=index_of(allowed, "w_model"),
                        help="The models this server offers: the built-in tiny models (CPU) "
                             "and any the operator added (MEDAL_MODELS).")
    sb.caption(serving_settings().remote_code_line())
    with sb.expander("Loading options (transformers models)"):
        device = st.selectbox("Device", DEVICES, key=K("w_device"),
                              index=index_of(DEVICES, "w_device"),
                              help="auto: CUDA if present, else CPU.")
        dtype = st.selectbox("Weights dtype", DTYPES, key=K("w_dtype"),
                             index=index_of(DTYPES, "w_dtype"),
                             help="auto: bfloat16 on a GPU, float32 on the CPU.")
    return spec, serving.load_options(serving_settings(), device, dtype)


def _use_example() -> None:
    STATE[K("w_prompt")] = STATE[K("w_example")]


def example_prompts(task, spec: str) -> list[str]:
    """The task's example prompts in every prompt template the chosen model reads: a
    built-in model, those it was trained on (``builtin:<task>-2t``: both); any other
    model, all of them (an LLM reads any text)."""
    from ..models.builtin import models_for_template
    spec = spec.strip()
    templates = [t for t in range(task.prompt_templates)
                 if t == 0 or not spec.startswith("builtin:")
                 or spec in models_for_template(task.name, t)]
    return [task.templated_prompt(p, t) for t in templates for p in task.example_problems]


def _task_changed() -> None:
    """A new task: its first example prompt, and its built-in model if one was in use (the
    one trained on both prompt templates when that kind was in use)."""
    task = TASKS[STATE[K("w_task")]]
    first = task.format_prompt(task.example_problems[0])
    STATE[K("w_example")] = STATE[K("w_prompt")] = first
    current = STATE.get(K("w_model"), "").strip()
    if current.startswith("builtin:"):
        offered = serving_settings().models
        for name in ([f"builtin:{task.name}-2t"] if current.endswith("-2t") else []) + \
                [f"builtin:{task.name}"]:
            if name in offered:
                STATE[K("w_model")] = name
                break


def _number_widget(p, container):
    """The widget of parameter ``p``, its current value as its default (see :func:`K`)."""
    name = f"w_{p.name}"
    key, value = K(name), STATE.get(K(name), p.default)
    if p.kind == "bool":
        return container.checkbox(p.label, value=bool(value), key=key, help=p.help)
    if p.kind == "optional_bool":
        options = (None, True, False)
        return container.selectbox(p.label, options, index=index_of(options, name), key=key,
                                   help=p.help,
                                   format_func=lambda v: {None: "default", True: "on",
                                                          False: "off"}[v])
    if p.kind == "choice":
        return container.selectbox(p.label, p.choices, index=index_of(p.choices, name),
                                   key=key, help=p.help)
    if p.kind == "float":
        return container.number_input(p.label, min_value=p.min_value, step=p.step or 0.1,
                                      value=None if value is None else float(value),
                                      key=key, help=p.help, format="%.3f")
    low = None if p.min_value is None else int(p.min_value)
    return container.number_input(p.label, min_value=low, step=1, key=key, help=p.help,
                                  value=None if value is None else int(value),
                                  placeholder="default" if p.kind == "optional_int" else None)


def sidebar_settings() -> dict:
    sb = st.sidebar
    spec, options = model_settings(sb)
    sb.subheader("Task and prompt")
    task_name = sb.selectbox("Task", list(TASKS), key=K("w_task"), on_change=_task_changed,
                             index=index_of(TASKS, "w_task"),
                             help="How a prompt is formatted and an answer verified.")
    task = TASKS[task_name]
    examples = example_prompts(task, spec)
    if STATE.get(K("w_example")) not in examples:
        STATE[K("w_example")] = examples[0]
    sb.selectbox("Example prompts", examples, key=K("w_example"), on_change=_use_example,
                 index=index_of(examples, "w_example"))
    if K("w_prompt") not in STATE:
        STATE[K("w_prompt")] = examples[0]
    prompt = sb.text_area("Prompt", key=K("w_prompt"), height=80, value=STATE[K("w_prompt")],
                          help="Pick an example above or write your own.")
    note = prompt_note(task_name, prompt)
    if note:
        sb.warning(note)
    strategy = sb.selectbox("Strategy", list(STRATEGIES), key=K("w_strategy"),
                            index=index_of(STRATEGIES, "w_strategy"),
                            help="medal: MCTS initialisation + phase C. The others are the "
                                 "paper's baselines and ablations.")
    groups = {"search": sb.expander("Search parameters (MEDAL)", expanded=True),
              "decoding": sb.expander("Decoding parameters"),
              "prompt": sb.expander("Decomposition and seed")}
    params = {p.name: _number_widget(p, groups[p.group]) for p in PARAMETERS}
    return {"model": spec, "load_options": options, "task": task_name, "prompt": prompt,
            "strategy": strategy, "params": params}


def settings_key(settings: dict) -> str:
    return repr(sorted((k, repr(v)) for k, v in settings.items()))
