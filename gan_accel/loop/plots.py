"""Plots of a run's ``metrics.jsonl``: one PNG per family of keys (``loss``, ``lr``,
``eval_fid``, ``eval_fidelity``, ...), against steps and, on the top axis, wall-clock minutes.

For users without TensorBoard, ``OUTPUT_DIR/plots/`` is refreshed at every checkpoint and at the
end of a run; ``scripts/plot_run.py RUN_DIR`` draws it for any run folder.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set, Tuple

from .. import interrupt
from ..errors import UserError
from .atomic import atomic_file
from .metrics_log import TIME_KEY

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


# One figure per family, each on its own scale: FID beside counts of 1,000 images would be a flat
# line, and precision's 0..1 beside FID's 1..5 too.
FID_FAMILY = "eval_fid"  # FID, KID and SWD, their intervals, the real-data floor and the best step
FIDELITY_FAMILY = "eval_fidelity"  # precision, recall, density, coverage and their intervals
FIDELITY_KEYS = ("eval/precision", "eval/recall", "eval/density", "eval/coverage")
FID_KEYS = ("eval/fid", "eval/kid", "eval/swd", "eval/best_step", "eval/best_fid", "eval/best_swd")  # and longer keys
# Settings of the evaluation, not results: the same at every evaluation (sizes, the protocol's id,
# the fixed domain classifier's own accuracy).
NOT_PLOTTED = ("eval/num_", "eval/protocol_id", "eval/classifier_")
# Losses are noisy from one log line to the next: the trend is drawn over the faint raw line
# once there are this many points.
SMOOTH_FROM = 10


def family_of(key: str) -> Optional[str]:
    """The figure (``plots/<family>.png``) a metrics key is drawn in; None: not drawn."""
    if key == TIME_KEY or key.startswith(NOT_PLOTTED) or key.endswith("/protocol_id"):
        return None
    if key.split("_ci_")[0] in FIDELITY_KEYS:
        return FIDELITY_FAMILY
    if key.startswith(FID_KEYS):
        return FID_FAMILY
    return key.split("/")[0] if "/" in key else "other"


def group_by_prefix(series: Series) -> Dict[str, Series]:
    groups: Dict[str, Series] = defaultdict(dict)
    for key in sorted(series):
        family = family_of(key)
        if family is not None:
            groups[family][key] = series[key]
    # The FID figure draws its curves around FID or KID: without either (a lone best step, a
    # floor) there is nothing to draw.
    return {
        name: keys
        for name, keys in groups.items()
        if name != FID_FAMILY or any(panel[0] in keys for panel in FID_PANELS)
    }


def smooth(values: List[float], window: int) -> List[float]:
    """Exponential moving average over about ``window`` points (TensorBoard's smoothing), started
    from the first value so the curve does not rise from 0."""
    alpha = 2.0 / (window + 1)
    out: List[float] = []
    for value in values:
        out.append(value if not out else out[-1] + alpha * (value - out[-1]))
    return out


def minutes_of_steps(times: Tuple[List[int], List[float]]):
    """Steps -> wall-clock minutes (a function of an array) from the ``time_s`` of each logged
    step: linear between logged steps and at the run's mean pace beyond them; None when fewer
    than two distinct steps are timed (lines written before lines had times)."""
    import numpy as np

    by_step = dict(zip(times[0], times[1]))  # a step logged twice (an evaluation line) keeps its last time
    steps = np.array(sorted(by_step), dtype=float)
    minutes = np.maximum.accumulate(np.array([by_step[s] for s in sorted(by_step)], dtype=float)) / 60.0
    if len(steps) < 2 or minutes[-1] <= minutes[0]:
        return None
    pace = (minutes[-1] - minutes[0]) / (steps[-1] - steps[0])  # minutes per step

    def forward(x):
        x = np.asarray(x, dtype=float)
        before = minutes[0] + (x - steps[0]) * pace
        after = minutes[-1] + (x - steps[-1]) * pace
        return np.where(x < steps[0], before, np.where(x > steps[-1], after, np.interp(x, steps, minutes)))

    return forward


def _last(series: Series, key: str) -> Optional[float]:
    return series[key][1][-1] if key in series and series[key][1] else None


def _value_at(series: Series, key: str, step: float) -> Optional[float]:
    steps, values = series.get(key, ([], []))
    matches = [v for s, v in zip(steps, values) if s == step]
    return matches[-1] if matches else None


def _band(ax, series: Series, name: str, color, x_of) -> None:
    """The bootstrap interval of ``name`` as a shaded band (where both ends were logged)."""
    low, high = series.get(f"{name}_ci_low"), series.get(f"{name}_ci_high")
    if not low or not high:
        return
    highs = dict(zip(*high))
    lows = dict(zip(*low))
    steps = [s for s in low[0] if s in highs]
    ax.fill_between(
        x_of(steps), [lows[s] for s in steps], [highs[s] for s in steps], color=color, alpha=0.2, linewidth=0
    )


def _draw_distance(ax, series: Series, key: str, name: str, floor_key: str, at_floor_key: str, label: str, x_of):
    """FID, KID or SWD over the run: the curve, its interval, the real-data floor with its
    real-vs-real interval (a value inside or below it is saturated), the same score at the floor's
    size (the like-for-like comparison) and the best step."""
    steps, values = series[key]
    (line,) = ax.plot(x_of(steps), values, marker="o", markersize=4, label=label)
    _band(ax, series, name, line.get_color(), x_of)
    floor = _last(series, floor_key)
    if floor is not None:
        ax.axhline(floor, color="black", linestyle=":", linewidth=1.2, label=f"real-data floor {floor:.3g}")
        low, high = _last(series, f"{name}_floor_ci_low"), _last(series, f"{name}_floor_ci_high")
        if low is not None and high is not None:
            ax.axhspan(
                low,
                high,
                color="black",
                alpha=0.08,
                linewidth=0,
                label="real-vs-real interval (up to its top: saturated)",
            )
    if at_floor_key in series:
        at_floor_steps, at_floor_values = series[at_floor_key]
        ax.plot(
            x_of(at_floor_steps),
            at_floor_values,
            color=line.get_color(),
            linestyle="--",
            linewidth=1,
            alpha=0.7,
            label=f"{label} at the floor's size",
        )
    best = _last(series, "eval/best_step")
    if best is not None:
        (best_x,) = x_of([best])
        ax.axvline(best_x, color="grey", linestyle="--", linewidth=1, label=f"kept (best_generator/): step {best:.0f}")
        at_best = _value_at(series, key, best)
        if at_best is not None:
            ax.plot(
                [best_x], [at_best], marker="*", markersize=12, color="gold", markeredgecolor="black", linestyle="none"
            )
    shown = [*values, *([floor] if floor is not None else [])]
    if min(shown) > 0 and max(shown) / min(shown) > 20:
        # An early FID of 40 above a floor of 0.5: on a linear axis the floor and the last
        # evaluations are one flat line at the bottom. (KID can be negative: then linear.)
        ax.set_yscale("log")
    ax.set_ylabel(label)


FID_PANELS = (  # (value, interval name, floor, same score at the floor's size, label)
    ("eval/fid", "eval/fid", "eval/fid_floor", "eval/fid_at_floor_size", "FID"),
    ("eval/kid_mean", "eval/kid", "eval/kid_floor_mean", "eval/kid_at_floor_size_mean", "KID"),
    # The SWD is measured at the floor's size already: no second curve.
    ("eval/swd", "eval/swd", "eval/swd_floor", "", "SWD"),
)


def _fid_rows(series: Series) -> int:
    return sum(panel[0] in series for panel in FID_PANELS)


def _draw_fid(axes, series: Series, x_of) -> None:
    panels = [panel for panel in FID_PANELS if panel[0] in series]
    for ax, panel in zip(axes, panels):
        _draw_distance(ax, series, *panel, x_of)


def _draw_fidelity(axes, series: Series, x_of) -> None:
    (ax,) = axes
    for key in FIDELITY_KEYS:
        if key in series:
            steps, values = series[key]
            (line,) = ax.plot(x_of(steps), values, marker="o", markersize=4, label=key.split("/")[1])
            _band(ax, series, key, line.get_color(), x_of)
    ax.set_ylabel("share (density may exceed 1)")


def _draw_each_apart(axes, series: Series, x_of) -> None:
    """One panel per key: each keeps its own scale (classes covered beside a KL divergence)."""
    for ax, (key, (steps, values)) in zip(axes, series.items()):
        ax.plot(x_of(steps), values, marker="o", markersize=4, label=key)
        ax.set_ylabel(key.split("/", 1)[-1], fontsize=8)


def _draw_together(axes, series: Series, x_of, prefix: str) -> None:
    """Every key on one axis; losses with their smoothed trend over the faint raw line."""
    (ax,) = axes
    for key, (steps, values) in series.items():
        if prefix == "loss" and len(values) >= SMOOTH_FROM:
            (raw,) = ax.plot(x_of(steps), values, alpha=0.25, linewidth=0.8)
            ax.plot(
                x_of(steps),
                smooth(values, max(3, len(values) // 10)),
                color=raw.get_color(),
                linewidth=1.8,
                label=f"{key} (smoothed)",
            )
        else:
            ax.plot(x_of(steps), values, label=key, marker="." if len(steps) < 30 else None)
    positive = all(v > 0 for _, values in series.values() for v in values)
    if positive and (prefix == "lr" or (prefix == "loss" and _spread(series) > 100)):
        # Learning rates and diverging losses span decades; a schedule that starts or ends at 0
        # (warm-up, linear decay) stays linear, since a log axis cannot show 0.
        ax.set_yscale("log")


def _steps(steps) -> list:
    return list(steps)


def family_figure(family: str, series: Series, minutes=None, title: str = "", last_step: Optional[int] = None):
    """The matplotlib figure of one family: against steps on the left and, when ``minutes`` maps
    steps to wall-clock minutes (:func:`minutes_of_steps`), against minutes on the right, the
    same y scale in both; ``last_step``: the run's last logged step, where the x axes end at the
    earliest. The caller saves and closes it."""
    import matplotlib.pyplot as plt

    if family == FID_FAMILY:
        draw, rows = _draw_fid, _fid_rows(series)
    elif family == FIDELITY_FAMILY:
        draw, rows = _draw_fidelity, 1
    elif family == "eval":
        draw, rows = _draw_each_apart, len(series)
    else:
        draw, rows = (lambda axes, s, x_of: _draw_together(axes, s, x_of, family)), 1
    columns = [(_steps, "step")]
    if minutes is not None:
        # A step's minutes are when its line was written (an evaluation's line: when it finished).
        columns.append((lambda steps: list(minutes(steps)), "wall-clock minutes"))
    height = 1.05 + 2.5 * rows
    fig = plt.figure(figsize=(6.5 * len(columns), height))
    grid = fig.subplots(rows, len(columns), sharex="col", sharey="row", squeeze=False)
    for column, (x_of, x_label) in enumerate(columns):
        draw(list(grid[:, column]), series, x_of)
        bottom = grid[-1, column]
        bottom.set_xlabel(x_label)
        # From the start of the run to its last logged step: two evaluations near the end are not
        # the whole story.
        right = bottom.get_xlim()[1]  # as autoscaled, with its margin
        if last_step is not None:
            right = max(right, 1.02 * float(x_of([last_step])[0]))
        bottom.set_xlim(0, right)
    for ax in grid.flat:
        ax.grid(alpha=0.3)
    for ax in grid[:, 0]:  # one legend per row: the right column draws the same lines
        ax.legend(fontsize=7, loc="best")
    for ax in grid[:, 1:].flat:
        ax.set_ylabel("")
    fig.suptitle(f"{family} ({title})" if title else family)
    # Fixed margins rather than tight_layout, which measured every tick label again and took
    # about a third of the drawing time.
    fig.subplots_adjust(
        left=0.85 / fig.get_figwidth(),
        right=0.98,
        bottom=0.5 / height,
        top=1 - 0.55 / height,
        hspace=0.25,
        wspace=0.08,
    )
    return fig


def plot_metrics(
    run_dir: Path, warn: Optional[Callable[[str], None]] = None, out_dir: Optional[Path] = None
) -> List[Path]:
    """Write ``OUT_DIR/<family>.png`` (default ``RUN_DIR/plots``) for every family of keys in
    ``RUN_DIR/metrics.jsonl`` (:func:`family_of`; ``warn``: see :func:`read_series`)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed, works on any headless machine
    import matplotlib.pyplot as plt

    series = read_series(Path(run_dir) / "metrics.jsonl", warn)
    groups = group_by_prefix(series)
    if not groups:
        return []
    minutes = minutes_of_steps(series[TIME_KEY]) if TIME_KEY in series else None
    last_step = max(step for steps, _ in series.values() for step in steps)
    out_dir = Path(out_dir) if out_dir is not None else Path(run_dir) / "plots"
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for family, members in groups.items():
        fig = family_figure(family, members, minutes, Path(run_dir).name, last_step)
        path = out_dir / f"{family}.png"
        try:
            with interrupt.deferred():  # a signal lands between two files, not inside one
                with atomic_file(path, "plot") as tmp:
                    fig.savefig(tmp, dpi=80)
                interrupt.phase("write")
        finally:  # a failed write too: open figures would pile up over a long run
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
