"""Add the cost axis's fields (medal.cost: token_passes, valid_tokens, tpf) to the shipped
examples, from a re-run of each, leaving every other byte of them as it was (issue 29;
scripts/make_examples.py would rewrite them whole)."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from medal.examples import list_examples, load_example  # noqa: E402
from medal.repro import rerun_example as rerun  # noqa: E402

KEYS = ("token_passes", "valid_tokens", "tpf")
for e in list_examples():
    text = e.path.read_text()
    raw = json.loads(text)
    new = rerun(load_example(e), e.task)
    assert new["result"]["answer_ids"] == raw["result"]["answer_ids"], e.name
    for old, fresh in ((raw["result"], new["result"]), (raw["stats"], new["stats"]),
                       (raw["comparison"]["result"], new["comparison"]["result"])):
        for k in KEYS:
            old[k] = fresh[k]
    e.path.write_text(json.dumps(raw, separators=(",", ":"), ensure_ascii=False)
                      + ("\n" if text.endswith("\n") else ""))
    print(e.name, {k: raw["result"][k] for k in KEYS})
