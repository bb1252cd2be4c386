"""Non-finite guard: skip an update whose gradients are NaN/Inf, stop after too many in a row."""
from __future__ import annotations

from typing import Iterable

import torch

from ..errors import UserError


def all_finite(tensors: Iterable[torch.Tensor]) -> torch.Tensor:
    """A 0-dim bool tensor (no host sync): True when every element of every tensor is finite."""
    tensors = [t for t in tensors if t is not None]
    if not tensors:
        return torch.tensor(True)
    norms = torch._foreach_norm(tensors)
    return torch.isfinite(torch.stack([n.float() for n in norms])).all()


def grads_finite(module: torch.nn.Module) -> torch.Tensor:
    return all_finite(p.grad for p in module.parameters() if p.grad is not None)


class NonFiniteGuard:
    """Counts skipped updates on a :class:`TrainState`; raises after ``max_streak`` in a row.

    Checked only on sync steps, after DDP's all-reduce, so every rank sees the same gradients and
    takes the same decision without an extra collective.
    """

    def __init__(self, state, max_streak: int) -> None:
        self.state = state
        self.max_streak = max_streak

    def record(self, finite: bool, what: str) -> bool:
        if finite:
            self.state.nonfinite_streak = 0
            return True
        self.state.nonfinite_total += 1
        self.state.nonfinite_streak += 1
        if self.state.nonfinite_streak >= self.max_streak:
            raise NonFiniteError(
                f"{self.state.nonfinite_streak} consecutive updates had non-finite {what} "
                f"(--max_nonfinite_steps {self.max_streak}); the run stopped and the last finite checkpoint is kept. "
                "Lower the learning rates or check the data."
            )
        return False


class NonFiniteError(UserError):
    """Training diverged: too many consecutive non-finite updates."""
