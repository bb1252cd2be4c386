"""Benchmark the image-data paths on a generated folder (>= 50,000 JPEGs at 64 px by default):

    python -m benchmarks.data --output_json bench_data.json

Time to the first step for the first run (decode cache built) and the second (cache opened), in
memory and streamed; peak RSS of both modes at two dataset sizes; streamed images/s as a ratio of
in-memory images/s, interleaved in the same invocation. Each measurement is a fresh process.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from gan_accel.config import check_positive, parse_config
from gan_accel.errors import ConfigError, cli_entry


@dataclass
class BenchDataArguments:
    output_json: str = field(default="bench_data.json", metadata={"help": "Where to write the figures (JSON)."})
    num_images: int = field(default=50_000, metadata={"help": "Images in the large generated folder."})
    small_num_images: int = field(
        default=10_000, metadata={"help": "Images in the small folder (peak RSS at a second size)."}
    )
    image_size: int = field(default=64, metadata={"help": "Side of the generated images and of training."})
    batch_size: int = field(default=64, metadata={"help": "GAN batch size."})
    channels: int = field(
        default=16, metadata={"help": "DCGAN width (g_channels = d_channels): small, so the data path shows."}
    )
    workers: int = field(default=2, metadata={"help": "--dataloader_num_workers of the streamed runs."})
    threads: int = field(default=1, metadata={"help": "Intra-op threads of each training process (the same for all)."})
    processes: int = field(default=os.cpu_count() or 1, metadata={"help": "Processes that generate the images."})
    warmup: int = field(default=5, metadata={"help": "Untimed updates after the first one."})
    steps: int = field(default=40, metadata={"help": "Timed G updates per throughput measurement."})
    rss_steps: int = field(
        default=80,
        metadata={
            "help": "Updates of each peak-RSS measurement (more than an epoch of workers' reads is not needed: RSS is per batch)."
        },
    )
    reps: int = field(default=3, metadata={"help": "Interleaved in-memory/streamed throughput pairs."})
    work_dir: Optional[str] = field(
        default=None, metadata={"help": "Scratch folder, kept (default: a temporary one, deleted)."}
    )
    keep_data: bool = field(default=False, metadata={"help": "Keep the temporary folder."})
    debug: bool = field(default=False, metadata={"help": "Show full tracebacks."})

    def __post_init__(self) -> None:
        for name in (
            "num_images",
            "small_num_images",
            "image_size",
            "batch_size",
            "channels",
            "threads",
            "processes",
            "steps",
            "rss_steps",
            "reps",
        ):
            check_positive(name, getattr(self, name))
        check_positive("workers", self.workers, allow_zero=True)
        if self.small_num_images >= self.num_images:
            raise ConfigError("--small_num_images must be below --num_images (RSS is compared at two sizes)")


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((BenchDataArguments,), argv, description=__doc__)
    from benchmarks.data.paths import report, run_data_bench

    out = run_data_bench(args)
    print(report(out))
    Path(args.output_json).write_text(json.dumps(out, indent=1, default=str) + "\n")
    print(f"Wrote {args.output_json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
