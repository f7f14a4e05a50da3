"""The trace format's constants: what a trace says it is, and every limit the gate holds it to."""
from __future__ import annotations

import math

#: what a trace says it is, its version and the one size limit (the gate's, the CLI's and
#: the app's uploader's); medal.trace re-exports them
TRACE_FORMAT = "medal-trace"
TRACE_VERSION = 1
MAX_TRACE_BYTES = 20 * 1024 * 1024  # uploads above this are refused
MAX_DEPTH = 64            # nesting of JSON containers anywhere in a trace
MAX_NODES = 200_000
INT_MIN, INT_MAX = -(2 ** 63), 2 ** 64 - 1   # every integer a trace holds fits in 64 bits

# What a recorded run can hold, beyond types: numbers in their ranges, counts that the
# run's own budget could have produced, strings of bounded length, no deep nesting
# anywhere (node extras included), and a cost to render known before it is spent.

MAX_CONTAINERS_PER_MB = 55_000  # a real trace holds ~30,000 arrays/objects per MB
# Strings, by what they hold (issue 27: "text" named a token's text and a whole answer):
MAX_TOKEN_TEXT = 200            # one token's text (real vocabularies: under 100 characters)
MAX_NAME = 200                  # a strategy, phase, scoring... name
MAX_MODEL_NAME = 4_096          # a model spec: "llada:" and a path (PATH_MAX)
MAX_PROMPT = 200_000            # a prompt: ~40,000 tokens of text, past every model's context
MAX_STRING = 20_000             # any other text (a "why", an extra); an answer's floor
#: the longest string a trace may hold anywhere, whatever its run: a 4,096-slot answer of
#: the longest tokens (checked before the run's own settings are read)
MAX_ANY_STRING = 4_096 * MAX_TOKEN_TEXT
NAME_KEYS = {"strategy", "phase", "stop_reason", "scoring", "simulation", "reward",
             "candidate_choice", "scoring_scope"}
PROMPT_KEYS = {"prompt", "model_prompt"}
#: texts made of answer slots: at most gen_length tokens' texts (:func:`answer_chars`)
ANSWER_KEYS = {"text", "answer", "sequence", "completion", "completions"}
MAX_NUMBER = 2 ** 53            # every number the page's JavaScript reads exactly
MAX_REWARD = 1e6                # |Q|, |W / N|, rewards (a reward is an entropy drop plus a bonus)
ENTROPY_CEILING = math.log(2 ** 24)   # ln V when the trace does not record V
P_TOLERANCE = 1e-6
Q_TOLERANCE = 1e-6
#: the most "render units" (timeline positions x answer slots, plus nodes x slots) a
#: trace may cost the views and the export: the 156-iteration Countdown trace of
#: scripts/bench_export.py (4.7 MB) is ~0.24 M units (8 s of CPU to export), a 19 MB
#: one of 368 iterations and 2,945 nodes ~1.3 M (88 s); docs/SERVING.md
MAX_RENDER_UNITS = 2_000_000


#: top tokens a node records per slot: K1 of them, and at least this many (the trace
#: recorder's own top_k, also what the margin needs)
MIN_TOP_ENTRIES = 3


def top_entries(config: dict) -> int:
    """The most top tokens a node of a run with this configuration records per slot."""
    k1 = config.get("k1") if isinstance(config, dict) else None
    return max(k1 if type(k1) is int and k1 > 0 else 0, MIN_TOP_ENTRIES)


#: characters of node texts (sequence, completion) per render unit: every node's card
#: carries its texts to the browser (a packed-2 trace can hold 8,000 sequences of 20,000
#: characters as differences: a 162 MB message to the browser, issue 31); a character
#: outside the BMP counts 3 (JSON writes it as a 12-byte surrogate pair)
TEXT_CHARS_PER_UNIT = 4

#: how much a packed trace may decode to, per byte of the size limit: the lists and texts
#: that differences and the per-slot packing build, a list entry counting 8 (a pointer),
#: a character 1. A paper-settings trace decodes to about 2.2 x its packed-2 size
#: (docs/REAL_MODELS.md); a hostile diff chain or a huge masked string stops at this bound
DECODED_PER_BYTE = 8
