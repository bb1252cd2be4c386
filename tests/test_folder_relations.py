"""One rule for what a command reads and what it writes (gan_accel.data.paths.check_folders), in
both directions: a write target inside an input, an input inside a folder a write replaces, and a
write target inside a folder another run replaces. Each refusal is one line naming both flags,
made before anything is read or written."""

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gan_accel.data.paths import check_folders, owning_run
from gan_accel.errors import UserError
from helpers import TINY_GAN, load_script, write_png
from run_fixtures import snapshot, user_error

train_gan = load_script("train_gan").main
sample_gan = load_script("sample_gan").main
evaluate_gan = load_script("evaluate_gan").main


def images(folder: Path, count: int = 4) -> Path:
    for i in range(count):
        write_png(folder / f"{i:03d}.png", np.full((16, 16), 40 * i, dtype=np.uint8), mode="L")
    return folder


def tiny_export(folder: Path) -> Path:
    from gan_accel.models import build_models, save_generator

    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=8, d_channels=8, d_norm="none")
    save_generator(G, folder)
    return folder


def fake_run(folder: Path) -> Path:
    """What marks a folder as a training run's: config.json with metrics or checkpoints."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text("{}\n")
    (folder / "metrics.jsonl").write_text("")
    return folder


# (reads, writes, replaces) relative to the test folder -> the words of the refusal (None: allowed)
CASES = {
    "output is the data": ({"--data_dir": "data"}, {"--output_dir": "data"}, {}, "is the same as --data_dir"),
    "output inside the data": ({"--data_dir": "data"}, {"--output_dir": "data/run1"}, {}, "is inside --data_dir"),
    "output via ..": ({"--data_dir": "data"}, {"--output_dir": "other/../data"}, {}, "is the same as --data_dir"),
    "output beside the data": ({"--data_dir": "data"}, {"--output_dir": "data-run"}, {}, None),
    "data inside what the run replaces": (
        {"--data_dir": "proj/samples"},
        {"--output_dir": "proj"},
        {"--output_dir": ["proj/samples", "proj/generator"]},
        "--data_dir proj/samples: is the same as proj/samples, which --output_dir proj writes into or replaces",
    ),
    "data deep inside what the run replaces": (
        {"--data_dir": "proj/generator/x"},
        {"--output_dir": "proj"},
        {"--output_dir": ["proj/samples", "proj/generator"]},
        "is inside proj/generator, which --output_dir proj",
    ),
    "data beside what the run replaces": (
        {"--data_dir": "proj/photos"},
        {"--output_dir": "proj"},
        {"--output_dir": ["proj/samples", "proj/generator"]},
        None,
    ),
    "missing flags are skipped": ({"--data_dir": None}, {"--output_dir": None}, {}, None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_check_folders(tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    reads, writes, replaces, words = CASES[case]
    if words is None:
        check_folders(reads, writes, replaces)
        return
    with pytest.raises(UserError) as info:
        check_folders(reads, writes, replaces)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_symlinks_are_resolved(tmp_path):
    images(tmp_path / "data")
    os.symlink(tmp_path / "data", tmp_path / "link")
    with pytest.raises(UserError, match="is inside --data_dir"):
        check_folders({"--data_dir": str(tmp_path / "data")}, {"--output_dir": str(tmp_path / "link" / "run")})


SEGMENTS = st.lists(st.sampled_from(["a", "b", "link", "..", "."]), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(read=SEGMENTS, write=SEGMENTS)
def test_refused_exactly_when_the_target_resolves_into_the_input(tmp_path_factory, read, write):
    """Generated paths through a symlink (link -> a) and '..': the check refuses exactly when
    os.path.realpath puts the write target at or under the input."""
    root = tmp_path_factory.getbasetemp() / "relations"
    if not root.exists():
        (root / "a" / "b").mkdir(parents=True)
        (root / "b").mkdir()
        os.symlink(root / "a", root / "link")
    source = os.path.join(root, *read)
    target = os.path.join(root, *write)
    real_source, real_target = os.path.realpath(source), os.path.realpath(target)
    inside = os.path.commonpath([real_source, real_target]) == real_source
    try:
        check_folders({"--data_dir": source}, {"--output_dir": target})
        refused = False
    except UserError as err:
        refused = True
        assert "\n" not in str(err) and "--data_dir" in str(err) and "--output_dir" in str(err)
    assert refused == inside, (source, target)


def test_what_another_run_replaces_is_refused_and_the_rest_of_its_folder_is_not(tmp_path):
    run = fake_run(tmp_path / "R")
    assert owning_run(run / "samples" / "x") == (run.resolve(), "samples")
    assert owning_run(run / "png") is None  # the README's place for the user's own files
    assert owning_run(run) is None  # the run folder itself (a resume)
    assert owning_run(tmp_path / "generator") is None  # not in a run folder: an export of its own
    with pytest.raises(UserError, match=r"--output_dir .*R/generator: inside .*R/generator, which the run in"):
        check_folders({}, {"--output_dir": str(run / "generator")})
    check_folders({}, {"--output_dir": str(run / "png")})


def test_training_on_a_folder_the_run_writes_is_refused(tmp_path, capsys):
    """The tester's lost data: --data_dir proj/samples --output_dir proj --overwrite_output_dir on a
    folder holding an earlier run deleted the 40 images (only 'output inside data' was checked)."""
    proj = fake_run(tmp_path / "proj")
    images(proj / "samples" / "a")
    images(proj / "samples" / "b")
    before = snapshot(tmp_path)
    argv = [*TINY_GAN, "--dataset", "folder", "--data_dir", str(proj / "samples")]
    line = user_error(train_gan, [*argv, "--output_dir", str(proj), "--overwrite_output_dir"], capsys)
    assert f"--data_dir {proj / 'samples'}: is the same as {proj / 'samples'}, which --output_dir {proj}" in line
    assert snapshot(tmp_path) == before


def test_training_into_another_runs_export_is_refused(tmp_path, capsys):
    run = fake_run(tmp_path / "R")
    line = user_error(train_gan, [*TINY_GAN, "--output_dir", str(run / "generator")], capsys)
    assert "which the run in" in line and not (run / "generator").exists()


@pytest.mark.parametrize("where", ["generator", "samples"])
def test_sampling_into_a_runs_export_is_refused(tmp_path, capsys, where):
    """sample-gan --generator R/generator --output_dir R/generator: the next export of R swapped the
    folder and the PNGs, seeds.json and the grid were gone (R/samples: --overwrite_output_dir)."""
    run = fake_run(tmp_path / "R")
    tiny_export(run / "generator")
    before = snapshot(tmp_path)
    argv = ["--generator", str(run / "generator"), "--num_images", "2", "--output_dir", str(run / where)]
    line = user_error(sample_gan, argv, capsys)
    assert "--output_dir" in line and ("--generator" in line or "which the run in" in line), line
    assert snapshot(tmp_path) == before


def test_sampling_grid_inside_the_generator_is_refused(tmp_path, capsys):
    gen = tiny_export(tmp_path / "gen")
    argv = ["--generator", str(gen), "--num_images", "2", "--output_dir", str(tmp_path / "out")]
    line = user_error(sample_gan, [*argv, "--grid", str(gen / "grid.png")], capsys)
    assert f"--grid {gen / 'grid.png'}: is inside --generator {gen}" in line
    assert not (tmp_path / "out").exists()


def test_evaluating_into_the_data_folder_is_refused(tmp_path, capsys):
    data = images(tmp_path / "data" / "a")
    gen = tiny_export(tmp_path / "gen")
    before = snapshot(tmp_path)
    argv = ["--generator", str(gen), "--dataset", "folder", "--data_dir", str(data.parent)]
    line = user_error(evaluate_gan, [*argv, "--output_dir", str(data / "eval")], capsys)
    assert "is inside --data_dir" in line  # nearest.png would become a training image
    assert snapshot(tmp_path) == before


def test_what_a_run_reads_is_declared_on_its_config_fields(tmp_path):
    """Fields with metadata 'reads'; a torchvision root (--dataset mnist --data_dir) is a download
    cache, not data a run folder must keep out of, and a Hub model name is no local path."""
    from gan_accel.classifier.config import ClassifierDataArguments, ClassifierModelArguments
    from gan_accel.classifier.train import ClassifierTrainer
    from gan_accel.config import RunArguments
    from gan_accel.gan.config import GANDataArguments
    from gan_accel.gan.trainer import GANTrainer

    data = images(tmp_path / "data" / "a").parent
    run = RunArguments(output_dir=str(tmp_path / "run"))
    folder = GANTrainer(GANDataArguments(dataset="folder", data_dir=str(data)), run, start=False)
    assert folder.read_paths() == {"--data_dir": str(data)}
    mnist = GANTrainer(GANDataArguments(dataset="mnist", data_dir=str(data)), run, start=False)
    assert mnist.read_paths() == {}
    (tmp_path / "train.csv").write_text("text,label\na,x\n")
    (tmp_path / "dev.csv").write_text("text,label\nb,x\n")
    texts = ClassifierDataArguments(train_file=str(tmp_path / "train.csv"), validation_file=str(tmp_path / "dev.csv"))
    classifier = ClassifierTrainer(texts, ClassifierModelArguments(model_name_or_path="org/model"), run, start=False)
    assert classifier.read_paths() == {
        "--train_file": str(tmp_path / "train.csv"),
        "--validation_file": str(tmp_path / "dev.csv"),
    }
