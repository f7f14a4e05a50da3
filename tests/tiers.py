"""Which tests make the fast tier (a helper module: conftest marks them)."""

#: The fast tier, ``python -m pytest -m fast``: the unit tests of the layers
#: (docs/ARCHITECTURE.md) on tiny models -- the formulas, the search and decoding, the
#: engine, the trace and its gate, the views' data -- within 90 CPU-seconds on 2 cores
#: (issue 40; README, "Tests", has the figure and how it is measured). Not in it: the app
#: (AppTest), the command line run as a process, the browser (tests/browser), packaging,
#: the notebook, lm-eval, real-size checkpoints, benchmarks, the long fuzzing, and the
#: integration tests: fork and diff end to end (test_fork_diff), re-running the shipped
#: examples (test_examples), the Compare page (test_comparison), received traces through
#: the CLI (test_received_traces), kills at a write (test_atomic_writes).
FAST_MODULES = {
    "test_architecture", "test_scores", "test_runner", "test_search", "test_search_batching",
    "test_engine", "test_paper_options", "test_controls", "test_speed", "test_explore",
    "test_model", "test_countdown", "test_sudoku", "test_pick", "test_trace",
    "test_trace_gate_strict", "test_trace_packed", "test_decoded_cost", "test_byte_limits",
    "test_safetensors_only", "test_viewer_frames", "test_viz", "test_results",
    "test_results_md", "test_task_views", "test_hostile_scale", "test_cli_safe",
    "test_settings", "test_lock_step", "test_decode_arrays",
}

#: Tests of fast modules left to the full suite (a name, or a name with its parameters):
#: the shipped models' quality (a demo's accuracy, Sudoku's solve rate), the bench on every
#: shipped model, every shipped example through the viewer or the packing, a fuzz, the app
#: (AppTest), a budget filled to the default limit's 335 MB, and the longest replay (500
#: candidates: the budget's fallback; its two siblings stay).
NOT_FAST = {
    "test_model::test_greedy_accuracy_makes_a_meaningful_demo",
    "test_task_views::test_separators_keep_the_solve_rate",
    "test_lock_step::test_lock_step_bench_equals_one_at_a_time_on_the_builtin_models",
    "test_viewer_frames::test_candidates_tab_compares_winner_and_runner_up_slot_by_slot",
    "test_trace_packed::test_random_damage_to_packed2_is_a_trace_error_or_a_trace",
    "test_hostile_scale::test_the_live_view_ignores_a_visitors_hostile_requests",
    "test_trace_packed::test_a_chain_of_differences_cannot_blow_up_memory",
    "test_trace_packed::test_shipped_packed1_examples_load",
    "test_viz::test_timeline_replays_every_position_exactly_as_it_ran[medal-config2]",
    # end to end through a tool (the bench, the profiler), the reference traces recorded
    # before a refactor, and lock-step against runs alone
    "test_explore::test_bench_summary_reports_the_search_and_a_fingerprint",
    "test_runner::test_profile_parts_split_the_bookkeeping_by_phase_from_the_events",
    "test_runner::test_profile_splits_the_search_time_and_counts_sequences",
    "test_runner::test_medal_traces_match_those_recorded_before_the_refactor",
    "test_lock_step::test_lock_step_traces_equal_the_runs_alone",
    # the shipped models' quality
    "test_pick::test_medal_does_not_beat_greedy_on_this_model",
    "test_sudoku::test_shipped_model_greedy_accuracy_is_in_a_broad_band",
    # replays of two more configurations (the default's and the baselines' stay)
    "test_viz::test_timeline_replays_every_position_exactly_as_it_ran[medal-config1]",
    "test_viz::test_timeline_replays_every_position_exactly_as_it_ran[bst5-config4]",
}


def is_fast(module: str, name: str) -> bool:
    """Whether test ``name`` (with its parameters, as pytest names it) of module ``module``
    is in the tier."""
    return module in FAST_MODULES and not {f"{module}::{name}",
                                           f"{module}::{name.split('[')[0]}"} & NOT_FAST
