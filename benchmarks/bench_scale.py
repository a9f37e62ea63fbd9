"""Scale-out: ``condvln run`` throughput for 1 and 2 workers, local processes vs Ray.

With ``--houses N`` it measures scale in practice instead (issue 33 item 7): for local processes
and a private Ray cluster, with 1 and 2 workers, ``condvln generate --scenes N`` and then
``condvln run --agent condition_blind`` on val_unseen, each a fresh command. Printed per
setting: wall time of each command, the peak resident memory of the command's own process and
of its largest other process (local workers; Ray's workers, raylet and stores), sampled from
``/proc`` every 0.2 s (Linux), episodes kept and the dataset's size on disk:

    PYTHONPATH=src python benchmarks/bench_scale.py --houses 1000 [--per-scene 30] \\
        [--settings local:1 local:2 ray:2] [--repeats 1]

With ``--repeats R`` the settings take turns in each of R rounds, so the machine's drift falls on
all of them; it then prints each setting's median times and, for a kind with 1 and 2 workers, the
scaling efficiency of ``generate`` and ``run`` at 2 workers (issue 33 item 4) from the medians
and as the median of the rounds' efficiencies. Every setting and round must write the same split
files and the same predictions (checked by digest and printed).

The agent sleeps ``--sleep`` seconds per act (a stand-in for a model on a GPU) and stops after
``--steps`` actions. Each setting runs twice, with two episode counts; the difference gives the
steady-state time per episode apart from fixed costs (worker processes or actors starting,
importing CondVLN, building agents), which are printed separately. Prints episodes per second,
the scaling efficiency at 2 workers (``rate2 / (2 · rate1)``, target ≥ 0.8) and Ray's
per-episode overhead (Ray vs local with one worker, for the sleeping agent and for one that does
not sleep). The Ray cluster (``ray.init(num_cpus=2)``) is started once before the timed runs; its
start-up time is printed too.

    PYTHONPATH=src python benchmarks/bench_scale.py [--episodes 24 72 --steps 20 --sleep 0.02]

With ``--evaluate`` it measures ``evaluate``'s scaling instead (issue 33 item 4): one
``condition_blind`` run over the train split of ``--eval-houses`` houses (× ``--per-scene``),
scored by :func:`~condvln.evaluation.evaluate.evaluate_run` with local processes and on
Ray, 1 and 2 workers, ``--repeats`` times each (median), every time cold as a fresh command
(no geodesics kept from an earlier evaluation; a Ray session started before the clock and shut
down after it); the results are checked byte-identical across settings:

    PYTHONPATH=src python benchmarks/bench_scale.py --evaluate [--eval-houses 80 --per-scene 50 --repeats 5]

With ``--evaluate --fresh`` each local evaluation runs in a Python process of its own (imports
apart, its clock holds every cost a command pays once, numba's kernels included), one worker
and two workers alternating in each of ``--repeats`` rounds, so the machine's drift falls on
both; it prints the medians, their efficiency and the median of the rounds' efficiencies.

Beside every efficiency it prints the machine's own at that moment, the *ceiling*: a pure-Python
loop of fixed work timed alone and as two processes at once, ``t1 / t2``. On a shared host the
second core is not always a whole core (the same loop has given 0.64-1.06 within minutes here);
a program that divided perfectly would reach about the ceiling, not 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from condvln.agents import run_agent
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.evaluation.evaluate import evaluate_run
from condvln.parallel import Executor


class SleepAgent:
    """Turns left ``steps`` times, sleeping ``sleep`` seconds per act, then stops."""

    instruction_source = "original"

    def __init__(self, sleep: float = 0.02, steps: int = 20) -> None:
        self.sleep, self.steps = sleep, steps

    def reset(self, episode: object) -> None:
        """Nothing to reset."""

    def act(self, observation: object) -> int:
        """LEFT until the step count, then STOP."""
        time.sleep(self.sleep)
        return 0 if observation.step >= self.steps else 2  # type: ignore[attr-defined]


def _time(dataset: Path, out: Path, executor: Executor, args: dict, episodes: int) -> float:
    started = time.perf_counter()
    summary = run_agent(
        f"{Path(__file__).resolve()}:SleepAgent",
        dataset,
        "train",
        out,
        agent_args=args,
        executor=executor,
        limit=episodes,
        resume=False,
    )
    assert summary.ran == episodes, summary
    return time.perf_counter() - started


def _measure(
    dataset: Path, root: Path, kind: str, workers: int, args: dict, sizes: tuple[int, int]
) -> tuple[float, float]:
    """``(seconds per episode at the margin, fixed seconds)`` from runs of two sizes."""
    small, large = (
        _time(dataset, root / f"{kind}{workers}-{n}", Executor(kind, workers), args, n)
        for n in sizes
    )
    marginal = (large - small) / (sizes[1] - sizes[0])
    return marginal, small - marginal * sizes[0]


def _rss_mib(pid: int) -> float:
    """Resident memory of a process (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _descendants(root: int) -> list[int]:
    """The processes below ``root``, from the parent ids in ``/proc/*/stat``."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _command(args: list[str]) -> dict[str, float]:
    """Run ``python -m condvln ARGS``: wall seconds and the peak memory of its own process and
    of its largest other process."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "condvln", *args], stdout=subprocess.DEVNULL)
    peak = {"own": 0.0, "other": 0.0}
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            peak["own"] = max(peak["own"], _rss_mib(proc.pid))
            others = [_rss_mib(p) for p in _descendants(proc.pid)]
            peak["other"] = max([peak["other"], *others])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait()
    done.set()
    sampler.join()
    if code not in (0, 3):
        raise SystemExit(f"condvln {' '.join(args)} exited with {code}")
    return {"seconds": time.perf_counter() - started, **peak}


def _size_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def _digest(folder: Path, names: tuple[str, ...]) -> str:
    """SHA-256 of the files below ``folder/NAME`` for each of ``names``, paths included."""
    digest = hashlib.sha256()
    for name in names:
        for path in sorted((folder / name).rglob("*")):
            if path.is_file():
                digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _one_setting(root: Path, setting: str, houses: int, per_scene: int) -> dict[str, Any]:
    """``condvln generate`` then ``condvln run --agent condition_blind`` in fresh commands; print
    their times and memory; return the two times and digests of the splits and predictions."""
    kind, workers = setting.split(":")
    dataset, run = root / f"ds-{kind}{workers}", root / f"run-{kind}{workers}"
    common = ["-j", workers, "--executor", kind]
    gen = _command(["generate", "--scenes", str(houses), "--per-scene", str(per_scene),
                    "--out", str(dataset), "--overwrite", *common])  # fmt: skip
    stats = json.loads((dataset / "stats.json").read_text())
    episodes = stats["splits"]["val_unseen"]
    ran = _command(["run", "--agent", "condition_blind", "--dataset", str(dataset),
                    "--split", "val_unseen", "--out", str(run), "--restart", *common])  # fmt: skip
    print(
        f"{setting:8} generate {gen['seconds']:7.1f} s (own {gen['own']:6.0f} MiB, "
        f"largest other {gen['other']:6.0f} MiB; {sum(stats['splits'].values()):,} "
        f"episodes, {_size_mib(dataset):.0f} MiB on disk) | run {episodes:,} val_unseen "
        f"episodes {ran['seconds']:6.1f} s (own {ran['own']:5.0f} MiB, largest other "
        f"{ran['other']:5.0f} MiB) | load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    return {
        "generate": gen["seconds"],
        "run": ran["seconds"],
        "splits": _digest(dataset, (*stats["splits"], "pairs")),
        "predictions": _digest(run, ("predictions.json", "trajectories.jsonl")),
    }


def scale_in_practice(houses: int, per_scene: int, settings: list[str], repeats: int) -> None:
    """Generate ``houses`` houses and run one baseline per setting (``local:2``, ``ray:1``, …),
    the settings in turn in each of ``repeats`` rounds; with several rounds, print the medians
    and, where a kind has 1 and 2 workers, its scaling efficiency at 2 workers."""
    print(f"{houses} houses × {per_scene}; load average before: {os.getloadavg()[0]:.2f}")
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in settings}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(repeats):
            if repeats > 1:
                print(f"round {round_ + 1} of {repeats}", flush=True)
            for setting in settings:
                results[setting].append(_one_setting(Path(tmp), setting, houses, per_scene))
            print(f"the machine's ceiling after round {round_ + 1}: {cpu_ceiling():.2f}")
    for key in ("splits", "predictions"):
        same = len({r[key] for rounds in results.values() for r in rounds}) == 1
        print(f"{key} byte-identical in every setting and round: {same}")
    if repeats > 1:
        _print_scaling(results)


def _print_scaling(results: dict[str, list[dict[str, Any]]]) -> None:
    """Median times per setting and, per kind with 1 and 2 workers, the efficiency at 2."""
    for setting, rounds in results.items():
        medians = {k: statistics.median(r[k] for r in rounds) for k in ("generate", "run")}
        print(f"{setting:8} medians of {len(rounds)}: generate {medians['generate']:.1f} s, "
              f"run {medians['run']:.1f} s")  # fmt: skip
    for kind in ("local", "ray"):
        one, two = results.get(f"{kind}:1"), results.get(f"{kind}:2")
        if not (one and two):
            continue
        for key in ("generate", "run"):
            t1, t2 = [r[key] for r in one], [r[key] for r in two]
            rounds = statistics.median(a / (2 * b) for a, b in zip(t1, t2, strict=True))
            efficiency = statistics.median(t1) / (2 * statistics.median(t2))
            print(f"{kind:5} {key:8} scaling efficiency at 2 workers {efficiency:.2f} (medians); "
                  f"median of the rounds' efficiencies {rounds:.2f}")  # fmt: skip


_LOOP = "import sys\ns = 0\nfor i in range(int(sys.argv[1])):\n    s += i\n"


def cpu_ceiling(iterations: int = 30_000_000) -> float:
    """The host's two-process efficiency now: one process's wall time for a fixed pure-Python
    loop divided by the wall time of two such processes started together (1.0: two whole
    cores; the processes' start-up is inside both clocks)."""

    def wall(processes: int) -> float:
        started = time.perf_counter()
        command = [sys.executable, "-c", _LOOP, str(iterations)]
        for proc in [subprocess.Popen(command) for _ in range(processes)]:
            if proc.wait():
                raise SystemExit(f"the ceiling's loop exited with {proc.returncode}")
        return time.perf_counter() - started

    return wall(1) / wall(2)


def _evaluate_cold(dataset: Path, run: Path, out: Path, kind: str, workers: int) -> float:
    """Seconds of one ``evaluate_run`` with nothing kept from an earlier one: this process's
    geodesics dropped (local workers fork from it), a fresh Ray session (started before the
    clock, as a command would, and shut down after it)."""
    import ray

    from condvln.evaluation import evaluate as evaluation

    evaluation._GEODESICS.clear()
    if kind == "ray":
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        started = time.perf_counter()
        evaluate_run(dataset, run, out, executor=Executor(kind, workers))
        return time.perf_counter() - started
    finally:
        if kind == "ray":
            ray.shutdown()


_FRESH_EVALUATION = """
import sys, time
from condvln.evaluation.evaluate import evaluate_run
started = time.perf_counter()
evaluate_run(sys.argv[1], sys.argv[2], sys.argv[3], executor=int(sys.argv[4]))
print(time.perf_counter() - started)
"""


def _evaluate_fresh(dataset: Path, run: Path, out: Path, workers: int) -> float:
    """Seconds of one ``evaluate_run`` in a fresh Python process, imports apart."""
    args = [str(dataset), str(run), str(out), str(workers)]
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_EVALUATION, *args], check=True, capture_output=True, text=True
    )
    return float(done.stdout.split()[-1])


def _evaluation_input(root: Path, houses: int, per_scene: int) -> None:
    """``root/ds`` of ``houses`` houses and ``root/run``, ``condition_blind`` on its train split."""
    generate_dataset(GenerateConfig(scenes=houses, per_scene=per_scene), root / "ds", workers=2)
    summary = run_agent(
        "condition_blind", root / "ds", "train", root / "run", executor=Executor("local", 2)
    )
    print(f"{summary.episodes:,} train episodes of {houses} houses, each evaluation cold")


def evaluate_scaling_fresh(houses: int, per_scene: int, repeats: int) -> None:
    """Seconds of scoring one run in fresh processes, 1 and 2 local workers alternating."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _evaluation_input(root, houses, per_scene)
        times: dict[int, list[float]] = {1: [], 2: []}
        ceilings = []
        for round_ in range(repeats):
            for workers in (1, 2):
                out = root / f"eval{workers}"
                times[workers].append(_evaluate_fresh(root / "ds", root / "run", out, workers))
            ceilings.append(cpu_ceiling())
            print(
                f"round {round_ + 1}: {times[1][-1]:6.2f} s with 1 worker, {times[2][-1]:6.2f} s "
                f"with 2; ceiling {ceilings[-1]:.2f}; load average {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        one, two = statistics.median(times[1]), statistics.median(times[2])
        rounds = statistics.median(a / (2 * b) for a, b in zip(times[1], times[2], strict=True))
        print(
            f"evaluate local, fresh processes: {one:.2f} / {two:.2f} s with 1 / 2 workers "
            f"(medians of {repeats}), efficiency {one / (2 * two):.2f}; median of the rounds' "
            f"efficiencies {rounds:.2f}; the machine's ceiling {statistics.median(ceilings):.2f} "
            f"(median; {min(ceilings):.2f}-{max(ceilings):.2f})"
        )
        same = (root / "eval1" / "episodes.jsonl").read_bytes() == (
            root / "eval2" / "episodes.jsonl"
        ).read_bytes()
        print(f"episode records byte-identical with 1 and 2 workers: {same}")


def evaluate_scaling(houses: int, per_scene: int, repeats: int) -> None:
    """Median seconds of scoring one run per setting, and the efficiency at 2 workers."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _evaluation_input(root, houses, per_scene)
        medians, outputs, ceilings = {}, {}, []
        for kind in ("local", "ray"):
            for workers in (1, 2):
                out = root / f"eval-{kind}{workers}"
                times = [
                    _evaluate_cold(root / "ds", root / "run", out, kind, workers)
                    for _ in range(repeats)
                ]
                medians[kind, workers] = statistics.median(times)
                outputs[kind, workers] = (out / "episodes.jsonl").read_bytes()
                ceilings.append(cpu_ceiling())
                print(
                    f"evaluate {kind:5} {workers} worker(s): {medians[kind, workers]:6.2f} s, "
                    f"median of {repeats} ({min(times):.2f}-{max(times):.2f}); ceiling after "
                    f"{ceilings[-1]:.2f}; load average {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
        for kind in ("local", "ray"):
            efficiency = medians[kind, 1] / (2 * medians[kind, 2])
            print(f"evaluate {kind:5} scaling efficiency at 2 workers: {efficiency:.2f}")
        print(
            f"the machine's ceiling: {statistics.median(ceilings):.2f} (median of {len(ceilings)})"
        )
        same = len(set(outputs.values())) == 1
        print(f"episode records byte-identical across the four settings: {same}")


def main() -> None:
    """Run the benchmark and print its numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, nargs=2, default=(24, 72), help="two run sizes")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--sleep", type=float, default=0.02)
    parser.add_argument("--houses", type=int, help="measure scale in practice instead")
    parser.add_argument("--per-scene", type=int, default=30)
    parser.add_argument("--settings", nargs="+", default=["local:1", "local:2", "ray:1", "ray:2"])
    parser.add_argument("--evaluate", action="store_true", help="measure evaluate's scaling")
    parser.add_argument("--eval-houses", type=int, default=80)
    parser.add_argument(
        "--repeats", type=int, help="rounds (default: 5 with --evaluate, 1 with --houses)"
    )
    parser.add_argument("--fresh", action="store_true", help="--evaluate in fresh processes")
    opts = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if opts.evaluate:
        scaling = evaluate_scaling_fresh if opts.fresh else evaluate_scaling
        scaling(opts.eval_houses, opts.per_scene, opts.repeats or 5)
        return
    if opts.houses:
        scale_in_practice(opts.houses, opts.per_scene, opts.settings, opts.repeats or 1)
        return
    import ray

    sizes = tuple(opts.episodes)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dataset = root / "ds"
        generate_dataset(GenerateConfig(scenes=12, per_scene=40), dataset, workers=2)
        started = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        print(f"ray.init(num_cpus=2): {time.perf_counter() - started:.1f} s (once per command)")
        try:
            print(
                f"runs of {sizes[0]} and {sizes[1]} episodes, {opts.steps + 1} acts each, "
                f"{opts.sleep * 1000:.0f} ms per act; rates from the difference (fixed costs apart)"
            )
            sleepy = {"sleep": opts.sleep, "steps": opts.steps}
            rates = {}
            for kind in ("local", "ray"):
                for workers in (1, 2):
                    marginal, fixed = _measure(dataset, root, kind, workers, sleepy, sizes)
                    rates[kind, workers] = marginal
                    print(
                        f"{kind:5} {workers} worker(s): {1 / marginal:6.2f} episodes/s, "
                        f"fixed cost {fixed:5.2f} s (workers and agents starting)"
                    )
            for kind in ("local", "ray"):
                efficiency = rates[kind, 1] / (2 * rates[kind, 2])
                print(f"{kind:5} scaling efficiency at 2 workers: {efficiency:.2f}")
            print(f"the machine's ceiling: {cpu_ceiling():.2f}")
            overhead = rates["ray", 1] - rates["local", 1]
            print(f"ray overhead per episode (sleeping agent, 1 worker): {overhead * 1000:.1f} ms")
            fast = {"sleep": 0.0, "steps": opts.steps}
            local, _ = _measure(dataset, root / "fast", "local", 1, fast, sizes)
            remote, _ = _measure(dataset, root / "fast", "ray", 1, fast, sizes)
            print(
                f"ray overhead per episode (no sleep, 1 worker): {(remote - local) * 1000:.1f} ms "
                f"(local {local * 1000:.1f} ms, ray {remote * 1000:.1f} ms per episode)"
            )
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
