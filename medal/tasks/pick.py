"""Pick: write any ONE of the listed words -- a task where the unmasking order matters.

The prompt lists two or three 8-letter words (letters a-h) that agree on some positions
and differ on others; any one of them is a right answer::

    prompt:  Pick abcdefgh abcdhfgc
    answers: abcdefgh  or  abcdhfgc          (abcdefgc mixes them: wrong)

A masked diffusion model trained on it learns, for each slot, the MIXTURE over the words:
the shared positions are certain, the differing ones split between the words. Decoding
one slot per step is safe (after one differing letter is written, the model's
conditionals point at that word), but a decoder that unmasks several slots per step
writes each differing slot from its own marginal and can mix letters of different words.
The confident-first order makes it worse: it writes the certain shared letters first (no
information) and leaves the differing ones to be written together at the end.

An early commitment to one differing letter -- which is what the information-gain reward
favours: it collapses the entropy of every other differing slot -- avoids the mix. That
makes the task a positive control for MEDAL's premise: committing dependent slots in
the wrong order, or several at once, causes errors that a better early order avoids.

The verifier needs only the problem (no reference answer) and never raises.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import InputError
from .jsonl import json_problem, load_jsonl, save_jsonl

LETTERS = "abcdefgh"
WORD_LENGTH = 8
MIN_WORDS, MAX_WORDS = 2, 3
#: how many positions each further word changes from the first (drawn uniformly)
MIN_CHANGES, MAX_CHANGES = 2, 4
PROMPT_PREFIX = "Pick "
#: the prompt templates (``template`` setting): ``Pick w1 w2`` and ``w1 or w2?``
TEMPLATES = 2
ANSWER_LENGTH = WORD_LENGTH
#: the task's default decoding: 8 slots in 4 steps (2 slots per step). One slot per step
#: leaves little for an order to fix; several per step is where parallel decoding mixes
#: the words (docs/RESULTS.md measures 1, 2 and 4 slots per step).
DEFAULT_STEPS = 4
_EXAMPLE = '{"words": ["abcdefgh", "abcdhfgc"]}'


@dataclass(frozen=True)
class PickProblem:
    words: tuple[str, ...]

    def to_json(self) -> dict:
        return {"words": list(self.words)}

    @property
    def differing(self) -> int:
        """Positions at which not all the words agree."""
        return sum(len({w[i] for w in self.words}) > 1 for i in range(WORD_LENGTH))

    def __str__(self) -> str:
        return " ".join(self.words)


# ------------------------------------------------------------------ generator

def random_problem(rng: random.Random) -> PickProblem:
    """Two or three distinct words: a random first word, each other one that word with
    2-4 positions changed to other letters."""
    n = rng.randint(MIN_WORDS, MAX_WORDS)
    base = "".join(rng.choice(LETTERS) for _ in range(WORD_LENGTH))
    words = [base]
    while len(words) < n:
        w = list(base)
        for i in rng.sample(range(WORD_LENGTH), rng.randint(MIN_CHANGES, MAX_CHANGES)):
            w[i] = rng.choice([c for c in LETTERS if c != base[i]])
        w = "".join(w)
        if w not in words:
            words.append(w)
    rng.shuffle(words)
    return PickProblem(tuple(words))


def generate_problems(n: int, seed: int = 0) -> list[PickProblem]:
    rng = random.Random(seed)
    return [random_problem(rng) for _ in range(n)]


# ------------------------------------------------------------------ parsing

def words_of(obj, title: str, prefix: str, example: str):
    """The list of words a word-choice problem (Pick, Twins) is given as: ``{"words":
    [...]}``, a list, its JSON, or ``"w1 w2 ..."`` (with or without the prompt's
    ``prefix``). Refuses anything else, naming ``title``'s form with ``example``."""
    if isinstance(obj, str):
        text = obj.strip()
        if text[:1] in "{[":
            obj = json_problem(text, example)
        elif _QUESTION.fullmatch(text):
            obj = question_words(text)
        else:
            if text.lower().startswith(prefix.strip().lower()):
                text = text[len(prefix.strip()):]
            obj = text.split()
    if isinstance(obj, dict):
        if set(obj) != {"words"}:
            raise InputError(f'a {title} problem is an object with exactly the key "words", '
                             f"e.g. {example}")
        obj = obj["words"]
    if not isinstance(obj, (list, tuple)):
        raise InputError(f"a {title} problem is a list of words, e.g. {example}")
    return obj


def parse_problem(obj) -> PickProblem:
    """A problem from ``{"words": [...]}``, a list of words, or ``"w1 w2 ..."``."""
    if isinstance(obj, PickProblem):
        return obj
    obj = words_of(obj, "Pick", PROMPT_PREFIX, _EXAMPLE)
    if not MIN_WORDS <= len(obj) <= MAX_WORDS:
        raise InputError(f"a Pick problem lists {MIN_WORDS} to {MAX_WORDS} words, got {len(obj)}")
    for w in obj:
        if not isinstance(w, str) or len(w) != WORD_LENGTH or any(c not in LETTERS for c in w):
            raise InputError(f"each word is {WORD_LENGTH} letters from {LETTERS!r}; got {w!r}")
    if len(set(obj)) != len(obj):
        raise InputError("the words must differ from each other")
    return PickProblem(tuple(obj))


def question(words) -> str:
    """A word-choice task's template 1: ``w1, w2 or w3?`` (Pick, Twins)."""
    return ", ".join(words[:-1]) + " or " + words[-1] + "?"


#: template 1's form: words joined by ", ", the last by " or ", a "?" at the end
_QUESTION = re.compile(r"([a-z]{8}(?:, [a-z]{8})*) or ([a-z]{8})\?", re.IGNORECASE)


def question_words(text: str) -> list[str]:
    """The words of a prompt in :func:`question`'s form (``text`` must match it)."""
    m = _QUESTION.fullmatch(text.strip())
    return m.group(1).split(", ") + [m.group(2)]


def word_prompt(prefix: str, title: str):
    """``format_prompt`` of a word-choice task (Pick, Twins): template 0 ``<prefix>w1 w2
    ...``, template 1 :func:`question`'s ``w1, w2 or w3?``."""
    def format_prompt(problem, template: int = 0) -> str:
        if template == 0:
            return prefix + " ".join(problem.words)
        if template == 1:
            return question(problem.words)
        raise InputError(f"the {title} task has prompt templates 0..{TEMPLATES - 1}, "
                         f"got {template!r}")
    format_prompt.__doc__ = (f"The problem as the model reads it: template 0 "
                             f"``{prefix}w1 w2 ...``, template 1 ``w1, w2 or w3?``.")
    return format_prompt


format_prompt = word_prompt(PROMPT_PREFIX, "pick")


def prompt_reader(pattern: str, parse):
    """``problem_from_prompt`` of a word-choice task (Pick, Twins): the problem ``parse``
    makes of the words ``pattern``'s first group finds at the prompt's end (template 0), or
    of a prompt in :func:`question`'s form (template 1), else None."""
    rx = re.compile(pattern, re.IGNORECASE)

    def problem_from_prompt(prompt: str):
        """Recover the problem from a prompt in either of ``format_prompt``'s templates,
        else None."""
        text = prompt.strip()
        m = rx.search(text)
        if m:
            words = m.group(1).split()
        else:
            m = re.search(r"(?<![a-z])" + _QUESTION.pattern + "$", text, re.IGNORECASE)
            if not m:
                return None
            words = question_words(m.group(0))
        try:
            return parse([w.lower() for w in words])
        except InputError:
            return None
    return problem_from_prompt


problem_from_prompt = prompt_reader(r"pick((?:\s+[a-h]{8}){2,3})\s*$", parse_problem)


def extract_answer(text: str) -> str:
    """The completion's first line without spaces."""
    return str(text).split("\n", 1)[0].replace(" ", "").strip()


def verify(answer: str, problem: PickProblem) -> bool:
    """True when the answer is exactly one of the listed words. Never raises."""
    try:
        return extract_answer(answer) in problem.words
    except Exception:  # a verifier must never raise on model output
        return False


def training_example(rng: random.Random) -> tuple[PickProblem, str]:
    """A problem and one of its words, drawn uniformly (so the model learns the mixture)."""
    problem = random_problem(rng)
    return problem, rng.choice(problem.words)


# ---------------------------------------------------------------------------- JSONL

def save_problems(problems: Iterable[PickProblem], path: str | Path) -> None:
    save_jsonl(problems, path)


def load_problems(path: str | Path) -> list[PickProblem]:
    return load_jsonl(path, parse_problem, _EXAMPLE)
