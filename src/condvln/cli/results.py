"""Results: ``condvln evaluate``, ``merge``, ``viz`` and ``report``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from condvln.cli.common import (
    SEED_MAX,
    ConfigOption,
    DatasetArgument,
    ExecutorOption,
    MultiProgress,
    OverridesArgument,
    OverwriteOption,
    QuietOption,
    RayAddressOption,
    ShardOption,
    console,
    executor_of,
    settings,
)

app = typer.Typer()


@app.command("evaluate")
def evaluate_command(
    dataset: DatasetArgument,
    predictions: Annotated[
        Path, typer.Argument(help="Trajectory JSONL or VLN-CE leaderboard JSON.")
    ],
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the results.")],
    overrides: OverridesArgument = None,
    config_file: ConfigOption = None,
    split: Annotated[
        str | None, typer.Option(help="Split to score (default: inferred from the ids).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Run name in the tables.")] = None,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Seed of the bootstrap intervals.")
    ] = 0,
    ndtw_threshold: Annotated[
        float,
        typer.Option(
            "--ndtw-threshold",
            help="d_th of nDTW / SDTW / CLS in metres (VLN-CE's NDTW measure: 3.0).",
        ),
    ] = 3.0,
    shard: ShardOption = None,
    workers: Annotated[
        int, typer.Option("--workers", "-j", help="Worker processes (scenes in parallel).")
    ] = 1,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
) -> None:
    """Score predictions: standard VLN metrics, BSA / CSR and branch diagnostics, with tables."""
    from condvln.evaluation.evaluate import evaluate_run, render_summary
    from condvln.parallel.shards import parse_shard

    s = settings(
        ctx,
        "evaluate",
        config_file,
        overrides,
        {
            "split": "split",
            "name": "name",
            "seed": "seed",
            "ndtw_threshold": "metrics.fidelity_threshold",
        },
    )
    result = evaluate_run(
        dataset,
        predictions,
        out,
        split=s.split,
        seed=s.seed,
        options=s.metrics,
        run_name=s.name,
        executor=executor_of(executor, workers, ray_address),
        shard=parse_shard(shard),
    )
    console.print(render_summary(result))


@app.command("merge")
def merge_command(
    shards: Annotated[
        list[Path], typer.Argument(help="Shard folders of `run --shard` or `evaluate --shard`.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the merged result.")],
    overwrite: OverwriteOption = False,
) -> None:
    """Merge shard folders (all runs or all evaluations): checked, re-aggregated, one folder."""
    from condvln.merge import merge_shards

    summary = merge_shards(shards, out, overwrite=overwrite)
    console.print(
        f"wrote {out}: {summary.kind} of {summary.episodes} episodes from {summary.shards} shards",
        markup=False,
    )


@app.command("viz")
def viz_command(
    run: Annotated[Path, typer.Argument(help="Run folder written by `condvln run`.")],
    episode: Annotated[int, typer.Option("--episode", "-e", help="Episode id.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output PNG file.")],
    dataset: Annotated[
        Path | None, typer.Option(help="Dataset folder (default: the run manifest's).")
    ] = None,
) -> None:
    """Draw one episode's map: trajectory, reference path, every branch goal, subgoals."""
    from condvln.report.viz import outcome_text, viz_episode

    written, figure, path = viz_episode(run, episode, out, dataset_dir=dataset)
    console.print(f"wrote {written}: {outcome_text(figure, path)}", markup=False)


@app.command("report")
def report_command(
    results: Annotated[
        Path, typer.Argument(help="Benchmark folder, or one `condvln evaluate` output folder.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output HTML file.")] = Path(
        "report.html"
    ),
    quiet: QuietOption = False,
) -> None:
    """Write one self-contained HTML report: coverage, tables, plots, episode maps."""
    from condvln.report.html import write_report

    with MultiProgress(quiet) as bars:
        summary = write_report(results, out, progress=bars.add)
    for warning in summary.warnings:
        console.print(f"warning: {warning}", style="yellow", markup=False)
    console.print(
        f"wrote {summary.path} ({summary.size / 1e6:.1f} MB): {summary.runs} runs, "
        f"{summary.rows} episode rows, {summary.maps} maps over {summary.scenes} scenes"
    )
