"""Benchmark the HTML report: build time, file size and load time in headless Chromium.

Targets (issue #21): the report of the default ``condvln benchmark`` is at most 20 MB and opens
in at most 3 s in the headless browser. The script (re)writes ``report.html`` of a results
folder, then opens it ``--loads`` times in a fresh headless Chromium (Debian's ``chromium`` +
``chromium-driver``) and prints the page's navigation timing (``loadEventEnd``: parse, inline
script done, images decoded) and the wall time of ``driver.get``, then the time to open maps.

Run: ``PYTHONPATH=src python benchmarks/bench_report.py [results/benchmark] [--loads 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from condvln.report.html import write_report

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
)


def _driver(profile: str) -> Any:
    """A headless Chromium session with a fresh profile (selenium: the `test` extra)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def main() -> None:
    """Build the report, then time its loads and map openings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results/benchmark", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="default: RESULTS/report.html")
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--maps", type=int, default=20)
    args = parser.parse_args()
    out = args.out or args.results / "report.html"
    started = time.perf_counter()
    summary = write_report(args.results, out)
    build = time.perf_counter() - started
    print(f"report: {summary.size / 1e6:.2f} MB, {summary.rows} rows, {summary.maps} maps, "
          f"{summary.scenes} scenes, built in {build:.1f} s (target size <= 20 MB)")  # fmt: skip
    loads, walls = [], []
    for _ in range(args.loads):
        with tempfile.TemporaryDirectory() as profile:
            driver = _driver(profile)
            try:
                begin = time.perf_counter()
                driver.get(out.resolve().as_uri())
                walls.append(time.perf_counter() - begin)
                loads.append(driver.execute_script(
                    "return performance.getEntriesByType('navigation')[0].loadEventEnd"
                ) / 1000)  # fmt: skip
                errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
                step = max(summary.rows // max(args.maps, 1), 1)
                begin = time.perf_counter()
                for i in range(0, summary.rows, step)[: args.maps]:
                    driver.execute_script(f"condvlnReport.openMap({i})")
                maps = (time.perf_counter() - begin) / max(min(args.maps, summary.rows), 1)
            finally:
                driver.quit()
    print(f"load (loadEventEnd): median {statistics.median(loads):.2f} s, max {max(loads):.2f} s "
          f"over {len(loads)} fresh browsers (target <= 3 s); driver.get wall median "
          f"{statistics.median(walls):.2f} s")  # fmt: skip
    print(f"map opening: {1000 * maps:.0f} ms per map; console errors: {len(errors)}")


if __name__ == "__main__":
    main()
