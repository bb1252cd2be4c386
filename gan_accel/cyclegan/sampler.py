"""Unpaired batches: each domain has its own shuffle, and both are a pure function of
(seed, epoch, position), so a resumed run continues both streams exactly.

An epoch is ``max(len(A), len(B))`` pairs (as the reference's ``UnalignedDataset``). Each
domain's stream is an endless chain of its own permutations (:class:`ResumableSampler`'s,
seeded per domain): the shorter domain simply runs through more of its permutations per epoch,
and no pairing of an A image with a B image ever repeats on a schedule.
"""

from __future__ import annotations

from typing import Iterator, Tuple

import torch
from torch.utils.data import Dataset

from ..data import ResumableSampler


class UnpairedSampler(ResumableSampler):
    """Yields ``(index_in_A, index_in_B)``; epochs, positions and ``set_epoch``/``set_position``
    are ResumableSampler's (``start`` counts pairs over all processes)."""

    def __init__(self, num_a: int, num_b: int, seed: int = 0) -> None:
        super().__init__(max(num_a, num_b), seed=seed)
        self.num_a = num_a
        self.num_b = num_b
        # Different seeds per domain: the two streams must not be the same permutation.
        self.domains = (ResumableSampler(num_a, seed=2 * seed), ResumableSampler(num_b, seed=2 * seed + 1))

    def stream(self, domain: int, first: int, count: int) -> torch.Tensor:
        """Indices ``first .. first + count - 1`` of a domain's endless stream of permutations."""
        sampler = self.domains[domain]
        n = sampler.num_samples
        out = []
        pos = first
        while pos < first + count:
            perm = sampler.permutation(pos // n)
            take = min(n - pos % n, first + count - pos)
            out.append(perm[pos % n : pos % n + take])
            pos += take
        return torch.cat(out) if out else torch.empty(0, dtype=torch.long)

    def __iter__(self) -> Iterator[Tuple[int, int]]:
        first = self.epoch * self.num_samples + self.start
        count = self.num_samples - self.start
        a = self.stream(0, first, count)
        b = self.stream(1, first, count)
        self.start = 0  # the skip applies once, as in ResumableSampler
        return iter(zip(a.tolist(), b.tolist()))


class PairIndex(Dataset):
    """The sampler's pairs passed through: a batch collates to ``[a_indices, b_indices]``; the
    images are gathered from the in-memory tensors of each domain."""

    def __init__(self, num_samples: int) -> None:
        self.num_samples = num_samples

    def __getitem__(self, pair: Tuple[int, int]) -> Tuple[int, int]:
        return pair

    def __len__(self) -> int:
        return self.num_samples
