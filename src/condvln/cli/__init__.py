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
from typing import Annotated

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
    from condvln.parallel.executors import one_ray_session

    try:
        with one_ray_session():
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
