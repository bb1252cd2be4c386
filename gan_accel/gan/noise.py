"""Per-step randomness that does not depend on the number of processes or on resume.

Noise for micro-step ``t`` is drawn for the whole GLOBAL batch from a generator seeded by
``(seed, t, purpose)``, and each rank takes its slice. So sample ``i`` of the global batch gets the
same ``z`` whether 1 or N processes train, and a resumed run draws exactly what the uninterrupted
one would have: there is no RNG state to save (per-rank draws would make a DDP run differ from one
process, and ``skip_first_batches`` does not restore a consumed RNG stream).
"""
from __future__ import annotations

import torch

NOISE, LABELS, GP_ALPHA, AUGMENT, SAMPLE = range(5)


class StepNoise:
    def __init__(self, seed: int, device: torch.device, num_processes: int, process_index: int, batch_size: int) -> None:
        self.seed, self.device = seed, device
        self.world, self.rank, self.batch = num_processes, process_index, batch_size
        self.generator = torch.Generator(device=device)

    def _seeded(self, micro_step: int, purpose: int) -> torch.Generator:
        return self.generator.manual_seed((self.seed * 1_000_003 + micro_step) * 8 + purpose)

    def _slice(self, x: torch.Tensor) -> torch.Tensor:
        return x[self.rank * self.batch : (self.rank + 1) * self.batch]

    def normal(self, micro_step: int, purpose: int, *shape: int) -> torch.Tensor:
        g = self._seeded(micro_step, purpose)
        return self._slice(torch.randn(self.world * self.batch, *shape, generator=g, device=self.device))

    def uniform(self, micro_step: int, purpose: int, *shape: int) -> torch.Tensor:
        g = self._seeded(micro_step, purpose)
        return self._slice(torch.rand(self.world * self.batch, *shape, generator=g, device=self.device))

    def generator_for(self, micro_step: int, purpose: int) -> torch.Generator:
        """A seeded generator for draws that are per-rank by nature (e.g. augmentation of this
        rank's shard); re-seeded identically on resume."""
        return self._seeded(micro_step * self.world + self.rank, purpose)
