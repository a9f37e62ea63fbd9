"""The navigation backends share one protocol module and import nothing of each other."""

from __future__ import annotations

import ast
from pathlib import Path

import condvln.nav

NAV = Path(condvln.nav.__file__).resolve().parent


def _imports(path: Path) -> set[str]:
    """Every ``condvln.nav.*`` module ``path`` imports, at any level (lazy imports too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("condvln.nav")
        ):
            names = [node.module] if node.module != "condvln.nav" else []
            names += [f"condvln.nav.{a.name}" for a in node.names if node.module == "condvln.nav"]
            found.update(names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("condvln.nav."))
    return {m for m in found if (NAV / f"{m.rsplit('.', 1)[1]}.py").is_file()}


def test_no_import_cycle_in_nav_and_backends_share_the_protocol() -> None:
    graph = {f"condvln.nav.{p.stem}": _imports(p) for p in NAV.glob("*.py") if p.stem != "__init__"}
    for backend in ("geodesic", "exact", "habitat"):
        deps = graph[f"condvln.nav.{backend}"]
        assert "condvln.nav.protocol" in deps
        others = {"condvln.nav.geodesic", "condvln.nav.exact", "condvln.nav.habitat"}
        assert not deps & (others - {f"condvln.nav.{backend}"}), backend
    state: dict[str, int] = {}

    def visit(module: str, trail: tuple[str, ...]) -> None:
        assert state.get(module) != 1, f"import cycle: {' -> '.join((*trail, module))}"
        if state.get(module) == 2:
            return
        state[module] = 1
        for dep in sorted(graph.get(module, ())):
            visit(dep, (*trail, module))
        state[module] = 2

    for module in sorted(graph):
        visit(module, ())
