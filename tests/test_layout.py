"""The layout of ``src/``: imports run one way down the layers, functions stay short.

The import contracts are declared in ``pyproject.toml`` (``[tool.importlinter]``) and checked by
import-linter; the function lengths are measured here with :mod:`ast`, from the ``def`` line to
the function's last line (docstring included, decorators not).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "condvln"

LIMIT = 80
"""No function is longer."""

EXPLAIN = 60
"""A function longer than this says why in a ``# long: …`` comment on its ``def`` line or
the line above it."""


def _contracts() -> list[dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def test_import_contracts_hold(capsys) -> None:
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    report = capsys.readouterr().out
    assert code == 0, report[report.find("Broken contracts") :]
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in report


def test_the_pipeline_contract_places_every_top_level_module() -> None:
    (pipeline,) = [c for c in _contracts() if c["id"] == "pipeline"]
    placed = {name.strip() for layer in pipeline["layers"] for name in layer.split("|")}
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    modules |= {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert placed == modules


def test_no_contract_ignores_an_import() -> None:
    """Every import of ``src/`` obeys the contracts: none is waved through by ``ignore_imports``."""
    ignored = {c["id"]: c["ignore_imports"] for c in _contracts() if c.get("ignore_imports")}
    assert not ignored


def _long_functions() -> list[tuple[str, int, str, int, bool]]:
    """``(path, line, name, length, explained)`` of every function over :data:`EXPLAIN` lines."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = node.end_lineno - node.lineno + 1
            if length <= EXPLAIN:
                continue
            top = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            nearby = (lines[node.lineno - 1], lines[top - 2] if top > 1 else "")
            explained = any("# long: " in line for line in nearby)
            found.append(
                (path.relative_to(PACKAGE).as_posix(), node.lineno, node.name, length, explained)
            )
    return found


def test_functions_are_short_or_say_why() -> None:
    problems = [
        f"{path}:{line} {name}: {length} lines"
        + (f" (limit {LIMIT})" if length > LIMIT else " without a '# long: reason' comment")
        for path, line, name, length, explained in _long_functions()
        if length > LIMIT or not explained
    ]
    assert not problems, "\n".join(problems)


def test_the_length_check_sees_long_functions() -> None:
    """The measure finds the explained long functions it should (the check is not vacuous)."""
    explained = {(path, name) for path, _, name, _, ok in _long_functions() if ok}
    assert ("cli/agents.py", "run_command") in explained
