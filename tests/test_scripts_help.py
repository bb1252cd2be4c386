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
# The benchmarks run as ``python -m benchmarks.NAME`` from a checkout: their commands are the bench_* modules.
BENCHMARKS = sorted(f"benchmarks.{p.stem}" for p in (ROOT / "benchmarks").glob("bench*.py"))


def test_the_list_covers_the_scripts():
    assert {"train_gan", "train_classifier", "predict", "sample_gan", "evaluate_gan", "make_tiny_model"} <= set(
        SCRIPTS
    )


def test_the_list_covers_the_benchmarks():
    assert {"benchmarks.bench", "benchmarks.bench_data", "benchmarks.bench_knobs", "benchmarks.bench_distill"} <= set(
        BENCHMARKS
    )


@pytest.mark.parametrize("name", SCRIPTS + BENCHMARKS)
def test_help_exits_0_and_prints_usage(name, capsys):
    module = importlib.import_module(name) if name.startswith("benchmarks.") else load_script(name)
    # A script is a thin wrapper: its command's source is the gan_accel.cli module it imports.
    source = Path(
        module.__file__ if name.startswith("benchmarks.") else ROOT / "gan_accel" / "cli" / f"{name}.py"
    ).read_text()
    with pytest.raises(SystemExit) as info:
        module.main(["--help"])
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
