"""mgx-verify's reports: the JSON report (the environment and one record per input and target), the
comparison with a baseline report, the table printed, and a self-contained HTML page whose plots are
inline SVG drawn here (a few rectangles and lines: no plotting library needed).
"""

from __future__ import annotations

import html
import json
import math
import os
import platform
import sys
from collections import Counter
from typing import Any

from mgxir.diagnostics import MgxError
from mgxir.drivers.verify.tasks import STATUSES, TOOLCHAINS

# the fields of a record in the report, in order
REPORT_FIELDS = ("input", "target", "status", "rms", "ms", "message", "fingerprint", "tries", "cached")
# a record's change against the baseline, most urgent first: the order of the table
CHANGES = ("regression", "slower", "new", "fixed", "faster", "same")
SLOWER = 1.25  # a time this many times the baseline's (and 1 ms more) is `slower`; 1/SLOWER: `faster`
STATUS_COLOURS = {"ok": "#2e7d32", "mismatch": "#c62828", "refused": "#9e9e9e", "error": "#ef6c00"}


def environment(executor: str, workers: int, targets: list[str], devices: list[str]) -> dict[str, Any]:
    """What the run ran on: mgxir's version, the machine, the devices and the toolchains' versions."""
    from mgxir.drivers.verify.cache import mgxir_version, toolchain

    return {
        "mgxir": mgxir_version(),
        "python": sys.version.split()[0],
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
        "executor": f"{executor} ({workers} workers)" if executor != "inline" else executor,
        "devices": devices,
        "drivers": {target: toolchain(target) for target in targets if target in TOOLCHAINS},
    }


def gpu_devices() -> list[str]:
    """The GPUs nvidia-smi lists (name, driver version), without loading a GPU library here."""
    import shutil
    import subprocess

    tool = shutil.which("nvidia-smi")
    if tool is None:
        return []
    try:
        listed = subprocess.run(
            [tool, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in listed.stdout.splitlines() if line.strip()] if listed.returncode == 0 else []


def report_records(records: list[dict]) -> list[dict]:
    return [{name: r.get(name) for name in REPORT_FIELDS} | {"cached": bool(r.get("cached"))} for r in records]


def write_json(path: str, env: dict[str, Any], records: list[dict]) -> None:
    """The report, written atomically."""
    from mgxir.text.writer import write_output

    text = json.dumps({"environment": env, "records": report_records(records)}, indent=1, allow_nan=False)
    write_output(text + "\n", path)


def read_baseline(path: str) -> dict[tuple[str, str], dict]:
    """A report written before, by (input, target)."""
    try:
        with open(path) as f:
            loaded = json.load(f)
        records = loaded["records"]
        return {(r["input"], r["target"]): r for r in records}
    except OSError as e:
        raise MgxError(f"cannot read --baseline {path}: {e.strerror or e}") from None
    except (ValueError, KeyError, TypeError):
        raise MgxError(f"--baseline {path} is not a report mgx-verify wrote") from None


def change(record: dict, baseline: dict[tuple[str, str], dict] | None) -> str:
    """`regression` (was ok, now anything else: a refusal too, as an importer or a target that
    stops accepting a model is a regression however cleanly it says so), `fixed` (now ok),
    `slower`/`faster` (both ok), `new` (not in the baseline) or `same`."""
    if baseline is None:
        return "same"
    old = baseline.get((record["input"], record["target"]))
    if old is None:
        return "new"
    was_ok, is_ok = old.get("status") == "ok", record["status"] == "ok"
    if was_ok != is_ok:
        return "fixed" if is_ok else "regression"
    if was_ok and is_ok and old.get("ms") and record.get("ms") is not None:
        if record["ms"] > SLOWER * old["ms"] + 1.0:
            return "slower"
        if SLOWER * record["ms"] + 1.0 < old["ms"]:
            return "faster"
    return "same"


def ordered(records: list[dict], baseline: dict[tuple[str, str], dict] | None) -> list[tuple[str, dict]]:
    """(change, record) pairs: regressions first, then by change, then failures before the rest."""
    pairs = [(change(r, baseline), r) for r in records]
    rank = {s: i for i, s in enumerate(("mismatch", "error", "refused", "ok"))}
    return sorted(pairs, key=lambda p: (CHANGES.index(p[0]), rank[p[1]["status"]], p[1]["input"], p[1]["target"]))


def regressions(records: list[dict], baseline: dict[tuple[str, str], dict] | None) -> int:
    return sum(change(r, baseline) == "regression" for r in records)


def _number(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}g}" if abs(value) < 1e-2 and value else f"{value:.{digits}f}"


def table(records: list[dict], baseline: dict[tuple[str, str], dict] | None, everything: bool = False) -> str:
    """The printed table: regressions first, then every record not ok (all with `everything`),
    then the counts per target."""
    rows = [("change", "status", "target", "ms", "rms", "input", "message")]
    shown = 0
    for what, r in ordered(records, baseline):
        if everything or noteworthy(what, r):
            rows.append(
                (
                    what,
                    r["status"],
                    r["target"],
                    _number(r.get("ms")),
                    _number(r.get("rms")),
                    r["input"],
                    r.get("message") or "",
                )
            )
            shown += 1
    lines = []
    if shown:
        widths = [max(len(row[k]) for row in rows) for k in range(6)]
        first = 0 if baseline is not None else 1  # the change column only where there is a baseline
        lines = ["  ".join(c.ljust(w) for c, w in zip(row[first:6], widths[first:])) + "  " + row[6] for row in rows]
        lines = [line.rstrip() for line in lines]
    lines += summary_lines(records, baseline)
    return "\n".join(lines) + "\n"


def noteworthy(what: str, record: dict) -> bool:
    """A record the table shows without --all (and the HTML page first): a change but a new or
    faster ok one, and every record that is not ok."""
    return what not in ("same", "new", "faster") or record["status"] != "ok"


def summary_lines(records: list[dict], baseline: dict[tuple[str, str], dict] | None) -> list[str]:
    lines = []
    for target in dict.fromkeys(r["target"] for r in records):
        mine = [r for r in records if r["target"] == target]
        counts = Counter(r["status"] for r in mine)
        total_ms = sum(r.get("ms") or 0.0 for r in mine)
        parts = ", ".join(f"{counts[s]} {s}" for s in STATUSES)
        lines.append(f"{target}: {len(mine)} inputs: {parts}; {total_ms / 1000:.2f} s running")
    if baseline is not None:
        changes = Counter(change(r, baseline) for r in records)
        lines.append("against the baseline: " + ", ".join(f"{changes[c]} {c}" for c in CHANGES))
    cached = sum(bool(r.get("cached")) for r in records)
    if cached:
        lines.append(f"{cached} of {len(records)} results from the cache")
    return lines


# -- the HTML page -------------------------------------------------------------------------------


def write_html(path: str, env: dict[str, Any], records: list[dict], baseline: dict | None) -> None:
    from mgxir.text.writer import write_output

    write_output(html_page(env, records, baseline), path)


def html_page(env: dict[str, Any], records: list[dict], baseline: dict | None) -> str:
    """The page: the environment and the counts, then what changed against the baseline
    (regressions first; without a baseline, what failed), then the plots (statuses per target, each
    target's time per model), then every record. Inputs are shown below their common folder."""
    e = html.escape
    targets = list(dict.fromkeys(r["target"] for r in records))
    env_rows = "".join(
        f"<tr><th>{e(k)}</th><td>{e(json.dumps(v) if not isinstance(v, str) else v)}</td></tr>" for k, v in env.items()
    )
    summary = "".join(f"<li>{e(line)}</li>" for line in summary_lines(records, baseline))
    folder = common_folder([r["input"] for r in records])
    pairs = ordered(records, baseline)
    first = [(what, r) for what, r in pairs if noteworthy(what, r)]
    first_title = "Regressions and changes against the baseline" if baseline is not None else "What is not ok"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mgx-verify report</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }}
td.number {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.regression {{ background: #ffebee; }} tr.fixed {{ background: #e8f5e9; }} tr.slower {{ background: #fff8e1; }}
svg text {{ font-size: 11px; }}
</style></head><body>
<h1>mgx-verify</h1>
<table>{env_rows}</table>
<ul>{summary}</ul>
{f"<p>Inputs below <code>{e(folder)}</code>.</p>" if folder else ""}
<h2>{first_title}</h2>
{records_table(first, folder) if first else "<p>None.</p>"}
<h2>Status per target</h2>
{status_chart(records, targets)}
<h2>Time per model and per target</h2>
{time_chart(records, targets, folder)}
<h2>Every record</h2>
{records_table(pairs, folder)}
</body></html>
"""


def common_folder(paths: list[str]) -> str:
    """The folder every input lies in ("" where they share none)."""
    if not paths:
        return ""
    common = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])
    return "" if common == os.sep else common


def shown_name(path: str, folder: str) -> str:
    return os.path.relpath(os.path.abspath(path), folder) if folder else path


def records_table(pairs: list[tuple[str, dict]], folder: str) -> str:
    e = html.escape
    rows = []
    for what, r in pairs:
        colour = STATUS_COLOURS[r["status"]]
        rows.append(
            f"<tr class='{e(what)}'><td>{e(what)}</td><td style='color:{colour}'>{e(r['status'])}</td>"
            f"<td>{e(r['target'])}</td><td class='number'>{_number(r.get('ms'))}</td>"
            f"<td class='number'>{_number(r.get('rms'))}</td>"
            f"<td title='{e(r['input'])}'>{e(shown_name(r['input'], folder))}</td>"
            f"<td>{e(r.get('message') or '')}</td></tr>"
        )
    head = "<tr><th>change</th><th>status</th><th>target</th><th>ms</th><th>rms</th><th>input</th><th>message</th></tr>"
    return f"<table>{head}\n{''.join(rows)}\n</table>"


def status_chart(records: list[dict], targets: list[str]) -> str:
    """One horizontal bar per target, split by status."""
    width, bar, label = 600, 22, 80
    height = bar * len(targets) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + label + 20}" height="{height}">']
    for row, target in enumerate(targets):
        mine = [r for r in records if r["target"] == target]
        counts = Counter(r["status"] for r in mine)
        y = row * bar + 4
        parts.append(f'<text x="0" y="{y + 14}">{html.escape(target)}</text>')
        x = float(label)
        for status in STATUSES:
            w = width * counts[status] / max(1, len(mine))
            if w:
                parts.append(
                    f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar - 6}" fill="{STATUS_COLOURS[status]}">'
                    f"<title>{status}: {counts[status]}</title></rect>"
                )
            x += w
    legend = "".join(
        f'<rect x="{label + 110 * k}" y="{height - 20}" width="10" height="10" fill="{STATUS_COLOURS[s]}"/>'
        f'<text x="{label + 110 * k + 14}" y="{height - 11}">{s}</text>'
        for k, s in enumerate(STATUSES)
    )
    return "".join(parts) + legend + "</svg>"


PALETTE = ("#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f")


def time_chart(records: list[dict], targets: list[str], folder: str = "") -> str:
    """Each target's run times, models sorted by time, on a logarithmic scale of milliseconds; each
    model a point whose tooltip names it."""
    width, height, left, bottom = 700, 300, 60, 30
    times = {
        t: sorted((r["ms"], shown_name(r["input"], folder)) for r in records if r["target"] == t and r.get("ms"))
        for t in targets
    }
    everything = [ms for values in times.values() for ms, _ in values]
    if not everything:
        return "<p>No times were measured.</p>"
    low = math.floor(math.log10(max(min(everything), 1e-3)))
    high = max(math.ceil(math.log10(max(everything))), low + 1)

    def y_of(ms: float) -> float:
        return height - bottom - (math.log10(max(ms, 10.0**low)) - low) / (high - low) * (height - bottom - 10)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + left + 120}" height="{height}">']
    for power in range(low, high + 1):
        y = y_of(10.0**power)
        parts.append(f'<line x1="{left}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="0" y="{y + 4:.1f}">{10.0**power:g} ms</text>')
    for k, (target, values) in enumerate(times.items()):
        if not values:
            continue
        colour = PALETTE[k % len(PALETTE)]
        step = width / max(1, len(values) - 1)
        at = [(left + i * step, y_of(ms)) for i, (ms, _) in enumerate(values)]
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in at)
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        parts += [
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}"><title>{html.escape(name)} on '
            f"{html.escape(target)}: {_number(ms)} ms</title></circle>"
            for (x, y), (ms, name) in zip(at, values)
        ]
        parts.append(f'<text x="{left + width + 8}" y="{20 + 16 * k}" fill="{colour}">{html.escape(target)}</text>')
    parts.append(f'<text x="{left}" y="{height - 8}">models, fastest to slowest</text>')
    return "".join(parts) + "</svg>"
