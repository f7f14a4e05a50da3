"""The records behind docs/RESULTS.md, kept compact in the repository (issue 38: every cell
traceable to the data it came from).

    python scripts/records.py results/sudoku/results.json [...]   # -> docs/records/sudoku/...

``scripts/results.sh`` calls it after each run: the run's full output in ``results/``
(git-ignored: a bench document, its sweeps, a headroom file) becomes one compact file under
``docs/records/`` at the same path below the task folder, with the exact command that made
it (``OUT.cmd``, written by results.sh from what it ran). A compact file holds, per
strategy and per problem, the verdict, the cost and what the document's tables read (the
search's statistics, each candidate's verdict, answer class and information gain, the
slots per step, the first L_c commitments where they can be judged) -- never a summary:
:func:`load` rebuilds the bench document's summaries from the records with the bench's
own code (:func:`medal.bench.summarise`, :func:`medal.bench.candidate_analysis`), so
every figure of docs/RESULTS.md is recomputed from them each time it is generated.

What is left out: the problems themselves (the command's seed regenerates them), the
answers' text (a candidate's answer is kept as its class among the problem's candidates:
equal answers, equal class), the traces' figures the document does not show. A search's
identity on a problem (what "the same search" compares) is kept as a short hash of its
iterations, candidates, their answers and the winner (:func:`search_hash`).
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from medal.bench import candidate_analysis, summarise  # noqa: E402

FORMAT = "medal-records"
VERSION = 1
#: where the compact records live, and the folder of full outputs they are made from
RECORDS = ROOT / "docs" / "records"
RESULTS = ROOT / "results"
STOPS = {"candidates": "c", "budget": "b", "exhausted": "e"}
STATS = ("iterations", "depth_reached", "nodes", "branch_expansions", "candidates",
         "distinct_candidate_states", "distinct_first_commitments")


def search_hash(rec: dict) -> str:
    """A short hash of what a search chose on one problem (its iterations, the winner,
    each candidate's node and final answer, the answer): equal hashes, the same search."""
    key = [rec.get("iterations"), rec.get("winner"),
           [(c["node"], c.get("final_answer")) for c in rec.get("candidates") or []],
           rec.get("answer")]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:10]


def _bit(v) -> str:
    return "-" if v is None else "1" if v else "0"


def _unbit(ch: str):
    return None if ch == "-" else ch == "1"


def _r(x, digits=4):
    return None if x is None else round(float(x), digits)


def compact_runs(records: list[dict], strategies: list[str]) -> dict:
    """Per strategy, its records as columns in problem order (see the module's doc)."""
    out = {}
    for s in strategies:
        rows = sorted((r for r in records if r["strategy"] == s), key=lambda r: r["index"])
        if not rows:
            continue
        col: dict = {"index": [r["index"] for r in rows],
                     "verified": "".join(_bit(r["verified"]) for r in rows)}
        if col["index"] == list(range(len(rows))):
            del col["index"]
        for k in ("forwards", "sequence_forwards", "cache_hits"):
            col[k] = [r.get(k, 0) for r in rows]
        col["seconds"] = [_r(r["seconds"]) for r in rows]
        patterns = []
        for r in rows:
            p = ",".join(map(str, r.get("slots_per_step") or []))
            if p not in patterns:
                patterns.append(p)
        col["slots_per_step"] = {"patterns": patterns,
                                 "problem": [patterns.index(",".join(map(str, r.get(
                                     "slots_per_step") or []))) for r in rows]}
        if any(r.get("iterations") for r in rows):
            col["stop_reason"] = "".join(STOPS.get(r.get("stop_reason"), "-") for r in rows)
            col["search_seconds"] = [_r(r.get("search_seconds"), 5) for r in rows]
            col["search_model_seconds"] = [_r(r.get("search_model_seconds"), 5) for r in rows]
            for k in STATS:
                col[k] = [(r.get("search_stats") or {}).get(k) for r in rows]
            col["winner_off_confident_path"] = "".join(
                _bit((r.get("search_stats") or {}).get("winner_off_confident_path"))
                for r in rows)
            col["search_hash"] = [search_hash(r) for r in rows]
            cands = []
            for r in rows:
                classes: list = []
                one = []
                for c in r.get("candidates") or []:
                    if c.get("final_answer") not in classes:
                        classes.append(c.get("final_answer"))
                    ig, score = _r(c["cumulative_ig"]), _r(c["score"])
                    one.append([_bit(c.get("final_verified")), classes.index(c.get("final_answer")),
                                ig] + ([] if score == ig else [score]))
                cands.append(one)
            col["candidate_finals"] = cands
        if any(c.get("wrong") is not None for r in rows for c in r.get("commitments") or []):
            col["commitments"] = [[[_r(c["p"]), _r(c["r_ig"]), _bit(c["wrong"])]
                                   for c in r.get("commitments") or []] for r in rows]
        out[s] = col
    return out


def expand_runs(runs: dict) -> list[dict]:
    """The records of :func:`compact_runs`' columns, as the bench's records (the fields
    its summaries and the document read)."""
    records = []
    for s, col in runs.items():
        n = len(col["verified"])
        index = col.get("index") or list(range(n))
        pats = col["slots_per_step"]
        for j in range(n):
            rec = {"strategy": s, "index": index[j], "verified": _unbit(col["verified"][j]),
                   "forwards": col["forwards"][j],
                   "sequence_forwards": col["sequence_forwards"][j],
                   "cache_hits": col["cache_hits"][j], "seconds": col["seconds"][j],
                   "slots_per_step": [int(x) for x in
                                      pats["patterns"][pats["problem"][j]].split(",") if x]}
            if "stop_reason" in col:
                stats = {k: col[k][j] for k in STATS}
                off = _unbit(col["winner_off_confident_path"][j])
                if off is not None:
                    stats["winner_off_confident_path"] = off
                rec.update(iterations=col["iterations"][j],
                           stop_reason={v: k for k, v in STOPS.items()}.get(
                               col["stop_reason"][j]),
                           search_seconds=col["search_seconds"][j],
                           search_model_seconds=col["search_model_seconds"][j],
                           search_stats=stats, search_hash=col["search_hash"][j],
                           candidates=[{"node": k, "final_verified": _unbit(c[0]),
                                        "final_answer": c[1], "cumulative_ig": c[2],
                                        "score": c[3] if len(c) > 3 else c[2]}
                                       for k, c in enumerate(col["candidate_finals"][j])])
            if "commitments" in col:
                rec["commitments"] = [{"p": p, "r_ig": r, "wrong": _unbit(w)}
                                      for p, r, w in col["commitments"][j]]
            records.append(rec)
    return records


def summaries(records: list[dict], strategies: list[str]) -> dict:
    """The bench's summaries of the records, each search's fingerprint made from the
    records' per-problem search hashes (equal fingerprints: the same search everywhere)."""
    out = summarise(records, strategies)
    for s, m in out.items():
        if "search" in m:
            hashes = [r["search_hash"] for r in sorted(
                (r for r in records if r["strategy"] == s), key=lambda r: r["index"])]
            m["search"]["fingerprint"] = hashlib.sha256(
                json.dumps(hashes).encode()).hexdigest()[:12]
    return out


def _what_ran(out: Path) -> dict:
    cmd = Path(str(out) + ".cmd")
    if not cmd.is_file():
        raise SystemExit(f"no {cmd}: scripts/results.sh writes what it ran there; run the "
                         "measurement through it")
    return json.loads(cmd.read_text())


def _changed_config(config: dict) -> dict:
    from medal.config import GenerationConfig
    default = GenerationConfig().to_json()
    return {k: v for k, v in config.items() if default.get(k) != v}


def compact_bench(doc: dict) -> dict:
    return {"kind": "bench", "task": doc["task"], "problems": doc["problems"],
            "strategies": doc["strategies"], "config": _changed_config(doc["config"]),
            "runs": compact_runs(doc["records"], doc["strategies"])}


def compact_sweep(rows: list[dict]) -> dict:
    return {"kind": "sweep", "param": rows[0]["param"],
            "settings": [{"value": r["value"],
                          "runs": compact_runs(r["records"], [r["records"][0]["strategy"]])}
                         for r in rows]}


def compact(out: Path, records_root: Path = RECORDS, results_root: Path = RESULTS) -> list[Path]:
    """Keep the run written at ``out`` (and the sweeps its command wrote beside it) compact
    under ``records_root``; returns the files written."""
    out = Path(out).resolve()
    what = _what_ran(out)
    rel = out.relative_to(results_root.resolve())
    made = []
    doc = json.loads(out.read_text())
    items = []
    if isinstance(doc, dict) and doc.get("format") == "medal-bench":
        items.append((rel, compact_bench(doc)))
        for param in re.findall(r"--sweep (\w+)=", what["command"]):
            sw = out.with_name(f"sweep_{param}.json")
            items.append((rel.with_name(sw.name), compact_sweep(json.loads(sw.read_text()))))
    else:   # a headroom file (scripts/headroom.py): small, kept as written
        items.append((rel, {"kind": "as-written", "document": doc}))
    for path, body in items:
        target = records_root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"format": FORMAT, "version": VERSION,
                                      "what_ran": what, **body},
                                     separators=(",", ":")) + "\n")
        made.append(target)
    return made


def load(path: Path):
    """The document a compact file stands for, rebuilt from its records: a bench document
    (summaries recomputed), a sweep's rows (each setting's summary and verdicts), or a file
    kept as written. None when there is no such file."""
    path = Path(path)
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        return data   # not a records file (a test's plain bench JSON)
    if data["kind"] == "as-written":
        return data["document"]
    if data["kind"] == "sweep":
        rows = []
        for st in data["settings"]:
            recs = expand_runs(st["runs"])
            s = next(iter(st["runs"]))
            m = summaries(recs, [s])[s]
            m["verified"] = [bool(r["verified"]) for r in sorted(recs, key=lambda r: r["index"])]
            rows.append({"param": data["param"], "value": st["value"], **m})
        return rows
    from medal.config import GenerationConfig
    records = expand_runs(data["runs"])
    strategies = [s for s in data["strategies"] if s in data["runs"]]
    by_strategy = {}
    for s in strategies:
        a = candidate_analysis([r for r in records if r["strategy"] == s])
        if a is not None:
            by_strategy[s] = {"strategy": s, **a}
    return {"format": "medal-bench", "task": data["task"], "problems": data["problems"],
            "strategies": strategies,
            "config": {**GenerationConfig().to_json(), **data["config"]},
            "what_ran": data["what_ran"], "summary": summaries(records, strategies),
            "records": records, "candidate_analysis_by_strategy": by_strategy,
            "candidate_analysis": next(iter(by_strategy.values()), None)}


def what_ran(records_root: Path = RECORDS) -> list[dict]:
    """Every compact file's record of what ran, with its path under ``records_root``."""
    out = []
    for path in sorted(Path(records_root).rglob("*.json")):
        data = json.loads(path.read_text())
        if data.get("format") == FORMAT:
            out.append({"path": path.relative_to(records_root).as_posix(), **data["what_ran"],
                        "kind": data["kind"],
                        "problems": data.get("problems")})
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    for arg in argv:
        for made in compact(Path(arg)):
            print(f"kept {made.relative_to(ROOT)} ({made.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
