"""Fewer threads when the CPU is busy (``--adapt_threads``, on in a ``--time_budget`` run on a CPU).

Every parallel region of an update waits for its slowest thread: when other processes share the
cores, a descheduled thread stalls them all (the digits demo ran 10x slower beside two other
trainings on 2 cores, at 1.06 s per update against 0.10 s idle). The budget's clock already
measures the pace; at its plans it times a short window of real training updates with the
current thread count and one with the next count down (or, once lowered, back up), and keeps the
faster. Nothing is run twice and nothing is copied: the windows are the run's own updates.

The decision is a pure function of the measured paces (:func:`choose_threads`); :class:`ThreadProbe`
holds the windows, fed by :class:`~gan_accel.loop.budget.TimeBudget` with the elapsed time its
processes agreed on, so that every process switches at the same step to the same count.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, Optional

import torch

# A lower count must be at least this much faster: on an idle machine it leaves cores unused, and
# a shared machine's pace jitters by a few percent from one window to the next.
FEWER_MARGIN = 1.1
# A probe at a later plan only when the pace since the last plan is this much slower than the
# pace the last probe measured (the machine got busier), or while the count is lowered (it may be
# free again). The first plan always probes.
SLOWDOWN = 1.5
# Each window: this share of the budget, and at least MIN_WINDOW_STEPS updates.
WINDOW_SHARE = 0.01
MIN_WINDOW_STEPS = 3
# The second window ends after one update when it is already this much slower than the first: it
# cannot win, and its updates are the probe's whole cost (2 threads on a busy 2-core Xeon took 3 s
# per update against 0.25 s with 1; three of them spent a tenth of a 90 s budget).
HOPELESS = 1.5


def other_count(current: int, start: int) -> int:
    """The count to compare ``current`` with: half of it (at least 1), or, once lowered below the
    starting count, twice it (at most the start)."""
    if current < start:
        return min(start, current * 2)
    return max(1, current // 2)


def choose_threads(start: int, paces: Dict[int, float]) -> int:
    """The thread count to keep, from ``paces``: seconds per update measured with each count.
    Counts outside 1..``start`` and paces that are not positive numbers are ignored; a count lower
    than the highest measured one must be FEWER_MARGIN faster. Nothing usable: ``start``."""
    usable = {n: s for n, s in paces.items() if 1 <= n <= start and math.isfinite(s) and s > 0}
    if not usable:
        return start
    top = max(usable)
    return min(usable, key=lambda n: (usable[n] * (1.0 if n == top else FEWER_MARGIN), -n))


def should_probe(
    threads: int, start: int, recent_pace: float, probed_pace: Optional[float], plans_waited: int, wait: int
) -> bool:
    """Whether a plan probes: the first time; while the count is lowered, once ``plans_waited``
    (plans since the last probe) reaches ``wait``; at the starting count, when the pace since the
    last plan is SLOWDOWN times slower than the one the last probe measured."""
    if start <= 1:
        return False
    if probed_pace is None:
        return True
    if threads < start:
        return plans_waited >= wait
    return recent_pace > SLOWDOWN * probed_pace


def change_line(old: int, new: int, paces: Dict[int, float]) -> str:
    """What the run prints (and why) when it changes its thread count."""
    why = "the CPU is busy; other processes share its cores" if new < old else "the CPU has free cores again"
    return (
        f"threads: {old} -> {new}: {paces[old] * 1000:.0f} ms per update with {old} thread{'s' * (old > 1)}, "
        f"{paces[new] * 1000:.0f} ms with {new} ({why})"
    )


class ThreadProbe:
    """The windows of one probe at a time. :meth:`plan` (at the budget's plans) may start one;
    :meth:`observe` (at every clock check) ends a window once it is long enough, switches to the
    other count, and after the second window keeps the faster. ``train_s``: the agreed elapsed
    time without timed hooks (evaluations), as the budget's pace counts it."""

    def __init__(
        self,
        budget_s: float,
        say: Callable[[str], None] = print,
        set_threads: Callable[[int], None] = torch.set_num_threads,
        get_threads: Callable[[], int] = torch.get_num_threads,
    ) -> None:
        self.window_s = WINDOW_SHARE * budget_s
        self.say = say
        self.set_threads = set_threads
        self.get_threads = get_threads
        self.start = get_threads()
        self.probed_pace: Optional[float] = None  # of the count in use, from the last probe
        self.paces: Dict[int, float] = {}  # this probe's
        self.window: Optional[tuple] = None  # (threads, step, train_s) where the open window began
        # While lowered, a probe every ``wait`` plans, doubled each time the lower count wins again:
        # a machine that stays busy pays for fewer slow windows.
        self.wait = 1
        self.plans_waited = 0

    def restore(self) -> None:
        """The starting count back, after training: a later run in this process (a notebook, a
        test) starts from the user's count, not from what this one measured."""
        self.window = None
        self.set_threads(self.start)

    def plan(self, step: int, train_s: float, recent_pace: float) -> None:
        if self.window is not None:
            return
        self.plans_waited += 1
        threads = self.get_threads()
        if should_probe(threads, self.start, recent_pace, self.probed_pace, self.plans_waited, self.wait):
            self.paces = {}
            self.plans_waited = 0
            self.window = (threads, step, train_s)

    def observe(self, step: int, train_s: float) -> Optional[float]:
        """Returns the new count's measured pace (seconds per update) when it changed the count:
        the budget plans again at it."""
        if self.window is None:
            return None
        threads, from_step, from_s = self.window
        steps = step - from_step
        pace = (train_s - from_s) / steps if steps > 0 else 0.0
        hopeless = bool(self.paces) and steps > 0 and pace > HOPELESS * next(iter(self.paces.values()))
        if not hopeless and (steps < MIN_WINDOW_STEPS or train_s - from_s < self.window_s):
            return None
        self.paces[threads] = pace
        if len(self.paces) == 1:
            other = other_count(threads, self.start)
            self.set_threads(other)
            self.window = (other, step, train_s)
            return None
        self.window = None
        old = next(iter(self.paces))  # the count the probe started from
        chosen = choose_threads(self.start, self.paces)
        chosen = chosen if chosen in self.paces else old  # nothing usable measured: as before
        self.set_threads(chosen)
        self.probed_pace = self.paces[chosen]
        self.wait = self.wait * 2 if chosen == old < self.start else 1
        if chosen == old:
            return None
        self.say(change_line(old, chosen, self.paces))
        return self.paces[chosen]
