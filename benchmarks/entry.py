"""The front of every benchmark entry: ``python -m benchmarks.ENTRY COMMAND [flags]``.

An entry answers one question (speed, photo quality, classifier); each of its commands is a module
with its own ``main(argv)`` and flags, run here with ``COMMAND``'s flags and named in its usage
line as the reader types it. ``python -m benchmarks.ENTRY --help`` lists the commands.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Dict, Optional, Sequence, Tuple

Commands = Dict[str, Tuple[str, str]]  # command -> (module, one line on what it measures)


def dispatch(entry: str, doc: str, commands: Commands, argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    prog = f"python -m benchmarks.{entry}"
    if args and args[0] in commands:
        module = importlib.import_module(commands[args[0]][0])
        # argparse names the program after sys.argv[0]: the command as typed, not "__main__.py".
        saved, sys.argv[0] = sys.argv[0], f"{prog} {args[0]}"
        try:
            return module.main(args[1:])
        finally:
            sys.argv[0] = saved
    width = max(map(len, commands))
    listing = "\n".join(f"  {name:<{width}}  {about}" for name, (_, about) in commands.items())
    parser = argparse.ArgumentParser(
        prog=prog,
        description=doc,
        epilog=f"commands:\n{listing}\n\n`{prog} COMMAND --help` lists a command's flags.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=list(commands), help="what to measure (below)")
    parser.parse_args(args[:1])  # --help exits 0 with the listing; anything else is an unknown command
    return 2  # not reached: a known command was dispatched above
