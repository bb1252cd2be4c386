"""Measure the efficient-training knobs (gradient accumulation, gradient checkpointing, bf16,
Adam/AdamW/Adafactor, 2 processes, LocalSGD) on the classifier path: one process per variant.

    OMP_NUM_THREADS=1 python -m benchmarks.speed knobs --output_json benchmarks/results/knobs_cpu.json
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from gan_accel.config import check_positive, parse_config
from gan_accel.errors import ConfigError, cli_entry


@dataclass
class KnobArguments:
    output_json: str = field(default="knobs.json", metadata={"help": "Where to write the figures (JSON)."})
    variants: str = field(
        default="baseline,gradient_accumulation_4,gradient_checkpointing,bf16,adamw,adafactor,2_processes,2_processes_local_sgd_8",
        metadata={"help": "Comma-separated variants (baseline first: the others are compared with it)."},
    )
    n_train: int = field(default=2000, metadata={"help": "Generated training texts."})
    dim: int = field(default=128, metadata={"help": "Model width (DistilBERT-style, randomly initialised)."})
    n_layers: int = field(default=4, metadata={"help": "Transformer layers."})
    threads: int = field(default=1, metadata={"help": "Intra-op threads per process."})
    work_dir: Optional[str] = field(default=None, metadata={"help": "Scratch folder (default: a new temporary one)."})
    debug: bool = field(default=False, metadata={"help": "Show full tracebacks."})

    def __post_init__(self) -> None:
        from benchmarks.speed.knob_runs import VARIANTS

        for name in self.variants.split(","):
            if name not in VARIANTS:
                raise ConfigError(f"--variants: unknown {name!r}; choose from {', '.join(VARIANTS)}")
        for name in ("n_train", "dim", "n_layers", "threads"):
            check_positive(name, getattr(self, name))


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((KnobArguments,), argv, description=__doc__)
    from benchmarks.speed.knob_runs import KnobSetup, bench_knobs

    setup = KnobSetup(n_train=args.n_train, dim=args.dim, n_layers=args.n_layers, threads=args.threads)
    folder = Path(args.work_dir or tempfile.mkdtemp(prefix="knobs-"))
    result = bench_knobs(setup, folder, args.variants.split(","))
    print(f"{'variant':28s} {'samples/s':>10s} {'x base':>7s} {'peak MB':>8s} {'x base':>7s} {'accuracy':>8s}")
    for name, r in result["variants"].items():
        print(
            f"{name:28s} {r['samples_per_s']:10.1f} {r.get('speed_vs_baseline', float('nan')):7.2f} "
            f"{r['peak_rss_mb']:8.0f} {r.get('memory_vs_baseline', float('nan')):7.2f} {r['accuracy']:8.3f}"
        )
    Path(args.output_json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"Wrote {args.output_json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
