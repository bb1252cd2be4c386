"""The non-finite guard on the classifier path: a diverging run stops with the one-line error,
writes no non-finite checkpoint, keeps the last finite one, and logs the skipped updates."""
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/classifier_fixtures.py (no conftest)
from classifier_fixtures import load_script, make_corpus, make_tiny, read_jsonl, reset_accelerate, single_thread, train_argv  # noqa: E402

one_thread = pytest.fixture(scope="module", autouse=True)(single_thread)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guard")
    corpus = make_corpus(folder / "data")
    return folder, corpus, make_tiny(folder / "tiny", corpus["train"])


@pytest.mark.parametrize("checkpointing_steps", ["0", "2"])
def test_learning_rate_1e10_stops_with_the_divergence_error(setup, capsys, checkpointing_steps):
    folder, corpus, tiny = setup
    out = folder / f"run_{checkpointing_steps}"
    argv = train_argv(corpus, tiny, out, "--learning_rate", "1e10", "--max_steps", "60", "--log_every", "1",
                      "--max_nonfinite_steps", "3")
    argv[argv.index("--checkpointing_steps") + 1] = checkpointing_steps
    reset_accelerate()
    with pytest.raises(SystemExit) as info:
        load_script("train_classifier").main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: 3 consecutive updates had non-finite gradients") and "checkpoint is kept" in err[-1]
    records = read_jsonl(out / "metrics.jsonl")
    assert max(r.get("nonfinite/skipped_total", 0) for r in records) > 0  # logged before the streak stopped the run
    assert records[-1]["step"] < 60
    kept = sorted((out / "checkpoints").glob("step_*")) if (out / "checkpoints").exists() else []
    if checkpointing_steps == "0":
        assert kept == []  # the end was never reached and nothing non-finite was saved
    for ckpt in kept:
        assert all(torch.isfinite(v.float()).all() for v in load_file(str(ckpt / "model.safetensors")).values())
    assert not (out / "eval_results.json").exists()
