import math
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

from medal.models.base import DiffusionLM  # noqa: E402
from medal.models.builtin import BuiltinModel  # noqa: E402
from medal.models.tiny import CharTokenizer, TinyConfig, TinyDLM  # noqa: E402

torch.set_num_threads(int(os.environ.get("MEDAL_TEST_THREADS", "1")))


class ScriptedLM(DiffusionLM):
    """A model whose distributions the tests control and can recompute by hand.

    Vocabulary: tokens 0..V-3 are ordinary, V-2 is the mask, V-1 is EOS. The logits of
    answer slot i are ``scale * cos(1.3 i + 0.7 v + 0.9 s)`` where s is the sum of the
    answer's unmasked tokens, so every commitment changes every other slot's
    distribution in a known way. Every call is recorded."""

    name = "scripted"
    builtin = False

    def __init__(self, vocab: int = 6, gen_length: int = 6, prompt_len: int = 2, scale: float = 3.0):
        self.V = vocab
        self.mask_id = vocab - 2
        self.eos_id = vocab - 1
        self.default_gen_length = gen_length
        self.max_gen_length = gen_length
        self.prompt_len = prompt_len
        self.scale = scale
        self.calls: list[torch.Tensor] = []

    @property
    def vocab_size(self):
        return self.V

    def encode_prompt(self, prompt):
        self.check_prompt(prompt)
        return [0] * self.prompt_len

    def expected_logits(self, answer: torch.Tensor) -> torch.Tensor:
        """[L, V] logits for one answer state, computed the plain way."""
        s = sum(int(t) for t in answer if int(t) != self.mask_id)
        rows = []
        for i in range(len(answer)):
            row = [self.scale * math.cos(1.3 * i + 0.7 * v + 0.9 * s) for v in range(self.V)]
            row[self.mask_id] = -1e9
            rows.append(row)
        return torch.tensor(rows)

    def logits(self, ids, answer_length):
        self.calls.append(ids.clone())
        assert ids.shape[1] == self.prompt_len + answer_length
        out = torch.zeros(ids.shape[0], answer_length, self.V)
        for b in range(ids.shape[0]):
            out[b] = self.expected_logits(ids[b, self.prompt_len:])
        return out

    def token_text(self, token_id):
        return {self.mask_id: "<mask>", self.eos_id: "<eos>"}.get(int(token_id), "abcdefgh"[int(token_id)])

    def decode(self, ids):
        out = []
        for t in ids:
            if int(t) == self.eos_id:
                break
            out.append(self.token_text(t))
        return "".join(out)


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
