"""What a served app lets its visitors do: the operator's settings, never a visitor's.

The person who starts the server decides, through environment variables or flags after
``--`` on the ``streamlit run`` line (flags win)::

    MEDAL_TRUST_REMOTE_CODE=1          --trust-remote-code     let LLaDA/Dream checkpoint code run
    MEDAL_MODELS=llada:/srv/llada,...   --models SPEC,SPEC      model specs visitors may pick,
                                                               besides the built-in models
    MEDAL_MAX_GEN_LENGTH=256            --max-gen-length N      largest answer (slots)
    MEDAL_MAX_ITERATIONS=500            --max-iterations N      most MCTS iterations per run
    MEDAL_MAX_SAMPLES=10                --max-samples N         most Best-of-N samples per run
    MEDAL_MAX_PROBLEMS=50               --max-problems N        most problems per benchmark request
    MEDAL_MAX_K1=20                     --max-k1 N              K1: most tokens kept per slot
    MEDAL_MAX_K2=20                     --max-k2 N              K2: most children per expansion
    MEDAL_MAX_CANDIDATES=20             --max-candidates N      C: most candidates per search
    MEDAL_MAX_LC=64                     --max-lc N              L_c: most slots the search commits
    MEDAL_MAX_TRACE_MB=20               --max-trace-mb N        largest trace upload (MiB); the
                                                               uploader's server.maxUploadSize
                                                               follows it
    MEDAL_RUN_CPU_SECONDS=120           --run-cpu-seconds N     CPU seconds one run may use
    MEDAL_RUN_MEMORY_MB=512             --run-memory-mb N       memory one run's search may hold (MiB)
    MEDAL_SERVER_MEMORY_MB=4096         --server-memory-mb N    runs pause while the server holds more
    MEDAL_IMPLEMENTATION=native         (env only, for now)     LLaDA/Dream on MEDAL's own code
                                                               (default) or "remote": the
                                                               checkpoint's code (needs the
                                                               remote-code setting above)

Unknown flags are an error (a typo would otherwise leave a limit at its default).

e.g. ``MEDAL_MODELS=llada:/srv/llada@abc123 streamlit run app.py -- --trust-remote-code``.

A visitor picks a model from that list (a selectbox, never a path or a free spec), sees
whether remote code is allowed (read-only), and runs within the limits. A spec that is
not on the list and one that fails to load give the same message, so the page tells a
visitor nothing about the server's files; the operator finds the reason in the server log.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass, field

from .config import SETTINGS
from .errors import InputError, ModelLoadError

ENV_TRUST = "MEDAL_TRUST_REMOTE_CODE"
ENV_MODELS = "MEDAL_MODELS"
#: The operator's caps on what a visitor may ask of one run, built from the settings that
#: declare one (``limit`` on a GenerationConfig field, :class:`medal.config.Setting`): the
#: limit ``max_<name>`` (``max_gen_length``, ``max_k2``, ...), its environment variable
#: ``MEDAL_MAX_<NAME>`` (``max_iterations`` keeps its name), its default, and its ceiling -- the engine's own range.
CONFIG_LIMITS = {(st.name if st.name.startswith("max_") else f"max_{st.name}"): st
                 for st in SETTINGS if st.limit is not None}
#: the server's other limits: (environment variable, default, ceiling)
_OTHER_LIMITS = {"max_problems": ("MEDAL_MAX_PROBLEMS", 50, 100_000),
                 "max_trace_mb": ("MEDAL_MAX_TRACE_MB", 20, 1024),
                 "run_cpu_seconds": ("MEDAL_RUN_CPU_SECONDS", 120, 86_400),
                 "run_memory_mb": ("MEDAL_RUN_MEMORY_MB", 512, 1_048_576),
                 "server_memory_mb": ("MEDAL_SERVER_MEMORY_MB", 4096, 4_194_304)}
LIMIT_ENV = {**{key: "MEDAL_" + key.upper() for key in CONFIG_LIMITS},
             **{key: env for key, (env, _, _) in _OTHER_LIMITS.items()}}
#: safe defaults: a run of the built-in models stays within seconds on a laptop core
#: (docs/SERVING.md, "Budgets", has the figures measured with them)
DEFAULT_LIMITS = {**{key: st.limit[0] for key, st in CONFIG_LIMITS.items()},
                  **{key: default for key, (_, default, _) in _OTHER_LIMITS.items()}}
#: the largest value an operator may set (for a setting: the engine's own range)
LIMIT_CEILINGS = {**{key: int(st.high) for key, st in CONFIG_LIMITS.items()},
                  **{key: ceiling for key, (_, _, ceiling) in _OTHER_LIMITS.items()}}
#: Streamlit's options for this app (the same as the checkout's .streamlit/config.toml, which
#: an installed package does not have): given as flags by ``medal app``
STREAMLIT_OPTIONS = {
    "browser.gatherUsageStats": "false",  # offline: nothing is sent outside the machine
    "server.headless": "true",
    "server.address": "localhost",        # bound to this machine unless the operator says
    # megabytes of 10**6 bytes (the uploader's unit): upload_mb(MAX_TRACE_BYTES), so the
    # uploader never refuses a trace the gate accepts; the gate says the exact limit
    "server.maxUploadSize": 21,
    "server.runOnSave": "false",
    "client.toolbarMode": "minimal",
    "client.showErrorDetails": "none",    # visitors never see a traceback or server paths
    "global.showWarningOnDirectExecution": "false",
    # the Run page gives each setting's widget its value both in the session state and as
    # its default (medal/app/pages/run.py, K): on purpose, so no log warning about it
    "global.disableWidgetStateDuplicationWarning": "true",
    # no full garbage collection after every script run: it held the GIL 150-250 ms with a
    # model and a run in memory, and a live step's new frames waited for it (issue 18)
    "runner.postScriptGC": "false",
    "theme.base": "light",
    # a closed tab's session (its run, its uploads) is dropped 10 s after it disconnects
    # (Streamlit's default keeps it 120 s)
    "server.disconnectedSessionTTL": 10,
}
UNAVAILABLE = ("model {spec!r} is not available on this server; pick one of the models "
               "listed (the person running the server chooses them)")
TRUE = ("1", "true", "yes", "on")
log = logging.getLogger("medal.serving")


@dataclass(frozen=True)
class Settings:
    trust_remote_code: bool = False
    extra_models: tuple[str, ...] = ()
    limits: dict = field(default_factory=lambda: dict(DEFAULT_LIMITS))

    @property
    def max_trace_bytes(self) -> int:
        """The one trace size limit: the gate's, the CLI's and (rounded up to the
        uploader's megabytes) the web uploader's."""
        return self.limits["max_trace_mb"] * 2 ** 20

    @property
    def models(self) -> tuple[str, ...]:
        """The specs a visitor may pick: the built-in models, then the operator's."""
        from .models import builtin_names
        out = [f"builtin:{n}" for n in builtin_names()]
        out += [s for s in self.extra_models if s not in out]
        return tuple(out)

    def remote_code_line(self) -> str:
        """The read-only line the page shows."""
        if self.trust_remote_code:
            return ("Remote model code: allowed by the server's operator (LLaDA/Dream "
                    "checkpoints on the list may run the Python code they ship).")
        return ("Remote model code: not allowed on this server (the operator can allow it "
                f"when starting it: {ENV_TRUST}=1).")


def upload_mb(max_bytes: int) -> int:
    """Streamlit's ``server.maxUploadSize`` for a limit of ``max_bytes``: its browser side
    counts a megabyte as 10**6 bytes, its server as 2**20; rounded up in the smaller unit,
    neither refuses what the trace gate (``max_bytes``) accepts, and a file between the
    two gets the gate's exact message."""
    return -(-max_bytes // 10 ** 6)


class _Strict(argparse.ArgumentParser):
    def error(self, message):
        raise InputError(f"operator flags: {message} (known: --trust-remote-code, --models, "
                         + ", ".join("--" + n.replace("_", "-") for n in LIMIT_ENV) + ")")


def _parser() -> argparse.ArgumentParser:
    p = _Strict(prog="streamlit run app.py --", add_help=False, allow_abbrev=False)
    p.add_argument("--trust-remote-code", action="store_true", default=None)
    p.add_argument("--models", default=None)
    for name in LIMIT_ENV:
        p.add_argument("--" + name.replace("_", "-"), dest=name, default=None)
    return p


def _limit(name: str, text: str) -> int:
    low, high = 1, LIMIT_CEILINGS[name]
    try:
        value = int(str(text).strip())
    except ValueError:
        raise InputError(f"{LIMIT_ENV[name]} / --{name.replace('_', '-')} must be a whole "
                         f"number from {low} to {high}, got {text!r}") from None
    if not low <= value <= high:
        raise InputError(f"{LIMIT_ENV[name]} / --{name.replace('_', '-')} must be from {low} "
                         f"to {high}, got {value}")
    return value


def parse_settings(environ=None, argv=None) -> Settings:
    """The operator's settings from ``environ`` (default: os.environ) and ``argv``
    (default: the script's arguments after ``--``); bad values raise InputError."""
    environ = os.environ if environ is None else environ
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)  # an unknown or misspelt flag is an error
    trust = (args.trust_remote_code if args.trust_remote_code is not None
             else environ.get(ENV_TRUST, "").strip().lower() in TRUE)
    models_text = args.models if args.models is not None else environ.get(ENV_MODELS, "")
    extra = tuple(dict.fromkeys(s.strip() for s in models_text.split(",") if s.strip()))
    limits = dict(DEFAULT_LIMITS)
    for name, env in LIMIT_ENV.items():
        text = getattr(args, name) if getattr(args, name) is not None else environ.get(env)
        if text is not None and str(text).strip():
            limits[name] = _limit(name, text)
    return Settings(trust_remote_code=trust, extra_models=extra, limits=limits)


def current() -> Settings:
    """The settings of this server process: the flags after ``--`` when Streamlit runs the
    app's script (``streamlit run app.py -- ...``, ``medal app ...``); in any other process
    (a test, a notebook) only the environment, as its arguments are not the operator's."""
    from pathlib import Path
    started = Path(sys.argv[0]).name in ("app.py", "main.py") if sys.argv else False
    return parse_settings(argv=None if started else [])


# ---------------------------------------------------------------------- models

def load_options(settings: Settings, device: str = "auto", dtype: str = "auto") -> dict:
    """Keyword options for ``load_model``: remote code only by the operator's setting;
    the revision is part of the operator's spec (``spec@commit``), never a visitor's."""
    options: dict = {}
    if settings.trust_remote_code:
        options["trust_remote_code"] = True
    if device and device != "auto":
        options["device"] = device
    if dtype and dtype != "auto":
        options["dtype"] = dtype
    return options


def check_model(settings: Settings, spec: str) -> str:
    """``spec`` if the operator allows it; otherwise the one 'not available' error."""
    spec = (spec or "").strip()
    if spec not in settings.models:
        raise ModelLoadError(UNAVAILABLE.format(spec=spec[:80]))
    return spec


def load_allowed_model(settings: Settings, spec: str, options: dict, loader=None):
    """Load an allowed model. Any failure -- not on the list, missing weights, a folder
    that does not exist, remote code refused -- raises the same ModelLoadError; the
    reason goes to the server log for the operator, not to the visitor's page."""
    spec = check_model(settings, spec)
    if loader is None:
        from .models import load_model as loader
    try:
        return loader(spec, **options)
    except Exception as exc:  # noqa: BLE001 -- any failure reads the same to a visitor
        log.warning("loading %s failed: %s: %s", spec, type(exc).__name__, exc)
        print(f"medal: loading {spec} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        raise ModelLoadError(UNAVAILABLE.format(spec=spec[:80])) from None


class ModelCache:
    """The loaded models, shared by every session (at most ``max_entries``, the least
    recently used dropped first). Not Streamlit's ``st.cache_resource``: any visitor's
    browser can send Streamlit a ``clear_cache`` message, which empties those caches for
    everyone; this one only the server's own code can clear."""

    def __init__(self, max_entries: int = 3):
        import threading
        from collections import OrderedDict
        self.max_entries = max_entries
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, make):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()   # outside the lock: loading may take a while
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key) -> bool:
        return key in self._items


MODEL_CACHE = ModelCache()
#: the frames of uploaded traces the viewer replays (same reason: out of visitors' reach)
FRAMES_CACHE = ModelCache(max_entries=8)


def give_back_memory() -> None:
    """Hand the heap pages a large parse freed back to the system. glibc keeps freed pages
    for its next allocations, so the memory a 20 MB upload's gate took stayed resident
    after the upload was refused or its session closed (issue 40); ``malloc_trim`` returns
    what is free. Elsewhere than glibc: nothing to do."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def forget_upload(file_id: str) -> None:
    """Drop an uploaded file's bytes from Streamlit's store once the page has read them.
    Streamlit keeps a session's uploads until the session shuts down, but a closed tab's
    session that expires from its store of disconnected sessions is dropped without
    shutting down (Streamlit 1.67: a TTLCache), so its uploads stayed in memory for good
    -- the served app grew by each upload's size (issue 40). The page keeps what it read
    (the checked trace, or why it was refused); the widget then reads as empty, which the
    page already handles (the trace stays loaded until another file is uploaded)."""
    try:
        from streamlit.runtime import Runtime
        from streamlit.runtime.scriptrunner import get_script_run_ctx
        ctx = get_script_run_ctx()
        if ctx is not None and Runtime.exists():
            Runtime.instance().uploaded_file_mgr.remove_file(ctx.session_id, file_id)
    except Exception as exc:  # noqa: BLE001 -- Streamlit's internals may move: never fail a page
        log.warning("could not drop the uploaded file %s: %s", file_id, exc)

# ---------------------------------------------------------------------- limits

def check_limits(settings: Settings, config) -> None:
    """Refuse a run beyond the operator's limits (InputError naming the limit)."""
    for key, st in CONFIG_LIMITS.items():
        value, cap = getattr(config, st.name), settings.limits[key]
        if value is not None and value > cap:
            raise InputError(f"{st.name} {value} is above this server's limit of {cap} "
                             f"{st.limit[1]} (set by the operator: {LIMIT_ENV[key]})")


def check_problems(settings: Settings, n: int) -> None:
    """Refuse a benchmark request with more problems than the operator allows."""
    if n > settings.limits["max_problems"]:
        raise InputError(f"{n} problems is above this server's limit of "
                         f"{settings.limits['max_problems']} per request (set by the "
                         f"operator: {LIMIT_ENV['max_problems']})")


def check_received_config(trace: dict, what: str = "medal repro", settings=None) -> None:
    """A received trace's run settings within this machine's limits (the same as the
    app's: :data:`medal.serving.DEFAULT_LIMITS`, or the operator's MEDAL_MAX_* settings),
    before anything runs: InputError naming the setting and how to raise the limit."""
    from .config import GenerationConfig
    settings = current() if settings is None else settings
    cfg = GenerationConfig.from_json(dict(trace["run"]["config"]))
    try:
        check_limits(settings, cfg)
    except InputError as exc:
        msg = str(exc).replace("this server's limit", "this machine's limit")
        raise InputError(f"{what}: the trace's settings are beyond this machine's limits: "
                         f"{msg}; a received trace runs within them (raise that limit for "
                         "this command if you mean it)") from None


# ---------------------------------------------------------------------- network

def keep_on_machine() -> None:
    """Stop Streamlit from looking up this machine's addresses on the internet.

    Streamlit asks checkip.amazonaws.com for the external IP (and 'connects' a UDP
    socket to 8.8.8.8 for the internal one) when it prints its URLs without a set
    ``server.address`` and when a WebSocket arrives from another origin. Filling its
    caches first makes both answer locally; ``.streamlit/config.toml`` sets
    ``server.address`` so that start-up never asks either."""
    try:
        from streamlit import net_util
    except ImportError:  # pragma: no cover
        return
    if getattr(net_util, "_external_ip", None) is None:
        net_util._external_ip = "127.0.0.1"
    if getattr(net_util, "_internal_ip", None) is None:
        net_util._internal_ip = "127.0.0.1"
