"""MEDAL Explorer -- the Benchmark page: a ``medal bench --out`` results file as a table
and as accuracy against cost.

Layout only: reading and validating the file, the table and the figure are built by
``medal.views.results``. The loaded file is kept in the session, so it survives a switch
to another page and back.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from medal.serving import upload_mb
from medal.views.results import (COSTS, MAX_RESULTS_BYTES, ResultsError, frontier,
                               frontier_figure, loads_results, summary_rows)
from medal.views.safe import md

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "bench-countdown.json"

st.title("Benchmark results")
st.caption("Open a results file written by `python -m medal bench ... --out results.json` "
           "to compare strategies: accuracy with its 95% interval, and what each costs.")

up = st.file_uploader(
    "Results file (JSON)", type=["json"], key="bench_upload",
    help=f"The file `medal bench --out` writes; at most {MAX_RESULTS_BYTES:,} bytes. "
         "Example: `python -m medal bench --task countdown --n 100 --strategies "
         "greedy,bst5,medal --out results.json`",
    max_upload_size=upload_mb(MAX_RESULTS_BYTES))
if up is not None and (st.session_state.get("bench_doc") or (None,))[0] != up.file_id:
    if up.size > MAX_RESULTS_BYTES:
        st.session_state["bench_doc"] = (up.file_id, up.name, None,
                                         f"the file is {up.size:,} bytes; the limit is "
                                         f"{MAX_RESULTS_BYTES:,} bytes")
    else:
        try:
            st.session_state["bench_doc"] = (up.file_id, up.name, loads_results(up.getvalue()),
                                             None)
        except ResultsError as exc:
            st.session_state["bench_doc"] = (up.file_id, up.name, None, str(exc))

loaded = st.session_state.get("bench_doc")
if not loaded and SHIPPED.is_file():
    # until a file is uploaded: the shipped results of the built-in Countdown model
    try:
        loaded = (None, "the shipped results of the built-in Countdown model "
                        f"(medal/assets/{SHIPPED.name})",
                  loads_results(SHIPPED.read_bytes()), None)
    except ResultsError as exc:
        loaded = (None, SHIPPED.name, None, str(exc))
if not loaded:
    st.info("Upload a results file above. No model is needed to read it.")
    st.stop()
_, name, doc, error = loaded
if error:
    st.error(md(f"Cannot read {name}: {error}"))  # the name and the file's text: as text
    st.stop()

st.success(md(f"Loaded {name}"))
facts = {"task": doc.get("task"), "model": doc.get("model"), "problems": doc.get("problems"),
         "strategies": ", ".join(map(str, doc["summary"])),
         "processes": doc.get("processes"),
         "KV cache (approximate)": doc.get("kv_cache")}
st.dataframe([{"": k, "value": "—" if v is None else str(v)} for k, v in facts.items()],
             hide_index=True)

st.subheader("Strategies")
def _one_type_per_column(rows: list[dict]) -> list[dict]:
    """A column holding numbers shows a missing one as empty, not as "—" (a column of
    mixed numbers and text cannot be drawn: greedy has no MCTS iterations, MEDAL does)."""
    numeric = {k for r in rows for k, v in r.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return [{k: (None if k in numeric and isinstance(v, str) else v) for k, v in r.items()}
            for r in rows]


st.dataframe(_one_type_per_column(summary_rows(doc)), hide_index=True, placeholder="—")
st.caption("accuracy: share of problems whose answer the task's verifier accepts (Wilson 95% "
           "interval); forward calls: batched model calls per problem; sequences: sequences "
           "those calls evaluated (MEDAL's expansions evaluate several at once); token "
           "passes: token positions the network processed; TPF: valid output tokens per "
           "sequence forward (prompt and padding excluded; medal.cost); seconds: "
           "wall clock on the machine that ran the benchmark.")

st.subheader("Accuracy against cost")
costs = [c for c in COSTS if all(isinstance(m.get(c), (int, float))
                                 for m in doc["summary"].values())]
cost = st.radio("Cost", costs, format_func=lambda c: COSTS[c], horizontal=True,
                key="bench_cost")
st.plotly_chart(frontier_figure(doc, cost), config={"displaylogo": False})
st.text("On the frontier (no strategy is both cheaper and more accurate): "
        + ", ".join(map(str, frontier(doc, cost))))

if doc.get("candidate_analysis"):
    st.subheader("Candidate analysis")
    st.dataframe([{"figure": k, "value": "—" if v is None else (f"{v:.3f}" if isinstance(v, float)
                                                                 else str(v))}
                  for k, v in doc["candidate_analysis"].items()], hide_index=True)
with st.expander("Run parameters"):
    st.json(doc.get("config") or {})
