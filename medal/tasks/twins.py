"""Twins: write any ONE of four words -- the positive control where the order matters.

The prompt lists four 8-letter words in two pairs of "twins". Words 1 and 2 agree on four
positions (and differ on the other four); words 3 and 4 agree on the other four::

    prompt:  Twins laldkadj namdmadp hthseqre huhveuxe
    answers: any one of the four words

At a position where words 1 and 2 agree, their shared letter is right for half the
answers, and the letters of words 3 and 4 for a quarter each; likewise the other way round.
So every slot's most likely letter (p = 1/2) belongs to one pair, and the most likely
letters of two slots from different pairs belong to NO word together: ``laldhtht``-like
mixes. A decoder that writes two slots per step from their marginals -- the confident-first
order writes exactly these most likely letters -- mixes the pairs whenever it writes one
slot of each pair in one step. Writing one letter first makes the model's conditionals
point at that letter's pair (and, once a second letter is written, at one word), after
which writing several slots per step is safe. That is MEDAL's premise: committing
dependent slots several at once causes errors that a better early order avoids; the
search commits its first L_c slots one at a time and its information-gain reward prefers
the commitment that settles the most.

Which word a written letter belongs to is readable from the letter itself: the 24 letters
a-x are in six fixed classes of four (the shared letters of pair 1 are from ``abcd``, of
pair 2 from ``efgh``; the own letters of words 1-4 from ``ijkl``, ``mnop``, ``qrst``,
``uvwx``). A tiny model learns that in a few minutes of CPU, where telling which of
several random words a letter came from (comparing it with every word) took it far longer
than the task's training budget (docs/MODELS.md: the Pick task).

The verifier needs only the problem (no reference answer) and never raises.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import InputError
from .jsonl import load_jsonl, save_jsonl
from .pick import (TEMPLATES, extract_answer, prompt_reader, verify,  # noqa: F401  (verdict: one of the words)
                   word_prompt, words_of)

WORD_LENGTH = 8
N_WORDS = 4
#: the letter classes: the shared letters of each pair, then each word's own letters
PAIR_LETTERS = ("abcd", "efgh")
OWN_LETTERS = ("ijkl", "mnop", "qrst", "uvwx")
LETTERS = "".join(PAIR_LETTERS) + "".join(OWN_LETTERS)
#: positions at which each pair agrees (the other pair agrees on the rest)
SHARED_PER_PAIR = WORD_LENGTH // 2
PROMPT_PREFIX = "Twins "
ANSWER_LENGTH = WORD_LENGTH
#: the task's default decoding: 8 slots in 4 steps (2 slots per step), where writing the
#: most likely letters of two slots at once can mix the pairs (docs/RESULTS.md measures
#: 1, 2 and 4 slots per step)
DEFAULT_STEPS = 4
_EXAMPLE = '{"words": ["laldkadj", "namdmadp", "hthseqre", "huhveuxe"]}'


@dataclass(frozen=True)
class TwinsProblem:
    words: tuple[str, ...]

    def to_json(self) -> dict:
        return {"words": list(self.words)}

    def pair_of(self, position: int) -> int:
        """0 when words 1 and 2 agree at ``position``, 1 when words 3 and 4 do."""
        return 0 if self.words[0][position] == self.words[1][position] else 1

    def __str__(self) -> str:
        return " ".join(self.words)


# ------------------------------------------------------------------ generator

def random_problem(rng: random.Random) -> TwinsProblem:
    """Four words: half the positions shared by words 1 and 2 (a letter from ``abcd``; words
    3 and 4 take their own letters there), the other half shared by words 3 and 4."""
    positions = list(range(WORD_LENGTH))
    rng.shuffle(positions)
    first_pair = set(positions[:SHARED_PER_PAIR])
    words = [[""] * WORD_LENGTH for _ in range(N_WORDS)]
    for i in range(WORD_LENGTH):
        pair, other = ((0, 1), (2, 3)) if i in first_pair else ((2, 3), (0, 1))
        shared = rng.choice(PAIR_LETTERS[0 if i in first_pair else 1])
        for w in pair:
            words[w][i] = shared
        for w in other:
            words[w][i] = rng.choice(OWN_LETTERS[w])
    return TwinsProblem(tuple("".join(w) for w in words))


def generate_problems(n: int, seed: int = 0) -> list[TwinsProblem]:
    rng = random.Random(seed)
    return [random_problem(rng) for _ in range(n)]


# ------------------------------------------------------------------ parsing

def _check_structure(words) -> None:
    """Refuse four words that do not have the twins structure, naming what is off."""
    for k, w in enumerate(words):
        if not isinstance(w, str) or len(w) != WORD_LENGTH or any(c not in LETTERS for c in w):
            raise InputError(f"word {k + 1} must be {WORD_LENGTH} letters from a-x; got {w!r}")
    shared = [0, 0]
    for i in range(WORD_LENGTH):
        col = [w[i] for w in words]
        if col[0] == col[1] and col[0] in PAIR_LETTERS[0] and col[2] in OWN_LETTERS[2] \
                and col[3] in OWN_LETTERS[3]:
            shared[0] += 1
        elif col[2] == col[3] and col[2] in PAIR_LETTERS[1] and col[0] in OWN_LETTERS[0] \
                and col[1] in OWN_LETTERS[1]:
            shared[1] += 1
        else:
            raise InputError(
                f"position {i + 1} ({''.join(col)}) breaks the twins structure: at each "
                "position either words 1 and 2 share a letter from abcd (words 3 and 4 take "
                "one from qrst and uvwx), or words 3 and 4 share one from efgh (words 1 and "
                f"2 take one from ijkl and mnop); e.g. {_EXAMPLE}")
    if shared != [SHARED_PER_PAIR, SHARED_PER_PAIR]:
        raise InputError(f"each pair shares exactly {SHARED_PER_PAIR} positions; words 1 and 2 "
                         f"share {shared[0]}, words 3 and 4 share {shared[1]}")


def parse_problem(obj) -> TwinsProblem:
    """A problem from ``{"words": [...]}``, a list of four words, or ``"w1 w2 w3 w4"``."""
    if isinstance(obj, TwinsProblem):
        return obj
    obj = words_of(obj, "Twins", PROMPT_PREFIX, _EXAMPLE)
    if len(obj) != N_WORDS:
        raise InputError(f"a Twins problem lists {N_WORDS} words, got {len(obj)}")
    _check_structure(obj)
    return TwinsProblem(tuple(obj))


#: template 0 ``Twins w1 w2 w3 w4``, template 1 ``w1, w2, w3 or w4?``
format_prompt = word_prompt(PROMPT_PREFIX, "twins")


problem_from_prompt = prompt_reader(r"twins((?:\s+[a-x]{8}){4})\s*$", parse_problem)


def training_example(rng: random.Random) -> tuple[TwinsProblem, str]:
    """A problem and one of its words, drawn uniformly (so the model learns the mixture)."""
    problem = random_problem(rng)
    return problem, rng.choice(problem.words)


# ---------------------------------------------------------------------------- JSONL

def save_problems(problems: Iterable[TwinsProblem], path: str | Path) -> None:
    save_jsonl(problems, path)


def load_problems(path: str | Path) -> list[TwinsProblem]:
    return load_jsonl(path, parse_problem, _EXAMPLE)
