"""What the command groups share: the console, option declarations, settings, progress, the
exit code of failed episodes.

Options used by more than one command are declared once here (``SeedOption``,
``WorkersOption``, …); a command module declares only the options that are its own.

Output is for terminals and logs alike: on a terminal, progress bars on stderr and tables that
fit its width; otherwise (a cluster log, ``| tee``) progress as plain lines
(:class:`PlainProgress`) and tables at their full width, never cut.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.console import Console, ConsoleDimensions

UNCUT = 100_000
"""Width of the console when stdout is not a terminal: lines and tables are never cut."""

FAILED_EPISODES = 3
"""Exit code of a run, evaluation or benchmark in which an episode failed (``agent_error``,
``invalid_action`` or ``timeout``), unless ``--allow-failures``."""


class _Console(Console):
    """A console as wide as the terminal, or as wide as any line when stdout is not one."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        return size if self.is_terminal else ConsoleDimensions(UNCUT, size.height)


console = _Console()

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
    str | None,
    typer.Option(
        help="Where the work runs: local (processes, the default) or ray "
        '(pip install "condvln[ray]").'
    ),
]
AllowFailuresOption = Annotated[
    bool,
    typer.Option(
        "--allow-failures",
        help="Exit 0 even when episodes failed (agent_error, invalid_action, timeout); "
        "without it such a command exits 3.",
    ),
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
    kind: str | None,
    workers: int | None,
    address: str | None,
    resources: str | Mapping[str, Any] | None = None,
) -> Any:
    """The :class:`~condvln.parallel.Executor` of the command-line options (``resources``: the
    ``--agent-resources`` JSON, or the mapping of a settings file).

    >>> executor_of("ray", 2, None, {"num_gpus": 1}).agent_resources
    {'num_gpus': 1}
    >>> executor_of(None, 3, None, None).kind
    'local'
    """
    from condvln.parallel.executors import Executor, default_workers, parse_resources

    return Executor(
        kind or "local",  # type: ignore[arg-type]
        workers or default_workers(),
        address,
        dict(resources) if isinstance(resources, Mapping) else parse_resources(resources),
    )


def parse_resources(text: str) -> dict[str, Any]:
    """``--agent-resources`` JSON as a mapping (one-line error otherwise)."""
    from condvln.parallel.executors import parse_resources as parse

    return parse(text)


def positional_overrides(
    paths: list[Path | None], overrides: list[str] | None
) -> tuple[list[Path], list[str]]:
    """Split positional arguments into paths and overrides: when paths come from ``--config``,
    the overrides take the paths' places on the command line.

    >>> positional_overrides([Path("data"), Path("seed=1")], ["~name"])
    ([PosixPath('data')], ['seed=1', '~name'])
    """
    words = [str(p) for p in paths if p is not None] + list(overrides or ())
    first = next((i for i, w in enumerate(words) if "=" in w or w[:1] in "+~"), len(words))
    return [Path(w) for w in words[:first]], words[first:]


def required(s: Any, *keys: str) -> list[Any]:
    """The values of settings keys a command needs (``--agent``, ``--dataset``, …), as paths
    for the folder keys; a missing one is a one-line error naming the option and the key.

    >>> required(type("S", (), {"agent": "random", "out": "runs/r"})(), "agent", "out")
    ['random', PosixPath('runs/r')]
    """
    from condvln.errors import ConfigError

    values = []
    for key in keys:
        value = getattr(s, key)
        if value is None:
            raise ConfigError(
                f"--{key.replace('_', '-')} is required (or the key '{key}' in --config)"
            )
        values.append(value if key in ("agent", "name", "split") else Path(value))
    return values


def exit_on_failures(failures: Mapping[str, int], allow: bool, episodes: int | None = None) -> None:
    """Print the failed episodes by status on stderr and exit :data:`FAILED_EPISODES`, unless
    ``allow`` (``--allow-failures``) or nothing failed.

    Args:
        failures: Failed episodes by status (``agent_error``, ``invalid_action``, ``timeout``).
        allow: ``--allow-failures``: print the counts, exit 0.
        episodes: Episodes in all, for the message.
    """
    failed = {status: n for status, n in sorted(failures.items()) if n}
    if not failed:
        return
    listed = ", ".join(f"{n} {status}" for status, n in failed.items())
    of = f" of {episodes}" if episodes is not None else ""
    code = "exit code 0 (--allow-failures)" if allow else f"exit code {FAILED_EPISODES}"
    print(
        f"condvln: {sum(failed.values())}{of} episodes failed ({listed}); {code}",
        file=sys.stderr,
        flush=True,
    )
    if not allow:
        raise typer.Exit(FAILED_EPISODES)


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


def _clock_text(seconds: float) -> str:
    """``H:MM:SS`` or ``M:SS``.

    >>> _clock_text(75.2), _clock_text(3725)
    ('1:15', '1:02:05')
    """
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class PlainProgress:
    """Progress of several phases as plain lines, for logs: ``PHASE: DONE/TOTAL (P%), RATE/s,
    ETA M:SS`` when a phase starts, at most every ``interval`` seconds while it runs, and
    ``… done in M:SS`` when it ends.

    >>> now = [0.0]
    >>> import io; out = io.StringIO()
    >>> bars = PlainProgress(stream=out, clock=lambda: now[0], interval=5.0)
    >>> update = bars.done_total("run random")
    >>> for done in range(1, 5):
    ...     now[0] += 4.0
    ...     update(done, 4)
    >>> print(out.getvalue(), end="")
    run random: 1/4 (25%)
    run random: 3/4 (75%), 0.2/s, ETA 0:04
    run random: 4/4 (100%), 0.2/s, done in 0:12
    """

    def __init__(
        self,
        *,
        stream: TextIO | None = None,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream, self.interval, self.clock = stream, interval, clock

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add(self, label: str, total: int) -> Callable[[], None]:
        """Start a phase and return its ``advance()`` callback."""
        update = self.done_total(label)
        state = {"done": 0}
        update(0, total)

        def advance() -> None:
            state["done"] += 1
            update(state["done"], total)

        return advance

    def done_total(self, label: str) -> Callable[[int, int], None]:
        """A ``progress(done, total)`` callback of one phase (started at the first call)."""
        state: dict[str, float] = {}

        def update(done: int, total: int) -> None:
            now = self.clock()
            if "start" not in state:
                state["start"], state["first"] = now, done
            elif (done < total and now - state["last"] < self.interval) or state.get("ended"):
                return
            state["last"] = now
            state["ended"] = float(done >= total)
            self._line(label, done, total, now - state["start"], done - state["first"])

        return update

    def _line(self, label: str, done: int, total: int, elapsed: float, progressed: float) -> None:
        rate = progressed / elapsed if elapsed > 0 else 0.0
        share = f" ({100 * done // total}%)" if total else ""
        line = f"{label}: {done}/{total}{share}"
        if elapsed > 0:
            line += f", {rate:.1f}/s"
        if done >= total:
            line += f", done in {_clock_text(elapsed)}"
        elif rate > 0:
            line += f", ETA {_clock_text((total - done) / rate)}"
        print(line, file=self.stream or sys.stderr, flush=True)


class MultiProgress:
    """Progress of several phases of one command (silent with ``--quiet``): bars on a terminal,
    :class:`PlainProgress` lines when stderr is not one."""

    def __new__(cls, quiet: bool) -> Any:
        if not quiet and not sys.stderr.isatty():
            return PlainProgress()
        return super().__new__(cls)

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
