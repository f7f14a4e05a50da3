"""The load options of a model spec: their names, choices and command-line flags.
Torch-free, so a command's ``--help`` lists them without loading a network."""
from __future__ import annotations

DEFAULT_MODEL = "builtin:countdown"
LOAD_OPTIONS = ("trust_remote_code", "device", "dtype", "revision", "chat_template",
                "implementation", "mask_id", "memory_check", "kv_cache")
DEVICES = ("auto", "cpu", "cuda")
#: the weights' dtypes a user may name (``medal.models.hf.DTYPES`` maps them to torch's)
DTYPE_NAMES = ("float32", "bfloat16", "float16")
DTYPE_CHOICES = ("auto",) + DTYPE_NAMES
IMPLEMENTATIONS = ("native", "remote")
IMPLEMENTATION_ENV = "MEDAL_IMPLEMENTATION"


def add_model_arguments(parser) -> None:
    """The command-line flags that choose and load a model."""
    g = parser.add_argument_group("model")
    g.add_argument("--model", default=None,
                   help="model spec (default: the task's built-in model, builtin:<task>): builtin:<task>, llada:<hub id or dir>, dream:<hub id or "
                        "dir>, mlm:<hub id or dir>, hf:<hub id or dir> (family from its "
                        "config.json) (optionally @<revision>), or a shortcut: "
                        "llada-8b-instruct, llada-1.5, dream-7b-instruct")
    g.add_argument("--trust-remote-code", action="store_true",
                   help="allow LLaDA/LLaDA-MoE/Dream checkpoints to run the Python code they ship "
                        "(also: MEDAL_TRUST_REMOTE_CODE=1); read it first, pin --revision")
    g.add_argument("--device", choices=DEVICES, default="auto",
                   help="where the model runs (auto: CUDA if present, else CPU; the built-in "
                        "models stay on the CPU unless cuda is named)")
    g.add_argument("--dtype", choices=DTYPE_CHOICES, default="auto",
                   help="weights precision (auto: bfloat16 on a GPU, float32 on the CPU)")
    g.add_argument("--revision", default=None,
                   help="hub commit, branch or tag to load (same as spec@<revision>)")
    g.add_argument("--implementation", choices=IMPLEMENTATIONS, default=None,
                   help="LLaDA/LLaDA-MoE/Dream: native (default: MEDAL's own model code, no remote "
                        "code) or remote (the checkpoint's own code; needs "
                        f"--trust-remote-code); default also from {IMPLEMENTATION_ENV}")
    g.add_argument("--mask-id", type=int, default=None,
                   help="the mask token's id, when the checkpoint declares none or "
                        "declares conflicting ones; range 0..vocabulary size - 1")
    g.add_argument("--skip-memory-check", action="store_true",
                   help="load even if the memory estimate says the device is too small")
    g.add_argument("--kv-cache", choices=("off", "prefix", "dual"), default="off",
                   help="native LLaDA/Dream and the built-in models: Fast-dLLM's block KV "
                        "cache (APPROXIMATE: cached "
                        "keys/values of the prompt and earlier blocks, refreshed once a "
                        "block; dual also caches the later blocks). Off: exact "
                        "(docs/SPEED.md)")


def model_options(args) -> dict:
    """Keyword options for :func:`load_model` from parsed command-line flags."""
    return {"trust_remote_code": bool(getattr(args, "trust_remote_code", False)),
            "device": getattr(args, "device", "auto"),
            "dtype": getattr(args, "dtype", "auto"),
            "revision": getattr(args, "revision", None),
            "implementation": getattr(args, "implementation", None),
            "mask_id": getattr(args, "mask_id", None),
            "memory_check": not getattr(args, "skip_memory_check", False),
            "kv_cache": getattr(args, "kv_cache", "off")}
