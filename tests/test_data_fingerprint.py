"""The data fingerprint kept in checkpoints (gan_accel.data.fingerprint): what it records and how
it words a change."""

import os
from types import SimpleNamespace

import numpy as np
import pytest

from gan_accel.data.content import content_digest
from gan_accel.data.fingerprint import (
    dataset_part,
    describe_changes,
    file_part,
    folder_part,
    image_fingerprint,
)
from helpers import repaint_keeping_size_and_mtime, write_png


def folder(files: dict, classes=("a", "b")) -> dict:
    return {"kind": "folder", "path": "/data", "classes": list(classes), "files": files}


BASE = {"a/1.png": [10, "h1"], "a/2.png": [10, "h2"], "b/1.png": [10, "h3"]}


@pytest.mark.parametrize(
    "current,expected",
    [
        (folder(BASE), []),
        (
            folder({"a/1.png": [10, "h1"], "a/2.png": [10, "h2"], "c/1.png": [10, "h3"]}, ("a", "c")),
            [
                "data_dir: class 'b' removed, class 'c' added (class ids shift); 1 image added: c/1.png; "
                "1 image removed: b/1.png"
            ],
        ),
        (folder({**BASE, "a/3.png": [5, "h5"], "a/4.png": [5, "h5"]}), ["data_dir: 2 images added: a/3.png, a/4.png"]),
        (folder({"a/1.png": [10, "h1"]}, ("a", "b")), ["data_dir: 2 images removed: a/2.png, b/1.png"]),
        (folder({**BASE, "a/1.png": [10, "h9"]}), ["data_dir: 1 image changed (other content): a/1.png"]),
        (folder(BASE, ("b", "a")), ["data_dir: classes reordered ['a', 'b'] -> ['b', 'a'] (class ids shift)"]),
    ],
)
def test_folder_changes_are_named(current, expected):
    assert describe_changes({"data_dir": folder(BASE)}, {"data_dir": current}) == expected


def test_many_names_are_counted_not_listed():
    many = {f"c/{i}.png": [1, "h"] for i in range(10)}
    (line,) = describe_changes({"data_dir": folder(BASE)}, {"data_dir": folder({**BASE, **many})})
    assert line == "data_dir: 10 images added: c/0.png, c/1.png, c/2.png, ..."


def test_dataset_and_missing_parts():
    digits = dataset_part("digits", 1797, (1, 16, 16), [str(i) for i in range(10)])
    assert describe_changes({"dataset": digits}, {"dataset": dict(digits)}) == []
    other = dataset_part("digits", 1000, (1, 16, 16), [str(i) for i in range(9)])
    assert describe_changes({"dataset": digits}, {"dataset": other}) == [
        "dataset: size 1797 -> 1000; class '9' removed (class ids shift)"
    ]
    assert describe_changes({"dataset": digits}, {"data_dir": folder(BASE)}) == [
        "data_dir: new",
        "dataset: no longer given",
    ]


def test_a_file_is_its_content_not_its_mtime(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("text,label\na,x\n")
    before = file_part(path)
    os.utime(path, ns=(1, 1))
    assert describe_changes({"train_file": before}, {"train_file": file_part(path)}) == []
    path.write_text("text,label\na,y\n")
    assert describe_changes({"train_file": before}, {"train_file": file_part(path)}) == [
        f"train_file: {path} changed (15 -> 15 bytes, other content)"
    ]


def test_folder_part_lists_the_loaders_files_with_size_and_content_hash(tmp_path):
    for name in ("cat/1.png", "dog/1.png"):
        write_png(tmp_path / name, np.zeros((4, 4), dtype=np.uint8), mode="L")
    (tmp_path / "notes.txt").write_text("not an image")
    args = SimpleNamespace(dataset="folder", data_dir=str(tmp_path), dataset_name=None)
    part = image_fingerprint(args, None)["data_dir"]
    assert part["classes"] == ["cat", "dog"] and sorted(part["files"]) == ["cat/1.png", "dog/1.png"]
    stat = (tmp_path / "cat/1.png").stat()
    assert part["files"]["cat/1.png"] == [stat.st_size, content_digest(tmp_path / "cat/1.png")]
    assert part == folder_part(tmp_path, [tmp_path / "cat/1.png", tmp_path / "dog/1.png"], ["cat", "dog"])


def test_an_image_is_its_content_not_its_size_and_mtime(tmp_path):
    for name in ("cat/1.png", "cat/2.png"):
        write_png(tmp_path / name, np.random.default_rng(0).integers(0, 255, (8, 8), dtype=np.uint8), mode="L")
    args = SimpleNamespace(dataset="folder", data_dir=str(tmp_path), dataset_name=None)
    before = image_fingerprint(args, None)
    os.utime(tmp_path / "cat/2.png", ns=(1, 1))  # a touch (or a copy without -p): the same pixels
    assert describe_changes(before, image_fingerprint(args, None)) == []
    repaint_keeping_size_and_mtime(tmp_path / "cat/1.png")  # cp -p of other pixels
    assert describe_changes(before, image_fingerprint(args, None)) == [
        "data_dir: 1 image changed (other content): cat/1.png"
    ]


def test_hashes_the_source_computed_are_reused_and_others_computed(tmp_path):
    files = [tmp_path / "a.png", tmp_path / "b.png"]
    for path in files:
        path.write_bytes(path.name.encode())
    part = folder_part(tmp_path, files, [], known={str(files[0]): "given"})
    assert part["files"] == {"a.png": [5, "given"], "b.png": [5, content_digest(files[1])]}


def test_a_fingerprint_from_before_content_hashes_compares_sizes_only():
    old = folder({"a/1.png": [10, 123456789], "a/2.png": [10, 5]})  # [size, mtime_ns]
    current = folder({"a/1.png": [10, "h1"], "a/2.png": [11, "h2"]})
    assert describe_changes({"data_dir": old}, {"data_dir": current}) == [
        "data_dir: 1 image changed (other content): a/2.png"
    ]
