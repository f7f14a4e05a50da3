"""A trace at the size a real LLaDA search makes (issue 28): 256 answer slots and ~1,000
tree nodes, from a tiny random-weight LLaDA (the real config and tokenizer of
tests/data/real-models/llada, seeded random weights; standins.save_checkpoint).

One change to the config keeps it cheap enough for a test fixture: the vocabulary is cut
from 126,464 to 4,096 ids (the mask and end ids moved inside it, the chat template off so
the prompt's ids stay inside it too). With the full vocabulary every sequence forward
computes and scores 256 x 126k logits (measured: 0.3-0.5 s a node on 2 shared cores, ~8
minutes for 1,000 nodes, and 22 KB of top-token figures a node); with 4,096 ids the same
search of 1,001 nodes takes ~17 s. The viewer does not see the vocabulary's size: it draws
slots, nodes and token texts, and those are LLaDA's.

    python tests/llada_sized.py out.json     # write one (packed-3: ~13 MB, under the
                                             # gate's 20 MiB upload limit)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

SLOTS = 256
VOCAB = 4096
PROMPT = "Use 3, 7, 12 to make 33."
#: K2 = 5 children a node, c = 0.5 (the random model's rewards are tiny and alike, so
#: the search spreads: 200 expansions, 1,001 nodes, five levels)
SETTINGS = dict(gen_length=SLOTS, steps=4, lc=20, candidates=3, k2=5, max_iterations=200,
                c=0.5, seed=0)


def llada_sized_trace(folder: str | Path, iterations: int = 200) -> dict:
    """Build the checkpoint in ``folder`` and return the run's trace (plain, in memory)."""
    import json

    import standins
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.models import load_model

    torch_threads = None
    try:
        import torch
        torch_threads = torch.get_num_threads()
        torch.set_num_threads(1)    # tiny matrices: threads only contend on a shared machine
    except ImportError:
        pass
    try:
        ckpt = standins.save_checkpoint(
            Path(folder), "llada", "native", seed=0,
            overrides={"vocab_size": VOCAB, "embedding_size": VOCAB, "mask_token_id": VOCAB - 1,
                       "eos_token_id": VOCAB - 2, "pad_token_id": VOCAB - 2})
        model = load_model(f"llada:{ckpt}", chat_template=False)
        run = Run(model, task="text", prompt=PROMPT, strategy="medal", trace=True,
                  compare_greedy=True,
                  config=GenerationConfig(**{**SETTINGS, "max_iterations": iterations}))
        run.finish()
        return json.loads(json.dumps(run.trace))
    finally:
        if torch_threads:
            torch.set_num_threads(torch_threads)


if __name__ == "__main__":
    import tempfile

    from medal.trace import write_trace
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "llada-sized.json")
    trace = llada_sized_trace(tempfile.mkdtemp())
    write_trace(trace, out)
    print(f"{out}: {len(trace['tree']['nodes'])} nodes, {len(trace['iterations'])} iterations, "
          f"{os.path.getsize(out):,} bytes")
