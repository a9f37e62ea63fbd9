"""The documentation site builds with ``mkdocs build --strict`` and the README points into it.

Strict mode turns every warning into a failure: a link to a missing page or anchor, and a
docstring cross-reference the API reference cannot resolve. The build needs the ``docs`` extra
(part of ``test``); without it the test skips, unless ``CONDVLN_REQUIRE_MKDOCS`` is set (as
``.ci/run`` does), where it fails.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from condvln.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README_LIMIT = 200
"""The README stays short: set-up, a first agent and links; the rest is in ``docs/``."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as ``mkdocs build --strict`` writes it."""
    if importlib.util.find_spec("mkdocs") is None:
        message = 'mkdocs not installed (pip install -e ".[docs]")'
        if os.environ.get("CONDVLN_REQUIRE_MKDOCS"):
            pytest.fail(message)
        pytest.skip(message)
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


@pytest.mark.slow
def test_every_page_is_built(site: Path) -> None:
    for page in DOCS.rglob("*.md"):
        path = page.relative_to(DOCS).with_suffix("")  # x.md is x/index.html, index.md index.html
        assert (site / (path.parent if path.name == "index" else path) / "index.html").is_file()


@pytest.mark.slow
def test_the_api_reference_renders_docstrings(site: Path) -> None:
    agents = (site / "api" / "agents" / "index.html").read_text()
    # a Sphinx role of the package docstring became a link to the module's section
    assert 'href="#condvln.agents.base"><code>base</code></a>' in agents
    # a doctest became a highlighted console block, not Markdown quotes
    assert '<span class="gp">&gt;&gt;&gt; </span><span class="n">AGENTS</span>' in agents
    for page in (site / "api").rglob("*.html"):
        text = page.read_text()
        assert "<blockquote>" not in text, page
        assert not re.search(r":(mod|class|func|meth|attr|data):<code>", text), page


def test_the_readme_is_short_and_links_to_every_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < README_LIMIT
    linked = set(re.findall(r"\]\((docs/[\w/]+\.md)\)", readme))
    pages = {str(p.relative_to(ROOT)) for p in DOCS.glob("*.md")} | {"docs/api/index.md"}
    assert linked == pages


def test_the_commands_page_lists_every_command() -> None:
    table = re.findall(r"^\| `([\w-]+)` \|", (DOCS / "cli.md").read_text(), flags=re.M)
    assert sorted(table) == sorted(typer.main.get_command(app).commands)
