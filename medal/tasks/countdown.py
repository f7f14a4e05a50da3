"""Countdown: combine the given numbers with + - * / (exact division only), each used
exactly once, brackets allowed, to reach the target.

Two answer forms are understood:

* an expression, ``(18-13)*4``;
* a decomposed answer of one step per combination, ``18-13=5,5*4=20`` -- the form the
  built-in model writes when the prompt asks it to solve in steps (task decomposition).

The verifier never raises: anything malformed is simply wrong.
"""
from __future__ import annotations

import ast
import functools
import itertools
import random
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import InputError, quoted
from .jsonl import json_problem, load_jsonl, save_jsonl

MIN_NUMBER, MAX_NUMBER = 1, 20
MIN_TARGET, MAX_TARGET = 1, 100
OPS = "+-*/"


@dataclass(frozen=True)
class CountdownProblem:
    numbers: tuple[int, ...]
    target: int

    def to_json(self) -> dict:
        return {"numbers": list(self.numbers), "target": self.target}


def parse_problem(obj) -> CountdownProblem:
    """A problem from a dict or a JSON string ``{"numbers": [..], "target": N}``."""
    if isinstance(obj, str):
        obj = json_problem(obj, '{"numbers": [4, 18, 13], "target": 20}')
    if not isinstance(obj, dict) or set(obj) != {"numbers", "target"}:
        raise InputError('a Countdown problem is an object with exactly the keys "numbers" '
                         'and "target", e.g. {"numbers": [4, 18, 13], "target": 20}')
    numbers, target = obj["numbers"], obj["target"]
    if (not isinstance(numbers, list) or not 3 <= len(numbers) <= 4
            or not all(type(n) is int for n in numbers)):
        raise InputError(f"numbers must be a list of 3 or 4 whole numbers, got {quoted(numbers)}")
    if not all(MIN_NUMBER <= n <= MAX_NUMBER for n in numbers):
        raise InputError(f"each number must lie in {MIN_NUMBER}..{MAX_NUMBER}, got {quoted(numbers)}")
    if type(target) is not int or not MIN_TARGET <= target <= MAX_TARGET:
        raise InputError(f"target must be a whole number in {MIN_TARGET}..{MAX_TARGET}, "
                         f"got {quoted(target)}")
    return CountdownProblem(tuple(numbers), target)


# ---------------------------------------------------------------- prompts and answers

#: the prompt templates (``template`` setting): the same problem written two ways
TEMPLATES = 2


def format_prompt(problem: CountdownProblem, template: int = 0) -> str:
    """The problem as the model reads it: template 0 ``Use 4, 18, 13 to make 20.``,
    template 1 ``20 from 4 18 13.`` (the target first, no commas)."""
    if template == 0:
        return f"Use {', '.join(map(str, problem.numbers))} to make {problem.target}."
    if template == 1:
        return f"{problem.target} from {' '.join(map(str, problem.numbers))}."
    raise InputError(f"the countdown task has prompt templates 0..{TEMPLATES - 1}, "
                     f"got {template!r}")


_PROMPT_RE = re.compile(r"use\s+([\d,\s]+?)\s+to\s+make\s+(\d+)", re.IGNORECASE)
_PROMPT_RE1 = re.compile(r"(?<!\d)(\d+)\s+from\s+(\d+(?:\s+\d+)+)\s*\.", re.IGNORECASE)


def problem_from_prompt(prompt: str) -> CountdownProblem | None:
    """Recover the problem from a prompt in either of :func:`format_prompt`'s templates,
    else None."""
    m = _PROMPT_RE.search(prompt)
    if m:
        numbers_text, target_text = m.group(1), m.group(2)
    else:
        m = _PROMPT_RE1.search(prompt)
        if not m:
            return None
        numbers_text, target_text = m.group(2), m.group(1)
    digits = re.findall(r"\d+", numbers_text)
    if any(len(x) > 12 for x in digits + [target_text]):
        return None  # far beyond any Countdown number (and int() refuses > 4300 digits)
    numbers = [int(x) for x in digits]
    try:
        return parse_problem({"numbers": numbers, "target": int(target_text)})
    except InputError:
        return None


def decomposition_suffix(problem_or_count) -> str:
    """The built-in model's decomposition instruction: one subtask per combination."""
    n = problem_or_count if isinstance(problem_or_count, int) else len(problem_or_count.numbers) - 1
    return f" Solve in {n} steps."


def extract_answer(text: str) -> str:
    """The answer part of a completion, spaces removed: what follows the last "Answer:"
    (how instruct LLMs end a decomposed answer), else the first line."""
    text = str(text)
    if "answer:" in text.lower():
        text = re.split(r"answer:", text, flags=re.IGNORECASE)[-1].strip()
    return text.split("\n", 1)[0].replace(" ", "").strip()


# ------------------------------------------------------------------------- verifier

def _eval_expression(expr: str) -> tuple[Fraction, list[int]] | None:
    """Exact value of an arithmetic expression and the integer literals it uses."""
    if not expr or len(expr) > 200 or not re.fullmatch(r"[\d+\-*/() ]+", expr):
        return None
    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError):
        return None
    literals: list[int] = []

    def ev(node) -> Fraction:
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Div) and b == 0:
                raise ZeroDivisionError
            return _BINOPS[type(node.op)](a, b)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            literals.append(node.value)
            return Fraction(node.value)
        raise ValueError("unsupported syntax")

    try:
        return ev(tree.body), literals
    except (ZeroDivisionError, ValueError, RecursionError):
        return None


def expression_value(expr: str) -> str | None:
    """The exact value of an expression as text (``20``, ``7/2``), None if it has none."""
    result = _eval_expression(expr)
    return None if result is None else str(result[0])


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}
_STEP_RE = re.compile(r"^(\d+)([+\-*/])(\d+)=(\d+)$")


def _verify_steps(answer: str, problem: CountdownProblem) -> bool:
    pool = list(problem.numbers)
    last = None
    for step in answer.split(","):
        m = _STEP_RE.match(step)
        if not m:
            return False
        a, op, b, c = int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4))
        value = _BINOPS[{"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div}[op]](
            Fraction(a), Fraction(b)) if not (op == "/" and b == 0) else None
        if value is None or value != c:
            return False
        for operand in (a, b):
            if operand not in pool:
                return False
            pool.remove(operand)
        pool.append(c)
        last = c
    return len(pool) == 1 and last == problem.target


def verify(answer: str, problem: CountdownProblem) -> bool:
    """True when ``answer`` (an expression or ``a op b = c`` steps) reaches the target
    using every number exactly once. Never raises."""
    try:
        answer = extract_answer(str(answer))
        if "=" in answer:
            return _verify_steps(answer, problem)
        result = _eval_expression(answer)
        if result is None:
            return False
        value, literals = result
        return value == problem.target and sorted(literals) == sorted(problem.numbers)
    except Exception:  # a verifier must never raise on model output
        return False


# ------------------------------------------------------------------ solver/generator

def _combine(a: Fraction, b: Fraction) -> Iterator[tuple[str, Fraction]]:
    yield "+", a + b
    yield "-", a - b
    yield "*", a * b
    if b != 0:
        yield "/", a / b


def reachable_values(numbers: Iterable[int]) -> set[Fraction]:
    """Every value reachable using all numbers once (any bracketing)."""
    items = [Fraction(n) for n in numbers]
    seen: dict[tuple, set[Fraction]] = {}

    def rec(vals: tuple[Fraction, ...]) -> set[Fraction]:
        key = tuple(sorted(vals))
        if key in seen:
            return seen[key]
        if len(vals) == 1:
            out = {vals[0]}
        else:
            out = set()
            for i, j in itertools.permutations(range(len(vals)), 2):
                rest = tuple(v for k, v in enumerate(vals) if k not in (i, j))
                for _, v in _combine(vals[i], vals[j]):
                    out |= rec(rest + (v,))
        seen[key] = out
        return out

    return rec(tuple(items))


def solve(problem: CountdownProblem) -> str | None:
    """One expression that solves the problem, or None."""
    def rec(items: list[tuple[Fraction, str]]) -> str | None:
        if len(items) == 1:
            return items[0][1] if items[0][0] == problem.target else None
        for i, j in itertools.permutations(range(len(items)), 2):
            rest = [it for k, it in enumerate(items) if k not in (i, j)]
            (a, ea), (b, eb) = items[i], items[j]
            for op, v in _combine(a, b):
                found = rec(rest + [(v, f"({ea}{op}{eb})")])
                if found:
                    return found
        return None

    found = rec([(Fraction(n), str(n)) for n in problem.numbers])
    return found[1:-1] if found and found.startswith("(") else found


def generate_problems(n: int, seed: int = 0, n_numbers: int = 3) -> list[CountdownProblem]:
    """``n`` random solvable problems: numbers in 1..20, a reachable target in 1..100."""
    if n_numbers not in (3, 4):
        raise InputError(f"Countdown problems use 3 or 4 numbers, got {n_numbers}")
    rng = random.Random(seed)
    problems = []
    while len(problems) < n:
        numbers = tuple(rng.randint(MIN_NUMBER, MAX_NUMBER) for _ in range(n_numbers))
        targets = sorted(int(v) for v in reachable_values(numbers)
                         if v.denominator == 1 and MIN_TARGET <= v <= MAX_TARGET)
        if targets:
            problems.append(CountdownProblem(numbers, rng.choice(targets)))
    return problems


def random_solution(rng: random.Random, n_numbers: int) -> tuple[CountdownProblem, str, str] | None:
    """A random (problem, expression, steps) triple built forwards, for training data.

    Numbers are drawn, then combined pairwise in random order with random operators;
    intermediates stay non-negative integers. Returns None when the result misses the
    target range (the caller draws again)."""
    numbers = [rng.randint(MIN_NUMBER, MAX_NUMBER) for _ in range(n_numbers)]
    items = [(n, str(n), True) for n in numbers]  # value, expression, is_atom
    steps = []
    while len(items) > 1:
        i, j = rng.sample(range(len(items)), 2)
        (a, ea, atom_a), (b, eb, atom_b) = items[i], items[j]
        op = rng.choice(OPS)
        if op == "-" and a < b:
            (a, ea, atom_a), (b, eb, atom_b) = (b, eb, atom_b), (a, ea, atom_a)
        if op == "/" and (b == 0 or a % b):
            op = rng.choice("+*")
        v = {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else 0}[op]
        # brackets only where precedence needs them
        left = ea if atom_a or _prec(ea) >= _PREC[op] else f"({ea})"
        right = eb if atom_b or (_prec(eb) > _PREC[op] or (_prec(eb) == _PREC[op] and op in "+*")) else f"({eb})"
        steps.append(f"{a}{op}{b}={v}")
        items = [it for k, it in enumerate(items) if k not in (i, j)] + [(v, f"{left}{op}{right}", False)]
    value, expr, _ = items[0]
    if not MIN_TARGET <= value <= MAX_TARGET:
        return None
    return CountdownProblem(tuple(numbers), value), expr, ",".join(steps)


_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}


def _join(op: str, left: tuple[str, bool], right: tuple[str, bool]) -> str:
    """``left op right`` with brackets only where precedence needs them."""
    (ea, atom_a), (eb, atom_b) = left, right
    a = ea if atom_a or _prec(ea) >= _PREC[op] else f"({ea})"
    b = eb if atom_b or (_prec(eb) > _PREC[op] or (_prec(eb) == _PREC[op] and op in "+*")) else f"({eb})"
    return f"{a}{op}{b}"


def all_solutions(numbers) -> dict[int, list[tuple[str, str | None]]]:
    """Every expression over three numbers (each used once, any bracketing), by integer
    target in range: target -> [(expression, steps or None)]. Steps are given only when
    every intermediate is a non-negative integer (the step form cannot write others)."""
    if len(numbers) != 3:
        raise InputError("all_solutions enumerates three-number problems only")
    out: dict[int, list[tuple[str, str | None]]] = {}
    items = [(Fraction(n), str(n), True, []) for n in numbers]

    def rec(items):
        if len(items) == 1:
            v, e, _, steps = items[0]
            if v.denominator == 1 and MIN_TARGET <= v <= MAX_TARGET:
                out.setdefault(int(v), []).append((e, ",".join(steps) if steps is not None else None))
            return
        for i, j in itertools.permutations(range(len(items)), 2):
            rest = [it for k, it in enumerate(items) if k not in (i, j)]
            (a, ea, ta, sa), (b, eb, tb, sb) = items[i], items[j]
            for op, v in _combine(a, b):
                ok = (sa is not None and sb is not None and v.denominator == 1 and v >= 0)
                steps = sa + sb + [f"{a}{op}{b}={v}"] if ok else None
                rec(rest + [(v, _join(op, (ea, ta), (eb, tb)), False, steps)])

    rec(items)
    return out


def _canonical_key(numbers, expr: str, steps: str | None) -> tuple:
    """Sort key of one solution: a step form exists, fewest brackets, shortest, then the
    numbers read in the prompt's order, then the text itself (a total order)."""
    pool, order = list(numbers), []
    for lit in re.findall(r"\d+", expr):
        k = pool.index(int(lit))
        order.append(k)
        pool[k] = None
    return (steps is None, expr.count("("), len(expr), order, expr)


@functools.lru_cache(maxsize=None)
def _solution_table(numbers: tuple[int, ...], canonical: bool):
    """``all_solutions`` for these numbers (in this order), cached; with ``canonical``
    each target keeps only its one canonical solution (see :func:`canonical_solution`)."""
    sols = all_solutions(numbers)
    if canonical:
        sols = {t: [min(v, key=lambda es: _canonical_key(numbers, *es))] for t, v in sols.items()}
    return {t: tuple(v) for t, v in sols.items()}


def canonical_solution(problem: CountdownProblem) -> tuple[str, str | None] | None:
    """The one solution a training example gives for a three-number problem: among all
    solutions, one with integer steps, the fewest brackets, the shortest, reading the
    numbers in the prompt's order. None when the target is unreachable.

    One answer per prompt makes the training target a function of the prompt: a masked
    DLM that sees several equally likely answers fills slots from different ones at once
    (answers that use a number twice)."""
    sols = _solution_table(tuple(problem.numbers), True).get(problem.target)
    return sols[0] if sols else None


def uniform_target_solution(rng: random.Random, canonical: bool = False
                            ) -> tuple[CountdownProblem, str, str | None]:
    """A three-number (problem, expression, steps or None) drawn the way
    :func:`generate_problems` draws test problems: numbers uniform, the target uniform
    over the reachable whole targets, then one of its solutions at random (or, with
    ``canonical``, its :func:`canonical_solution`)."""
    while True:
        numbers = tuple(rng.randint(MIN_NUMBER, MAX_NUMBER) for _ in range(3))
        sols = _solution_table(numbers, canonical)
        if sols:
            target = rng.choice(sorted(sols))
            expr, steps = rng.choice(sols[target])
            return CountdownProblem(numbers, target), expr, steps


def _prec(expr: str) -> int:
    """Precedence of the top-level operator of ``expr`` (3 for an atom)."""
    depth, lowest = 0, 3
    for ch in expr:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and ch in _PREC:
            lowest = min(lowest, _PREC[ch])
    return lowest


# ---------------------------------------------------------------------------- JSONL

def save_problems(problems: Iterable[CountdownProblem], path: str | Path) -> None:
    save_jsonl(problems, path)


def load_problems(path: str | Path) -> list[CountdownProblem]:
    return load_jsonl(path, parse_problem, '{"numbers": [4, 18, 13], "target": 20}')
