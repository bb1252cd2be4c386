"""Non-finite guard: skip an update whose gradients are NaN/Inf, stop after too many in a row."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional

import torch

from ..errors import UserError


def all_finite(tensors: Iterable[torch.Tensor]) -> torch.Tensor:
    """A 0-dim bool tensor (no host sync): True when every element of every tensor is finite."""
    tensors = [t for t in tensors if t is not None]
    if not tensors:
        return torch.tensor(True)
    # stack promotes mixed dtypes itself, and inf/NaN survive the promotion: no per-norm cast.
    return torch.stack(torch._foreach_norm(tensors)).isfinite().all()


def grads_finite(module: torch.nn.Module) -> torch.Tensor:
    return all_finite(p.grad for p in module.parameters() if p.grad is not None)


# Verdicts kept before they are counted on the device: bounds their memory when the counts are
# read back rarely (a long --log_every).
FOLD_EVERY = 256


def what_is_kept(latest: Optional[Path]) -> str:
    """How a stopped run's message ends, true whether or not a checkpoint was written before."""
    if latest is None:
        return "before any checkpoint was written"
    return f"and the last finite checkpoint is kept ({latest})"


class NonFiniteGuard:
    """Counts skipped updates on a :class:`TrainState`; raises after ``max_streak`` in a row.

    Fed on sync steps, after DDP's all-reduce, so every rank sees the same gradients and takes
    the same decision without an extra collective. ``record`` takes a Python bool (counted at
    once) or a 0-dim device tensor: then the verdicts stay on the device, with no host sync, until
    :meth:`check` (at logging and checkpoint time) counts them and raises if the streak is too long.
    """

    def __init__(
        self, state, max_streak: int, latest_checkpoint: Optional[Callable[[], Optional[Path]]] = None
    ) -> None:
        self.state = state
        self.max_streak = max_streak
        # Says what the stop leaves behind: the newest complete checkpoint, or None before any.
        self.latest_checkpoint = latest_checkpoint
        self._pending = None  # device tensor [streak, total] not yet read back
        self._verdicts: list = []  # device verdicts recorded since the last fold, oldest first

    def record(self, finite, what: str = "gradients") -> bool:
        if torch.is_tensor(finite):
            # Kept as is and counted in one go later: a handful of tiny device ops per update is
            # a visible share of a small model's update.
            self._verdicts.append(finite)
            if len(self._verdicts) >= FOLD_EVERY:
                self._fold()
            return True
        self._count(bool(finite))
        if finite:
            return True
        self._stop_if_too_long(what)
        return False

    def _count(self, finite: bool) -> None:
        if finite:
            self.state.nonfinite_streak = 0
        else:
            self.state.nonfinite_total += 1
            self.state.nonfinite_streak += 1

    def _stop_if_too_long(self, what: str) -> None:
        if self.state.nonfinite_streak >= self.max_streak:
            raise NonFiniteError(
                f"{self.state.nonfinite_streak} consecutive updates had non-finite {what} "
                f"(--max_nonfinite_steps {self.max_streak}); {self._what_is_kept()}. "
                "Lower the learning rates or check the data."
            )

    def _what_is_kept(self) -> str:
        if self.latest_checkpoint is None:
            return "the run stopped"
        return f"the run stopped {what_is_kept(self.latest_checkpoint())}"

    def _fold(self) -> None:
        """Count the recorded verdicts into the device counts (no host sync): the total grows by
        the non-finite ones; the streak grows by all of them if none was finite, else it restarts
        after the last finite one."""
        finite = torch.stack(self._verdicts)
        self._verdicts = []
        if self._pending is None:
            self._pending = torch.tensor(
                [self.state.nonfinite_streak, self.state.nonfinite_total], dtype=torch.float32, device=finite.device
            )
        streak, total = self._pending.unbind()
        n = finite.numel()
        position = torch.arange(1, n + 1, device=finite.device)
        last_finite = (finite * position).max()  # 1-based; 0 when none was finite
        streak = torch.where(last_finite == 0, streak + n, n - last_finite)
        self._pending = torch.stack([streak, total + n - finite.sum()]).float()  # exact below 2**24

    def check(self, what: str = "gradients") -> None:
        """Read the device counts and verdicts back (a host sync) and stop the run if the streak is
        too long. The verdicts since the last fold are counted here, on the host: once they are
        read back, that is cheaper than counting them on the device first."""
        if self._pending is None and not self._verdicts:
            return
        if self._pending is not None:
            streak, total = (int(v) for v in self._pending.tolist())
            self._pending = None
            self.state.nonfinite_streak, self.state.nonfinite_total = streak, total
        if self._verdicts:
            finite = torch.stack(self._verdicts).tolist()
            self._verdicts = []
            for verdict in finite:
                self._count(verdict)
        self._stop_if_too_long(what)


class NonFiniteError(UserError):
    """Training diverged: too many consecutive non-finite updates."""
