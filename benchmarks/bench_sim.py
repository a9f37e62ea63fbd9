"""Benchmark the built-in simulator and the baseline agents (single core).

1. Simulator steps per second with symbolic observations (default protocol: 90° view, 5 m,
   pose, room type, boxes; then with perception noise and panoramic view) under VLN-CE random
   actions on procedural houses (target: ≥ 20,000 steps/s).
2. Episodes per second per agent: a small dataset is generated into a temporary folder and
   every baseline runs on its train split in this process (``workers=1``).

::

    PYTHONPATH=src python benchmarks/bench_sim.py [--steps 50000] [--scenes 6] [--per-scene 30]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from condvln.agents import run_agent
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.scene.sources.procedural import generate_house
from condvln.sim import ObservationProtocol, Simulator

PROTOCOLS = {
    "symbolic (default)": ObservationProtocol(),
    "noisy (miss .3, confusion .1, false .1)": ObservationProtocol(
        miss_rate=0.3, confusion_rate=0.1, false_detection_rate=0.1
    ),
    "panoramic": ObservationProtocol(panoramic=True),
}
MOVES = (0.0, 0.68, 0.16, 0.16)
"""Action distribution of the step benchmark: VLN-CE's random agent without STOP."""
AGENTS = ("random", "condition_blind", "goal_only", "oracle_linear", "neurosymbolic")


def steps_per_second(protocol: ObservationProtocol, steps: int, houses: int = 3) -> float:
    """Simulator steps per second under random actions, over ``houses`` procedural houses."""
    rng = np.random.default_rng(0)
    total_time, total_steps = 0.0, 0
    for seed in range(houses):
        sim = Simulator(generate_house(seed), protocol)
        free = np.argwhere(sim.navigator.area.free)
        row, col = free[len(free) // 2]
        start = sim.navigator.point(*sim.navigator.area.frame.centres([row], [col])[0])
        actions = rng.choice(4, p=MOVES, size=steps).tolist()
        sim.reset(start, 0.0, instruction="go", step_budget=steps + 1, seed=seed)
        sim.step(actions[0])  # compile / warm up
        began = time.perf_counter()
        for action in actions[1:]:
            sim.step(action)
        total_time += time.perf_counter() - began
        total_steps += steps - 1
    return total_steps / total_time


def agent_rates(scenes: int, per_scene: int) -> None:
    """Generate a small dataset and print episodes / s and steps / s per agent."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "ds"
        generate_dataset(GenerateConfig(scenes=scenes, per_scene=per_scene), data)
        run_agent("random", data, "train", Path(tmp) / "warm", limit=2)  # compile kernels
        for name in AGENTS:
            summary = run_agent(name, data, "train", Path(tmp) / name)
            print(
                f"  {name:16s} {summary.ran / summary.seconds:8.1f} episodes/s   "
                f"{summary.steps / summary.seconds:9.0f} steps/s   ({summary.ran} episodes)"
            )


def main() -> None:
    """Run both benchmarks and print the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--scenes", type=int, default=6)
    parser.add_argument("--per-scene", type=int, default=30)
    args = parser.parse_args()
    print("simulator steps per second (random actions, single core):")
    for label, protocol in PROTOCOLS.items():
        print(f"  {label:40s} {steps_per_second(protocol, args.steps):10.0f}")
    print("agents on a generated train split (workers=1):")
    agent_rates(args.scenes, args.per_scene)


if __name__ == "__main__":
    main()
