"""`condvln report` without a browser: self-contained file, input layouts, bad input."""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

import orjson
import pytest

from condvln.report.html import write_report

pytestmark = pytest.mark.slow


class _Resources(HTMLParser):
    """Every src / href attribute and every <script src> of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.urls += [v or "" for k, v in attrs if k in ("src", "href", "srcset", "data")]


def test_benchmark_writes_a_self_contained_report(bench: Path) -> None:
    page = (bench / "report.html").read_text()
    parser = _Resources()
    parser.feed(page)
    assert parser.urls, "no resources found at all"
    assert all(u.startswith(("data:", "#")) for u in parser.urls), [
        u[:60] for u in parser.urls if not u.startswith(("data:", "#"))
    ]
    assert parser.tags.count("img") == 5  # coverage, sweeps, failures, chance + the map panel
    assert '<link rel="stylesheet"' not in page and "@import" not in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        '"http://www.w3.org/2000/svg"', ""
    )
    assert "https://" not in page


def test_report_of_one_evaluation_folder(cli, bench: Path, tmp_path: Path) -> None:
    out = tmp_path / "one.html"
    result = cli("report", str(bench / "eval" / "oracle_linear"), "--out", str(out), "-q")
    assert result.returncode == 0, result.stderr
    episodes = len((bench / "eval" / "oracle_linear" / "episodes.jsonl").read_bytes().splitlines())
    assert f"{episodes} episode rows, {episodes} maps" in " ".join(result.stdout.split())


def test_moved_folder_without_trajectories_still_reports(bench: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(bench / "eval" / "random", folder)
    (folder / "manifest.json").unlink()
    summary = write_report(folder, tmp_path / "r.html")
    assert summary.rows > 0 and summary.maps == 0
    assert summary.warnings == ("random: no maps (dataset or trajectories not found)",)


def test_bad_input_is_one_line_and_writes_nothing(cli, bench: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    shutil.copytree(bench / "eval" / "random", folder)
    lines = (folder / "episodes.jsonl").read_bytes().splitlines()
    lines[2] = b'{"episode_id": 3, "success": '
    (folder / "episodes.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "bad.html"
    result = cli("report", str(folder), "--out", str(out), "-q")
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"condvln: error: {folder / 'episodes.jsonl'}: line 3: not valid JSON"
    )
    assert not out.exists()
    result = cli("report", str(tmp_path / "nothing"), "--out", str(out), "-q")
    assert result.returncode == 2 and "not a results folder" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("report", str(empty), "--out", str(out), "-q")
    assert result.returncode == 2 and "no evaluation output" in result.stderr
    assert orjson.loads((bench / "results.json").read_bytes())["runs"]
