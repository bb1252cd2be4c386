"""``--help`` of every script in scripts/ and every benchmark command in benchmarks/: exit 0 and a usage text listing the flags.

argparse %-formats every help string, so a bare ``%`` in a field's help (``~30% more``) turned
``--help`` itself into an error while every argument error says "run with --help".
"""

import importlib
import re
from pathlib import Path

import pytest

from helpers import ROOT, load_script

SCRIPTS = sorted(p.stem for p in (ROOT / "scripts").glob("*.py"))
# The benchmarks run as ``python -m benchmarks.ENTRY [COMMAND]`` from a checkout: one entry per
# question, each listing its commands (benchmarks/entry.py); every command has its own flags.
ENTRIES = ("speed", "photos", "data", "classifier", "digits_judge")
BENCHMARKS = [f"benchmarks.{e}" for e in ENTRIES] + [
    f"benchmarks.{e} {c}" for e in ENTRIES for c in getattr(importlib.import_module(f"benchmarks.{e}"), "COMMANDS", {})
]


def test_the_list_covers_the_scripts():
    assert {"train_gan", "train_classifier", "predict", "sample_gan", "evaluate_gan", "make_tiny_model"} <= set(
        SCRIPTS
    )


def test_the_list_covers_the_benchmarks():
    assert {
        "benchmarks.speed loops",
        "benchmarks.data",
        "benchmarks.speed knobs",
        "benchmarks.classifier distill",
    } <= set(BENCHMARKS)
    # Every module of benchmarks/ with a command line is reachable from an entry.
    commands = {
        m for e in ENTRIES for m, _ in getattr(importlib.import_module(f"benchmarks.{e}"), "COMMANDS", {}).values()
    }
    with_main = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "benchmarks").rglob("*.py")
        if "def main(" in p.read_text() and p.name != "__init__.py" and p.parent.name != "benchmarks"
    }
    assert with_main <= commands


@pytest.mark.parametrize("name", SCRIPTS + BENCHMARKS)
def test_help_exits_0_and_prints_usage(name, capsys):
    argv = ["--help"]
    if name.startswith("benchmarks."):  # an entry, or one of its commands run through it
        entry, _, command = name.partition(" ")
        main = module = importlib.import_module(entry)
        if command:
            module, argv = importlib.import_module(main.COMMANDS[command][0]), [command, "--help"]
    else:
        main = module = load_script(name)
    # A script is a thin wrapper: its command's source is the gan_accel.cli module it imports.
    source = Path(
        module.__file__ if name.startswith("benchmarks.") else ROOT / "gan_accel" / "cli" / f"{name}.py"
    ).read_text()
    with pytest.raises(SystemExit) as info:
        main.main(argv)
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    assert out.startswith("usage: ") and "--help" in out
    if "parse_config" in source:  # plot_run.py takes a folder, no config
        assert "--config" in out
    assert "error" not in err
    # Defaults are shown once, and only when they say something: a help that names its own default
    # read "(default: the generator's). (default: None)".
    entries = re.split(r"\n  (?=-)", out.split("options:", 1)[-1])
    assert "(default: None)" not in out and not [e for e in entries if e.count("(default") > 1]
    # The script's own description is shown (its docstring's first line, modulo re-wrapping).
    first_words = " ".join(module.__doc__.split()[:3])
    assert first_words in " ".join(out.split())
