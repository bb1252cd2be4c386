"""Plots of a run's ``metrics.jsonl``: one PNG per key prefix (``loss``, ``lr``, ``eval``, ...).

For users without TensorBoard, ``OUTPUT_DIR/plots/`` is refreshed at every checkpoint and at the
end of a run; ``scripts/plot_run.py RUN_DIR`` draws it for any run folder.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set, Tuple

from ..errors import UserError

Series = Dict[str, Tuple[List[int], List[float]]]


# metrics.jsonl files already told about lines that are not UTF-8: the plots are redrawn at every
# checkpoint, and one damaged byte is worth one warning per run, not one per redraw.
_REPORTED_UNDECODABLE: Set[str] = set()


def read_series(metrics_path: Path, warn: Optional[Callable[[str], None]] = None) -> Series:
    """``{key: (steps, values)}`` of every numeric, finite value (warnings and nulls skipped).
    A line cut short by a killed run is skipped too, and so is a line that is not UTF-8 (a damaged
    byte): ``warn`` is told about those once per file."""
    series: Series = defaultdict(lambda: ([], []))
    undecodable = []
    for number, raw in enumerate(Path(metrics_path).read_bytes().splitlines(), start=1):
        try:
            record = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            undecodable.append(number)
            continue
        except json.JSONDecodeError:
            continue
        step = record.get("step") if isinstance(record, dict) else None
        if not isinstance(step, (int, float)):
            continue
        for key, value in record.items():
            if (
                key != "step"
                and isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
            ):
                series[key][0].append(step)
                series[key][1].append(value)
    if undecodable and warn is not None and str(metrics_path) not in _REPORTED_UNDECODABLE:
        _REPORTED_UNDECODABLE.add(str(metrics_path))
        lines = ", ".join(map(str, undecodable[:5])) + (", ..." if len(undecodable) > 5 else "")
        warn(
            f"warning: {metrics_path}: skipped {len(undecodable)} line(s) that are not valid UTF-8 (line {lines}); "
            "plotted the rest"
        )
    return dict(series)


# Precision, recall, density and coverage (and their intervals) get their own plot: on FID's
# scale their 0..1 values would be a flat line. The protocol id is a label, not a quantity.
FIDELITY_KEYS = ("eval/precision", "eval/recall", "eval/density", "eval/coverage")


def group_by_prefix(series: Series) -> Dict[str, Series]:
    groups: Dict[str, Series] = defaultdict(dict)
    for key in sorted(series):
        if key.endswith("/protocol_id"):
            continue
        prefix = key.split("/")[0] if "/" in key else "other"
        if key.split("_ci_")[0] in FIDELITY_KEYS:
            prefix = "eval_fidelity"
        groups[prefix][key] = series[key]
    return dict(groups)


def plot_metrics(run_dir: Path, warn: Optional[Callable[[str], None]] = None) -> List[Path]:
    """Write ``RUN_DIR/plots/<prefix>.png`` for every key prefix in ``RUN_DIR/metrics.jsonl``
    (``warn``: see :func:`read_series`)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed, works on any headless machine
    import matplotlib.pyplot as plt

    groups = group_by_prefix(read_series(Path(run_dir) / "metrics.jsonl", warn))
    if not groups:
        return []
    out_dir = Path(run_dir) / "plots"
    out_dir.mkdir(exist_ok=True)
    written = []
    for prefix, series in groups.items():
        fig, ax = plt.subplots(figsize=(7, 4))
        # Fixed margins rather than tight_layout, which measured every tick label again and took
        # about a third of the drawing time; these fit the tick labels of steps and values.
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.12, top=0.92)
        for key, (steps, values) in series.items():
            if key.endswith("/best_step"):  # a step number, not a metric: drawn as the marker below
                continue
            ax.plot(steps, values, label=key, marker="." if len(steps) < 30 else None)
        positive = all(v > 0 for _, values in series.values() for v in values)
        if positive and (prefix == "lr" or (prefix == "loss" and _spread(series) > 100)):
            # Learning rates and diverging losses span decades; a schedule that starts or ends at 0
            # (warm-up, linear decay) stays linear, since a log axis cannot show 0.
            ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_title(f"{prefix} ({Path(run_dir).name})")
        ax.grid(alpha=0.3)
        best = series.get(f"{prefix}/best_step")
        if best:  # where the best generator (best_generator/) was taken
            ax.axvline(best[1][-1], color="grey", linestyle="--", linewidth=1, label=f"best: step {best[1][-1]:.0f}")
        ax.legend(fontsize=8)
        path = out_dir / f"{prefix}.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    return written


def _spread(series: Series) -> float:
    values = [v for _, vs in series.values() for v in vs]
    return max(values) / min(values) if values and min(values) > 0 else 1.0


def metrics_version(run_dir: Path) -> Optional[Tuple[int, int]]:
    """``(size, mtime_ns)`` of ``RUN_DIR/metrics.jsonl`` (None when absent): it changes whenever a
    line is appended, so equal versions have equal plots."""
    try:
        st = (Path(run_dir) / "metrics.jsonl").stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def plot_run_safely(run_dir: Path, warn: Callable[[str], None]) -> List[Path]:
    """:func:`plot_metrics` for the training loop: a plotting problem is a warning, never the end
    of a run that has trained correctly."""
    if not (Path(run_dir) / "metrics.jsonl").is_file():
        return []
    try:
        return plot_metrics(run_dir, warn)
    except Exception as err:  # noqa: BLE001 - any plotting failure
        warn(f"warning: could not write plots to {Path(run_dir) / 'plots'} ({type(err).__name__}: {err})")
        return []


def check_run_dir(run_dir: Path) -> Path:
    """The ``metrics.jsonl`` of a run folder, or a :class:`UserError` saying what is wrong."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"RUN_DIR {run_dir}: no such folder; pass the --output_dir of a training run")
    metrics = run_dir / "metrics.jsonl"
    if not metrics.is_file():
        raise UserError(
            f"RUN_DIR {run_dir}: no metrics.jsonl, so not a gan_accel run folder; pass the --output_dir "
            "of a training run"
        )
    return metrics
