"""The memorisation check (copy rate) on constructed cases: a 'generator' that returns training
images with tiny noise is flagged; one that returns fresh images of the same distribution is not."""

import pytest
import torch
import torch.nn as nn

from gan_accel.data import load_image_data, to_float_images
from gan_accel.metrics import GANEvaluator
from gan_accel.metrics.memorisation import COPY_PERCENTILE, check_memorisation, copy_rate, memorisation_report


def gaussian(n, seed, dim=8):
    return torch.randn(n, dim, generator=torch.Generator().manual_seed(seed))


def test_copy_rate_rule():
    heldout = torch.arange(1.0, 101.0)  # 5th percentile: 5.95
    rate, threshold = copy_rate(torch.tensor([0.5, 3.0, 7.0, 50.0]), heldout)
    assert threshold == pytest.approx(5.95) and rate == 0.5


def test_copies_are_flagged_and_fresh_samples_are_not():
    train, heldout = gaussian(500, 0), gaussian(200, 1)
    copies = train[torch.arange(300) % 20] + 1e-3 * gaussian(300, 2)  # a tiny set of 20, repeated
    fresh = gaussian(300, 3)
    copied, nearest = memorisation_report({"features": (train, heldout, copies)}, neighbours=2)
    healthy, _ = memorisation_report({"features": (train, heldout, fresh)}, neighbours=2)
    assert copied["copy_rate_features"] == 1.0 and copied["copying"]
    assert healthy["copy_rate_features"] < 3 * COPY_PERCENTILE / 100 and not healthy["copying"]
    # The nearest training image of each copy is the one it was copied from.
    assert torch.equal(nearest["features"][:, 0], torch.arange(300) % 20)
    assert nearest["features"].shape == (300, 2) and sorted(nearest["order"].tolist()) == list(range(300))


class ImagesG(nn.Module):
    """A 'generator' that returns the given images in turn, plus optional Gaussian noise."""

    z_dim, num_classes = 4, 0

    def __init__(self, images, noise=0.0):
        super().__init__()
        self.images, self.noise = images, noise

    def forward(self, z, labels=None):
        idx = (z[:, 0].abs() * 1e4).long() % len(self.images)
        return (self.images[idx] + self.noise * torch.randn_like(self.images[idx])).clamp(-1, 1)


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    digits = load_image_data("digits", image_size=16, channels=1)
    return GANEvaluator(digits, num_images=200, cache_dir=str(tmp_path_factory.mktemp("cache")), seed=0)


def test_a_generator_copying_a_tiny_set_is_flagged_a_healthy_one_is_not(evaluator):
    images = evaluator.real.images
    tiny_set = to_float_images(images[evaluator.reference_idx[:16]])
    copier, grid = check_memorisation(evaluator, ImagesG(tiny_set, noise=0.01), rows=4, neighbours=2)
    assert copier["copying"] and copier["copy_rate_pixels"] > 0.9 and copier["copy_rate_features"] > 0.9
    # One row per image: the generated image, 2 feature neighbours, 2 pixel neighbours (16 px + 2 px
    # padding; make_grid writes RGB).
    assert grid.shape == (3, 4 * 18 + 2, 5 * 18 + 2) and 0.0 <= grid.min() and grid.max() <= 1.0
    healthy, _ = check_memorisation(evaluator, ImagesG(to_float_images(images[evaluator.heldout_idx])), rows=4)
    assert not healthy["copying"]
    assert healthy["copy_rate_pixels"] < 0.15 and healthy["copy_rate_features"] < 0.15
    assert healthy["num_heldout"] == len(evaluator.heldout_idx) and healthy["num_generated"] == 200
