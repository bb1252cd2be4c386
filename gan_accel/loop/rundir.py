"""What ``--overwrite_output_dir`` clears: exactly what the run's task declares it writes.

The README tells users to put their own things next to a run (``png/``, ``grid.png``, ``eval/``,
notes); overwriting a run must not delete them. Only the names a task declares
(:class:`gan_accel.runner.Output`, plus what every run writes) are removed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import List, Sequence, Tuple

# What every run writes at the top of OUTPUT_DIR (the lock file is not here: the run that
# overwrites holds it); a hand-written TrainingRun that declares nothing clears these.
RUN_OUTPUTS = ("config.json", "metrics.jsonl", "checkpoints", "logs", "plots")


def clear_run_outputs(out: Path, outputs: Sequence[str] = RUN_OUTPUTS) -> Tuple[List[str], List[str]]:
    """Delete the run's own ``outputs`` in ``out``; return (removed, kept) top-level names."""
    removed = []
    kept = []
    for entry in sorted(out.iterdir(), key=lambda p: p.name):
        if entry.name in outputs:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry.name)
        elif entry.name != "run.lock":
            kept.append(entry.name)
    return removed, kept
