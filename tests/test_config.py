"""Configuration files and dotted overrides (`condvln.config`) and their use by the commands."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from condvln.agents.runner.options import RunOptions as RunSettings
from condvln.config import (
    SETTINGS,
    BenchmarkSettings,
    EvaluateSettings,
    read_config_file,
    resolve,
)
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.errors import ConfigError


def _leaves(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out |= _leaves(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def _literal(value: Any) -> str:
    return "null" if value is None else json.dumps(value)


# --- the library -----------------------------------------------------------------------------


def test_layers_in_order_defaults_file_options_overrides(tmp_path: Path) -> None:
    config = tmp_path / "gen.yaml"
    config.write_text("scenes: 12\nper_scene: 30\nseed: 5\nrelations:\n  near_holds: 0.4\n")
    settings = resolve(
        GenerateConfig,
        config_file=config,
        options={"per_scene": 40, "seed": 6},
        overrides=["seed=7", "relations.far_holds=3.5"],
    )
    assert (settings.scenes, settings.per_scene, settings.seed) == (12, 40, 7)
    assert (settings.relations.near_holds, settings.relations.far_holds) == (0.4, 3.5)
    assert settings.relations.near_fails == 1.0 and settings.unseen_share == 0.3  # defaults


def test_yaml_and_json_files_agree(tmp_path: Path) -> None:
    data = {"split": "val_seen", "limit": 5, "protocol": {"fov_deg": 60.0, "view_range": 4.0}}
    (tmp_path / "run.json").write_text(json.dumps(data, indent="\t"))
    (tmp_path / "run.yml").write_text(yaml.safe_dump(data))
    from_json = resolve(RunSettings, config_file=tmp_path / "run.json")
    assert from_json == resolve(RunSettings, config_file=tmp_path / "run.yml")
    assert (from_json.protocol.fov_deg, from_json.protocol.view_range, from_json.limit) == (
        60.0,
        4.0,
        5,
    )


def test_override_values_are_typed_and_interpolations_resolve() -> None:
    settings = resolve(
        GenerateConfig,
        overrides=["scenes=null", "inputs=[a.json,b.json]", "seed=3", "per_scene=${seed}"],
    )
    assert settings.scenes is None and settings.inputs == ("a.json", "b.json")
    assert settings.per_scene == 3


@pytest.mark.parametrize("command", sorted(SETTINGS))
def test_every_key_of_every_command_is_reachable(command: str) -> None:
    """Each leaf of the defaults is a valid dotted override (new model fields come for free)."""
    model = SETTINGS[command]
    defaults = model()
    leaves = _leaves(defaults.model_dump(mode="json"))
    assert len(leaves) >= 5
    overrides = [f"{key}={_literal(value)}" for key, value in leaves.items()]
    assert resolve(model, overrides=overrides) == defaults


def test_documented_tunables_are_keys() -> None:
    """Success radii, split shares, thresholds, budgets, protocol and evaluation thresholds."""
    generate = resolve(
        GenerateConfig,
        overrides=[
            "multi_room_radius=1.5",
            "single_room_radius=0.75",
            "unseen_share=0.4",
            "val_seen_share=0.2",
            "step_budget_factor=2.0",
            "step_budget_per_target=12",
            "relations.level_angle=20",
        ],
    )
    assert (generate.multi_room_radius, generate.single_room_radius) == (1.5, 0.75)
    assert (generate.step_budget_factor, generate.step_budget_per_target) == (2.0, 12)
    assert generate.relations.level_angle == 20.0
    run = resolve(RunSettings, overrides=["protocol.fov_deg=120", "protocol.miss_rate=0.2"])
    assert (run.protocol.fov_deg, run.protocol.miss_rate) == (120.0, 0.2)
    evaluate = resolve(EvaluateSettings, overrides=["metrics.fidelity_threshold=3.0"])
    assert evaluate.metrics.fidelity_threshold == 3.0
    bench = resolve(BenchmarkSettings, overrides=["dataset.scenes=10", "noise.miss_rate=0.5"])
    assert (bench.dataset.scenes, bench.dataset.per_scene, bench.noise.miss_rate) == (10, 50, 0.5)


@pytest.mark.parametrize(
    ("model", "override", "message"),
    [
        (
            GenerateConfig,
            "relations.near_hold=0.4",
            "config: unknown key 'relations.near_hold'; did you mean 'relations.near_holds'? "
            "(allowed: version, near_holds, near_fails,",
        ),
        (RunSettings, "protocol.fov=60", "did you mean 'protocol.fov_deg'?"),
        (
            GenerateConfig,
            "per_scene=0",
            "config: per_scene=0: Input should be greater than or equal to 1 "
            "(allowed: an integer ≥ 1 and ≤ 10000)",
        ),
        (
            GenerateConfig,
            "val_seen_share=1.5",
            "config: val_seen_share=1.5: Input should be less than 1 "
            "(allowed: a number ≥ 0 and < 1)",
        ),
        (
            EvaluateSettings,
            "metrics.subgoal_order=sometimes",
            "config: metrics.subgoal_order=sometimes: Input should be 'nondecreasing' or "
            "'increasing' (allowed: 'nondecreasing' or 'increasing')",
        ),
        (
            RunSettings,
            "protocol.panoramic=maybe",
            "config: protocol.panoramic=maybe: Input should be a valid boolean",
        ),
        (RunSettings, "limit=none", "(allowed: an integer ≥ 1, or null)"),
        (
            GenerateConfig,
            "relations.near_holds=1.5",
            "config: relations: near needs near_holds < near_fails (got 1.5 and 1.0)",
        ),
        (GenerateConfig, "seed", "config: override 'seed' is not key=value"),
        (GenerateConfig, "inputs=3", "config: inputs=3: Input should be a valid tuple"),
    ],
)
def test_bad_keys_and_values_name_the_key_and_the_allowed_values(
    model: type, override: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        resolve(model, overrides=[override])
    text = str(info.value)
    assert text.startswith(message) or message in text, text
    assert "\n" not in text


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.yaml", "scenes: 3\n  per_scene: [4\n", "bad.yaml: line 2:"),
        ("bad.json", '{"scenes": 3,\n "seed": }', "bad.json: line 2: Expecting value"),
        ("list.yaml", "- scenes\n- 3\n", "list.yaml: the top level must be a mapping"),
        ("conf.toml", "scenes = 3", "conf.toml: config files are .yaml, .yml or .json"),
    ],
)
def test_bad_config_files(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match="^" + str(tmp_path).replace("\\", "\\\\")) as info:
        read_config_file(path)
    assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="cannot read"):
        read_config_file(tmp_path / "missing.yaml")


# --- the commands ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory, cli) -> tuple[Path, Path]:
    """A small dataset made by ``condvln generate --config FILE`` with overrides."""
    root = tmp_path_factory.mktemp("config")
    config = root / "generate.yaml"
    config.write_text("scenes: 6\nper_scene: 10\nrelations:\n  near_holds: 0.45\n")
    out = root / "ds"
    result = cli(
        "generate", "--out", str(out), "--config", str(config), "--seed", "2",
        "per_scene=30", "step_budget_per_target=0", "-j", "1", "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return root, out


def _episodes(dataset: Path, split: str) -> list[dict[str, Any]]:
    data = orjson.loads(gzip.decompress((dataset / split / f"{split}.json.gz").read_bytes()))
    return data["episodes"]


def test_generate_stamps_the_effective_configuration(generated: tuple[Path, Path]) -> None:
    _, dataset = generated
    stats = orjson.loads((dataset / "stats.json").read_bytes())
    config = stats["config"]
    assert (config["scenes"], config["per_scene"], config["seed"]) == (6, 30, 2)
    assert config["relations"]["near_holds"] == 0.45 and config["step_budget_per_target"] == 0
    info = _episodes(dataset, "train")[0]["info"]["condvln"]
    assert info["config"] == config and info["config_hash"] == stats["config_hash"]


@pytest.mark.slow
def test_step_budget_keys_change_the_budget(generated: tuple[Path, Path], tmp_path: Path) -> None:
    """The same episodes with the default 24 steps per target instead of 0: every budget grows
    by 24 × the targets of the longest branch (its waypoints plus its arm's targets)."""
    _, dataset = generated
    config = orjson.loads((dataset / "stats.json").read_bytes())["config"]
    default = GenerateConfig.model_validate({**config, "step_budget_per_target": 24})
    generate_dataset(default, tmp_path / "ds", workers=1)
    ours, theirs = _episodes(dataset, "train"), _episodes(tmp_path / "ds", "train")
    assert len(ours) == len(theirs) > 5
    for zero, full in zip(ours, theirs, strict=True):
        assert zero["reference_path"] == full["reference_path"]
        a, b = zero["info"]["condvln"], full["info"]["condvln"]
        assert b["step_budget"] - a["step_budget"] == 24 * (a["horizon"] + a["branch_steps"])


def test_run_and_evaluate_take_config_files_and_overrides(
    generated: tuple[Path, Path], cli
) -> None:
    root, dataset = generated
    run_config = root / "run.yaml"
    run_config.write_text("split: train\nlimit: 3\nprotocol:\n  fov_deg: 60\n  view_range: 4\n")
    run = root / "run"
    result = cli(
        "run", "--agent", "goal_only", "--dataset", str(dataset), "--out", str(run),
        "--config", str(run_config), "protocol.miss_rate=0.1", "-j", "1", "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    protocol = manifest["protocol"]
    assert (protocol["fov_deg"], protocol["view_range"], protocol["miss_rate"]) == (60, 4, 0.1)
    assert manifest["split"] == "train"
    assert len((run / "trajectories.jsonl").read_text().splitlines()) == 3
    eval_config = root / "eval.json"
    eval_config.write_text('{"split": "train", "metrics": {"fidelity_threshold": 2.0}}')
    out = root / "eval"
    result = cli(
        "evaluate", str(dataset), str(run / "trajectories.jsonl"), "--out", str(out),
        "--config", str(eval_config), "name=cfg_run",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert manifest["metric_options"]["fidelity_threshold"] == 2.0
    assert manifest["run"] == "cfg_run" and manifest["dataset"]["split"] == "train"


@pytest.mark.parametrize(
    "args",
    [
        ("generate", "--out", "{tmp}/ds", "relations.near_hold=0.4"),
        ("run", "--agent", "random", "--dataset", "{tmp}/none", "--out", "{tmp}/r", "fov=60"),
        ("evaluate", "{tmp}/none", "{tmp}/p.json", "--out", "{tmp}/e", "metrics.dth=3"),
        ("benchmark", "--out", "{tmp}/b", "dataset.scene=3"),
        ("config", "run", "protocol.fov_deg=0"),
    ],
)
def test_commands_reject_bad_settings_in_one_line(cli, tmp_path: Path, args: tuple) -> None:
    result = cli(*(a.format(tmp=tmp_path) for a in args))
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("condvln: error: config: "), result.stderr
    assert "Traceback" not in result.stderr
    assert not any(tmp_path.iterdir())  # nothing written


def test_config_command_prints_a_file_that_reads_back(cli, tmp_path: Path) -> None:
    result = cli("config", "benchmark", "dataset.scenes=12", "metrics.fidelity_threshold=3.0")
    assert result.returncode == 0, result.stderr
    printed = yaml.safe_load(result.stdout)
    assert printed["dataset"]["scenes"] == 12 and printed["dataset"]["per_scene"] == 50
    (tmp_path / "bench.yaml").write_text(result.stdout)
    again = resolve(BenchmarkSettings, config_file=tmp_path / "bench.yaml")
    assert again == resolve(
        BenchmarkSettings, overrides=["dataset.scenes=12", "metrics.fidelity_threshold=3.0"]
    )
    unknown = cli("config", "evalute")
    assert unknown.returncode == 2 and "did you mean 'evaluate'?" in unknown.stderr


def test_success_radius_key_drives_goals_and_sampling(tmp_path: Path) -> None:
    """multi_room_radius=1.5: every goal has radius 1.5, leaf goals lie more than 3 m apart and
    starts more than 3 m (horizontally) from every leaf goal, as the sampler promises."""
    config = resolve(
        GenerateConfig, overrides=["scenes=5", "per_scene=20", "multi_room_radius=1.5"]
    )
    generate_dataset(config, tmp_path / "ds", workers=1)
    episodes = _episodes(tmp_path / "ds", "train")
    assert len(episodes) > 5
    for episode in episodes:
        info = episode["info"]["condvln"]
        assert episode["goals"][0]["radius"] == 1.5 and info["goal"]["radius"] == 1.5
        points = [g["position"] for g in info["branch_goals"]]
        for i, a in enumerate(points):
            assert all(math.dist(a, b) > 3.0 for b in points[i + 1 :]), episode["episode_id"]
            start = episode["start_position"]
            assert math.hypot(a[0] - start[0], a[2] - start[2]) > 3.0


# --- Hydra's override prefixes and whole commands in a file (issue 30) ---------------------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["+agent_args.patience=40"], ({"patience": 40}, 0, 90.0)),
        (["agent_args={a: 1}", "+agent_args.b=[1,2]"], ({"a": 1, "b": [1, 2]}, 0, 90.0)),
        (["++seed=3", "++agent_args.x=null"], ({"x": None}, 3, 90.0)),
        (["protocol.fov_deg=60", "~protocol.fov_deg", "seed=4", "~seed=4"], ({}, 0, 90.0)),
        (["+agent_args.t=0.5", "~agent_args.t=0.5"], ({}, 0, 90.0)),
        (["~protocol"], ({}, 0, 90.0)),
    ],
)
def test_add_and_delete_overrides(overrides: list[str], expected: tuple) -> None:
    from condvln.config import RunSettings as Whole

    settings = resolve(Whole, overrides=overrides)
    assert (settings.agent_args, settings.seed, settings.protocol.fov_deg) == expected


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["+seed=3"],
            "config: +seed=3: 'seed' is already set; override it with seed=3 (or ++seed=3)",
        ),
        (["~agent_args.t"], "config: ~agent_args.t: there is no key 'agent_args.t' to delete"),
        (
            ["+agent_args.t=1", "~agent_args.t=2"],
            "config: ~agent_args.t=2: 'agent_args.t' is 1, not 2",
        ),
        (["~"], "config: override '~' is not key=value, +key=value, ++key=value or ~key"),
        (["+seed"], "config: override '+seed' is not key=value, +key=value, ++key=value or ~key"),
        (["+sed=1"], "config: unknown key 'sed'; did you mean 'seed'?"),
    ],
)
def test_add_and_delete_errors_are_one_line(overrides: list[str], message: str) -> None:
    from condvln.config import RunSettings as Whole

    with pytest.raises(ConfigError) as error:
        resolve(Whole, overrides=overrides)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_command_keys_stay_out_of_the_library_models(tmp_path: Path) -> None:
    """``out``, ``workers``, … of a command never reach the dataset's configuration (hash)."""
    from condvln.agents.runner import options
    from condvln.config import GenerateSettings, RunSettings, library_part

    config = tmp_path / "generate.yaml"
    config.write_text("scenes: 12\nout: data/x\nworkers: 2\nexecutor: local\noverwrite: true\n")
    settings = resolve(GenerateSettings, config_file=config)
    assert (settings.out, settings.workers, settings.overwrite) == ("data/x", 2, True)
    dataset = library_part(settings, GenerateConfig)
    assert dataset.config_hash() == GenerateConfig(scenes=12).config_hash()
    run = resolve(
        RunSettings, overrides=["agent=random", "limit=3", "agent_resources={num_gpus: 1}"]
    )
    assert library_part(run, options.RunOptions).limit == 3
    assert (run.agent, run.agent_resources) == ("random", {"num_gpus": 1})
