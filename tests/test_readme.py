"""The README and the guides in docs/ cannot rot: their runnable blocks run, their code excerpts exist
verbatim in the project, every flag they name is a real flag of a script (or of the launchers they
show), and every test they name as a proof exists.

Markers (HTML comments, invisible on GitHub) placed on the line before a fenced block:
  <!-- runnable -->            run this bash/python block (small settings) in a scratch folder
  <!-- runnable: continues --> a python block that continues the previous runnable python block of the file
  <!-- runnable: cheap SCRIPT ARGS; SCRIPT ARGS -->
                               run this bash block with ARGS appended to each command of SCRIPT (argparse
                               keeps the last value of a flag): the block shows the real settings, the test
                               runs a few updates of it
  <!-- tested in FILE -->      this block is part of one of FILE's runnable blocks, verbatim (it runs there, once)
  <!-- excerpt: PATH -->       this block is copied verbatim from PATH

Every document's blocks run in ONE scratch folder, README.md first and then docs/ in name order, so a
guide may use what the README's blocks made (``runs/tiny/model``) without training it again.
"""

import functools
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import ROOT

DOCUMENTS = ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))
TEXT = {name: (ROOT / name).read_text() for name in DOCUMENTS}
BLOCK = re.compile(r"<!-- (runnable(?:: [^>]+?)?|excerpt: [^>]+?|tested in [^>]+?) -->\n```(\w+)\n(.*?)\n```", re.S)
CHEAP = "runnable: cheap "


def blocks(kind, documents=DOCUMENTS):
    """(document, language, code, marker) of every block whose marker starts with ``kind``."""
    return [
        (name, m.group(2), m.group(3), m.group(1))
        for name in documents
        for m in BLOCK.finditer(TEXT[name])
        if m.group(1).startswith(kind)
    ]


def cheapened(code: str, marker: str) -> str:
    """The block with its continuation lines joined and the marker's ARGS appended to each SCRIPT command."""
    lines = re.sub(r"\s*\\\n\s*", " ", code).splitlines()
    for spec in marker[len(CHEAP) :].split(";"):
        # The command is what precedes the first flag: "train_gan.py" or "gan-accel train-gan".
        script, _, args = spec.strip().partition(" --")
        args = f"--{args}"
        assert any(script in line for line in lines), f"{script} is not in the block it should make cheap:\n{code}"
        lines = [f"{line.split('#')[0].rstrip()} {args}" if script in line else line for line in lines]
    return "\n".join(lines)


def runnable():
    out, previous_python = [], {}
    for name, lang, code, marker in blocks("runnable"):
        if lang == "python":
            code = (previous_python[name] + "\n" + code) if marker.endswith("continues") else code
            previous_python[name] = code
        elif marker.startswith(CHEAP):
            code = cheapened(code, marker)
        out.append(pytest.param(lang, code, id=f"{name}-{lang}-{len(out)}"))
    return out


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A scratch folder that looks like the project root (scripts/, configs/), with its own runs/ and a
    small folder of photos, ``my_images/``, standing in for the reader's own."""
    from benchmarks.data.paths import generate_folder

    folder = tmp_path_factory.mktemp("readme")
    for name in ("scripts", "configs", "samples", "docs"):
        (folder / name).symlink_to(ROOT / name)
    generate_folder(folder / "my_images", 48, 64, 1)
    return folder


def test_documents_have_runnable_blocks_and_excerpts():
    assert len(blocks("runnable", ["README.md"])) >= 5 and len(blocks("excerpt")) >= 2
    for name in ("docs/gan.md", "docs/cyclegan.md", "docs/classifier.md", "docs/distillation.md", "docs/data.md"):
        assert blocks("runnable", [name]) or blocks("tested in", [name]), f"{name} has no tested command"


def test_cheap_marker_appends_to_the_named_script_only():
    code = "python scripts/train_gan.py --max_steps 5000 \\\n    --output_dir runs/x  # comment\nls runs/x"
    assert cheapened(code, "runnable: cheap train_gan.py --max_steps 2") == (
        "python scripts/train_gan.py --max_steps 5000 --output_dir runs/x --max_steps 2\nls runs/x"
    )


@pytest.mark.parametrize("lang,code", runnable())
def test_runnable_block(scratch, lang, code):
    env = {
        **os.environ,
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    cmd = ["bash", "-euo", "pipefail", "-c", code] if lang == "bash" else [sys.executable, "-c", code]
    proc = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
    output = f"--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"Block failed:\n{code}\n{output}"


@pytest.mark.parametrize("name,code,marker", [(n, c, m) for n, _, c, m in blocks("tested in")])
def test_block_is_tested_where_it_says(name, code, marker):
    where = marker[len("tested in ") :]
    tested = [c for _, _, c, _ in blocks("runnable", [where])]
    assert any(code in c for c in tested), f"{name}: this block is not part of a runnable block of {where}:\n{code}"


@pytest.mark.parametrize("path,code", [(m.split(": ", 1)[1], c) for _, _, c, m in blocks("excerpt")])
def test_excerpt_is_verbatim(path, code):
    source = (ROOT / path).read_text()
    lines = [line for line in textwrap.dedent(code).splitlines() if line.strip() and line.strip() != "..."]
    # Each run of lines between "..." elisions must appear in the file (indentation relative).
    chunks, current = [], []
    for line in textwrap.dedent(code).splitlines():
        if line.strip() == "...":
            chunks, current = chunks + [current], []
        elif line.strip():
            current.append(line)
    chunks.append(current)
    stripped = [line.strip() for line in source.splitlines()]
    for chunk in filter(None, chunks):
        want = [line.strip() for line in chunk]
        found = any(stripped[i : i + len(want)] == want for i in range(len(stripped) - len(want) + 1))
        assert found, f"Excerpt not found verbatim in {path}:\n" + "\n".join(chunk)
    assert lines


LAUNCHER_FLAGS = {
    "--nproc_per_node",
    "--nnodes",
    "--node_rank",
    "--master_addr",
    "--master_port",
    "--standalone",
    "--multi_gpu",
    "--num_processes",
    "--num_machines",
    "--machine_rank",
    "--main_process_ip",
    "--main_process_port",
    "--mixed_precision",
    "--cpu",
    "--config_file",
    "--help",
    "--durations",
}
SCRIPTS = (
    "train_gan",
    "sample_gan",
    "evaluate_gan",
    "train_classifier",
    "predict",
    "make_tiny_model",
    "distill_classifier",
    "train_cyclegan",
    "translate",
    "plot_run",
    "export_onnx",
    "compare_metrics",
    "make_photo_crops",
)
# The benchmarks' entries (``python -m benchmarks.ENTRY [COMMAND]``) and the module behind each command.
BENCHMARK_ENTRIES = ("speed", "photos", "data", "classifier", "digits_judge")


def benchmark_commands():
    """``{"ENTRY" or "ENTRY COMMAND": module}`` of every benchmark command."""
    import importlib

    commands = {}
    for entry in BENCHMARK_ENTRIES:
        module = importlib.import_module(f"benchmarks.{entry}")
        commands[entry] = module.__name__
        commands.update({f"{entry} {c}": m for c, (m, _) in getattr(module, "COMMANDS", {}).items()})
    return commands


@functools.lru_cache(maxsize=None)  # one load of every script for all the documents
def script_flags():
    import importlib

    flags = set()
    # A script is a thin wrapper of its gan_accel.cli module: the flags are in the module.
    modules = [
        (ROOT / "gan_accel" / "cli" / f"{name}.py", lambda name=name: importlib.import_module(f"gan_accel.cli.{name}"))
        for name in SCRIPTS
    ]
    modules += [
        (Path(importlib.import_module(name).__file__), lambda name=name: importlib.import_module(name))
        for name in sorted(set(benchmark_commands().values()))
    ]
    for path, load in modules:
        if not path.exists():
            continue
        flags |= set(re.findall(r"--[a-z][a-z0-9_]+", path.read_text()))
        for obj in vars(load()).values():
            fields = getattr(obj, "__dataclass_fields__", None)
            if fields:
                flags |= {f"--{f}" for f in fields}
    from gan_accel.classifier import config as classifier_config
    from gan_accel.classifier.distill import DISTILL_CONFIG_TYPES
    from gan_accel.classifier.tiny import TinyModelArguments
    from gan_accel.config import RunArguments
    from gan_accel.cyclegan.config import CYCLEGAN_CONFIG_TYPES
    from gan_accel.gan.config import GAN_CONFIG_TYPES

    types = [RunArguments, *GAN_CONFIG_TYPES, *DISTILL_CONFIG_TYPES, *CYCLEGAN_CONFIG_TYPES, TinyModelArguments] + [
        t for t in vars(classifier_config).values() if getattr(t, "__dataclass_fields__", None)
    ]
    for t in types:
        flags |= {f"--{f}" for f in t.__dataclass_fields__}
        # HfArgumentParser adds --no_X for a bool field that defaults to True.
        flags |= {f"--no_{n}" for n, f in t.__dataclass_fields__.items() if f.default is True}
        flags |= {a for f in t.__dataclass_fields__.values() for a in f.metadata.get("aliases", [])}  # old spellings
    return frozenset(flags | {"--config"})


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_flag_named_exists(name):
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9_]+", TEXT[name]))
    unknown = sorted(named - script_flags() - LAUNCHER_FLAGS)
    assert not unknown, f"{name} names flags no script has: {unknown}"


@pytest.mark.parametrize("name", DOCUMENTS + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scripts").glob("*.sh")))
def test_every_benchmark_command_named_exists(name):
    """A table's command, copied from the guide, runs: its entry and command exist (benchmarks/ was
    regrouped into one entry per question, and old names like ``benchmarks.bench_panel`` are gone)."""
    known = benchmark_commands()
    text = TEXT[name] if name in TEXT else (ROOT / name).read_text()
    named = re.findall(r"-m\s+benchmarks\.([a-z_]+)(?:\s+([a-z_]+))?", text)
    with_commands = {key.split()[0] for key in known if " " in key}
    wrong = sorted(
        f"{e} {c}".strip() for e, c in set(named) if e not in known or (e in with_commands and f"{e} {c}" not in known)
    )
    assert not wrong, f"{name} names benchmark commands that do not exist: {wrong}"


# `tests/test_x.py::test_y` (or `test_x.py::test_y`), then `::test_z` for another test of the same file.
TEST_REFERENCE = re.compile(r"(?:tests/)?(test_\w+)\.py(?:::(\w+))?|(?<![\w/.])::(test_\w+)")


def named_tests(text):
    """(file stem, test name or None) of every test a document names, in order."""
    out, current = [], None
    for match in TEST_REFERENCE.finditer(text):
        if match.group(1):
            current = match.group(1)
            out.append((current, match.group(2)))
        elif current:
            out.append((current, match.group(3)))
    return out


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_test_named_as_proof_exists(name):
    missing = []
    for stem, test in named_tests(TEXT[name]):
        path = ROOT / "tests" / f"{stem}.py"
        if not path.exists() or (test and not re.search(rf"^\s*(async )?def {test}\(", path.read_text(), re.M)):
            missing.append(f"{stem}.py" + (f"::{test}" if test else ""))
    assert not missing, f"{name} names tests that do not exist: {missing}"


def test_named_tests_reads_the_shorthand():
    text = "`tests/test_a.py::test_one`, `::test_two`, `test_b.py` and `test_c.py::test_three`"
    assert named_tests(text) == [
        ("test_a", "test_one"),
        ("test_a", "test_two"),
        ("test_b", None),
        ("test_c", "test_three"),
    ]
