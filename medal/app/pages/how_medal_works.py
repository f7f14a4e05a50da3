"""MEDAL Explorer -- the teaching page: the paper's formulas beside the current run's numbers.

Layout only; the numbers come from ``medal.views.teaching``, read from the same trace the
Run page shows (the live run, or the uploaded trace).
"""
from __future__ import annotations

import streamlit as st

from medal.views import teaching
from medal.examples import list_examples, load_example
from medal.views.safe import md  # trace strings are shown as text, never as Markdown

def current_trace() -> dict | None:
    """The run open on the Run page: the live run, the uploaded trace or the example."""
    saved = st.session_state.get("saved_widgets", {})
    source = st.session_state.get("w_source", saved.get("w_source"))
    if source == "Uploaded trace":
        uploaded = st.session_state.get("uploaded")
        return uploaded[1] if uploaded else None
    if source == "Example":
        name = st.session_state.get("example_name")
        shipped = {e.name: e for e in list_examples()}
        return load_example(shipped[name]) if name in shipped else None
    run = st.session_state.get("run")
    return run.trace if run is not None else None


def live(title: str = "In the current run") -> None:
    st.markdown(f"**{title}**")


trace = current_trace()
st.title("How MEDAL works")
st.markdown(
    "MEDAL (*Monte Carlo tree search initialisation for diffusion language models*) decodes "
    "a masked diffusion model in three parts: **(A)** the prompt is augmented with task "
    "decomposition guidance; **(B)** a Monte Carlo tree search chooses the first L_c "
    "unmasking decisions -- which slot to fill, with which token; **(C)** the remaining "
    "masks are filled by confidence-guided unmasking. Each formula below is followed by the "
    "same formula with the numbers of the current run.")
if trace is None:
    st.info("Open an example on the Run page (or start a run, or upload a trace there) to "
            "see its numbers here.")
else:
    st.caption(md(f"Current run: {trace['run']['strategy']} on "
                  f"{trace['run']['model'].get('name')}, prompt {trace['run']['prompt']!r}"))

st.header("1. Confidence-adjusted score")
st.markdown("For each masked slot i, one forward pass gives a distribution p^i over the "
            "vocabulary. Slots whose distribution is flat (high entropy) or whose two best "
            "tokens are close (small margin) are down-weighted:")
st.latex(teaching.FORMULAS["entropy"])
st.latex(teaching.FORMULAS["margin"])
st.latex(teaching.FORMULAS["score"])
ex = teaching.score_example(trace)
if ex:
    live()
    st.markdown(f"The root's best action fills slot **{ex['slot']}** with token "
                f"{md(repr(ex['token']))}: p = {ex['p']:.4f}, H = {ex['H']:.4f}, margin = "
                f"{ex['margin']:.4f}, γ = {ex['gamma']}.")
    st.latex(ex["latex"])
    st.caption(f"Recorded by the search: s = {ex['recorded']:.6g}"
               + (" (this run scores by margin only: the ablation)"
                  if ex["scoring"] != "confidence" else ""))

st.header("2. Action set (confidence score filtering)")
st.markdown("An action is a (slot, token) pair. The top-K1 tokens of every masked slot form "
            "a pool; the K2 best-scoring actions of the pool are the node's children.")
st.latex(teaching.FORMULAS["action_set"])
ex = teaching.action_set_example(trace)
if ex:
    live()
    st.markdown(f"At the root: {ex['masked']} masked slots × K1 = {ex['k1']} → a pool of "
                f"{ex['pool']} actions; the K2 = {ex['k2']} best:")
    st.dataframe([{"slot": s, "token": repr(t), "s": f"{v:.4g}"} for s, t, v in ex["actions"]],
                 hide_index=True)

st.header("3. Selection: UCB")
st.markdown("From the root, each level takes the child with the highest upper confidence "
            "bound: its mean reward Q plus an exploration bonus that shrinks with visits.")
st.latex(teaching.FORMULAS["ucb"])
ex = teaching.ucb_example(trace)
if ex:
    live(f"In the current run (iteration {ex['iteration']}, at the root)")
    st.latex(ex["latex"])
    st.dataframe([{"node": r["node"], "N": r["N"], "Q": r["Q"], "UCB": r["ucb"],
                   "chosen": "✓" if r["chosen"] else ""} for r in ex["siblings"]],
                 hide_index=True)

st.header("4. Expansion, simulation and the information-gain reward")
st.markdown("The selected leaf is expanded: its K2 actions make K2 children, evaluated in one "
            "batched forward. Each child's remaining masks are filled from its own prediction "
            "(the simulation), and its reward is the share of the parent's entropy that the "
            "commitment removed from the other masked slots:")
st.latex(teaching.FORMULAS["info_gain"])
ex = teaching.information_gain_example(trace)
if ex:
    live(f"In the current run (iteration {ex['iteration']}, best child: node {ex['node']}, "
         f"slot {ex['slot']})")
    st.latex(ex["latex"])
    if ex["r_ig (recorded)"] is not None:
        st.caption(f"Recorded by the search: r_IG = {ex['r_ig (recorded)']:.6g}")

st.header("5. Backpropagation")
st.latex(teaching.FORMULAS["backprop"])
st.markdown("A child that has L_c slots committed by the search becomes a **candidate**; the "
            "search stops with C candidates (or when its iteration budget runs out).")

st.header("6. Candidate choice")
st.markdown("Each candidate is scored by its cumulative information gain from the root: how "
            "much of the root's total entropy its commitments removed. The highest wins.")
st.latex(teaching.FORMULAS["candidate"])
ex = teaching.candidate_example(trace)
if ex:
    live(f"In the current run (winner: node {ex['winner']})")
    st.latex(ex["latex"])
    if ex["why"]:
        st.info(md(ex["why"]))

st.header("7. Phase C: confidence-guided unmasking")
st.markdown("From the winner, the remaining masks are filled over the remaining steps; each "
            "step unmasks the slots with the highest confidence-adjusted score (or samples "
            "them in proportion to softmax(s / T) when a slot temperature is set). In block "
            "mode only the current block's slots are eligible.")
st.latex(teaching.FORMULAS["phase_c"])
ex = teaching.phase_c_example(trace)
if ex:
    live(f"In the current run (first phase-C step, step {ex['step']})")
    st.markdown(f"{ex['masked_before']} slots were masked; the step unmasked slot(s) "
                f"{ex['slots']} with {md([t for t in ex['tokens']])}, score(s) "
                + ", ".join(f"{s:.6g}" for s in ex["scores"] if s is not None) + ".")
    if ex.get("latex"):
        st.latex(ex["latex"])
        st.caption("recomputed from the winner's recorded top-2 probabilities and entropy")

st.header("8. Task decomposition")
st.markdown("Before any of this, the prompt is augmented with guidance that splits the "
            "question into N subtasks (the paper's two-shot example; the tiny built-in models "
            "read a short instruction instead). It lowers the entropy of the answer slots.")
if trace:
    st.markdown("**The prompt the model read in the current run**")
    st.code(trace["run"]["model_prompt"], language=None)
