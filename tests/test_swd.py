"""The multi-scale sliced Wasserstein distance (gan_accel.metrics.swd) as small pure functions: the
pyramid inverts, identical sets score 0, noise scores far above images, a shifted distribution ranks
worse than a mildly blurred one, and every number is the same for the same seed."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gan_accel.data import load_image_data, to_float_images
from gan_accel.metrics.swd import (
    SWDReference,
    descriptors,
    laplacian_pyramid,
    pyramid_sizes,
    resampled_sorted,
    sliced_wasserstein,
)


@pytest.fixture(scope="module")
def digits():
    images = to_float_images(load_image_data("digits", image_size=32, channels=1).images)
    order = torch.randperm(len(images), generator=torch.Generator().manual_seed(0))
    return images[order[:128]], images[order[128:256]]  # a reference and held-out real images


def test_pyramid_sizes_go_down_to_16_px():
    assert pyramid_sizes(64) == [64, 32, 16] and pyramid_sizes(48) == [48, 24]
    assert pyramid_sizes(16) == [16] and pyramid_sizes(8) == [8]  # smaller images: one level, the image
    assert pyramid_sizes(6) == []  # smaller than a 7x7 patch: no SWD


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([16, 20, 32, 48]), st.integers(1, 3), st.integers(0, 2**16))
def test_the_laplacian_pyramid_adds_back_up_to_the_image(size, channels, seed):
    images = torch.rand(2, channels, size, size, generator=torch.Generator().manual_seed(seed)) * 2 - 1
    levels = laplacian_pyramid(images, len(pyramid_sizes(size)))
    assert [level.shape[-1] for level in levels] == pyramid_sizes(size)
    from gan_accel.metrics.swd import _blur

    rebuilt = levels[-1]
    for band in reversed(levels[:-1]):
        up = torch.zeros(*rebuilt.shape[:2], rebuilt.shape[2] * 2, rebuilt.shape[3] * 2)
        up[:, :, ::2, ::2] = rebuilt
        rebuilt = band + _blur(up, gain=4.0)[:, :, : band.shape[2], : band.shape[3]]
    assert torch.allclose(rebuilt, images, atol=1e-5)


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 40), st.integers(2, 40), st.integers(1, 12), st.integers(0, 2**16))
def test_sliced_wasserstein_is_zero_on_identical_sets_and_symmetric(n, m, dim, seed):
    gen = torch.Generator().manual_seed(seed)
    a, b = torch.randn(n, dim, generator=gen), torch.randn(m, dim, generator=gen) + 1.0
    assert sliced_wasserstein(a, a, 16, seed) == 0.0
    assert sliced_wasserstein(a, b, 16, seed) == pytest.approx(sliced_wasserstein(b, a, 16, seed))
    assert sliced_wasserstein(a, b, 16, seed) > 0


def test_real_images_score_near_the_floor_and_noise_far_above(digits):
    reference, heldout = digits
    swd = SWDReference(reference, seed=0)
    real = swd.score(heldout, resamples=10)
    noise = swd.score(torch.rand_like(heldout) * 2 - 1, resamples=10)
    assert set(real.levels) == {"32", "16"} and math.isclose(real.value, sum(real.levels.values()) / 2)
    assert noise.value > 20 * real.value
    for score in (real, noise):  # the interval holds its value
        assert 0 <= score.interval[0] <= score.value <= score.interval[1]


def test_a_shifted_distribution_ranks_worse_than_a_mildly_blurred_one(digits):
    reference, heldout = digits
    swd = SWDReference(reference, seed=0)
    kernel = torch.tensor([1.0, 2.0, 1.0]) / 4
    blurred = F.conv2d(F.pad(heldout, (1, 1, 1, 1), mode="replicate"), (kernel[:, None] * kernel)[None, None])
    shifted = (heldout + 0.4).clamp(-1, 1)  # a colour cast: ProGAN's per-set normalisation would hide it
    real, blur, shift = (swd.score(x).value for x in (heldout, blurred, shifted))
    assert real < blur < shift


def test_every_number_is_the_same_for_the_same_seed(digits):
    reference, heldout = (images[:32] for images in digits)
    torch.manual_seed(1)
    state = torch.get_rng_state()
    first = SWDReference(reference, seed=3).score(heldout, resamples=5)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's random stream does not move
    assert SWDReference(reference, seed=3).score(heldout, resamples=5) == first
    assert SWDReference(reference, seed=4).score(heldout).value != first.value
    assert all(torch.equal(a, b) for a, b in zip(descriptors(heldout, 8, 5), descriptors(heldout, 8, 5)))


def test_non_finite_images_score_nan(digits):
    reference, heldout = digits
    broken = heldout.clone()
    broken[0, 0, 0, 0] = float("nan")
    score = SWDReference(reference).score(broken, resamples=5)
    assert math.isnan(score.value) and score.interval is None


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 30), st.integers(1, 5), st.integers(0, 2**16))
def test_a_resample_reuses_the_sort(n, p, seed):
    gen = torch.Generator().manual_seed(seed)
    values = torch.randn(p, n, generator=gen)
    counts = torch.bincount(torch.randint(n, (n,), generator=gen), minlength=n)
    sorted_values, order = values.sort(dim=1)
    expected = torch.stack([row.repeat_interleave(counts).sort().values for row in values])
    assert torch.equal(resampled_sorted(sorted_values, order, counts), expected)
