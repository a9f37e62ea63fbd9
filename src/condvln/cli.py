"""The ``condvln`` command. Thin: it parses options and calls library functions.

Errors from bad input (:class:`~condvln.errors.CondVLNError`) become one line on stderr and exit
code 2, never a traceback.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from condvln import __version__
from condvln.errors import CondVLNError

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
    console.print(
        f"wrote {out} (navigable area {navigator.area.area:.1f} m², {islands} islands)"
    )


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


def main() -> None:
    """Run the command line; user errors print one line and exit with code 2."""
    try:
        app()
    except CondVLNError as exc:
        print(f"condvln: error: {exc}", file=sys.stderr)
        sys.exit(2)
