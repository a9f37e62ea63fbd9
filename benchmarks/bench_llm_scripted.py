"""Is the ``llm`` agent's loop sound? Scripted readers through it against hand-written baselines.

A scripted OpenAI-compatible server on 127.0.0.1 (``tests/agents/data/chat_server.py``, no
model) answers the agent's ``subgoals`` prompts as two readers would:

* **perfect reader** — knows the gold path's targets and condition truths from the dataset's
  labels (only the server reads them), walks to each target once it is listed as seen;
* **condition-blind reader** — takes the first branch at every condition (every condition true).

They go through the whole loop — text observations, prompt, HTTP, answer parsing, planner — so
they should land near ``neurosymbolic`` and ``condition_blind``, which are run on the same split.
Then the perfect reader's run is replayed from the response cache with ``cache=readonly`` and no
server, and its files compared byte for byte.

    python benchmarks/bench_llm_scripted.py [--scenes 10 --per-scene 30 --split train]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from condvln.agents import run_agent
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.evaluation.evaluate import evaluate_run

HERE = Path(__file__).resolve().parent
SERVER = HERE.parent / "tests" / "agents" / "data" / "chat_server.py"


def _chat_server() -> Any:
    spec = importlib.util.spec_from_file_location("chat_server", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["chat_server"] = module
    spec.loader.exec_module(module)
    return module


def _load() -> str:
    return "load {:.1f}/{:.1f}/{:.1f}".format(*os.getloadavg())


def _score(dataset: Path, run: Path, split: str) -> dict[str, Any]:
    result = evaluate_run(dataset, run / "trajectories.jsonl", run.parent / f"{run.name}-eval",
                          split=split, run_name=run.name)  # fmt: skip
    metrics, records = result["metrics"], result["records"]
    branch = [r["branch_correct"] for r in records if r.get("branch_correct") is not None]
    usage = metrics["counts"].get("agent_usage", {})
    return {
        "SR": metrics["metrics"]["success"]["mean"],
        "SPL": metrics["metrics"]["spl"]["mean"],
        "BSA": metrics["metrics"]["bsa"]["mean"],
        "CSR": metrics["metrics"]["csr"]["mean"],
        "BA": sum(branch) / len(branch) if branch else None,
        "requests": usage.get("requests", "–"),
        "fallbacks": usage.get("fallbacks", "–"),
    }


def _run(name: str, agent: str, dataset: Path, split: str, out: Path, **kwargs: Any) -> float:
    started = time.perf_counter()
    summary = run_agent(agent, dataset, split, out / name, resume=False, **kwargs)
    if summary.failures:
        raise SystemExit(f"{name}: failures {summary.failures}: {summary.first_failure}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", type=int, default=10)
    parser.add_argument("--per-scene", type=int, default=30)
    parser.add_argument("--split", default="train")
    parser.add_argument("--dataset", type=Path, help="use this dataset instead of generating one")
    parser.add_argument("--out", type=Path, help="work folder (default: a temporary one)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_llm_"))
    dataset = args.dataset or out / "dataset"
    if args.dataset is None:
        generate_dataset(GenerateConfig(scenes=args.scenes, per_scene=args.per_scene), dataset)
    chat = _chat_server()
    rows: list[tuple[str, dict[str, Any], float, str]] = []
    for name in ("neurosymbolic", "condition_blind"):
        seconds = _run(name, name, dataset, args.split, out)
        rows.append((name, _score(dataset, out / name, args.split), seconds, _load()))
    cache = out / "cache"
    for kind, name in (("perfect", "llm perfect reader"), ("blind", "llm condition-blind reader")):
        plans = chat.reader_plans(dataset, args.split, kind)
        with chat.ChatServer(chat.Reader(plans)) as server:
            llm_args = {
                "base_url": server.url,
                "model": f"scripted-{kind}",
                "cache_dir": str(cache),
            }
            seconds = _run(kind, "llm", dataset, args.split, out, agent_args=llm_args)
        rows.append((name, _score(dataset, out / kind, args.split), seconds, _load()))
    dead = {"base_url": "http://127.0.0.1:9/v1", "model": "scripted-perfect",
            "cache_dir": str(cache), "cache": "readonly"}  # fmt: skip
    replay_seconds = _run("replay", "llm", dataset, args.split, out, agent_args=dead)
    same = all(
        (out / "perfect" / f).read_bytes() == (out / "replay" / f).read_bytes()
        for f in ("trajectories.jsonl", "predictions.json")
    )
    episodes = sum(1 for _ in (out / "perfect" / "trajectories.jsonl").open())
    where = args.dataset or f"a generated dataset of {args.scenes} scenes × {args.per_scene}"
    print(f"{episodes} episodes of split {args.split} of {where}")
    print("| agent | SR | SPL | BSA | CSR | BA | requests | fallbacks | seconds | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, s, seconds, load in rows:
        cells = [f"{s[k]:.3f}" if isinstance(s[k], float) else str(s[k]) for k in s]
        print(f"| {name} | {' | '.join(cells)} | {seconds:.1f} | {load} |")
    live = rows[2][2]
    print(
        f"replay of the perfect reader from the cache (cache=readonly, no server): "
        f"byte-identical={same}, {replay_seconds:.1f} s vs {live:.1f} s live "
        f"(ratio {replay_seconds / live:.2f}), {_load()}"
    )


if __name__ == "__main__":
    main()
