"""``condvln scenes``: list the scene sources, show, export and render scenes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from condvln.cli.common import ReferenceArgument, SourceOption, console

app = typer.Typer(help="Load, inspect and export scenes.", no_args_is_help=True)


@app.command("sources")
def scenes_sources() -> None:
    """List the scene sources (entry points of condvln.sources) and their packages."""
    from condvln.errors import ConfigError
    from condvln.scene.sources import SOURCES

    table = Table(title="Scene sources")
    table.add_column("source (package)")
    table.add_column("reference")
    table.add_column("description")
    for name in SOURCES.names():
        origin = SOURCES.origin(name)
        cell = f"[bold]{escape(name)}[/]" + ("" if origin is None else f"\n({escape(str(origin))})")
        try:
            src = SOURCES.get(name)
        except ConfigError as exc:  # a broken plugin is listed, not fatal
            table.add_row(cell, "", escape(f"cannot load: {exc}"))
            continue
        table.add_row(cell, escape(src.reference), escape(src.description))
    console.print(table)


@app.command("show")
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


@app.command("export")
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


@app.command("render")
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
