"""The ``condvln`` command. Thin: it parses options, calls library functions and prints.

One module per command group, in pipeline order — :mod:`.scenes` (``scenes …``),
:mod:`.dataset` (``graph``, ``generate``, ``validate``, ``oracle``), :mod:`.audit`,
:mod:`.agents` (``run``, ``check-agent``, ``agents``), :mod:`.results` (``evaluate``,
``merge``, ``viz``, ``report``), :mod:`.benchmark` (``benchmark``, ``config``) and
:mod:`.habitat` (``habitat …``) — and the options they share in :mod:`.common`. A new
command goes into the module of its group (or a new module added to :data:`app` below).

Errors from bad input (:class:`~condvln.errors.CondVLNError`) become one line on stderr and exit
code 2, never a traceback. Help is click's plain text (no rich markup: ``condvln[ray]`` stays as
written, and option names are never cut).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from condvln import __version__
from condvln.cli import agents, audit, benchmark, dataset, habitat, results, scenes
from condvln.cli.common import console
from condvln.errors import CondVLNError

__all__ = ["app", "console", "main"]

EXIT_CODES = (
    "Exit codes: 0 done; 1 a check failed (validate, audit --leakage, check-agent) or an "
    "internal error; 2 bad input or options (one line on stderr); 3 episodes failed "
    "(agent_error / invalid_action / timeout) in run, evaluate or benchmark, unless "
    "--allow-failures."
)

app = typer.Typer(
    name="condvln",
    help="CondVLN: conditional branching in vision-language navigation.",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
for _group in (dataset, audit, agents, results, benchmark):
    app.add_typer(_group.app)
app.add_typer(scenes.app, name="scenes")
app.add_typer(habitat.app, name="habitat")


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


def main() -> None:
    """Run the command line; user errors print one line and exit with code 2.

    Resource errors (out of memory, nesting too deep, an OS error on an output path) are also
    one line with code 2; anything else is a bug: one line, exit code 1, and the traceback only
    with ``CONDVLN_DEBUG=1``.
    """
    import os

    import pydantic

    from condvln.options import config_error
    from condvln.parallel.executors import one_ray_session, start_ray_early

    try:
        with one_ray_session():
            wanted = ray_wanted(sys.argv[1:])
            if wanted is not None:
                start_ray_early(*wanted)
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


_TASKS = ("condvln.dataset.generate", "condvln.agents.runner.pool", "condvln.evaluation.evaluate")
RAY_COMMANDS = {
    "generate": _TASKS[:1],
    "run": _TASKS[1:2],
    "evaluate": _TASKS[2:],
    "benchmark": _TASKS,
}
"""The commands with ``--executor``, and the modules their Ray tasks and actors are in."""


def ray_wanted(args: list[str]) -> tuple[Any, tuple[str, ...]] | None:
    """The Ray :class:`~condvln.parallel.Executor` a command line asks for with ``--executor
    ray`` (with its ``--workers`` and ``--ray-address``) and the modules of its tasks, read from
    the raw arguments; ``None`` for a command line that does not ask for Ray.

    :func:`main` starts that session while the command imports its modules, as the settings
    that decide are known only after those imports. A wrong guess (a settings file choosing Ray
    is not seen) costs nothing but time: the command's first Ray stage then starts or replaces
    the session itself.

    >>> ray_wanted(["generate", "--out", "d", "--executor", "ray", "-j2"])[0].workers
    2
    >>> ray_wanted(["run", "--executor=ray", "--ray-address", "auto"])[0].address
    'auto'
    >>> ray_wanted(["generate", "--executor", "local"]) is None
    True
    """
    from condvln.parallel.executors import Executor, default_workers

    command = next((a for a in args if not a.startswith("-")), "")
    if command not in RAY_COMMANDS or "--help" in args:
        return None
    given: dict[str, str] = {}
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in ("--executor", "--ray-address", "--workers", "-j"):
            given[name] = value if eq else (args[i + 1] if i + 1 < len(args) else "")
        elif arg.startswith("-j") and arg[2:].isdigit():
            given["-j"] = arg[2:]
    workers = given.get("--workers", given.get("-j", ""))
    if given.get("--executor") != "ray" or not (workers.isdigit() or not workers):
        return None
    try:
        executor = Executor("ray", int(workers or default_workers()), given.get("--ray-address"))
    except CondVLNError:
        return None  # reported when the command reads its options
    return executor, RAY_COMMANDS[command]


def _fail(message: str, code: int) -> None:
    print(f"condvln: error: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(code)
