"""Building and checking data: ``condvln graph``, ``generate``, ``validate`` and ``oracle``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from condvln.cli.common import (
    ConfigOption,
    DatasetArgument,
    ExecutorOption,
    InputsOption,
    MultiProgress,
    OverridesArgument,
    OverwriteOption,
    PerSceneOption,
    QuietOption,
    RayAddressOption,
    ReferenceArgument,
    SeedOption,
    SourceOption,
    WorkersOption,
    console,
    executor_of,
    required,
    settings,
)

app = typer.Typer()


@app.command("graph")
def graph_command(
    reference: ReferenceArgument,
    source: SourceOption = "procedural",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the scene graph JSON here.")
    ] = None,
    predicate: Annotated[
        str | None,
        typer.Option("--predicate", "-p", help="Also list the edges of this predicate."),
    ] = None,
    limit: Annotated[int, typer.Option(help="Most edges to list with --predicate.")] = 50,
) -> None:
    """Build a scene's spatial scene graph, print a summary and optionally export it."""
    from condvln.graph import PREDICATES, Truth, build_scene_graph, save_graph, summarize
    from condvln.io import output_path
    from condvln.scene.sources import load

    if predicate is not None:
        PREDICATES.get(predicate)  # unknown names fail before any work, with a suggestion
    if out is not None:
        output_path(out, folder=False)
    graph = build_scene_graph(load(source, reference))
    summary = summarize(graph)
    table = Table(title=f"{summary['scene_id']} scene graph (config {summary['config_hash']})")
    table.add_column("predicate")
    table.add_column("TRUE edges", justify="right")
    table.add_column("UNDECIDED", justify="right")
    for name, count in summary["edges_per_predicate"].items():
        table.add_row(name, str(count), str(summary["undecided_per_predicate"].get(name, "")))
    console.print(table)
    console.print(
        f"{summary['nodes']} nodes ({summary['rooms']} rooms, {summary['objects']} objects), "
        f"{summary['ordered_pairs']} ordered pairs, {summary['edges']} edges, "
        f"{summary['undecided']} undecided facts"
    )
    if predicate is not None:
        for shown, edge in enumerate(graph.edges(predicate, truth=Truth.TRUE)):
            if shown == limit:
                console.print(f"… (first {limit} shown; raise --limit for more)")
                break
            console.print(edge.describe(), markup=False)
    if out is not None:
        save_graph(graph, out)
        console.print(f"wrote {out}")


@app.command("generate")
def generate_command(
    ctx: typer.Context,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Dataset folder to create (or `out:`).")
    ] = None,
    overrides: OverridesArgument = None,
    config_file: ConfigOption = None,
    source: SourceOption = "procedural",
    scenes: Annotated[
        int | None, typer.Option(help="Procedural houses (seeds 0..N-1) or most input files.")
    ] = 200,
    per_scene: PerSceneOption = 75,
    seed: SeedOption = 0,
    inputs: InputsOption = None,
    counterfactual_share: Annotated[
        float, typer.Option(help="Share of instructions given a minimal-pair sibling.")
    ] = 0.2,
    workers: WorkersOption = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing dataset folder.")] = False,
    executor: ExecutorOption = None,
    ray_address: RayAddressOption = None,
    quiet: QuietOption = False,
) -> None:
    """Generate a CondVLN dataset in VLN-CE format (defaults: the paper's scale)."""
    from condvln.config import library_part
    from condvln.dataset.generate import GenerateConfig, generate_dataset

    keys = ("source", "scenes", "per_scene", "seed", "inputs", "counterfactual_share", "out")
    keys += ("workers", "overwrite", "executor", "ray_address")
    s = settings(ctx, "generate", config_file, overrides, {k: k for k in keys})
    (out,) = required(s, "out")
    with MultiProgress(quiet) as bars:
        stats = generate_dataset(
            library_part(s, GenerateConfig),
            out,
            workers=executor_of(s.executor, s.workers, s.ray_address),
            overwrite=s.overwrite,
            progress=bars.add,
        )
    for row in stats.get("duplicate_inputs", []):
        console.print(f"skipped {row['skipped']}: same content as {row['same_as']}", markup=False)
    console.print(_counts_table(stats["requested_vs_produced"]))
    console.print(
        f"wrote {out}: {stats['episodes']} episodes over {stats['scenes']} scenes "
        f"({', '.join(f'{k} {v}' for k, v in stats['splits'].items())})"
    )
    for warning in stats["warnings"]:
        print(f"condvln: warning: {warning}", file=sys.stderr)


def _counts_table(versus: dict[str, Any]) -> Table:
    """Produced / requested episodes, Table 1 categories × splits (fits 80 columns)."""
    splits = list(versus["splits"])
    table = Table(
        title="Episodes produced / requested",
        box=box.SIMPLE_HEAD,
        caption=_COUNTS_CAPTION,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("category", no_wrap=True)
    for name in [*splits, "total"]:
        table.add_column(name, justify="right", no_wrap=True)

    def cell(row: dict[str, Any]) -> str:
        return f"{row['produced']}/{row['requested']}"

    for name, total in versus["total"]["categories"].items():
        table.add_row(
            name, *(cell(versus["splits"][s]["categories"][name]) for s in splits), cell(total)
        )
    table.add_row("all", *(cell(versus["splits"][s]) for s in splits), cell(versus["total"]))
    return table


_COUNTS_CAPTION = "requested: per_scene × scenes, spread over categories"


@app.command("validate")
def validate_command(
    dataset: DatasetArgument,
    show: Annotated[int, typer.Option(help="Problems to print.")] = 20,
    quiet: QuietOption = False,
) -> None:
    """Re-check a dataset from its files: schema, labels, goals, paths, tokens (exit 1 if bad)."""
    from condvln.dataset.validate import validate_dataset

    with MultiProgress(quiet) as bars:
        report = validate_dataset(dataset, progress=bars.add)
    counts = ", ".join(f"{s} {n}" for s, n in report.episodes.items())
    if report.ok:
        console.print(f"OK: {sum(report.episodes.values())} episodes checked ({counts})")
        return
    for problem in report.problems[:show]:
        console.print(problem, markup=False)
    console.print(f"{len(report.problems)} problems in {sum(report.episodes.values())} episodes")
    raise typer.Exit(1)


@app.command("oracle")
def oracle_command(
    dataset: Annotated[Path, typer.Argument(help="Source dataset folder.")],
    out: Annotated[Path, typer.Argument(help="Folder for the oracle-linear dataset.")],
    overwrite: OverwriteOption = False,
) -> None:
    """Write the oracle-linear version of a dataset (only the instructions change)."""
    from condvln.dataset.oracle import oracle_transform

    count = oracle_transform(dataset, out, overwrite=overwrite)
    console.print(f"wrote {out}: {count} instructions rewritten to their oracle-linear form")
