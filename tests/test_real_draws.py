"""The real-vs-real interval (gan_accel.metrics.real_draws): the floor's spread over draws of two
disjoint sets of real images. Real images scored as a generator at the floor's size fall inside it
in most draws; a clearly worse set lies above it at that size (it separates), where its full-size
value, the one saturation used to judge, lay below it; the interval holds the floor; draws repeat
no image."""

import statistics

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gan_accel.data import load_image_data, to_float_images
from gan_accel.metrics.bootstrap import frechet_distance, kernel_distance, mean_and_covariance
from gan_accel.metrics.distance import kid_subset_size
from gan_accel.metrics.real_draws import disjoint_draws, draw_interval, feature_intervals, swd_interval
from gan_accel.metrics.result import is_saturated
from gan_accel.metrics.swd import SWDReference

SEEDS = range(5)  # repeated draws: a share over fixed seeds, so the test is deterministic
# Synthetic features: the floor's size and the dimensions (about the domain features' ratio of the two).
N, DIM = 200, 48
SHIFT = 0.15  # a generator whose features are off by this much in every dimension: clearly not real


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 60), st.integers(1, 60), st.integers(1, 80), st.integers(0, 2**16))
def test_each_draw_is_two_sets_without_repeats(num_train, num_heldout, n, seed):
    draws = disjoint_draws(num_train, num_heldout, n, 3, seed)
    assert len(draws) == 3
    for a, b in draws:
        for rows, pool in ((a, num_train), (b, num_heldout)):
            assert len(rows) == min(n, pool) and len(set(rows.tolist())) == len(rows)
            assert 0 <= int(rows.min()) and int(rows.max()) < pool
    assert [(a.tolist(), b.tolist()) for a, b in draws] == [
        (a.tolist(), b.tolist()) for a, b in disjoint_draws(num_train, num_heldout, n, 3, seed)
    ]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=2, max_size=30), st.floats(-10, 10))
def test_the_interval_holds_the_floor_and_the_central_draws(values, floor):
    low, high = draw_interval(values, floor)
    assert low <= floor <= high
    assert low <= statistics.median(values) <= high


def gaussian(seed):
    """A real-feature distribution (independent dimensions of unequal spread) to draw sets from."""
    generator = torch.Generator().manual_seed(seed)
    scale = torch.rand(DIM, generator=generator, dtype=torch.float64) + 0.5
    return lambda k: torch.randn(k, DIM, generator=generator, dtype=torch.float64) * scale


def feature_case(seed):
    """Pools of real training and held-out features, the floor (n vs n) and both intervals."""
    draw = gaussian(seed)
    train, heldout = draw(1500), draw(400)
    reference = mean_and_covariance(train[:N])
    subset = kid_subset_size(N, N)
    floor = {
        "fid": frechet_distance(reference, heldout[:N]),
        "kid": kernel_distance(train[:N], heldout[:N], subset, 50, torch.Generator().manual_seed(seed)),
    }
    return draw, train, reference, floor, feature_intervals(train, heldout, N, floor, subset, seed=seed)


def test_real_features_at_the_floor_size_fall_inside_and_a_shifted_set_lies_above():
    inside = saturated = total = 0
    for seed in SEEDS:
        draw, train, reference, floor, new = feature_case(seed)
        low, high = new["fid"]
        assert low <= floor["fid"] <= high and new["kid"][0] <= floor["kid"] <= new["kid"][1]
        # Fresh real features against the floor's reference, at its size: as good as real.
        values = [frechet_distance(reference, draw(N)) for _ in range(10)]
        inside += sum(low <= v <= high for v in values)
        saturated += sum(is_saturated(v, floor["fid"], new["fid"]) for v in values)
        total += len(values)
        # A clearly worse generator separates from real data at the floor's size; its full-size FID
        # (1000 images against the whole reference) is lower from the sample size alone and read as
        # saturated, which is what the rule judged before.
        shifted = draw(1000) + SHIFT
        assert not is_saturated(frechet_distance(reference, shifted[:N]), floor["fid"], new["fid"])
        assert is_saturated(frechet_distance(mean_and_covariance(train), shifted), floor["fid"], new["fid"])
    assert inside >= 0.8 * total and saturated >= 0.8 * total


@pytest.fixture(scope="module")
def digits():
    images = to_float_images(load_image_data("digits", image_size=32, channels=1).images)
    return images[torch.randperm(len(images), generator=torch.Generator().manual_seed(0))]


def blur(images):
    kernel = torch.tensor([1.0, 2.0, 1.0]) / 4
    return F.conv2d(F.pad(images, (1, 1, 1, 1), mode="replicate"), (kernel[:, None] * kernel)[None, None])


def test_the_swd_of_held_out_digits_falls_inside_and_blurred_digits_lie_above(digits):
    n = 64
    train_idx, heldout_idx = torch.arange(900), torch.arange(900, 1300)  # the rest: fresh real digits
    reference = SWDReference(digits[train_idx[:n]], seed=0)
    floor = reference.score(digits[heldout_idx[:n]])
    low, high = swd_interval(digits.__getitem__, train_idx, heldout_idx, n, floor.value)
    assert low <= floor.value <= high
    fresh = [reference.score(digits[start : start + n]).value for start in range(1300, len(digits) - n + 1, n)]
    assert sum(low <= v <= high for v in fresh) >= 0.8 * len(fresh)
    blurred = reference.score(blur(digits[1300 : 1300 + n])).value
    assert not is_saturated(blurred, floor.value, [low, high])
