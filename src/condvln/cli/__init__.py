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
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from condvln import __version__
from condvln.errors import CondVLNError

if TYPE_CHECKING:
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
        table.add_row(name, escape(src.reference), escape(src.description))
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
    from condvln.io import output_path
    from condvln.scene.serialize import save_scene
    from condvln.scene.sources import load

    output_path(out, folder=False)  # awkward --out paths fail before any work
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
    from condvln.io import output_path
    from condvln.nav import GridNavigator
    from condvln.nav.render import render_map
    from condvln.scene.sources import load

    output_path(out, folder=False)
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


SEED_MAX = 2**63 - 1
SeedOption = Annotated[int, typer.Option(min=0, max=SEED_MAX, help="Master seed.")]
PerSceneOption = Annotated[int, typer.Option(help="Instructions sampled per scene.")]
InputsOption = Annotated[
    list[str] | None, typer.Option("--input", "-i", help="Scene files or folders.")
]
WorkersOption = Annotated[
    int | None,
    typer.Option("--workers", "-j", min=1, max=1024, help="Worker processes (default: all cores)."),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
ExecutorOption = Annotated[
    str, typer.Option(help="Where the work runs: local (processes) or ray (condvln[ray]).")
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Ray cluster to join: auto or HOST:PORT (default: start a private local one).",
    ),
]
AgentResourcesOption = Annotated[
    str | None,
    typer.Option(
        "--agent-resources",
        help="Ray options of each agent actor as JSON, e.g. '{\"num_gpus\": 1}'.",
    ),
]
ShardOption = Annotated[
    str | None,
    typer.Option(help="Only shard i/N (0-based) of the split; join shards with `condvln merge`."),
]


def _executor(
    kind: str, workers: int | None, address: str | None, resources: str | None = None
) -> Any:
    """The :class:`~condvln.parallel.Executor` of the command-line options."""
    from condvln.parallel.executors import Executor, parse_resources
    from condvln.synth.pipeline import default_workers

    return Executor(kind, workers or default_workers(), address, parse_resources(resources))  # type: ignore[arg-type]


ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config", "-c", help="YAML or JSON settings file (keys: `condvln config COMMAND`)."
    ),
]
OverridesArgument = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="KEY=VALUE",
        help="Dotted overrides, e.g. relations.near_holds=0.4 (win over --config and options).",
        show_default=False,
    ),
]


def _settings(
    ctx: typer.Context,
    command: str,
    config_file: Path | None,
    overrides: list[str] | None,
    options: dict[str, str],
    base: dict[str, Any] | None = None,
) -> Any:
    """A command's effective settings; ``options`` maps parameter names to dotted keys, and
    only the options given on the command line count (their defaults are the model's)."""
    from condvln.config import SETTINGS, resolve

    def explicit(name: str) -> bool:  # typer may vendor click: compare the enum by name
        source = ctx.get_parameter_source(name)
        return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")

    given = {key: ctx.params[name] for name, key in options.items() if explicit(name)}
    return resolve(
        SETTINGS[command],
        config_file=config_file,
        overrides=overrides or (),
        options=given,
        base=base,
    )


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
    table = Table(
        title="Gold-branch balance per bucket",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("bucket", no_wrap=True)
    for column in ("gold per leaf", "χ²", "p", "ratio", "near"):
        table.add_column(column, justify="right", no_wrap=True)
    short = {"cross_room": "room", "relation": "rel", "hidden": "hid", "visible": "vis"}
    for key, row in report["buckets"].items():
        key = "/".join(short.get(part, part) for part in key.split("/"))
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
    console.print(
        "bucket: category/composition (room: cross-room presence, rel: relation)/evidence "
        "(hid: hidden, vis: visible)/horizon; ratio: max/min of the gold counts; near: share "
        "of gold goals that are the nearest branch goal"
    )
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
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Dataset folder to create.")],
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
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    quiet: QuietOption = False,
) -> None:
    """Generate a CondVLN dataset in VLN-CE format (defaults: the paper's scale)."""
    from condvln.dataset.generate import generate_dataset

    keys = ("source", "scenes", "per_scene", "seed", "inputs", "counterfactual_share")
    config = _settings(ctx, "generate", config_file, overrides, {k: k for k in keys})
    with _MultiProgress(quiet) as bars:
        stats = generate_dataset(
            config,
            out,
            workers=_executor(executor, workers, ray_address),
            overwrite=overwrite,
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

    s = _settings(
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
        executor=_executor(executor, workers, ray_address),
        shard=parse_shard(shard),
    )
    console.print(render_summary(result))


AgentArgOption = Annotated[
    list[str] | None,
    typer.Option(
        "--agent-arg",
        help="Agent constructor argument KEY=VALUE, VALUE parsed as JSON (repeatable).",
    ),
]


@app.command("run")
def run_command(
    agent: Annotated[
        str,
        typer.Option(
            help="Agent: a name (see `condvln agents`), package.module:Class, "
            "path/to/file.py:Class or http://HOST:PORT (an agent server)."
        ),
    ],
    dataset: Annotated[Path, typer.Option(help="Dataset folder written by `condvln generate`.")],
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder (resumed if present).")],
    overrides: OverridesArgument = None,
    config_file: ConfigOption = None,
    split: Annotated[str, typer.Option(help="Split to run.")] = "val_unseen",
    limit: Annotated[int | None, typer.Option(min=0, help="Run only the first N episodes.")] = None,
    seed: Annotated[
        int, typer.Option(min=0, max=SEED_MAX, help="Seed of agents and perception noise.")
    ] = 0,
    panoramic: Annotated[bool, typer.Option(help="360° detections instead of a 90° view.")] = False,
    miss_rate: Annotated[float, typer.Option(help="Perception noise: missed detections.")] = 0.0,
    confusion_rate: Annotated[float, typer.Option(help="Perception noise: label swaps.")] = 0.0,
    false_detection_rate: Annotated[
        float, typer.Option(help="Perception noise: spurious detections per step.")
    ] = 0.0,
    map_access: Annotated[bool, typer.Option(help="Give the agent the navigable map.")] = True,
    sensor: Annotated[
        list[str] | None,
        typer.Option(help="Pixel sensor rendered every step: rgb, depth, semantic (repeatable)."),
    ] = None,
    detections: Annotated[
        bool, typer.Option(help="Give the symbolic detections (off: perceive from pixels only).")
    ] = True,
    record: Annotated[
        int, typer.Option(help="Write a video of each of the first N episodes into OUT/videos.")
    ] = 0,
    record_format: Annotated[str, typer.Option(help="Video format: mp4 or gif.")] = "mp4",
    agent_arg: AgentArgOption = None,
    batch_size: Annotated[
        int, typer.Option(help="Episodes per worker stepped in lockstep (agents with act_batch).")
    ] = 1,
    step_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds an agent call may take; slower steps end the episode."),
    ] = None,
    fail_fast: Annotated[
        bool, typer.Option(help="Stop at the first episode the agent fails.")
    ] = False,
    workers: WorkersOption = None,
    shard: ShardOption = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    agent_resources: AgentResourcesOption = None,
    quiet: QuietOption = False,
) -> None:
    """Run an agent in the built-in simulator; writes trajectories and VLN-CE predictions.

    An exception in the agent, an invalid action or a step slower than --step-timeout ends
    that episode (status agent_error / invalid_action / timeout, with a reason); the run goes
    on and running the command again retries those episodes.
    """
    from condvln.agents.base import parse_agent_args
    from condvln.agents.run import run_agent
    from condvln.parallel.shards import parse_shard

    protocol_keys = ("panoramic", "miss_rate", "confusion_rate", "false_detection_rate")
    keys = {"split": "split", "limit": "limit", "seed": "seed", "map_access": "protocol.map_access"}
    keys |= {k: f"protocol.{k}" for k in protocol_keys}
    keys |= {"sensor": "protocol.sensors", "detections": "protocol.detections"}
    s = _settings(ctx, "run", config_file, overrides, keys)
    with _MultiProgress(quiet) as bars:
        summary = run_agent(
            agent,
            dataset,
            s.split,
            out,
            agent_args=parse_agent_args(agent_arg or ()),
            protocol=s.protocol,
            seed=s.seed,
            executor=_executor(executor, workers, ray_address, agent_resources),
            shard=parse_shard(shard),
            batch_size=batch_size,
            step_timeout=step_timeout,
            fail_fast=fail_fast,
            limit=s.limit,
            progress=_done_total(bars, f"{agent} on {s.split}"),
            videos=record,
            video_format=record_format,
        )
    console.print(
        f"wrote {out}: {summary.ran} episodes run, {summary.skipped} resumed, "
        f"{summary.stopped} stopped, {summary.steps} steps in {summary.seconds:.1f} s",
        markup=False,
    )
    if summary.failures:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.failures.items()))
        console.print(
            f"agent failures: {counts}; first: {summary.first_failure} "
            "(all reasons in trajectories.jsonl; run again to retry them)",
            markup=False,
        )


def _done_total(bars: _MultiProgress, label: str) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback drawing one bar."""
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "task" not in state:
            state["task"] = bars.progress.add_task(label, total=total)
        bars.progress.update(state["task"], completed=done)

    return update


@app.command("merge")
def merge_command(
    shards: Annotated[
        list[Path], typer.Argument(help="Shard folders of `run --shard` or `evaluate --shard`.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the merged result.")],
    overwrite: Annotated[bool, typer.Option(help="Replace an existing folder.")] = False,
) -> None:
    """Merge shard folders (all runs or all evaluations): checked, re-aggregated, one folder."""
    from condvln.parallel.merge import merge_shards

    summary = merge_shards(shards, out, overwrite=overwrite)
    console.print(
        f"wrote {out}: {summary.kind} of {summary.episodes} episodes from {summary.shards} shards",
        markup=False,
    )


@app.command("check-agent")
def check_agent_command(
    agent: Annotated[
        str,
        typer.Argument(help="Agent spec: name, module:Class, file.py:Class or http://HOST:PORT."),
    ],
    dataset: Annotated[
        Path | None, typer.Option(help="Dataset folder (default: a small generated one).")
    ] = None,
    split: Annotated[str, typer.Option(help="Split whose first episodes are used.")] = "train",
    episodes: Annotated[int, typer.Option(help="Episodes per check run.")] = 3,
    agent_arg: AgentArgOption = None,
    step_timeout: Annotated[float, typer.Option(help="Seconds an agent call may take.")] = 30.0,
) -> None:
    """Check an agent: interface, valid actions, determinism, no label access (exit 1 on FAIL)."""
    from condvln.agents.base import parse_agent_args
    from condvln.agents.check import check_agent

    checks = check_agent(
        agent,
        dataset=dataset,
        split=split,
        episodes=episodes,
        agent_args=parse_agent_args(agent_arg or ()),
        step_timeout=step_timeout,
    )
    table = Table(title=f"check-agent {agent}")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail")
    styles = {"ok": "green", "warn": "yellow", "FAIL": "bold red", "skip": "dim"}
    for check in checks:
        table.add_row(check.name, f"[{styles[check.level]}]{check.level}[/]", escape(check.detail))
    console.print(table)
    failed = [c.name for c in checks if c.level == "FAIL"]
    if failed:
        console.print(f"FAILED: {', '.join(failed)}", markup=False)
        raise typer.Exit(1)
    console.print("all checks passed", markup=False)


@app.command("agents")
def agents_command() -> None:
    """List the registered agents."""
    from condvln.agents.base import AGENTS

    for name in AGENTS.names():
        console.print(name)


@app.command("config")
def config_command(
    command: Annotated[str, typer.Argument(help="generate, run, evaluate or benchmark.")],
    overrides: OverridesArgument = None,
    config_file: ConfigOption = None,
) -> None:
    """Print a command's settings as YAML: the defaults, or the effective ones for a
    --config file and overrides (a starting point for your own file)."""
    from condvln.config import SETTINGS, defaults_yaml, resolve
    from condvln.registry import Registry

    commands: Registry[type] = Registry("configurable command")
    for name, model in SETTINGS.items():
        commands.add(name, model)
    model = commands.get(command)
    settings = resolve(model, config_file=config_file, overrides=overrides or ())
    print(defaults_yaml(model, settings), end="")


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

    with _MultiProgress(quiet) as bars:
        summary = write_report(results, out, progress=bars.add)
    for warning in summary.warnings:
        console.print(f"warning: {warning}", style="yellow", markup=False)
    console.print(
        f"wrote {summary.path} ({summary.size / 1e6:.1f} MB): {summary.runs} runs, "
        f"{summary.rows} episode rows, {summary.maps} maps over {summary.scenes} scenes"
    )


@app.command("benchmark")
def benchmark_command(
    ctx: typer.Context,
    overrides: OverridesArgument = None,
    config_file: ConfigOption = None,
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
    ithor: Annotated[
        bool,
        typer.Option(help="Add the AI2-THOR group: the 120 iTHOR rooms (0.5 m success radius)."),
    ] = True,
    ithor_rooms: Annotated[
        int | None,
        typer.Option(min=1, max=120, help="Use the first N iTHOR rooms (types in turn)."),
    ] = None,
    pixels: Annotated[
        bool,
        typer.Option(help="Add the pixel-perception rows (always on with --full; slow)."),
    ] = False,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            help="Also run this agent (module:Class, file.py:Class or http://HOST:PORT; "
            "repeatable).",
        ),
    ] = None,
    agent_arg: AgentArgOption = None,
    workers: WorkersOption = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    agent_resources: AgentResourcesOption = None,
    quiet: QuietOption = False,
) -> None:
    """The main job: generate (or reuse) data, run every baseline, evaluate, print the tables."""
    from condvln.agents.base import parse_agent_args
    from condvln.benchmark import (
        ITHOR_FULL,
        PIXEL_RUNS,
        benchmark_runs,
        run_benchmark,
        user_runs,
    )
    from condvln.dataset.generate import GenerateConfig

    keys = {
        "scenes": "dataset.scenes",
        "per_scene": "dataset.per_scene",
        "split": "split",
        "ithor_rooms": "ithor.scenes",
    }
    base = {"dataset": GenerateConfig(), "ithor": ITHOR_FULL} if full else None
    s = _settings(ctx, "benchmark", config_file, overrides, keys, base=base)
    with _MultiProgress(quiet) as bars:
        outcome = run_benchmark(
            out,
            config=s.dataset,
            ithor=s.ithor if ithor else None,
            split=s.split,
            workers=_executor(executor, workers, ray_address, agent_resources),
            runs=benchmark_runs(s.noise.model_dump())
            + (PIXEL_RUNS if full or pixels else ())
            + user_runs(agent or (), parse_agent_args(agent_arg or ())),
            protocol=s.protocol.model_dump(),
            options=s.metrics,
            progress=bars.add,
        )
    from condvln.evaluation.tables import coverage_terminal, terminal_tables

    for part in terminal_tables(outcome["tables"]["table2"], outcome["tables"]["table3"]):
        console.print(part)
    console.print(coverage_terminal(outcome["tables"]["coverage"]))
    console.print(f"wrote {out}: per-run results in runs/ and eval/, report.html")


habitat_app = typer.Typer(
    help="Run CondVLN episodes in habitat-sim / VLN-CE / habitat-lab.", no_args_is_help=True
)
app.add_typer(habitat_app, name="habitat")


@habitat_app.command("config")
def habitat_config_command(
    dataset: Annotated[Path, typer.Argument(help="Dataset folder written by `condvln generate`.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the two YAML files.")],
    split: Annotated[str, typer.Option(help="Split the configs select.")] = "val_unseen",
    scenes_dir: Annotated[
        Path | None,
        typer.Option(
            help="SCENES_DIR (default: the dataset folder for composed scenes, else "
            "data/scene_datasets)."
        ),
    ] = None,
    success_distance: Annotated[
        float | None, typer.Option(help="Override the episodes' success radius (m).")
    ] = None,
) -> None:
    """Write a VLN-CE task config (YACS) and a habitat-lab Hydra config for DATASET."""
    from condvln.habitat.configs import write_configs

    vlnce, hydra, missing = write_configs(
        dataset, out, scenes_dir=scenes_dir, split=split, success_distance=success_distance
    )
    console.print(f"wrote {vlnce} (VLN-CE) and {hydra} (habitat-lab)", markup=False)
    if missing:
        console.print(
            f"note: {len(missing)} scene files are not under SCENES_DIR yet (first: {missing[0]})",
            markup=False,
        )


@habitat_app.command("navmesh")
def habitat_navmesh_command(
    dataset: Annotated[Path, typer.Argument(help="Dataset folder written by `condvln generate`.")],
    scenes_dir: Annotated[
        Path | None,
        typer.Option(help="Folder of the Matterport3D / Gibson / ReplicaCAD assets."),
    ] = None,
    quiet: QuietOption = False,
) -> None:
    """Bake .navmesh files with habitat-sim and compare its geodesic distances with ours."""
    from condvln.habitat.navmesh import MISSING, REPORT_FILE, bake_navmeshes
    from condvln.nav.habitat import import_habitat_sim

    import_habitat_sim(MISSING)  # before any progress output
    with _MultiProgress(quiet) as bars:
        report = bake_navmeshes(dataset, scenes_dir=scenes_dir, progress=bars.add)
    summary = report.summary()
    console.print(
        f"{len(report.navmeshes)} navmeshes; {summary['episodes_measured']} episodes "
        f"re-measured (mean |Δ| {summary.get('mean_abs_difference', 0.0):.3f} m, max "
        f"{summary.get('max_abs_difference', 0.0):.3f} m), {summary['episodes_unreachable']} "
        f"unreachable; details in {Path(dataset) / REPORT_FILE}",
        markup=False,
    )


def main() -> None:
    """Run the command line; user errors print one line and exit with code 2.

    Resource errors (out of memory, nesting too deep, an OS error on an output path) are also
    one line with code 2; anything else is a bug: one line, exit code 1, and the traceback only
    with ``CONDVLN_DEBUG=1``.
    """
    import os

    import pydantic

    from condvln.options import config_error

    try:
        app()
    except CondVLNError as exc:
        _fail(str(exc), 2)
    except pydantic.ValidationError as exc:
        _fail(str(config_error(exc)), 2)
    except MemoryError:
        _fail("out of memory (input too large for this machine)", 2)
    except RecursionError:
        _fail("input nested too deeply", 2)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}", 2)
    except Exception as exc:  # a bug: say so in one line unless debugging
        if os.environ.get("CONDVLN_DEBUG"):
            raise
        _fail(f"internal error ({type(exc).__name__}: {exc}); rerun with CONDVLN_DEBUG=1", 1)


def _fail(message: str, code: int) -> None:
    print(f"condvln: error: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(code)
