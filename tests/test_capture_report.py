"""kafkaproto capture --report: one HTML page, opened offline in a real headless Chromium (Debian's, driven by
Playwright): it renders every chart with no console error, and its numbers are the summary's."""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkaproto.capture import TopicNames, read_capture
from kafkaproto.capture.summary import Summary
from kafkaproto.cli.report import MAX_BUCKETS, Report

CAPTURES = {p.stem: p for p in sorted((Path(__file__).parent / "data" / "captures").glob("*.pcap"))}
REQUIRED = os.environ.get("KAFKAPROTO_REQUIRE_CHROMIUM") == "1"  # set by .ci/run, which installs Chromium
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def numbers(page_text):
    found = re.search(r'<script id="kafkaproto-report" type="application/json">(.*?)</script>', page_text, re.S)
    return json.loads(found.group(1).replace("<\\/", "</"))


def summary_of(*paths):
    names = TopicNames()
    summary = Summary(names)
    for path in paths:
        for ex in read_capture(path, names=names):
            summary.add(str(path), ex)
    return summary


def test_the_page_holds_the_summary_numbers(tmp_path):
    paths = [CAPTURES["java-4.3.1"], CAPTURES["aiokafka"]]
    run = subprocess.run([sys.executable, "-m", "kafkaproto", "capture", *map(str, paths), "--report",
                          str(tmp_path / "report.html")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    data = numbers((tmp_path / "report.html").read_text())
    summary = summary_of(*paths)
    by_api = {}
    for (name, _), n in summary.by_api.items():
        by_api[name] = by_api.get(name, 0) + n
    assert data["requests"] == by_api and data["exchanges"] == sum(summary.by_status.values())
    for name, rates in data["rates"].items():
        assert round(sum(rates) * data["slice_s"]) == by_api[name]
    assert data["error_total"] == sum(summary.error_codes.values()) == sum(map(sum, data["errors"].values()))
    unnamed = set()
    assert data["topics_produced"] == [list(t) for t in summary.named(summary.produced, unnamed).most_common(10)]
    assert ["java-topic", "aio-topic"] == sorted((t for t, _ in data["topics_produced"]), reverse=True)
    busiest = sorted(summary.clients.items(), key=lambda kv: -kv[1]["requests"])[:10]
    assert data["clients"] == [[client, info["requests"]] for client, info in busiest]
    assert sum(n for buckets in data["histograms"].values() for _, n in buckets) == \
        sum(h.total for h in summary.latency.values())
    assert data["problems"] == summary.problem_count


def test_slices_widen_and_memory_stays_bounded():
    """A capture far longer than MAX_BUCKETS seconds: slices twice as wide as needed, counts kept."""
    report = Report()

    class Ex:
        status, connection, client_id, response, request, partition_errors = "ok", 0, "c", None, None, ()
        api_key, api_name, api_version = 3, "Metadata", 12
        response_time_ns = None

        def __init__(self, t):
            self.request_time_ns, self.latency_ns = t, 1_000_000

    start = 1_700_000_000 * 10**9
    for second in range(0, 10_000, 3):
        report.add("x", Ex(start + second * 10**9))
    data = report.data()
    assert len(data["times"]) <= MAX_BUCKETS and data["slice_s"] >= 10_000 / MAX_BUCKETS
    assert data["requests"] == {"Metadata": len(range(0, 10_000, 3))}


@contextlib.contextmanager
def report_page(path):
    """The report page at path in Chromium, offline as it must work (no network at all, and none of Chromium's
    own background fetches), once its charts are drawn: (page, problems), the errors it met in a list."""
    if CHROMIUM is None:
        if REQUIRED:
            pytest.fail("Chromium is required (KAFKAPROTO_REQUIRE_CHROMIUM=1) but not installed")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    problems = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_context(offline=True).new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.goto(path.as_uri())
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 6",
                                   timeout=30_000)
            yield page, problems
        finally:
            browser.close()


def test_the_page_renders_in_chromium(tmp_path):
    path = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "kafkaproto", "capture", str(CAPTURES["kafkajs"]), "--report",
                          str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    with report_page(path) as (page, problems):
        charts = page.evaluate("Array.from(document.querySelectorAll('.js-plotly-plot')).map("
                               "d => d.data.map(t => [t.name, t.y.reduce((a, b) => a + (b || 0), 0)]))")
        shown = json.loads(page.evaluate("document.getElementById('kafkaproto-report').textContent"))
    assert problems == []
    assert len(charts) == 6
    rates = dict(charts[0])
    assert {name: round(total * shown["slice_s"]) for name, total in rates.items()} == shown["requests"]
    summary = summary_of(CAPTURES["kafkajs"])
    assert sum(shown["requests"].values()) == sum(summary.by_api.values())


def test_summaries_of_parts_merge_into_the_summary_of_the_whole():
    """What Spark tasks or several files give: a summary per part, merged, equals one summary over all of them."""
    paths = [CAPTURES["java-4.3.1"], CAPTURES["aiokafka"], CAPTURES["kafkajs"]]
    whole = summary_of(*paths)
    merged = summary_of(paths[0])
    for path in paths[1:]:
        merged.merge(summary_of(path))
    for field in ("by_status", "by_api", "error_codes", "produced", "fetched", "clients", "problem_count"):
        assert getattr(merged, field) == getattr(whole, field), field
    assert whole.by_api and whole.produced  # the captures hold something to sum
    assert set(merged.latency) == set(whole.latency)
    for name, hist in whole.latency.items():
        assert merged.latency[name].total == hist.total and merged.latency[name].max == hist.max
        assert merged.latency[name].percentile(0.99) == hist.percentile(0.99)
