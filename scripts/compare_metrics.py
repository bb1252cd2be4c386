"""Say whether two GAN metric results are comparable, and if not, why.

    python scripts/compare_metrics.py runs/a/generator/eval_results.json runs/b/generator/eval_results.json

Each file is an eval_results.json of scripts/evaluate_gan.py (or a protocol file,
CACHE_DIR/protocol/<id>.json, named by eval/protocol_id in a training run's metrics.jsonl).
Comparable results print their metrics side by side with their intervals; otherwise every field of
the protocol that differs is listed. Exit code 0: comparable, 1: not comparable, 2: bad input.
"""

# Kept for existing commands and job scripts: the command is gan_accel.cli.compare_metrics, on the PATH
# as `gan-accel compare-metrics` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "compare_metrics")
