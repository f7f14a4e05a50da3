"""The gate guarantees "fit to render" (issue 40, item 2): a trace ``loads_trace`` returns
draws in every view. ``run.problem`` is the part every task's own view indexes (the
Sudoku board's 16 cells, the Countdown line's numbers, Pick's and Twins' words); before,
it got only a plain-data check, and six of 36 hostile problems were accepted and then
crashed the frames, the export, ``medal diff --html`` and ``medal.show``.

Here every task's problem fields are driven with hostile values (an enumeration, then
Hypothesis over tasks, keys and values): each case is refused with a TraceError naming
``run/problem``, or it renders on every surface -- a view that raises is a failure of the
gate.
"""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import medal
from medal.viewer.comparison import Comparison
from medal.diff import diff_traces
from medal.errors import TraceError
from medal.tasks import TASKS
from medal.trace import dumps, load_trace, loads_trace, pack
from medal.viewer.export import export_html
from viz_support import render_everything

EXAMPLES = Path(__file__).resolve().parents[2] / "medal" / "assets" / "examples"
#: one shipped example per task with a problem (the text task: a trace made here)
EXAMPLE_OF = {"countdown": "countdown-medal-fixes-greedy", "sudoku": "sudoku",
              "pick": "pick-medal-does-not-fix", "twins": "twins-medal-fixes-greedy"}
FIELDS = {"countdown": ("numbers", "target"), "sudoku": ("grid",), "pick": ("words",),
          "twins": ("words",)}
FUZZ_EXAMPLES = int(os.environ.get("MEDAL_FUZZ_EXAMPLES", "150"))
FUZZ_FIXED = "MEDAL_FUZZ_EXAMPLES" not in os.environ

#: values a visitor may put in any problem field: of every JSON type, of the lengths the
#: views index past, with markup and bidirectional text
HOSTILE = [None, True, 0, -1, 5, 7, 2 ** 63 - 1, 1.5, "", "1234", "abcdefgh", "<b>x</b>",
           "\u202eevil", {}, {"a": 1}, [], [1], [0] * 15, [0] * 16, [5] * 16, [-1] * 16,
           [1.5] * 16, [None] * 16, ["1"] * 16, [[1]] * 16, list(range(100)), [4, 18, 13],
           [4, "18", 13], ["abcdefgh", "abcdhfgc"], ["abcdefgh", 3], ["x" * 500],
           ["\u202eabcdefgh", "<script>"], [{"a": 1}], [True, False, True]]


class _Quiet(dict):
    """The example traces, without their text in every Hypothesis report."""

    def __repr__(self):
        return f"<examples: {', '.join(self)}>"


@pytest.fixture(scope="module")
def examples():
    return _Quiet({task: load_trace(EXAMPLES / f"{name}.json")
                   for task, name in EXAMPLE_OF.items()})


def render_on_every_surface(trace: dict) -> None:
    """What a visitor can draw a trace with: the app's frames and every view function
    (render_everything), the HTML export, ``medal diff --html`` (the report and the
    side-by-side page) and ``medal.show``."""
    render_everything(trace)
    export_html(trace)
    diff_traces(trace, trace).format()
    Comparison(trace, trace, ("a", "b")).html()
    medal.show(trace).html()


def outcome(trace: dict, what: str) -> str:
    """'refused' (a TraceError naming the problem's place) or 'rendered'."""
    text = dumps(trace)
    try:
        back = loads_trace(text)
    except TraceError as exc:
        return "refused" if "run/problem" in str(exc) or "run/task" in str(exc) else "other"
    try:
        render_on_every_surface(back)
    except Exception as exc:  # noqa: BLE001 -- any exception is the gate's failure
        raise AssertionError(f"accepted, then a view raised {type(exc).__name__}: {exc} "
                             f"({what})") from exc
    return "rendered"


def _with(trace: dict, task, problem) -> dict:
    t = copy.copy(trace)
    t["run"] = dict(trace["run"], problem=problem)
    if task == "-":
        t["run"].pop("task", None)
    else:
        t["run"]["task"] = task
    return t


@pytest.mark.parametrize("task", sorted(FIELDS))
def test_every_field_of_every_tasks_problem_is_refused_or_drawn(examples, task):
    """Each field of the task's problem, and one extra key, set to every hostile value;
    the recorded task kept, and removed (then read from the problem's keys, as the views
    read it)."""
    trace = examples[task]
    seen = {"refused": 0, "rendered": 0, "other": 0}
    for recorded in (task, "-"):
        for key in FIELDS[task] + ("extra",):
            for value in HOSTILE:
                problem = dict(trace["run"]["problem"], **{key: value})
                seen[outcome(_with(trace, recorded, problem),
                             f"{task}: {key} = {value!r:.60}")] += 1
    assert seen["other"] == 0 and seen["refused"] > 0, seen


def test_the_issues_six_problems_are_refused(examples):
    """Countdown numbers 5, Pick words 7, a Sudoku grid of [1], "1234" or {"a": 1}."""
    cases = [("countdown", {"numbers": 5, "target": 20}), ("pick", {"words": 7}),
             ("twins", {"words": 7}), ("sudoku", {"grid": [1]}), ("sudoku", {"grid": "1234"}),
             ("sudoku", {"grid": {"a": 1}})]
    for task, problem in cases:
        with pytest.raises(TraceError, match=r"invalid trace at run/problem: (numbers|words|"
                                             r"grid) is a list"):
            loads_trace(dumps(_with(examples[task], task, problem)))
        # in the written (packed) form too, and through medal.show's gate
        with pytest.raises(TraceError, match="run/problem"):
            loads_trace(json.dumps(pack(_with(examples[task], task, problem))))
        with pytest.raises(TraceError, match="run/problem"):
            medal.show(_with(examples[task], task, problem))


def test_every_shipped_problem_has_its_tasks_shape(examples):
    for task, trace in examples.items():
        TASKS[task].problem_shape(trace["run"]["problem"])
        for problem in TASKS[task].example_problems:
            TASKS[task].problem_shape(problem.to_json())
    TASKS["text"].problem_shape(None)


problem_keys = st.sampled_from(["numbers", "target", "grid", "words", "extra"])


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=FUZZ_FIXED,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(sorted(FIELDS)),
       recorded=st.sampled_from(sorted(TASKS) + ["-", None, "chess"]),
       problem=st.one_of(st.none(), st.dictionaries(problem_keys, st.sampled_from(HOSTILE),
                                                    max_size=4)))
def test_fuzz_tasks_keys_and_values(examples, base, recorded, problem):
    """Any recorded task (or none, or an unknown one) over any mix of the tasks' keys."""
    assert outcome(_with(examples[base], recorded, problem),
                   f"{base} as {recorded}: {problem!r:.80}") != "other"
