"""Named per-step random streams that do not depend on the number of processes or on resume.

A recipe declares the names of its streams once (``RandomStreams(("z", "augment"), ...)``). The
draw of stream ``name`` at micro-step ``t`` comes from a generator seeded by ``(seed, t, name)``,
made for the whole GLOBAL batch, and each rank takes its slice: sample ``i`` of the global batch
gets the same values whether 1 or N processes train, and a resumed run draws exactly what the
uninterrupted one would have (there is no RNG state to save; per-rank draws would make a DDP run
differ from one process, and ``skip_first_batches`` does not restore a consumed RNG stream).

Seeds are ``(seed * 1_000_003 + t) * width + index``, with ``index`` the stream's position in the
declaration and ``width >= the number of streams``: two streams of a recipe, or one stream at two
steps, never share a seed, however many streams a recipe declares.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..errors import ConfigError

MIN_WIDTH = 8  # the seeds of the first GAN recipes' five streams, kept so their numbers did not change


class RandomStreams:
    def __init__(self, names: Sequence[str], seed: int, accelerator, batch_size: int) -> None:
        if len(set(names)) != len(names):
            raise ConfigError(f"random streams: duplicate names in {list(names)}")
        self.index = {name: i for i, name in enumerate(names)}
        self.width = max(MIN_WIDTH, len(names))
        self.seed, self.device = seed, accelerator.device
        self.world, self.rank, self.batch = accelerator.num_processes, accelerator.process_index, batch_size
        self._generator = torch.Generator(device=self.device)

    def _seeded(self, name: str, counter: int) -> torch.Generator:
        if name not in self.index:
            raise ConfigError(f"random streams: no stream {name!r} (declared: {', '.join(self.index)})")
        return self._generator.manual_seed((self.seed * 1_000_003 + counter) * self.width + self.index[name])

    def _slice(self, x: torch.Tensor) -> torch.Tensor:
        return x[self.rank * self.batch : (self.rank + 1) * self.batch]

    def normal(self, name: str, micro_step: int, *shape: int) -> torch.Tensor:
        """``[batch, *shape]`` standard normal values: this rank's rows of the global batch's draw."""
        g = self._seeded(name, micro_step)
        return self._slice(torch.randn(self.world * self.batch, *shape, generator=g, device=self.device))

    def uniform(self, name: str, micro_step: int, *shape: int) -> torch.Tensor:
        """``[batch, *shape]`` values uniform in [0, 1): this rank's rows of the global batch's draw."""
        g = self._seeded(name, micro_step)
        return self._slice(torch.rand(self.world * self.batch, *shape, generator=g, device=self.device))

    def generator(self, name: str, micro_step: int) -> torch.Generator:
        """A seeded generator for draws that are per-rank by nature (e.g. augmentation of this
        rank's shard); re-seeded identically on resume."""
        return self._seeded(name, micro_step * self.world + self.rank)
