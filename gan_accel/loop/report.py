"""``OUTPUT_DIR/report.html``: one page per run, where to look after it (a CPU user has no
TensorBoard running). It is built from the files the run already wrote (``config.json``,
``metrics.jsonl``, ``plots/``, the task's exports), so it can be rebuilt at any moment; the run
refreshes it at each evaluation, when its plots are redrawn and at its end
(:class:`~gan_accel.loop.TrainingRun`).

Self-contained: no script, no server, no network; images by relative path, so the folder can be
moved or zipped and the page still shows them. Every string that came from the user (flags,
paths, labels, texts) is escaped. What only one task has (grids, translations, confusion
matrices) is in :mod:`.report_tasks`.
"""

from __future__ import annotations

import html
import json
import math
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..config.run import SECRET_FIELDS
from ..errors import UserError
from .atomic import atomic_file, fsync_dir
from .metrics_log import METRICS_FILE

REPORT_FILE = "report.html"
EVAL_PREFIX = "eval/"
INTERVAL_ENDS = ("_ci_low", "_ci_high")  # eval/fid_ci_low + eval/fid_ci_high: the interval of eval/fid
Section = Tuple[str, str]  # (title, HTML body)

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.6em}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:right}
th{background:#f4f4f4}td.k,th.k{text-align:left}pre{background:#f6f6f6;padding:.6em;overflow-x:auto;white-space:pre-wrap}
img{max-width:100%;image-rendering:pixelated;border:1px solid #ddd}.plots img{width:560px}
.note{color:#555;font-size:.9em}figure{display:inline-block;margin:.4em;vertical-align:top}
.samples img{min-width:320px}.wide{overflow-x:auto}
"""


def esc(value) -> str:
    """Any value as text safe inside HTML, quotes included (it may land in an attribute)."""
    return html.escape(str(value), quote=True)


def fmt(value) -> str:
    """A number as a short figure (4 significant digits), anything else as text; escaped."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return esc("-" if value is None else value)
    if isinstance(value, int):
        return esc(value)
    return esc("nan" if not math.isfinite(value) else f"{value:.4g}")


def rel(folder: Path, path: Path) -> str:
    """``path`` relative to the run folder, for an ``src`` or ``href`` (escaped)."""
    return esc(Path(path).relative_to(folder).as_posix())


def image(folder: Path, path: Path, caption: str = "", alt: str = "") -> str:
    cap = f"<figcaption class=note>{esc(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="{rel(folder, path)}" alt="{esc(alt or path.name)}">{cap}</figure>'


def pre(text: str) -> str:
    return f"<pre>{esc(text)}</pre>"


def table(header: Sequence[str], rows: Sequence[Sequence[str]], first_is_key: bool = True) -> str:
    """``rows`` of already-escaped cells under an (escaped here) ``header``."""
    cls = " class=k"

    def cells(row, tag):
        return "".join(f"<{tag}{cls if i == 0 and first_is_key else ''}>{c}</{tag}>" for i, c in enumerate(row))

    head = cells([esc(h) for h in header], "th")
    body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def read_json(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def read_records(folder: Path) -> List[dict]:
    """The records of ``metrics.jsonl`` (lines that are not records, e.g. a torn one, skipped)."""
    try:
        lines = (folder / METRICS_FILE).read_text(errors="replace").splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


# ---- the command line ----------------------------------------------------------------------
def command_line(command: str, argv: Sequence[str]) -> str:
    """``gan-accel COMMAND FLAGS`` as it can be typed again, secrets (``--hub_token``) masked."""
    shown = []
    hide_next = False
    for arg in argv:
        name = arg.split("=", 1)[0].lstrip("-").replace("-", "_")
        if hide_next:
            shown.append("***")
            hide_next = False
        elif arg.startswith("--") and name in SECRET_FIELDS:
            shown.append(f"{arg.split('=', 1)[0]}=***" if "=" in arg else arg)
            hide_next = "=" not in arg
        else:
            shown.append(arg)
    return shlex.join(["gan-accel", command, *shown] if command else shown)


@dataclass
class ReportInputs:
    """What the page cannot read from the folder: how the run was started."""

    command: str = ""  # the command line (:func:`command_line`); empty: started from Python
    notes: Sequence[str] = ()  # lines the run printed about its settings (the preset's choices)


# ---- sections every run has ----------------------------------------------------------------
def settings_section(folder: Path, inputs: ReportInputs) -> Section:
    parts = []
    if inputs.command:
        parts.append("<p>The command:</p>" + pre(inputs.command))
    else:
        parts.append("<p class=note>Started from Python (no command line).</p>")
    if inputs.notes:
        parts.append("<p>Settings chosen for this run, with their reasons (a flag you pass wins):</p>")
        parts.append(pre("\n".join(inputs.notes)))
    config = read_json(folder / "config.json")
    if isinstance(config, dict):
        rows = [[esc(k), esc(json.dumps(config[k]))] for k in sorted(config)]
        parts.append(
            '<details><summary>The resolved config (<a href="config.json">config.json</a>)</summary>'
            + table(["setting", "value"], rows)
            + "</details>"
        )
    return "Command and settings", "".join(parts)


def plots_section(folder: Path) -> Optional[Section]:
    pngs = sorted((folder / "plots").glob("*.png"))
    if not pngs:
        return None
    body = "".join(image(folder, p, caption=p.stem) for p in pngs)
    return "Plots", f"<div class=plots>{body}</div>"


def eval_columns(records: Sequence[dict]) -> List[str]:
    """Every ``eval/*`` key logged, in first-seen order; an interval's ends are not columns of
    their own (they join their metric's cell)."""
    keys: Dict[str, None] = {}
    for record in records:
        for key in record:
            if key.startswith(EVAL_PREFIX) and not key.endswith(INTERVAL_ENDS):
                keys.setdefault(key, None)
    return list(keys)


def eval_cell(record: dict, key: str) -> str:
    if key not in record:
        return ""
    low, high = (record.get(key + end) for end in INTERVAL_ENDS)
    interval = f" [{fmt(low)}, {fmt(high)}]" if low is not None and high is not None else ""
    return fmt(record[key]) + interval


def evaluation_section(folder: Path) -> Optional[Section]:
    """One row per evaluation logged in ``metrics.jsonl``: every ``eval/*`` metric (a new one
    appears without editing this page), 95% intervals in brackets, floors as their own columns."""
    records = [r for r in read_records(folder) if any(str(k).startswith(EVAL_PREFIX) for k in r)]
    if not records:
        return None
    columns = eval_columns(records)
    rows = [[fmt(r.get("step"))] + [eval_cell(r, k) for k in columns] for r in records]
    header = ["step", *(k[len(EVAL_PREFIX) :] for k in columns)]
    note = (
        "<p class=note>From metrics.jsonl. [low, high]: the metric's 95% bootstrap interval; "
        "a <i>_floor</i> column is the value real images score against real images (the best a generator "
        "can reach at this sample size).</p>"
    )
    return "Evaluations", note + f"<div class=wide>{table(header, rows)}</div>"


def results_section(folder: Path) -> Optional[Section]:
    """``eval_results.json`` (the final evaluation), flattened: every number and text in it."""
    results = read_json(folder / "eval_results.json")
    if not isinstance(results, dict):
        return None
    rows = [[esc(k), fmt(v)] for k, v in flatten(results) if k.split(".")[-1] != "protocol"]
    link = '<p class=note>From <a href="eval_results.json">eval_results.json</a>.</p>'
    return "Final results", link + table(["result", "value"], rows)


def flatten(data, prefix: str = "") -> List[Tuple[str, object]]:
    """``{"A2B": {"fid": 1}}`` -> ``[("A2B.fid", 1)]``; short lists shown whole, protocols left out."""
    out: List[Tuple[str, object]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if key == "protocol":
            continue
        if isinstance(value, dict):
            out += flatten(value, name + ".")
        elif isinstance(value, list):
            out.append((name, json.dumps(value) if len(json.dumps(value)) < 200 else f"{len(value)} items"))
        else:
            out.append((name, value))
    return out


def files_section(folder: Path) -> Section:
    rows = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or entry.name in (REPORT_FILE, "run.lock"):
            continue
        kind = "folder" if entry.is_dir() else f"{entry.stat().st_size:,} bytes"
        link = f'<a href="{rel(folder, entry)}">{esc(entry.name)}{"/" if entry.is_dir() else ""}</a>'
        rows.append([link, esc(kind)])
    return "Files in this folder", table(["name", "size"], rows)


# ---- the page ------------------------------------------------------------------------------
def build_page(folder: Path, project: str, inputs: ReportInputs) -> str:
    from .report_tasks import task_sections

    folder = Path(folder)
    records = read_records(folder)
    last_step = max((r["step"] for r in records if isinstance(r.get("step"), int)), default=0)
    sections: List[Optional[Section]] = [
        settings_section(folder, inputs),
        *task_sections(project, folder, inputs),
        evaluation_section(folder),
        results_section(folder),
        plots_section(folder),
        files_section(folder),
    ]
    body = "".join(f"<h2>{esc(title)}</h2>{html_body}" for title, html_body in filter(None, sections))
    updated = time.strftime("%Y-%m-%d %H:%M:%S")
    title = f"{project} run: {folder.name}"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{esc(title)}</h1><p class=note>Step {fmt(last_step)}; page written {esc(updated)} "
        "(rewritten at each evaluation and at the end of the run).</p>"
        f"{body}</body></html>\n"
    )


def write_report(folder: Path, project: str, inputs: Optional[ReportInputs] = None) -> Path:
    """Write ``FOLDER/report.html`` atomically: to a temporary name, then renamed over, so a
    browser (or a kill) never sees half a page."""
    folder = Path(folder)
    page = build_page(folder, project, inputs or ReportInputs())
    path = folder / REPORT_FILE
    with atomic_file(path, "report") as tmp:  # a failed write leaves no empty or partial page
        with tmp.open("w", encoding="utf-8") as f:
            f.write(page)
            f.flush()
            os.fsync(f.fileno())
    fsync_dir(folder)
    return path


def write_report_safely(
    folder: Path, project: str, inputs: Optional[ReportInputs], warn: Callable[[str], None]
) -> Optional[Path]:
    """:func:`write_report`; a failure (a full disk, a file the page cannot read) is one warning:
    the page is a view of the run, never a reason to stop it."""
    try:
        return write_report(folder, project, inputs)
    except Exception as err:  # noqa: BLE001 - any failure here must not cost the training
        if isinstance(err, UserError):  # a failed write: its line already names the page and why
            warn(f"warning: {err}")
        else:
            warn(f"warning: could not write {Path(folder) / REPORT_FILE} ({type(err).__name__}: {err})")
        return None
