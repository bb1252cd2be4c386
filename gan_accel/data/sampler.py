"""A sampler whose data order is a pure function of (seed, epoch, position).

Exact resume needs the epoch's permutation back, not just a number of batches to skip
(``skip_first_batches`` alone re-shuffles; Accelerate #2823/#3158). Accelerate's prepared
dataloader shards the batches this sampler forms across processes and forwards ``set_epoch``.
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch.utils.data import Sampler


class ResumableSampler(Sampler[int]):
    """Shuffles ``range(num_samples)`` with ``torch.randperm`` seeded by ``seed + epoch``.

    ``set_position(epoch, start)`` makes the next iteration start ``start`` samples into that
    epoch's permutation (counted over all processes: global batches × global batch size).
    """

    def __init__(self, num_samples: int, seed: int = 0, shuffle: bool = True) -> None:
        self.num_samples = num_samples
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0
        self.start = 0
        self._pinned = False  # a set_position not yet consumed by an iteration

    def set_epoch(self, epoch: int) -> None:
        # Accelerate's prepared dataloader calls this at the start of EVERY pass with its own
        # pass counter, which is 0 in a freshly built (resumed) loader. A position set by
        # set_position for the coming pass wins over that call; otherwise a resume in epoch >= 1
        # would silently replay epoch 0.
        if self._pinned:
            return
        if epoch != self.epoch:
            self.start = 0
        self.epoch = epoch

    def set_position(self, epoch: int, start: int) -> None:
        """The next iteration yields epoch ``epoch``'s permutation from ``start`` on, whatever
        ``set_epoch`` is called with before it."""
        if not 0 <= start <= self.num_samples:
            raise ValueError(f"start {start} is outside 0..{self.num_samples}")
        self.epoch = epoch
        self.start = start
        self._pinned = True

    def permutation(self, epoch: int) -> torch.Tensor:
        if not self.shuffle:
            return torch.arange(self.num_samples)
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
        return torch.randperm(self.num_samples, generator=g)

    def __iter__(self) -> Iterator[int]:
        order = self.permutation(self.epoch)[self.start :].tolist()
        # The skip applies once: the next pass over this epoch (or the next epoch) starts at 0.
        self.start = 0
        self._pinned = False
        return iter(order)

    def __len__(self) -> int:
        return self.num_samples - self.start
