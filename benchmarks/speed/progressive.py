"""Benchmark: the cost of one GAN update at half size (stage 1 of --progressive_share) against
full size, in one process (docs/photos.md, "Progressive resolution").

The networks of the CPU preset (DCGAN, 48 channels, 32 px, batch 64, RGB) with the half-size heads,
the nonsaturating loss, Adam, an update being one D step and one G step: rounds at alpha 0 (stage 1)
and alpha 1 (full size) alternate, so a machine that gets busier slows both alike, and the ratio
of their median times is the speed-up. ``uptime`` is printed with it: on a shared machine the
absolute times move, the ratio much less.

    OMP_NUM_THREADS=1 python -m benchmarks.speed progressive
"""

from __future__ import annotations

import statistics
import subprocess
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch

from gan_accel.config import check_positive, parse_config
from gan_accel.errors import cli_entry
from gan_accel.gan.step import d_loss, g_loss
from gan_accel.models import build_models


@dataclass
class ProgressiveBenchArguments:
    channels: int = field(default=3, metadata={"help": "Image channels (3: photos, 1: digits)."})
    width: int = field(default=48, metadata={"help": "g_channels = d_channels (the CPU preset's 48)."})
    batch_size: int = field(default=64, metadata={"help": "Images per update (the CPU preset's 64)."})
    rounds: int = field(default=5, metadata={"help": "Alternating rounds of each stage."})
    updates: int = field(default=10, metadata={"help": "Timed updates per stage per round."})

    def __post_init__(self) -> None:
        for name in ("channels", "width", "batch_size", "rounds", "updates"):
            check_positive(name, getattr(self, name))


def update(G, D, opt_g, opt_d, real: torch.Tensor, z: torch.Tensor) -> None:
    """One D update, then one G update through the frozen D (the recipe's two phases)."""
    fake = G(z)
    loss, _ = d_loss(D, real, fake.detach(), None, "nonsaturating")
    opt_d.zero_grad(set_to_none=True)
    loss.backward()
    opt_d.step()
    D.requires_grad_(False)
    loss, _ = g_loss(D, fake, None, "nonsaturating")
    opt_g.zero_grad(set_to_none=True)
    loss.backward()
    opt_g.step()
    D.requires_grad_(True)


def seconds_per_update(G, D, opt_g, opt_d, real, z, alpha: float, updates: int) -> float:
    G.alpha.fill_(alpha)
    D.alpha.fill_(alpha)
    start = time.perf_counter()
    for _ in range(updates):
        update(G, D, opt_g, opt_d, real, z)
    return (time.perf_counter() - start) / updates


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((ProgressiveBenchArguments,), argv, description=__doc__)
    torch.manual_seed(0)
    G, D = build_models(
        "dcgan",
        z_dim=100,
        channels=args.channels,
        image_size=32,
        g_channels=args.width,
        d_channels=args.width,
        d_norm="batch",
        progressive=True,
    )
    opt_g = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999))
    real = torch.rand(args.batch_size, args.channels, 32, 32) * 2 - 1
    z = torch.randn(args.batch_size, 100)
    times = {0.0: [], 1.0: []}
    for alpha in (0.0, 1.0):  # warm-up: allocator and kernels of both paths
        seconds_per_update(G, D, opt_g, opt_d, real, z, alpha, 2)
    for _ in range(args.rounds):
        for alpha in (0.0, 1.0):
            times[alpha].append(seconds_per_update(G, D, opt_g, opt_d, real, z, alpha, args.updates))
    half, full = statistics.median(times[0.0]), statistics.median(times[1.0])
    print(f"threads {torch.get_num_threads()}, batch {args.batch_size}, {args.channels} channels, width {args.width}")
    print(f"stage 1 (16 px): {1000 * half:.1f} ms/update; full size (32 px): {1000 * full:.1f} ms/update")
    print(f"speed-up of stage 1 per update: {full / half:.2f}x")
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
