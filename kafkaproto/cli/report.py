"""kafkaproto capture --report report.html: the capture's traffic as one HTML page that opens offline.

    kafkaproto capture traffic.pcapng --report report.html

It shows, over the capture's time, requests per second per API, latency percentiles (p50, p90, p99) and errors,
then a latency histogram per API, the busiest topics (by name where the capture names them) and clients, and the
gaps. The charts are plotly's, with its JavaScript inside the page; the numbers behind them are in the page too, as
JSON (``<script id="kafkaproto-report" type="application/json">``), and they are the summary's: the same exchanges
counted the same way. Names come from the capture and may hold anything (``</script>``, ``<!--<script>``, tags):
the embedded JSON writes ``<``, ``>``, ``&`` and the line separators as \\u escapes, the charts get names as text
(plotly reads tags and entities in labels), and the tables escape them as HTML.

Time is cut into at most ``MAX_BUCKETS`` equal slices of capture time; a long capture gets wider slices (the slice
width doubles whenever there would be more), so memory stays bounded whatever the capture's length.
"""

import html
import json
from collections import Counter, defaultdict

from ..capture.summary import LatencyHistogram, Summary

MAX_BUCKETS = 512
PERCENTILES = (0.5, 0.9, 0.99)


class _Slice:
    __slots__ = ("requests", "errors", "latency")

    def __init__(self):
        self.requests = Counter()  # api -> exchanges
        self.errors = Counter()  # api -> error codes met (top level and per partition, as the summary counts)
        self.latency = defaultdict(LatencyHistogram)

    def merge(self, other):
        self.requests.update(other.requests)
        self.errors.update(other.errors)
        for name, histogram in other.latency.items():
            self.latency[name].merge(histogram)


class Report:
    """Gathers a capture's exchanges (``add``, as Summary.add) and writes the page (``write``)."""

    def __init__(self, summary=None):
        self.summary = summary if summary is not None else Summary()
        self.width_ns = 10**9  # a slice's width: one second, doubled as the capture goes on
        self.start_ns = None
        self.slices = {}  # slice number -> _Slice
        self.latency = defaultdict(LatencyHistogram)  # api -> every latency (the histograms)

    def add(self, path, ex, summarised=False):
        """Count an exchange (and give it to the summary, unless it has it already)."""
        if not summarised:
            self.summary.add(path, ex)
        stamp = ex.request_time_ns or ex.response_time_ns
        if stamp is None or ex.api_key is None:
            return
        name = ex.api_name or f"api key {ex.api_key}"
        if self.start_ns is None:
            self.start_ns = stamp - stamp % 10**9
        if stamp < self.start_ns:  # a packet stamped before the first: the slices start there now
            self._rebase(stamp - stamp % 10**9)
        index = (stamp - self.start_ns) // self.width_ns
        while index >= MAX_BUCKETS:
            self._widen()
            index = (stamp - self.start_ns) // self.width_ns
        piece = self.slices.get(index)
        if piece is None:
            piece = self.slices[index] = _Slice()
        piece.requests[name] += 1
        if ex.latency_ns is not None:
            piece.latency[name].add(ex.latency_ns)
            self.latency[name].add(ex.latency_ns)
        response = ex.response
        if response is not None:
            count = (1 if getattr(response, "error_code", None) else 0) + len(ex.partition_errors)
            if count:
                piece.errors[name] += count

    def _widen(self):
        """Twice as wide slices, each made of two."""
        merged = {}
        for index, piece in self.slices.items():
            target = merged.get(index // 2)
            if target is None:
                merged[index // 2] = piece
            else:
                target.merge(piece)
        self.slices = merged
        self.width_ns *= 2

    def _rebase(self, start_ns):
        shift = -(-(self.start_ns - start_ns) // self.width_ns)  # whole slices earlier
        self.slices = {index + shift: piece for index, piece in self.slices.items()}
        self.start_ns -= shift * self.width_ns
        while self.slices and max(self.slices) >= MAX_BUCKETS:
            self._widen()

    # ---- the numbers ----

    def data(self, top=10):
        """What the page shows, as plain values (also written into the page as JSON)."""
        summary = self.summary
        seconds = self.width_ns / 1e9
        times = [(self.start_ns + i * self.width_ns) / 1e9 for i in range(max(self.slices, default=-1) + 1)]
        apis = sorted({name for piece in self.slices.values() for name in piece.requests},
                      key=lambda n: -sum(p.requests[n] for p in self.slices.values()))
        empty = _Slice()
        pieces = [self.slices.get(i, empty) for i in range(len(times))]
        rates = {name: [p.requests[name] / seconds for p in pieces] for name in apis}
        errors_over_time = {name: [p.errors[name] for p in pieces] for name in apis
                            if any(p.errors[name] for p in pieces)}
        latency = {}
        for name in apis:
            series = {}
            for q in PERCENTILES:
                series[f"p{round(q * 100)}"] = [(p.latency[name].percentile(q) / 1e6 if name in p.latency and
                                                 p.latency[name].total else None) for p in pieces]
            latency[name] = series
        histograms = {name: [(ns / 1e6, n) for ns, n in histogram.buckets()]
                      for name, histogram in self.latency.items()}
        unnamed = set()
        produced = summary.named(summary.produced, unnamed).most_common(top)
        fetched = summary.named(summary.fetched, unnamed).most_common(top)
        clients = sorted(((c if c is not None else "-", info["requests"]) for c, info in summary.clients.items()),
                         key=lambda item: -item[1])[:top]
        gaps = [{"file": path, "status": ex.status, "error": ex.error, "client": f"{ex.client_address}:{ex.client_port}"
                 if ex.connection is not None else None, "packet": ex.response_packet or ex.request_packet}
                for path, ex in summary.problems]
        requests = {name: sum(p.requests[name] for p in self.slices.values()) for name in apis}
        return {"start_s": self.start_ns / 1e9 if self.start_ns is not None else None, "slice_s": seconds,
                "times": times, "requests": requests,
                "rates": rates, "latency": latency, "errors": errors_over_time,
                "error_total": sum(summary.error_codes.values()), "histograms": histograms,
                "topics_produced": produced, "topics_fetched": fetched, "topics_unnamed": len(unnamed),
                "clients": clients, "problems": summary.problem_count, "gaps": gaps,
                "exchanges": sum(summary.by_status.values())}

    # ---- the page ----

    def write(self, path, title="Kafka traffic", top=10):
        import plotly.graph_objects as go
        import plotly.io as pio

        data = self.data(top)
        when = [_iso(t) for t in data["times"]]
        figures = []

        def figure(title_text, traces, y_title, kind="scatter", x_title="capture time (UTC)"):
            fig = go.Figure(traces)
            fig.update_layout(title=title_text, xaxis_title=x_title, yaxis_title=y_title, height=380,
                              margin={"l": 60, "r": 20, "t": 50, "b": 50}, template="plotly_white")
            figures.append(fig)

        figure("Requests per second, per API", [go.Scatter(x=when, y=rates, name=_label(name), mode="lines")
                                                 for name, rates in data["rates"].items()], "requests / s")
        figure("Latency over time (p50, p90, p99)",
               [go.Scatter(x=when, y=series, name=_label(f"{name} {p}"), mode="lines")
                for name, by_p in data["latency"].items() for p, series in by_p.items()], "ms")
        figure("Errors over time (error codes in answers, top level and per partition)",
               [go.Bar(x=when, y=counts, name=_label(name)) for name, counts in data["errors"].items()], "errors")
        figure("Latency per API", [go.Bar(x=[ms for ms, _ in buckets], y=[n for _, n in buckets], name=_label(name))
                                   for name, buckets in data["histograms"].items()], "exchanges",
               x_title="latency (ms, log scale)")
        figures[-1].update_xaxes(type="log")
        figure("Busiest topics (record bytes)",
               [go.Bar(x=[_label(t) for t, _ in data["topics_produced"]], y=[n for _, n in data["topics_produced"]],
                       name="produced"),
                go.Bar(x=[_label(t) for t, _ in data["topics_fetched"]], y=[n for _, n in data["topics_fetched"]],
                       name="fetched")], "bytes", x_title="topic")
        figure("Busiest clients (requests)", [go.Bar(x=[_label(c) for c, _ in data["clients"]],
                                                     y=[n for _, n in data["clients"]], name="requests")],
               "requests", x_title="client id")
        charts = [pio.to_html(fig, full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False})
                  for i, fig in enumerate(figures)]
        gaps = "".join(f"<tr><td>{html.escape(str(g['file']))}</td><td>{html.escape(g['status'])}</td>"
                       f"<td>{html.escape(str(g['client'] or 'the file itself'))}</td><td>{g['packet'] or ''}</td>"
                       f"<td>{html.escape(g['error'] or '')}</td></tr>" for g in data["gaps"])
        shown = "" if data["problems"] <= len(data["gaps"]) else f" (the first {len(data['gaps'])} shown)"
        numbers = script_json(data)
        page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:90%;text-align:left}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p>{data['exchanges']:,} exchanges; {sum(data['requests'].values()):,} requests over
{len(data['times'])} slices of {data['slice_s']:g} s; {data['error_total']:,} error codes;
{data['problems']:,} exchanges not ok.{_unnamed(data['topics_unnamed'])}</p>
{''.join(f'<div class="chart">{chart}</div>' for chart in charts)}
<h2>Gaps and other exchanges not ok ({data['problems']:,}{shown})</h2>
<table><tr><th>file</th><th>status</th><th>connection</th><th>packet</th><th>what</th></tr>{gaps}</table>
<script id="kafkaproto-report" type="application/json">{numbers}</script>
</body></html>
"""
        # A file name that is not UTF-8 (its bytes kept as surrogates) is written as its escapes, as text output does.
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(page)
        return data


# What could end a script element or start a comment in it (<, >), an entity (&), or a line in older JavaScript
# (U+2028, U+2029; json.dumps writes them as escapes already, being ASCII-only): each as its JSON \u escape, which
# reads back as the same character. None of them can stand outside a JSON string.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                              "\u2029": "\\u2029"})


def script_json(value):
    """value as JSON that can stand inside a <script> element whatever its strings hold."""
    return json.dumps(value, separators=(",", ":")).translate(_SCRIPT_SAFE)


def _label(text):
    """A name as plotly shows it exactly: plotly reads a few HTML tags (<b>, <br>, <a>) and entities in labels, so
    the name's own <, > and & go in as entities."""
    return html.escape(str(text), quote=False)


def _iso(seconds):
    import datetime
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def _unnamed(count):
    return f" {count} topic ids were named by nothing in the capture." if count else ""


__all__ = ["MAX_BUCKETS", "Report", "script_json"]
