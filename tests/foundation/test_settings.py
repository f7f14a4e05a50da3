"""Each setting is declared once, on its GenerationConfig field (issue 26): the command
line's flags, the app's widgets, the engine's checks and the operator's limits are built
from that declaration, so none of them can drift from it."""
import dataclasses

import pytest

from medal import cli, serving
from medal.cli.settings import PLAIN
from medal.config import SETTINGS, GenerationConfig, Setting
from medal.errors import InputError
from medal.app import controller


def _parser_actions(command: str) -> dict:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    actions = {}
    for a in sub.choices[command]._actions:   # the first flag of a dest (--decompose)
        actions.setdefault(a.dest, a)
    return actions


def test_every_field_declares_its_setting():
    assert [st.name for st in SETTINGS] == [f.name for f in dataclasses.fields(GenerationConfig)]
    for f, st in zip(dataclasses.fields(GenerationConfig), SETTINGS):
        assert isinstance(f.metadata["setting"], Setting), f.name
        assert st.default == f.default and st.label and st.help, f.name
        assert st.group in ("search", "decoding", "prompt"), f.name
        if st.kind == "choice":
            assert st.default in st.choices, f.name
        if st.kind in ("int", "optional_int", "float"):
            assert st.low is not None and st.high is not None, f"{f.name} has no range"


@pytest.mark.parametrize("command", ["generate", "bench"])
def test_the_command_line_is_built_from_the_settings(command):
    actions = _parser_actions(command)
    for st in SETTINGS:
        action = actions[st.name]
        assert action.default == st.default, st.name
        if st.cli_flag is not None:   # --seed: each command says what its seed seeds
            assert st.help.translate(PLAIN)[:40] in action.help, st.name
        if st.low is not None:
            assert f"range {st.range_text}" in action.help, st.name
        if st.kind == "choice":
            assert tuple(action.choices) == st.choices, st.name


def test_every_flag_reaches_its_field():
    """A value for each setting's flag lands in that field of the run's config."""
    changed = {"k1": "4", "k2": "6", "lc": "2", "candidates": "2", "gamma": "2.5", "c": "0.5",
               "max_iterations": "9", "scoring": "margin", "simulation": "rollout",
               "rollout_steps": "2", "reward": "ig+verifier", "verifier_bonus": "2",
               "complete_candidates": None, "candidate_choice": "rollout",
               "scoring_scope": "all", "one_per_parent": None, "min_action_prob": "0.01",
               "selection": "greedy", "search_steps": "extra", "gen_length": "16",
               "steps": "8", "block_length": "8", "temperature": "0.5",
               "slot_temperature": "0.5", "eb_threshold": "0.25", "samples": "3",
               "threshold": "0.8", "ig_candidates": "4", "ig_position_temperature": "0.5",
               "edit_threshold": "0.5", "max_post_steps": "3",
               "logits_eos_inf": None, "confidence_eos_eot_inf": None, "decompose": None,
               "n_subtasks": "2", "seed": "7", "template": "1", "ots_beams": "2",
               "ots_temperature": "0.7", "soar_beams": "3", "soar_threshold": "0.5",
               "soar_parallel": "2", "uncertainty_penalty": "0.5"}
    argv = ["generate", "--prompt", "x"]
    for st in SETTINGS:
        if st.name not in changed:
            continue
        argv.append(st.cli_flag or "--" + st.name)
        if changed[st.name] is not None:
            argv.append(changed[st.name])
    config = cli.config_from_args(cli.build_parser().parse_args(argv))
    for st in SETTINGS:
        if st.name in changed:
            assert getattr(config, st.name) != st.default, st.name
    # the settings not set by flag in this run (pair_temperature conflicts with
    # slot_temperature, threshold_phase_c with both) are set alone
    for name in ("pair_temperature", "threshold_phase_c"):
        st = next(s for s in SETTINGS if s.name == name)
        extra = [st.cli_flag] + ([] if st.kind == "bool" else ["0.5"])
        config = cli.config_from_args(
            cli.build_parser().parse_args(["generate", "--prompt", "x", *extra]))
        assert getattr(config, name) != st.default, name
    assert set(changed) | {"pair_temperature", "threshold_phase_c"} == {s.name for s in SETTINGS}


def test_the_app_offers_every_setting_as_declared():
    """The Run page draws one widget per setting with its default (AppTest:
    tests/app/test_run_page_views.py); here: what Streamlit's number inputs need."""
    for p in controller.PARAMETERS:
        if p.kind == "float":
            assert isinstance(p.min_value, float), p.name   # Streamlit wants one numeric type


def test_the_engine_checks_every_declared_range():
    for st in SETTINGS:
        if st.high is None:
            continue
        too_big = int(st.high) + 1 if st.kind != "float" else st.high * 2 + 1
        with pytest.raises(InputError, match=st.name):
            GenerationConfig(**{st.name: too_big})
        with pytest.raises(InputError, match=st.name):
            GenerationConfig(**{st.name: st.low - 1})


def test_the_operators_limits_are_built_from_the_settings():
    declared = [st for st in SETTINGS if st.limit is not None]
    assert {"k1", "k2", "lc", "candidates", "max_iterations", "gen_length",
            "samples"} == {st.name for st in declared}
    for st in declared:
        key = st.name if st.name.startswith("max_") else f"max_{st.name}"
        assert serving.DEFAULT_LIMITS[key] == st.limit[0]
        assert serving.LIMIT_CEILINGS[key] == st.high
        assert serving.LIMIT_ENV[key] in serving.__doc__, f"{key} not in the operator's help"
        settings = serving.parse_settings(environ={serving.LIMIT_ENV[key]: "2"}, argv=[])
        serving.check_limits(settings, GenerationConfig(**{st.name: 2}))
        with pytest.raises(InputError, match=serving.LIMIT_ENV[key]):
            serving.check_limits(settings, GenerationConfig(**{st.name: 3}))
    for key, env in serving.LIMIT_ENV.items():
        assert env in serving.__doc__, f"{env} not in the operator's help"


def test_the_command_line_lists_every_strategy_the_engine_runs():
    """The strategies' names live in medal.config (the parser lists them without importing
    the engine); they are the engine's, in its order."""
    from medal.config import STRATEGY_ALIASES, STRATEGY_NAMES
    from medal.engine import ALIASES, STRATEGIES
    assert tuple(STRATEGIES) == STRATEGY_NAMES and ALIASES == STRATEGY_ALIASES
    help = _parser_actions("generate")["strategy"].help
    assert all(name in help for name in STRATEGY_NAMES)
