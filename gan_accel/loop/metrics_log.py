"""Progress bar, ``metrics.jsonl`` and Accelerate trackers behind one helper.

Step functions return dicts of detached device tensors; this class sums them on the device and
turns them into numbers only every ``log_every`` steps, so the hot loop has no host sync.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, Optional, Union

import torch
from tqdm.auto import tqdm

from ..writes import write_point
from .budget import UNPLANNED_STEPS, process_age_s

Number = Union[int, float, torch.Tensor]
METRICS_FILE = "metrics.jsonl"
# Every line's wall-clock position in the run, in seconds since its process started (a resumed
# run continues from its last line): plots draw the metrics against minutes as well as steps.
TIME_KEY = "time_s"


def peak_memory_mb(device) -> float:
    """Peak memory of this process so far: allocated tensors on CUDA, resident set on the CPU."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


class MetricsLogger:
    def __init__(
        self,
        accelerator,
        output_dir: Path,
        total_steps: int,
        initial_step: int,
        log_every: int,
        unit: str = "img",
        desc: str = "train",
        explosion_factor: float = 0.0,
        explosion_window: int = 20,
    ) -> None:
        self.accelerator = accelerator
        self.path = Path(output_dir) / METRICS_FILE
        self.log_every = log_every
        self.unit = unit
        self._sums: Dict[str, torch.Tensor] = {}
        self._counts: Dict[str, int] = {}
        self._samples = 0
        self._t0 = time.perf_counter()
        self._run_start = self._t0 - process_age_s() - last_logged_time(self.path)
        self.explosions = ExplosionCheck(explosion_factor, explosion_window)
        self.bar = tqdm(
            # A budgeted run's length is unknown until its first plan: a count and a rate, rather
            # than a bar of a billion steps with 27,000 hours left.
            total=None if total_steps >= UNPLANNED_STEPS else total_steps,
            initial=initial_step,
            desc=desc,
            unit="step",
            dynamic_ncols=True,
            disable=not accelerator.is_local_main_process or tqdm_disabled_by_env(),
        )
        # Without a bar on screen (TQDM_DISABLE=1, or stderr is a file or pipe: a batch job's log),
        # each log line is also printed, or stdout shows nothing between the config and the end.
        self.print_lines = accelerator.is_local_main_process and (
            tqdm_disabled_by_env() or not _is_terminal(sys.stderr)
        )
        self.write_failed = False
        self.evaluations = 0  # lines with eval/ metrics written: the run's page is refreshed after each

    def accumulate(self, metrics: Dict[str, Number], samples: int = 0) -> None:
        """Add one micro-step's metrics (device tensors stay on the device) and its sample count."""
        for key, value in metrics.items():
            value = value.detach().float() if torch.is_tensor(value) else torch.tensor(float(value))
            self._sums[key] = self._sums[key] + value if key in self._sums else value
            self._counts[key] = self._counts.get(key, 0) + 1
        self._samples += samples

    def advance(self, step: int) -> None:
        self.bar.update(1)

    def should_log(self, step: int) -> bool:
        return step % self.log_every == 0

    def flush(self, step: int, extra: Optional[Dict[str, Number]] = None) -> Dict[str, float]:
        """Average what was accumulated since the last flush over micro-steps and processes, write
        it everywhere and reset. Every rank must call this (it all-reduces once)."""
        acc = self.accelerator
        keys = sorted(self._sums)
        values: Dict[str, float] = {}
        if keys:
            stacked = torch.stack([(self._sums[k] / self._counts[k]).to(acc.device) for k in keys])
            stacked = acc.reduce(stacked, reduction="mean") if acc.num_processes > 1 else stacked
            values = dict(zip(keys, stacked.tolist()))  # the one host sync of this interval
        elapsed = time.perf_counter() - self._t0
        values["memory/peak_mb"] = peak_memory_mb(acc.device)
        if self._samples and elapsed > 0:
            values[f"throughput/{self.unit}_per_s"] = self._samples * acc.num_processes / elapsed
        for key, value in (extra or {}).items():
            values[key] = float(value.item() if torch.is_tensor(value) else value)
        self.write(step, values)
        self._sums = {}
        self._counts = {}
        self._samples = 0
        self._t0 = time.perf_counter()
        return values

    def write(self, step: int, values: Dict[str, float]) -> None:
        """Write already-reduced numbers (main process only): jsonl, trackers, progress bar."""
        acc = self.accelerator
        if not acc.is_main_process or not values:
            return
        # Non-finite values as null: "nan" strings would make every reader special-case them.
        record = {"step": step, **{k: (v if math.isfinite(v) else None) for k, v in values.items()}}
        record[TIME_KEY] = round(time.perf_counter() - self._run_start, 3)
        self.evaluations += any(k.startswith("eval/") for k in values)
        warnings = self.explosions.check(values)
        if warnings:
            record["warning/loss_explosion"] = "; ".join(w for w, _ in warnings)
            for text, first in warnings:
                if first:  # once per episode on screen; every log line of it in metrics.jsonl
                    self.bar.write(f"warning: step {step}: {text}: the run may be diverging")
        try:
            write_point(self.path)
            with self.path.open("a") as f:
                f.write(json.dumps(record) + "\n")
        except OSError as err:
            # Only the main process writes: raising here would leave the other ranks waiting in
            # their next collective. Training goes on; checkpoints say for themselves if the disk is full.
            if not self.write_failed:
                self.bar.write(
                    f"warning: step {step}: could not append to {self.path} ({err}); the run goes on "
                    "without it, and says so once",
                    file=sys.stderr,  # a warning, with the others (tqdm.write's default is stdout)
                )
            self.write_failed = True
        acc.log({k: v for k, v in values.items()}, step=step)
        short = {
            k.split("/")[-1] if k.startswith("loss/") else k: v
            for k, v in values.items()
            if k.startswith("loss/") or k.startswith("throughput/")
        }
        self.bar.set_postfix({k: f"{v:.3g}" for k, v in short.items()}, refresh=False)
        if self.print_lines:  # no bar on a terminal to keep clear of (tqdm.write would redraw it on stderr)
            print(log_line(step, self.bar.total, short), flush=True)

    def close(self) -> None:
        self.bar.close()


def log_line(step: int, total: Optional[int], values: Dict[str, float]) -> str:
    """``step 20/400  D 0.693  G 0.712  img_per_s 512``: the bar's figures as one printed line."""
    figures = "".join(f"  {k.split('/')[-1]} {v:.4g}" for k, v in values.items())
    return f"step {step}/{total}{figures}" if total else f"step {step}{figures}"


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


def tqdm_disabled_by_env() -> bool:
    """``TQDM_DISABLE=1``: tqdm reads its ``TQDM_*`` variables only for arguments not passed, and
    ``disable`` is passed here (to silence the other ranks), so it is honoured explicitly."""
    return os.environ.get("TQDM_DISABLE", "").strip().lower() in ("1", "true", "yes", "on")


class ExplosionCheck:
    """Divergence that stays finite: a ``loss/*`` value beyond ``factor`` times the median of its
    last ``window`` logged magnitudes. The median (not the mean) so one spike does not raise the
    bar for the next; magnitudes floored at 1e-3 so a loss hovering near 0 (hinge, WGAN) does not
    warn on noise."""

    FLOOR = 1e-3
    MIN_HISTORY = 3

    def __init__(self, factor: float, window: int) -> None:
        self.factor = factor
        self.window = window
        self.history: Dict[str, list] = {}
        self.exploded: Dict[str, bool] = {}

    def check(self, values: Dict[str, float]) -> list:
        """``[(text, first_of_episode)]`` for every exploded loss among ``values``."""
        out = []
        if not self.factor:
            return out
        for key, value in values.items():
            if not key.startswith("loss/") or not math.isfinite(value):
                continue
            past = self.history.setdefault(key, [])
            exploded = False
            if len(past) >= self.MIN_HISTORY:
                median = max(statistics.median(past), self.FLOOR)
                exploded = abs(value) > self.factor * median
                if exploded:
                    out.append(
                        (
                            f"{key} = {value:.3g} is {abs(value) / median:.3g}x the median {median:.3g} of its "
                            f"last {len(past)} logged values",
                            not self.exploded.get(key, False),
                        )
                    )
            self.exploded[key] = exploded
            past.append(abs(value))
            del past[: -self.window]
        return out


def last_logged_time(path: Path) -> float:
    """The ``time_s`` of the last line of ``metrics.jsonl`` that has one (0 without): where a
    resumed run's clock continues."""
    try:
        lines = Path(path).read_bytes().splitlines()
    except OSError:
        return 0.0
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        value = record.get(TIME_KEY) if isinstance(record, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    return 0.0


def _logged_step(line: bytes) -> Optional[int]:
    """The ``step`` of one ``metrics.jsonl`` line, or None for a line that is not a record."""
    try:
        record = json.loads(line)
    except ValueError:  # also UnicodeDecodeError
        return None
    step = record.get("step") if isinstance(record, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def drop_lines_after(path: Path, step: int) -> int:
    """Before a resume from the checkpoint at ``step``: remove the lines logged after it (a run
    killed 25 steps past its checkpoint logged steps the resumed run logs again, so readers and
    plots would see them twice), and a torn last line (killed mid-write: the next append would
    glue a record onto it). They move to ``metrics.jsonl.dropped``, so nothing logged is lost;
    the file is rewritten to a temporary name and renamed over, so a kill leaves one version or
    the other. Lines that are not records are kept for readers to skip. Returns how many moved."""
    path = Path(path)
    if not path.is_file():
        return 0
    lines = path.read_bytes().splitlines(keepends=True)
    kept = []
    dropped = []
    for index, line in enumerate(lines):
        logged = _logged_step(line)
        torn = index == len(lines) - 1 and not line.endswith(b"\n")
        (dropped if torn or (logged is not None and logged > step) else kept).append(line)
    if not dropped:
        return 0
    with path.with_name(path.name + ".dropped").open("ab") as side:
        side.write(b"".join(line if line.endswith(b"\n") else line + b"\n" for line in dropped))
    tmp = path.with_name(f".tmp-{path.name}")
    with tmp.open("wb") as f:
        f.write(b"".join(kept))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return len(dropped)
