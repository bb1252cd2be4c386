"""One SIGINT/SIGTERM handler for a command, from its first line to its exit.

Every command enters :func:`handling` (``gan_accel.errors.cli_entry`` does it), so a signal is
answered the same way in every phase:

* while a training loop runs (:class:`gan_accel.loop.GracefulStop` registered with
  :func:`graceful`): the loop finishes the step, saves a checkpoint and the command exits with
  128 + the signal's number (130, 143);
* anywhere else (start-up, export, the commands that do not train): :class:`Interrupted` is
  raised where the main thread is; the code it unwinds through cleans up as for any error (a
  training start that fails before its first update removes what it wrote, temporary files are
  deleted) and ``cli_entry`` prints one line and exits 130/143, without a traceback;
* a signal in a :func:`deferred` block (claiming the run folder) waits for the block's end, so
  no moment exists where the folder is made but its clean-up does not know it yet.

A second signal within :data:`SAME_STOP_WINDOW_S` of the first is the same stop: a scheduler
that signals a whole process group reaches each worker twice (directly and through torchrun),
and a Ctrl-C pressed twice by reflex should not cost the checkpoint. A second signal later than
that exits at once, without a checkpoint.

Light on imports (no torch): it is installed before a command imports anything heavy.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

SIGNALS = (signal.SIGINT, signal.SIGTERM)
SAME_STOP_WINDOW_S = 2.0  # a repeat within this many seconds of the first signal is the same stop

# Tests only: "PHASE:SIGNAL[:COUNT][:job],..." makes the process signal itself COUNT times the
# first time it reaches PHASE (a :func:`phase` call), so every phase can be hit without sleeping
# and hoping. "job": as a scheduler signals every process of a job, rank 0 also signals torchrun
# (its workers run in sessions of their own, so a process-group signal would not reach them).
TEST_SIGNAL_ENV = "GAN_ACCEL_TEST_SIGNAL_AT"


def exit_code(signum) -> int:
    """The exit code of a command stopped by ``signum`` (None: the signal reached another process
    of the run, and SIGTERM's code stands for it), as a shell reports a process a signal ended."""
    return 128 + int(signum if signum is not None else signal.SIGTERM)


def signal_name(signum) -> str:
    return signal.Signals(signum).name


class Interrupted(BaseException):
    """A signal outside a training loop. A BaseException, like KeyboardInterrupt: the
    ``except Exception`` of code that reports and goes on must not swallow the user's stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.code = exit_code(signum)
        self.detail = ""  # what the clean-up it went through kept or removed, for the closing line

    def line(self) -> str:
        return f"{signal_name(self.signum)} received: stopped{self.detail}, exit code {self.code}"


class _State:
    def __init__(self) -> None:
        self.pid: Optional[int] = None  # the process that installed the handler
        self.first: Optional[int] = None  # the first signal's number, and when it came
        self.first_at = 0.0
        self.on_signal: Optional[Callable[[int], None]] = None  # a training loop's GracefulStop
        self.deferring = 0
        self.pending: Optional[int] = None
        self.fired: set = set()


_state = _State()


def _handle(signum, frame) -> None:
    if os.getpid() != _state.pid:
        # A forked worker (a DataLoader's): the main process stops it. The first signal is left to
        # the main process; the default comes back, so that a terminate() still ends the worker.
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        return
    now = time.monotonic()
    if _state.first is not None:
        if now - _state.first_at < SAME_STOP_WINDOW_S:
            return  # the same stop, delivered again
        print(
            f"\nSecond {signal_name(signum)}: exiting immediately without a checkpoint.", file=sys.stderr, flush=True
        )
        os._exit(exit_code(signum))
    _state.first, _state.first_at = signum, now
    if _state.on_signal is not None:
        _state.on_signal(signum)
    elif _state.deferring:
        _state.pending = signum
    else:
        raise Interrupted(signum)


@contextmanager
def handling() -> Iterator[None]:
    """Answer SIGINT/SIGTERM as described above for the block (a no-op when an outer block of this
    process already does, or off the main thread, where Python cannot install handlers)."""
    import threading

    if _state.pid == os.getpid() or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _handle) for sig in SIGNALS}
    _state.__init__()
    _state.pid = os.getpid()
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _state.pid = None


@contextmanager
def graceful(on_signal: Callable[[int], None]) -> Iterator[None]:
    """Within the block, the first signal calls ``on_signal(signum)`` instead of raising: a
    training loop polls the flag it sets and stops after a checkpoint."""
    with handling():
        outer, _state.on_signal = _state.on_signal, on_signal
        try:
            yield
        finally:
            _state.on_signal = outer


@contextmanager
def deferred() -> Iterator[None]:
    """A signal within the block raises :class:`Interrupted` at its end, not in the middle."""
    _state.deferring += 1
    try:
        yield
    finally:
        _state.deferring -= 1
        if not _state.deferring and _state.pending is not None:
            signum, _state.pending = _state.pending, None
            raise Interrupted(signum)


def stopped() -> Optional[int]:
    """The signal that asked this command to stop, if one did."""
    return _state.first


def phase(name: str) -> None:
    """Mark a moment tests may signal the process at (see :data:`TEST_SIGNAL_ENV`); otherwise nothing."""
    spec = os.environ.get(TEST_SIGNAL_ENV)
    if not spec or name in _state.fired:
        return
    for entry in spec.split(","):
        parts = entry.split(":")
        if parts[0] != name:
            continue
        _state.fired.add(name)
        sig = signal.Signals[parts[1]]
        count = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 1
        if "job" in parts and os.environ.get("RANK") == "0" and "TORCHELASTIC_RUN_ID" in os.environ:
            os.kill(os.getppid(), sig)  # torchrun too, which sends it on to every worker: each gets two
        for _ in range(count):
            os.kill(os.getpid(), sig)
