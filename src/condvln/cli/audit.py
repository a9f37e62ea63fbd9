"""``condvln audit``: sample instructions and audit their balance, or audit a dataset for
text-only shortcuts (``--leakage``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from condvln.cli.common import (
    InputsOption,
    MultiProgress,
    PerSceneOption,
    QuietOption,
    SeedOption,
    SourceOption,
    WorkersOption,
    console,
)

if TYPE_CHECKING:
    from condvln.synth.pipeline import SynthesisResult

app = typer.Typer()


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
    split: Annotated[
        str,
        typer.Option(
            help="Split(s) the leakage probes are scored on, comma-separated (e.g. "
            "val_unseen,test; test is read with its answers file)."
        ),
    ] = "val_unseen",
    out: Annotated[
        Path | None, typer.Option(help="Also write the leakage report here (JSON).")
    ] = None,
) -> None:
    """Sample instructions and audit them: counts per bucket, branch balance, rejections."""
    from condvln.parallel.executors import default_workers
    from condvln.synth.pipeline import run_synthesis, scene_specs

    if leakage is not None:
        _leakage_audit(leakage, split, out)
        return
    specs = scene_specs(source, scenes, inputs or ())
    with MultiProgress(quiet) as bars:
        result = run_synthesis(
            specs,
            seed=seed,
            per_scene=per_scene,
            workers=workers or default_workers(),
            on_scene_done=bars.add("sampling scenes", len(specs)),
        )
    _print_audit(result)


def _leakage_audit(dataset: Path, split: str, out: Path | None) -> None:
    from condvln.errors import FormatError
    from condvln.io import atomic_write_bytes, dumps_json, read_json
    from condvln.synth.audit import leakage_audit, violations
    from condvln.vlnce import load_split

    train = load_split(dataset, "train")["episodes"]
    try:
        report = leakage_audit(train, _evaluation_episodes(dataset, split))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise FormatError(
            f"episodes lack the CondVLN labels the audit needs ({type(exc).__name__}: {exc})",
            file=str(dataset),
            field="info.condvln",
        ) from None
    if out is not None:
        atomic_write_bytes(out, dumps_json(report))
    _print_leakage(report, split)
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
        f"OK: no blind probe is off chance beyond tolerance, above or below "
        f"({report['episodes']} episodes)"
    )


def _evaluation_episodes(dataset: Path, splits: str) -> list[dict[str, object]]:
    """The episodes of the comma-separated ``splits``; ``test`` merged with its answers."""
    from condvln.dataset.schema import load_checked_split
    from condvln.vlnce import load_split

    episodes: list[dict[str, object]] = []
    for name in (s.strip() for s in splits.split(",") if s.strip()):
        if name == "test":
            episodes += load_checked_split(dataset, name).episodes
        else:
            episodes += load_split(dataset, name)["episodes"]
    return episodes


def _print_leakage(report: dict[str, Any], split: str) -> None:
    from condvln.synth.audit import PRIOR_PROBES, PROBES

    table = Table(title=f"Blind probes on {split}: branch accuracy (%), all episodes")
    for column in ("probe", "accuracy", "chance", "diff (pp)", "95% CI (pp)", "n"):
        table.add_column(column, justify="left" if column == "probe" else "right")
    for probe in PROBES:
        cell = report["branch"][probe]["all"]
        if not cell["n"]:
            table.add_row(probe, "–", "–", "–", "–", "0")
            continue
        low, high = cell["ci95"]
        table.add_row(
            probe,
            f"{cell['accuracy']:.1f}",
            f"{cell['chance']:.1f}",
            f"{cell['diff']:+.1f}",
            f"[{low:+.1f}, {high:+.1f}]",
            str(cell["n"]),
        )
    console.print(table)
    table = Table(title=f"Branch accuracy per category on {split} (%; chance in brackets)")
    table.add_column("probe")
    cells = report["branch"]["constant_branch"]
    keys = [k for k, c in cells.items() if c["n"] and k != "all"]
    for key in keys:
        table.add_column(f"{key} (n={cells[key]['n']})", justify="right")
    for probe in PROBES:
        row = report["branch"][probe]
        table.add_row(
            probe,
            *(
                f"{row[k]['accuracy']:.1f} [{row[k]['chance']:.1f}]" if row[k]["n"] else "–"
                for k in keys
            ),
        )
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
