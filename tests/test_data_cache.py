"""The decode cache: the same pixels as the in-memory decode, reopened without decoding, rebuilt
when the folder changes or the cache is damaged, and bad cache folders refused in one line."""

import contextlib
import io
import json
import os
import shutil

import pytest
import torch

from data_fixtures import CLASSES, FOLDER_GAN, make_folder
from gan_accel.data import load_image_data
from gan_accel.data.source import open_image_source
from gan_accel.gan.config import GANDataArguments
from helpers import TINY_GAN, load_script, repaint_keeping_size_and_mtime
from helpers import one_line_error as user_error

train_gan = load_script("train_gan").main
CPU = torch.device("cpu")


def data_args(root, cache, **kw):
    return GANDataArguments(
        dataset="folder",
        data_dir=str(root),
        image_size=16,
        channels=3,
        data_cache_dir=str(cache),
        data_decode_workers=kw.pop("workers", 0),
        **kw,
    )


def open_source(root, cache, **kw):
    """The source and the lines it printed (a build is announced with print() by any process)."""
    lines, out = [], io.StringIO()
    with contextlib.redirect_stdout(out):
        source = open_image_source(data_args(root, cache, **kw), CPU, print_fn=lines.append, show_progress=False)
    return source, out.getvalue().splitlines() + lines


@pytest.fixture
def folder(tmp_path):
    root = make_folder(tmp_path / "images", per_class=12)
    (root / "dogs" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)  # skipped and counted
    return root


def test_cache_holds_the_pixels_of_the_in_memory_decode(folder, tmp_path):
    today = load_image_data("folder", str(folder), image_size=16, channels=3)  # the sequential in-memory decode
    source, lines = open_source(folder, tmp_path / "cache", workers=2, data_in_memory="no")
    assert "building" in lines[0] and source.cache.skipped == 1
    assert len(source) == len(today) == 24 and source.class_names == list(CLASSES)
    rows = source.cache.read_rows(range(len(source)))
    assert rows.dtype == torch.uint8 and torch.equal(rows, today.images)
    assert torch.equal(source.cache.labels, today.labels)


def test_second_open_reads_the_cache_without_decoding(folder, tmp_path, monkeypatch):
    first, _ = open_source(folder, tmp_path / "cache")
    import gan_accel.data.decode as decode

    monkeypatch.setattr(decode, "decode_image_file", lambda *a: pytest.fail("decoded again"))
    second, lines = open_source(folder, tmp_path / "cache")
    assert lines == [f"Decode cache: {first.cache.path} (24 images)"]
    assert torch.equal(second.images, first.images)


def test_cache_build_skips_decompression_bombs(folder, tmp_path, monkeypatch):
    # Real bombs for a lowered limit (the folder's images are at most 27 x 26 = 702 px): above
    # twice the limit PIL raises, between it only warns; both are skipped like the broken file.
    from PIL import Image

    for name, side in (("bomb_error", 50), ("bomb_warning", 40)):
        Image.fromarray(torch.zeros(side, side, dtype=torch.uint8).numpy(), mode="L").save(
            folder / "cats" / f"{name}.png"
        )
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    source, _ = open_source(folder, tmp_path / "cache", data_in_memory="no")
    assert len(source) == 24 and source.cache.skipped == 3
    assert torch.equal(source.cache.read_rows(range(24)), load_image_data("folder", str(folder), 16, 3).images)


def _touch_new_content(path):
    elsewhere = path.parents[2] / "elsewhere"  # outside the data folder
    make_folder(elsewhere, per_class=1, seed=7)
    other = elsewhere / path.parent.name / "000.png"
    path.write_bytes(other.read_bytes())
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a new mtime even on coarse clocks


CHANGES = {
    "file added": lambda root, entry: shutil.copy(root / "cats" / "000.png", root / "cats" / "new.png"),
    "file removed": lambda root, entry: (root / "dogs" / "003.png").unlink(),
    "file changed": lambda root, entry: _touch_new_content(root / "cats" / "005.png"),
    "pixels changed, size and mtime kept": lambda root, entry: repaint_keeping_size_and_mtime(
        root / "cats" / "005.png"
    ),
    "cache truncated": lambda root, entry: os.truncate(
        entry / "images.u8", os.path.getsize(entry / "images.u8") - 100
    ),
    "cache cut and zero-padded": lambda root, entry: _zero_tail(entry / "images.u8"),
    "meta.json garbled": lambda root, entry: (entry / "meta.json").write_text("{not json"),
    "meta.json missing": lambda root, entry: (entry / "meta.json").unlink(),
}


def test_a_folder_repainted_black_with_sizes_and_dates_kept_is_decoded_again(folder, tmp_path):
    # What cp -p / rsync -a / tar x of other images with the same sizes and dates leaves: the cache
    # is keyed by content, so the run trains on the black pixels, not on the old ones.
    before, _ = open_source(folder, tmp_path / "cache")
    for path in sorted(folder.rglob("0*.png")):
        repaint_keeping_size_and_mtime(path)
    after, lines = open_source(folder, tmp_path / "cache")
    assert "building" in lines[0] and after.cache.path != before.cache.path
    assert after.images.max() == 0 and before.images.max() > 0


def _zero_tail(path):
    size = os.path.getsize(path)
    os.truncate(path, size - 300)
    os.truncate(path, size)  # same size again, the tail now zeros


@pytest.mark.parametrize("change", list(CHANGES))
def test_changed_folder_or_damaged_cache_is_rebuilt(folder, tmp_path, change):
    cache = tmp_path / "cache"
    before, _ = open_source(folder, cache)
    CHANGES[change](folder, before.cache.path)
    after, lines = open_source(folder, cache)
    assert "building" in lines[0], lines
    fresh = load_image_data("folder", str(folder), image_size=16, channels=3)
    assert torch.equal(after.images, fresh.images) and torch.equal(after.labels, fresh.labels)
    expected = {"file added": 25, "file removed": 23}.get(change, 24)
    assert len(after) == expected
    # Only complete entries remain: no temporary or replaced folders left behind.
    assert all(not p.name.startswith(".") for p in (cache).iterdir())
    meta = json.loads((after.cache.path / "meta.json").read_text())
    assert meta["num_images"] == expected and meta["skipped"] == 1


def test_unwritable_cache_dir_is_one_line_and_touches_nothing(folder, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("keep me")
    line = user_error(
        train_gan,
        [
            *FOLDER_GAN,
            "--data_dir",
            str(folder),
            "--output_dir",
            str(tmp_path / "run"),
            "--data_cache_dir",
            str(blocker / "sub"),
            "--max_steps",
            "1",
        ],
        capsys,
    )
    assert f"--data_cache_dir {blocker / 'sub'}" in line and "writable" in line
    assert blocker.read_text() == "keep me" and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--dataset", "hub"], "--dataset hub needs --dataset_name"),
        (
            ["--dataset", "folder", "--dataset_name", "x"],
            "--dataset_name loads a Hugging Face dataset; drop --dataset folder",
        ),
        (["--max_data_memory_mb", "0"], "--max_data_memory_mb must be > 0"),
        (["--data_in_memory", "maybe"], "--data_in_memory/--data-in-memory: invalid choice: 'maybe'"),
        (["--dataloader_num_workers", "-1"], "--dataloader_num_workers must be >= 0"),
    ],
)
def test_invalid_data_flags(tmp_path, capsys, argv, match):
    line = user_error(train_gan, [*TINY_GAN, "--output_dir", str(tmp_path / "run"), *argv], capsys)
    assert match in line


def test_real_batch_before_the_loader_is_a_clear_error(folder, tmp_path):
    source, _ = open_source(folder, tmp_path / "cache", data_in_memory="yes")
    with pytest.raises(RuntimeError, match=r"real_batch\(\) called before make_loader\(\); make the loader first"):
        source.real_batch(torch.arange(4))
    from gan_accel.data import ResumableSampler

    loader = source.make_loader(4, ResumableSampler(len(source), seed=0), 0, CPU)
    images, labels = source.real_batch(next(iter(loader)))
    assert images.shape == (4, 3, 16, 16) and labels.shape == (4,)
