"""Evaluate an exported generator: FID/KID, precision/recall, density/coverage, class coverage,
the real-data floor, and (--nearest) a memorisation check.

    python scripts/evaluate_gan.py --generator runs/digits/generator --dataset digits --num_images 1000 --nearest

Prints a summary and writes OUTPUT_DIR/eval_results.json (OUTPUT_DIR defaults to the generator
folder) with every number's bootstrap interval and its metric protocol (compare two results with
scripts/compare_metrics.py A.json B.json); --nearest adds OUTPUT_DIR/nearest.png. The domain
classifier and the real reference statistics are cached under --cache_dir.
"""

# Kept for existing commands and job scripts: the command is gan_accel.cli.evaluate_gan, on the PATH
# as `gan-accel evaluate-gan` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "evaluate_gan")
