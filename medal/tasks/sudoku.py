"""Sudoku 4x4: fill the blanks so every row, column and 2x2 box holds 1, 2, 3 and 4.

A grid is 16 cells, row-major, ``0`` for a blank. The prompt writes rows separated by
``/`` with ``.`` for blanks, and the answer is the whole solved grid in the same row
form::

    prompt:  Sudoku 1.3./..2./..../...4
    answer:  1234/3412/2143/4321

The order in which a diffusion model unmasks the answer matters here: a cell is easy
once its row, column and box are mostly known, and a wrong early digit can leave no
consistent completion. That is what makes the task a good showcase for search.

There are only 288 valid 4x4 grids, so they are enumerated once (by backtracking) and
solving or counting solutions is a filter over that list. Generated puzzles have a
unique solution. The verifier never raises: anything malformed is simply wrong.
"""
from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import InputError
from .jsonl import json_problem, load_jsonl, save_jsonl

SIZE, BOX = 4, 2
CELLS = SIZE * SIZE
DIGITS = "1234"
BLANK = "."
PROMPT_PREFIX = "Sudoku "
ANSWER_LENGTH = CELLS + SIZE - 1   # 16 digits and 3 row separators
MIN_BLANKS, MAX_BLANKS = 1, 12     # 4 givens is the fewest a unique 4x4 puzzle can have


def _units() -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Every row, column and box as (name, cell indices)."""
    units = []
    for r in range(SIZE):
        units.append((f"row {r + 1}", tuple(r * SIZE + c for c in range(SIZE))))
    for c in range(SIZE):
        units.append((f"column {c + 1}", tuple(r * SIZE + c for r in range(SIZE))))
    for br in range(0, SIZE, BOX):
        for bc in range(0, SIZE, BOX):
            cells = tuple((br + r) * SIZE + bc + c for r in range(BOX) for c in range(BOX))
            units.append((f"box {br // BOX * (SIZE // BOX) + bc // BOX + 1}", cells))
    return tuple(units)


UNITS = _units()


@dataclass(frozen=True)
class SudokuProblem:
    grid: tuple[int, ...]   # 16 cells, row-major, 0 = blank

    def to_json(self) -> dict:
        return {"grid": list(self.grid)}

    @property
    def blanks(self) -> int:
        return sum(1 for v in self.grid if v == 0)

    def __str__(self) -> str:
        return grid_to_rows(self.grid)


def grid_to_rows(grid: Iterable[int]) -> str:
    """``1.3./..2./..../...4`` -- rows joined by ``/``, ``.`` for a blank."""
    cells = "".join(str(v) if v else BLANK for v in grid)
    return "/".join(cells[r * SIZE:(r + 1) * SIZE] for r in range(SIZE))


# ------------------------------------------------------------------ solver/generator

@functools.lru_cache(maxsize=1)
def all_solutions() -> tuple[tuple[int, ...], ...]:
    """The 288 valid complete 4x4 grids, found once by backtracking."""
    peers = [sorted({j for _, unit in UNITS if i in unit for j in unit} - {i}) for i in range(CELLS)]
    grid = [0] * CELLS
    found = []

    def fill(i: int) -> None:
        if i == CELLS:
            found.append(tuple(grid))
            return
        for v in range(1, SIZE + 1):
            if all(grid[j] != v for j in peers[i]):
                grid[i] = v
                fill(i + 1)
                grid[i] = 0

    fill(0)
    return tuple(found)


@functools.lru_cache(maxsize=1)
def _solution_sets() -> tuple[tuple[int, ...], ...]:
    """``[cell][digit]``: a bit set (an int over the 288 solutions) of the solutions that
    hold ``digit`` in ``cell``; index 0 (a blank) allows every solution."""
    every = (1 << len(all_solutions())) - 1
    sets = [[every] + [0] * SIZE for _ in range(CELLS)]
    for k, s in enumerate(all_solutions()):
        for i, v in enumerate(s):
            sets[i][v] |= 1 << k
    return tuple(tuple(row) for row in sets)


def _consistent(grid: Iterable[int]) -> int:
    """Bit set of the solutions that keep every given of ``grid``."""
    sets = _solution_sets()
    bits = sets[0][0]
    for i, v in enumerate(grid):
        if v:
            bits &= sets[i][v]
    return bits


def solutions(grid: Iterable[int]) -> list[tuple[int, ...]]:
    """Every complete grid that keeps the givens of ``grid``."""
    bits = _consistent(grid)
    return [s for k, s in enumerate(all_solutions()) if bits >> k & 1]


def count_solutions(grid: Iterable[int]) -> int:
    return _consistent(grid).bit_count()


def solve(problem: SudokuProblem) -> str | None:
    """The solution in answer form (``1234/3412/2143/4321``); the first one if there are
    several; None if there is none."""
    found = solutions(problem.grid)
    return grid_to_rows(found[0]) if found else None


def random_puzzle(rng: random.Random, blanks: int) -> tuple[SudokuProblem, tuple[int, ...]]:
    """A puzzle with exactly ``blanks`` blanks and a unique solution, and that solution.

    Draw a solution, then blank its cells in random order, skipping any cell whose
    removal would allow a second solution; start over if fewer than ``blanks`` cells
    could be removed (rare below 11 blanks, common at 12)."""
    if not MIN_BLANKS <= blanks <= MAX_BLANKS:
        raise InputError(f"blanks must lie in {MIN_BLANKS}..{MAX_BLANKS} "
                         f"(a unique 4x4 puzzle keeps at least 4 givens), got {blanks}")
    pool = all_solutions()
    while True:
        solution = rng.choice(pool)
        grid = list(solution)
        removed = 0
        for i in rng.sample(range(CELLS), CELLS):
            grid[i] = 0
            if count_solutions(grid) == 1:
                removed += 1
                if removed == blanks:
                    return SudokuProblem(tuple(grid)), solution
            else:
                grid[i] = solution[i]


def generate_problems(n: int, seed: int = 0, min_blanks: int = 6,
                      max_blanks: int = 12) -> list[SudokuProblem]:
    """``n`` random puzzles with a unique solution and ``min_blanks``..``max_blanks``
    blanks (drawn uniformly)."""
    if not MIN_BLANKS <= min_blanks <= max_blanks <= MAX_BLANKS:
        raise InputError(f"need {MIN_BLANKS} <= min_blanks <= max_blanks <= {MAX_BLANKS}, "
                         f"got {min_blanks}..{max_blanks}")
    rng = random.Random(seed)
    return [random_puzzle(rng, rng.randint(min_blanks, max_blanks))[0] for _ in range(n)]


# ------------------------------------------------------------------ parsing

def _clash(grid: tuple[int, ...]) -> str | None:
    """A message naming the first digit that appears twice in a unit, else None."""
    for name, unit in UNITS:
        seen = set()
        for i in unit:
            v = grid[i]
            if v and v in seen:
                return f"{v} appears twice in {name}"
            seen.add(v)
    return None


_EXAMPLE = '{"grid": [1, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 4]} or "1.3./..2./..../...4"'


def parse_problem(obj) -> SudokuProblem:
    """A problem from a dict ``{"grid": [16 ints]}``, its JSON text, a list of 16 ints, or
    a 16-cell string (``1.3..2.........4``; ``.`` or ``0`` for a blank, ``/`` between rows
    allowed)."""
    if isinstance(obj, SudokuProblem):
        obj = obj.to_json()
    if isinstance(obj, str):
        text = obj.strip()
        if text[:1] in "{[":
            obj = json_problem(text, _EXAMPLE)
        else:
            cells = text.replace("/", "").replace(" ", "")
            bad = sorted({c for c in cells if c not in "01234" + BLANK})
            if bad:
                raise InputError(f"a Sudoku string holds only 1-4 and '.' or '0' for blanks; "
                                 f"found {''.join(bad)!r}. Expected {_EXAMPLE}")
            obj = [0 if c in "0" + BLANK else int(c) for c in cells]
    if isinstance(obj, dict):
        if set(obj) != {"grid"}:
            raise InputError(f'a Sudoku problem is an object with exactly the key "grid", '
                             f"e.g. {_EXAMPLE}")
        obj = obj["grid"]
    if not isinstance(obj, (list, tuple)):
        raise InputError(f"a Sudoku problem is a grid of 16 cells, e.g. {_EXAMPLE}")
    if len(obj) != CELLS:
        raise InputError(f"a Sudoku grid has {CELLS} cells (4 rows of 4), got {len(obj)}")
    for i, v in enumerate(obj):
        if type(v) is not int or not 0 <= v <= SIZE:
            raise InputError(f"each cell must be 0 (blank) or a digit 1-4; row {i // SIZE + 1}, "
                             f"column {i % SIZE + 1} holds {v!r}")
    grid = tuple(obj)
    clash = _clash(grid)
    if clash:
        raise InputError(f"the givens clash: {clash}")
    if not solutions(grid):
        raise InputError(f"the givens {grid_to_rows(grid)} admit no solution")
    return SudokuProblem(grid)


# ---------------------------------------------------------------- prompts and answers

#: the prompt templates (``template`` setting): the same problem written two ways
TEMPLATES = 2


def format_prompt(problem: SudokuProblem, template: int = 0) -> str:
    """The problem as the model reads it: template 0 ``Sudoku ..3./3.21/.3.2/.24.`` (``.``
    a blank, ``/`` between rows), template 1 ``Fill 0030 3021 0302 0240.`` (``0`` a blank,
    a space between rows). The answer's form is the same in both."""
    if template == 0:
        return PROMPT_PREFIX + grid_to_rows(problem.grid)
    if template == 1:
        rows = grid_to_rows(problem.grid).replace(BLANK, "0").replace("/", " ")
        return f"Fill {rows}."
    raise InputError(f"the sudoku task has prompt templates 0..{TEMPLATES - 1}, "
                     f"got {template!r}")


_PROMPT_RES = (re.compile(r"sudoku\s*([0-4.]{4})/([0-4.]{4})/([0-4.]{4})/([0-4.]{4})",
                          re.IGNORECASE),
               re.compile(r"fill\s*([0-4]{4}) ([0-4]{4}) ([0-4]{4}) ([0-4]{4})", re.IGNORECASE))


def problem_from_prompt(prompt: str) -> SudokuProblem | None:
    """Recover the problem from a prompt in either of :func:`format_prompt`'s templates,
    else None."""
    m = _PROMPT_RES[0].search(prompt) or _PROMPT_RES[1].search(prompt)
    if not m:
        return None
    try:
        return parse_problem("".join(m.groups()))
    except InputError:
        return None


_ANSWER_RE = re.compile(r"([1-4]{4})/([1-4]{4})/([1-4]{4})/([1-4]{4})|([1-4]{16})")


def extract_answer(text: str) -> str:
    """The 16 digits of a completion's grid, e.g. ``1234341221434321``.

    The first line, spaces removed, must be four rows of four digits 1-4 (``/`` between
    rows, or none); anything else comes back as that cleaned line, which no verifier
    accepts."""
    line = str(text).split("\n", 1)[0].replace(" ", "").strip()
    m = _ANSWER_RE.fullmatch(line)
    return "".join(g for g in m.groups() if g) if m else line


def answer_template(gen_length: int) -> dict[int, str]:
    """The answer's fixed characters: the ``/`` after each of the first three rows
    (slots 4, 9 and 14). They are format, not a decision: a search that committed to them
    would spend its L_c commitments on nothing. Empty when the answer is too short to hold
    a grid."""
    if gen_length < ANSWER_LENGTH:
        return {}
    return {r * (SIZE + 1) + SIZE: "/" for r in range(SIZE - 1)}


# ------------------------------------------------------------------------- verifier

def verify(answer: str, problem: SudokuProblem) -> bool:
    """True when ``answer`` is a complete valid grid that keeps every given. Never raises."""
    try:
        digits = extract_answer(answer)
        if len(digits) != CELLS or not all(c in DIGITS for c in digits):
            return False
        grid = tuple(int(c) for c in digits)
        if any(g and g != v for g, v in zip(problem.grid, grid, strict=True)):
            return False
        return all(sorted(grid[i] for i in unit) == [1, 2, 3, 4] for _, unit in UNITS)
    except Exception:  # a verifier must never raise on model output
        return False


# ---------------------------------------------------------------------------- JSONL

def save_problems(problems: Iterable[SudokuProblem], path: str | Path) -> None:
    save_jsonl(problems, path)


def load_problems(path: str | Path) -> list[SudokuProblem]:
    return load_jsonl(path, parse_problem, '{"grid": [16 ints]}')
