"""Batches of similar length: less padding, the same resumable, shardable order.

With dynamic padding a batch costs ``batch_size x its longest sequence``. On real text (many short
documents, a few long ones) almost every random batch holds one long document, so most of its
tokens are padding. Grouping by length removes most of it while keeping the order random enough
for SGD, with the scheme of ``transformers``' ``LengthGroupedSampler``: shuffle, cut into
mega-batches of ~50 batches, sort each mega-batch by length, then shuffle the batches.

:class:`LengthGroupedSampler` is a :class:`ResumableSampler` whose permutation is that order, so it
stays a pure function of (seed, epoch) and resumes at any position the same way. It yields
indices, not batches: the DataLoader cuts them into consecutive runs of ``batch_size``, which are
exactly the sorted batches built here as long as every full batch comes before the one short
batch (kept last). Accelerate then deals whole batches round-robin to the processes, and a
resume position is a multiple of the global batch, so every process still sees whole sorted
batches.
"""

from __future__ import annotations

from typing import List, Sequence

import torch

from .sampler import ResumableSampler

MEGA_BATCH_BATCHES = 50  # transformers' LengthGroupedSampler uses 50 as well


def mega_batch_size(num_samples: int, batch_size: int) -> int:
    """Samples per mega-batch: ~50 batches, fewer on a small dataset so there are still at least
    ~4 mega-batches to shuffle between (transformers' rule)."""
    batches = min(MEGA_BATCH_BATCHES, num_samples // (4 * batch_size))
    return max(1, batches) * batch_size


def sorted_mega_batches(lengths: torch.Tensor, batch_size: int, generator: torch.Generator) -> List[torch.Tensor]:
    """A random permutation cut into mega-batches, each sorted by decreasing length (stable: equal
    lengths keep the shuffled order). Draws one ``randperm`` from ``generator``."""
    perm = torch.randperm(len(lengths), generator=generator)
    return [
        c[torch.sort(lengths[c], descending=True, stable=True).indices]
        for c in perm.split(mega_batch_size(len(lengths), batch_size))
    ]


def length_grouped_order(lengths: torch.Tensor, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """Indices such that each run of ``batch_size`` is one batch of close lengths.

    ``lengths``: [N] int. Mega-batches are whole batches, so no batch straddles two. The longest
    batch comes first, so a run that does not fit in memory fails at its first step rather than
    hours in; the short last batch (N % batch_size samples, if any) stays last so the full
    batches stay aligned with the DataLoader's cuts.
    """
    batches = list(torch.cat(sorted_mega_batches(lengths, batch_size, generator)).split(batch_size))
    tail = [batches.pop()] if len(batches[-1]) < batch_size else []
    if not batches:  # fewer samples than one batch
        return torch.cat(tail)
    batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
    longest = max(range(len(batches)), key=lambda i: int(lengths[batches[i][0]]))
    batches[0], batches[longest] = batches[longest], batches[0]
    return torch.cat(batches + tail)


class LengthGroupedSampler(ResumableSampler):
    """:class:`ResumableSampler` whose shuffled order groups samples of similar length per batch.

    ``batch_size`` must be the DataLoader's batch size (per process): the order is cut into
    batches of exactly that size. ``set_position``/``set_epoch`` behave as in the parent.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int = 0) -> None:
        super().__init__(len(lengths), seed=seed, shuffle=True)
        self.lengths = torch.as_tensor(list(lengths), dtype=torch.long)
        self.batch_size = batch_size

    def permutation(self, epoch: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
        return length_grouped_order(self.lengths, self.batch_size, g)


def longest_first(lengths: Sequence[int]) -> List[int]:
    """The evaluation order: indices by decreasing length (stable), so each evaluation batch pads
    to little more than its own texts. Metrics do not depend on the order; callers that return
    per-example results put them back with :func:`restore_order`."""
    return torch.sort(torch.as_tensor(list(lengths), dtype=torch.long), descending=True, stable=True).indices.tolist()


def restore_order(items: Sequence, order: Sequence[int]) -> list:
    """``items[k]`` belongs to input ``order[k]``: return them in input order."""
    out = [None] * len(order)
    for item, i in zip(items, order):
        out[i] = item
    return out
