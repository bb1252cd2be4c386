"""Precision/recall, density/coverage and their bootstrap intervals on constructed feature sets:
ten well-separated Gaussian clusters stand for ten classes."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torchmetrics.image.fid import FrechetInceptionDistance

from gan_accel.metrics.bootstrap import (
    METRIC_RANGES,
    bootstrap_intervals,
    frechet_distance,
    kernel_distance,
    mean_and_covariance,
    unbiased_mmd,
)
from gan_accel.metrics.distance import kid_subset_size
from gan_accel.metrics.fidelity import (
    MIN_IMAGES,
    balls_containing,
    fidelity_diversity,
    kth_neighbour_distance,
    nearest_neighbour,
    per_sample_scores,
)

DIM = 8
CLASSES = 10


def clusters(n, seed, classes=range(CLASSES), spread=1.0):
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(CLASSES, DIM, generator=torch.Generator().manual_seed(123)) * 20
    labels = torch.tensor(list(classes))[torch.randint(len(classes), (n,), generator=generator)]
    return centres[labels] + spread * torch.randn(n, DIM, generator=generator)


@pytest.fixture(scope="module")
def real():
    return clusters(1000, seed=0)


def test_a_generator_like_the_data_scores_high_everywhere(real):
    scores = fidelity_diversity(real, clusters(1000, seed=1))
    # k=3 balls in 8 dimensions miss some fresh samples of the same distribution: ~0.88, not 1.
    assert scores["precision"] > 0.8 and scores["recall"] > 0.8
    assert 0.8 < scores["density"] < 1.2 and scores["coverage"] > 0.9


def test_dropping_half_the_classes_loses_recall_and_coverage_keeps_precision(real):
    full = fidelity_diversity(real, clusters(1000, seed=1))
    half = fidelity_diversity(real, clusters(1000, seed=1, classes=range(5)))
    assert half["precision"] > full["precision"] - 0.05 and half["density"] > 0.8  # every sample still looks real
    assert half["recall"] < 0.6 and half["coverage"] < 0.6  # half the data is missed
    assert half["recall"] < full["recall"] - 0.3 and half["coverage"] < full["coverage"] - 0.3


def test_a_noisy_generator_loses_precision(real):
    noisy = fidelity_diversity(real, clusters(1000, seed=1, spread=2.0))
    assert noisy["precision"] < 0.3 and noisy["density"] < 0.3
    assert noisy["recall"] > 0.9  # the noise spreads the samples over every class: diversity is not the problem


def test_chunking_changes_nothing(real):
    fake = clusters(300, seed=2, spread=1.5)
    assert per_sample_scores(real[:200], fake, chunk_size=7).keys() == {"precision", "recall", "density", "coverage"}
    small = per_sample_scores(real[:200], fake, chunk_size=7)
    large = per_sample_scores(real[:200], fake, chunk_size=10_000)
    assert all(torch.equal(small[k], large[k]) for k in small)


def test_distances_are_computed_in_bounded_chunks(real, monkeypatch):
    shapes = []
    cdist = torch.cdist

    def recording(a, b):
        shapes.append((a.shape[0], b.shape[0]))
        return cdist(a, b)

    monkeypatch.setattr(torch, "cdist", recording)
    per_sample_scores(real, clusters(700, seed=6), chunk_size=128)
    assert shapes and max(rows for rows, _ in shapes) <= 128  # at most 128 x 1000 distances at a time
    assert sum(rows for rows, cols in shapes if cols == 1000) >= 2 * 1000  # every real row was queried


def test_knn_radius_on_a_line():
    points = torch.tensor([[0.0], [1.0], [3.0], [6.0]])
    assert kth_neighbour_distance(points, 1).tolist() == [1.0, 1.0, 2.0, 3.0]
    assert kth_neighbour_distance(points, 2).tolist() == [3.0, 2.0, 3.0, 5.0]
    distance, index = nearest_neighbour(torch.tensor([[2.9], [-5.0]]), points)
    assert index.tolist() == [2, 0] and torch.allclose(distance, torch.tensor([0.1, 5.0]))
    # Balls of radius 1 around 0 and 1: 0.5 lies in both, 2.0 in one, 10 in none.
    assert balls_containing(torch.tensor([[0.5], [2.0], [10.0]]), points[:2], torch.ones(2)).tolist() == [2, 1, 0]
    with pytest.raises(ValueError, match="k-NN"):
        kth_neighbour_distance(points, 4)


def test_frechet_distance_matches_torchmetrics(real):
    fake = clusters(500, seed=3, spread=2.0)

    class Identity(torch.nn.Module):
        num_features = DIM

        def forward(self, x):
            return x.double()

    fid = FrechetInceptionDistance(feature=Identity())
    fid.update(real, real=True)
    fid.update(fake, real=False)
    assert frechet_distance(mean_and_covariance(real), fake) == pytest.approx(float(fid.compute()), rel=1e-6)


def test_bootstrap_intervals_bracket_the_estimate_and_leave_the_rng_alone(real):
    fake = clusters(400, seed=4, classes=range(5))
    terms = per_sample_scores(real, fake)
    state = torch.get_rng_state()
    intervals = bootstrap_intervals(real, fake, terms, kid_subset_size=100, resamples=20, seed=0)
    assert torch.equal(torch.get_rng_state(), state)
    assert set(intervals) == {"fid", "kid", "precision", "recall", "density", "coverage"}
    fid = frechet_distance(mean_and_covariance(real), fake)
    # Resampling with replacement inflates FID; the bias-corrected interval still holds the estimate.
    assert intervals["fid"][0] <= fid <= intervals["fid"][1]
    for name in ("precision", "recall", "density", "coverage"):
        low, high = intervals[name]
        assert low <= float(terms[name].mean()) <= high, name
    assert intervals["recall"][1] - intervals["recall"][0] > 0  # a real spread, not a constant
    assert bootstrap_intervals(real, fake, terms, resamples=20, seed=0) == intervals  # seeded
    assert bootstrap_intervals(real, fake, terms, resamples=0) == {}


def test_fid_interval_of_a_good_generator_holds_its_fid():
    # Near FID 0 the upward bias of resampling with replacement outweighs the spread: the plain
    # percentile interval ([0.133, 0.207] here) lies entirely above the estimate (0.112).
    real = torch.randn(1000, DIM, generator=torch.Generator().manual_seed(0))
    fake = torch.randn(400, DIM, generator=torch.Generator().manual_seed(5))
    low, high = bootstrap_intervals(real, fake, resamples=20, seed=0)["fid"]
    assert low <= frechet_distance(mean_and_covariance(real), fake) <= high


def test_kid_of_distinct_images_is_torchmetrics_poly_mmd():
    from torchmetrics.image.kid import poly_mmd

    real, fake = clusters(60, seed=1).double(), clusters(60, seed=2, classes=range(3)).double()
    ours = unbiased_mmd(real, fake, torch.arange(60))
    assert float(ours) == pytest.approx(float(poly_mmd(real, fake)), rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    n_real=st.integers(12, 160),
    n_fake=st.integers(12, 160),
    classes=st.integers(1, CLASSES),
    spread=st.floats(0.05, 30.0),
    pool=st.sampled_from([None, 3, 10]),  # fakes drawn from a few images: a collapsed generator
    resamples=st.integers(2, 40),
    level=st.floats(0.5, 0.99),
    seed=st.integers(0, 10_000),
)
def test_every_interval_holds_the_reported_value_and_stays_in_range(
    n_real, n_fake, classes, spread, pool, resamples, level, seed
):
    """Whatever the features, each interval lies inside its metric's range and holds the value the
    evaluator reports, KID being torchmetrics' mean over 50 subsets (before: precision [0.77,
    1.02]; KID at or above its interval's top, the interval centred on another, 2-subset, KID)."""
    real = clusters(n_real, seed=seed)
    fake = clusters(n_fake, seed=seed + 1, classes=range(classes), spread=spread)
    if pool is not None:
        fake = fake[torch.randint(min(pool, n_fake), (n_fake,), generator=torch.Generator().manual_seed(seed))]
    terms = per_sample_scores(real, fake)
    subset_size = kid_subset_size(n_real, n_fake)
    reported = {
        "fid": frechet_distance(mean_and_covariance(real), fake),
        "kid": kernel_distance(real, fake, subset_size, 50, torch.Generator().manual_seed(seed)),
        **{name: float(values.mean()) for name, values in terms.items()},
    }
    intervals = bootstrap_intervals(real, fake, terms, subset_size, resamples, level, seed=seed, estimates=reported)
    assert set(intervals) == set(METRIC_RANGES)
    for name, (low, high) in intervals.items():
        bottom, top = METRIC_RANGES[name]
        assert bottom <= low <= reported[name] <= high <= top, (name, low, reported[name], high)


def test_the_minimum_number_of_images_is_what_the_metrics_need():
    """--num_images / --eval_num_images are refused below MIN_IMAGES: with one image fewer the
    metrics fail (5 images passed the old check of 2, then failed at the first evaluation)."""
    real = torch.randn(MIN_IMAGES, DIM, generator=torch.Generator().manual_seed(0))
    fake = real + 0.1
    assert set(per_sample_scores(real, fake)) == {"precision", "recall", "density", "coverage"}
    with pytest.raises(ValueError, match="k-NN radii need"):
        per_sample_scores(real[:-1], fake[:-1])
