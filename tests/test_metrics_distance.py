"""FID/KID through FeatureDistance (torchmetrics) against direct numpy/scipy computations."""

import numpy as np
import pytest
import scipy.linalg
import torch
import torch.nn as nn

from gan_accel.metrics.distance import FeatureDistance, kid_subset_size


class Flatten64(nn.Module):
    """'Images' [B, D, 1, 1] -> their D values as float64 features; counts its calls."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.num_features = dim
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x.flatten(1).double()


def gaussian(n, dim, mean=0.0, std=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, dim, 1, 1, generator=g, dtype=torch.float64) * std + mean


def distance_with_reference(real, dim, kid_subsets=2, **kw):
    # Few KID subsets by default: the FID tests do not look at KID, and its kernels dominate the time.
    d = FeatureDistance(Flatten64(dim), kid_subsets=kid_subsets, **kw)
    d.set_reference(real.split(500))
    return d


def numpy_fid(a, b):
    a, b = a.reshape(len(a), -1).numpy(), b.reshape(len(b), -1).numpy()
    mu1, mu2 = a.mean(0), b.mean(0)
    s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    covmean = scipy.linalg.sqrtm(s1 @ s2).real
    return float(((mu1 - mu2) ** 2).sum() + np.trace(s1 + s2 - 2 * covmean))


def numpy_unbiased_mmd_poly(a, b):
    """Unbiased MMD^2 with k(x, y) = (x.y / d + 1)^3 (KID's kernel), equal-size sets."""
    a, b = a.reshape(len(a), -1).numpy(), b.reshape(len(b), -1).numpy()
    d, m = a.shape[1], len(a)
    k = lambda x, y: (x @ y.T / d + 1.0) ** 3  # noqa: E731
    kxx, kyy, kxy = k(a, a), k(b, b), k(a, b)
    return float((kxx.sum() - np.trace(kxx) + kyy.sum() - np.trace(kyy)) / (m * (m - 1)) - 2 * kxy.mean())


def test_fid_of_a_set_against_itself_is_zero():
    real = gaussian(1000, 6)
    out = distance_with_reference(real, 6).score(real.split(300))
    assert abs(out["fid"]) < 1e-6
    assert out["num_images"] == 1000


def test_fid_matches_scipy_sqrtm():
    real, fake = gaussian(800, 8, seed=1), gaussian(600, 8, mean=0.3, std=1.5, seed=2)
    fake[:, 0] *= 3.0  # anisotropic, so the matrix square root is not trivial
    out = distance_with_reference(real, 8).score(fake.split(256))
    expected = numpy_fid(real, fake)
    assert out["fid"] == pytest.approx(expected, rel=1e-3)


def test_fid_of_two_gaussians_matches_closed_form():
    # FID(N(mu1, I), N(mu2, s^2 I)) = |mu1 - mu2|^2 + d (1 - s)^2 in d dimensions.
    d, s, shift = 4, 2.0, 1.0
    real, fake = gaussian(20000, d, seed=3), gaussian(20000, d, mean=shift, std=s, seed=4)
    closed_form = d * shift**2 + d * (1 - s) ** 2
    out = distance_with_reference(real, d).score(fake.split(5000))
    assert out["fid"] == pytest.approx(closed_form, rel=0.03)


def test_kid_equals_direct_unbiased_mmd_when_subsets_are_whole_sets():
    # With subset_size equal to both set sizes every subset is a permutation of the whole set,
    # so the mean equals the unbiased MMD^2 of the full sets and the std is 0.
    real, fake = gaussian(200, 5, seed=5), gaussian(200, 5, mean=0.5, seed=6)
    dist = distance_with_reference(real, 5, kid_subsets=3)
    dist.kid.subset_size = 200
    fid_kid = dist.kid
    fid_kid.reset()
    fid_kid.update(fake, real=False)
    kid_mean, kid_std = fid_kid.compute()
    assert float(kid_mean) == pytest.approx(numpy_unbiased_mmd_poly(real, fake), rel=1e-9)
    assert float(kid_std) == pytest.approx(0.0, abs=1e-12)


def test_kid_is_unbiased_for_the_same_distribution():
    real, fake = gaussian(800, 5, seed=7), gaussian(800, 5, seed=8)
    dist = distance_with_reference(real, 5, kid_subsets=10)
    out = dist.score(fake.split(400))
    assert abs(out["kid_mean"]) < 3 * out["kid_std"] + 1e-4
    other = dist.score(gaussian(800, 5, mean=0.5, seed=9).split(400))
    assert other["kid_mean"] > 10 * out["kid_std"]


def test_kid_is_seeded_and_leaves_the_global_rng_alone():
    real, fake = gaussian(600, 3, seed=10), gaussian(600, 3, mean=0.2, seed=11)
    dist = distance_with_reference(real, 3, seed=123)
    torch.manual_seed(0)
    state = torch.get_rng_state()
    first = dist.score(fake.split(200))
    assert torch.equal(torch.get_rng_state(), state)
    assert dist.score(fake.split(200)) == first


def test_feature_network_runs_once_per_batch_for_both_metrics():
    real = gaussian(400, 3)
    dist = distance_with_reference(real, 3)
    net = dist.features.net
    before = net.calls
    dist.score(real.split(100))
    assert net.calls - before == 4


def test_reference_state_round_trips():
    real, fake = gaussian(500, 4, seed=12), gaussian(500, 4, mean=1.0, seed=13)
    dist = distance_with_reference(real, 4)
    restored = FeatureDistance(Flatten64(4), kid_subsets=2)
    restored.load_reference_state(dist.reference_state())
    assert restored.score(fake.split(250)) == dist.score(fake.split(250))


def test_kid_subset_size_rule():
    assert kid_subset_size(50000, 50000) == 1000
    assert kid_subset_size(1438, 500) == 250
