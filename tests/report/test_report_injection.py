"""Stored-XSS and template injection through every data-derived field of ``condvln report``.

A results folder is made hostile: an instruction, object categories and labels, room types and
labels, scene ids, split keys in ``stats.json``, the run name and the folder names all carry
markup (``<script>``, ``</script>``, ``<img onerror>``), template placeholders (``{{data}}``,
``${…}``), mathtext (``$x$``, ``$x^$``) and quotes. The report must build (no mathtext
failure), and in headless Chromium no dialog opens, the console stays clean and each field
shows its literal text.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from condvln.evaluation.evaluate import evaluate_run
from condvln.report.html import write_report
from condvln.vlnce import split_path

pytestmark = pytest.mark.slow

PAYLOAD = (
    "<script>alert('s')</script></script><img src=x onerror=alert(1)>{{data}}{{ title }}"
    "${alert(2)}`${3}`$x$ $x^$ \"dq\" 'sq' &amp; <!-- -->"
)
"""What every text field carries."""
FOLDER = "<script>alert(4)<img src=x onerror=alert(5)>{{data}}${alert(6)}$x^$ \"dq\" 'sq' &amp;"
"""What folder names carry (no ``/``)."""
RUN = "oracle_linear"
HOOK = """window.__dialogs = [];
for (const name of ["alert", "confirm", "prompt", "print", "open"]) {
  window[name] = (...args) => { window.__dialogs.push([name, ...args.map(String)]); };
}"""
"""Installed before any page script: records every dialog a payload would open."""


def _rewrite_gz(path: Path, edit: Any) -> None:
    doc = orjson.loads(gzip.decompress(path.read_bytes()))
    edit(doc)
    path.write_bytes(gzip.compress(orjson.dumps(doc), mtime=0))


def _scene_files(dataset: Path) -> list[Path]:
    """The CondVLN scene files of a dataset (``scenes/`` also holds habitat configs)."""
    return [p for p in sorted((dataset / "scenes").glob("*.json"))
            if json.loads(p.read_text()).get("format") == "condvln.scene"]  # fmt: skip


def _hostile_scene(path: Path) -> None:
    doc = json.loads(path.read_text())
    for room in doc["scene"]["rooms"]:
        room["room_type"] = f"{PAYLOAD} {room['room_type']}"
        room["label"] = PAYLOAD
        for obj in room["objects"]:
            obj["category"], obj["label"] = f"{PAYLOAD} {obj['category']}", PAYLOAD
    path.write_text(json.dumps(doc))


def _hostile_dataset(dataset: Path) -> None:
    def instructions(doc: dict) -> None:
        for episode in doc["episodes"]:
            text = episode["instruction"]["instruction_text"]
            episode["instruction"]["instruction_text"] = f"{PAYLOAD} {text}"

    _rewrite_gz(split_path(dataset, "val_unseen"), instructions)
    for scene in _scene_files(dataset):
        _hostile_scene(scene)
    stats = json.loads((dataset / "stats.json").read_text())
    stats["splits"] = {PAYLOAD: 3, **stats["splits"]}
    (dataset / "stats.json").write_text(json.dumps(stats))


@pytest.fixture(scope="module")
def hostile(bench: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder named :data:`FOLDER` with one hostile run, and its ``report.html``."""
    root = tmp_path_factory.mktemp("injection") / FOLDER
    shutil.copytree(bench / "dataset", root / "dataset")
    _hostile_dataset(root / "dataset")
    runs = root / "runs" / f"{FOLDER} run"
    runs.mkdir(parents=True)
    shutil.copyfile(bench / "runs" / RUN / "trajectories.jsonl", runs / "trajectories.jsonl")
    out = root / "eval" / f"{FOLDER} run"
    evaluate_run(root / "dataset", runs / "trajectories.jsonl", out, run_name=PAYLOAD)
    lines = (out / "episodes.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]
    for k, record in enumerate(records):
        record["scene_id"] = f"{PAYLOAD} {record['scene_id']}"
        if k % 2:
            record["category"], record["failure_category"] = PAYLOAD, PAYLOAD
    (out / "episodes.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    summary = write_report(root, root / "report.html")
    assert summary.rows == len(records) and summary.maps == len(records)
    return root


def test_page_holds_no_markup_from_data(hostile: Path) -> None:
    page = (hostile / "report.html").read_text()
    assert page.count("<script") == 2  # the page data and the page's own script
    assert "<img src=x" not in page and "<!-- -->" not in page
    assert page.count("</script>") == 2
    data = page.split('<script type="application/json" id="report-data">', 1)[1]
    data = orjson.loads(data.split("</script>", 1)[0])
    assert data["runs"] == [PAYLOAD]
    assert {row["scene"].split(" scenes/")[0] for row in data["rows"]} == {PAYLOAD}
    assert any(PAYLOAD in line for ep in data["episodes"] for line in ep["caption"])


@pytest.fixture(scope="module")
def page(browser: Any, hostile: Path) -> Any:
    hook = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOOK})
    try:
        browser.get((hostile / "report.html").resolve().as_uri())
        browser.execute_script("return document.readyState")
        yield browser
    finally:
        browser.execute_cdp_cmd(
            "Page.removeScriptToEvaluateOnNewDocument", {"identifier": hook["identifier"]}
        )


def _no_dialog(page: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    assert page.execute_script("return window.__dialogs") == []
    with pytest.raises(NoAlertPresentException):
        page.switch_to.alert.text  # noqa: B018  (raises unless a dialog is open)


def _errors(page: Any) -> list[dict[str, Any]]:
    return [e for e in page.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def _texts(page: Any, selector: str) -> list[str]:
    return page.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent);",
        selector,
    )


def test_no_dialog_no_console_error_and_only_our_elements(page: Any) -> None:
    _no_dialog(page)
    assert _errors(page) == []
    counts = page.execute_script(
        "return [document.scripts.length, document.images.length,"
        " document.querySelectorAll('img[src=\"x\"], [onerror]').length];"
    )
    assert counts == [2, 5, 0]


def test_every_field_shows_its_literal_text(page: Any, hostile: Path) -> None:
    title = f"CondVLN report: {FOLDER}"
    assert page.title == title and _texts(page, "header h1") == [title]
    assert _texts(page, "#runs tbody th") == [PAYLOAD]
    assert _texts(page, "#runs tbody code") == [str(hostile / "eval" / f"{FOLDER} run")]
    assert f"({PAYLOAD} 3, " in _texts(page, "#dataset-summary")[0]
    for table in ("table2", "table3"):
        assert _texts(page, f"#{table} tbody th") == [PAYLOAD]
        assert (
            page.execute_script(f"return document.querySelector('#{table} tbody tr').dataset.run")
            == PAYLOAD
        )
    assert PAYLOAD in _texts(page, "#metrics thead th")
    assert PAYLOAD in _texts(page, "#f-run option") and PAYLOAD in _texts(page, "#f-cat option")
    first, second = page.execute_script(
        "return Array.from(document.querySelectorAll('#episodes tbody tr')).slice(0, 2)"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent));"
    )
    assert first[0] == PAYLOAD and first[2].startswith(f"{PAYLOAD} scenes/")
    assert second[3] == PAYLOAD and second[6] == PAYLOAD  # category and failure columns


def test_the_map_shows_the_instruction_as_text(page: Any) -> None:
    page.execute_script("condvlnReport.openMap(0)")
    title = _texts(page, "#map-title")[0]
    caption = _texts(page, "#map-caption")[0]
    assert title.startswith(f"{PAYLOAD}: episode ")
    assert f"Instruction: {PAYLOAD} " in caption and caption.startswith(f"{PAYLOAD} · episode")
    page.find_element("id", "map-close").click()
    _no_dialog(page)
    assert _errors(page) == []


def test_viz_and_scene_render_draw_dollar_signs(hostile: Path, tmp_path: Path, cli) -> None:
    scene = _scene_files(hostile / "dataset")[0]
    result = cli(
        "scenes", "render", str(scene), "--source", "condvln", "--out", str(tmp_path / "m.png")
    )
    assert result.returncode == 0, result.stderr
    run = tmp_path / f"{FOLDER} viz"
    shutil.copytree(hostile / "runs" / f"{FOLDER} run", run)
    manifest = {"dataset": str(hostile / "dataset"), "split": "val_unseen", "agent": PAYLOAD}
    (run / "manifest.json").write_text(json.dumps(manifest))
    first = orjson.loads((run / "trajectories.jsonl").read_bytes().splitlines()[0])
    result = cli(
        "viz", str(run), "--episode", str(first["episode_id"]), "--out", str(tmp_path / "v.png")
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
