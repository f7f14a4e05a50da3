"""MEDAL as an lm-evaluation-harness model: lm-eval's own command line on the shipped
offline task agrees with `medal bench`, problem by problem; traces per sample; the
requests a diffusion LM cannot answer; the free-text task's prompt as written."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from work import HANG
import torch

from medal import cli
from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import InputError
from medal.lm_eval import TASKS_DIR, harness_arguments
from medal.lm_eval.model import MedalLM, UnsupportedRequestError, stop_at
from medal.tasks import COUNTDOWN
from medal.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = TASKS_DIR / "countdown" / "problems.jsonl"
LIMIT = 8
STRATEGIES = ("greedy", "medal")


def harness_env(tmp_path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
               HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
               HF_DATASETS_CACHE=str(tmp_path / "hf-datasets"))
    return env


def run_harness(tmp_path: Path, strategy: str) -> tuple[dict, list[dict], Path]:
    """``python -m medal.lm_eval`` (lm-eval's own command line with the medal model) on
    the shipped task: its results, its logged samples and the trace folder."""
    out, traces = tmp_path / f"out-{strategy}", tmp_path / f"traces-{strategy}"
    args = ["--model", "medal",
            "--model_args", f"model=builtin:countdown,strategy={strategy},seed=0,"
                            f"trace_dir={traces}",
            "--tasks", "medal_countdown", "--limit", str(LIMIT),
            "--log_samples", "--output_path", str(out)]
    proc = subprocess.run([sys.executable, "-m", "medal.lm_eval", *args], cwd=tmp_path,
                          env=harness_env(tmp_path), capture_output=True, text=True, timeout=HANG)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    samples = [json.loads(line) for line in
               next(out.rglob("samples_medal_countdown_*.jsonl")).read_text().splitlines()]
    return results, samples, traces


@pytest.fixture(scope="module")
def bench_records(tmp_path_factory):
    """`medal bench` on the same first LIMIT problems, same strategies, same seed."""
    tmp = tmp_path_factory.mktemp("bench")
    first = tmp / "first.jsonl"
    first.write_text("".join(PROBLEMS.read_text().splitlines(keepends=True)[:LIMIT]))
    out = tmp / "bench.json"
    assert cli.main(["bench", "--task", "countdown", "--problems", str(first), "--strategies",
                     ",".join(STRATEGIES), "--seed", "0", "--out", str(out),
                     "--no-progress"]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_harness_equals_bench_problem_by_problem(tmp_path, bench_records, strategy):
    results, samples, traces = run_harness(tmp_path, strategy)
    bench = {r["index"]: r for r in bench_records["records"] if r["strategy"] == strategy}
    assert sorted(s["doc_id"] for s in samples) == sorted(bench) == list(range(LIMIT))
    for sample in samples:
        record = bench[sample["doc_id"]]
        assert sample["doc"] == record["problem"]
        prompt = sample["arguments"]["gen_args_0"]["arg_0"]
        assert prompt == COUNTDOWN.format_prompt(COUNTDOWN.parse_problem(record["problem"]))
        response = sample["filtered_resps"][0]
        assert response == stop_at(record["text"], ["\n"])
        assert sample["acc"] == float(record["verified"])
        # the sample's MEDAL trace: named by the task and the doc id the sample records
        trace = load_trace(traces / f"medal_countdown-doc{sample['doc_id']}.trace.json")
        assert trace["run"]["prompt"] == prompt and trace["run"]["strategy"] == strategy
        assert trace["run"]["config"]["seed"] == sample["doc_id"]   # seed + doc id, as bench
        assert trace["result"]["text"] == record["text"]
    index = [json.loads(line) for line in (traces / "index.jsonl").read_text().splitlines()]
    assert {(i["doc_id"], i["trace"]) for i in index} == {
        (s["doc_id"], f"medal_countdown-doc{s['doc_id']}.trace.json") for s in samples}
    for i in index:   # each logged sample's cost (medal.cost), as bench counts it
        record = bench[i["doc_id"]]
        assert {k: i["cost"][k] for k in ("sequence_forwards", "token_passes", "tpf")} == {
            k: record[k] for k in ("sequence_forwards", "token_passes", "tpf")}
    accuracy = results["results"]["medal_countdown"]["acc,none"]
    assert accuracy == bench_records["summary"][strategy]["accuracy"]
    assert results["config"]["medal_strategy"] == strategy


def test_the_shipped_problems_are_bench_generated_ones():
    """problems.jsonl is what `medal bench --n 100 --seed 0` generates (README there)."""
    assert COUNTDOWN.load_problems(PROBLEMS) == COUNTDOWN.generate(100, seed=10_000)


# ---------------------------------------------------------------- requests it refuses

def loglikelihood_task(tmp_path: Path) -> Path:
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "qa.jsonl").write_text('{"q": "Use 4, 18, 13 to make 20.", "a": 1}\n')
    (folder / "pick.yaml").write_text(
        "task: pick_one\n"
        "dataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {folder / 'qa.jsonl'}\n"
        "test_split: test\n"
        "output_type: multiple_choice\n"
        "doc_to_text: '{{q}}'\n"
        "doc_to_choice: ['(18-13)*4', '18-13+4']\n"
        "doc_to_target: a\n"
        "metric_list:\n  - metric: acc\n")
    return folder


def test_a_loglikelihood_task_gets_a_clear_error(tmp_path, monkeypatch):
    import lm_eval
    from lm_eval.tasks import TaskManager
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    lm = MedalLM(model="builtin:countdown", strategy="greedy")
    manager = TaskManager(include_path=str(loglikelihood_task(tmp_path)))
    with pytest.raises(UnsupportedRequestError) as err:
        lm_eval.simple_evaluate(model=lm, tasks=["pick_one"], task_manager=manager)
    message = str(err.value)
    assert "loglikelihood requests" in message and "pick_one" in message
    assert "no exact autoregressive log-likelihood" in message and "generate_until" in message
    with pytest.raises(UnsupportedRequestError, match="loglikelihood_rolling requests"):
        lm.loglikelihood_rolling([])


# ---------------------------------------------------------------- model_args

@pytest.mark.parametrize("args, message", [
    ({}, "give the model to evaluate"),
    ({"model": "builtin:countdown", "strategy": "beam"}, "unknown strategy 'beam'"),
    ({"model": "builtin:countdown", "lc": 0}, "lc must be a whole number >= 1"),
    ({"model": "builtin:countdown", "k1": 2.5}, "k1 must be a whole number"),
    ({"model": "builtin:countdown", "temprature": 1}, "unknown model_args: temprature"),
    ({"model": "builtin:countdown", "task": "gsm8k"}, "unknown task 'gsm8k'"),
    ({"model": "builtin:nope"}, "no built-in model for task 'nope'"),
])
def test_bad_model_args_say_what_is_allowed(args, message):
    with pytest.raises(Exception, match=message):
        MedalLM(**args)


def test_model_args_as_lm_eval_parses_them():
    lm = MedalLM.create_from_arg_string(
        "model=builtin:countdown,strategy=low-confidence,lc=3,k1=2,candidates=2,seed=7",
        {"batch_size": 1, "max_batch_size": None, "device": None})
    assert lm.strategy == "greedy" and lm.task.name == "countdown"  # the model's own task
    assert (lm.config.lc, lm.config.k1, lm.config.candidates, lm.config.seed) == (3, 2, 2, 7)
    assert MedalLM(model="builtin:countdown", task="text").task.name == "text"


def test_lm_evals_default_device_runs_where_there_is_one(caplog):
    """lm-eval sends --device cuda:0 when the user names none, on any machine (its
    EvaluatorConfig default): on a machine without a GPU the model runs on the CPU, with a
    warning; with one, on the GPU. device= in --model_args is taken as written."""
    from medal.errors import ModelLoadError
    lm = MedalLM.create_from_arg_string("model=builtin:countdown",
                                        {"batch_size": 1, "device": "cuda:0"})
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert lm.model.device.type == want
    if want == "cpu":
        assert "sees no CUDA GPU" in caplog.text
        with pytest.raises(ModelLoadError, match="--device cpu"):
            MedalLM.create_from_arg_string("model=builtin:countdown,device=cuda",
                                           {"device": "cuda:0"})
    with pytest.raises(InputError, match="CUDA_VISIBLE_DEVICES"):
        MedalLM.create_from_arg_string("model=builtin:countdown", {"device": "cuda:1"})
    assert MedalLM.create_from_arg_string("model=builtin:countdown",
                                          {"device": "cpu"}).model.device.type == "cpu"


class Request:
    """What lm-eval hands generate_until (an Instance's fields it reads)."""

    def __init__(self, context, gen_kwargs, doc_id=0, task_name="t"):
        self.args = (context, gen_kwargs)
        self.doc_id, self.idx, self.task_name = doc_id, doc_id, task_name


def test_generate_until_cuts_at_stop_strings_and_caps_the_answer(builtin_model):
    lm = MedalLM(model="builtin:countdown", strategy="greedy")
    prompt = "Use 4, 18, 13 to make 20."
    full = Run(builtin_model, task="countdown", prompt=prompt, strategy="greedy").finish().text
    stop = full[2]
    [text] = lm.generate_until([Request(prompt, {"until": [stop]})], disable_tqdm=True)
    assert text == full[:full.index(stop)] and stop not in text
    assert stop_at("ab\nc", ["\n", "b"]) == "a" and stop_at("abc", "zz") == "abc"
    # max_gen_toks caps the answer: whole blocks where the block length no longer divides
    config = lm.request_config(5, 0, {"max_gen_toks": 10})
    assert (config.gen_length, config.seed) == (10, 5)
    assert lm.capped(GenerationConfig(block_length=4, steps=28), 10) == GenerationConfig(
        gen_length=8, block_length=4, steps=8)
    assert lm.capped(GenerationConfig(gen_length=28, block_length=14, steps=14), 7) == \
        GenerationConfig(gen_length=7, block_length=7, steps=4)
    assert lm.capped(GenerationConfig(), 256) == GenerationConfig()
    with pytest.raises(InputError, match="max_gen_toks must be a whole number"):
        lm.capped(GenerationConfig(), 0)
    with pytest.raises(InputError, match="request 0 of t: .*cannot read the characters"):
        lm.generate_until([Request("Natalia sold clips to 48 friends; how many?!", {})],
                          disable_tqdm=True)


# ---------------------------------------------------------------- the text task

@pytest.mark.parametrize("strategy", ["medal", "greedy"])
def test_text_task_passes_the_prompt_as_written(builtin_model, monkeypatch, strategy):
    prompt = "Use 4, 18, 13 to make 20."
    seen = []
    real = builtin_model.logits
    monkeypatch.setattr(builtin_model, "logits",
                        lambda ids, n: seen.append(ids.clone()) or real(ids, n))
    run = Run(builtin_model, task="text", prompt=prompt, strategy=strategy,
              config=GenerationConfig(max_iterations=4))
    result = run.finish()
    encoded = torch.tensor(builtin_model.tokenizer.encode(prompt))
    pads = builtin_model.net.cfg.prompt_length - len(encoded)
    assert seen and run.model_prompt == prompt and not run.decompose
    for ids in seen:
        for row in ids:
            assert (row[:pads] == builtin_model.pad_id).all()   # the model's left padding
            assert torch.equal(row[pads:pads + len(encoded)], encoded)
    assert result.answer == result.text and result.verified is None
    with pytest.raises(InputError, match="no decomposition"):
        Run(builtin_model, task="text", prompt=prompt, decompose=True)
    with pytest.raises(InputError, match="text task has no problems"):
        Run(builtin_model, task="text", problem={"numbers": [1, 2, 3], "target": 6})


def test_text_task_through_the_harness_model(builtin_model):
    lm = MedalLM(model="builtin:countdown", task="text", strategy="greedy")
    prompt = "Use 4, 18, 13 to make 20."
    expected = Run(builtin_model, task="text", prompt=prompt, strategy="greedy").finish().text
    assert lm.generate_until([Request(prompt, {})], disable_tqdm=True) == [expected]


# ---------------------------------------------------------------- the command line

def test_the_harness_command_line_gets_our_task_folder():
    assert harness_arguments(["--model", "medal"]) == [
        "--model", "medal", "--include_path", str(TASKS_DIR)]
    assert harness_arguments(["ls", "tasks"])[-1] == str(TASKS_DIR)
    mine = ["--tasks", "x", "--include_path", "/mine"]
    assert harness_arguments(mine) == mine
    assert harness_arguments(["--include_path=/mine"]) == ["--include_path=/mine"]
    assert harness_arguments([]) == [] and harness_arguments(["--help"]) == ["--help"]
    assert (TASKS_DIR / "countdown" / "medal_countdown.yaml").is_file()


def test_medal_prints_the_task_folder(capsys):
    assert cli.main(["lm-eval-tasks"]) == 0
    assert capsys.readouterr().out.strip() == str(TASKS_DIR)


def test_instruct_model_chat_formatting_once(tmp_path):
    """An instruct model (a LLaDA stand-in: the real config and tokenizer, random weights)
    with the text task: the prompt as written inside the adapter's own chat template, no
    decomposition; with lm-eval's --apply_chat_template the harness renders the same
    template and the adapter adds none of its own (the model reads the same ids)."""
    import standins
    folder = standins.save_llada(tmp_path / "llada-lm-eval")
    lm = MedalLM(model=f"llada:{folder}", trust_remote_code=True, device="cpu",
                 strategy="medal", gen_length=4, lc=1, max_iterations=3)
    assert lm.task.name == "text" and lm.model.chat
    seen = []
    real = lm.model.logits
    lm.model.logits = lambda ids, n: seen.append(ids[0].clone()) or real(ids, n)
    prompt = "Use 4, 18, 13 to make 20."
    lm.generate_until([Request(prompt, {})], disable_tqdm=True)
    adapter_ids = seen[0][:-4]
    assert adapter_ids.tolist() == lm.model.encode_prompt(prompt)
    text = lm.model.tokenizer.decode(adapter_ids)
    assert prompt in text and "subtasks" not in text and text.count("<|start_header_id|>") == 2
    rendered = lm.apply_chat_template([{"role": "user", "content": prompt}])
    assert not lm.model.chat and lm.get_model_info()["medal_chat_template_by"] == "lm-eval"
    seen.clear()
    lm.generate_until([Request(rendered, {})], disable_tqdm=True)
    assert torch.equal(seen[0][:-4], adapter_ids)


def test_the_entry_point_names_the_registered_model():
    """pyproject declares MedalLM in lm-eval's `lm_eval.models` group; registering again
    (as an lm-eval that read the entry point would have done) keeps the one class."""
    import tomllib
    from importlib.metadata import EntryPoint

    from lm_eval.api.registry import get_model

    from medal.lm_eval import model as plugin
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = declared["project"]["entry-points"]["lm_eval.models"]["medal"]
    assert EntryPoint("medal", target, "lm_eval.models").load() is MedalLM
    assert declared["project"]["scripts"]["medal-lm-eval"] == "medal.lm_eval:main"
    plugin.register()
    assert get_model("medal") is MedalLM and get_model("hf").__name__ == "HFLM"
