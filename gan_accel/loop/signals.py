"""Graceful stop on SIGINT/SIGTERM: finish the step, checkpoint, exit.

Either way the command exits with 128 + the signal's number, as a shell reports a process a
signal ended (130 for Ctrl-C, 143 for SIGTERM): ``train && sample`` must not sample a run that
stopped before its end, and a scheduler sees the job did not complete. The handler itself, and
what a repeated signal means, is :mod:`gan_accel.interrupt`'s (one for every phase of a command)."""

from __future__ import annotations

import sys
from contextlib import ExitStack

import torch

from ..interrupt import SAME_STOP_WINDOW_S, graceful, signal_name
from ..interrupt import exit_code as signal_exit_code

__all__ = ["GracefulStop", "signal_exit_code"]


class GracefulStop:
    """Context manager that turns the first SIGINT/SIGTERM into a flag the loop polls.

    Under several processes a signal may reach only some ranks (or reach them at different
    steps), so :meth:`should_stop` all-reduces the flag: every rank stops after the same step.
    That is one tiny collective per step, made only when more than one process runs.
    """

    def __init__(self, accelerator=None) -> None:
        self.accelerator = accelerator
        self.requested = False
        self.signum = None
        self._stack = None

    def _request(self, signum) -> None:
        self.requested = True
        self.signum = signum
        print(
            f"\n{signal_name(signum)} received: finishing this step, saving a checkpoint, then exiting "
            f"with code {signal_exit_code(signum)} (a second signal {SAME_STOP_WINDOW_S:g} s or more later exits at once).",
            file=sys.stderr,
            flush=True,
        )

    def __enter__(self) -> "GracefulStop":
        self._stack = ExitStack()
        self._stack.enter_context(graceful(self._request))
        return self

    def __exit__(self, *exc) -> None:
        stack, self._stack = self._stack, None
        stack.close()

    def should_stop(self) -> bool:
        acc = self.accelerator
        if acc is None or acc.num_processes == 1:
            return self.requested
        flag = torch.tensor([float(self.requested)], device=acc.device)
        return bool(acc.reduce(flag, reduction="sum").item() > 0)
