"""Bootstrap intervals for FID, KID, precision, recall, density and coverage.

A percentile bootstrap with few resamples (20 by default), so it costs little next to sampling the
generator; it shows how much a number moves when the same generator is sampled again, which is
what decides whether two runs differ. What is resampled, per metric:

- FID, KID, precision, density: the generated samples, with replacement (the real reference fixed).
- recall, coverage: their per-real-sample terms, with replacement (the generated manifold fixed):
  resampling the fakes would put duplicates at distance 0 and shrink the k-NN balls recall
  uses, biasing the interval low.

Resampling with replacement repeats about a third of the samples, which biases FID upwards (a
sample of 1000 with repeats has the spread of a smaller one): measured on digits, the
percentile interval of a real-like generator lay entirely above its FID. Each interval is
therefore shifted by the bootstrap's own estimate of that bias (mean of the resampled values
minus the value on the original sample), the bias-corrected percentile interval.

Each interval is centred on the value the caller reports (``estimates``), and every resampled
value is computed by that value's own estimator: KID is the unbiased MMD over random subsets, which
leaves out the pairs of an image with itself; in a resample the same image appears twice, and
those pairs, left in, are the largest kernel values there are. An interval holds its estimate (a
percentile interval of few resamples of a skewed statistic can miss it) and stays inside the
range the metric can take (:data:`METRIC_RANGES`).

Features are reused; no image is generated or passed through a network again.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import torch

BOOTSTRAP_RESAMPLES = 20
BOOTSTRAP_LEVEL = 0.95
PER_FAKE_TERMS = ("precision", "density")  # averaged over the fakes; recall and coverage over the reals
KID_BOOTSTRAP_SUBSETS = 2  # per resample: the resampling already spreads the values, and each costs ~20 ms
# The values each metric can take. KID is not bounded below: its unbiased estimate of a distance
# near 0 is often negative, and a reported negative KID must stay inside its interval. Density
# counts real-sample balls per fake (about 1 for a generator like the data) and exceeds 1.
METRIC_RANGES: Dict[str, Tuple[float, float]] = {
    "fid": (0.0, math.inf),
    "kid": (-math.inf, math.inf),
    "precision": (0.0, 1.0),
    "recall": (0.0, 1.0),
    "density": (0.0, math.inf),
    "coverage": (0.0, 1.0),
}


def mean_and_covariance(features: torch.Tensor):
    """Float64 mean ``[D]`` and unbiased covariance ``[D, D]`` (what FID compares)."""
    features = features.double()
    return features.mean(dim=0), torch.cov(features.T)


def frechet_distance(real_stats, fake: torch.Tensor) -> float:
    """FID of fake features against ``real_stats = mean_and_covariance(real)``."""
    from torchmetrics.image.fid import _compute_fid  # imported on use: torchmetrics takes seconds (gan_accel.metrics)

    fake_mean, fake_cov = mean_and_covariance(fake)
    return float(_compute_fid(fake_mean, fake_cov, real_stats[0], real_stats[1]))


def kernel_distance(
    real: torch.Tensor,
    fake: torch.Tensor,
    subset_size: int,
    subsets: int,
    generator: torch.Generator,
    fake_ids: Optional[torch.Tensor] = None,
) -> float:
    """KID (cubic polynomial kernel MMD) averaged over random subsets drawn with ``generator``, as
    torchmetrics computes it. ``fake_ids``: the original index of each fake row (a bootstrap
    resample repeats rows), so that an image paired with a copy of itself is left out like one
    paired with itself; None: every row is its own image."""
    values = []
    for _ in range(subsets):
        real_idx = torch.randperm(real.shape[0], generator=generator)[:subset_size]
        fake_idx = torch.randperm(fake.shape[0], generator=generator)[:subset_size]
        ids = fake_idx if fake_ids is None else fake_ids[fake_idx]
        values.append(unbiased_mmd(real[real_idx].double(), fake[fake_idx].double(), ids))
    return float(torch.stack(values).mean())


def unbiased_mmd(real: torch.Tensor, fake: torch.Tensor, fake_ids: torch.Tensor) -> torch.Tensor:
    """torchmetrics' ``poly_mmd`` of equal-size subsets ``[m, D]``, with the within-fake average
    over the pairs of different images (``fake_ids``) only: with distinct ids, exactly its value."""
    from torchmetrics.image.kid import poly_kernel  # imported on use: torchmetrics takes seconds

    m = real.shape[0]
    k_rr = poly_kernel(real, real)
    k_ff = poly_kernel(fake, fake)
    k_rf = poly_kernel(real, fake)
    distinct = fake_ids[:, None] != fake_ids[None, :]
    within_real = (k_rr.sum() - k_rr.diagonal().sum()) / (m * (m - 1))
    within_fake = k_ff[distinct].sum() / distinct.sum().clamp(min=1)
    return within_real + within_fake - 2 * k_rf.mean()


def percentile_interval(values: List[float], level: float = BOOTSTRAP_LEVEL) -> List[float]:
    """``[low, high]``: the central ``level`` share of the bootstrap values."""
    tail = (1.0 - level) / 2.0
    probabilities = torch.tensor([tail, 1.0 - tail], dtype=torch.float64)
    quantiles = torch.quantile(torch.tensor(values, dtype=torch.float64), probabilities)
    return [float(quantiles[0]), float(quantiles[1])]


def bias_corrected_interval(
    values: List[float],
    estimate: float,
    level: float = BOOTSTRAP_LEVEL,
    bounds: Tuple[float, float] = (-math.inf, math.inf),
) -> List[float]:
    """The percentile interval shifted by the bootstrap bias ``mean(values) - estimate``, widened to
    hold ``estimate`` and clipped to ``bounds`` (the metric's range)."""
    bias = sum(values) / len(values) - estimate
    low, high = percentile_interval(values, level)
    low, high = min(low - bias, estimate), max(high - bias, estimate)
    return [max(low, bounds[0]), min(high, bounds[1])]


def bootstrap_intervals(
    real: torch.Tensor,
    fake: torch.Tensor,
    per_sample: Optional[Dict[str, torch.Tensor]] = None,
    kid_subset_size: int = 100,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = BOOTSTRAP_LEVEL,
    seed: int = 0,
    estimates: Optional[Dict[str, float]] = None,
) -> Dict[str, List[float]]:
    """``{"fid": [low, high], "kid": ..., "precision": ..., ...}``.

    real:       the FID/KID reference features ``[N, D]``.
    fake:       the generated features ``[M, D]``.
    per_sample: :func:`gan_accel.metrics.fidelity.per_sample_scores` (optional), resampled as above.
    estimates:  the values the caller reports (e.g. KID over 50 subsets), each interval's centre;
                a metric not given is computed here by the estimator of its resamples.
    Empty when ``resamples`` is 0. Runs on its own generator: the caller's RNG does not move.
    """
    if resamples <= 0 or not torch.isfinite(fake).all():
        return {}  # non-finite features: FID's eigenvalue solver would crash (see FeatureDistance.score)
    generator = torch.Generator().manual_seed(seed)
    real_stats = mean_and_covariance(real)
    subset_size = min(kid_subset_size, real.shape[0], fake.shape[0])
    estimate_generator = torch.Generator().manual_seed(seed)
    given = dict(estimates or {})
    estimates = {
        "fid": given["fid"] if "fid" in given else frechet_distance(real_stats, fake),
        "kid": (
            given["kid"]
            if "kid" in given
            else kernel_distance(real, fake, subset_size, KID_BOOTSTRAP_SUBSETS, estimate_generator)
        ),
    }
    estimates.update({name: given.get(name, float(terms.mean())) for name, terms in (per_sample or {}).items()})
    draws: Dict[str, List[float]] = {"fid": [], "kid": []}
    for _ in range(resamples):
        fake_idx = torch.randint(fake.shape[0], (fake.shape[0],), generator=generator)
        resampled = fake[fake_idx]
        draws["fid"].append(frechet_distance(real_stats, resampled))
        draws["kid"].append(
            kernel_distance(real, resampled, subset_size, KID_BOOTSTRAP_SUBSETS, generator, fake_ids=fake_idx)
        )
        for name, terms in (per_sample or {}).items():
            # Per-fake terms follow the same fake resample; per-real terms get their own.
            if name in PER_FAKE_TERMS:
                idx = fake_idx
            else:
                idx = torch.randint(terms.shape[0], (terms.shape[0],), generator=generator)
            draws.setdefault(name, []).append(float(terms[idx].mean()))
    return {
        name: bias_corrected_interval(values, estimates[name], level, METRIC_RANGES.get(name, (-math.inf, math.inf)))
        for name, values in draws.items()
    }
