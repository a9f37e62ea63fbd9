"""What the command groups share: the console, option declarations, settings, progress bars.

Options used by more than one command are declared once here (``SeedOption``,
``WorkersOption``, …); a command module declares only the options that are its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

console = Console()

SEED_MAX = 2**63 - 1

SourceOption = Annotated[
    str, typer.Option("--source", "-s", help="Scene source (see `condvln scenes sources`).")
]
ReferenceArgument = Annotated[
    str, typer.Argument(help="What to load: a file path, a seed or a scene name, per source.")
]
DatasetArgument = Annotated[
    Path, typer.Argument(help="Dataset folder written by `condvln generate`.")
]
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
OverwriteOption = Annotated[bool, typer.Option(help="Replace an existing folder.")]
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
AgentArgOption = Annotated[
    list[str] | None,
    typer.Option(
        "--agent-arg",
        help="Agent constructor argument KEY=VALUE, VALUE parsed as JSON (repeatable).",
    ),
]
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


def executor_of(
    kind: str, workers: int | None, address: str | None, resources: str | None = None
) -> Any:
    """The :class:`~condvln.parallel.Executor` of the command-line options."""
    from condvln.parallel.executors import Executor, parse_resources
    from condvln.synth.pipeline import default_workers

    return Executor(kind, workers or default_workers(), address, parse_resources(resources))  # type: ignore[arg-type]


def settings(
    ctx: typer.Context,
    command: str,
    config_file: Path | None,
    overrides: list[str] | None,
    options: Mapping[str, str],
    base: Mapping[str, Any] | None = None,
    given: Mapping[str, Any] | None = None,
) -> Any:
    """A command's effective settings (:func:`condvln.config.resolve`).

    Args:
        ctx: The command's context.
        command: The configurable command (a key of :data:`condvln.config.SETTINGS`).
        config_file: ``--config``.
        overrides: The ``KEY=VALUE`` arguments.
        options: Parameter name → dotted key; only the options given on the command line
            count (their defaults are the model's).
        base: Values replacing the model defaults.
        given: More explicitly given values by dotted key, already converted.
    """
    from condvln.config import SETTINGS, resolve

    def explicit(name: str) -> bool:  # typer may vendor click: compare the enum by name
        source = ctx.get_parameter_source(name)
        return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")

    values = {key: ctx.params[name] for name, key in options.items() if explicit(name)}
    return resolve(
        SETTINGS[command],
        config_file=config_file,
        overrides=overrides or (),
        options={**values, **(given or {})},
        base=base,
    )


class MultiProgress:
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

    def __enter__(self) -> MultiProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)

    def add(self, label: str, total: int) -> Callable[[], None]:
        """Add a bar and return its ``advance()`` callback."""
        task = self.progress.add_task(label, total=total)
        return lambda: self.progress.advance(task)

    def done_total(self, label: str) -> Callable[[int, int], None]:
        """A ``progress(done, total)`` callback drawing one bar (added at the first call)."""
        state: dict[str, Any] = {}

        def update(done: int, total: int) -> None:
            if "task" not in state:
                state["task"] = self.progress.add_task(label, total=total)
            self.progress.update(state["task"], completed=done)

        return update
