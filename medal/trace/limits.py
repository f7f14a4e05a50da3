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
#: answers longer than this record fewer per-slot figures (the recorder: top tokens only
#: for the slots a node's action set is drawn from)
LONG_ANSWER = 64
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
#: how far above 1 a slot's top-K probabilities may sum: they are K entries of one float32
#: softmax, p_i = fl(e_i / S) with S the float32 sum of every e_j; the top K of the exact
#: ratios sum to at most 1, so the rounding alone lifts them, by at most (1 + u) / (1 - n u)
#: - 1 ~ (n + 1) u, u = 2**-24 (float32's unit roundoff), n the additions in the longest
#: chain of S's sum. torch sums a row in 8-lane float32 vectors (AVX2; wider lanes and the
#: GPU's tree reductions chain fewer), so n <= V / 8 + 3; with V <= 2**18 (262,144 tokens,
#: above every supported vocabulary: LLaDA 126,464, Dream 152,064) that is 2**15 + 4
#: additions: 2**-9 (1.95e-3). The float64 sum of K stored float32 values adds K * 2**-53
P_SUM_SLACK = (2 ** 15 + 5) * 2.0 ** -24
Q_TOLERANCE = 1e-6
#: the most "render units" (timeline positions x answer slots, plus nodes x slots) a
#: trace may cost the views and the export: the 156-iteration Countdown trace of
#: scripts/bench_export.py (4.7 MB) is ~0.24 M units (8 s of CPU to export), a 19 MB
#: one of 368 iterations and 2,945 nodes ~1.3 M (88 s); docs/SERVING.md
MAX_RENDER_UNITS = 2_000_000


#: top tokens a node records per slot: K1 of them, and at least this many (the trace
#: recorder's own top_k, also what the margin needs)
MIN_TOP_ENTRIES = 3
#: the operator's K1 limit when none is set (MEDAL_MAX_K1: medal.config, the "k1" setting)
DEFAULT_MAX_K1 = 20


def top_entries(config: dict, operator_k1: int | None = None) -> int:
    """The most top tokens a node of a run with this configuration records per slot: its
    K1 (at least :data:`MIN_TOP_ENTRIES`), never more than ``operator_k1`` allows (the
    operator's K1 limit, at least 3 too): a trace's own K1 may lower the bound, never
    raise it (issue 40: a trace declaring K1 = 1000 carried 195 entries a slot)."""
    k1 = config.get("k1") if isinstance(config, dict) else None
    own = max(k1, MIN_TOP_ENTRIES) if type(k1) is int and k1 > 0 else None
    if operator_k1 is None:
        return own if own is not None else MIN_TOP_ENTRIES
    cap = max(operator_k1, MIN_TOP_ENTRIES)
    return cap if own is None else min(own, cap)


def top_entries_text(config: dict, operator_k1: int | None, most: int) -> str:
    """Why at most ``most`` top tokens a slot (the run's K1, or the operator's limit)."""
    k1 = config.get("k1") if isinstance(config, dict) else None
    if operator_k1 is not None and most == max(operator_k1, MIN_TOP_ENTRIES) and not (
            type(k1) is int and 0 < k1 and max(k1, MIN_TOP_ENTRIES) <= most):
        return (f"this machine reads at most {most} (the operator's K1 limit, MEDAL_MAX_K1; "
                f"the trace's K1 is {str(k1)[:20]})")
    return f"the run records at most {most} (K1, at least 3)"


#: characters of node texts (sequence, completion) per render unit: every node's card
#: carries its texts to the browser (a packed-2 trace can hold 8,000 sequences of 20,000
#: characters as differences: a 162 MB message to the browser, issue 31); a character
#: outside the BMP counts 3 (JSON writes it as a 12-byte surrogate pair)
TEXT_CHARS_PER_UNIT = 4

#: how much a packed trace may decode to, in bytes of memory per byte of the size limit
#: (so the operator's size limit sets it: 335 MB at 20 MiB), every decoded value charged
#: at what it really takes (the costs below). A paper-settings packed-3 trace decodes to
#: about 7 x its size (the 446-node example: 1.29 MB -> 9.3 MB); a long answer's nodes,
#: where K1 top entries a slot dominate, up to ~20 x: a real LLaDA-8B search at the
#: paper's settings (1,001 nodes, 256 slots: tests/llada_sized.py) is 13.3 MB and is
#: charged 247 MB, which 10 a byte (210 MB) refused -- the run this tool is for could not
#: be opened. 16 opens it with a third to spare. A hostile diff chain, a huge masked
#: string or a top-entry bomb stops at this bound, counted before it is built
DECODED_PER_BYTE = 16

# What decoding builds, in bytes of memory (CPython 3.11, 64-bit; tracemalloc's figures,
# tests/trace/test_decoded_cost.py measures them on real and hostile nodes and fails if a
# charge falls below what decoding took):
#: one decoded top entry {"token", "text", "p"} of packed-1 and -2's rows: the 3-key dict
#: (184), its p (a float widened from float32's digits, 24), a pointer in its slot's list
#: (8) and its share of the list's spare room: 216, rounded up to 256 (measured: 220 an
#: entry at the whole tree's peak; its token id is the parsed text's own int)
TOP_ENTRY_COST = 256
#: one top entry of packed-3, kept as columns (:class:`medal.trace.toprows.TopRows`): its
#: token id and probability in int64 and float64 arrays (2 x 8), and, while it is built,
#: its share of the decoded base64 bytes (4 + 4) and of the sorted token copy that finds
#: their texts (8), one node at a time (measured: 16.3 an entry at the whole tree's peak)
TOP_COLUMN_COST = 20
#: one slot of a node: its entries in the masked, entropy and top lists (3 x 8)
SLOT_COST = 24
#: one slot of a node whose top tokens are columns: the masked and entropy lists (2 x 8),
#: and its row's first entry and count (2 x 8 in int64 arrays)
COLUMN_SLOT_COST = 32
#: a node's columns themselves: six NumPy arrays (112 bytes each without their data) and
#: the TopRows object, rounded up
COLUMN_NODE_COST = 768
#: one decoded figure (an entropy): a float (24), its pointer in the decoded list (8),
#: its float64 copy in numpy (8) and its entry in the slot-aligned list (8)
FIGURE_COST = 48
