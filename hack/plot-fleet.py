#!/usr/bin/env python3
"""Draw the fleet curve (docs/benchmarks.md "The fleet curve") from lab reports.

    hack/plot-fleet.py r100.json r250.json ... > docs/fleet-curve.svg

Each report is one `lab --report` file. Three panels share the x axis (clusters in the run):
the time until every cluster was installed, management API requests per host (ours and every
client's), and our two managers' peak memory together. A markdown table of the same points
goes to stderr, so the figures in the docs and the picture come from one read of the reports.
Only the Python standard library: the plot is redrawn on any machine the lab runs on.
"""

import json
import sys

OURS = ("controlplane-provider", "bootstrap-provider")
WIDTH, PANEL_HEIGHT, MARGIN_LEFT, MARGIN_RIGHT, GAP = 720, 190, 70, 190, 50


def point(path):
    """The figures one report gives the curve."""
    with open(path) as f:
        report = json.load(f)
    requests = report["api_requests"]
    ours = sum(c["per_host"] for c in requests["by_client"] if c["name"].startswith(OURS))
    return {
        "report": path,
        "clusters": len(report["clusters"]),
        "hosts": requests["hosts"],
        "installed_s": report.get("all_installed_seconds"),
        "ours_per_host": round(ours, 1),
        "all_per_host": requests["management"]["per_host"],
        "conflicts": requests["management"]["by_code"].get("409", 0),
        "memory_mib": report["memory"]["peak_sum_mib"],
    }


def nice_max(value):
    """The smallest 1, 2 or 5 times a power of ten at or above the value: a round top for an axis."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if value <= m * step:
                return m * step
        step *= 10


def panel(top, title, unit, series, target, xs, x_max):
    """One panel: its axes, gridlines, a line per series (name, colour, values) and the issue's
    target for it as a dashed line (label, value), if it has one."""
    values = [v for _, _, vs in series for v in vs if v is not None] + ([target[1]] if target else [])
    y_max = nice_max(max(values) * 1.1 if values else 1)
    left, right = MARGIN_LEFT, WIDTH - MARGIN_RIGHT
    bottom = top + PANEL_HEIGHT

    def x_of(x):
        return left + (right - left) * x / x_max

    def y_of(y):
        return bottom - PANEL_HEIGHT * y / y_max

    out = [f'<text x="{left}" y="{top - 8}" font-weight="bold">{title}</text>']
    for i in range(5):
        y = y_max * i / 4
        out.append(f'<line x1="{left}" y1="{y_of(y):.1f}" x2="{right}" y2="{y_of(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y_of(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
    out.append(f'<text x="{left - 50}" y="{top + PANEL_HEIGHT / 2}" transform="rotate(-90 {left - 50} {top + PANEL_HEIGHT / 2})" text-anchor="middle">{unit}</text>')
    out.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#000"/>')
    for x in xs:
        out.append(f'<text x="{x_of(x):.1f}" y="{bottom + 16}" text-anchor="middle">{x}</text>')
    if target:
        label, value = target
        out.append(f'<line x1="{left}" y1="{y_of(value):.1f}" x2="{right}" y2="{y_of(value):.1f}" stroke="#000" stroke-dasharray="6,4"/>')
        out.append(f'<text x="{right + 20}" y="{y_of(value) + 4:.1f}">{label}</text>')
    for n, (name, colour, vs) in enumerate(series):
        pts = [(x_of(x), y_of(v)) for x, v in zip(xs, vs) if v is not None]
        if len(pts) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>')
        for x, v in zip(xs, vs):
            if v is not None:
                out.append(f'<text x="{x_of(x) + 6:.1f}" y="{y_of(v) - 6:.1f}" fill="{colour}">{v:g}</text>')
        out.append(f'<rect x="{right + 20}" y="{top + 10 + 20 * n}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{right + 38}" y="{top + 21 + 20 * n}">{name}</text>')
    return out


def svg(points):
    xs = [p["clusters"] for p in points]
    x_max = nice_max(max(xs) * 1.05)
    panels = [
        ("Until every cluster is installed", "seconds", [("all installed", "#1f77b4", [p["installed_s"] for p in points])], None),
        ("Management API requests per host, whole install", "requests / host", [
            ("every client", "#7f7f7f", [p["all_per_host"] for p in points]),
            ("our two managers", "#d62728", [p["ours_per_host"] for p in points]),
        ], ("target: ours 40", 40)),
        ("Our two managers' peak memory, together", "MiB", [("peak RSS", "#2ca02c", [p["memory_mib"] for p in points])], ("target: 100 MiB", 100)),
    ]
    height = GAP + len(panels) * (PANEL_HEIGHT + GAP) + 20
    body = []
    for i, (title, unit, series, target) in enumerate(panels):
        body += panel(GAP + i * (PANEL_HEIGHT + GAP), title, unit, series, target, xs, x_max)
    body.append(f'<text x="{MARGIN_LEFT + (WIDTH - MARGIN_LEFT - MARGIN_RIGHT) / 2}" y="{height - 6}" text-anchor="middle">single-node clusters in one lab run</text>')
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        *body,
        "</svg>",
    ]) + "\n"


def table(points):
    rows = ["| clusters | hosts | all installed (s) | ours per host | every client per host | 409s | our peak memory (MiB) |",
            "|---|---|---|---|---|---|---|"]
    for p in points:
        rows.append(f'| {p["clusters"]} | {p["hosts"]} | {p["installed_s"]} | {p["ours_per_host"]} | {p["all_per_host"]} | {p["conflicts"]:g} | {p["memory_mib"]} |')
    return "\n".join(rows) + "\n"


def main(paths):
    if not paths:
        sys.exit("usage: hack/plot-fleet.py REPORT.json... > curve.svg")
    points = sorted((point(p) for p in paths), key=lambda p: p["clusters"])
    sys.stdout.write(svg(points))
    sys.stderr.write(table(points))


if __name__ == "__main__":
    main(sys.argv[1:])
