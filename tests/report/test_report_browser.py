"""The HTML report in a real headless Chromium: console, numbers, images, filter, maps, pixels."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from PIL import Image

from condvln.evaluation.tables import COLUMN_KEYS
from condvln.report.html import PAGE_ROWS

pytestmark = pytest.mark.slow

RUN_ORDER = ("random", "goal_only", "condition_blind", "text_prior", "commonsense_prior",
             "neurosymbolic", "neurosymbolic+noise", "oracle_linear")  # fmt: skip
TABLE3_CATEGORY = {
    "base d=1,ℓ=1": "simple",
    "depth d=2,ℓ=1": "nested",
    "depth d=3,ℓ=1": "deep_nested",
    "chain d=1,ℓ=2": "chain",
    "chain d=1,ℓ=3": "long_chain",
}
TABLE2_KEYS = {"SR": "success", "SPL": "spl", "BSA (paper)": "bsa", "CSR (paper)": "csr"}


def _split_column(name: str) -> tuple[str, str]:
    """``"<group> <column>"`` → (group, column); column labels may contain spaces."""
    column = next(c for c in COLUMN_KEYS if name.endswith(f" {c}"))
    return name.removesuffix(f" {column}"), column


def _metrics(bench: Path, run: str) -> dict[str, Any]:
    return orjson.loads((bench / "eval" / run / "metrics.json").read_bytes())


def _records(bench: Path, run: str) -> list[dict[str, Any]]:
    lines = (bench / "eval" / run / "episodes.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


def _cells(browser: Any, table: str) -> list[dict[str, Any]]:
    script = f"""return Array.from(document.querySelectorAll('#{table} td[data-value]')).map(td => ({{
        run: td.closest('tr').dataset.run || td.dataset.run, col: td.dataset.col || null,
        metric: td.dataset.metric || null, value: td.dataset.value, text: td.textContent}}));"""
    return browser.execute_script(script)


def _visible_rows(browser: Any) -> list[list[str]]:
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('#episodes tbody tr'))"
        ".filter(tr => !tr.hidden && tr.offsetParent !== null)"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent));"
    )


def _first_page(total: int) -> tuple[int, str]:
    """Rows the report shows before "show more", and its row-count text, for ``total`` rows."""
    shown = f" (first {PAGE_ROWS} shown)" if total > PAGE_ROWS else ""
    return min(total, PAGE_ROWS), f"{total} of {total} rows{shown}"


def _errors(browser: Any) -> list[dict[str, Any]]:
    return [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


@pytest.fixture(scope="module")
def page(browser: Any, bench: Path) -> Any:
    browser.get((bench / "report.html").resolve().as_uri())
    browser.execute_script("return document.readyState")
    return browser


def test_page_loads_without_console_errors(page: Any, bench: Path) -> None:
    assert page.title.startswith("CondVLN report")
    assert _errors(page) == []
    total = sum(len(_records(bench, run)) for run in RUN_ORDER)
    assert page.find_element("id", "row-count").text == _first_page(total)[1]
    timing = page.execute_script(
        "const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd;"
    )
    assert timing > 0


def test_table_numbers_equal_metrics_json(page: Any, bench: Path) -> None:
    table2 = _cells(page, "table2")
    assert {c["run"] for c in table2} == set(RUN_ORDER)
    checked = 0
    for cell in table2:
        metrics = _metrics(bench, cell["run"])
        group, column = (
            cell["col"].rpartition(" ")[::2]
            if cell["col"].startswith("diagnostics ")
            else _split_column(cell["col"])
        )
        if group == "diagnostics" and column in metrics["failure_categories"]:
            expected = 100 * metrics["failure_categories"][column]["share"]
        elif group == "diagnostics" and column == "WB":
            expected = 100 * metrics["metrics"]["wrong_branch"]["mean"]
        elif group in ("seen phrasing", "unseen phrasing") and column in TABLE2_KEYS:
            seen, key = group == "seen phrasing", TABLE2_KEYS[column]
            values = [r[key] for r in _records(bench, cell["run"]) if r["phrasing_seen"] is seen]
            values = [v for v in values if v is not None]
            expected = 100 * sum(values) / len(values)
        elif column in TABLE2_KEYS:
            source = metrics["breakdowns"]["source_dataset"][group]["metrics"]
            expected = 100 * source[TABLE2_KEYS[column]]["mean"]
        else:
            continue  # BA / chance / SR-any are not aggregated in metrics.json
        assert float(cell["value"]) == pytest.approx(expected, abs=1e-9), cell
        assert cell["text"] == f"{expected:.1f}"
        checked += 1
    # one source and the two phrasing groups (4 columns each), WB, five failure categories
    assert checked == len(RUN_ORDER) * (3 * 4 + 1 + 5)

    table3 = _cells(page, "table3")
    checked = 0
    for cell in table3:
        group, column = _split_column(cell["col"])
        category = _metrics(bench, cell["run"])["breakdowns"]["category"].get(
            TABLE3_CATEGORY[group]
        )
        mean = None if category is None else category["metrics"][COLUMN_KEYS[column]]["mean"]
        if mean is None:
            assert cell["value"] == "" and cell["text"] == "–", cell
        else:
            assert float(cell["value"]) == pytest.approx(100 * mean, abs=1e-9), cell
            assert cell["text"] == f"{100 * mean:.2f}"
            checked += 1
    assert checked >= len(RUN_ORDER) * 2 * 2  # at least two categories with BSA and CSR per run

    every = _cells(page, "metrics")
    for run in RUN_ORDER:
        aggregates = _metrics(bench, run)["metrics"]
        shown = {c["metric"]: c for c in every if c["run"] == run}
        assert set(shown) == set(aggregates)
        for name, agg in aggregates.items():
            if agg["mean"] is None:
                assert shown[name]["value"] == ""
            else:
                assert float(shown[name]["value"]) == agg["mean"]


def test_every_image_decodes(page: Any) -> None:
    images = page.execute_script(
        "return Array.from(document.images).filter(i => i.id !== 'map-image')"
        ".map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight]);"
    )
    assert len(images) == 4
    for alt, complete, width, height in images:
        assert complete and width > 100 and height > 100, alt


def test_filter_changes_the_visible_rows(page: Any, bench: Path) -> None:
    from selenium.webdriver.support.ui import Select

    total = sum(len(_records(bench, run)) for run in RUN_ORDER)
    assert len(_visible_rows(page)) == _first_page(total)[0]
    Select(page.find_element("id", "f-run")).select_by_value("oracle_linear")
    rows = _visible_rows(page)
    records = _records(bench, "oracle_linear")
    assert len(rows) == len(records) and {r[0] for r in rows} == {"oracle_linear"}
    Select(page.find_element("id", "f-sr")).select_by_value("1")
    rows = _visible_rows(page)
    assert len(rows) == sum(r["success"] for r in records) > 0
    assert [int(r[1]) for r in rows] == [r["episode_id"] for r in records if r["success"]]
    Select(page.find_element("id", "f-sr")).select_by_value("0")
    Select(page.find_element("id", "f-fail")).select_by_value("navigation")
    expected = [r["episode_id"] for r in records if r["failure_category"] == "navigation"]
    assert [int(r[1]) for r in _visible_rows(page)] == expected
    assert page.find_element("id", "row-count").text == f"{len(expected)} of {total} rows"
    for select in ("f-run", "f-sr", "f-fail"):
        Select(page.find_element("id", select)).select_by_value("")
    assert len(_visible_rows(page)) == _first_page(total)[0]


def test_rows_open_their_maps(page: Any, bench: Path) -> None:
    data = orjson.loads(page.execute_script(
        "return document.getElementById('report-data').textContent"
    ))  # fmt: skip
    first_of_scene: dict[int, int] = {}
    for i, row in enumerate(data["rows"]):
        first_of_scene.setdefault(data["episodes"][row["e"]]["scene"], i)
    assert len(first_of_scene) == len(data["scenes"]) >= 2
    records = {(r, rec["episode_id"]): rec for r in RUN_ORDER for rec in _records(bench, r)}
    for i in first_of_scene.values():
        page.find_element("css selector", f'#episodes tbody tr[data-i="{i}"]').click()
        state = page.execute_script("""
            const img = document.getElementById('map-image'), svg = document.getElementById('map-svg');
            return [!document.getElementById('map-panel').hidden, img.complete, img.naturalWidth,
                    svg.querySelectorAll('text[data-gold]').length,
                    svg.querySelectorAll('text[data-gold="1"]').length,
                    svg.querySelectorAll('g line').length,
                    document.getElementById('map-caption').textContent];""")
        row = data["rows"][i]
        run = data["runs"][row["r"]]
        record = records[(run, row["id"])]
        shown, complete, width, labels, gold, segments, caption = state
        assert shown and complete and width > 100
        assert labels == record["n_branches"] and gold == 1
        assert segments == len(row["t"]) // 2 - 1
        assert caption.startswith(f"{run} · episode {row['id']}")
        assert (
            f"subgoals reached {record['subgoals_reached']}/{record['subgoals_total']}" in caption
        )
        page.find_element("id", "map-close").click()
    assert _errors(page) == []


def test_screenshots_are_not_blank(page: Any, tmp_path: Path) -> None:
    for name, action in (("page", "window.scrollTo(0, 0)"), ("map", "condvlnReport.openMap(0)")):
        page.execute_script(action)
        png = page.get_screenshot_as_png()
        (tmp_path / f"{name}.png").write_bytes(png)
        pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float64)
        assert pixels.shape[0] >= 800 and pixels.shape[1] >= 1300
        assert pixels.std() > 15, name
        assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 100, name
    page.execute_script("condvlnReport.closeMap()")
    assert _errors(page) == []


def test_long_tables_are_shown_a_page_at_a_time(browser: Any, bench: Path, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    from condvln.report.html import write_report

    out = tmp_path / "paged.html"
    summary = write_report(bench, out, page_rows=100)
    browser.get(out.resolve().as_uri())
    assert len(_visible_rows(browser)) == 100
    count = browser.find_element("id", "row-count")
    assert count.text == f"{summary.rows} of {summary.rows} rows (first 100 shown)"
    browser.find_element("id", "show-more").click()
    assert len(_visible_rows(browser)) == 200
    Select(browser.find_element("id", "f-run")).select_by_value("goal_only")
    rows = _visible_rows(browser)
    assert len(rows) == len(_records(bench, "goal_only")) and {r[0] for r in rows} == {"goal_only"}
    assert not browser.find_element("id", "show-more").is_displayed()
    assert _errors(browser) == []
