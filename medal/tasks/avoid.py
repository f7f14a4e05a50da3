"""Avoid: write a word of the pair that word d is NOT in -- a task where the first
commitment decides the answer and the confident-first order is a coin flip.

The prompt lists four 8-letter words in two pairs of twins, in a random order, and names
one of them, d (1-4)::

    prompt:  Avoid 1: xgxfhwex ajdjibkd andnmbpd qgtfhqet        (template 0)
    answers: ajdjibkd or andnmbpd      (the pair without word 1; xgxfhwex and qgtfhqet are
                                        the other pair)

The words are built as the Twins task's (:mod:`medal.tasks.twins`): words of a pair share
a letter at four positions and differ at the other four, and which word a letter belongs
to is readable from the letter itself (six fixed letter classes) -- which a tiny model
learns in minutes. What it does not learn in its training budget is the cue: which pair
word d is in (the word at position d, then its pair, then the other pair's letters: one
lookup more than its copy of a word). So with every slot masked its distribution at each
slot is the Twins mixture over all four words, whichever pair is right.

Why the order matters, and why the schedule cannot fix it. The model conditions on what is
written: one letter settles the pair, a second the word, and it finishes that word. So
any decoder that writes one slot at a time ends with a word of whichever pair its FIRST
commitment chose -- greedy, ``medal-order`` and the entropy-bounded sampler alike -- and
the confident-first first commitment is the letter of one pair or the other about as
often: right about half the time, whatever the schedule. Writing a different first letter
-- what a search over the first commitment does -- finds the right pair when one of the
letters it tries is the right pair's; a search can pay only if what it chooses by (the
information gain, a likelihood, the verifier) tells the pairs apart. ``scripts/headroom.py
--controls`` measures all of it (docs/MODELS.md, "Avoid").

Two prompt templates (``template`` 0 and 1: the same problem written two ways) so that a
comparison of decoders can be repeated on each. Decoded one slot per step by default.

The verifier needs only the problem (no reference answer) and never raises.
"""
from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import InputError
from . import twins as _tw
from .jsonl import load_jsonl, save_jsonl
from .pick import extract_answer, words_of

N_WORDS = _tw.N_WORDS
WORD_LENGTH = _tw.WORD_LENGTH
ANSWER_LENGTH = WORD_LENGTH
#: the prompt templates: the same problem written two ways (``template`` setting)
TEMPLATES = 2
_EXAMPLE = ('{"words": ["xgxfhwex", "ajdjibkd", "andnmbpd", "qgtfhqet"], "avoid": 1}')


@dataclass(frozen=True)
class AvoidProblem:
    words: tuple[str, ...]
    avoid: int                 # 1..4: the word whose pair is NOT the answer

    def to_json(self) -> dict:
        return {"words": list(self.words), "avoid": self.avoid}

    @property
    def pairs(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The two pairs as indices into ``words`` (0-based), found from the structure."""
        return _pairs(self.words)

    @property
    def answers(self) -> tuple[str, str]:
        """The two right answers: the words of the pair word ``avoid`` is not in."""
        a, b = self.pairs
        other = b if self.avoid - 1 in a else a
        return tuple(self.words[i] for i in other)

    def __str__(self) -> str:
        return f"avoid {self.avoid}: {' '.join(self.words)}"


def _pairs(words) -> tuple[tuple[int, int], tuple[int, int]]:
    """The pairs of four words with the twins structure in some order: the order that the
    Twins task's check accepts gives them (an InputError naming the fault otherwise)."""
    for order in itertools.permutations(range(N_WORDS)):
        try:
            _tw._check_structure([words[i] for i in order])
        except InputError:
            continue
        return tuple(sorted((tuple(sorted(order[:2])), tuple(sorted(order[2:])))))
    _tw._check_structure(list(words))      # not in any order: the message of the given one
    raise InputError("the words do not form two pairs of twins in any order")  # unreachable


# ------------------------------------------------------------------ generator

def random_problem(rng: random.Random) -> AvoidProblem:
    """Four Twins words (:func:`medal.tasks.twins.random_problem`) in a random order, and
    a random word to avoid."""
    words = list(_tw.random_problem(rng).words)
    rng.shuffle(words)
    return AvoidProblem(tuple(words), rng.randint(1, N_WORDS))


def generate_problems(n: int, seed: int = 0) -> list[AvoidProblem]:
    rng = random.Random(seed)
    return [random_problem(rng) for _ in range(n)]


# ------------------------------------------------------------------ parsing

def parse_problem(obj) -> AvoidProblem:
    """A problem from ``{"words": [...], "avoid": d}`` (or its JSON), or a prompt in either
    template."""
    if isinstance(obj, AvoidProblem):
        return obj
    if isinstance(obj, str) and obj.strip()[:1] != "{":
        return problem_from_prompt(obj, strict=True)
    if isinstance(obj, str):
        from .jsonl import json_problem
        obj = json_problem(obj.strip(), _EXAMPLE)
    if not isinstance(obj, dict) or set(obj) != {"words", "avoid"}:
        raise InputError('an Avoid problem is an object with exactly the keys "words" and '
                         f'"avoid", e.g. {_EXAMPLE}')
    words = words_of({"words": obj["words"]}, "Avoid", "Avoid", _EXAMPLE)
    if len(words) != N_WORDS:
        raise InputError(f"an Avoid problem lists {N_WORDS} words, got {len(words)}")
    d = obj["avoid"]
    if type(d) is not int or not 1 <= d <= N_WORDS:
        raise InputError(f"avoid is the number of a word, 1 to {N_WORDS}; got {d!r}")
    _pairs(words)
    return AvoidProblem(tuple(words), d)


def format_prompt(problem: AvoidProblem, template: int = 0) -> str:
    """The problem as the model reads it: template 0 names the word to avoid first,
    template 1 after the words."""
    if template == 0:
        return f"Avoid {problem.avoid}: {' '.join(problem.words)}"
    if template == 1:
        return f"{' '.join(problem.words)}, not {problem.avoid}."
    raise InputError(f"the avoid task has prompt templates 0..{TEMPLATES - 1}, got {template!r}")


_PROMPTS = (re.compile(r"avoid ([1-4]):((?: [a-x]{8}){4})\s*$", re.IGNORECASE),
            re.compile(r"((?:[a-x]{8} ){3}[a-x]{8}), not ([1-4])\.\s*$", re.IGNORECASE))


def problem_from_prompt(prompt: str, strict: bool = False) -> AvoidProblem | None:
    """The problem of a prompt in either template, else None (``strict``: an InputError
    that shows the forms)."""
    text = str(prompt).strip()
    m = _PROMPTS[0].search(text)
    if m:
        d, words = int(m.group(1)), m.group(2).split()
    else:
        m = _PROMPTS[1].search(text)
        if m:
            d, words = int(m.group(2)), m.group(1).split()
    if not m:
        if strict:
            raise InputError("an Avoid problem is written 'Avoid 2: w1 w2 w3 w4' or "
                             f"'w1 w2 w3 w4, not 2.' (four words of 8 letters a-x), or as "
                             f"JSON like {_EXAMPLE}")
        return None
    try:
        return parse_problem({"words": [w.lower() for w in words], "avoid": d})
    except InputError:
        if strict:
            raise
        return None


def verify(answer: str, problem: AvoidProblem) -> bool:
    """True when the answer is a word of the pair word ``avoid`` is not in. Never raises."""
    try:
        return extract_answer(answer) in problem.answers
    except Exception:  # a verifier must never raise on model output
        return False


def training_example(rng: random.Random) -> tuple[AvoidProblem, str, int]:
    """A problem, one of its two right words drawn uniformly (the model learns the
    mixture) and a template drawn uniformly (the model learns both)."""
    problem = random_problem(rng)
    return problem, rng.choice(problem.answers), rng.randrange(TEMPLATES)


# ---------------------------------------------------------------------------- JSONL

def save_problems(problems: Iterable[AvoidProblem], path: str | Path) -> None:
    save_jsonl(problems, path)


def load_problems(path: str | Path) -> list[AvoidProblem]:
    return load_jsonl(path, parse_problem, _EXAMPLE)
