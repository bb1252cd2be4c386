"""A run's length from a wall-clock budget (``--time_budget 15m``).

Users think in minutes, not in steps: the run measures its own throughput over its first updates
and sets its length (``max_steps`` and the learning-rate schedule's) so that it ends inside the
budget with its checkpoint and exports written. It measures again as it goes (evaluations, grids
and checkpoints are in the average, and a busy machine slows it down), so the plan follows the
real pace, and plans again at once when the pace changes (see DRIFT). The budget and the time
already spent are saved in every checkpoint: a resumed run keeps the total, it does not start a
fresh budget, and trains the time that is left.

The arithmetic is in pure functions (tested directly); :class:`TimeBudget` holds the clock.
"""

from __future__ import annotations

import math
import os
import re
from collections import deque
from statistics import median
from time import monotonic
from typing import Callable, Dict, List, Optional

import torch

from .threads import ThreadProbe

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smh])")

# Held back for the end of the run (final checkpoint, exports, last grid, animation): this share
# of the budget, and at least the measured cost of the end-of-run work once it is known.
END_RESERVE_SHARE = 0.04
END_RESERVE_MIN_S = 2.0
# The first plan once this share of the budget (and at least MIN_MEASURE_S) has been measured;
# a new plan every REPLAN_SHARE of the budget after that.
MEASURE_SHARE = 0.02
MIN_MEASURE_S = 1.0
REPLAN_SHARE = 0.1
# The shortest budget accepted: a run needs start-up, MIN_MEASURE_S of measured pace before its
# first plan and END_RESERVE_MIN_S for its exports; a 0.5s budget ran 16 times over without a word.
MIN_BUDGET_S = 5.0
# The pace changes (another process takes the cores, the thread count changes): a plan made at the
# old pace would end the run far from its budget (a 90 s run planned at 1.2 s per update, then
# switched to 18 ms per update, ended after 12.7 s), so the run plans again, between the regular
# plans, when the pace of its last RECENT_CHECKS clock checks (their median: one slow checkpoint or
# grid is not a new pace) is DRIFT times faster than the plan's, or slow enough that the planned
# steps would eat more than half of the end-of-run reserve; and when it reaches its planned length
# with more than END_SLACK_SHARE of the budget left (a pace that sped up since the last plan).
DRIFT = 1.5
RECENT_CHECKS = 5
MIN_RECENT_CHECKS = 3
END_SLACK_SHARE = 0.02
UNPLANNED_STEPS = 10**9  # the length before the first plan: never reached, a schedule stays at its start


def parse_duration(text: str) -> float:
    """``"15m"`` -> 900.0; also ``"2h"``, ``"90s"``, ``"1h30m"``, ``"1.5h"``; a bare number is
    seconds. Raises ValueError on anything else or a duration that is not positive."""
    cleaned = str(text).strip().lower().replace(" ", "")
    if re.fullmatch(r"\d+(?:\.\d+)?", cleaned):
        seconds = float(cleaned)
    elif cleaned and _PART.sub("", cleaned) == "":
        seconds = sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(cleaned))
    else:
        raise ValueError(f"{text!r} is not a duration; write e.g. 90s, 15m, 2h or 1h30m")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{text!r}: the duration must be positive")
    return seconds


def parse_budget(text: str) -> float:
    """:func:`parse_duration`, refusing a budget too short for a run to start, plan and export."""
    seconds = parse_duration(text)
    if seconds < MIN_BUDGET_S:
        raise ValueError(
            f"{text!r} is too short: a run needs at least {MIN_BUDGET_S:g}s to start, measure its pace and "
            "write its exports"
        )
    return seconds


def format_duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.2f}h"


def end_reserve(budget_s: float, end_cost_s: float) -> float:
    """Seconds kept for the end of the run."""
    return max(END_RESERVE_SHARE * budget_s, END_RESERVE_MIN_S, end_cost_s)


def process_age_s() -> float:
    """Seconds since this process started (Linux: /proc), so that the budget also covers the
    interpreter's start and the imports, which the user waits for too; 0 where unknown."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as uptime:
            now = float(uptime.read().split()[0])
        return max(0.0, now - int(fields[19]) / os.sysconf("SC_CLK_TCK"))  # field 22: start time in ticks
    except (OSError, ValueError, IndexError):
        return 0.0


def planned_steps(budget_s: float, elapsed_s: float, step: int, seconds_per_step: float, reserve_s: float) -> int:
    """The last step that still ends inside the budget: the steps that fit in what is left after
    the reserve, at the measured pace, after the ``step`` already done (never fewer than that)."""
    left = budget_s - elapsed_s - reserve_s
    if left <= 0 or not seconds_per_step > 0:
        return step
    return step + int(left // seconds_per_step)


class TimeBudget:
    """The clock of a budgeted run. Call :meth:`check` after every update on every process;
    it returns a new ``max_steps`` when it (re)plans, else None. The decisions use the elapsed time
    agreed across processes (their largest), so every rank plans the same length at the same
    step. ``agree``: the element-wise largest of a list of numbers over the processes (the
    elapsed time and the end-of-run cost, which only the main process measures when it evaluates).
    ``threads``: the probe that lowers the thread count on a busy CPU, fed the same agreed time
    (gan_accel.loop.threads)."""

    def __init__(
        self,
        budget_s: float,
        clock: Optional[Callable[[], float]] = None,
        agree: Optional[Callable[[List[float]], List[float]]] = None,
        already_spent: Optional[float] = None,
        threads: Optional[ThreadProbe] = None,
    ) -> None:
        """``already_spent``: seconds this process spent before (default: its age)."""
        self.budget_s = budget_s
        self.clock = clock or monotonic  # looked up here: tests run a whole training on a simulated clock
        self.agree = agree or (lambda values: values)
        self.start = self.clock()
        self.elapsed_before = 0.0  # spent by the runs this one resumes
        self.startup_s = process_age_s() if already_spent is None else already_spent
        self.end_cost_s = 0.0  # measured cost of the end-of-run work, when known
        # Time in timed hooks (evaluations) is not the pace of training: it is left out of the pace
        # and planned for apart (future_cost_s: the evaluations still to come before the end).
        self.hook_s = 0.0
        self.future_cost_s = 0.0
        self.max_steps = UNPLANNED_STEPS
        self.planned_before: Optional[int] = None  # the length the run this one resumes had planned
        self._measure_from: Optional[tuple] = None  # (step, elapsed) where this process's pace is measured from
        self._next_plan_at = 0.0
        self.threads = threads
        self._last_plan: Optional[tuple] = None  # (step, training seconds) at the last plan: the recent pace
        self.plan_pace: Optional[float] = None  # seconds per update the last plan assumed
        self._recent: deque = deque(maxlen=RECENT_CHECKS)  # seconds per update between the last checks
        self._last_check: Optional[tuple] = None  # (step, training seconds)

    def elapsed(self) -> float:
        return self.elapsed_before + self.startup_s + self.clock() - self.start

    def check(self, step: int) -> Optional[int]:
        elapsed, end_cost_s, hook_s, future_cost_s = self.agree(
            [self.elapsed(), self.end_cost_s, self.hook_s, self.future_cost_s]
        )
        train_s = elapsed - hook_s
        # The new count's measured pace when the probe just changed the thread count
        threads_pace = self.threads.observe(step, train_s) if self.threads is not None else None
        if self._last_check is not None and step > self._last_check[0]:
            self._recent.append((train_s - self._last_check[1]) / (step - self._last_check[0]))
        self._last_check = (step, train_s)
        if self._measure_from is None:
            # From the first update on: set-up and the first update (allocations, compilation)
            # are not the pace of the rest.
            self._measure_from = (step, elapsed, hook_s)
            self._last_plan = (step, train_s)
            self._next_plan_at = elapsed + max(MIN_MEASURE_S, MEASURE_SHARE * self.budget_s)
            return None
        reserve = end_reserve(self.budget_s, end_cost_s) + future_cost_s
        new_pace = self._pace_change(step, elapsed, reserve, threads_pace)
        if new_pace is not None:
            # A new pace: planned at once, and measured from here on (the average since the start
            # would mix the old pace in for the rest of the run).
            self._measure_from = (step, elapsed, hook_s)
            self._recent.clear()
            return self._plan(step, elapsed, train_s, reserve, new_pace, probe=threads_pace is None)
        if elapsed < self._next_plan_at or step <= self._measure_from[0]:
            return None
        training_s = elapsed - self._measure_from[1] - (hook_s - self._measure_from[2])
        seconds_per_step = max(training_s, 0.0) / (step - self._measure_from[0])
        return self._plan(step, elapsed, train_s, reserve, seconds_per_step)

    def _pace_change(
        self, step: int, elapsed: float, reserve: float, threads_pace: Optional[float]
    ) -> Optional[float]:
        """The pace to plan again at now, between the regular plans; None: the plan holds."""
        if self.plan_pace is None:
            return None  # the first plan is still being measured
        if threads_pace is not None:
            return threads_pace
        recent = median(self._recent) if self._recent else self.plan_pace
        left = self.budget_s - elapsed - reserve
        if step >= self.max_steps:
            return recent if left > END_SLACK_SHARE * self.budget_s and left >= recent > 0 else None
        probing = self.threads is not None and self.threads.window is not None
        if probing or len(self._recent) < MIN_RECENT_CHECKS:
            return None  # a probe's windows change the pace on purpose, and end within 1-2% of the budget
        if (self.max_steps - step) * recent > left + reserve / 2 or recent * DRIFT < self.plan_pace:
            return recent
        return None

    def _plan(
        self, step: int, elapsed: float, train_s: float, reserve: float, seconds_per_step: float, probe: bool = True
    ) -> int:
        """``probe``: whether the thread probe may start (not right after it changed the count)."""
        self.max_steps = max(step, planned_steps(self.budget_s, elapsed, step, seconds_per_step, reserve))
        self.plan_pace = seconds_per_step
        self._next_plan_at = elapsed + REPLAN_SHARE * self.budget_s
        if self.threads is not None and probe:
            # The pace since the last plan, not the run's average: a machine that just got busy shows.
            recent_pace = (train_s - self._last_plan[1]) / max(1, step - self._last_plan[0])
            self.threads.plan(step, train_s, recent_pace)
        self._last_plan = (step, train_s)
        return self.max_steps

    def spent(self, step: int) -> bool:
        """Whether nothing more fits at ``step`` (call on every process, before a resumed run
        trains): the budget minus the time spent (agreed across processes) and the end-of-run
        reserve leaves no more than END_SLACK_SHARE of it, the margin inside which a run that
        reached its planned length ends. More time left is trained (:meth:`resume_plan`), also
        after a run that had reached its plan (one that stopped at a plan made at an old pace)."""
        return self._left() <= END_SLACK_SHARE * self.budget_s

    def _left(self) -> float:
        elapsed, end_cost_s = self.agree([self.elapsed(), self.end_cost_s])
        return self.budget_s - elapsed - end_reserve(self.budget_s, end_cost_s)

    def resume_plan(self, step: int) -> Optional[int]:
        """A new length for a resumed run that had reached its planned length with time left (not
        :meth:`spent`), planned at once at the pace of its last plan; None when its plan holds."""
        if self.planned_before is None or step < self.planned_before or not self.plan_pace:
            return None
        left = self._left()
        self.max_steps = max(step, step + int(max(left, 0.0) // self.plan_pace))
        return self.max_steps

    def schedule_length(self) -> int:
        return self.max_steps

    def state_dict(self) -> Dict[str, torch.Tensor]:
        return {
            "budget_s": torch.tensor(self.budget_s, dtype=torch.float64),
            "elapsed_s": torch.tensor(self.elapsed(), dtype=torch.float64),
            "max_steps": torch.tensor(self.max_steps, dtype=torch.int64),
            "end_cost_s": torch.tensor(self.end_cost_s, dtype=torch.float64),
            "pace_s": torch.tensor(self.plan_pace or 0.0, dtype=torch.float64),  # 0: not planned yet
        }

    def load_state_dict(self, state: Dict[str, torch.Tensor]) -> None:
        """Resume: the time already spent counts against the same budget, and the plan and the
        measured cost of the run's end come back with it (without them a resumed run reserved
        less than the run it continues, and trained again until its first plan: 2% of the
        budget past a finished run), with the plan's pace (a resume at or past the planned length
        with time left plans on at once). A checkpoint of an older version holds none of them."""
        self.elapsed_before = float(state["elapsed_s"])
        self.start = self.clock()
        if "end_cost_s" in state:
            self.end_cost_s = max(self.end_cost_s, float(state["end_cost_s"]))
        if "max_steps" in state and float(state["budget_s"]) == self.budget_s:
            self.planned_before = int(state["max_steps"])
            self.max_steps = self.planned_before  # the schedule follows the last plan until the next
            # An older checkpoint holds no pace: its average (start-up included) is slower than
            # the real one, so a resume plans short and the checks then plan on at the real pace.
            if "pace_s" in state:
                pace = float(state["pace_s"])
            else:
                pace = self.elapsed_before / self.planned_before if 0 < self.planned_before < UNPLANNED_STEPS else 0.0
            self.plan_pace = pace if pace > 0 else None
