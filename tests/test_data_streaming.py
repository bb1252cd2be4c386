"""Streaming vs in memory: the same batches and the same weights, bit for bit; exact mid-epoch
resume when streaming; --data_in_memory auto follows the budget; images through `datasets`."""

import json
import multiprocessing

import pytest
import torch

from data_fixtures import CLASSES, FOLDER_GAN, make_folder
from gan_accel.data import ResumableSampler, load_image_data
from gan_accel.data.memory import choose_in_memory
from gan_accel.data.source import open_image_source
from gan_accel.gan.config import GANDataArguments
from helpers import load_script
from test_gan_train import tensors_of

train_gan = load_script("train_gan").main
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_folder(tmp_path_factory.mktemp("data") / "images")  # 80 images: 5 batches of 16 per epoch


def source(folder, cache, **kw):
    args = GANDataArguments(
        dataset="folder",
        data_dir=str(folder),
        image_size=16,
        channels=3,
        data_cache_dir=str(cache),
        data_decode_workers=0,
        **kw,
    )
    return open_image_source(args, CPU, print_fn=lambda *a: None, show_progress=False)


def test_streamed_batches_equal_in_memory_batches(folder, tmp_path):
    memory = source(folder, "none", data_in_memory="yes")  # today's sequential decode, no cache
    streamed = source(folder, tmp_path / "cache", data_in_memory="no")
    assert memory.in_memory and not streamed.in_memory
    batches = []
    for src, workers in ((memory, 0), (streamed, 2)):
        sampler = ResumableSampler(len(src), seed=3)
        sampler.set_position(1, 32)  # epoch 1, two batches in
        loader = src.make_loader(16, sampler, workers, CPU)
        batches.append([src.real_batch(b) for b in loader])
    (a, b) = batches
    assert len(a) == len(b) == 3
    for (real_a, labels_a), (real_b, labels_b) in zip(a, b):
        assert real_a.dtype == torch.float32 and torch.equal(real_a, real_b) and torch.equal(labels_a, labels_b)


def run(folder, out, *extra):
    assert train_gan([*FOLDER_GAN, "--data_dir", str(folder), "--output_dir", str(out), "--conditional", *extra]) == 0
    return out


def test_streaming_trains_the_same_weights_as_in_memory(folder, tmp_path, capsys):
    run(folder, tmp_path / "memory", "--max_steps", "6", "--data_in_memory", "yes", "--data_cache_dir", "none")
    assert "in memory on the accelerator (" in capsys.readouterr().out
    run(
        folder,
        tmp_path / "stream",
        "--max_steps",
        "6",
        "--data_in_memory",
        "no",
        "--dataloader_num_workers",
        "1",
        "--data_cache_dir",
        str(tmp_path / "cache"),
    )
    assert "streamed by DataLoader workers from the decode cache" in capsys.readouterr().out
    # The persistent worker is stopped when training ends: left to a later gc.collect of this
    # process, its shutdown waited 5 s for a worker that never answered, then killed it.
    assert multiprocessing.active_children() == []
    a = tensors_of(tmp_path / "memory" / "checkpoints" / "step_00000006")
    b = tensors_of(tmp_path / "stream" / "checkpoints" / "step_00000006")
    assert a.keys() == b.keys() and len(a) > 10
    assert all(torch.equal(a[k], b[k]) for k in a), [k for k in a if not torch.equal(a[k], b[k])][:5]


def test_streaming_resumes_mid_epoch_exactly(folder, tmp_path):
    # 5 batches per epoch: stopping at 3 is mid-epoch 0; 12 updates end in epoch 2.
    common = ["--data_in_memory", "no", "--dataloader_num_workers", "1", "--data_cache_dir", str(tmp_path / "cache")]
    run(folder, tmp_path / "straight", "--max_steps", "12", *common)
    run(folder, tmp_path / "split", "--max_steps", "3", *common)
    run(folder, tmp_path / "split", "--max_steps", "12", "--resume_from_checkpoint", "latest", *common)
    a = tensors_of(tmp_path / "straight" / "checkpoints" / "step_00000012")
    b = tensors_of(tmp_path / "split" / "checkpoints" / "step_00000012")
    assert all(torch.equal(a[k], b[k]) for k in a), [k for k in a if not torch.equal(a[k], b[k])][:5]
    state = json.loads((tmp_path / "split/checkpoints/step_00000012/trainer_state.json").read_text())["state"]
    assert state["epoch"] == 2 and state["epoch_start"] == 2 * 16


def test_auto_streams_when_the_budget_is_below_the_dataset(folder, tmp_path):
    size_mb = 80 * 3 * 16 * 16 / 2**20  # 0.06 MB decoded
    small = source(folder, tmp_path / "cache", max_data_memory_mb=size_mb / 2)
    assert not small.in_memory and "exceeds the budget" in small.reason and "--max_data_memory_mb" in small.reason
    large = source(folder, tmp_path / "cache", max_data_memory_mb=size_mb * 2)
    assert large.in_memory and "fits the budget" in large.reason
    # The default budget: half the available RAM on the CPU, shared by the machine's processes.
    fits, why = choose_in_memory("auto", 10 * 2**20, None, CPU, local_processes=2)
    assert fits and "half the available RAM / 2 processes" in why
    assert not choose_in_memory("auto", 2**60, None, CPU)[0]


def test_streamed_evaluation_sees_a_bounded_subset(folder, tmp_path):
    streamed = source(folder, tmp_path / "cache", data_in_memory="no")
    full = load_image_data("folder", str(folder), image_size=16, channels=3)
    subset = streamed.image_data(limit=30)
    assert len(subset) == 30 and subset.class_names == list(CLASSES)
    rows = [i for i in range(len(full)) if any(torch.equal(full.images[i], x) for x in subset.images)]
    assert len(rows) == 30
    assert torch.equal(streamed.image_data().images, full.images)  # under the limit: all of them


def test_imagefolder_through_datasets_gives_the_same_images_and_labels(folder, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf"))
    args = GANDataArguments(
        dataset="imagefolder",
        data_dir=str(folder),
        image_size=16,
        channels=3,
        data_cache_dir=str(tmp_path / "cache"),
        data_decode_workers=0,
        data_in_memory="no",
    )
    hf = open_image_source(args, CPU, print_fn=lambda *a: None, show_progress=False)
    full = load_image_data("folder", str(folder), image_size=16, channels=3)
    assert hf.class_names == list(CLASSES) and len(hf) == len(full)
    batch = hf.stream.__getitems__(list(range(len(hf))))

    def pairs(images, labels):
        return sorted((int(label), bytes(x.numpy().tobytes())) for x, label in zip(images, labels))

    assert pairs(batch["images"], batch["labels"]) == pairs(full.images, full.labels)
