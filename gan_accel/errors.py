"""User-facing errors: one clear line, a non-zero exit, no traceback (unless --debug)."""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Callable, Iterator, Optional, Sequence

from . import interrupt


class UserError(Exception):
    """A problem with the user's input (a flag, a file, a folder) that they can fix.

    The message names the flag or file and says what to do; scripts print it on one line.
    """


class ConfigError(UserError, ValueError):
    """An invalid configuration value (raised from dataclass ``__post_init__``)."""


class TaskMethodError(UserError):
    """An exception other than a :class:`UserError` raised by a task's own method (``build()``,
    ``read_data()``, ...): a bug in that task. One line naming the method; the original exception
    is its ``__cause__``, and ``--debug`` shows its traceback."""


EXIT_USER_ERROR = 2


def parser_error(message: str):
    """``parser.error = parser_error``: argparse would print its whole usage block before the message."""
    raise UserError(f"{message}; run with --help")


@contextlib.contextmanager
def answering_signals() -> Iterator[None]:
    """SIGINT/SIGTERM as :mod:`gan_accel.interrupt` answers them; a stop outside a training loop
    ends the command with one line and exit code 130/143."""
    try:
        with interrupt.handling():
            yield
    except interrupt.Interrupted as stop:
        print(stop.line(), file=sys.stderr, flush=True)
        raise SystemExit(stop.code) from None


def cli_entry(main: Callable[[Optional[Sequence[str]]], int]) -> Callable[[Optional[Sequence[str]]], int]:
    """Wrap a script's ``main(argv)``: a :class:`UserError` becomes ``error: ...`` on stderr and
    exit code 2. ``--debug`` on the command line re-raises with the full traceback. SIGINT and
    SIGTERM are answered from here on (:mod:`gan_accel.interrupt`): outside a training loop, one
    line and exit code 130/143."""

    @functools.wraps(main)
    def wrapper(argv: Optional[Sequence[str]] = None) -> int:
        from .writes import forget_outputs

        args = list(sys.argv[1:] if argv is None else argv)
        forget_outputs()  # a failed write names this command's flags, not the last one's
        try:
            with answering_signals():
                interrupt.phase("start")
                return main(args)
        except UserError as err:
            if "--debug" in args:
                if isinstance(err, TaskMethodError) and err.__cause__ is not None:
                    raise err.__cause__ from None  # the task's own traceback, where the bug is
                raise
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(EXIT_USER_ERROR) from None
        except OSError as err:
            # A path the user gave that the system refuses (a name too long for the file system,
            # a folder without permission): the path and the reason, not a traceback.
            if err.filename is None or "--debug" in args:
                raise
            print(f"error: {err.filename}: {err.strerror}; pass another path", file=sys.stderr)
            raise SystemExit(EXIT_USER_ERROR) from None

    return wrapper
