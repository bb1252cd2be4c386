"""Messages that must say what is true: the closest flag to a typo, a --config that is a folder,
the --image_size the user passed in the upscale warning, and what a diverged run leaves behind."""

import logging
import re

import pytest

from cyclegan_fixtures import TINY_CYCLEGAN, make_domains
from gan_accel.loop.guard import NonFiniteError, NonFiniteGuard
from gan_accel.loop.state import TrainState
from helpers import TINY_GAN, load_script
from helpers import one_line_error as user_error
from test_reliability import gan_step, nan_loss_after

train_gan = load_script("train_gan").main
train_cyclegan = load_script("train_cyclegan").main


def test_a_typo_suggests_the_closest_flag(tmp_path, capsys):
    line = user_error(train_gan, [*TINY_GAN, "--output_dir", str(tmp_path / "run"), "--max_stps", "5"], capsys)
    assert "unknown flag --max_stps (did you mean --max_steps?)" in line
    assert not (tmp_path / "run").exists()


def test_a_config_that_is_a_folder_says_so(tmp_path, capsys):
    line = user_error(train_gan, [*TINY_GAN, "--output_dir", str(tmp_path / "run"), "--config", str(tmp_path)], capsys)
    assert f"--config {tmp_path}: is a folder" in line and "not found" not in line


def test_the_upscale_warning_quotes_the_image_size_passed(tmp_path, caplog):
    data = make_domains(tmp_path / "data", num_a=4, num_b=4)  # 20 px images, decoded at 22 (20 x 286/256)
    with caplog.at_level(logging.WARNING):
        argv = [
            *TINY_CYCLEGAN,
            "--image_size",
            "20",
            "--load_size",
            "0",
            "--dataset",
            "folder",
            "--data_dir",
            str(data),
            "--max_steps",
            "1",
            "--output_dir",
            str(tmp_path / "run"),
        ]
        assert train_cyclegan(argv) == 0
    assert "smaller than the 22 px load size (--image_size 20 x 286/256; --load_size sets it)" in caplog.text
    assert "--image_size 22" not in caplog.text


def test_a_diverged_run_without_a_checkpoint_does_not_claim_one(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(gan_step.D_LOSSES, "nonsaturating", nan_loss_after(0))
    with pytest.raises(SystemExit):
        train_gan(
            [
                *TINY_GAN,
                "--output_dir",
                str(tmp_path / "run"),
                "--max_steps",
                "20",
                "--checkpointing_steps",
                "0",
                "--max_nonfinite_steps",
                "2",
            ]
        )
    line = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress bar
    assert "the run stopped before any checkpoint was written" in line and "checkpoint is kept" not in line


def test_the_guard_names_the_checkpoint_it_keeps(tmp_path):
    kept = tmp_path / "checkpoints" / "step_00000006"
    guard = NonFiniteGuard(TrainState(), 1, latest_checkpoint=lambda: kept)
    with pytest.raises(NonFiniteError, match=re.escape(f"the last finite checkpoint is kept ({kept})")):
        guard.record(False)


def test_non_finite_weights_before_any_checkpoint_do_not_claim_one(tmp_path):
    import torch

    from test_gan_train import trainer

    t = trainer(tmp_path / "run", 2)
    with torch.no_grad():
        next(t.engine.nets.G.parameters()).view(-1)[0] = float("inf")
    with pytest.raises(NonFiniteError, match="before any checkpoint was written") as info:
        t.engine.save_checkpoint()
    assert "is kept" not in str(info.value)
