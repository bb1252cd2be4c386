"""The ``gan-accel`` command: one sub-command per script, the scripts as thin wrappers of the same
modules, and a package installed outside the checkout that works on its own."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gan_accel import cli
from helpers import ROOT, load_script

SCRIPTS = sorted(p.stem for p in (ROOT / "scripts").glob("*.py"))


def test_every_script_is_a_command_and_a_wrapper():
    modules = {module for module, _ in cli.COMMANDS.values()}
    assert modules == set(SCRIPTS) == {p.stem for p in (ROOT / "gan_accel" / "cli").glob("*.py")} - {"__init__"}
    for name in SCRIPTS:
        import importlib

        assert load_script(name).main is importlib.import_module(f"gan_accel.cli.{name}").main
    needle = "sys.path" + ".insert"  # the package is installed (make install), never put on the path by hand
    assert not [p for p in ROOT.glob("*/*.py") if needle in p.read_text()]


def test_help_lists_every_command(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in cli.COMMANDS)


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(capsys, flag):
    import re

    assert cli.main([flag]) == 0
    version = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert capsys.readouterr().out == f"gan-accel {version}\n"


def test_unknown_command_is_one_line_with_a_suggestion(capsys):
    assert cli.main(["train-gna"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: unknown command train-gna (did you mean train-gan?); gan-accel --help lists them"]


def test_a_command_gets_its_flags(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["train_gan", "--help"])  # the script's name works too
    assert info.value.code == 0
    assert "--data_dir" in capsys.readouterr().out


def test_installed_outside_the_checkout(tmp_path):
    # pip installs the package and its `gan-accel` launcher into a fresh folder (no dependencies:
    # those of this environment serve); run from elsewhere, it imports that copy, not the checkout.
    # From a copy of the sources: building in the checkout would leave build/ there.
    source = tmp_path / "source"
    shutil.copytree(ROOT / "gan_accel", source / "gan_accel", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    launcher = target / "bin" / "gan-accel"
    assert launcher.exists()
    env = {**os.environ, "PYTHONPATH": str(target), "PYTHONNOUSERSITE": "1"}
    work = tmp_path / "elsewhere"
    work.mkdir()
    out = subprocess.run(
        [sys.executable, str(launcher), "train-gan", "--dataset", "digits", "--output_dir", "run", "--dry_run"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"dataset": "digits"' in out.stdout
    where = subprocess.run(
        [sys.executable, "-c", "import gan_accel; print(gan_accel.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert Path(where.strip()).is_relative_to(target)
    assert not (target / "benchmarks").exists() and not (target / "tests").exists()  # the package only


def test_starting_a_command_leaves_the_slow_imports_for_later():
    # torchmetrics (scipy, transformers, torchvision with torch._dynamo) takes seconds to import on a
    # small CPU: `--help`, `compare-metrics` and every error exit before an evaluation must not pay it,
    # and compare-metrics (JSON in, text out) not even torch's.
    code = (
        "import sys, importlib\n"
        "for name in sys.argv[1:]: importlib.import_module(f'gan_accel.cli.{name}')\n"
        "print(' '.join(m for m in ('torch', 'torchvision', 'torchmetrics') if m in sys.modules))\n"
    )

    def loaded(*names):
        proc = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, check=True)
        return proc.stdout.split()

    assert loaded("compare_metrics") == []
    assert loaded(*SCRIPTS) == ["torch"]


def test_garbage_is_still_finalised_when_a_command_exits(tmp_path):
    # A command's exit handler freezes the objects alive at exit so that the shutdown skips
    # collecting them; garbage in a reference cycle must still be finalised (a file it holds flushed).
    marker = tmp_path / "finalised"
    code = (
        "import gan_accel.cli\n"
        "class Cycle:\n"
        "    def __init__(self): self.me = self\n"
        f"    def __del__(self): open({str(marker)!r}, 'w').close()\n"
        "Cycle()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    assert marker.exists()


def user_facing_strings(path: Path) -> list:
    """The string constants of a module a user can read: messages, help texts, card text, and a
    command module's docstring (its --help description); other docstrings are for developers."""
    import ast

    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    if path.parent.name == "cli":
        docstrings.discard(id(tree.body[0].value))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_messages_name_commands_not_script_files():
    """``pip install`` provides the gan-accel command, not scripts/*.py: no message, help text or
    model card may tell a user to run a script file."""
    import re

    script = re.compile(r"\b(?:scripts/)?(" + "|".join(m for m, _ in cli.COMMANDS.values()) + r")\.py\b")
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in sorted((ROOT / "gan_accel").rglob("*.py"))
        for text in user_facing_strings(path)
        for match in script.finditer(text)
    ]
    assert not found, found
