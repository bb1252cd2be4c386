"""A diverging classifier run (``--learning_rate 1e10``) stops with one line, never exports or
checkpoints non-finite weights, and logs its skipped updates; the error starts on its own line,
not on the progress bar's."""

import json

import pytest
import torch
from safetensors.torch import load_file

from classifier_fixtures import (  # noqa: E402
    load_script,
    make_corpus,
    make_tiny,
    read_jsonl,
    reset_accelerate,
    single_thread,
    train_argv,
    train_in_process,
)

one_thread = pytest.fixture(scope="module", autouse=True)(single_thread)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("diverge")
    corpus = make_corpus(folder / "data", n_train=240, n_val=40)
    return folder, corpus, make_tiny(folder / "tiny", corpus["train"])


def run_script(argv, capsys):
    reset_accelerate()
    with pytest.raises(SystemExit) as info:
        load_script("train_classifier").main(argv)
    return info.value.code, capsys.readouterr().err


def test_learning_rate_1e10_stops_with_one_line_and_exports_nothing(setup, capsys):
    folder, corpus, tiny = setup
    out = folder / "lr1e10"
    code, err = run_script(
        train_argv(
            corpus,
            tiny,
            out,
            "--learning_rate",
            "1e10",
            "--checkpointing_steps",
            "0",
            "--max_steps",
            "40",
            "--eval_every",
            "10",
        ),
        capsys,
    )
    assert code == 2
    errors = [line for line in err.splitlines() if "error:" in line]
    # Alone on its line: the progress bar was closed first (it used to end "40/40 [...]error: ...").
    assert len(errors) == 1 and errors[0].startswith("error: ") and err.rstrip().endswith(errors[0])
    assert "consecutive updates had non-finite gradients (--max_nonfinite_steps 10)" in errors[0]
    assert not (out / "model").exists()  # the NaN-loss evaluation at step 10 was not "best"
    assert not (out / "checkpoints").exists() and not (out / "eval_results.json").exists()
    train_rows = [r for r in read_jsonl(out / "metrics.jsonl") if "loss/train" in r]
    assert all("nonfinite/skipped_total" in r for r in train_rows)
    assert train_rows[-1]["nonfinite/skipped_total"] >= 10
    assert train_rows[-1]["step"] < 40  # stopped at a log line, not at the end of the run


def test_a_finished_run_without_a_finite_evaluation_is_an_error(setup, capsys):
    folder, corpus, tiny = setup
    out = folder / "tolerated"
    code, err = run_script(
        train_argv(corpus, tiny, out, "--learning_rate", "1e10", "--max_nonfinite_steps", "1000", "--max_steps", "10"),
        capsys,
    )
    assert code == 2
    assert (
        err.rstrip()
        .splitlines()[-1]
        .startswith(f"error: no evaluation of this run was finite, so no model was exported to {out / 'model'}")
    )
    assert not (out / "model").exists()
    results = (out / "eval_results.json").read_text()
    assert json.loads(results)["final"]["eval/loss"] is None  # JSON null, not NaN
    assert "NaN" not in results and "Infinity" not in results  # the recorded examples' probabilities too


def test_weights_turning_non_finite_are_never_checkpointed(setup, monkeypatch):
    # Fault injection: after update 5 a weight is NaN (what an overflowing update does). The
    # checkpoint due at step 6 must be refused, leaving step 3 as the latest (finite) one.
    import gan_accel.engine.engine as engine_module
    from gan_accel.loop.guard import NonFiniteError

    folder, corpus, tiny = setup
    real_update, updates = engine_module.apply_update, []

    def poisoned_update(acc, optimizer, *args, **kwargs):
        verdict = real_update(acc, optimizer, *args, **kwargs)
        updates.extend([] if verdict is None else ["finite"])
        if len(updates) == 5 and verdict is not None:
            with torch.no_grad():
                optimizer.param_groups[0]["params"][0].view(-1)[0] = float("nan")
        return verdict

    monkeypatch.setattr(engine_module, "apply_update", poisoned_update)
    out = folder / "poisoned"
    with pytest.raises(NonFiniteError, match="weights became non-finite at step 6; no checkpoint was written"):
        train_in_process(train_argv(corpus, tiny, out, "--checkpointing_steps", "3", "--max_steps", "12"))
    assert [p.name for p in (out / "checkpoints").iterdir()] == ["step_00000003"]
    weights = load_file(out / "checkpoints" / "step_00000003" / "model.safetensors")
    assert all(torch.isfinite(w).all() for w in weights.values())


def test_a_streak_of_non_finite_updates_keeps_only_finite_checkpoints(setup, capsys):
    # Checkpoints every 2 updates while the run diverges (the later flag wins over train_argv's 0):
    # the one-line error says a checkpoint is kept, and every checkpoint on disk is finite.
    folder, corpus, tiny = setup
    out = folder / "streak"
    code, err = run_script(
        train_argv(
            corpus,
            tiny,
            out,
            "--learning_rate",
            "1e10",
            "--max_steps",
            "60",
            "--log_every",
            "1",
            "--max_nonfinite_steps",
            "3",
            "--checkpointing_steps",
            "2",
        ),
        capsys,
    )
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: 3 consecutive updates had non-finite gradients") and "checkpoint is kept" in last
    records = read_jsonl(out / "metrics.jsonl")
    assert max(r.get("nonfinite/skipped_total", 0) for r in records) > 0 and records[-1]["step"] < 60
    kept = sorted((out / "checkpoints").glob("step_*"))
    assert kept  # written before the divergence
    for ckpt in kept:
        assert all(torch.isfinite(v.float()).all() for v in load_file(str(ckpt / "model.safetensors")).values())
    assert not (out / "eval_results.json").exists()
