"""The ``gan-accel`` command: one entry point on the PATH with a sub-command per job.

    gan-accel train-gan --dataset folder --data_dir my_images --channels 3 --output_dir runs/mine
    gan-accel sample-gan --generator runs/mine/generator --num_images 64 --output_dir runs/mine/png

One name to remember, and ``gan-accel --help`` lists every job (as ``accelerate`` and ``hf`` do)
instead of a dozen ``gan-accel-*`` names. Each sub-command is the module ``gan_accel.cli.NAME``
with ``main(argv)``: ``accelerate launch -m gan_accel.cli.train_gan ...`` and
``torchrun -m gan_accel.cli.train_gan ...`` start it on several processes, and the
``scripts/NAME.py`` files of a checkout are thin wrappers around the same modules.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import sys
from typing import Optional, Sequence


def _collect_then_freeze() -> None:
    """At a command's exit: collect once (every finaliser of garbage runs, every file it holds is
    flushed), then freeze what survives, so that the interpreter's shutdown does not spend its time
    collecting the objects torch, torch._dynamo and torchvision created: 0.4-1 s of every
    command's wall time on a 2-core CPU (``gan-accel sample-gan`` of 100 images, median of 6 runs:
    5.0 s without this, 4.2 s with it). Registered when the package is imported, before torch, it
    runs after every exit handler registered later (trackers, loggers)."""
    gc.collect()
    gc.freeze()


atexit.register(_collect_then_freeze)


def _answer_signals_while_run_as_a_module() -> None:
    """``python -m gan_accel.cli.NAME`` (and ``torchrun -m`` / ``accelerate launch -m``, which start
    it that way) imports this package, then the module, whose first line imports torch: seconds
    before the command's own handler (``gan_accel.errors.cli_entry``) exists, where Ctrl-C met
    Python's KeyboardInterrupt traceback. While ``-m`` is looking for its module, ``sys.argv[0]``
    is ``"-m"``; only when the module it looks for is one of this package's is a handler installed
    here (another program's ``-m`` that imports this package keeps its own). Nothing is on disk yet,
    so it says the one line every command says and exits 130/143; the command's handler replaces it
    at its first line."""
    original = getattr(sys, "orig_argv", [])
    target = original[original.index("-m") + 1] if "-m" in original[:-1] else ""
    if sys.argv[:1] != ["-m"] or not target.startswith(__name__):
        return
    import os
    import signal

    from gan_accel import interrupt

    def stop(signum, frame) -> None:
        sys.stdout.flush()
        print(interrupt.Interrupted(signum).line(), file=sys.stderr, flush=True)
        os._exit(interrupt.exit_code(signum))

    for sig in interrupt.SIGNALS:
        signal.signal(sig, stop)
    interrupt.phase("import")


_answer_signals_while_run_as_a_module()

# sub-command -> (module, one line for --help)
COMMANDS = {
    "train-gan": ("train_gan", "train a GAN on a folder of images or a bundled dataset"),
    "sample-gan": ("sample_gan", "draw images (truncation, interpolation, class grids) from an exported generator"),
    "evaluate-gan": ("evaluate_gan", "FID/KID, precision/recall, density/coverage, memorisation of a generator"),
    "compare-metrics": ("compare_metrics", "say whether two metric results were measured the same way"),
    "export-onnx": ("export_onnx", "export a generator or a CycleGAN translator to ONNX"),
    "train-cyclegan": ("train_cyclegan", "train a CycleGAN on two unpaired image folders"),
    "translate": ("translate", "translate a folder of images with a CycleGAN generator"),
    "train-classifier": ("train_classifier", "fine-tune a sequence classifier"),
    "distill-classifier": ("distill_classifier", "distil a fine-tuned classifier into a smaller student"),
    "predict": ("predict", "classify texts with a trained classifier"),
    "plot-run": ("plot_run", "draw a run's metrics.jsonl as plots"),
    "make-photo-crops": (
        "make_photo_crops",
        "write a folder of crops of the bundled photos (development, benchmarks)",
    ),
    "make-tiny-model": ("make_tiny_model", "train a tokenizer and save a tiny DistilBERT for offline runs"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    return (
        "usage: gan-accel COMMAND [flags]   (gan-accel COMMAND --help for its flags; gan-accel --version)"
        "\n\ncommands:\n" + "\n".join(lines)
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0
    if args[0] in ("-V", "--version"):
        from gan_accel import __version__

        print(f"gan-accel {__version__}")
        return 0
    command = args[0].replace("_", "-")
    if command not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(command, COMMANDS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        print(f"error: unknown command {args[0]}{hint}; gan-accel --help lists them", file=sys.stderr)
        return 2
    from gan_accel import interrupt
    from gan_accel.errors import answering_signals

    with answering_signals():  # from before the seconds of importing torch: Ctrl-C then is one line too
        interrupt.phase("import")
        module = importlib.import_module(f"gan_accel.cli.{COMMANDS[command][0]}")
        return module.main(args[1:])


def script(name: str, module: str):
    """The ``main`` of ``scripts/MODULE.py`` (``name``: the script's ``__name__``). Run as a program
    (``python``, ``torchrun`` or ``accelerate launch scripts/MODULE.py``), it runs the command as
    ``gan-accel COMMAND`` does, with SIGINT/SIGTERM answered from before torch's import, and exits:
    a script that imported its command's module first met a Ctrl-C in those seconds with Python's
    KeyboardInterrupt traceback. Imported, it is the command module's ``main``."""
    if name == "__main__":
        command = next(c for c, (m, _) in COMMANDS.items() if m == module)
        raise SystemExit(main([command, *sys.argv[1:]]))
    return importlib.import_module(f"gan_accel.cli.{module}").main


if __name__ == "__main__":
    raise SystemExit(main())
