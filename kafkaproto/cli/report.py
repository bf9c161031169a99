"""kafkaproto capture --report report.html: the capture's traffic as one HTML page that opens offline.

    kafkaproto capture traffic.pcapng --report report.html

It shows a table per API (exchanges at each version, latency p50 / p90 / p99 / max, error codes) and the error codes
met, by name; then, over the capture's time, requests per second per API, bytes per second in and out, latency
percentiles and errors by name; then the latency distribution per API (a histogram in bins of 1, 2 and 5 times a
power of ten), the bytes produced and fetched per topic (by name where the capture names them), the busiest clients,
and the gaps. The charts are plotly's, with its JavaScript inside the page; the numbers behind them are in the page
too, as JSON (``<script id="kafkaproto-report" type="application/json">``), and they are the summary's: the same
exchanges counted the same way. Names come from the capture and may hold anything (``</script>``, ``<!--<script>``,
tags): the embedded JSON writes ``<``, ``>``, ``&`` and the line separators as \\u escapes, the charts get names as
text (plotly reads tags and entities in labels), and the tables escape them as HTML.

Time is cut into at most ``MAX_BUCKETS`` equal slices of capture time; a long capture gets wider slices (the slice
width doubles whenever there would be more), so memory stays bounded whatever the capture's length.
"""

import bisect
import html
import json
from collections import Counter, defaultdict

from .. import errors as error_codes
from ..capture.summary import LatencyHistogram, Summary, answered_errors

MAX_BUCKETS = 512
PERCENTILES = (0.5, 0.9, 0.99)
# The latency histogram's bin edges in ms: 1, 2 and 5 times each power of ten from 1 µs to about three hours, so
# that bars are as wide on the page for fast APIs as for slow ones and each edge is a round number.
LATENCY_EDGES_MS = [0.0] + [k * 10.0 ** e for e in range(-3, 7) for k in (1, 2, 5)] + [1e7]


class _Slice:
    __slots__ = ("requests", "errors", "latency", "bytes_in", "bytes_out")

    def __init__(self):
        self.requests = Counter()  # api -> exchanges
        self.errors = Counter()  # (api, code) -> error codes met (top level and per partition, as the summary counts)
        self.latency = defaultdict(LatencyHistogram)
        self.bytes_in = 0  # request frames' sizes, clients to brokers
        self.bytes_out = 0  # response frames' sizes, brokers to clients

    def merge(self, other):
        self.requests.update(other.requests)
        self.errors.update(other.errors)
        for name, histogram in other.latency.items():
            self.latency[name].merge(histogram)
        self.bytes_in += other.bytes_in
        self.bytes_out += other.bytes_out


class Report:
    """Gathers a capture's exchanges (``add``, as Summary.add) and writes the page (``write``)."""

    def __init__(self, summary=None):
        self.summary = summary if summary is not None else Summary()
        self.width_ns = 10**9  # a slice's width: one second, doubled as the capture goes on
        self.start_ns = None
        self.slices = {}  # slice number -> _Slice

    def add(self, path, ex, summarised=False):
        """Count an exchange (and give it to the summary, unless it has it already)."""
        if not summarised:
            self.summary.add(path, ex)
        # Each frame's bytes count at the time it crossed the wire, whatever became of the exchange.
        if ex.request_size is not None and ex.request_time_ns is not None:
            self._slice(ex.request_time_ns).bytes_in += ex.request_size
        if ex.response_size is not None and ex.response_time_ns is not None:
            self._slice(ex.response_time_ns).bytes_out += ex.response_size
        stamp = ex.request_time_ns or ex.response_time_ns
        if stamp is None or ex.api_key is None:
            return
        name = ex.api_name or f"api key {ex.api_key}"
        piece = self._slice(stamp)
        piece.requests[name] += 1
        if ex.latency_ns is not None:
            piece.latency[name].add(ex.latency_ns)
        for code in answered_errors(ex):
            piece.errors[(name, code)] += 1

    def _slice(self, stamp):
        """The slice a time falls in, made when needed (slices widen, or start earlier, to take it)."""
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
        return piece

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
        met = Counter()
        for piece in pieces:
            met.update(piece.errors)
        errors_over_time = [{"api": api, "code": code, "name": error_codes.by_code(code).name,
                             "counts": [p.errors[(api, code)] for p in pieces]} for (api, code), _ in met.most_common()]
        latency = {}
        for name in apis:
            series = {}
            for q in PERCENTILES:
                series[f"p{round(q * 100)}"] = [(p.latency[name].percentile(q) / 1e6 if name in p.latency and
                                                 p.latency[name].total else None) for p in pieces]
            latency[name] = series
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
                "times": times, "requests": requests, "rates": rates,
                "bytes_per_s": {"requests": [p.bytes_in / seconds for p in pieces],
                                "responses": [p.bytes_out / seconds for p in pieces]},
                "bytes": {"requests": sum(p.bytes_in for p in pieces), "responses": sum(p.bytes_out for p in pieces)},
                "latency": latency, "errors": errors_over_time,
                "error_codes": [{"api": api, "code": code, "name": error_codes.by_code(code).name, "count": n}
                                for (api, code), n in summary.error_codes.most_common()],
                "error_total": sum(summary.error_codes.values()),
                "apis": _per_api(summary), "latency_bins": _latency_bins(summary),
                "topics_produced": produced, "topics_fetched": fetched, "topics_unnamed": len(unnamed),
                "clients": clients, "problems": summary.problem_count, "gaps": gaps,
                "exchanges": sum(summary.by_status.values())}

    # ---- the page ----

    def write(self, path, title="Kafka traffic", top=10):
        import plotly.graph_objects as go
        import plotly.io as pio

        data = self.data(top)
        when = [_iso(t) for t in data["times"]]
        colours = _colours([row["api"] for row in data["apis"]] + list(data["rates"]))
        sections = []  # (chart id, title, figure or None when there is nothing to draw, what stands instead)
        markers = "lines+markers" if len(when) <= 120 else "lines"  # a lone point in a line is otherwise unseen

        def figure(chart_id, title_text, traces, y_title, x_title="capture time (UTC)", nothing="", **layout):
            if not traces:
                sections.append((chart_id, title_text, None, nothing))
                return None
            fig = go.Figure(traces)
            fig.update_layout(title=title_text, xaxis_title=x_title, yaxis_title=y_title, height=400,
                              margin={"l": 70, "r": 20, "t": 50, "b": 60}, template="plotly_white", **layout)
            sections.append((chart_id, title_text, fig, ""))
            return fig

        figure("requests-per-second", "Requests per second, per API",
               [go.Scatter(x=when, y=rates, name=_label(name), mode=markers, line={"color": colours[name]})
                for name, rates in data["rates"].items()], "requests / s", nothing="No requests in the capture.")
        in_out = data["bytes_per_s"]
        figure("bytes-per-second", "Bytes per second (Kafka frames: requests in from clients, responses out to them)",
               [go.Scatter(x=when, y=in_out["requests"], name="in: requests", mode=markers),
                go.Scatter(x=when, y=in_out["responses"], name="out: responses", mode=markers)]
               if data["bytes"]["requests"] or data["bytes"]["responses"] else [], "bytes / s",
               nothing="No Kafka frames in the capture.")
        figure("latency-over-time", "Latency over time (p50 solid, p90 dashed, p99 dotted)",
               [go.Scatter(x=when, y=series, name=_label(f"{name} {p}"), mode=markers, legendgroup=_label(name),
                           line={"color": colours[name], "dash": dash}, marker={"size": 5})
                for name, by_p in data["latency"].items()
                for (p, series), dash in zip(by_p.items(), ("solid", "dash", "dot"))
                if any(v is not None for v in series)],
               "ms (log scale)", nothing="No exchange was answered.", yaxis={"type": "log"})
        figure("errors-over-time", "Errors over time (error codes in answers, top level and per partition)",
               [go.Bar(x=when, y=e["counts"], name=_label(f"{e['api']}: {e['name']} ({e['code']})"))
                for e in data["errors"]], "errors", nothing="No answer holds an error code.", barmode="stack")
        bins = data["latency_bins"]
        figure("latency-histogram", "Latency per API (exchanges in each latency range)",
               [go.Bar(x=bins["labels"], y=counts, name=_label(name), marker={"color": colours[name]})
                for name, counts in bins["counts"].items()], "exchanges", x_title="latency",
               nothing="No exchange was answered.", barmode="stack", bargap=0.15,
               xaxis={"type": "category", "categoryorder": "array", "categoryarray": bins["labels"]})
        produced, fetched = dict(data["topics_produced"]), dict(data["topics_fetched"])
        topics = sorted(produced.keys() | fetched.keys(), key=lambda t: (-produced.get(t, 0) - fetched.get(t, 0), t))
        figure("topics", "Record bytes per topic (produced and fetched, the busiest)",
               [go.Bar(x=[_label(t) for t in topics], y=[side.get(t, 0) for t in topics], name=name)
                for name, side in (("produced", produced), ("fetched", fetched))] if topics else [], "bytes",
               x_title="topic", nothing="No records produced or fetched.", barmode="group")
        figure("clients", "Busiest clients (requests)",
               [go.Bar(x=[_label(c) for c, _ in data["clients"]], y=[n for _, n in data["clients"]], name="requests")]
               if data["clients"] else [], "requests", x_title="client id", nothing="No client in the capture.")
        charts, first = [], True
        for chart_id, title_text, fig, nothing in sections:
            if fig is None:
                charts.append(f'<h2>{html.escape(title_text)}</h2><p class="nothing" id="{chart_id}">{nothing}</p>')
                continue
            charts.append('<div class="chart">' + pio.to_html(fig, full_html=False, include_plotlyjs=first,
                                                               div_id=chart_id, config={"displaylogo": False})
                          + "</div>")
            first = False
        gaps = "".join(f"<tr><td>{html.escape(str(g['file']))}</td><td>{html.escape(g['status'])}</td>"
                       f"<td>{html.escape(str(g['client'] or 'the file itself'))}</td><td>{g['packet'] or ''}</td>"
                       f"<td>{html.escape(g['error'] or '')}</td></tr>" for g in data["gaps"])
        shown = "" if data["problems"] <= len(data["gaps"]) else f" (the first {len(data['gaps'])} shown)"
        numbers = script_json(data)
        page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse;margin-bottom:1em}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:90%;text-align:left}}td.n{{text-align:right}}
.swatch{{display:inline-block;width:.8em;height:.8em;margin-right:.4em}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p>{data['exchanges']:,} exchanges; {sum(data['requests'].values()):,} requests over
{len(data['times'])} slices of {data['slice_s']:g} s; {data['bytes']['requests']:,} bytes in requests and
{data['bytes']['responses']:,} in responses; {data['error_total']:,} error codes;
{data['problems']:,} exchanges not ok.{_unnamed(data['topics_unnamed'])}</p>
<h2>Per API: versions, latency, errors</h2>
{_api_table(data['apis'], colours)}
<h2>Error codes in answers (top level and per partition)</h2>
{_error_table(data['error_codes'])}
{''.join(charts)}
<h2>Gaps and other exchanges not ok ({data['problems']:,}{shown})</h2>
<table id="gaps"><tr><th>file</th><th>status</th><th>connection</th><th>packet</th><th>what</th></tr>{gaps}</table>
<script id="kafkaproto-report" type="application/json">{numbers}</script>
</body></html>
"""
        # A file name that is not UTF-8 (its bytes kept as surrogates) is written as its escapes, as text output does.
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(page)
        return data


def _per_api(summary):
    """A row per API, busiest first: exchanges at each version, latency percentiles (ms), error codes met."""
    versions = defaultdict(Counter)
    for (name, version), n in summary.by_api.items():
        versions[name][version] += n
    met = Counter()
    for (name, _), n in summary.error_codes.items():
        met[name] += n
    rows = []
    for name in sorted(versions.keys() | summary.latency.keys(), key=lambda n: (-sum(versions[n].values()), n)):
        row = {"api": name, "exchanges": sum(versions[name].values()),
               "versions": sorted(versions[name].items(), key=lambda vn: (vn[0] is None, vn[0] or 0)),
               "answered": 0, "error_codes": met[name]}
        histogram = summary.latency.get(name)
        if histogram is not None and histogram.total:
            row["answered"] = histogram.total
            row.update({f"p{round(q * 100)}_ms": histogram.percentile(q) / 1e6 for q in PERCENTILES})
            row["max_ms"] = histogram.max / 1e6
        rows.append(row)
    return rows


def _latency_bins(summary):
    """Each API's latencies counted in LATENCY_EDGES_MS's bins, from the lowest bin any of them falls in to the
    highest (the summary's histograms have buckets 2% wide: each goes whole into the bin its middle falls in)."""
    counts = {}
    for name, histogram in sorted(summary.latency.items(), key=lambda kv: -kv[1].total):
        row = [0] * (len(LATENCY_EDGES_MS) - 1)
        for ns, n in histogram.buckets():
            row[min(max(bisect.bisect_right(LATENCY_EDGES_MS, ns / 1e6) - 1, 0), len(row) - 1)] += n
        if any(row):
            counts[name] = row
    used = [i for row in counts.values() for i, n in enumerate(row) if n]
    if not used:
        return {"edges_ms": [], "labels": [], "counts": {}}
    low, high = min(used), max(used) + 1
    return {"edges_ms": LATENCY_EDGES_MS[low:high + 1],
            "labels": [f"{_duration(LATENCY_EDGES_MS[i])}–{_duration(LATENCY_EDGES_MS[i + 1])}"
                       for i in range(low, high)],
            "counts": {name: row[low:high] for name, row in counts.items()}}


def _duration(ms):
    if ms >= 1000:
        return f"{ms / 1000:g} s"
    return f"{ms:g} ms" if ms >= 1 or ms == 0 else f"{ms * 1000:g} µs"


def _api_table(rows, colours):
    if not rows:
        return '<p id="apis">No Kafka requests in the capture.</p>'
    head = ("<tr><th>API</th><th>exchanges</th><th>versions (exchanges at each)</th><th>answered</th>"
            "<th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>max ms</th><th>error codes</th></tr>")
    body = []
    for row in rows:
        mix = ", ".join(f"v{v if v is not None else '?'} × {n:,}" for v, n in row["versions"])
        latency = "".join(f'<td class="n">{row[key]:.3f}</td>' if key in row else "<td>-</td>"
                          for key in ("p50_ms", "p90_ms", "p99_ms", "max_ms"))
        swatch = f'<span class="swatch" style="background:{colours[row["api"]]}"></span>'
        body.append(f'<tr><td>{swatch}{html.escape(row["api"])}</td><td class="n">{row["exchanges"]:,}</td>'
                    f'<td class="versions">{mix}</td><td class="n">{row["answered"]:,}</td>{latency}'
                    f'<td class="n">{row["error_codes"]:,}</td></tr>')
    return f'<table id="apis">{head}{"".join(body)}</table>'


def _error_table(rows):
    if not rows:
        return '<p id="error-codes">No answer holds an error code.</p>'
    body = "".join(f'<tr><td>{html.escape(str(r["api"] or "-"))}</td><td>{html.escape(r["name"])}</td>'
                   f'<td class="n">{r["code"]}</td><td class="n">{r["count"]:,}</td></tr>' for r in rows)
    return f'<table id="error-codes"><tr><th>API</th><th>error</th><th>code</th><th>count</th></tr>{body}</table>'


def _colours(names):
    """A colour per API, the same in every chart and table that shows it."""
    from plotly.colors import qualitative
    palette = qualitative.Plotly + qualitative.D3
    out = {}
    for name in names:
        if name not in out:
            out[name] = palette[len(out) % len(palette)]
    return out


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
