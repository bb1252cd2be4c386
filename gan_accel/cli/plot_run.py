"""Plot a run's metrics.jsonl: gan-accel plot-run RUN_DIR  ->  RUN_DIR/plots/<prefix>.png
(or --output_dir DIR/<prefix>.png)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from gan_accel.data.paths import check_can_write, check_writable_folder
from gan_accel.errors import UserError, cli_entry, parser_error
from gan_accel.loop.plots import check_run_dir, plot_metrics
from gan_accel.writes import declare_output


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run_dir", metavar="RUN_DIR", help="A training run's --output_dir (holds metrics.jsonl).")
    parser.add_argument("--output_dir", default=None, help="Folder for the PNG files (default: RUN_DIR/plots).")
    parser.add_argument("--debug", action="store_true", help="Show full tracebacks instead of one-line errors.")
    parser.error = parser_error
    args = parser.parse_args(argv)
    check_run_dir(Path(args.run_dir))
    out = Path(args.output_dir) if args.output_dir else Path(args.run_dir) / "plots"
    check_writable_folder("--output_dir", out)
    check_can_write("--output_dir", out)  # before reading the metrics, not after drawing them
    declare_output("--output_dir", out)
    written = plot_metrics(Path(args.run_dir), warn=lambda message: print(message, file=sys.stderr), out_dir=out)
    if not written:
        raise UserError(f"RUN_DIR {args.run_dir}: metrics.jsonl holds no numeric values yet; nothing to plot")
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
