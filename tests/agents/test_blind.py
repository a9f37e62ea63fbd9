"""The blind prior agents decide from text priors only and then walk the chosen branch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from condvln.agents.blind import CommonsensePriorAgent, TextPriorAgent, _train_prior
from condvln.agents.loader import load_agent
from condvln.agents.run import EpisodeWorker, WorkerConfig, episode_specs, run_agent
from condvln.program.ast import program_from_dict
from condvln.sim.protocol import parse_protocol
from condvln.synth.priors import FrequencyPrior, labelled_conditions, predicted_leaf
from condvln.vlnce import load_split


def test_blind_agents_are_registered() -> None:
    assert isinstance(load_agent("text_prior"), TextPriorAgent)
    assert isinstance(load_agent("commonsense_prior"), CommonsensePriorAgent)


def test_text_prior_learns_from_the_train_split_only(dataset: Path) -> None:
    agent = TextPriorAgent()
    agent.fit(dataset)
    train = load_split(dataset, "train")["episodes"]
    expected = FrequencyPrior(labelled_conditions(train))
    assert agent.prior().groups == expected.groups
    assert _train_prior(dataset.resolve()) is agent.prior()  # read once per process


@pytest.mark.slow
def test_prior_agents_choose_by_prior_whatever_they_see(dataset: Path) -> None:
    """The chosen path is ``predicted_leaf`` of the episode's program under the prior, with or
    without perception noise; without noise, an agent that ends at a leaf goal nearly always
    ends at the chosen one."""
    episodes = {e["episode_id"]: e for e in load_split(dataset, "train")["episodes"]}
    for agent in (TextPriorAgent(), CommonsensePriorAgent()):
        at_leaf = []
        for protocol in ({}, {"miss_rate": 0.5, "false_detection_rate": 0.2}):
            config = WorkerConfig("x", {}, dataset, parse_protocol(protocol), 0)
            worker = EpisodeWorker(config, agent)  # fits the text prior on the dataset
            for spec in episode_specs(dataset, "train", "original", limit=30):
                info = episodes[spec.episode_id]["info"]["condvln"]
                (record,) = worker.run([spec])
                assert agent.chosen == predicted_leaf(
                    program_from_dict(info["program"]), agent.prior()
                )
                end = np.array(record["positions"][-1])
                gaps = [np.linalg.norm(end - np.array(g["position"])) for g in info["branch_goals"]]
                if min(gaps) < 1.0 and not protocol:  # noise may mislead the navigation
                    at_leaf.append(int(np.argmin(gaps)) == agent.chosen)
        assert len(at_leaf) >= 5 and np.mean(at_leaf) >= 0.75, type(agent).__name__


def test_run_agent_fits_the_text_prior_on_its_dataset(dataset: Path, tmp_path: Path) -> None:
    summary = run_agent("text_prior", dataset, "val_seen", tmp_path / "run", workers=1)
    assert summary.episodes == len(load_split(dataset, "val_seen")["episodes"])
