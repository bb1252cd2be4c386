"""Distillation benchmark on the stdlib docstring corpus: teacher vs half-depth student (distilled
and labels-only, same budget) and the --cache_teacher_logits speed-up, in one run:

    OMP_NUM_THREADS=1 python -m benchmarks.classifier distill --output_dir runs/bench_distill --output_json bench_distill.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Sequence

from benchmarks.classifier.distill_runs import DistillBenchArguments, format_report, run_bench
from gan_accel.config import parse_config
from gan_accel.errors import cli_entry


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((DistillBenchArguments,), argv, description=__doc__)
    results = run_bench(args)
    Path(args.output_json).write_text(json.dumps(results, indent=2) + "\n")
    print(format_report(results))
    print(f"Figures: {args.output_json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
