"""The medal_countdown task's functions: the dataset beside this file, the prompt `medal
bench` gives, and the project's verifier as the metric."""
from __future__ import annotations

from pathlib import Path

from medal.tasks import COUNTDOWN

HERE = Path(__file__).resolve().parent


def load_dataset(data_files=None, **_metadata):
    """``datasets.load_dataset("json", data_files=...)`` with each file resolved against
    this folder (lm-eval passes the YAML's dataset_kwargs, and its metadata, here)."""
    import datasets

    files = {split: str(HERE / name) for split, name in (data_files or {}).items()}
    for path in files.values():
        COUNTDOWN.load_problems(path)  # every line a valid problem, or an error naming it
    return datasets.load_dataset("json", data_files=files)


def problem(doc: dict):
    return COUNTDOWN.parse_problem({"numbers": list(doc["numbers"]), "target": doc["target"]})


def doc_to_text(doc: dict) -> str:
    return COUNTDOWN.format_prompt(problem(doc))


def process_results(doc: dict, results: list[str]) -> dict:
    """acc: 1.0 when the verifier accepts the answer extracted from the response."""
    answer = COUNTDOWN.extract_answer(results[0])
    return {"acc": float(COUNTDOWN.verify(answer, problem(doc)))}
