"""What the panel's figures decide, and the tables that show them (docs/photos.md, "The panel").

The rule: a lever (a candidate setting) is adopted over the baseline only when EVERY yardstick of
the panel prefers it, each by its median "x floor" over the seeds both settings ran, and only with
at least MIN_SEEDS such seeds, and by more than the figures' own noise (NOISE_Z standard errors of
the two medians' difference, each median a figure that is the mean of its run's noise draws: a
lead that scoring the same generators again could undo is a tie). One run is not a figure: the
spread of the seeds (worst / best, lower is better on every yardstick) is shown beside each median.
"""

from __future__ import annotations

import math
import statistics
from typing import Dict, List, Optional, Sequence

from benchmarks.photos.panel import LABELS, YARDSTICKS

MIN_SEEDS = 3
NOISE_Z = 2.0  # a median's lead must be wider than this many standard errors of the two medians' difference


def figure_noise(entry: dict) -> float:
    """The relative standard error of a figure that is the mean of its noise draws (``draws``: each
    draw's x floor): about how far scoring the same generator on other draws moves it; 0 with one."""
    draws = entry.get("draws") or []
    if len(draws) < 2:
        return 0.0
    return statistics.stdev(draws) / math.sqrt(len(draws)) / statistics.mean(draws)


def spread(values: Sequence[float]) -> float:
    """Worst over best (lower is better, so max / min): 1.0 when every seed agrees."""
    return max(values) / min(values) if min(values) > 0 else float("inf")


def median_noise(entries: Sequence[dict]) -> float:
    """The relative standard error of the median of ``entries`` (one yardstick's scores of several
    runs): that of the run at the median, the larger of the two middle ones for an even count."""
    ranked = sorted(entries, key=lambda e: e["x_floor"])
    middle = ranked[(len(ranked) - 1) // 2 : len(ranked) // 2 + 1]
    return max((figure_noise(e) for e in middle), default=0.0)


def verdict(
    records: Sequence[dict],
    baseline: str,
    candidate: str,
    yardsticks: Sequence[str] = YARDSTICKS,
    min_seeds: int = MIN_SEEDS,
) -> dict:
    """``{candidate, baseline, seeds, medians, noise, prefers, adopted, reason}`` over the seeds both
    ran; ``noise``: per yardstick, the relative standard error of the two medians' difference, from
    their runs' noise draws (0 where figures have one draw)."""
    ran = {
        s: {r["seed"]: r["panel"] for r in records if r["setting"] == s and "panel" in r}
        for s in (baseline, candidate)
    }
    seeds = sorted(set(ran[baseline]) & set(ran[candidate]))
    medians: Dict[str, List[float]] = {}
    noise: Dict[str, float] = {}
    prefers: Dict[str, bool] = {}
    for name in yardsticks:
        base, cand = ([ran[s][seed][name] for seed in seeds if name in ran[s][seed]] for s in (baseline, candidate))
        if len(base) == len(cand) == len(seeds) and seeds:
            medians[name] = [statistics.median(e["x_floor"] for e in side) for side in (base, cand)]
            noise[name] = math.hypot(median_noise(base), median_noise(cand))
            prefers[name] = medians[name][1] < medians[name][0] * (1 - NOISE_Z * noise[name])
    out = {
        "candidate": candidate,
        "baseline": baseline,
        "seeds": seeds,
        "medians": medians,
        "noise": noise,
        "prefers": prefers,
    }
    if len(seeds) < min_seeds:
        return {**out, "adopted": False, "reason": f"{len(seeds)} seed(s) side by side; the rule needs {min_seeds}"}
    missing = [name for name in yardsticks if name not in prefers]
    if missing:
        return {**out, "adopted": False, "reason": f"no figure of {', '.join(missing)} for every seed"}
    against = [name for name in yardsticks if not prefers[name]]
    if against:
        # Ahead, but by less than its noise: say so, so that a tie is not read as a loss.
        ties = [name for name in against if medians[name][1] < medians[name][0]]
        tied = f" (ahead inside its noise: {', '.join(ties)})" if ties else ""
        return {**out, "adopted": False, "reason": f"not preferred by {', '.join(against)}{tied}"}
    return {**out, "adopted": True, "reason": f"every yardstick prefers it (median of {len(seeds)} seeds)"}


def cell(values: Sequence[float]) -> str:
    """``median (each seed) spread``, e.g. ``2.10 (1.90, 2.10, 2.60) 1.37x``."""
    if not values:
        return "-"
    median = statistics.median(values)
    if len(values) == 1:
        return f"{median:.2f}"
    return f"{median:.2f} ({', '.join(f'{v:.2f}' for v in values)}) {spread(values):.2f}x"


def table(records: Sequence[dict], settings: Sequence[str], key: str = "panel") -> str:
    """A markdown table: a row per setting, each yardstick's x floor (median, seeds in order, spread)."""
    head = "| setting | seeds | " + " | ".join(f"{LABELS[n]}, x floor" for n in YARDSTICKS) + " | updates |"
    lines = [head, "|" + "---|" * (len(YARDSTICKS) + 3)]
    for setting in settings:
        rows = sorted((r for r in records if r["setting"] == setting and key in r), key=lambda r: r["seed"])
        if not rows:
            continue
        cells = [cell([r[key][name]["x_floor"] for r in rows if name in r[key]]) for name in YARDSTICKS]
        updates = statistics.median(r.get("updates") or 0 for r in rows)
        seeds = ", ".join(str(r["seed"]) for r in rows)
        lines.append(f"| {setting} | {seeds} | " + " | ".join(cells) + f" | {updates:,.0f} |")
    return "\n".join(lines)


def draw_noise_line(records: Sequence[dict], key: str = "panel") -> str:
    """Per yardstick, the widest worst / best of one run's noise draws (``draws`` of its scores),
    and the widest relative standard error of their mean, the figure the tables show: a spread of
    seeds far wider than that error is in the runs, not in the yardstick."""
    parts = []
    for name in YARDSTICKS:
        entries = [r[key][name] for r in records if len(r.get(key, {}).get(name, {}).get("draws", [])) > 1]
        if entries:
            widest = max(spread(e["draws"]) for e in entries)
            error = max(figure_noise(e) for e in entries)
            parts.append(f"{LABELS[name]} {widest:.2f}x (their mean +-{error:.1%})")
    return "one generator, its noise drawn again: up to " + ", ".join(parts) if parts else ""


def verdict_line(v: dict) -> str:
    medians = ", ".join(f"{n} {b:.2f} -> {c:.2f}" for n, (b, c) in v["medians"].items())
    word = "ADOPT" if v["adopted"] else "keep the baseline"
    return f"{v['candidate']} vs {v['baseline']}: {word}: {v['reason']} ({medians})"


# ---- along the run ---------------------------------------------------------------------------
def along_run_summary(points: Sequence[dict], best_step: Optional[int], tolerance: float = 0.1) -> List[str]:
    """Per yardstick: the step of its best x floor among the checkpoints (``points``: ``{step,
    scores: {yardstick: x_floor}}`` in step order), whether it then fell (the last point more than
    ``tolerance`` above the peak), and how far the run's best_generator/ step sits from the peak."""
    lines = []
    for name in YARDSTICKS:
        series = [(p["step"], p["scores"][name]) for p in points if name in p["scores"]]
        if not series:
            continue
        peak_step, peak = min(series, key=lambda sv: sv[1])
        last_step, last = series[-1]
        shape = (
            f"peaks at step {peak_step:,} ({peak:.2f}x) then falls to {last:.2f}x at step {last_step:,}"
            if last > peak * (1 + tolerance)
            else f"best at step {peak_step:,} ({peak:.2f}x); the last, step {last_step:,}, within {tolerance:.0%} ({last:.2f}x)"
        )
        kept = ""
        if best_step is not None:
            held = dict(series).get(best_step)
            at = f" ({held:.2f}x there)" if held is not None else ""
            kept = f"; best_generator/ holds step {best_step:,}{at}, {best_step - peak_step:+,} steps from the peak"
        lines.append(f"{LABELS[name]}: {shape}{kept}")
    return lines
