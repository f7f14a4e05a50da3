"""One cost axis for every result (CLI, bench rows, traces, lm-eval's logged samples).

Defined here once and nowhere else:

* ``model_calls``: batched calls of the model (NFE; a result's ``forwards``). A state the
  run's cache already holds costs none.
* ``sequence_forwards``: sequences those calls evaluated (a batch of K counts K).
* ``token_passes``: token positions the network processed over those calls (a forward of
  K sequences of P prompt + L answer tokens counts K * (P + L)); with a KV cache, only the
  positions actually recomputed.
* ``valid_tokens``: the answer's output tokens -- slots before the first end token (EOS,
  end of turn), less the slots the task fixes (Sudoku's separators); prompt and padding
  excluded. A re-masked slot would count once per time it was written (no decoder here
  re-masks).
* ``tpf``: tokens per forward = ``valid_tokens / sequence_forwards`` (dllm's leaderboard
  protocol: valid output tokens per forward pass, prompt and padding excluded). A search
  pays its sequences too, so MEDAL's TPF counts the whole search. None with no forward
  (every state came from a shared cache).
"""
from __future__ import annotations

COST_FIELDS = ("model_calls", "sequence_forwards", "token_passes", "valid_tokens", "tpf")
#: how each cost is named for a reader (the Benchmark page's axis choices)
COST_LABELS = {"model_calls": "model calls (NFE)",
               "sequence_forwards": "sequence forwards (a batch of K counts K)",
               "token_passes": "token passes (positions the network processed)",
               "tpf": "tokens per forward (valid output tokens / sequence forwards)"}


def valid_output_tokens(answer_ids, end_ids, fixed=()) -> int:
    """Output tokens of an answer: slots before its first end token, less the fixed ones."""
    ends = set(int(t) for t in end_ids)
    fixed = set(fixed)
    n = 0
    for slot, t in enumerate(answer_ids):
        if int(t) in ends:
            break
        n += slot not in fixed
    return n


def tokens_per_forward(valid_tokens: int, sequence_forwards: int) -> float | None:
    return valid_tokens / sequence_forwards if sequence_forwards else None


def cost_record(model_calls: int, sequence_forwards: int, token_passes: int,
                valid_tokens: int) -> dict:
    """The four counts and the TPF, under the names above."""
    return {"model_calls": model_calls, "sequence_forwards": sequence_forwards,
            "token_passes": token_passes, "valid_tokens": valid_tokens,
            "tpf": tokens_per_forward(valid_tokens, sequence_forwards)}
