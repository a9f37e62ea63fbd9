"""``condvln habitat``: configs and navmeshes for running CondVLN episodes in habitat-sim."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from condvln.cli.common import DatasetArgument, MultiProgress, QuietOption, console

app = typer.Typer(
    help="Run CondVLN episodes in habitat-sim / VLN-CE / habitat-lab.", no_args_is_help=True
)


@app.command("config")
def habitat_config_command(
    dataset: DatasetArgument,
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


@app.command("navmesh")
def habitat_navmesh_command(
    dataset: DatasetArgument,
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
    with MultiProgress(quiet) as bars:
        report = bake_navmeshes(dataset, scenes_dir=scenes_dir, progress=bars.add)
    summary = report.summary()
    console.print(
        f"{len(report.navmeshes)} navmeshes; {summary['episodes_measured']} episodes "
        f"re-measured (mean |Δ| {summary.get('mean_abs_difference', 0.0):.3f} m, max "
        f"{summary.get('max_abs_difference', 0.0):.3f} m), {summary['episodes_unreachable']} "
        f"unreachable; details in {Path(dataset) / REPORT_FILE}",
        markup=False,
    )
