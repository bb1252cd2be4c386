"""The README cannot rot: its runnable blocks run, its code excerpts exist verbatim in the
project, and every flag it names is a real flag of a script (or of the launchers it shows).

Markers (HTML comments, invisible on GitHub) placed on the line before a fenced block:
  <!-- runnable -->            run this bash/python block (small settings) in a scratch folder
  <!-- runnable: continues --> a python block that continues the previous runnable python block
  <!-- excerpt: PATH -->       this block is copied verbatim from PATH
"""
import os
import re
import subprocess
import sys
import textwrap

import pytest

from helpers import ROOT, load_script

README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"<!-- (runnable(?:: continues)?|excerpt: [^>]+?) -->\n```(\w+)\n(.*?)\n```", re.S)


def blocks(kind):
    return [(m.group(2), m.group(3), m.group(1)) for m in BLOCK.finditer(README) if m.group(1).startswith(kind)]


def runnable():
    out, previous_python = [], ""
    for lang, code, marker in blocks("runnable"):
        if lang == "python":
            code = (previous_python + "\n" + code) if marker.endswith("continues") else code
            previous_python = code
        out.append(pytest.param(lang, code, id=f"{lang}-{len(out)}"))
    return out


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A scratch folder that looks like the project root (scripts/, configs/), with its own runs/."""
    folder = tmp_path_factory.mktemp("readme")
    for name in ("scripts", "configs", "samples"):
        (folder / name).symlink_to(ROOT / name)
    return folder


def test_readme_has_runnable_blocks_and_excerpts():
    assert len(blocks("runnable")) >= 6 and len(blocks("excerpt")) >= 2


@pytest.mark.parametrize("lang,code", runnable())
def test_runnable_block(scratch, lang, code):
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
           "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    cmd = ["bash", "-euo", "pipefail", "-c", code] if lang == "bash" else [sys.executable, "-c", code]
    proc = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"README block failed:\n{code}\n--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("path,code", [(m.split(": ", 1)[1], c) for _, c, m in blocks("excerpt")])
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
        assert found, f"README excerpt not found verbatim in {path}:\n" + "\n".join(chunk)
    assert lines


LAUNCHER_FLAGS = {"--nproc_per_node", "--nnodes", "--node_rank", "--master_addr", "--master_port", "--standalone",
                  "--multi_gpu", "--num_processes", "--num_machines", "--machine_rank", "--main_process_ip",
                  "--main_process_port", "--mixed_precision", "--cpu", "--config_file", "--help", "--durations"}


def script_flags():
    flags = set()
    for name in ("train_gan", "sample_gan", "evaluate_gan", "train_classifier", "predict", "make_tiny_model", "bench",
                 "bench_knobs", "distill_classifier", "bench_distill", "train_cyclegan", "translate"):
        if not (ROOT / "scripts" / f"{name}.py").exists():
            continue
        source = (ROOT / "scripts" / f"{name}.py").read_text()
        flags |= set(re.findall(r"--[a-z][a-z0-9_]+", source))
        module = load_script(name)
        for obj in vars(module).values():
            fields = getattr(obj, "__dataclass_fields__", None)
            if fields:
                flags |= {f"--{f}" for f in fields}
    from gan_accel.config import RunArguments
    from gan_accel.gan.config import GAN_CONFIG_TYPES
    from gan_accel.classifier import config as classifier_config
    from gan_accel.classifier.distill import DISTILL_CONFIG_TYPES
    from gan_accel.classifier.tiny import TinyModelArguments
    from gan_accel.cyclegan.config import CYCLEGAN_CONFIG_TYPES

    types = [RunArguments, *GAN_CONFIG_TYPES, *DISTILL_CONFIG_TYPES, *CYCLEGAN_CONFIG_TYPES, TinyModelArguments] + [
        t for t in vars(classifier_config).values() if getattr(t, "__dataclass_fields__", None)]
    for t in types:
        flags |= {f"--{f}" for f in t.__dataclass_fields__}
        # HfArgumentParser adds --no_X for a bool field that defaults to True.
        flags |= {f"--no_{n}" for n, f in t.__dataclass_fields__.items() if f.default is True}
        flags |= {a for f in t.__dataclass_fields__.values() for a in f.metadata.get("aliases", [])}  # old spellings
    return flags | {"--config"}


def test_every_flag_in_the_readme_exists():
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9_]+", README))
    unknown = sorted(named - script_flags() - LAUNCHER_FLAGS)
    assert not unknown, f"README names flags no script has: {unknown}"
