"""Which test files make the fast tier (a helper module: conftest marks them)."""

#: The fast tier, ``python -m pytest -m fast`` (issue 26: under 3 minutes on 2 cores): the
#: unit tests of the layers (docs/ARCHITECTURE.md) on tiny models -- the formulas, the
#: search and decoding, the engine, the trace and its gate, the views' data. Not in it: the
#: app (AppTest), the command line run as a process, the browser (tests/browser), packaging,
#: the notebook, lm-eval, real-size checkpoints, benchmarks and the long fuzzing.
FAST_MODULES = {
    "test_architecture", "test_scores", "test_runner", "test_search", "test_search_batching",
    "test_engine", "test_paper_options", "test_controls", "test_speed", "test_explore",
    "test_model", "test_countdown", "test_sudoku", "test_pick", "test_trace",
    "test_trace_gate_strict", "test_trace_packed", "test_atomic_writes",
    "test_safetensors_only", "test_viewer_frames", "test_viz", "test_results",
    "test_results_md", "test_comparison", "test_task_views", "test_hostile_scale",
    "test_received_traces", "test_fork_diff", "test_examples", "test_cli_safe",
    "test_settings", "test_lock_step", "test_decode_arrays",
}
