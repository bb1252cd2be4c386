"""A training run's scaffolding: accelerator, run folder, resolved config, checkpoints, the
non-finite guard, signals and the metrics logger. The engine (:mod:`gan_accel.engine`) drives it;
a hand-written loop can too::

    run = TrainingRun(run_args, config_dict, project="gan")   # accelerator, run folder, config.json
    ... build models, optimizers, schedulers, dataloaders; accelerator.prepare(...) ...
    run.resume(read_extra)                                    # after prepare: Accelerate's load is positional
    logger = run.make_logger(total_steps, unit="img", desc="train")
    with run.stop:                                            # SIGINT/SIGTERM -> a flag, polled below
        for ...:
            ...                                               # one update; run.state.step += 1
            run.guard.record(finite)                          # device-side count of skipped updates
            if run.due(run.args.checkpointing_steps):
                run.save(write_extra)                         # guard.check(), then an atomic checkpoint
            if run.should_stop():                             # a signal, agreed across ranks
                run.save(write_extra)
                break
    run.finish()                                              # close the bar, end trackers
    raise SystemExit(run.exit_code())                         # 128 + the signal's number after a signal
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence

from tqdm.auto import tqdm

from .. import interrupt
from ..config import RENAMED_FIELDS, RunArguments, resume_changes
from ..errors import UserError
from . import hparams, processes
from .accel import RUN_MARKER, build_accelerator, prepare_output_dir, print_and_save_config, save_config
from .checkpoint import STATE_FILE, CheckpointManager
from .guard import NonFiniteGuard
from .lock import RunLock
from .metrics_log import METRICS_FILE, MetricsLogger, drop_lines_after
from .plots import metrics_version, plot_run_safely
from .report import ReportInputs, write_report_safely
from .rundir import (
    DROPPED,
    RUN_OUTPUTS,
    abandoned_after,
    describe_paths,
    folder_contents,
    set_aside,
    step_of,
    topmost_missing,
    undo_start,
)
from .signals import GracefulStop, signal_exit_code
from .state import TrainState
from .trackers import init_trackers


def _tracker_config(config: dict) -> dict:
    # init_trackers accepts only bool/str/int/float/None values (TensorBoard's hparams would reject the rest).
    return {k: (v if isinstance(v, (bool, str, int, float)) or v is None else str(v)) for k, v in config.items()}


class TrainingRun:
    def __init__(
        self,
        run: RunArguments,
        config: dict,
        project: str,
        accelerator=None,
        policy: Optional[Dict[str, str]] = None,
        compare_as: Optional[dict] = None,
        outputs: Optional[Sequence[str]] = None,
        data_fingerprint: Optional[dict] = None,
        exports: Sequence[str] = (),
    ) -> None:
        """``accelerator``: one built earlier with :func:`build_accelerator` (e.g. to read the data
        under ``main_process_first`` before the run folder is touched). ``policy``: each config
        field's resume policy (:func:`gan_accel.config.resume_policy`), ``compare_as`` the fields
        compared by meaning (:func:`gan_accel.config.resume_compare_as`); ``outputs``: the
        top-level names this run writes (what ``--overwrite_output_dir`` removes);
        ``data_fingerprint``: what the run trains on (:mod:`gan_accel.data.fingerprint`), kept in
        every checkpoint and checked on resume; ``exports``: the names of the exports a resume from
        an older checkpoint sets aside when they were written after it."""
        self.args = run
        self.exports = exports
        self.config = config
        self.project = project
        self.policy = policy
        self.compare_as = compare_as
        self.accelerator = accelerator or build_accelerator(run, project)
        self.checkpoints = CheckpointManager(
            self.accelerator, Path(run.output_dir), run.checkpoints_total_limit, data_fingerprint
        )
        # Everything about the checkpoint is checked BEFORE the folder is created or written: a
        # refused resume leaves the run folder exactly as it was (and creates none).
        self.resume_path = self.checkpoints.resolve(run.resume_from_checkpoint)
        self.changed_settings: list = []
        self.data_note: Optional[str] = None
        if self.resume_path is not None:
            self._check_compatible(self.resume_path)
            self.checkpoints.verify(self.resume_path)  # every rank: each must fail the same way
            self.data_note = self.checkpoints.check_data(self.resume_path, run.allow_data_change)
        self.lock = RunLock(Path(run.output_dir))
        main = self.accelerator.is_main_process
        created = topmost_missing(Path(run.output_dir)) if main else None
        self.output_dir = prepare_output_dir(self.accelerator, run, self.lock, outputs)
        self.outputs = tuple(outputs or RUN_OUTPUTS)
        self.found = folder_contents(self.output_dir, created, RUN_MARKER) if main else None
        self.logger: Optional[MetricsLogger] = None
        self.discarded = False
        try:
            self._start_writing()
        except BaseException:
            self.discard()
            raise
        self.print(
            f"accelerator.device: {self.accelerator.device}  processes: {self.accelerator.num_processes}  "
            f"mixed_precision: {self.accelerator.mixed_precision}"
        )
        self.state = TrainState()
        self.guard = NonFiniteGuard(self.state, run.max_nonfinite_steps, latest_checkpoint=self.checkpoints.latest)
        self.stop = GracefulStop(self.accelerator)
        self.stopped_by_signal = False
        self._last_plot = -math.inf
        self._plotted_version = None  # metrics.jsonl's (size, mtime) when last drawn
        self.report_inputs = ReportInputs()  # the command line, set by the runner
        self._reported_evaluations = 0

    def _start_writing(self) -> None:
        """What a start writes in the locked run folder before its first update."""
        run = self.args
        if self.resume_path is None and run.resume_from_checkpoint == "latest":
            # A re-queued job whose first attempt died before its first checkpoint: its lines are
            # set aside, or the fresh run's steps 1, 2, ... would follow them in the same file.
            self.print(
                f"--resume_from_checkpoint latest: no complete checkpoint in {self.checkpoints.root}; starting fresh"
            )
            self._set_aside_lines_after(0)
        if run.trackers:  # before config.json marks the folder as a run's: a tracker that fails leaves it reusable
            init_trackers(self.accelerator, self.project, _tracker_config(self.config), self.output_dir)
        print_and_save_config(self.accelerator, self.config, self.output_dir)

    def print(self, *args) -> None:
        """Print on the local main process, above the progress bar rather than onto it."""
        if self.accelerator.is_local_main_process:
            tqdm.write(" ".join(str(a) for a in args))

    def warn(self, text: str) -> None:
        """A warning line, on stderr with the others, above the progress bar."""
        if self.accelerator.is_local_main_process:
            tqdm.write(text, file=sys.stderr)

    def _check_compatible(self, path: Path) -> None:
        try:
            saved_all = json.loads((path / STATE_FILE).read_text())
            saved = saved_all.get("config", {})
        except (OSError, json.JSONDecodeError, AttributeError) as err:
            raise UserError(f"--resume_from_checkpoint {path}: unreadable {STATE_FILE} ({err})") from None
        other = saved_all.get("project") or self._convert_unrecorded_project(path, saved)
        if other != self.project:
            raise UserError(
                f"--resume_from_checkpoint {path}: this is a {other} checkpoint, not a {self.project} one; "
                f"resume it with the {other} script or pass a {self.project} checkpoint"
            )
        # Another process count: the per-process batch is compared as the global batch.
        saved, current, batch_line = processes.as_global_batch(
            saved, saved_all.get("num_processes"), self.config, self.accelerator.num_processes
        )
        refused, self.changed_settings = resume_changes(saved, current, self.policy, self.compare_as)
        if batch_line:
            refused, self.changed_settings = (
                [batch_line if line.startswith(f"--{processes.BATCH_FIELD} ") else line for line in lines]
                for lines in (refused, self.changed_settings)
            )
        if refused:
            raise UserError(
                f"--resume_from_checkpoint {path}: the checkpoint was trained with different settings "
                f"({'; '.join(refused)}); use the original values or start a new --output_dir"
            )

    def _convert_unrecorded_project(self, path: Path, saved: dict) -> str:
        """The task of a checkpoint written before checkpoints recorded it: this run's, when every
        setting it saved is one of this run's (a checkpoint of another task saved settings this
        one does not have); the next checkpoint records it."""
        foreign = sorted({RENAMED_FIELDS.get(k, k) for k in saved} - set(self.config))
        if foreign:
            raise UserError(
                f"--resume_from_checkpoint {path}: not a {self.project} checkpoint (it has settings "
                f"{', '.join(foreign[:4])} that {self.project} runs do not); resume it with the script "
                "that wrote it"
            )
        return self.project

    def record_config(self, **changes) -> None:
        """Settings the run decided while training (a budget's planned ``max_steps``): into the
        config the next checkpoint saves and into ``config.json`` (main process). A failed write
        is a warning: the checkpoints still hold the value."""
        self.config.update(changes)
        if not self.accelerator.is_main_process:
            return
        try:
            save_config(self.config, self.output_dir)
        except OSError as err:
            self.print(f"warning: could not update {self.output_dir / 'config.json'} ({err})")

    def make_logger(self, total_steps: int, unit: str, desc: str) -> MetricsLogger:
        self.logger = MetricsLogger(
            self.accelerator,
            self.output_dir,
            total_steps,
            self.state.step,
            self.args.log_every,
            unit=unit,
            desc=desc,
            explosion_factor=self.args.loss_explosion_factor,
            explosion_window=self.args.loss_explosion_window,
        )
        return self.logger

    # ---- checkpoints ---------------------------------------------------------------------
    def resume(self, read_extra: Optional[Callable[[Path], None]] = None) -> bool:
        """Load the checkpoint chosen by ``--resume_from_checkpoint`` (call after ``prepare``)."""
        if self.resume_path is None:
            return False
        fresh = hparams.snapshot(self.accelerator)
        saved = self.checkpoints.load(self.resume_path)
        if self.data_note:
            self.print(self.data_note)
        if self.changed_settings:
            hparams.reapply(self.accelerator, fresh)
            self.print(
                f"warning: resuming with changed settings ({'; '.join(self.changed_settings)}): the run is "
                "no longer equivalent to an uninterrupted one"
            )
        if saved.get("num_processes") != self.accelerator.num_processes:
            # The same global batch (checked above): the schedulers continue in this run's ticks.
            processes.rescale_schedulers(self.accelerator, saved.get("num_processes"))
            self.print(
                f"--resume_from_checkpoint {self.resume_path}: written by {saved.get('num_processes')} "
                f"process(es), resumed by {self.accelerator.num_processes} on the same global batch: the "
                "schedules continue from the same update"
            )
        restored = TrainState.from_dict(saved.get("state", {}))
        for key, value in restored.to_dict().items():
            setattr(self.state, key, value)
        if read_extra is not None:
            read_extra(self.resume_path)
        self.print(f"Resumed from {self.resume_path} at step {self.state.step}")
        self._set_aside_lines_after(self.state.step)
        self._set_aside_branch(self.resume_path, self.state.step)
        return True

    def _set_aside_branch(self, checkpoint: Path, step: int) -> None:
        """Resuming from a checkpoint older than the newest starts a new branch: the abandoned
        one's later checkpoints (``latest`` would resume them), grids and exports (a worse
        ``best_generator`` would replace a better one) are renamed ``NAME.dropped``, in one line."""
        if not self.accelerator.is_main_process or self.checkpoints.latest() == checkpoint:
            return
        if not any((step_of(p) or 0) > step for p in self.checkpoints.complete_checkpoints()):
            return
        since = (checkpoint / STATE_FILE).stat().st_mtime_ns  # written last, when the checkpoint was complete
        later = abandoned_after(self.output_dir, step, since, self.exports)
        for path in later:
            set_aside(path)
        if later:
            self.print(
                f"--resume_from_checkpoint {checkpoint}: a new branch from step {step}; what the abandoned one "
                f"wrote after it is renamed NAME{DROPPED} (nothing is deleted): {describe_paths(later, self.output_dir)}"
            )

    def _set_aside_lines_after(self, step: int) -> None:
        """Move the ``metrics.jsonl`` lines logged after ``step`` to ``metrics.jsonl.dropped``: this
        run logs those steps again."""
        dropped = drop_lines_after(self.output_dir / METRICS_FILE, step) if self.accelerator.is_main_process else 0
        if dropped:
            self.print(
                f"{METRICS_FILE}: {dropped} lines logged after step {step} (before the interruption) moved "
                f"to {METRICS_FILE}.dropped: this run logs those steps again"
            )

    def save(self, write_extra: Optional[Callable[[Path], None]] = None) -> Path:
        self.guard.check()  # counts into the state saved below (and stop rather than save a diverged run)
        payload = {
            "state": self.state.to_dict(),
            "config": self.config,
            "project": self.project,
            "num_processes": self.accelerator.num_processes,
        }
        path = self.checkpoints.save(self.state.step, payload, write_extra)
        self.print(f"Saved checkpoint {path}")
        self.plot(at_checkpoint=True)
        return path

    # Drawing the plots takes about a second: with a checkpoint every few seconds (tests, tiny
    # runs) it would dominate, so at checkpoints they are refreshed at most this often.
    PLOT_INTERVAL_S = 60.0

    def plot(self, at_checkpoint: bool = False) -> None:
        """Refresh ``OUTPUT_DIR/plots/`` from ``metrics.jsonl`` (main process; never fails the run)."""
        if not self.accelerator.is_main_process:
            return
        now = time.monotonic()
        if at_checkpoint and now - self._last_plot < self.PLOT_INTERVAL_S:
            return
        # The end of a run comes right after its final checkpoint: nothing new to draw.
        version = metrics_version(self.output_dir)
        if version is not None and version == self._plotted_version:
            return
        self._last_plot = now
        self._plotted_version = version
        plot_run_safely(self.output_dir, warn=self.warn)
        self.write_report()  # a new metric brings a new plot for the page

    def write_report(self) -> None:
        """Rewrite ``OUTPUT_DIR/report.html`` (main process; never fails the run)."""
        if self.accelerator.is_main_process and not self.discarded:
            write_report_safely(self.output_dir, self.project, self.report_inputs, warn=self.warn)

    def report_after_evaluation(self) -> None:
        """Called after every step's grids: the page (and, at most once a minute, the plots) is
        refreshed when an evaluation was logged since the last time."""
        evaluations = self.logger.evaluations if self.logger is not None else 0
        if evaluations != self._reported_evaluations:
            self._reported_evaluations = evaluations
            self.plot(at_checkpoint=True)
            self.write_report()

    # ---- cadence -------------------------------------------------------------------------
    def due(self, every: int) -> bool:
        return every > 0 and self.state.step % every == 0

    def should_stop(self) -> bool:
        """Signals, agreed across ranks. Call once per optimizer update on every rank."""
        if self.stop.should_stop():
            self.stopped_by_signal = True
            return True
        return False

    def exit_code(self) -> int:
        """0, or 128 + the signal's number when a signal stopped the run before its end."""
        return signal_exit_code(self.stop.signum) if self.stopped_by_signal else 0

    def abort(self) -> None:
        """On an error: close the progress bar so the error message starts on its own line, and
        free the run folder for the next run."""
        if self.logger is not None:
            self.logger.close()
        self.lock.release()

    def discard(self) -> None:
        """A start that failed (or a run that failed before its first update): remove what it wrote
        in the run folder (:func:`~gan_accel.loop.rundir.undo_start`), so the corrected command
        starts there, and free the folder."""
        if self.discarded:
            return
        interrupt.phase("discard")
        if self.logger is not None:
            self.logger.close()
        if self.found is not None:
            undo_start(self.output_dir, self.found, self.outputs, RUN_MARKER)
        self.lock.release()
        self.discarded = True

    def finish(self) -> None:
        if self.logger is not None:
            self.logger.close()
        if not self.discarded:
            self.plot()
            self.write_report()  # the exports (final grid, animation, results) came after the last plot
        self.accelerator.wait_for_everyone()
        self.accelerator.end_training()
        self.lock.release()
