"""Resume on changed data (issue 21 item 3), as a table: a class renamed, an image added, removed
or rewritten, a classifier's training file edited, and a run folder inside the data folder are
each refused with exit code 2 and one ``error:`` line naming what changed, and leave the run
folder and the data exactly as they were (names, bytes, modification times). With
``--allow_data_change`` the resume goes on with a warning; a checkpoint from before fingerprints
resumes with a note."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from cyclegan_fixtures import TINY_CYCLEGAN, make_domains  # noqa: E402
from helpers import TINY_GAN, load_script, repaint_keeping_size_and_mtime, write_png  # noqa: E402
from run_fixtures import snapshot, user_error  # noqa: E402

train_gan = load_script("train_gan").main
train_cyclegan = load_script("train_cyclegan").main
FINGERPRINT = "data_fingerprint.json"


def make_classes(root: Path) -> Path:
    """DATA/a and DATA/b: 8 grey 16x16 images each."""
    rng = np.random.default_rng(0)
    for name, base in (("a", 60), ("b", 190)):
        for i in range(8):
            write_png(
                root / name / f"{i:03d}.png",
                np.clip(rng.normal(base, 20, (16, 16)), 0, 255).astype(np.uint8),
                mode="L",
            )
    return root


def gan_argv(data: Path, out: Path, *extra: str) -> list:
    return [
        *TINY_GAN,
        "--dataset",
        "folder",
        "--data_dir",
        str(data),
        "--conditional",
        "--batch_size",
        "8",
        "--output_dir",
        str(out),
        "--max_steps",
        "2",
        "--checkpointing_steps",
        "2",
        *extra,
    ]


def resume(*extra: str) -> list:
    return ["--max_steps", "3", "--resume_from_checkpoint", "latest", *extra]


def rename_class(data: Path) -> None:
    (data / "b").rename(data / "c")


def add_image(data: Path) -> None:
    write_png(data / "a" / "new.png", np.full((16, 16), 80, dtype=np.uint8), mode="L")


def remove_image(data: Path) -> None:
    (data / "a" / "003.png").unlink()


def rewrite_image(data: Path) -> None:
    write_png(data / "b" / "001.png", np.full((16, 16), 7, dtype=np.uint8), mode="L")


# name -> (change to the data, text the error line must contain)
GAN_CASES = {
    "class renamed": (
        rename_class,
        "data_dir: class 'b' removed, class 'c' added (class ids shift); 8 images added: "
        "c/000.png, c/001.png, c/002.png, ...; 8 images removed: b/000.png",
    ),
    "image added": (add_image, "the data changed since this checkpoint (data_dir: 1 image added: a/new.png)"),
    "image removed": (remove_image, "(data_dir: 1 image removed: a/003.png)"),
    "image rewritten": (rewrite_image, "(data_dir: 1 image changed (other content): b/001.png)"),
    # What cp -p / rsync -a / tar x of other images with the same sizes and dates leaves.
    "pixels changed, size and mtime kept": (
        lambda data: repaint_keeping_size_and_mtime(data / "a" / "002.png"),
        "(data_dir: 1 image changed (other content): a/002.png)",
    ),
}


@pytest.fixture
def gan_run(tmp_path):
    data, out = make_classes(tmp_path / "data"), tmp_path / "run"
    assert train_gan(gan_argv(data, out)) == 0
    assert (out / "checkpoints" / "step_00000002" / FINGERPRINT).is_file()
    return data, out


@pytest.mark.parametrize("case", sorted(GAN_CASES))
def test_gan_resume_on_changed_data_is_refused(gan_run, tmp_path, capsys, case):
    change, expected = GAN_CASES[case]
    data, out = gan_run
    change(data)
    before = snapshot(tmp_path)
    line = user_error(train_gan, gan_argv(data, out, *resume()), capsys)
    assert f"--resume_from_checkpoint {out}/checkpoints/step_00000002: " in line and expected in line, line
    assert "pass --allow_data_change" in line
    assert snapshot(tmp_path) == before


def test_gan_resume_on_the_same_data_then_allowed_change_then_old_checkpoint(gan_run, capsys):
    data, out = gan_run
    assert train_gan(gan_argv(data, out, *resume())) == 0
    printed = capsys.readouterr().out
    assert "Resumed from" in printed and "fingerprint" not in printed and "changed data" not in printed
    add_image(data)
    assert train_gan(gan_argv(data, out, "--allow_data_change", *resume("--max_steps", "4"))) == 0
    assert "warning: --allow_data_change: resuming" in capsys.readouterr().out
    saved = json.loads((out / "checkpoints" / "step_00000004" / FINGERPRINT).read_text())
    assert "a/new.png" in saved["data_dir"]["files"]  # the new data is what later resumes compare with
    for folder in (out / "checkpoints").iterdir():  # as written before fingerprints were recorded
        (folder / FINGERPRINT).unlink()
    remove_image(data)
    assert train_gan(gan_argv(data, out, *resume("--max_steps", "5"))) == 0
    printed = capsys.readouterr().out
    assert "records no data fingerprint (written by an older version): the data is not checked" in printed


@pytest.mark.parametrize(
    "script,argv",
    [
        ("gan", lambda data: gan_argv(data, data / "run1")),
        ("gan, the data folder itself", lambda data: gan_argv(data, data)),
        (
            "cyclegan",
            lambda data: [
                *TINY_CYCLEGAN,
                "--dataset",
                "folder",
                "--data_dir",
                str(data),
                "--output_dir",
                str(data / "trainA" / "out"),
            ],
        ),
    ],
)
def test_run_folder_inside_the_data_folder_is_refused_up_front(tmp_path, capsys, script, argv):
    data = make_domains(make_classes(tmp_path / "data"))
    main = train_cyclegan if script == "cyclegan" else train_gan
    before = snapshot(tmp_path)
    line = user_error(main, argv(data), capsys)
    assert re.search("is (inside|the same as) --data_dir", line) and "choose an --output_dir outside it" in line, line
    assert snapshot(tmp_path) == before


def test_cyclegan_resume_with_an_image_added_to_a_domain_is_refused(tmp_path, capsys):
    data, out = make_domains(tmp_path / "data"), tmp_path / "run"
    argv = [*TINY_CYCLEGAN, "--dataset", "folder", "--data_dir", str(data), "--output_dir", str(out)]
    assert train_cyclegan([*argv, "--max_steps", "1"]) == 0
    shutil.copy2(data / "trainB" / "000.png", data / "trainB" / "extra.png")
    capsys.readouterr()  # the first run's progress bar
    before = snapshot(tmp_path)
    line = user_error(train_cyclegan, [*argv, "--max_steps", "2", "--resume_from_checkpoint", "latest"], capsys)
    assert "the data changed since this checkpoint (trainB: 1 image added: extra.png)" in line, line
    assert snapshot(tmp_path) == before


def test_classifier_and_distillation_resume_on_an_edited_training_file_are_refused(tmp_path, capsys):
    from classifier_fixtures import load_script as load
    from classifier_fixtures import make_corpus, make_tiny, train_argv, train_in_process
    from distill_fixtures import distill_argv, distill_in_process

    corpus = make_corpus(tmp_path / "corpus", n_train=32, n_val=8)
    tiny = make_tiny(tmp_path / "tiny", corpus["train"])
    out = tmp_path / "run"
    train_in_process(train_argv(corpus, tiny, out, "--max_steps", "2", "--checkpointing_steps", "2"))
    setup = {"corpus": corpus, "teacher": out / "model"}  # the fine-tuned tiny model teaches
    student = tmp_path / "student"
    distill_in_process(
        distill_argv(setup, student, "--student_from_teacher", "--max_steps", "2", "--checkpointing_steps", "2")
    )
    lines = Path(corpus["train"]).read_text().splitlines(keepends=True)
    Path(corpus["train"]).write_text("".join(lines[:-1]))  # one example fewer
    capsys.readouterr()  # the first runs' progress bars
    before = snapshot(tmp_path)
    resumed = ["--max_steps", "3", "--resume_from_checkpoint", "latest"]
    line = user_error(load("train_classifier").main, train_argv(corpus, tiny, out, *resumed), capsys)
    assert f"(train_file: {corpus['train']} changed (" in line, line
    # (the teacher's weights load before the check: their progress bar is not the error)
    argv = distill_argv(setup, student, "--student_from_teacher", *resumed)
    line = user_error(load("distill_classifier").main, argv, capsys, bar="Loading weights")
    assert f"{student}/checkpoints/step_00000002: the data changed since this checkpoint (train_file: " in line, line
    assert snapshot(tmp_path) == before
