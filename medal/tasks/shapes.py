"""The shape of a recorded problem (a trace's ``run.problem``): what the task's views index.

A trace's problem is data a visitor may have written; every view of a task reads it as that
task's problem (the Sudoku board indexes 16 cells of ``grid``, the Countdown line joins
``numbers``, Pick and Twins list ``words``). Each task declares the shape here
(``Task.problem_shape``), the trace gate checks it (:mod:`medal.trace.gate.meaning`), so a
trace the gate returns draws in every view (issue 40). The shape is the types and lengths
the views rely on, not the generator's ranges: a problem recorded by another version of a
task still draws.
"""
from __future__ import annotations

from ..errors import InputError


def _keys(obj, keys: set, title: str, example: str) -> None:
    if not isinstance(obj, dict) or set(obj) != keys:
        names = " and ".join(f'"{k}"' for k in sorted(keys))
        got = (f"keys {', '.join(repr(k)[:30] for k in sorted(obj)[:4])}"
               if isinstance(obj, dict) else type(obj).__name__)
        raise InputError(f"a {title} problem is an object with exactly the key"
                         f"{'s' if len(keys) > 1 else ''} {names}, e.g. {example}; got {got}")


def _kind(v) -> str:
    return ("true/false" if type(v) is bool else "null" if v is None
            else {"str": "a text", "dict": "an object", "list": "a list", "float": "a fraction",
                  "int": "a whole number"}.get(type(v).__name__, type(v).__name__))


def whole_numbers(value, name: str, least: int, most: int) -> None:
    count = f"{least}" if least == most else f"{least} to {most}"
    if not isinstance(value, list):
        raise InputError(f"{name} is a list of {count} whole numbers; got {_kind(value)}")
    other = next((n for n in value if type(n) is not int), None)
    if not least <= len(value) <= most or other is not None or any(
            type(n) is not int for n in value):
        held = "" if all(type(n) is int for n in value) else f" holding {_kind(other)}"
        raise InputError(f"{name} is a list of {count} whole numbers; got a list of "
                         f"{len(value)}{held}")


def countdown(obj, example: str) -> None:
    if obj is None:      # a prompt the task could not read as a problem: drawn from it
        return
    _keys(obj, {"numbers", "target"}, "Countdown", example)
    whole_numbers(obj["numbers"], "numbers", 1, 16)
    if type(obj["target"]) is not int:
        raise InputError(f"target is a whole number; got {_kind(obj['target'])}")


def sudoku(obj, example: str, cells: int, most: int) -> None:
    if obj is None:      # a prompt the task could not read as a problem: drawn from it
        return
    _keys(obj, {"grid"}, "Sudoku", example)
    grid = obj["grid"]
    whole_numbers(grid, "grid", cells, cells)
    if not all(0 <= v <= most for v in grid):
        raise InputError(f"grid holds the digits 0 (a blank) to {most}; got "
                         f"{next(v for v in grid if not 0 <= v <= most)}")


def words(obj, title: str, example: str, least: int, most: int, length: int) -> None:
    if obj is None:      # a prompt the task could not read as a problem: drawn from it
        return
    _keys(obj, {"words"}, title, example)
    ws = obj["words"]
    if not isinstance(ws, list) or not least <= len(ws) <= most:
        got = f"a list of {len(ws)}" if isinstance(ws, list) else _kind(ws)
        raise InputError(f"words is a list of {least} to {most} words; got {got}")
    for w in ws:
        if type(w) is not str or len(w) > length:
            raise InputError(f"each word is a text of at most {length} letters; got "
                             f"{_kind(w) if type(w) is not str else f'{len(w)} characters'}")


def avoid(obj, example: str) -> None:
    if obj is None:      # a prompt the task could not read as a problem: drawn from it
        return
    _keys(obj, {"words", "avoid"}, "Avoid", example)
    words({"words": obj["words"]}, "Avoid", example, 1, 16, 64)
    if type(obj["avoid"]) is not int:
        raise InputError(f"avoid is a whole number; got {_kind(obj['avoid'])}")


def no_problem(obj) -> None:
    if obj is not None:
        raise InputError("the text task records no problem (null): its run takes a prompt")
