"""Issue 38, item 6: docs/RESULTS.md traceable to data. The records behind every cell are
kept in docs/records/ (scripts/records.py); the document is what they give, recomputed
(no summary is trusted); its "what ran" lines are the commands results.sh recorded; no
line claims a run marked "not run"."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from medal import bench, load_model
from medal.config import GenerationConfig
from medal.tasks import SUDOKU

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "docs" / "records"
spec = importlib.util.spec_from_file_location("results_md", ROOT / "scripts" / "results_md.py")
results_md = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results_md)
records = sys.modules["records"]   # scripts/records.py, as results_md imports it


def test_the_committed_document_is_what_the_committed_records_give(tmp_path):
    """Every cell of docs/RESULTS.md recomputes from docs/records/: generating the document
    from the committed records gives the committed document, byte for byte."""
    out = tmp_path / "RESULTS.md"
    results_md.main(str(RECORDS), str(out))
    assert out.read_text() == (ROOT / "docs" / "RESULTS.md").read_text(), (
        "docs/RESULTS.md differs from what docs/records/ gives: regenerate it with "
        "`python scripts/results_md.py` (and never edit it by hand)")


#: the tasks docs/RESULTS.md reports (other tasks' records, e.g. a pre-registered
#: comparison's, live beside them under docs/records/ and are read by their own scripts)
TASKS = ("countdown", "sudoku", "pick", "twins")


def _problem_runs(data: dict) -> int:
    """How many (problem, strategy) records a compact file holds."""
    if data["kind"] == "bench":
        return sum(len(c["verified"]) for c in data["runs"].values())
    if data["kind"] == "sweep":
        return sum(len(c["verified"]) for st in data["settings"] for c in st["runs"].values())
    return 0


def test_the_records_are_small_and_each_says_what_ran():
    """Compact: at most 256 bytes per (problem, strategy) record in every file (about 110
    on average: a verdict bit, costs, a search's statistics, its candidates and Sudoku's
    commitments; a full answer or trace per record would break it), and a few MB in all
    (the headlines, their controls and sweeps, and issue 38's runs in both prompt
    templates: 7.3 MB)."""
    files = sorted(f for t in TASKS for f in (RECORDS / t).rglob("*.json"))
    assert files, "docs/records/ holds no records"
    assert sum(f.stat().st_size for f in files) < 10 * 2 ** 20
    for f in files:
        data = json.loads(f.read_text())
        n = _problem_runs(data)
        assert not n or f.stat().st_size <= 256 * n, (f, f.stat().st_size / n)
        assert data["format"] == records.FORMAT
        cmd = data["what_ran"]["command"]
        assert cmd.startswith(("python -m medal bench", "python scripts/headroom.py")), f
        # the command wrote the file the records stand for
        out = re.search(r"(?:--out |\s)(results/\S+\.json)", cmd).group(1)
        rel = f.relative_to(RECORDS).as_posix()
        assert out == "results/" + rel or (data["kind"] == "sweep" and
                                           Path(out).parent == Path("results/" + rel).parent)
        if data["kind"] == "bench":
            assert f"--n {data['problems'].split()[1]}" in cmd
            for s, col in data["runs"].items():
                n = len(col["verified"])
                assert all(len(col[k]) == n for k in ("forwards", "sequence_forwards",
                                                      "cache_hits", "seconds"))


def test_the_what_ran_lines_are_the_records_commands():
    text = (ROOT / "docs" / "RESULTS.md").read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith("- `python ")]
    ran = {(r["command"], r["path"]) for r in records.what_ran(RECORDS)
           if r["kind"] != "sweep" and r["path"].split("/")[0] in TASKS}
    shown = {(m.group(1), m.group(2)) for ln in lines
             if (m := re.match(r"- `(.+?)` — .* → `(.+?)`$", ln))}
    assert shown == ran
    for task, title in (("countdown", "Countdown"), ("sudoku", "Sudoku"), ("pick", "Pick"),
                        ("twins", "Twins")):
        if not any(p.startswith(task + "/") for _, p in ran):
            assert f"What ran for {task}: nothing has records" in text


def _bench_into(tmp_path, task, n, strategies, sweep=None, **cfg):
    """A real (small) bench run, written as results.sh writes one, and kept compact."""
    model = load_model(f"builtin:{task}")
    problems = SUDOKU.generate(n, seed=5)
    config = GenerationConfig(**cfg)
    recs = bench.bench(model, task, problems, strategies, config, progress=False)
    results = tmp_path / "results"
    out = results / task / "results.json"
    doc = bench.results_document(recs, strategies, task, config, "builtin:" + task,
                                 f"generated: {n} problems, seed 10005")
    bench._write(out, doc)
    command = (f"python -m medal bench --task {task} --n {n} --seed 5 --out "
               f"results/{task}/results.json --strategies {','.join(strategies)}")
    if sweep:
        name, values = sweep
        rows = bench.sweep(model, task, problems, name, values, config, progress=False)
        bench._write(out.with_name(f"sweep_{name}.json"), rows)
        command += f" --sweep {name}={','.join(map(str, values))}"
    Path(str(out) + ".cmd").write_text(json.dumps({"command": command, "started": "x",
                                                   "seconds": 1.0}))
    made = records.compact(out, tmp_path / "records", results)
    return doc, made


def test_load_recomputes_what_the_bench_computed(tmp_path):
    """A compact file rebuilds the bench's summaries: every count and mean exactly, the
    means of the probabilities and r_IG kept to 4 decimals within 5e-5 (each value is
    rounded to 4 decimals, so their mean moves by at most 5e-5), the times (kept to 0.1 ms)
    within 5e-5 s; a sweep's rows exactly."""
    S = ["greedy", "medal", "medal-order", "bst5", "medal-random-choice"]
    full, made = _bench_into(tmp_path, "sudoku", 8, S, sweep=("lc", [1, 2]))
    got = records.load(made[0])
    for s in S:
        a, b = full["summary"][s], got["summary"][s]
        for k, v in a.items():
            if k in ("mean_token_passes", "mean_valid_tokens", "tpf"):
                continue   # the cost axis's token counts are not kept (RESULTS.md shows none)
            if k == "search":
                assert {kk: vv for kk, vv in v.items() if kk != "fingerprint"} == \
                       {kk: vv for kk, vv in b[k].items() if kk != "fingerprint"}
            elif k == "commitments":
                for kk, vv in v.items():
                    assert b[k][kk] == pytest.approx(vv, abs=5e-5), (s, kk)
            elif k in ("mean_seconds", "ms_per_iteration", "bookkeeping_share"):
                assert b[k] == pytest.approx(v, abs=5e-5 if k == "mean_seconds" else 0.05)
            else:
                assert b[k] == v, (s, k)
    assert got["candidate_analysis_by_strategy"]["medal"] == \
           full["candidate_analysis_by_strategy"]["medal"]
    rows = records.load(made[1])
    sweep = json.loads((tmp_path / "results" / "sudoku" / "sweep_lc.json").read_text())
    for a, b in zip(sweep, rows):
        assert (a["value"], a["accuracy"], a["verified"]) == (b["value"], b["accuracy"],
                                                               b["verified"])
        assert a["search"]["mean_nodes"] == b["search"]["mean_nodes"]
    # the same search gives the same fingerprint, another search another
    fp = {s: got["summary"][s].get("search", {}).get("fingerprint") for s in S}
    assert fp["medal"] != fp["medal-order"]
    again = records.load(made[0])
    assert again["summary"]["medal"]["search"]["fingerprint"] == fp["medal"]


def test_a_run_without_its_record_of_what_ran_is_refused(tmp_path):
    out = tmp_path / "results" / "sudoku" / "results.json"
    out.parent.mkdir(parents=True)
    out.write_text("{}")
    with pytest.raises(SystemExit, match="results.sh writes what it ran"):
        records.compact(out, tmp_path / "records", tmp_path / "results")


NO_CLAIM = re.compile(r"\b(reaches|better|worse|reproduced|reversed|beats|significant|"
                      r"rescues|found)\b", re.I)


def _not_run(row: str) -> bool:
    """A table row with nothing measured: every cell after its label empty, a dash or
    "not run"."""
    return all(c.strip() in ("", "—", "(not run)", "not run") for c in row.split("|")[2:-1])


def _claims_about_runs_not_run(text: str) -> list[str]:
    """The lines of each section whose table rows are all "not run" that claim something
    (the verdict rules' definitions aside)."""
    bad = []
    for section in re.split(r"\n(?=## )", text):
        lines = section.splitlines()
        rows = [ln for ln in lines if ln.startswith("|") and not ln.startswith("|---")][1:]
        if rows and all(_not_run(ln) for ln in rows):
            bad += [ln for ln in lines[1:] if not ln.startswith("|") and NO_CLAIM.search(ln)
                    and "not run" not in ln and "Verdict rules" not in ln]
    return bad


def test_no_line_claims_a_run_marked_not_run(tmp_path):
    """No section whose every row says "not run" makes a claim (RESULTS.md:425 said "No
    verifier-free configuration tried reaches the target" over seven rows not run); the
    research section with its configurations not run says so instead."""
    assert _claims_about_runs_not_run((ROOT / "docs" / "RESULTS.md").read_text()) == []
    full, _ = _bench_into(tmp_path, "sudoku", 4, ["greedy", "bst5", "medal"])
    # only a Countdown headline: every research configuration is "not run"
    cd = tmp_path / "only" / "countdown"
    cd.mkdir(parents=True)
    (cd / "results.json").write_text(json.dumps(dict(full, task="countdown")))
    out = tmp_path / "R.md"
    results_md.main(str(tmp_path / "only"), str(out))
    text = out.read_text()
    research = text.split("## Research:")[1].split("\n## ")[0]
    assert "(not run)" in research
    assert "No verifier-free configuration tried reaches the target" not in research
    assert "nothing is claimed about them" in research
    assert _claims_about_runs_not_run(text) == []
