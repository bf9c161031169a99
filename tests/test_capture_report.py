"""kafkaproto capture --report: one HTML page, opened offline in a real headless Chromium (Debian's, driven by
Playwright): it renders every chart with no console error, each chart draws a visible mark for each of its numbers,
and its numbers, error names and version mix are the summary's."""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from kafkaproto import errors
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
    assert data["error_total"] == sum(summary.error_codes.values()) == sum(sum(e["counts"]) for e in data["errors"])
    unnamed = set()
    assert data["topics_produced"] == [list(t) for t in summary.named(summary.produced, unnamed).most_common(10)]
    assert ["java-topic", "aio-topic"] == sorted((t for t, _ in data["topics_produced"]), reverse=True)
    busiest = sorted(summary.clients.items(), key=lambda kv: -kv[1]["requests"])[:10]
    assert data["clients"] == [[client, info["requests"]] for client, info in busiest]
    bins = data["latency_bins"]
    assert {name: sum(counts) for name, counts in bins["counts"].items()} == \
        {name: h.total for name, h in summary.latency.items()}
    assert len(bins["labels"]) == len(bins["edges_ms"]) - 1 == len(next(iter(bins["counts"].values())))
    assert data["problems"] == summary.problem_count
    assert [(e["api"], e["code"], e["name"], e["count"]) for e in data["error_codes"]] == \
        [(api, code, errors.by_code(code).name, n) for (api, code), n in summary.error_codes.most_common()]
    assert {"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"} <= {e["name"] for e in data["errors"]}
    assert {(row["api"], version): n for row in data["apis"] for version, n in row["versions"]} == summary.by_api
    sizes = [(ex.request_size or 0, ex.response_size or 0) for path in paths for ex in read_capture(path)]
    assert data["bytes"] == {"requests": sum(r for r, _ in sizes), "responses": sum(r for _, r in sizes)}
    for side, per_second in data["bytes_per_s"].items():
        assert round(sum(per_second) * data["slice_s"]) == data["bytes"][side] > 0


def test_slices_widen_and_memory_stays_bounded():
    """A capture far longer than MAX_BUCKETS seconds: slices twice as wide as needed, counts kept."""
    report = Report()

    class Ex:
        status, connection, client_id, response, request, partition_errors = "ok", 0, "c", None, None, ()
        api_key, api_name, api_version = 3, "Metadata", 12
        response_time_ns = response_size = None
        request_size = 100

        def __init__(self, t):
            self.request_time_ns, self.latency_ns = t, 1_000_000

    start = 1_700_000_000 * 10**9
    for second in range(0, 10_000, 3):
        report.add("x", Ex(start + second * 10**9))
    data = report.data()
    assert len(data["times"]) <= MAX_BUCKETS and data["slice_s"] >= 10_000 / MAX_BUCKETS
    assert data["requests"] == {"Metadata": len(range(0, 10_000, 3))}
    assert data["bytes"] == {"requests": 100 * len(range(0, 10_000, 3)), "responses": 0}
    assert len(data["bytes_per_s"]["requests"]) == len(data["times"])


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
            page.wait_for_function("(() => { const charts = document.querySelectorAll('.plotly-graph-div');"
                                   " return charts.length > 0 && Array.from(charts).every("
                                   "d => d.querySelector('.main-svg')); })()", timeout=30_000)
            yield page, problems
        finally:
            browser.close()


# Each chart's marks as drawn: bars (their on-screen width and height), line paths (the size of those with a
# non-empty d) and markers; and the marks its data asks for: a bar for each non-zero count, a marker for each point.
DRAWN = """Array.from(document.querySelectorAll('.plotly-graph-div')).map(d => {
  const size = e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
  return {id: d.id,
    bars: Array.from(d.querySelectorAll('.barlayer .point path')).map(size),
    lines: Array.from(d.querySelectorAll('.scatterlayer path.js-line'))
      .filter(p => (p.getAttribute('d') || '').length > 2).map(size),
    markers: Array.from(d.querySelectorAll('.scatterlayer .point')).map(size),
    bar_values: d.data.filter(t => t.type === 'bar').map(t => t.y.filter(v => v).length).reduce((a, b) => a + b, 0),
    points: d.data.filter(t => t.type !== 'bar').map(t => t.y.filter(v => v !== null).length)
      .reduce((a, b) => a + b, 0),
    legend: Array.from(d.querySelectorAll('.legendtext')).map(t => t.textContent)};
})"""
TABLE = """id => Array.from(document.querySelectorAll('#' + id + ' tr')).slice(1).map(
  r => Array.from(r.cells).map(c => c.textContent))"""


@pytest.mark.parametrize("capture", ["kafkajs", "java-3.9.2"])  # both have error codes; Java's, two versions of an API
def test_every_chart_draws_its_data_in_chromium(tmp_path, capture):
    path = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "kafkaproto", "capture", str(CAPTURES[capture]), "--report",
                          str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    with report_page(path) as (page, problems):
        drawn = {chart.pop("id"): chart for chart in page.evaluate(DRAWN)}
        rates = page.evaluate("document.getElementById('requests-per-second').data.map("
                              "t => [t.name, t.y.reduce((a, b) => a + b, 0)])")
        apis, error_rows = page.evaluate(TABLE, "apis"), page.evaluate(TABLE, "error-codes")
        shown = json.loads(page.evaluate("document.getElementById('kafkaproto-report').textContent"))
    assert problems == []
    assert list(drawn) == ["requests-per-second", "bytes-per-second", "latency-over-time", "errors-over-time",
                           "latency-histogram", "topics", "clients"]
    for chart_id, chart in drawn.items():
        # Bars at least 2 pixels wide (not hairlines) and a pixel high, one for every non-zero count.
        assert sum(w >= 2 and h >= 1 for w, h in chart["bars"]) == chart["bar_values"], chart_id
        assert sum(w > 0 and h > 0 for w, h in chart["markers"]) == chart["points"], chart_id
        assert chart["bar_values"] + chart["points"] > 0, chart_id
        if chart["points"]:
            assert any(w + h > 0 for w, h in chart["lines"]), chart_id
    assert {name: round(total * shown["slice_s"]) for name, total in rates} == shown["requests"]

    summary = summary_of(CAPTURES[capture])
    assert sum(shown["requests"].values()) == sum(summary.by_api.values())
    # The error codes by name, in the table and in the chart's legend, are the summary's.
    assert summary.error_codes
    assert error_rows == [[api, errors.by_code(code).name, str(code), f"{n:,}"]
                          for (api, code), n in summary.error_codes.most_common()]
    assert set(drawn["errors-over-time"]["legend"]) == \
        {f"{api}: {errors.by_code(code).name} ({code})" for api, code in summary.error_codes}
    # The table per API: the summary's version mix, latency percentiles (as its text prints them) and error codes.
    totals = Counter()
    for (name, _), n in summary.by_api.items():
        totals[name] += n
    assert [(row[0], int(row[1].replace(",", ""))) for row in apis] == \
        sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))  # busiest first
    mix = {}
    for api, _, versions, *_ in apis:
        for version, n in re.findall(r"v(\d+) × ([\d,]+)", versions):
            mix[(api, int(version))] = int(n.replace(",", ""))
    assert mix == summary.by_api
    for api, _, _, answered, *latency, error_count in apis:
        histogram = summary.latency[api]
        assert int(answered) == histogram.total
        assert latency == [f"{histogram.percentile(q) / 1e6:.3f}" for q in (0.5, 0.9, 0.99)] + \
            [f"{histogram.max / 1e6:.3f}"]
        assert int(error_count) == sum(n for (name, _), n in summary.error_codes.items() if name == api)
    if capture == "java-3.9.2":
        assert mix[("AddPartitionsToTxn", 3)] and mix[("AddPartitionsToTxn", 5)]


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
