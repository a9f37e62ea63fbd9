"""What the commands print, in logs and on terminals (issue 30): plain progress lines when stderr
is not a terminal, tables never cut when stdout is not one (80 columns on an 80-column
terminal), help that keeps option names whole; and a ``--config`` file holding a whole command."""

from __future__ import annotations

import io
import itertools
import re
from pathlib import Path

import orjson
import pytest

from condvln.cli.common import PlainProgress
from condvln.vlnce import load_split

DATA = Path(__file__).parent / "data"
LINE = re.compile(r"^(?P<phase>.+): (?P<done>\d+)/(?P<total>\d+) \(\d+%\)(, [\d.]+/s)?"
                  r"(, ETA \d+:\d\d|, done in \d+:\d\d)?$")  # fmt: skip
ANSI = re.compile(r"\x1b\[")


def test_progress_lines_off_a_terminal(cli, dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ("run", "--agent", "random", "--dataset", str(dataset), "--out", str(run))
    result = cli(*args, "--split", "train", "--limit", "3", "-j", "1", "--record", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines and not ANSI.search(result.stderr)
    assert all(LINE.match(line) for line in lines), lines
    phases = [LINE.match(line)["phase"] for line in lines]
    assert phases[0] == "run random on train" and "videos" in phases
    assert lines[-1].startswith("videos: 1/1 (100%)") and "done in" in lines[-1]
    ends = [line for line in lines if line.startswith("run random on train: 3/3")]
    assert len(ends) == 1 and "done in" in ends[0]


def test_plain_progress_writes_at_most_every_interval() -> None:
    now = [0.0]
    out = io.StringIO()
    update = PlainProgress(stream=out, clock=lambda: now[0], interval=10.0).done_total("phase")
    for done in range(1, 101):
        now[0] = done * 1.5
        update(done, 100)
    lines = out.getvalue().splitlines()
    times = [1.5 * int(LINE.match(line)["done"]) for line in lines]
    assert lines[0].startswith("phase: 1/100") and lines[-1].startswith("phase: 100/100")
    assert all(b - a >= 10.0 for a, b in itertools.pairwise(times[:-1]))
    assert 14 <= len(lines) <= 16 and "ETA" in lines[5] and "done in 2:28" in lines[-1]


@pytest.mark.slow
def test_tables_are_whole_off_a_terminal_and_fit_one(cli, dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ("run", "--agent", "random", "--dataset", str(dataset), "--out", str(run))
    assert cli(*args, "--split", "train", "--limit", "4", "-q").returncode == 0
    evaluate = ["evaluate", str(dataset), str(run), "--out", str(tmp_path / "eval")]
    piped = cli(*evaluate, columns=40)  # a narrow terminal, but stdout is a pipe
    assert piped.returncode == 0, piped.stderr
    assert "…" not in piped.stdout and max(map(len, piped.stdout.splitlines())) > 80
    total = len(load_split(dataset, "train")["episodes"])
    assert f"random on train: {total} episodes, 4 scored" in piped.stdout  # split, name: the run's
    shown = cli(*evaluate, columns=80, terminal=True).stdout
    assert "Table 2: main results (%)" in shown
    assert max(map(len, shown.splitlines())) <= 80


def test_help_keeps_option_names_and_extras(cli) -> None:
    result = cli("run", "--help", columns=80)
    assert result.returncode == 0
    for option in ("--false-detection-rate", "--agent-resources", "--allow-failures", "--restart"):
        assert re.search(rf"^\s+{option}\b", result.stdout, flags=re.M), option
    assert 'pip install "condvln[ray]"' in " ".join(result.stdout.split())
    assert max(map(len, result.stdout.splitlines())) <= 80
    assert "Exit code 3 when an episode failed" in result.stdout
    root = cli("--help", columns=80).stdout
    assert "Exit codes: 0 done" in root and "3 episodes failed" in " ".join(root.split())


@pytest.mark.slow
def test_a_config_file_holds_the_whole_command(cli, dataset: Path, tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(
        f"agent: {DATA / 'run_agents.py'}:Walker\nagent_args: {{patience: 7}}\n"
        f"dataset: {dataset}\nout: {tmp_path / 'run'}\nsplit: train\nlimit: 2\n"
        "executor: local\nworkers: 1\n"
    )
    done = cli("run", "--config", str(config), "-q")
    assert done.returncode == 0, done.stderr
    manifest = orjson.loads((tmp_path / "run" / "manifest.json").read_bytes())
    assert manifest["agent_args"] == {"patience": 7} and manifest["episodes"] == 2
    again = cli("run", "--config", str(config), "-q", f"out={tmp_path / 'other'}",
                "~agent_args.patience", "+agent_args.patience=5", "limit=1")  # fmt: skip
    assert again.returncode == 0, again.stderr
    other = orjson.loads((tmp_path / "other" / "manifest.json").read_bytes())
    assert other["agent_args"] == {"patience": 5} and other["episodes"] == 1
    added = cli("run", "--config", str(config), "+agent_args.patience=5")
    assert added.returncode == 2 and added.stderr == (
        "condvln: error: config: +agent_args.patience=5: 'agent_args.patience' is already set; "
        "override it with agent_args.patience=5 (or ++agent_args.patience=5)\n"
    )
    deleted = cli("run", "--config", str(config), "~agent_args.temperature")
    assert deleted.returncode == 2 and deleted.stderr == (
        "condvln: error: config: ~agent_args.temperature: there is no key "
        "'agent_args.temperature' to delete\n"
    )
    config.write_text(f"dataset: {dataset}\nout: {tmp_path / 'x'}\n")
    missing = cli("run", "--config", str(config))
    assert missing.returncode == 2 and missing.stderr == (
        "condvln: error: --agent is required (or the key 'agent' in --config)\n"
    )
    evaluate = tmp_path / "evaluate.yaml"
    evaluate.write_text(
        f"dataset: {dataset}\npredictions: {tmp_path / 'run'}\nout: {tmp_path / 'eval'}\n"
    )
    scored = cli("evaluate", "--config", str(evaluate), "name=walker", "~seed")
    assert scored.returncode == 0, scored.stderr
    assert "| walker |" in (tmp_path / "eval" / "table2.md").read_text()
