"""Benchmark the toolkit's loops against a plain PyTorch loop (GAN), a hand-written Accelerate loop
(docs/infogan_example.py's InfoGAN) and transformers.Trainer (classifier), plus sampling
throughput, in ONE process with the contenders interleaved:

    OMP_NUM_THREADS=1 python -m benchmarks.speed loops --output_json bench.json

Prints a table (medians and max-min spread over repetitions) and writes the JSON
(``gan.ratio_vs_plain``, ``infogan.ratio_vs_plain``, ``classifier.CORPUS.ratio_vs_trainer`` and ``.ratio_vs_trainer_grouped``,
raw figures beside them).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from benchmarks.corpora import CORPORA
from gan_accel.config import check_choice, check_positive, choice, parse_config
from gan_accel.errors import ConfigError, cli_entry

PARTS = ("gan", "infogan", "classifier", "sampling")
GAN_VARIANTS = ("channels_last", "compile", "bf16", "fp16")


@dataclass
class BenchArguments:
    output_json: str = field(default="bench.json", metadata={"help": "Where to write the figures (JSON)."})
    only: str = field(
        default="gan,infogan,classifier,sampling",
        metadata={"help": "Comma-separated subset of gan,infogan,classifier,sampling."},
    )
    device: str = choice("cpu", ("cpu", "cuda"), "Device of every contender.")
    threads: int = field(
        default=1,
        metadata={
            "help": "Intra-op threads for every contender (the same for all; 1 is steadiest on a shared machine)."
        },
    )
    seed: int = field(default=0, metadata={"help": "Seed of every contender."})
    gan_image_size: int = field(default=32, metadata={"help": "DCGAN resolution (digits, resized)."})
    gan_batch_size: int = field(default=64, metadata={"help": "GAN batch size."})
    gan_channels: int = field(default=64, metadata={"help": "DCGAN width (g_channels = d_channels)."})
    gan_rounds: int = field(
        default=8, metadata={"help": "Interleaved rounds (each contender runs one chunk per round)."}
    )
    gan_chunk: int = field(default=4, metadata={"help": "Timed G updates per contender per round."})
    gan_warmup: int = field(
        default=3, metadata={"help": "Untimed updates per contender first (compilation included)."}
    )
    infogan_rounds: int = field(default=10, metadata={"help": "InfoGAN: interleaved rounds."})
    infogan_chunk: int = field(default=50, metadata={"help": "InfoGAN: timed updates per contender per round."})
    infogan_warmup: int = field(default=5, metadata={"help": "InfoGAN: untimed updates per contender first."})
    gan_variants: str = field(
        default="channels_last,bf16",
        metadata={
            "help": "Toolkit variants measured against its default: a subset of channels_last,compile,bf16,fp16 ('' none; bf16 and fp16 in separate runs)."
        },
    )
    classifier_reps: int = field(default=5, metadata={"help": "Toolkit/Trainer pairs (each a full training run)."})
    classifier_corpora: str = field(
        default="synthetic,docstrings",
        metadata={
            "help": "Comma-separated subset of synthetic (generated, nearly equal lengths) and docstrings (the standard library's docstrings by package: real, variable-length text)."
        },
    )
    classifier_epochs: Optional[int] = field(
        default=None,
        metadata={"help": "Epochs per classifier run (default: each corpus's own: synthetic 3, docstrings 8)."},
    )
    classifier_n_train: int = field(default=960, metadata={"help": "Generated training sentences (synthetic corpus)."})
    sample_images: int = field(default=1024, metadata={"help": "Images per sampling repetition."})
    sample_batch_size: int = field(
        default=256, metadata={"help": "Batch size of generate_images (sample_gan.py's default)."}
    )
    sample_reps: int = field(default=3, metadata={"help": "Sampling repetitions."})
    work_dir: Optional[str] = field(default=None, metadata={"help": "Scratch folder (default: a new temporary one)."})
    debug: bool = field(default=False, metadata={"help": "Show full tracebacks."})

    def __post_init__(self) -> None:
        check_choice("device", self.device, ("cpu", "cuda"))
        for part in filter(None, self.only.split(",")):
            check_choice("only", part.strip(), PARTS)
        for corpus in filter(None, self.classifier_corpora.split(",")):
            check_choice("classifier_corpora", corpus.strip(), CORPORA)
        for v in filter(None, self.gan_variants.split(",")):
            check_choice("gan_variants", v.strip(), GAN_VARIANTS)
        for name in (
            "threads",
            "gan_image_size",
            "gan_batch_size",
            "gan_channels",
            "gan_rounds",
            "gan_chunk",
            "infogan_rounds",
            "infogan_chunk",
            "classifier_reps",
            "classifier_n_train",
            "sample_images",
            "sample_batch_size",
            "sample_reps",
        ):
            check_positive(name, getattr(self, name))
        check_positive("gan_warmup", self.gan_warmup, allow_zero=True)
        check_positive("infogan_warmup", self.infogan_warmup, allow_zero=True)
        check_positive("classifier_epochs", self.classifier_epochs)
        if {"bf16", "fp16"} <= {v.strip() for v in self.gan_variants.split(",")}:
            raise ConfigError(
                "--gan_variants: bf16 and fp16 need separate runs (Accelerate's precision is process-wide)"
            )
        if not self.only.strip():
            raise ConfigError("--only must name at least one of gan,infogan,classifier,sampling")


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((BenchArguments,), argv, description=__doc__)
    from benchmarks.speed.report import run_benchmark, table, write_json

    command = "python -m benchmarks.speed loops " + shlex.join(list(argv) if argv is not None else sys.argv[1:])
    result = run_benchmark(args, command=command)
    print(table(result))
    print(f"Wrote {write_json(result, Path(args.output_json))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
