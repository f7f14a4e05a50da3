"""The tables: a task's strategies with the search's statistics, a sweep's row."""
from __future__ import annotations

from .figures import ci, pct


STRATEGY_ORDER = ["greedy", "random", "entropy", "margin", "eb", "bst5", "medal",
                  "medal-no-mcts", "medal-no-decomposition", "medal-margin-only",
                  "medal-order", "medal-choice", "medal-branching", "medal-random-choice",
                  "medal-explore", "medal-wide-pool"]

#: the candidates' headroom beside a search's accuracy (issue 38; medal.bench.candidate_headroom)
HEADROOM_HEAD = "oracle over its candidates | random pick of them"


def headroom_cells(m: dict) -> str:
    """The best of a search's C candidates by the verifier, and the expected accuracy of a
    uniformly random one ("—" for a strategy without candidates)."""
    if m.get("oracle_accuracy") is None:
        return "— | —"
    return f"{pct(m['oracle_accuracy'])} | {pct(m['random_choice_accuracy'])}"


#: the search's statistics in every results table (means per problem over the runs that
#: searched; "—" for strategies without a search)
SEARCH_HEAD = ("iterations | nodes | off-line expansions | distinct first commitments | "
               "winner off the most confident path")


def search_stat_cells(m: dict) -> str:
    st = m.get("search") or {}
    if not st:
        return "— | — | — | — | —"
    off = st.get("share_winner_off_confident_path")
    return (f"{st['mean_iterations']:.1f} | {st['mean_nodes']:.1f} | "
            f"{st['mean_branch_expansions']:.2f} | {st['mean_distinct_first_commitments']:.2f} | "
            + ("—" if off is None else pct(off)))


def strategy_table(doc) -> list[str]:
    rows = ["| strategy | accuracy | 95% CI | " + HEADROOM_HEAD + " | calls | seqs | cache hits "
            "| sec | " + SEARCH_HEAD + " |", "|---|" + "---|" * 13]
    for s in [s for s in STRATEGY_ORDER if s in doc["summary"]] + \
             [s for s in doc["summary"] if s not in STRATEGY_ORDER]:
        m = doc["summary"][s]
        rows.append(f"| {s} | {pct(m['accuracy'])} | {ci(m)} | {headroom_cells(m)} | "
                    f"{m['mean_forwards']:.1f} | "
                    f"{m['mean_sequence_forwards']:.1f} | {m.get('mean_cache_hits', 0):.1f} | "
                    f"{m['mean_seconds']:.3f} | {search_stat_cells(m)} |")
    return rows


def sweep_text(rows) -> str:
    if not rows:
        return "(not run)"
    return ", ".join(f"{r['value']}: {pct(r['accuracy'])} ({r['mean_sequence_forwards']:.0f} seqs)"
                     for r in rows)


def _search_cells(m: dict) -> str:
    st = m.get("search") or {}
    if not st:
        return "— | — | — | — | —"
    reasons = m.get("stop_reasons") or {}
    why = ", ".join(f"{k} {v}" for k, v in reasons.items() if v) or "—"
    return (f"{st['mean_iterations']:.1f} | {why} | {st['mean_depth_reached']:.1f} | "
            f"{st['mean_distinct_candidate_states']:.2f} | "
            f"{st['mean_distinct_first_commitments']:.2f}")
