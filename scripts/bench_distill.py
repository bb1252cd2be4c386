"""Distillation benchmark on the stdlib docstring corpus: teacher vs half-depth student (distilled
and labels-only, same budget) and the --cache_teacher_logits speed-up, in one run:

    OMP_NUM_THREADS=1 python scripts/bench_distill.py --output_dir runs/bench_distill --output_json bench_distill.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout without install

from gan_accel.bench.distill import DistillBenchArguments, format_report, run_bench  # noqa: E402
from gan_accel.config import parse_config  # noqa: E402
from gan_accel.errors import cli_entry  # noqa: E402


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
