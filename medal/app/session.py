"""What a browser session of the Run page keeps: every setting's widget key and saved value
(Streamlit forgets a widget's value when it is not drawn), and the operator's settings."""
from __future__ import annotations

import streamlit as st

from .. import models, serving
from ..tasks import TASKS
from .controller import PARAMETERS

DEFAULT_MODEL = models.DEFAULT_MODEL
DEVICES = tuple(models.DEVICES)
DTYPES = tuple(models.DTYPE_CHOICES)


def serving_settings() -> serving.Settings:
    """The operator's settings (medal/serving.py: environment or flags at start): which
    models a visitor may load, whether remote code may run, the limits -- never a widget's."""
    return serving.current()


# Streamlit forgets a page's widget values when the widget is not drawn (another page, the
# other source); every setting is copied into ``saved_widgets`` and restored from it.
DEFAULT_MODEL = getattr(models, "DEFAULT_MODEL", "builtin:countdown")


DEVICES = tuple(getattr(models, "DEVICES", ("auto",)))


DTYPES = tuple(getattr(models, "DTYPE_CHOICES", ("auto",)))


WIDGET_DEFAULTS = {"w_model": DEFAULT_MODEL, "w_task": next(iter(TASKS)),
                   "w_device": "auto", "w_dtype": "auto",
                   "w_strategy": "medal", "w_source": "Live run",
                   **{f"w_{p.name}": p.default for p in PARAMETERS}}


STATE = st.session_state


def K(name: str) -> str:
    """The widget key of setting ``name`` in this generation of the sidebar.

    A browser that comes back to the settings after they were not drawn (another source,
    another page) kept stale widget states for the old keys and showed every number at its
    minimum (K1=1, c=0, an empty prompt...), and a run used them (issue 18 #1). So each
    time the settings reappear they get fresh keys, their values from ``saved_widgets``.

    Every setting's widget is also given its value as its default (``value=``/``index=``):
    a value written into the session state reaches the browser once, with the first run
    that draws the widget under its key; a later run sends only the widget's default. When
    another run followed at once (the viewer asks for its data as it mounts) the browser
    could build the widget from the later run and show the default -- a number input's
    minimum: "N subtasks" came back as 1 after Uploaded trace -> Benchmark -> Live run
    (issue 18) -- and then send that back. With the value as the default, every run's
    widget carries it."""
    if name == "w_source":
        return name
    gen = STATE.get("settings_gen", 0)
    return name if gen == 0 else f"{name}~{gen}"


def new_generation_if_away() -> None:
    """A new key generation when the settings were not drawn in the Run page's previous
    run, or another page ran since (``medal.app.left_run_page``)."""
    runs = STATE.get("run_page_runs", 0)
    drawn = STATE.get("settings_drawn_at")
    away = STATE.pop("away_from_run_page", False)
    if drawn is not None and (away or drawn != runs - 1):
        STATE["settings_gen"] = STATE.get("settings_gen", 0) + 1


def restore_widgets() -> None:
    saved = STATE.setdefault("saved_widgets", {})
    for key, default in WIDGET_DEFAULTS.items():
        if K(key) not in STATE:
            STATE[K(key)] = saved.get(key, default)
    for key in ("w_prompt", "w_example"):
        if K(key) not in STATE and saved.get(key) is not None:
            STATE[K(key)] = saved[key]


def index_of(options, name: str) -> int:
    """The position of setting ``name``'s value among ``options`` (0 when absent)."""
    options = list(options)
    value = STATE.get(K(name))
    return options.index(value) if value in options else 0


def save_widgets() -> None:
    """Merge (never replace): the settings of the source not shown stay saved."""
    saved = STATE.setdefault("saved_widgets", {})
    for key in (*WIDGET_DEFAULTS, "w_prompt", "w_example"):
        if K(key) in STATE:
            saved[key] = STATE[K(key)]
