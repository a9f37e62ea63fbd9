"""Results: ``condvln evaluate``, ``metrics``, ``merge``, ``viz`` and ``report``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from condvln.cli.common import (
    SEED_MAX,
    AllowFailuresOption,
    ConfigOption,
    ExecutorOption,
    MultiProgress,
    OverridesArgument,
    OverwriteOption,
    QuietOption,
    RayAddressOption,
    ShardOption,
    console,
    executor_of,
    exit_on_failures,
    positional_overrides,
    required,
    settings,
)

app = typer.Typer()


EVALUATE_KEYS = {
    "out": "out",
    "split": "split",
    "name": "name",
    "seed": "seed",
    "ndtw_threshold": "metrics.fidelity_threshold",
    "shard": "shard",
    "workers": "workers",
    "executor": "executor",
    "ray_address": "ray_address",
    "allow_failures": "allow_failures",
}
"""``condvln evaluate`` options → keys of :class:`~condvln.config.EvaluateSettings` (the two
paths are ``dataset`` and ``predictions``)."""


@app.command("evaluate", epilog="Exit code 3 when an episode failed, unless --allow-failures.")
def evaluate_command(  # long: one line per command-line option
    ctx: typer.Context,
    dataset: Annotated[
        Path | None,
        typer.Argument(help="Dataset folder written by `condvln generate` (or `dataset:`)."),
    ] = None,
    predictions: Annotated[
        Path | None,
        typer.Argument(
            help="A `condvln run` folder, trajectory JSONL or VLN-CE leaderboard JSON "
            "(or `predictions:`)."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Folder for the results (or `out:`).")
    ] = None,
    overrides: OverridesArgument = None,
    config_file: ConfigOption = None,
    split: Annotated[
        str | None,
        typer.Option(help="Split to score (default: the run's, else inferred from the ids)."),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="Run name in the tables (default: the run's agent).")
    ] = None,
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
        int | None, typer.Option("--workers", "-j", help="Worker processes (scenes in parallel).")
    ] = None,
    executor: ExecutorOption = None,
    ray_address: RayAddressOption = None,
    allow_failures: AllowFailuresOption = False,
) -> None:
    """Score predictions: standard VLN metrics, BSA / CSR and branch diagnostics, with tables.

    PREDICTIONS may be a `condvln run` folder: its split and agent name are then the defaults.
    Exits 3 when the run's agent failed episodes (agent_error / invalid_action / timeout),
    unless --allow-failures.
    """
    from condvln.evaluation.evaluate import evaluate_run, render_summary
    from condvln.parallel.shards import parse_shard

    paths, overrides = positional_overrides([dataset, predictions], overrides)
    given = {key: path for key, path in zip(("dataset", "predictions"), paths, strict=False)}
    s = settings(ctx, "evaluate", config_file, overrides, EVALUATE_KEYS, given=given)
    dataset_dir, predictions_path, out_dir = required(s, "dataset", "predictions", "out")
    result = evaluate_run(
        dataset_dir,
        predictions_path,
        out_dir,
        split=s.split,
        seed=s.seed,
        options=s.metrics,
        run_name=s.name,
        executor=executor_of(s.executor, s.workers or 1, s.ray_address),
        shard=parse_shard(s.shard),
    )
    console.print(render_summary(result))
    counts = result["metrics"]["counts"]
    # failures are among the episodes the run predicted (a --limit run predicts a few)
    exit_on_failures(counts["agent_failures"], s.allow_failures, counts["scored"])


@app.command("metrics")
def metrics_command() -> None:
    """List the metrics (entry points of condvln.metrics), how they aggregate and their packages."""
    from condvln.errors import ConfigError
    from condvln.evaluation.specs import METRICS

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("metric", "package", "aggregation", "better"):
        table.add_column(column, no_wrap=True)
    table.add_column("description", overflow="fold")
    for name in METRICS.names():
        origin = METRICS.origin(name)
        package = "—" if origin is None else str(origin)
        try:
            spec = METRICS.get(name)
        except ConfigError as exc:  # a broken plugin is listed, not fatal
            table.add_row(name, package, "", "", escape(f"cannot load: {exc}"))
            continue
        kind = spec.kind if spec.weight_key is None else f"{spec.kind}, weight {spec.weight_key}"
        better = {True: "higher", False: "lower", None: "—"}[spec.higher_is_better]
        table.add_row(name, package, kind, better, escape(spec.description))
    console.print(table)


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
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Image file: .png, .pdf or .svg (by its suffix)."),
    ],
    dataset: Annotated[
        Path | None, typer.Option(help="Dataset folder (default: the run manifest's).")
    ] = None,
    dpi: Annotated[int, typer.Option(min=20, max=1200, help="Pixels per inch.")] = 100,
    size: Annotated[
        str | None,
        typer.Option(help="Image size WIDTHxHEIGHT in inches, e.g. 8x6 (default: the map's)."),
    ] = None,
    crop: Annotated[
        str, typer.Option(help="scene (the whole map) or room (the rooms the episode touches).")
    ] = "scene",
    labels: Annotated[
        bool, typer.Option(help="Room and object names on the map (goal labels always show).")
    ] = True,
) -> None:
    """Draw one episode's map: trajectory, reference path, every branch goal, subgoals.

    The format is the suffix's (PNG, PDF, SVG); labels never overlap (crowded object names are
    left out, labels away from their point get a leader line).
    """
    from condvln.report.viz import FigureOptions, outcome_text, parse_size, viz_episode

    options = FigureOptions(dpi, parse_size(size) if size else None, crop, labels)
    written, figure, path = viz_episode(run, episode, out, dataset_dir=dataset, options=options)
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
