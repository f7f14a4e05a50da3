"""Views shaped like the task: the Sudoku board and the Countdown expression.

Both read the same per-slot record as the order view (:func:`.order.slot_tokens`): each
slot's token and the step that unmasked it. A Sudoku answer is four rows of four digits
with ``/`` between rows, so cell (r, c) is answer slot ``r * 5 + c``; givens are the
prompt's digits (grey), and every other cell is coloured by its unmasking step (the same
viridis scale as the order view; red outline: committed by the MCTS initialisation).
MEDAL's board and greedy's stand side by side. Every trace string is escaped.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..tasks import countdown as _cd
from ..tasks import pick as _pk
from ..tasks import sudoku as _sd
from ..tasks import task_of_trace as task_of  # noqa: F401  (the views' name for it)
from .common import STEP_COLOURS, esc, lerp_colour, run_config, run_info, text_colour_for
from .order import SlotToken, slot_tokens

GIVEN_BG = "#d9d9d9"


def _steps_total(trace: dict) -> int:
    cfg = run_config(trace)
    return max(1, cfg.get("steps") or cfg.get("gen_length") or 1)


def _verdict(trace: dict, which: str) -> bool | None:
    res = (trace.get("result") if which == "medal"
           else ((trace.get("comparison") or {}).get("result")))
    return (res or {}).get("verified")


def _verdict_html(ok: bool | None, running: bool) -> str:
    if running:
        return '<span style="color:#777">running…</span>'
    if ok is None:
        return '<span style="color:#777">— (no verifier)</span>'
    return ('<span style="color:#2ca02c;font-weight:600">✓ correct</span>' if ok
            else '<span style="color:#d62728;font-weight:600">✗ wrong</span>')


# ---------------------------------------------------------------------- Sudoku

@dataclass
class Cell:
    row: int
    col: int
    digit: str | None            # None while masked
    given: bool
    step: int | None = None      # unmasking step (None: a given, or still masked)
    by_search: bool = False
    tentative: bool = False


def sudoku_cells(trace: dict, which: str = "medal") -> list[Cell]:
    """The 16 cells of MEDAL's (``"medal"``) or greedy's (``"greedy"``) board."""
    problem = run_info(trace, "problem") or {}
    grid = problem.get("grid") if isinstance(problem, dict) else None
    if grid is None:
        found = _sd.problem_from_prompt(run_info(trace, "prompt") or "")
        grid = list(found.grid) if found else [0] * _sd.CELLS
    if not (run_info(trace, "model") or {}).get("builtin", False):
        # an LLM's tokens are not one character each: the board comes from its answer
        digits = _sd.extract_answer(_answer_text(trace, which) or "")
        return [Cell(row=i // _sd.SIZE, col=i % _sd.SIZE,
                     digit=digits[i] if len(digits) == _sd.CELLS else None,
                     given=bool(grid[i])) for i in range(_sd.CELLS)]
    slots = slot_tokens(trace, which)
    cells = []
    for i in range(_sd.CELLS):
        r, c = divmod(i, _sd.SIZE)
        slot = r * (_sd.SIZE + 1) + c
        st = slots[slot] if slot < len(slots) else SlotToken(slot=slot)
        given = bool(grid[i])
        cells.append(Cell(row=r, col=c, digit=st.text if st.step is not None else None,
                          given=given, step=st.step, by_search=st.by_search,
                          tentative=st.tentative))
    return cells


def _cell_html(cell: Cell, given_digit: int, n_steps: int) -> str:
    border = []
    if cell.col % _sd.BOX == _sd.BOX - 1 and cell.col < _sd.SIZE - 1:
        border.append("border-right:3px solid #333")
    if cell.row % _sd.BOX == _sd.BOX - 1 and cell.row < _sd.SIZE - 1:
        border.append("border-bottom:3px solid #333")
    style = ";".join(border)
    base = ("width:2.2em;height:2.2em;text-align:center;vertical-align:middle;"
            "font:600 1.25em monospace;border:1px solid #999;position:relative;")
    if cell.digit is not None and cell.step is None:  # no per-slot order (an LLM's answer)
        bg = GIVEN_BG if cell.given else "#ffffff"
        return (f'<td title="row {cell.row + 1}, column {cell.col + 1}" style="{base}'
                f'background:{bg};color:#222;{style}">{esc(cell.digit)}</td>')
    if cell.digit is None:
        title = f"row {cell.row + 1}, column {cell.col + 1}: still masked"
        text = "_" if not cell.given else esc(given_digit)
        return (f'<td title="{esc(title)}" style="{base}background:#f4f4f4;color:#aaa;{style}">'
                f'{text}</td>')
    bg = lerp_colour(cell.step / max(1, n_steps - 1), STEP_COLOURS)
    fg = text_colour_for(bg)
    mismatch = cell.given and str(given_digit) != cell.digit
    if cell.given and not mismatch:
        # a given the model copied: grey, as givens are
        bg, fg = GIVEN_BG, "#444444"
    outline = ("outline:3px dashed #d62728;outline-offset:-4px;" if cell.tentative
               else "outline:3px solid #d62728;outline-offset:-4px;" if cell.by_search else "")
    how = ("on the search's current path" if cell.tentative
           else "committed by the MCTS initialisation" if cell.by_search else "decoded")
    title = (f"row {cell.row + 1}, column {cell.col + 1}: {cell.digit} at step {cell.step} "
             f"({how})" + (" -- a given" if cell.given else "")
             + (f" -- overwrites the given {given_digit}" if mismatch else ""))
    if mismatch:
        outline += "box-shadow:inset 0 0 0 3px #d62728;"
    sub = (f'<sub style="position:absolute;right:2px;bottom:1px;font-size:0.5em;'
           f'font-weight:400;opacity:0.85">{cell.step}</sub>')
    return (f'<td title="{esc(title)}" style="{base}background:{bg};color:{fg};{outline}{style}">'
            f'{esc(cell.digit)}{sub}</td>')


def sudoku_board_html(trace: dict, which: str = "medal", title: str | None = None) -> str:
    """One 4x4 board as an HTML table (2x2 boxes drawn thick)."""
    problem = run_info(trace, "problem") or {}
    grid = (problem.get("grid") if isinstance(problem, dict) else None) or [0] * _sd.CELLS
    cells = sudoku_cells(trace, which)
    n_steps = _steps_total(trace)
    running = (trace.get("result") if which == "medal"
               else (trace.get("comparison") or {}).get("result")) is None
    name = title or (run_info(trace, "strategy", "") if which == "medal" else "greedy")
    rows = []
    for r in range(_sd.SIZE):
        rows.append("<tr>" + "".join(_cell_html(cells[r * _sd.SIZE + c], grid[r * _sd.SIZE + c],
                                                n_steps) for c in range(_sd.SIZE)) + "</tr>")
    return (f'<div class="medal-board" data-which="{esc(which)}" style="display:inline-block;'
            f'margin:0 24px 8px 0;vertical-align:top">'
            f'<div style="font-weight:600;margin-bottom:4px">{esc(name)} · '
            f'{_verdict_html(_verdict(trace, which), running)}</div>'
            '<table style="border-collapse:collapse;border:3px solid #333">'
            + "".join(rows) + "</table></div>")


def sudoku_boards_html(trace: dict) -> str:
    """MEDAL's board beside greedy's (when the trace has the comparison), with a key."""
    boards = [sudoku_board_html(trace, "medal")]
    if trace.get("comparison"):
        boards.append(sudoku_board_html(trace, "greedy"))
    early, late = lerp_colour(0, STEP_COLOURS), lerp_colour(1, STEP_COLOURS)
    key = ('<div style="font-size:12px;color:#555;margin-top:4px">'
           f'<span style="background:{GIVEN_BG};padding:0 4px">grey</span>: a given; '
           f'colour: the step the cell was unmasked (<span style="color:{early}">■</span> first '
           f'→ <span style="color:{late};text-shadow:0 0 1px #888">■</span> last, the small '
           'number); <span style="outline:2px solid #d62728">red outline</span>: committed by '
           'the MCTS initialisation (dashed: the search\'s current path); a red ring: a '
           'given the model overwrote. The row separators are fixed by the task, not '
           'decoded.</div>')
    return '<div class="medal-boards">' + "".join(boards) + key + "</div>"


# ---------------------------------------------------------------------- Countdown

def expression_value(text: str) -> str:
    """What an answer evaluates to, for display: ``= 20``, ``= 7/2``, or why it has none."""
    answer = _cd.extract_answer(text)
    if not answer:
        return "(empty)"
    if "=" in answer:  # the step form: the value is the last step's result
        last = answer.split(",")[-1]
        return f"= {last.split('=')[-1]} (last step)" if "=" in last else "(incomplete steps)"
    value = _cd.expression_value(answer)
    if value is None:
        return "(not a valid expression)"
    return f"= {value}"


def _answer_text(trace: dict, which: str) -> str | None:
    res = (trace.get("result") if which == "medal"
           else (trace.get("comparison") or {}).get("result"))
    return (res or {}).get("text")


def pick_value(text: str, words) -> str:
    """For a Pick answer: which listed word it is, or that it mixes them."""
    answer = _pk.extract_answer(text)
    if answer in (words or ()):
        return f"= word {list(words).index(answer) + 1}"
    return "(not one of the words: a mix)" if answer else "(empty)"


def expression_html(trace: dict) -> str:
    """The Countdown (or Pick) answer of MEDAL (and greedy): its tokens up to the end of
    the answer, each coloured by its unmasking step, then its value (Pick: which word) and
    the verifier's verdict."""
    problem = run_info(trace, "problem") or {}
    target = problem.get("target") if isinstance(problem, dict) else None
    numbers = problem.get("numbers") if isinstance(problem, dict) else None
    words = problem.get("words") if isinstance(problem, dict) else None
    n_steps = _steps_total(trace)
    rows = [("medal", run_info(trace, "strategy", ""))]
    if trace.get("comparison"):
        rows.append(("greedy", "greedy"))
    out = ['<div class="medal-expression" style="font-size:20px;line-height:2.2">']
    if numbers is not None and target is not None:
        out.append('<div style="font-size:14px;color:#555">numbers '
                   + esc(", ".join(str(n) for n in numbers)) + f" → target {esc(target)}</div>")
    if words:
        out.append('<div style="font-size:14px;color:#555;font-family:monospace">words: '
                   + esc("  ".join(str(w) for w in words)) + " (any one is right)</div>")
    for which, name in rows:
        spans = []
        for st in slot_tokens(trace, which):
            if st.after_eos:
                break
            if st.step is None:
                spans.append('<span title="still masked" style="display:inline-block;'
                             'min-width:0.8em;padding:0 3px;margin:1px;background:#eee;'
                             'color:#aaa;border-radius:3px;text-align:center">_</span>')
                continue
            if st.token is not None and st.token == (run_info(trace, "model") or {}).get("eos_id"):
                break
            bg = lerp_colour(st.step / max(1, n_steps - 1), STEP_COLOURS)
            outline = ("outline:2px dashed #d62728;" if st.tentative
                       else "outline:2px solid #d62728;" if st.by_search else "")
            spans.append(f'<span title="slot {st.slot} · step {st.step}" style="display:'
                         f'inline-block;min-width:0.8em;padding:0 3px;margin:1px;'
                         f'font-family:monospace;border-radius:3px;text-align:center;'
                         f'white-space:pre;background:{bg};color:{text_colour_for(bg)};'
                         f'{outline}outline-offset:-2px">{esc(st.text)}</span>')
        text = _answer_text(trace, which)
        done = text is not None
        value = (esc(pick_value(text, words) if words else expression_value(text))
                 if done else "")
        out.append('<div style="display:flex;align-items:center;gap:12px;flex-wrap:wrap">'
                   f'<div style="width:6em;font-size:14px;font-weight:600">{esc(name)}</div>'
                   f'<div>{"".join(spans) or "<i>nothing yet</i>"}</div>'
                   f'<div style="font-size:16px">{value}</div>'
                   f'<div style="font-size:15px">{_verdict_html(_verdict(trace, which), not done)}'
                   "</div></div>")
    out.append('<div style="font-size:12px;color:#555">colour: the step each token was '
               'unmasked (dark first, yellow last); red outline: committed by the MCTS '
               'initialisation. Padding after the end of the answer is left out.</div></div>')
    return "".join(out)


def task_view_html(trace: dict) -> str | None:
    """The view shaped like the run's task, or None for a task without one."""
    task = task_of(trace)
    if task == "sudoku" and (run_config(trace).get("gen_length") or 0) >= _sd.ANSWER_LENGTH:
        return sudoku_boards_html(trace)
    if task in ("countdown", "pick", "twins"):
        return expression_html(trace)
    return None
