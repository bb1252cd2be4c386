"""Plot a run's metrics.jsonl: python scripts/plot_run.py RUN_DIR  ->  RUN_DIR/plots/<prefix>.png."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.plot_run, on the PATH
# as `gan-accel plot-run` once the package is installed.
from gan_accel.cli.plot_run import __doc__, main  # noqa: F401 (the docstring is the --help text)

if __name__ == "__main__":
    raise SystemExit(main())
