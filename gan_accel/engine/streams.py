"""Named per-step random streams that do not depend on the number of processes or on resume.

A recipe declares the names of its streams once (``RandomStreams(("z", "augment"), ...)``). The
draw of stream ``name`` at micro-step ``t`` comes from a generator seeded by ``(seed, t, name)``,
made for the whole GLOBAL batch, and each rank takes its slice: sample ``i`` of the global batch
gets the same values whether 1 or N processes train, and a resumed run draws exactly what the
uninterrupted one would have (there is no RNG state to save; per-rank draws would make a DDP run
differ from one process, and ``skip_first_batches`` does not restore a consumed RNG stream).

Seeds of streams declared by name (a sequence): 63 bits of a hash of ``(seed, t, name)``, so a
stream's seed depends on its name, not on its neighbours: two streams, one stream at two steps, or
two ``RandomStreams`` objects with the same seed (a recipe's and a hook's, two tasks) draw
different values (distinct seeds except for a 2**-63-scale hash collision), and appending a stream
moves no other stream's seed.

Seeds of streams given positions (a mapping ``{name: position}``): ``(seed * 1_000_003 + t) *
width + position``, ``width`` above every position: the seeds of the built-in GAN and CycleGAN
runs made before names counted, kept so that their recorded results still reproduce. Within one
object no two streams share a seed; but another object giving the same position to another name
draws the same values, so new tasks declare their streams by name.
"""

from __future__ import annotations

import hashlib
from typing import Mapping, Sequence, Union

import torch

from ..errors import ConfigError

MIN_WIDTH = 8  # the seeds of the first GAN recipes' five streams, kept so their numbers did not change
SEED_BITS = 63  # torch seeds are 64-bit; 63 keeps every seed a non-negative int64 as well


def named_stream_seed(seed: int, counter: int, name: str) -> int:
    """The seed of stream ``name`` at micro-step ``counter`` (streams declared by name): a
    hand-written loop that wants a task's exact draws seeds its generator with this."""
    key = f"{seed}\0{counter}\0{name}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little") >> (64 - SEED_BITS)


class RandomStreams:
    def __init__(
        self, names: Union[Sequence[str], Mapping[str, int]], seed: int, accelerator, batch_size: int
    ) -> None:
        """``names``: the streams (seeded by name); or ``{name: position}`` to keep the positional
        seeds of the built-in runs (see the module's docstring)."""
        index = dict(names) if isinstance(names, Mapping) else {name: i for i, name in enumerate(names)}
        if len(index) != len(names) or len(set(index.values())) != len(index) or min(index.values(), default=0) < 0:
            raise ConfigError(f"random streams: duplicate names or positions in {names}")
        self.index = index
        self.by_name = not isinstance(names, Mapping)
        self.width = max(MIN_WIDTH, max(index.values(), default=0) + 1)
        self.seed = seed
        self.device = accelerator.device
        self.world = accelerator.num_processes
        self.rank = accelerator.process_index
        self.batch = batch_size
        self._generator = torch.Generator(device=self.device)

    def _seeded(self, name: str, counter: int) -> torch.Generator:
        if name not in self.index:
            raise ConfigError(f"random streams: no stream {name!r} (declared: {', '.join(self.index)})")
        if self.by_name:
            return self._generator.manual_seed(named_stream_seed(self.seed, counter, name))
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

    def categorical(self, name: str, micro_step: int, num_classes: int, *shape: int) -> torch.Tensor:
        """``[batch, *shape]`` int64 classes, uniform over ``0 .. num_classes - 1`` (a conditional
        model's labels, InfoGAN's categorical code): this rank's rows of the global batch's draw."""
        if num_classes < 1:
            raise ConfigError(f"random streams: {name!r} needs num_classes >= 1; got {num_classes}")
        g = self._seeded(name, micro_step)
        size = (self.world * self.batch, *shape)
        return self._slice(torch.randint(0, num_classes, size, generator=g, device=self.device))

    def generator(self, name: str, micro_step: int) -> torch.Generator:
        """A seeded generator for draws that are per-rank by nature (e.g. augmentation of this
        rank's shard); re-seeded identically on resume."""
        return self._seeded(name, micro_step * self.world + self.rank)
