"""docs/engine.md's example is a file (docs/engine_example.py): run it, and resume it exactly."""

import runpy

import torch
from safetensors.torch import load_file

from benchmarks.common import reset_accelerate
from helpers import GRADIENT_LEAK, ROOT

EXAMPLE = ROOT / "docs" / "engine_example.py"


def run_example(*argv: str) -> int:
    reset_accelerate()
    main = runpy.run_path(str(EXAMPLE))["main"]
    return main(list(argv))


def test_the_documented_example_runs_and_resumes_exactly(tmp_path, capsys):
    flags = ["--log_every", "1", "--checkpointing_steps", "3", "--batch_size", "32"]
    assert run_example("--output_dir", str(tmp_path / "straight"), "--max_steps", "6", *flags) == 0
    assert run_example("--output_dir", str(tmp_path / "split"), "--max_steps", "3", *flags) == 0
    assert (
        run_example(
            "--output_dir", str(tmp_path / "split"), "--max_steps", "6", "--resume_from_checkpoint", "latest", *flags
        )
        == 0
    )
    assert (tmp_path / "split" / "generator.pt").is_file()
    for name in ("model.safetensors", "model_1.safetensors", "model_2.safetensors", "ema.safetensors"):
        a = load_file(str(tmp_path / "straight" / "checkpoints" / "step_00000006" / name))
        b = load_file(str(tmp_path / "split" / "checkpoints" / "step_00000006" / name))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name
    assert GRADIENT_LEAK not in capsys.readouterr().out
