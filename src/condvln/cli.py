"""The ``condvln`` command. Thin: it parses options and calls library functions.

Errors from bad input (:class:`~condvln.errors.CondVLNError`) become one line on stderr and exit
code 2, never a traceback.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from condvln import __version__
from condvln.errors import CondVLNError

if TYPE_CHECKING:
    from condvln.evaluation.tables import ResultTable
    from condvln.synth.pipeline import SynthesisResult

app = typer.Typer(
    name="condvln",
    help="CondVLN: conditional branching in vision-language navigation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
scenes_app = typer.Typer(help="Load, inspect and export scenes.", no_args_is_help=True)
app.add_typer(scenes_app, name="scenes")

console = Console()

SourceOption = Annotated[
    str, typer.Option("--source", "-s", help="Scene source (see `condvln scenes sources`).")
]
ReferenceArgument = Annotated[
    str, typer.Argument(help="What to load: a file path, a seed or a scene name, per source.")
]


def _version(value: bool) -> None:
    if value:
        console.print(f"condvln {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """CondVLN: conditional branching in vision-language navigation."""


@scenes_app.command("sources")
def scenes_sources() -> None:
    """List the registered scene sources."""
    from condvln.scene.sources import SOURCES

    table = Table(title="Scene sources")
    table.add_column("source", style="bold")
    table.add_column("reference")
    table.add_column("description")
    for name in SOURCES.names():
        src = SOURCES.get(name)
        table.add_row(name, src.reference, src.description)
    console.print(table)


@scenes_app.command("show")
def scenes_show(
    reference: ReferenceArgument,
    source: SourceOption = "procedural",
) -> None:
    """Show a scene's rooms, object counts and categories."""
    from condvln.scene.sources import load

    scene = load(source, reference)
    table = Table(title=f"{scene.id} ({scene.source})")
    table.add_column("room")
    table.add_column("type")
    table.add_column("area m²", justify="right")
    table.add_column("objects", justify="right")
    table.add_column("categories")
    for room in scene.rooms:
        counts = Counter(o.category for o in room.objects)
        cats = ", ".join(f"{c}×{n}" if n > 1 else c for c, n in sorted(counts.items()))
        area = "—" if room.area is None else f"{room.area:.1f}"
        table.add_row(room.id, room.room_type, area, str(len(room.objects)), cats)
    console.print(table)
    n_objects = sum(len(r.objects) for r in scene.rooms)
    n_categories = len({o.category for o in scene.objects()})
    console.print(
        f"{len(scene.rooms)} rooms, {len(scene.doors)} doors, {n_objects} objects, "
        f"{n_categories} categories"
    )


@scenes_app.command("export")
def scenes_export(
    reference: ReferenceArgument,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output scene JSON file.")],
    source: SourceOption = "procedural",
) -> None:
    """Export a scene as CondVLN scene JSON (loadable again with ``--source condvln``)."""
    from condvln.scene.serialize import save_scene
    from condvln.scene.sources import load

    scene = load(source, reference)
    save_scene(scene, out)
    console.print(
        f"wrote {out} ({len(scene.rooms)} rooms, {sum(1 for _ in scene.objects())} objects)"
    )


@scenes_app.command("render")
def scenes_render(
    reference: ReferenceArgument,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output PNG file.")],
    source: SourceOption = "procedural",
    labels: Annotated[bool, typer.Option(help="Label objects with their ids.")] = True,
) -> None:
    """Draw a top-down map: rooms, walls, doors, obstacles, navigable area, objects."""
    from condvln.nav import GridNavigator
    from condvln.nav.render import render_map
    from condvln.scene.sources import load

    scene = load(source, reference)
    navigator = GridNavigator(scene)
    render_map(scene, out, navigator, show_labels=labels)
    islands = len(navigator.area.islands)
    console.print(f"wrote {out} (navigable area {navigator.area.area:.1f} m², {islands} islands)")


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
    from condvln.scene.sources import load

    if predicate is not None:
        PREDICATES.get(predicate)  # unknown names fail before any work, with a suggestion
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


SeedOption = Annotated[int, typer.Option(help="Master seed.")]
PerSceneOption = Annotated[int, typer.Option(help="Instructions sampled per scene.")]
InputsOption = Annotated[
    list[str] | None, typer.Option("--input", "-i", help="Scene files or folders.")
]
WorkersOption = Annotated[
    int | None, typer.Option("--workers", "-j", help="Worker processes (default: all cores).")
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]


@app.command("audit")
def audit_command(
    source: SourceOption = "procedural",
    scenes: Annotated[
        int, typer.Option(help="Procedural houses (seeds 0..N-1) or max files.")
    ] = 50,
    per_scene: PerSceneOption = 40,
    seed: SeedOption = 0,
    inputs: InputsOption = None,
    workers: WorkersOption = None,
    quiet: QuietOption = False,
    leakage: Annotated[
        Path | None,
        typer.Option(
            help="Audit this dataset folder for text-only shortcuts instead: blind probes "
            "trained on train, scored on --split (exit 1 beyond tolerance)."
        ),
    ] = None,
    split: Annotated[str, typer.Option(help="Split the leakage probes are scored on.")] = (
        "val_unseen"
    ),
) -> None:
    """Sample instructions and audit them: counts per bucket, branch balance, rejections."""
    from condvln.synth.pipeline import default_workers, run_synthesis, scene_specs

    if leakage is not None:
        _leakage_audit(leakage, split)
        return
    specs = scene_specs(source, scenes, inputs or ())
    with _MultiProgress(quiet) as bars:
        result = run_synthesis(
            specs,
            seed=seed,
            per_scene=per_scene,
            workers=workers or default_workers(),
            on_scene_done=bars.add("sampling scenes", len(specs)),
        )
    _print_audit(result)


def _leakage_audit(dataset: Path, split: str) -> None:
    from condvln.dataset.vlnce import load_split
    from condvln.errors import FormatError
    from condvln.io import read_json
    from condvln.synth.audit import BRANCH_PROBES, PRIOR_PROBES, leakage_audit, violations

    train = load_split(dataset, "train")["episodes"]
    try:
        report = leakage_audit(train, load_split(dataset, split)["episodes"])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise FormatError(
            f"episodes lack the CondVLN labels the audit needs ({type(exc).__name__}: {exc})",
            file=str(dataset),
            field="info.condvln",
        ) from None
    table = Table(title=f"Branch accuracy of blind probes on {split} (%; chance in brackets)")
    table.add_column("probe")
    cells = report["branch"]["constant_branch"]
    keys = [k for k, c in cells.items() if c["n"]]
    for key in keys:
        table.add_column(f"{key} (n={cells[key]['n']})", justify="right")
    for probe in (*BRANCH_PROBES, "constant_branch", "nearest_goal"):
        row = report["branch"][probe]
        table.add_row(probe, *(f"{row[k]['accuracy']:.1f} [{row[k]['chance']:.1f}]" for k in keys))
    console.print(table)
    kinds = sorted({k for p in PRIOR_PROBES for k in report["conditions"][p]})
    table = Table(title="Priors' accuracy at a condition's truth (%; 50 is chance)")
    table.add_column("prior")
    for kind in kinds:
        n = report["conditions"][PRIOR_PROBES[0]][kind]["n"]
        table.add_column(f"{kind} (n={n})", justify="right")
    for prior in PRIOR_PROBES:
        row = report["conditions"][prior]
        table.add_row(prior, *(f"{row[k]['accuracy']:.1f}" for k in kinds))
    console.print(table)
    stats = dataset / "stats.json"
    if stats.is_file():
        skewed = read_json(stats).get("branch_balance", {}).get("most_skewed", [])
        if skewed:
            console.print("most skewed condition groups (≥ 10 uses):")
        for item in skewed:
            console.print(
                f"  {item['group']}: {item['true']} true / {item['false']} false", markup=False
            )
    problems = violations(report)
    for problem in problems:
        console.print(f"LEAK {problem}", markup=False)
    if problems:
        raise typer.Exit(1)
    console.print(
        f"OK: no blind probe beats chance beyond tolerance ({report['episodes']} episodes)"
    )


def _print_audit(result: SynthesisResult) -> None:
    report = result.report
    table = Table(title="Gold-branch balance per bucket (category/composition/evidence/horizon)")
    table.add_column("bucket", min_width=34)
    for column in ("gold leaf counts", "χ²", "p", "max/min", "gold nearest"):
        table.add_column(column, justify="right")
    for key, row in report["buckets"].items():
        ratio = "—" if row["max_min_ratio"] is None else f"{row['max_min_ratio']:.2f}"
        table.add_row(
            key,
            " ".join(map(str, row["counts"])),
            f"{row['chi2']:.2f}",
            f"{row['p_value']:.2f}",
            ratio,
            f"{row['nearest_rate']:.2f}",
        )
    console.print(table)
    for leaf, row in report["constant_branch"].items():
        console.print(
            f"always branch {leaf}: accuracy {100 * row['accuracy']:.1f}% "
            f"(chance {100 * row['chance']:.1f}%, n={row['n']})"
        )
    console.print(
        f"gold goal is the nearest leaf goal in {100 * report['nearest_gold_rate']:.1f}% "
        f"(chance {100 * report['nearest_gold_chance']:.1f}%)"
    )
    if report.get("most_skewed"):
        console.print("most skewed condition groups (≥ 10 uses, gold-path truths):")
    for item in report.get("most_skewed", []):
        console.print(
            f"  {item['group']}: {item['true']} true / {item['false']} false", markup=False
        )
    for kind, row in report.get("truth_types", {}).items():
        console.print(
            f"{kind}: {100 * row['true_share']:.1f}% true of {row['true'] + row['false']}"
        )
    console.print(
        f"kept {len(result.instances)} of {result.raw_count} sampled; rejections by reason:"
    )
    for reason, count in result.rejections.most_common():
        console.print(f"  {reason}: {count}")


@app.command("generate")
def generate_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Dataset folder to create.")],
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
    quiet: QuietOption = False,
) -> None:
    """Generate a CondVLN dataset in VLN-CE format (defaults: the paper's scale)."""
    from condvln.dataset.generate import GenerateConfig, generate_dataset
    from condvln.synth.pipeline import default_workers

    config = GenerateConfig(
        source=source,
        scenes=scenes,
        inputs=tuple(inputs or ()),
        per_scene=per_scene,
        seed=seed,
        counterfactual_share=counterfactual_share,
    )
    with _MultiProgress(quiet) as bars:
        stats = generate_dataset(
            config,
            out,
            workers=workers or default_workers(),
            overwrite=overwrite,
            progress=bars.add,
        )
    console.print(
        f"wrote {out}: {stats['episodes']} episodes over {stats['scenes']} scenes "
        f"({', '.join(f'{k} {v}' for k, v in stats['splits'].items())})"
    )


class _MultiProgress:
    """Progress bars for several phases of one command (silent with ``--quiet``)."""

    def __init__(self, quiet: bool) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self.progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            disable=quiet,
        )

    def __enter__(self) -> _MultiProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)

    def add(self, label: str, total: int) -> Callable[[], None]:
        """Add a bar and return its ``advance()`` callback."""
        task = self.progress.add_task(label, total=total)
        return lambda: self.progress.advance(task)


@app.command("validate")
def validate_command(
    dataset: Annotated[Path, typer.Argument(help="Dataset folder written by `condvln generate`.")],
    show: Annotated[int, typer.Option(help="Problems to print.")] = 20,
    quiet: QuietOption = False,
) -> None:
    """Re-check a dataset from its files: schema, labels, goals, paths, tokens (exit 1 if bad)."""
    from condvln.dataset.validate import validate_dataset

    with _MultiProgress(quiet) as bars:
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
    overwrite: Annotated[bool, typer.Option(help="Replace an existing folder.")] = False,
) -> None:
    """Write the oracle-linear version of a dataset (only the instructions change)."""
    from condvln.dataset.oracle import oracle_transform

    count = oracle_transform(dataset, out, overwrite=overwrite)
    console.print(f"wrote {out}: {count} instructions rewritten to their oracle-linear form")


@app.command("evaluate")
def evaluate_command(
    dataset: Annotated[Path, typer.Argument(help="Dataset folder written by `condvln generate`.")],
    predictions: Annotated[
        Path, typer.Argument(help="Trajectory JSONL or VLN-CE leaderboard JSON.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the results.")],
    split: Annotated[
        str | None, typer.Option(help="Split to score (default: inferred from the ids).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Run name in the tables.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap intervals.")] = 0,
) -> None:
    """Score predictions: standard VLN metrics, BSA / CSR and branch diagnostics, with tables."""
    from condvln.evaluation.evaluate import evaluate_run, render_summary

    result = evaluate_run(dataset, predictions, out, split=split, seed=seed, run_name=name)
    console.print(render_summary(result))
    console.print(f"wrote {out}")


@app.command("run")
def run_command(
    agent: Annotated[str, typer.Option(help="Agent name (see `condvln agents`) or module:Class.")],
    dataset: Annotated[Path, typer.Option(help="Dataset folder written by `condvln generate`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder (resumed if present).")],
    split: Annotated[str, typer.Option(help="Split to run.")] = "val_unseen",
    limit: Annotated[int | None, typer.Option(help="Run only the first N episodes.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of agents and perception noise.")] = 0,
    panoramic: Annotated[bool, typer.Option(help="360° detections instead of a 90° view.")] = False,
    miss_rate: Annotated[float, typer.Option(help="Perception noise: missed detections.")] = 0.0,
    confusion_rate: Annotated[float, typer.Option(help="Perception noise: label swaps.")] = 0.0,
    false_detection_rate: Annotated[
        float, typer.Option(help="Perception noise: spurious detections per step.")
    ] = 0.0,
    map_access: Annotated[bool, typer.Option(help="Give the agent the navigable map.")] = True,
    workers: WorkersOption = None,
    quiet: QuietOption = False,
) -> None:
    """Run an agent in the built-in simulator; writes trajectories and VLN-CE predictions."""
    from condvln.agents.run import run_agent
    from condvln.synth.pipeline import default_workers

    protocol = {
        "panoramic": panoramic,
        "miss_rate": miss_rate,
        "confusion_rate": confusion_rate,
        "false_detection_rate": false_detection_rate,
        "map_access": map_access,
    }
    with _MultiProgress(quiet) as bars:
        summary = run_agent(
            agent,
            dataset,
            split,
            out,
            protocol=protocol,
            seed=seed,
            workers=workers or default_workers(),
            limit=limit,
            progress=_done_total(bars, f"{agent} on {split}"),
        )
    console.print(
        f"wrote {out}: {summary.ran} episodes run, {summary.skipped} resumed, "
        f"{summary.stopped} stopped, {summary.steps} steps in {summary.seconds:.1f} s"
    )


def _done_total(bars: _MultiProgress, label: str) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback drawing one bar."""
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "task" not in state:
            state["task"] = bars.progress.add_task(label, total=total)
        bars.progress.update(state["task"], completed=done)

    return update


@app.command("agents")
def agents_command() -> None:
    """List the registered agents."""
    from condvln.agents.base import AGENTS

    for name in AGENTS.names():
        console.print(name)


@app.command("benchmark")
def benchmark_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Results folder.")] = Path(
        "results/benchmark"
    ),
    full: Annotated[bool, typer.Option(help="Paper-scale dataset (≥ 11,500 episodes).")] = False,
    scenes: Annotated[
        int | None, typer.Option(help="Procedural houses (default 80; 200 with --full).")
    ] = None,
    per_scene: Annotated[
        int | None,
        typer.Option(help="Instructions sampled per house (default 50; 75 with --full)."),
    ] = None,
    split: Annotated[str, typer.Option(help="Split the agents are scored on.")] = "val_unseen",
    workers: WorkersOption = None,
    quiet: QuietOption = False,
) -> None:
    """The main job: generate (or reuse) data, run every baseline, evaluate, print the tables."""
    from condvln.benchmark import SMALL, run_benchmark
    from condvln.dataset.generate import GenerateConfig
    from condvln.synth.pipeline import default_workers

    base = GenerateConfig() if full else SMALL
    overrides = {k: v for k, v in (("scenes", scenes), ("per_scene", per_scene)) if v is not None}
    config = base.model_copy(update=overrides)
    with _MultiProgress(quiet) as bars:
        outcome = run_benchmark(
            out,
            config=config,
            split=split,
            workers=workers or default_workers(),
            progress=bars.add,
        )
    console.print(_compact(outcome["tables"]["table2"], _TABLE2_COLUMNS, "Main results (%)"))
    console.print(
        "BA: branch accuracy (ended nearest the gold branch goal); "
        "1/n: chance; any: stopped at some branch goal; WB: stopped at a wrong branch's goal"
    )
    console.print(
        _compact(outcome["tables"]["table3"], _TABLE3_COLUMNS, "CSR by depth d and chain ℓ (%)")
    )
    console.print(
        f"wrote {out}: full tables in table2.md / table3.md (+ .csv), per-run results in eval/"
    )


_TABLE2_COLUMNS = {
    "SR": "SR",
    "SPL": "SPL",
    "BSA": "BSA",
    "CSR": "CSR",
    "diagnostics BA": "BA",
    "diagnostics chance": "1/n",
    "diagnostics SR-any": "any",
    "diagnostics WB": "WB",
}
_TABLE3_COLUMNS = {
    "base d=1,ℓ=1 CSR": "d1 ℓ1",
    "depth d=2,ℓ=1 CSR": "d2 ℓ1",
    "depth d=3,ℓ=1 CSR": "d3 ℓ1",
    "chain d=1,ℓ=2 CSR": "d1 ℓ2",
    "chain d=1,ℓ=3 CSR": "d1 ℓ3",
}


def _compact(table: ResultTable, wanted: dict[str, str], title: str) -> Table:
    """A narrow rich table of selected columns (the "all" group when there are several sources).

    Keys of ``wanted`` are full column names, or bare metric names looked up in the first
    source group ("all" when present).
    """
    first = next((g for g, _ in table.groups if g == "all"), table.groups[0][0])
    names = [k if k in table.columns else f"{first} {k}" for k in wanted]
    out = Table(title=title)
    out.add_column("run", no_wrap=True)
    for label in wanted.values():
        out.add_column(label, justify="right")
    for row in table.rows:
        values = dict(zip(table.columns, row.values, strict=True))
        out.add_row(
            row.name, *("–" if values.get(n) is None else f"{values[n]:.1f}" for n in names)
        )
    return out


def main() -> None:
    """Run the command line; user errors print one line and exit with code 2."""
    try:
        app()
    except CondVLNError as exc:
        print(f"condvln: error: {exc}", file=sys.stderr)
        sys.exit(2)
