"""Graceful stop on SIGINT/SIGTERM: finish the step, checkpoint, exit; a second signal exits now.

Either way the command exits with 128 + the signal's number, as a shell reports a process a
signal ended (130 for Ctrl-C, 143 for SIGTERM): ``train && sample`` must not sample a run that
stopped before its end, and a scheduler sees the job did not complete."""

from __future__ import annotations

import os
import signal
import sys
import threading

import torch


def signal_exit_code(signum) -> int:
    """The exit code of a command stopped by ``signum`` (None: the signal reached another process
    of the run, and SIGTERM's code stands for it)."""
    return 128 + int(signum if signum is not None else signal.SIGTERM)


class GracefulStop:
    """Context manager that turns the first SIGINT/SIGTERM into a flag the loop polls.

    Under several processes a signal may reach only some ranks (or reach them at different
    steps), so :meth:`should_stop` all-reduces the flag: every rank stops after the same step.
    That is one tiny collective per step, made only when more than one process runs.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, accelerator=None) -> None:
        self.accelerator = accelerator
        self.requested = False
        self.signum = None
        self._previous = {}

    def _handle(self, signum, frame) -> None:
        if self.requested:
            # Second signal: the user means it. Exit at once, without a checkpoint.
            print(
                f"\nSecond {signal.Signals(signum).name}: exiting immediately without a checkpoint.",
                file=sys.stderr,
                flush=True,
            )
            os._exit(signal_exit_code(signum))
        self.requested = True
        self.signum = signum
        print(
            f"\n{signal.Signals(signum).name} received: finishing this step, saving a checkpoint, then exiting "
            f"with code {signal_exit_code(signum)} (send it again to exit at once).",
            file=sys.stderr,
            flush=True,
        )

    def __enter__(self) -> "GracefulStop":
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def should_stop(self) -> bool:
        acc = self.accelerator
        if acc is None or acc.num_processes == 1:
            return self.requested
        flag = torch.tensor([float(self.requested)], device=acc.device)
        return bool(acc.reduce(flag, reduction="sum").item() > 0)
