import os
import sys
import tempfile
from pathlib import Path

# Checkpoint code that transformers runs as remote code is copied into a modules cache
# named by the checkpoint folder's name; each test process (an xdist worker) gets its own,
# so parallel workers never write the same files, and the user's ~/.cache stays clean.
# Set before anything imports transformers.
_PROCESS = os.environ.get("PYTEST_XDIST_WORKER", "main")
if os.environ.get("MEDAL_TEST_HF_MODULES_OF") != _PROCESS:  # not inherited from the controller
    os.environ["HF_MODULES_CACHE"] = tempfile.mkdtemp(prefix=f"medal-test-hf-modules-{_PROCESS}-")
    os.environ["MEDAL_TEST_HF_MODULES_OF"] = _PROCESS

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from medal.models.builtin import BuiltinModel  # noqa: E402
from medal.models.tiny import CharTokenizer, TinyConfig, TinyDLM  # noqa: E402
from scripted import ScriptedLM  # noqa: E402  (a helper module: tests import it from there)
from tiers import FAST_MODULES, is_fast  # noqa: E402

torch.set_num_threads(int(os.environ.get("MEDAL_TEST_THREADS", "1")))

@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``-m fast`` runs in one process (unless -n is given on the command line): on 2 cores
    two workers cost ~13 CPU-s more than they save of its wall time (each starts, imports
    torch and collects the tier; tests/tiers.py has the figures)."""
    if config.getoption("markexpr", "") == "fast" and not any(
            a == "-n" or a.startswith(("-n", "--numprocesses")) for a in config.invocation_params.args):
        config.option.numprocesses = 0
        config.option.dist = "no"


def pytest_ignore_collect(collection_path, config):
    """``-m fast``: a test module outside the tier is not even imported (the imports of
    the app's, the browser's and the packaging's tests cost the tier ~2 CPU-s a process;
    tests/tiers.py)."""
    if (config.getoption("markexpr", "") == "fast" and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_")
            and collection_path.stem not in FAST_MODULES):
        return True
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_fast(Path(str(item.fspath)).stem, item.name):
            item.add_marker(pytest.mark.fast)


@pytest.fixture
def scripted():
    return ScriptedLM()


@pytest.fixture(scope="session")
def tiny_model():
    """A randomly initialised built-in-architecture model (fast; answers are nonsense)."""
    torch.manual_seed(0)
    tok = CharTokenizer()
    net = TinyDLM(TinyConfig(vocab_size=len(tok), n_layer=1, n_embd=32)).eval()
    return BuiltinModel(net, {}, "builtin:random-test")


@pytest.fixture(scope="session")
def builtin_model():
    """The shipped built-in Countdown model."""
    return BuiltinModel.load("countdown")
