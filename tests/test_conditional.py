"""Conditional GAN end to end: after a short run on digits, samples generated for class c are
classified as c by the domain classifier well above chance (10%); the sample grid has a row per
class; sample_gan.py --class_label generates one class."""

import json

import numpy as np
import pytest
import torch
from PIL import Image

from gan_accel.data import load_image_data
from gan_accel.metrics.domain import DomainTrainSettings, load_or_train_domain_model, predict
from gan_accel.metrics.split import split_indices
from gan_accel.models import load_generator
from gan_accel.sampling import generate_images
from helpers import load_script

# A 600-step training run of a tiny conditional DCGAN: ~15 s on 2 idle cores (much longer when the
# CPU is shared with other jobs), so it stays in the default run.

train_gan = load_script("train_gan").main
sample_gan = load_script("sample_gan").main

# Measured: 300 steps give 15% (the embedding has not taken hold yet), 600 give 86%.
ARCH, STEPS = "dcgan", 600
PER_CLASS = 20


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cgan") / "run"
    assert (
        train_gan(
            [
                "--dataset",
                "digits",
                "--image_size",
                "16",
                "--arch",
                ARCH,
                "--conditional",
                "--z_dim",
                "16",
                "--g_channels",
                "16",
                "--d_channels",
                "16",
                "--batch_size",
                "64",
                "--max_steps",
                str(STEPS),
                "--ema_decay",
                "0.99",
                "--sample_every",
                "0",
                "--num_sample_images",
                "100",
                "--log_every",
                "50",
                "--checkpointing_steps",
                "0",
                "--output_dir",
                str(out),
            ]
        )
        == 0
    )
    return out


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    real = load_image_data("digits", image_size=16, channels=1)
    train_idx, heldout_idx = split_indices(len(real), 0.2)
    model = load_or_train_domain_model(
        real, train_idx, heldout_idx, tmp_path_factory.mktemp("cache"), DomainTrainSettings(epochs=3)
    )
    assert model.accuracy > 0.9  # otherwise the check below would measure the classifier
    return model.classifier


def to_u8(x):
    return ((x + 1) * 127.5).round().clamp(0, 255).to(torch.uint8)


def test_conditional_samples_are_of_their_class(run_dir, classifier):
    G = load_generator(run_dir / "generator")
    assert G.num_classes == 10 and json.loads((run_dir / "generator" / "config.json").read_text())["arch"] == ARCH
    labels = torch.arange(10).repeat_interleave(PER_CLASS)
    pred = predict(classifier, to_u8(generate_images(G, len(labels), labels=labels, seed=1)), torch.device("cpu"))
    per_class = torch.stack([(pred[labels == c] == c).float().mean() for c in range(10)])
    accuracy = (pred == labels).float().mean().item()
    assert accuracy > 0.5, f"conditional accuracy {accuracy:.2f} (chance 0.10); per class {per_class.tolist()}"
    assert (per_class > 0.1).sum() >= 7  # most classes, not a few easy ones


def test_sample_grid_has_a_row_per_class(run_dir):
    final = sorted((run_dir / "samples").glob("step_*.png"))[-1]
    with Image.open(final) as img:
        assert img.size == (10 * 18 + 2, 10 * 18 + 2)  # 100 images: 10 rows (classes) x 10, 16 px + 2 padding


def test_sample_gan_class_label(run_dir, tmp_path, classifier):
    out = tmp_path / "sevens"
    assert (
        sample_gan(
            [
                "--generator",
                str(run_dir / "generator"),
                "--num_images",
                "20",
                "--output_dir",
                str(out),
                "--class_label",
                "7",
            ]
        )
        == 0
    )
    files = sorted(out.glob("*.png"))  # besides seeds.json
    assert len(files) == 20
    images = torch.stack([torch.from_numpy(np.array(Image.open(f).convert("L")))[None] for f in files])
    assert (predict(classifier, images, torch.device("cpu")) == 7).float().mean() > 0.5
