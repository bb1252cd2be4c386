"""Plot a run's metrics.jsonl: python scripts/plot_run.py RUN_DIR  ->  RUN_DIR/plots/<prefix>.png."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.plot_run, on the PATH
# as `gan-accel plot-run` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "plot_run")
