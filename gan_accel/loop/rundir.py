"""What a run writes into its folder, and how ``--overwrite_output_dir`` clears exactly that.

The README tells users to put their own things next to a run (``png/``, ``grid.png``, ``eval/``,
notes); overwriting a run must not delete them. Only the names below are removed.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import List, Tuple

# Everything a training run (either path) writes at the top of OUTPUT_DIR. The lock file is not
# here: the run that overwrites holds it.
RUN_OUTPUTS = (
    "config.json", "metrics.jsonl", "samples", "checkpoints", "generator", "best_generator", "model",
    "eval_results.json", "logs", "cache", "plots",
)


def clear_run_outputs(out: Path) -> Tuple[List[str], List[str]]:
    """Delete the run's own outputs in ``out``; return (removed, kept) top-level names."""
    removed, kept = [], []
    for entry in sorted(out.iterdir(), key=lambda p: p.name):
        if entry.name in RUN_OUTPUTS:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry.name)
        elif entry.name != "run.lock":
            kept.append(entry.name)
    return removed, kept
