"""A small real benchmark folder (with its report) and a headless Chromium driven by selenium."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

BENCH_ARGS = ("--scenes", "10", "--per-scene", "20", "--no-ithor", "-j", "1", "-q")
"""About 80 val_unseen episodes over 3 unseen houses, 8 runs (more rows than the report's 500-row first page): ~20 s on one core."""

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
)


@pytest.fixture(scope="session")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``condvln benchmark`` results folder (dataset, runs, eval, tables, report.html)."""
    out = tmp_path_factory.mktemp("report") / "bench"
    result = subprocess.run(
        [sys.executable, "-m", "condvln", "benchmark", "--out", str(out), *BENCH_ARGS],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Headless Chromium (Debian packages) with browser-console logging, fresh profile."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        message = "chromium / chromedriver not installed (Debian: chromium chromium-driver)"
        if os.environ.get("CONDVLN_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    session = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield session
    finally:
        session.quit()
