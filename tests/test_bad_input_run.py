"""Bad input to the shared run machinery (flags, config files, run folders, checkpoints): each
case exits with code 2 and one `error:` line, and leaves every file already on disk untouched
(sizes, mtimes and contents compared) and no new run folder behind."""

import json
import os
from pathlib import Path

import pytest

from gan_accel.loop import lock as lock_module
from helpers import TINY_GAN
from run_fixtures import LockHolder, copy_run, run_gan, snapshot, train_gan, user_error


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("base") / "run"
    assert run_gan(out) == 0
    return out


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def write_yaml(run: Path, text: str) -> Path:
    path = run.parent / "c.yaml"
    path.write_text(text)
    return path


def fake_classifier_checkpoint(run: Path) -> None:
    ckpt = run.parent / "clf_ckpt"
    ckpt.mkdir()
    config = {"model_name_or_path": "distilbert-base-cased", "learning_rate": 2e-5, "train_file": "t.csv"}
    (ckpt / "trainer_state.json").write_text(json.dumps({"config": config, "state": {"step": 3}}))


# name -> (set-up on a copy of a finished run returning extra argv, expected text in the error).
# "{run}" and "{pid}" in the expected text are filled in per case.
CASES = {
    "nan lr flag": (
        lambda run: ["--output_dir", str(run.parent / "new"), "--lr_d", "nan"],
        "--lr_d must be a finite number",
    ),
    "inf lr flag": (
        lambda run: ["--output_dir", str(run.parent / "new"), "--lr_g", "inf"],
        "--lr_g must be a finite number",
    ),
    "nan lr in yaml": (
        lambda run: ["--output_dir", str(run.parent / "new"), "--config", str(write_yaml(run, "lr_g: .nan\n"))],
        "lr_g must be a finite number",
    ),
    "nan beta in yaml": (
        lambda run: ["--output_dir", str(run.parent / "new"), "--config", str(write_yaml(run, "ema_decay: .nan\n"))],
        "ema_decay must be a finite number",
    ),
    "float max_steps in yaml": (
        lambda run: ["--output_dir", str(run.parent / "new"), "--config", str(write_yaml(run, "max_steps: 2.7\n"))],
        "c.yaml: max_steps must be an integer; got 2.7",
    ),
    "str max_steps in yaml": (
        lambda run: ["--output_dir", str(run.parent / "new"), "--config", str(write_yaml(run, "max_steps: ten\n"))],
        "c.yaml: max_steps must be an integer; got 'ten'",
    ),
    "str flag in yaml": (
        lambda run: ["--output_dir", str(run.parent / "new"), "--config", str(write_yaml(run, "conditional: 3\n"))],
        "c.yaml: conditional must be true or false",
    ),
    "truncated safetensors": (
        lambda run: (
            truncate(run / "checkpoints/step_00000004/model_1.safetensors"),
            ["--output_dir", str(run), "--resume_from_checkpoint", "latest", "--max_steps", "6"],
        )[1],
        "model_1.safetensors is damaged",
    ),
    "truncated optimizer": (
        lambda run: (
            truncate(run / "checkpoints/step_00000004/optimizer.bin"),
            ["--output_dir", str(run), "--resume_from_checkpoint", "latest", "--max_steps", "6"],
        )[1],
        "--resume_from_checkpoint {run}/checkpoints/step_00000002",
    ),
    "refused setting on resume": (
        lambda run: ["--output_dir", str(run), "--resume_from_checkpoint", "latest", "--batch_size", "16"],
        "trained with different settings (--batch_size 32 -> 16)",
    ),
    "resume into a new folder from a refused checkpoint": (
        lambda run: [
            "--output_dir",
            str(run.parent / "new"),
            "--resume_from_checkpoint",
            str(run / "checkpoints/step_00000004"),
            "--seed",
            "3",
        ],
        "different settings (--seed 0 -> 3)",
    ),
    "classifier checkpoint on the GAN path": (
        lambda run: (
            fake_classifier_checkpoint(run),
            ["--output_dir", str(run.parent / "new"), "--resume_from_checkpoint", str(run.parent / "clf_ckpt")],
        )[1],
        "not a gan checkpoint (it has settings learning_rate, model_name_or_path",
    ),
    "run folder in use": (
        lambda run: ["--output_dir", str(run), "--resume_from_checkpoint", "latest", "--max_steps", "6"],
        "in use by another run (host ",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_run_input_changes_nothing(base_run, tmp_path, capsys, case):
    setup, expected = CASES[case]
    run = copy_run(base_run, tmp_path / "run")
    argv = setup(run)
    holder = LockHolder(run) if case == "run folder in use" else None
    before, parent_before = snapshot(run), sorted(p.name for p in tmp_path.iterdir())
    try:
        line = user_error(train_gan, [*TINY_GAN, *argv], capsys)
    finally:
        if holder is not None:
            holder.kill()
    assert expected.format(run=run) in line, line
    if holder is not None:
        assert f"pid {holder.pid}" in line
    assert snapshot(run) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == parent_before  # no new run folder either


def test_read_only_output_folder(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    if os.geteuid() == 0:
        # root writes through chmod: simulate the kernel's answer where the run creates its first file.
        real_open = os.open

        def refusing_open(path, *args, **kwargs):
            if str(path).startswith(str(folder)):
                raise PermissionError(13, "Permission denied")
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(lock_module.os, "open", refusing_open)
    else:
        folder.chmod(0o555)
    before = snapshot(folder)
    try:
        line = user_error(train_gan, [*TINY_GAN, "--output_dir", str(folder), "--max_steps", "2"], capsys)
    finally:
        folder.chmod(0o755)
    assert f"--output_dir {folder}: cannot write there (Permission denied)" in line
    assert snapshot(folder) == before


# ---- the classifier path: the same checks, through the same TrainingRun ----------------------
@pytest.fixture(scope="module")
def classifier_run(tmp_path_factory):
    from classifier_fixtures import make_corpus, make_tiny, train_argv, train_in_process

    root = tmp_path_factory.mktemp("clf")
    corpus = make_corpus(root / "corpus", n_train=64, n_val=16)
    tiny = make_tiny(root / "tiny", corpus["train"])
    out = root / "run"

    def argv(out, *extra):
        return train_argv(
            corpus, tiny, out, "--max_steps", "4", "--checkpointing_steps", "2", "--log_every", "1", *extra
        )  # noqa: E731

    train_in_process(argv(out))
    return out, argv


def train_classifier_main(argv):
    from classifier_fixtures import load_script

    return load_script("train_classifier").main(argv)


@pytest.mark.parametrize("case", ["truncated model", "gan checkpoint"])
def test_bad_classifier_resume_changes_nothing(classifier_run, base_run, tmp_path, capsys, case):
    base, argv = classifier_run
    run = copy_run(base, tmp_path / "run")
    if case == "truncated model":
        truncate(run / "checkpoints/step_00000004/model.safetensors")
        extra, expected = ["--resume_from_checkpoint", "latest"], "model.safetensors is damaged"
    else:
        extra = ["--resume_from_checkpoint", str(base_run / "checkpoints/step_00000004")]
        expected = "this is a gan checkpoint, not a classifier one"
    before = snapshot(run)
    line = user_error(train_classifier_main, argv(run, "--max_steps", "6", *extra), capsys)
    assert expected in line and snapshot(run) == before


def test_classifier_learning_rate_may_change_on_resume(classifier_run, tmp_path, capsys):
    from classifier_fixtures import train_in_process
    from helpers import read_jsonl

    base, argv = classifier_run
    run = copy_run(base, tmp_path / "run")
    # --learning_rate 1e-3 in the base run, linear decay with warm-up over 4 updates
    before = {r["step"]: r["lr/model"] for r in read_jsonl(run / "metrics.jsonl") if "lr/model" in r}
    train_in_process(
        argv(run, "--resume_from_checkpoint", str(run / "checkpoints/step_00000002"), "--learning_rate", "5e-4")
    )
    assert "resuming with changed settings (--learning_rate 0.001 -> 0.0005)" in capsys.readouterr().out
    after = {r["step"]: r["lr/model"] for r in read_jsonl(run / "metrics.jsonl") if "lr/model" in r}
    # the same schedule, from half the peak: the rate at step 3 halves (step 4 is the end of the decay: 0)
    assert before[3] > 0 and after[3] == pytest.approx(before[3] / 2, rel=1e-6)
