"""The independent judge of digits generators (benchmarks/digits_judge.py): it separates real digits
from damaged ones, compares with its floor at the same size on every side, is trained once and
then read from its cache, and scores generators loaded the way a user's run is exported."""

import hashlib
import json
from pathlib import Path

import pytest
import torch

from benchmarks import digits_judge
from benchmarks.digits_judge import JudgeSettings, Scorer, calibration, load_or_train_judge
from gan_accel.data.images import ImageData, load_image_data
from gan_accel.metrics.distance import FeatureDistance
from gan_accel.metrics.domain import DomainFeatures
from gan_accel.models import build_models, save_generator
from helpers import one_line_error

TINY = JudgeSettings(epochs=3, batch_size=16, width=16)


@pytest.fixture(scope="module")
def real():
    """400 of the digits at 32 px: a split of 320 training and 80 held-out images."""
    digits = load_image_data("digits", image_size=32, channels=1)
    return ImageData(digits.images[:400], digits.labels[:400], digits.class_names, name="digits400")


TRAINED_ON = []  # the images each training of the judge was given


@pytest.fixture(scope="module")
def judge(real, tmp_path_factory):
    train = digits_judge.train_judge

    def spy(images, *args):
        TRAINED_ON.append(images)
        return train(images, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(digits_judge, "train_judge", spy)
        return load_or_train_judge(real, tmp_path_factory.mktemp("judge"), TINY)


@pytest.fixture(scope="module")
def scorer(real, judge):
    return Scorer(judge, real)


def test_judge_never_trains_on_the_floors_held_out_digits(real, judge):
    (images,) = TRAINED_ON
    assert torch.equal(images, real.images[judge.train_idx])
    assert not set(judge.train_idx.tolist()) & set(judge.heldout_idx.tolist())
    assert len(judge.train_idx) + len(judge.heldout_idx) == len(real)


def test_calibration_ranks_real_below_blurred_below_shuffled(scorer):
    heldout, copies, blurred, shuffled, round_trip = calibration(scorer)
    assert "blurred" in blurred["run"] and "shuffled" in shuffled["run"] and "16 px" in round_trip["run"]
    assert heldout["x_floor"] == pytest.approx(1.0)  # the floor itself, by construction
    assert heldout["x_floor"] < blurred["x_floor"] < shuffled["x_floor"]
    assert heldout["fid"] < blurred["fid"] < shuffled["fid"]
    assert copies["x_floor"] < blurred["x_floor"]
    # Real digits through a 16 px run's loader and back up to 32 px: the round trip is not free (the
    # interpolations smooth the strokes, about as a blur does) but nowhere near shuffled pixels.
    assert heldout["x_floor"] < round_trip["x_floor"] < shuffled["x_floor"] / 5


def test_x_floor_compares_the_floor_size_on_every_side(scorer):
    n = scorer.num_floor
    assert n == len(scorer.judge.heldout_idx) == 80
    fake = torch.rand(3 * n, 1, 32, 32) * 2 - 1
    row = scorer.score(fake)
    assert (row["num_images"], row["num_floor"]) == (3 * n, n)
    # The same-size figure is the first n images against the n training digits behind the floor,
    # whatever follows them.
    alone = FeatureDistance(DomainFeatures(scorer.judge.model, "check"))
    alone.set_reference([scorer.train[:n]])
    assert row["fid_at_floor_size"] == pytest.approx(alone.score([fake[:n]])["fid"], rel=1e-9)
    assert scorer.score(torch.cat([fake[:n], -fake[n:]]))["fid_at_floor_size"] == row["fid_at_floor_size"]
    assert row["x_floor"] == pytest.approx(row["fid_at_floor_size"] / row["fid_floor"])
    # The mean runs over the three disjoint draws of n; a partial draw (3n + 5 images) is left out.
    draws = [alone.score([fake[i : i + n]])["fid"] / row["fid_floor"] for i in (0, n, 2 * n)]
    assert row["x_floor_draws"] == pytest.approx(draws, rel=1e-9)
    assert row["x_floor_mean"] == pytest.approx(sum(draws) / 3, rel=1e-9)
    assert scorer.score(torch.cat([fake, fake[:5]]))["x_floor_draws"] == pytest.approx(draws, rel=1e-9)
    with pytest.raises(digits_judge.UserError, match="--num_images"):
        scorer.score(fake[: n - 1])


def test_judge_is_trained_once_then_read_from_its_cache(real, judge, monkeypatch):
    assert 0.6 < judge.accuracy <= 1.0  # 60 steps of a tiny judge already tell most digits apart
    assert judge.path.is_file()

    def no_training(*args, **kwargs):
        raise AssertionError("the cached judge should have been loaded")

    monkeypatch.setattr(digits_judge, "train_judge", no_training)
    again = load_or_train_judge(real, judge.path.parent, TINY)
    assert again.path == judge.path and again.accuracy == judge.accuracy
    state = again.model.state_dict()
    assert all(torch.equal(value, state[key]) for key, value in judge.model.state_dict().items())
    assert not again.model.training  # dropout off: features do not depend on the call
    with pytest.raises(AssertionError, match="cached judge"):
        load_or_train_judge(real, judge.path.parent, JudgeSettings(epochs=3, batch_size=16, width=16, seed=2))


def test_a_generator_below_32_px_is_scored_upsampled_as_the_loader_resizes():
    torch.manual_seed(0)
    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=4, d_channels=4, d_norm="none")
    up = digits_judge.Upsampled(G.eval())
    z = torch.randn(5, 8)
    out = up(z)
    assert out.shape == (5, 1, 32, 32) and up.z_dim == 8
    expected = torch.nn.functional.interpolate(G(z), size=(32, 32), mode="bilinear", align_corners=False)
    assert torch.equal(out, expected)
    # The digits at 16 px, upsampled, are the digits at 32 px up to the loader's rounding and the
    # second interpolation: the round trip a perfect 16 px generator makes.
    at16 = load_image_data("digits", image_size=16, channels=1).images[:50]
    at32 = load_image_data("digits", image_size=32, channels=1).images[:50]
    diff = (digits_judge.upsample(at16.float()) - at32.float()).abs()
    assert diff.mean() < 10  # of 255


def _tree(root: Path) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir" for p in root.rglob("*")}


def test_command_scores_exported_generators_of_a_run(tmp_path, capsys):
    torch.manual_seed(0)
    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=32, g_channels=4, d_channels=4, d_norm="none")
    save_generator(G, tmp_path / "run" / "generator")  # no best_generator/: only generator/ is scored
    small, _ = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=4, d_channels=4, d_norm="none")
    save_generator(small, tmp_path / "small")  # a 16 px run: scored upsampled to 32 px
    workdir = tmp_path / "judge"
    argv = ["--run_dirs", str(tmp_path / "run"), "--generator", str(tmp_path / "small")]
    argv += ["--workdir", str(workdir), "--num_images", "359"]
    assert digits_judge.main(argv + ["--judge_epochs", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judge"]["num_floor"] == 359 and report["judge"]["num_heldout"] == 359
    runs = [row["run"] for row in report["rows"]]
    assert runs[-2:] == [str(tmp_path / "small"), str(tmp_path / "run" / "generator")] and len(runs) == 7
    assert all(row["num_floor"] == 359 for row in report["rows"])
    assert [p.suffix for p in workdir.iterdir()] == [".pt"]


def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "empty_run").mkdir()
    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=64, g_channels=4, d_channels=4, d_norm="none")
    save_generator(G, tmp_path / "big")
    before = _tree(tmp_path)
    workdir = ["--workdir", str(tmp_path / "judge")]
    cases = {
        ("--run_dirs", str(tmp_path / "empty_run")): "--run_dirs",
        ("--generator", str(tmp_path / "big")): "big: makes images of shape (1, 64, 64)",
        ("--generator", str(tmp_path / "missing")): "--generator",
        ("--generator", str(tmp_path / "big"), "--num_images", "10"): "--num_images 10",
        ("--generator", str(tmp_path / "big"), "--judge_epochs", "0"): "--judge_epochs 0",
        (): "nothing to score",
    }
    for argv, expected in cases.items():
        line = one_line_error(digits_judge.main, [*argv, *workdir], capsys)
        assert expected in line, line
    assert _tree(tmp_path) == before


def test_help_exits_0_and_lists_the_flags(capsys):
    with pytest.raises(SystemExit) as info:
        digits_judge.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert all(flag in out for flag in ("--generator", "--run_dirs", "--workdir", "--num_images", "--judge_epochs"))
