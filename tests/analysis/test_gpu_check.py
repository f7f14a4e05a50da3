"""scripts/gpu_check.py: issue 29's GPU check dry-run on the CPU with the tiny LLaDA and
Dream configs, where only torch, transformers, safetensors and tokenizers may be imported
(streamlit and plotly blocked), and issue 27 item 5's fixes."""
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.py"
REAL = ROOT / "tests" / "data" / "real-models"
#: streamlit and plotly are not importable in the child (sys.modules[name] = None)
BLOCKED = ("import runpy, sys\n"
           "for name in ('streamlit', 'plotly', 'pandas', 'altair'):\n"
           "    sys.modules[name] = None\n"
           "sys.argv = [sys.argv[0]] + sys.argv[1:]\n"
           f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n")


def test_dry_run_on_the_cpu_prints_one_json(tmp_path):
    out = tmp_path / "gpu.json"
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKED, "--random", f"llada={REAL / 'llada' / 'config.json'}",
         "--random", f"dream={REAL / 'dream' / 'config.json'}", "--device", "cpu",
         "--dtype", "float32", "--gen-length", "4", "--steps", "4", "--block-length", "4",
         "--lc", "1", "--candidates", "2", "--seconds", "0.01", "--json", str(out)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
        env={**os.environ, "OMP_NUM_THREADS": "1"})  # one thread: ~25 s on 2 shared cores
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout)            # stdout is the JSON and nothing else
    assert figures == json.loads(out.read_text())
    assert figures["device"].startswith("CPU") and figures["paper_settings"] is False
    for family in ("llada", "dream"):
        fig = figures["models"][family]
        assert fig["parameters"] > 0 and fig["memory_guard_bytes"] > fig["weights_bytes"]
        assert fig["forward_ms_batch1"] > 0 and fig["forward_ms_batch5"] > 0
        assert set(fig["runs"]) == {"greedy", "threshold", "medal", "medal+threshold_phase_c",
                                    "greedy+kv_prefix", "greedy+kv_dual",
                                    "medal+threshold_phase_c+kv_dual",
                                    "greedy+decomposition", "medal-no-decomposition",
                                    "medal-no-decomposition+threshold_phase_c+kv_dual"}
        assert fig["runs"]["greedy+decomposition"]["tokens_per_sequence"] == \
            fig["runs"]["medal"]["tokens_per_sequence"] > fig["runs"]["greedy"]["tokens_per_sequence"]
        assert fig["runs"]["greedy+kv_dual"]["token_passes"] < fig["runs"]["greedy"]["token_passes"]
        for label, run in fig["runs"].items():
            assert run["seconds"] > 0 and run["valid_tokens"] <= 4, label
            assert run["tpf"] == run["valid_tokens"] / run["sequence_forwards"]
        assert fig["runs"]["medal"]["iterations"] >= 1
        assert fig["peak_bytes"] >= fig["weights_bytes"]


def test_dry_run_of_the_lock_step_parts(tmp_path):
    """--lock-step N (N MEDAL and greedy runs on full-size random weights, one at a time
    and in lock-step, the KV cache off and dual: each run its own cache) and
    --builtin-lock-step (the built-in models' bench on the device at several widths),
    dry-run on the CPU, where lock-step is exact: same answers."""
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKED, "--random", f"llada={REAL / 'llada' / 'config.json'}",
         "--device", "cpu", "--dtype", "float32", "--gen-length", "4", "--steps", "4",
         "--block-length", "4", "--lc", "1", "--candidates", "2", "--seconds", "0.01",
         "--only", "greedy,medal", "--lock-step", "3", "--lock-step-kv", "off,dual",
         "--lock-step-strategies", "medal,greedy", "--builtin-lock-step", "1,3",
         "--builtin-problems", "2", "--floor", "1,2", "--floor-seconds", "0.01"],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
        env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout)
    llada = figures["models"]["llada"]
    assert set(llada["runs"]) == {"greedy", "medal"}            # --only
    for label, strategy, kv in (("lock_step", "medal", None), ("lock_step+kv_dual", "medal", "dual"),
                                ("lock_step+greedy", "greedy", None),
                                ("lock_step+greedy+kv_dual", "greedy", "dual")):
        lock = llada[label]
        assert (lock["strategy"], lock["kv_cache"]) == (strategy, kv)
        assert lock["width"] == 3 and lock["same_answers"] is True and lock["speedup"] > 0
        assert lock["lock_step"]["model_calls"] < lock["one_at_a_time"]["model_calls"]
        assert lock["lock_step"]["sequences"] == lock["one_at_a_time"]["sequences"]
    floor = llada["floor"]          # --floor: the per-call floor's figures at each width
    assert floor["block"] == 4 and set(floor["widths"]) == {"1", "2"}
    for row in floor["widths"].values():
        for call in ("full", "cached_block"):
            fig = row[call]
            assert 0 < fig["host_ms"] <= fig["ms"] and fig["calls"] >= 3 and fig["ops"] > 0
            assert fig["graph"] == {"skipped": "CUDA graphs need a CUDA device"}
        # the cached forward dispatches what the full one does, plus the cache's joins
        assert row["full"]["ops"] <= row["cached_block"]["ops"] <= row["full"]["ops"] + 8
    for task in ("countdown", "sudoku"):
        widths = figures["builtin_lock_step"][task]["widths"]
        assert set(widths) == {"1", "3", "3, scored per run"}
        assert all(w["same_records_as_first"] is True for w in widths.values())
        assert widths["3"]["model_calls"] < widths["1"]["model_calls"] == widths["1"]["forwards"]


PEAK_CHILD = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import gpu_check
if not gpu_check.reset_peak_rss():
    print("skip"); sys.exit(0)
big = torch.ones(100 * 2**20 // 4)   # 100 MB held before the measurement
del big
with gpu_check.PeakMemory(torch.device("cpu")) as mem:
    x = torch.ones(50 * 2**20 // 4)  # 50 MB, touched
    x += 1
    del x
print(mem.extra)
"""


def test_peak_memory_is_what_the_work_adds():
    """Issue 27 item 5: the CPU figure is the peak the work adds (VmHWM reset before),
    not the process's lifetime peak: 50 MB allocated and freed reads as about 50 MB,
    whatever the process held before. In a fresh process: a test worker's allocator may
    hand the 50 MB back from memory it already holds, which no resident-set figure sees."""
    out = subprocess.run([sys.executable, "-c", PEAK_CHILD, str(ROOT / "scripts")],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    if out.stdout.strip() == "skip":
        pytest.skip("no /proc/self/clear_refs here")
    extra = float(out.stdout.strip())
    assert 40 * 2**20 <= extra <= 90 * 2**20, extra / 2**20


def test_compare_cpu_keeps_the_implementation():
    """Issue 27 item 5: --compare-cpu loaded the checkpoint again without
    --implementation (so always native)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)   # a script, not a package
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    seen = []
    args = SimpleNamespace(model="llada:/x", trust_remote_code=True, implementation="remote")
    gpu_check.load_on(args, "cpu", loader=lambda spec, **kw: seen.append((spec, kw)))
    assert seen == [("llada:/x", {"trust_remote_code": True, "device": "cpu",
                                  "dtype": "float32", "implementation": "remote"})]


def _load_script():
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_check_budget", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TINY = ["--device", "cpu", "--dtype", "float32", "--gen-length", "4", "--steps", "4",
        "--block-length", "4", "--lc", "1", "--candidates", "2", "--seconds", "0.01"]


def test_a_zero_budget_skips_every_part(tmp_path):
    """Issue 39 item 6: every part is held to --budget-seconds -- the models, --floor,
    --lock-step and --builtin-lock-step (the last two ran whatever the budget before). With
    no budget nothing runs, and the JSON says why for each part."""
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKED, "--random", f"llada={REAL / 'llada' / 'config.json'}",
         *TINY, "--floor", "1,2", "--lock-step", "3", "--builtin-lock-step", "1,3",
         "--builtin-problems", "2", "--budget-seconds", "0"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout)
    assert figures["budget_seconds"] == 0
    assert figures["models"]["llada"]["skipped"].startswith("would pass the budget")
    assert set(figures["models"]["llada"]) == {"config", "skipped"}
    for task in ("countdown", "sudoku"):
        assert figures["builtin_lock_step"][task]["skipped"].startswith("would pass the budget")


def test_each_part_checks_the_budget(monkeypatch, capsys):
    """On a made-up clock that jumps 1000 s when the model is built (budget 500 s): the
    model's forward timing, admitted with the build, runs; every run, every --floor width
    and every --lock-step check after it is skipped, each saying why."""
    gc = _load_script()
    clock = [0.0]
    monkeypatch.setattr(gc, "now", lambda: clock[0])
    build = gc.build_random

    def slow_build(*args, **kwargs):
        clock[0] += 1000.0
        return build(*args, **kwargs)
    monkeypatch.setattr(gc, "build_random", slow_build)
    assert gc.main(["--random", f"llada={REAL / 'llada' / 'config.json'}", *TINY,
                    "--floor", "1,2", "--lock-step", "3", "--lock-step-kv", "off,dual",
                    "--only", "greedy,medal", "--budget-seconds", "500"]) == 0
    figures = json.loads(capsys.readouterr().out)
    llada = figures["models"]["llada"]
    assert llada["forward_ms_batch1"] > 0
    skipped = [llada["runs"]["greedy"], llada["runs"]["medal"], llada["floor"]["widths"]["1"],
               llada["floor"]["widths"]["2"], llada["lock_step"], llada["lock_step+kv_dual"]]
    assert all(set(p) == {"skipped"} and p["skipped"].startswith("would pass the budget")
               for p in skipped), skipped
    assert figures["wall_seconds"] == 1000.0


def test_the_lock_step_half_checks_the_budget(monkeypatch):
    """Inside a --lock-step check: its runs one at a time took (on the made-up clock) more
    than the budget has left, so the lock-step half is skipped, saying why."""
    import torch
    gc = _load_script()
    clock = [0.0]
    monkeypatch.setattr(gc, "now", lambda: clock[0])
    from medal.bench import LockStep
    original = LockStep.run

    def run(self, runs):
        clock[0] += 300.0                    # each half "takes" 300 s
        return original(self, runs)
    monkeypatch.setattr(LockStep, "run", run)
    model = gc.build_random("llada", REAL / "llada" / "config.json", torch.device("cpu"),
                            torch.float32)
    from medal.config import GenerationConfig
    from medal.tasks import get_task
    budget = gc.Budget(500.0)
    out = gc.lock_step_check(model, get_task("countdown"),
                             GenerationConfig(gen_length=4, steps=4, block_length=4, lc=1,
                                              candidates=2, seed=0), 2, budget,
                             strategy="greedy")
    assert "one_at_a_time" in out and out["lock_step"]["skipped"].startswith(
        "would pass the budget (300 s + about")
    assert "speedup" not in out
