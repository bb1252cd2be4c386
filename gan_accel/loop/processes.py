"""A resume on another number of processes (an elastic or preempted job), for every task.

A run is defined by its global batch (``batch_size`` per process x processes) and its progress in
updates and samples: the sampler, the random streams and the update counters already count them
over all processes, so the same global batch on another process count continues the same run.
Two things are per process and are translated here:

- the config's ``batch_size`` is per process: a resume compares the global batch (2 x 32 resumed
  as 1 x 64 is the same run; 1 x 32 is half the global batch, a batch change under the field's
  resume policy, said in global terms);
- a prepared scheduler ticks once per process per update (Accelerate), so its saved count is
  ``updates x processes``: read as is by another count it jumps (2 processes resumed on 1 doubled
  a warm-up's rate in one update; a decay past half-way sat at its end value). It is rescaled to
  this run's ticks, and the rates recomputed at that position.
"""

from __future__ import annotations

from typing import Optional, Tuple

from . import hparams

BATCH_FIELD = "batch_size"  # every task's per-process batch, by this name


def _processes(n: int) -> str:
    return f"{n} process{'es' * (n != 1)}"


def global_batch(config: dict, processes: int) -> Optional[int]:
    batch = config.get(BATCH_FIELD)
    return batch * processes if isinstance(batch, int) else None


def as_global_batch(
    saved: dict, saved_processes: Optional[int], config: dict, processes: int
) -> Tuple[dict, dict, str]:
    """The checkpoint's config and this run's, as a resume compares them, and the line that says
    a change of the batch.

    With another process count, ``batch_size`` is compared as the global batch (per process x
    processes): the same global batch is the same setting, another one a change of it, whose line
    names the global batches. Same count (or no batch): both unchanged, ""."""
    if not saved_processes or saved_processes == processes:
        return saved, config, ""
    before, now = global_batch(saved, saved_processes), global_batch(config, processes)
    if before is None or now is None:
        return saved, config, ""
    same = f", or --{BATCH_FIELD} {before // processes} for the same one" if before % processes == 0 else ""
    line = (
        f"--{BATCH_FIELD} {saved[BATCH_FIELD]} per process x {_processes(saved_processes)} (global batch "
        f"{before}) -> {config[BATCH_FIELD]} x {_processes(processes)} (global batch {now}{same})"
    )
    return {**saved, BATCH_FIELD: before}, {**config, BATCH_FIELD: now}, line


def rescale_schedulers(accelerator, saved_processes: Optional[int]) -> None:
    """Each prepared scheduler's loaded tick count, written by ``saved_processes`` processes, in
    this run's ticks (``processes`` per update), with its rates recomputed there."""
    processes = accelerator.num_processes
    if not saved_processes or saved_processes == processes:
        return
    for sched in accelerator._schedulers:
        raw = getattr(sched, "scheduler", sched)
        if not hasattr(raw, "last_epoch"):
            continue
        raw.last_epoch = round(raw.last_epoch * processes / saved_processes)
        hparams.recompute_rates(raw)
