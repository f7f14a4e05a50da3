"""Pick: choose one of two listed words, and write its number, then the word.

The prompt lists two random 8-letter words (letters a-h); the answer is the number of
one of them (1 or 2) followed by that word, and either is right::

    prompt:  Pick abcdefgh hbgcedfa
    answers: 1abcdefgh  or  2hbgcedfa      (1abgcedfa mixes them: wrong)

A masked diffusion model trained on it learns, for each slot, the MIXTURE over the two
answers: the number and every letter where the words differ split about 50/50. Once the
number is written, each letter is a copy from that word -- two attention hops (read the
number, read the word's letter), which a 2-layer model can learn. Once only a LETTER is
written, staying consistent means working out which word has that letter at that
position, then copying the rest of it -- a third hop that the built-in 2-layer model does
not learn: it keeps writing each letter from its own marginal and mixes the words.

So the unmasking order decides the answer: writing the number first (the one "hard"
slot that every other slot should wait for) gives a right answer; writing letters first
mixes them. Greedy's confident-first order has no reason to pick the number first (it is
no more confident than a differing letter). The information-gain reward does: committing
the number collapses the entropy of every other slot, a letter does not (the model
cannot use it). That makes the task a positive control for MEDAL's premise -- committing
dependent slots in the wrong order causes errors that a better early order avoids --
provided the number enters the search's confidence-filtered action set (top K2).

The verifier needs only the problem (no reference answer) and never raises.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import InputError
from .jsonl import load_jsonl, save_jsonl

LETTERS = "abcdefgh"
WORD_LENGTH = 8
MIN_WORDS, MAX_WORDS = 2, 2
PROMPT_PREFIX = "Pick "
#: the answer: the chosen word's number (1 or 2), then the word
ANSWER_LENGTH = 1 + WORD_LENGTH
#: the task's default decoding: one slot per step (None); docs/RESULTS.md also measures
#: 3 slots per step
DEFAULT_STEPS = None
_EXAMPLE = '{"words": ["abcdefgh", "hgfedcba"]}'


@dataclass(frozen=True)
class PickProblem:
    words: tuple[str, ...]

    def to_json(self) -> dict:
        return {"words": list(self.words)}

    @property
    def differing(self) -> int:
        """Positions at which the words differ."""
        return sum(len({w[i] for w in self.words}) > 1 for i in range(WORD_LENGTH))

    def answers(self) -> tuple[str, ...]:
        """Every right answer: each word's number, then the word."""
        return tuple(f"{k}{w}" for k, w in enumerate(self.words, 1))

    def __str__(self) -> str:
        return " ".join(self.words)


# ------------------------------------------------------------------ generator

def random_problem(rng: random.Random) -> PickProblem:
    """Two distinct random words of 8 letters a-h (independent: they share about one
    position in eight by chance)."""
    while True:
        words = tuple("".join(rng.choice(LETTERS) for _ in range(WORD_LENGTH))
                      for _ in range(MAX_WORDS))
        if len(set(words)) == len(words):
            return PickProblem(words)


def generate_problems(n: int, seed: int = 0) -> list[PickProblem]:
    rng = random.Random(seed)
    return [random_problem(rng) for _ in range(n)]


# ------------------------------------------------------------------ parsing

def parse_problem(obj) -> PickProblem:
    """A problem from ``{"words": [...]}``, a list of words, or ``"w1 w2 ..."``."""
    if isinstance(obj, PickProblem):
        return obj
    if isinstance(obj, str):
        text = obj.strip()
        if text[:1] in "{[":
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"problem is not valid JSON ({exc.msg}); expected {_EXAMPLE}") from None
        else:
            if text.lower().startswith(PROMPT_PREFIX.strip().lower()):
                text = text[len(PROMPT_PREFIX.strip()):]
            obj = text.split()
    if isinstance(obj, dict):
        if set(obj) != {"words"}:
            raise InputError(f'a Pick problem is an object with exactly the key "words", '
                             f"e.g. {_EXAMPLE}")
        obj = obj["words"]
    if not isinstance(obj, (list, tuple)):
        raise InputError(f"a Pick problem is a list of words, e.g. {_EXAMPLE}")
    if not MIN_WORDS <= len(obj) <= MAX_WORDS:
        raise InputError(f"a Pick problem lists {MAX_WORDS} words, got {len(obj)}")
    for w in obj:
        if not isinstance(w, str) or len(w) != WORD_LENGTH or any(c not in LETTERS for c in w):
            raise InputError(f"each word is {WORD_LENGTH} letters from {LETTERS!r}; got {w!r}")
    if len(set(obj)) != len(obj):
        raise InputError("the words must differ from each other")
    return PickProblem(tuple(obj))


def format_prompt(problem: PickProblem) -> str:
    return PROMPT_PREFIX + " ".join(problem.words)


_PROMPT_RE = re.compile(r"pick((?:\s+[a-h]{8}){2})\s*$", re.IGNORECASE)


def problem_from_prompt(prompt: str) -> PickProblem | None:
    """Recover the problem from a prompt in :func:`format_prompt`'s form, else None."""
    m = _PROMPT_RE.search(prompt.strip())
    if not m:
        return None
    try:
        return parse_problem(m.group(1).split())
    except InputError:
        return None


def extract_answer(text: str) -> str:
    """The completion's first line without spaces, e.g. ``2hbgcedfa``."""
    return str(text).split("\n", 1)[0].replace(" ", "").strip()


def verify(answer: str, problem: PickProblem) -> bool:
    """True when the answer is a word's number followed by that word. Never raises."""
    try:
        return extract_answer(answer) in problem.answers()
    except Exception:  # a verifier must never raise on model output
        return False


def training_example(rng: random.Random) -> tuple[PickProblem, str]:
    """A problem and one of its answers, drawn uniformly (so the model learns the mixture)."""
    problem = random_problem(rng)
    return problem, rng.choice(problem.answers())


# ---------------------------------------------------------------------------- JSONL

def save_problems(problems: Iterable[PickProblem], path: str | Path) -> None:
    save_jsonl(problems, path)


def load_problems(path: str | Path) -> list[PickProblem]:
    return load_jsonl(path, parse_problem, _EXAMPLE)
