"""What a run on your own images adds to the GAN task (docs/photos.md): ADA's adjustments,
the time budget's plan, cadences sized to the run's length, the best generator's score file, the
verdict best-vs-last, and the animation of the sample grids. :mod:`.trainer` adds each piece in
one line (engine items from :class:`RunExtras`)."""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional

import torch

from ..engine import UPDATE, Hook, State
from ..loop.atomic import atomic_file, write_text_atomic
from ..loop.budget import TimeBudget, format_duration, parse_duration
from ..loop.checkpoint import json_safe
from ..loop.rundir import SCORE_FILE
from ..loop.threads import ThreadProbe
from ..metrics.result import FLOORED as COMPARED  # per metric, the field judged against its interval
from .ada import AdaptiveAugment
from .config import GANTrainArguments

BEST_FILE = SCORE_FILE  # in best_generator/: the metric, its value and the step it was reached at
GIF_NAME = "training.gif"
# A budgeted run spends at most this share of its budget on evaluations: fewer of them when one
# costs more (measured on the first).
EVAL_SHARE = 0.15


def build_ada(train: GANTrainArguments, device: torch.device) -> Optional[AdaptiveAugment]:
    if not train.ada:
        return None
    return AdaptiveAugment(train.ada_target, train.ada_kimg, train.ada_interval, device, p=train.ada_initial_p)


def adapts_threads(train: GANTrainArguments, device_type: str, environ) -> bool:
    """Whether a budgeted run may lower its thread count on a busy CPU: on a CPU, with
    --adapt_threads, and unless the user chose the count (OMP_NUM_THREADS). A GPU's speed does
    not follow the CPU's threads."""
    return (
        train.time_budget is not None
        and train.adapt_threads
        and device_type == "cpu"
        and ("OMP_NUM_THREADS" not in environ)
    )


def build_budget(train: GANTrainArguments, accelerator, say: Callable[[str], None]) -> Optional[TimeBudget]:
    if train.time_budget is None:
        return None
    budget_s = parse_duration(train.time_budget)
    threads = ThreadProbe(budget_s, say=say) if adapts_threads(train, accelerator.device.type, os.environ) else None

    def agree(values: List[float]) -> List[float]:
        # Every rank must plan the same length at the same step: the slowest clock, the largest cost.
        if accelerator.num_processes == 1:
            return values
        gathered = accelerator.gather(torch.tensor([values], dtype=torch.float64, device=accelerator.device))
        return gathered.max(dim=0).values.tolist()

    return TimeBudget(budget_s, agree=agree, threads=threads)


def every_for(length: int, count: int) -> int:
    """The cadence that spreads ``count`` events over ``length`` steps (the last one at the end)."""
    return max(1, length // count)


class RunExtras:
    """ADA's adjustments, the budget's plan and the cadences that follow the run's length, as
    engine items (:meth:`items`: ``State`` for ADA and the budget, one ``UPDATE`` hook)."""

    def __init__(
        self, engine, run, ada: Optional[AdaptiveAugment], budget: Optional[TimeBudget], check_every: int
    ) -> None:
        self.engine = engine
        self.run = run
        self.ada = ada
        self.budget = budget
        self.check_every = check_every if run.accelerator.num_processes > 1 else 1  # the clock check syncs ranks
        self.sized_hooks: List[tuple] = []
        self.hook_seconds = 0.0  # the longest timed hook (an evaluation) so far
        self.announced = False

    def items(self) -> list:
        """What the engine gets: ADA's p and sums and the budget's clock in every checkpoint, and
        the per-update hook (before logging, so aug/p is this step's)."""
        items = [Hook(self.after_update, when=UPDATE)]
        if self.ada is not None:
            items.append(State("ada", self.ada))
        if self.budget is not None:
            items.append(State("budget", self.budget))
        return items

    def size_hook(self, hook, count: int, timed: bool = False) -> None:
        """Run ``hook`` ``count`` times over the run, whatever length the run ends up with;
        ``timed``: fewer times if that would spend more than EVAL_SHARE of the budget (the hook's
        function must be wrapped by :meth:`timed`)."""
        if count > 0:
            self.sized_hooks.append((hook, count, timed))
            self.resize(hook, count, timed)

    def resize(self, hook, count: int, timed: bool) -> None:
        if timed and self.budget is not None and self.hook_seconds > 0:
            count = min(count, int(EVAL_SHARE * self.budget.budget_s / self.hook_seconds))
        # 0: none on a count; an evaluation still ends the run (the hook's at_end).
        hook.every = every_for(self.engine.max_steps, count) if count > 0 else 0
        if timed and self.budget is not None and hook.every:
            # The evaluations still to come before the last one (which end_cost_s covers).
            to_come = max(0, (self.engine.max_steps - 1) // hook.every - self.run.state.step // hook.every)
            self.budget.future_cost_s = to_come * self.hook_seconds

    def after_update(self) -> None:
        step = self.run.state.step
        if self.ada is not None and self.ada.due(step):
            self.ada.adjust(self.run.accelerator)
        if self.budget is not None and self.budget.threads is not None and self.engine.logger is not None:
            # The count in use, as a metric: a slow stretch in the plots shows its cause.
            self.engine.logger.accumulate({"sys/threads": torch.get_num_threads()})
        # Also at the planned length, on every rank alike: with time left the run plans on.
        if self.budget is not None and (step % self.check_every == 0 or step >= self.engine.max_steps):
            planned = self.budget.check(step)
            if planned is not None:
                self.set_length(planned)

    def set_length(self, max_steps: int) -> None:
        self.engine.max_steps = max_steps
        for hook, count, timed in self.sized_hooks:
            self.resize(hook, count, timed)
        logger = self.engine.logger
        if logger is not None:
            logger.bar.total = max_steps
            logger.bar.refresh()
        if self.run.config.get("max_steps") != max_steps:
            self.run.record_config(max_steps=max_steps)  # config.json says the length the run trains for
        if not self.announced:
            self.announced = True
            budget = self.budget
            self.run.print(
                f"--time_budget {format_duration(budget.budget_s)}: {format_duration(budget.elapsed())} "
                f"spent by step {self.run.state.step}; planned length {max_steps} steps "
                "(re-planned as the run goes)"
            )

    def end_if_spent(self) -> None:
        """Before training: a resumed run whose budget is spent trains nothing, and one that had
        reached its planned length with time left plans its new length at once. Its first plan would
        only come after 2% of the budget, and the steps until then would overrun it and replace the
        exports. (A fresh run whose start-up alone took the budget still trains to its first plan.)"""
        budget, step = self.budget, self.run.state.step
        if budget is None or step == 0:
            return
        if not budget.spent(step):
            planned = budget.resume_plan(step)  # it had reached its plan with time left: it trains on
            if planned is not None:
                self.set_length(planned)
            return
        self.run.print(
            f"--time_budget {format_duration(budget.budget_s)}: {format_duration(budget.elapsed())} already spent "
            f"by step {step}"
        )
        self.announced = True  # no plan to announce: the run's length is where it stands
        self.set_length(step)

    def timed(self, fn: Callable[[], dict]) -> Callable[[], dict]:
        """``fn`` with its duration counted into the end-of-run reserve (the last evaluation runs
        after the last step, inside the budget)."""

        def wrapped():
            start = time.monotonic()
            try:
                return fn()
            finally:
                seconds = time.monotonic() - start
                self.hook_seconds = max(self.hook_seconds, seconds)
                if self.budget is not None:
                    self.budget.hook_s += seconds
                    # The final evaluation and the exports after the last step.
                    self.budget.end_cost_s = max(self.budget.end_cost_s, 1.5 * self.hook_seconds)
                    for hook, count, timed in self.sized_hooks:
                        self.resize(hook, count, timed)

        return wrapped


def real_subset(real, limit: int):
    """A fixed random subset of ``limit`` images of the ImageData ``real`` (all when 0 or fewer):
    the same images in every run of the same folder, so the evaluation cache is reused."""
    from ..data import ImageData

    n = len(real)
    if limit <= 0 or n <= limit:
        return real
    rows = torch.randperm(n, generator=torch.Generator().manual_seed(0))[:limit].sort().values
    labels = real.labels[rows] if real.labels is not None else None
    return ImageData(real.images[rows], labels, real.class_names, name=f"{real.name}[{limit} of {n}]")


# ---- outputs at the end --------------------------------------------------------------------
def write_best_score(
    folder: Path, key: str, value: Optional[float], step: int, saturated: Optional[Dict[str, int]] = None
) -> None:
    """``score.json``: the metric that chose the export (``last`` when none separates any more), its
    value, the step, and the step at which each metric had saturated by then."""
    record = {"metric": key, "value": value, "step": step, "saturated": dict(saturated or {})}
    write_text_atomic(Path(folder) / BEST_FILE, json.dumps(record, indent=2) + "\n", "best score")


EVAL_RESULTS = "eval_results.json"  # in the run folder: the latest evaluation, what selects and what saturated


def write_eval_results(
    folder: Path, result, step: int, selecting: str, saturated: Dict[str, int], newly: List[str]
) -> None:
    """``eval_results.json``: the latest evaluation in evaluate-gan's format (compare-metrics reads
    either), its step, the metric that now chooses best_generator/ (``last`` when none separates),
    the step at which each metric saturated, and which saturated at this evaluation."""
    # An evaluator of one's own may return any object with flat(); NaN (a diverged generator) is null.
    values = asdict(result) if is_dataclass(result) else result.flat()
    record = {
        **values,
        "step": step,
        "selecting": selecting,
        "saturated_since": dict(saturated),
        "newly_saturated": list(newly),
    }
    write_text_atomic(Path(folder) / EVAL_RESULTS, json.dumps(json_safe(record), indent=2) + "\n", "results")


def read_best_score(folder: Path) -> Optional[dict]:
    try:
        return json.loads((Path(folder) / BEST_FILE).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def ties_best(metrics: Dict[str, float], key: str, best: float) -> bool:
    """Whether a later evaluation that scored a higher ``key`` (``eval/fid``, ``eval/swd``) than the
    best is indistinguishable from it: the best value lies inside this evaluation's bootstrap interval
    (its low end, ``<key>_ci_low``, is not above it).

    Late in a run the domain FID sits near or below its real-data floor and moves within its own
    interval from one evaluation to the next; keeping the earlier generator on such a difference
    threw away the later one's extra training, which an independent judge scored as good or better.
    An evaluation without an interval never ties."""
    low = metrics.get(f"{key}_ci_low")
    return low is not None and math.isfinite(low) and low <= best


# The metrics with a real-vs-real floor: eval/ key -> (label, name in the flat keys, floor key).
FLOORED = {
    "eval/fid": ("FID", "fid", "eval/fid_floor"),
    "eval/kid_mean": ("KID", "kid", "eval/kid_floor_mean"),
    "eval/swd": ("SWD", "swd", "eval/swd_floor"),
}
METRIC_LABELS = {key: label for key, (label, _, _) in FLOORED.items()}
SELECTING = ("eval/fid", "eval/swd")  # what may pick best_generator/, in that order


def saturated_keys(metrics: Dict[str, float]) -> List[str]:
    """The eval/ keys of the metrics this evaluation marks saturated (``eval/<name>_saturated``)."""
    return [key for key, (_, name, _) in FLOORED.items() if metrics.get(f"eval/{name}_saturated") == 1.0]


def saturation_line(key: str, metrics: Dict[str, float], step: int, selecting: Optional[str]) -> str:
    """The one line a run prints when ``key`` first saturates, and what picks best_generator/ since."""
    label, name, floor = FLOORED[key]
    low, high = metrics.get(f"eval/{name}_floor_ci_low"), metrics.get(f"eval/{name}_floor_ci_high")
    interval = f" [{low:.4g}, {high:.4g}]" if low is not None and high is not None else ""
    compared = f"eval/{COMPARED[name][1]}"
    full = f"; {metrics[key]:.4g} at full size" if compared != key else ""
    line = (
        f"step {step}: {label} saturated: {metrics[compared]:.4g} (at the floor's size{full}) is inside or "
        f"below its real-vs-real interval{interval} (floor {metrics[floor]:.4g}): it no longer tells generated "
        "from real images"
    )
    if key not in SELECTING:
        return line
    if selecting is None:
        return line + "; no metric separates any more: best_generator/ keeps the last generator"
    return line + f"; best_generator/ is chosen by {METRIC_LABELS[selecting]} from here"


def chosen_by(best: dict, saturated: Dict[str, int]) -> str:
    """The closing line once a metric has saturated: which metric chose best_generator/ and why."""
    since = ", ".join(
        f"{METRIC_LABELS.get(key, key)} saturated at step {step}"
        for key, step in sorted(saturated.items(), key=lambda kv: kv[1])
    )
    metric, step = best["metric"], best["step"]
    if metric not in METRIC_LABELS:
        return (
            f"best_generator/ = step {step}, the last generator: no metric separates generated from real images "
            f"any more ({since}: each inside or below its real-vs-real interval)"
        )
    if metric in saturated:
        later = [METRIC_LABELS[k] for k in SELECTING if k not in saturated]
        after = f"; {later[0]}, which chooses since, ranked no later generator better" if later else ""
        return f"best_generator/ = step {step}, chosen by {METRIC_LABELS[metric]} before it saturated ({since}){after}"
    return (
        f"best_generator/ = step {step}, chosen by {METRIC_LABELS[metric]} ({since}: inside or below its "
        "real-vs-real interval)"
    )


def best_vs_last(best: Optional[dict], last_value: Optional[float], last_step: int) -> Optional[str]:
    """The closing verdict: which export scored better (lower FID) and by how much."""
    if best is None or last_value is None or not math.isfinite(last_value):
        return None
    value, step = best["value"], best["step"]
    if step == last_step:
        return (
            f"The last generator (step {last_step}, FID {last_value:.3f}) is the one kept: "
            "generator/ = best_generator/"
        )
    if last_value <= value:
        # The kept one won a tie (its interval reached the lowest FID); the last one's did not,
        # though it scored no higher: say so rather than call either the best.
        return (
            f"The last generator (step {last_step}, FID {last_value:.3f}, generator/) scored no higher than the "
            f"kept one (step {step}, FID {value:.3f}, best_generator/)"
        )
    ratio = last_value / value if value > 0 else math.inf
    return (
        f"The best generator (step {step}, FID {value:.3f}, best_generator/) is {ratio:.2f}x better than the "
        f"last one (step {last_step}, FID {last_value:.3f}, generator/)"
    )


def write_animation(samples_dir: Path, duration_ms: int = 300, last_frame_ms: int = 1500) -> Optional[Path]:
    """``samples/training.gif`` from the fixed-noise grids ``samples/step_*.png`` in step order
    (the final grid held longer); None when there are fewer than two grids."""
    from PIL import Image

    frames_paths = sorted(Path(samples_dir).glob("step_*.png"))
    if len(frames_paths) < 2:
        return None
    frames = []
    for path in frames_paths:
        with Image.open(path) as image:
            frames.append(image.convert("RGB").quantize(colors=256))
    out = Path(samples_dir) / GIF_NAME
    durations = [duration_ms] * (len(frames) - 1) + [last_frame_ms]
    with atomic_file(out, "animation") as tmp:
        frames[0].save(tmp, format="GIF", save_all=True, append_images=frames[1:], duration=durations, loop=0)
    return out
