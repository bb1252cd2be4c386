"""benchmarks/speed/loops.py with tiny settings: the JSON has its keys, and the toolkit's GAN loop ends with
exactly the weights of the plain PyTorch loop (a real check of the comparison, not a timing)."""

import json
import os

import pytest
import torch

from benchmarks.contenders.gan import GANBenchSetup, PlainContender, ToolkitContender, load_digits, max_abs_diff
from benchmarks.speed.loops import main as bench
from gan_accel.data import load_image_data


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    # The benchmark sets the thread count (and OMP/MKL variables) for its contenders: undo both.
    previous = torch.get_num_threads()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, os.environ.get(var, str(previous)))
    yield
    torch.set_num_threads(previous)


TINY = GANBenchSetup(
    image_size=16, batch_size=32, z_dim=8, g_channels=8, d_channels=8, rounds=1, chunk=2, warmup=1, log_every=2
)


def test_bench_script_writes_every_key(tmp_path):
    out = tmp_path / "bench.json"
    assert (
        bench(
            [
                "--output_json",
                str(out),
                "--work_dir",
                str(tmp_path / "work"),
                "--gan_image_size",
                "16",
                "--gan_channels",
                "8",
                "--gan_batch_size",
                "32",
                "--gan_rounds",
                "2",
                "--gan_chunk",
                "1",
                "--gan_warmup",
                "1",
                "--gan_variants",
                "channels_last",
                "--infogan_rounds",
                "2",
                "--infogan_chunk",
                "1",
                "--infogan_warmup",
                "1",
                "--classifier_reps",
                "1",
                "--classifier_epochs",
                "1",
                "--classifier_n_train",
                "64",
                "--classifier_corpora",
                "synthetic",
                "--sample_images",
                "16",
                "--sample_reps",
                "1",
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    gan, clf, smp = result["gan"], result["classifier"]["synthetic"], result["sampling"]
    assert gan["weights_max_abs_diff"] == 0.0 and gan["steps_compared"] == 3
    for key in ("plain", "toolkit", "toolkit_channels_last"):
        assert len(gan["images_per_s"][key]["values"]) == 2 and gan["images_per_s"][key]["median"] > 0
    assert gan["ratio_vs_plain"]["median"] > 0 and set(gan["variant_ratio_vs_toolkit"]) == {"channels_last"}
    infogan = result["infogan"]
    assert infogan["weights_max_abs_diff"] == 0.0 and infogan["steps_compared"] == 3
    assert infogan["ratio_vs_plain"]["median"] > 0 and len(infogan["images_per_s"]["plain"]["values"]) == 2

    roof = gan["roofline"]
    assert roof["flops_per_update"] > 0 and set(roof["achieved_flops_per_s"]) == set(gan["images_per_s"])
    assert clf["ratio_vs_trainer"]["median"] > 0 and clf["ratio_vs_trainer_grouped"]["median"] > 0
    assert clf["updates"] == {"toolkit": 4, "trainer": 4, "trainer_grouped": 4}
    assert set(clf["accuracy"]) == {"toolkit", "trainer", "trainer_grouped"} and clf["optimizer"]["trainer"] == "AdamW"
    assert all(0 <= f < 1 for f in clf["padding_fraction"].values())
    assert smp["images_per_s"]["median"] > 0 and smp["image_shape"] == [1, 16, 16]
    assert result["machine"]["threads"] == 1 and result["command"].startswith("python -m benchmarks.speed loops ")


@pytest.mark.parametrize("channels_last", [False, True])
def test_toolkit_loop_matches_plain_loop_weights(tmp_path, channels_last):
    """Chunked like the benchmark (the loop re-entered after each chunk): same init, data order,
    noise, Adam and EMA give bit-identical G, D and EMA weights."""
    data = load_digits(TINY)
    toolkit = ToolkitContender(TINY, tmp_path / "run", channels_last=channels_last)
    plain = PlainContender(TINY, data.images, "cpu", channels_last=channels_last)
    for n in (1, 2, 3):  # 6 updates: crosses no epoch, re-enters the loop twice
        toolkit.advance(n)
        plain.advance(n)
    assert toolkit.trainer.run.state.step == plain.plain.step == 6
    assert max_abs_diff(toolkit.weights(), plain.weights()) == 0.0
    toolkit.close()


def test_plain_loop_crosses_epochs_like_the_sampler(tmp_path):
    """Batches of 32 over 1797 images: 56 per epoch; 58 updates cross into epoch 1."""
    setup = GANBenchSetup(image_size=16, batch_size=32, z_dim=4, g_channels=4, d_channels=4, log_every=100)
    data = load_digits(setup)
    toolkit = ToolkitContender(setup, tmp_path / "run")
    plain = PlainContender(setup, data.images, "cpu")
    toolkit.advance(58)
    plain.advance(58)
    assert toolkit.trainer.run.state.epoch == plain.plain.epoch == 1
    assert max_abs_diff(toolkit.weights(), plain.weights()) == 0.0
    toolkit.close()


def test_infogan_task_matches_the_hand_written_accelerate_loop(tmp_path):
    """docs/infogan_example.py on the runner, chunked like the benchmark, against the same model by
    hand: bit-identical G, Q and D after 60 updates of 32 (56 per epoch: into epoch 1)."""
    from benchmarks.contenders.infogan import InfoGANBenchSetup, PlainInfoGAN, ToolkitInfoGAN

    setup = InfoGANBenchSetup(batch_size=32)
    toolkit = ToolkitInfoGAN(setup, tmp_path / "run")
    plain = PlainInfoGAN(setup, load_image_data("digits", image_size=16, channels=1).images)
    for n in (1, 2, 57):
        toolkit.advance(n)
        plain.advance(n)
    assert toolkit.task.run.state.step == plain.step == 60 and plain.batches.epoch == 1
    assert max_abs_diff(toolkit.weights(), plain.weights()) == 0.0
    toolkit.close()


def test_bad_flags_are_one_line_errors(capsys):
    with pytest.raises(SystemExit):
        bench(["--only", "gan,nope"])
    assert "--only must be one of" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench(["--classifier_corpora", "synthetic,imdb"])
    assert "--classifier_corpora must be one of" in capsys.readouterr().err
