"""Cost of the GAN architectures per update, in the toolkit's real loop on the digits: FLOPs of
one update (convolutions and matrix multiplications, forward and backward, counted by
``torch.utils.flop_counter``) and seconds per update, the architectures interleaved in one
process so that a busy machine slows them alike. Quality is not measured here.

    OMP_NUM_THREADS=1 python -m benchmarks.speed arch --archs dcgan,fastgan --g_channels 48 --d_channels 48
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from gan_accel.config import check_positive, parse_config
from gan_accel.errors import ConfigError, cli_entry


@dataclass
class ArchArguments:
    archs: str = field(
        default="dcgan,fastgan", metadata={"help": "Comma-separated --arch values (the first is the reference)."}
    )
    image_size: int = field(default=32, metadata={"help": "Side of the images (px)."})
    batch_size: int = field(default=64, metadata={"help": "Images per update."})
    g_channels: int = field(default=48, metadata={"help": "--g_channels of every architecture."})
    d_channels: int = field(default=48, metadata={"help": "--d_channels of every architecture."})
    rounds: int = field(default=6, metadata={"help": "Interleaved timing rounds."})
    chunk: int = field(default=4, metadata={"help": "Updates per architecture per round."})
    output_json: Optional[str] = field(default=None, metadata={"help": "Also write the figures there (JSON)."})
    debug: bool = field(default=False, metadata={"help": "Show full tracebacks."})

    def __post_init__(self) -> None:
        from gan_accel.models import ARCHS, supported_sizes

        for arch in self.archs.split(","):
            if arch not in ARCHS:
                raise ConfigError(f"--archs: unknown {arch!r}; choose from {', '.join(ARCHS)}")
            if self.image_size not in supported_sizes(arch):
                raise ConfigError(f"--image_size {self.image_size} is not supported by {arch}")
        for name in ("batch_size", "g_channels", "d_channels", "rounds", "chunk"):
            check_positive(name, getattr(self, name))


def bench_archs(args: ArchArguments, log=print) -> dict:
    from benchmarks.contenders.gan import (
        GANBenchSetup,
        ToolkitContender,
        device_of,
        interleaved_images_per_s,
        scratch_dir,
    )
    from benchmarks.speed.roofline import count_flops

    setup = GANBenchSetup(
        image_size=args.image_size,
        batch_size=args.batch_size,
        g_channels=args.g_channels,
        d_channels=args.d_channels,
        rounds=args.rounds,
        chunk=args.chunk,
    )
    folder = scratch_dir()
    archs = args.archs.split(",")
    contenders = {arch: ToolkitContender(setup, folder / arch, arch=arch) for arch in archs}
    flops = {}
    for arch, contender in contenders.items():
        contender.advance(setup.warmup)
        flops[arch] = count_flops(lambda c=contender: c.advance(1))
    images_per_s = interleaved_images_per_s(contenders, setup, device_of(setup), "arch", log)
    seconds = {arch: setup.batch_size / statistics.median(ips) for arch, ips in images_per_s.items()}
    for contender in contenders.values():
        contender.close()
    ref = archs[0]
    return {
        "setup": {k: getattr(args, k) for k in ("image_size", "batch_size", "g_channels", "d_channels")},
        "flops_per_update": flops,
        "seconds_per_update": seconds,
        "flops_vs_first": {arch: flops[arch] / flops[ref] for arch in archs},
        "seconds_vs_first": {arch: seconds[arch] / seconds[ref] for arch in archs},
    }


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((ArchArguments,), argv, description=__doc__)
    result = bench_archs(args)
    print(f"{'arch':10s} {'GFLOP/update':>13s} {'x first':>8s} {'s/update':>9s} {'x first':>8s}")
    for arch in args.archs.split(","):
        print(
            f"{arch:10s} {result['flops_per_update'][arch] / 1e9:13.2f} {result['flops_vs_first'][arch]:8.2f} "
            f"{result['seconds_per_update'][arch]:9.3f} {result['seconds_vs_first'][arch]:8.2f}"
        )
    if args.output_json:
        Path(args.output_json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
