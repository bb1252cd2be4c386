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

Features are reused; no image is generated or passed through a network again.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import torch

BOOTSTRAP_RESAMPLES = 20
BOOTSTRAP_LEVEL = 0.95
PER_FAKE_TERMS = ("precision", "density")  # averaged over the fakes; recall and coverage over the reals
KID_BOOTSTRAP_SUBSETS = 2  # per resample: the resampling already spreads the values, and each costs ~20 ms


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
    real: torch.Tensor, fake: torch.Tensor, subset_size: int, subsets: int, generator: torch.Generator
) -> float:
    """KID (cubic polynomial kernel MMD) averaged over random subsets drawn with ``generator``."""
    from torchmetrics.image.kid import poly_mmd  # imported on use: torchmetrics takes seconds (gan_accel.metrics)

    values = []
    for _ in range(subsets):
        real_idx = torch.randperm(real.shape[0], generator=generator)[:subset_size]
        fake_idx = torch.randperm(fake.shape[0], generator=generator)[:subset_size]
        values.append(poly_mmd(real[real_idx].double(), fake[fake_idx].double()))
    return float(torch.stack(values).mean())


def percentile_interval(values: List[float], level: float = BOOTSTRAP_LEVEL) -> List[float]:
    """``[low, high]``: the central ``level`` share of the bootstrap values."""
    tail = (1.0 - level) / 2.0
    probabilities = torch.tensor([tail, 1.0 - tail], dtype=torch.float64)
    quantiles = torch.quantile(torch.tensor(values, dtype=torch.float64), probabilities)
    return [float(quantiles[0]), float(quantiles[1])]


def bias_corrected_interval(values: List[float], estimate: float, level: float = BOOTSTRAP_LEVEL) -> List[float]:
    """The percentile interval shifted by the bootstrap bias ``mean(values) - estimate``."""
    bias = sum(values) / len(values) - estimate
    low, high = percentile_interval(values, level)
    return [low - bias, high - bias]


def bootstrap_intervals(
    real: torch.Tensor,
    fake: torch.Tensor,
    per_sample: Optional[Dict[str, torch.Tensor]] = None,
    kid_subset_size: int = 100,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = BOOTSTRAP_LEVEL,
    seed: int = 0,
) -> Dict[str, List[float]]:
    """``{"fid": [low, high], "kid": ..., "precision": ..., ...}``.

    real:       the FID/KID reference features ``[N, D]``.
    fake:       the generated features ``[M, D]``.
    per_sample: :func:`gan_accel.metrics.fidelity.per_sample_scores` (optional), resampled as above.
    Empty when ``resamples`` is 0. Runs on its own generator: the caller's RNG does not move.
    """
    if resamples <= 0 or not torch.isfinite(fake).all():
        return {}  # non-finite features: FID's eigenvalue solver would crash (see FeatureDistance.score)
    generator = torch.Generator().manual_seed(seed)
    real_stats = mean_and_covariance(real)
    subset_size = min(kid_subset_size, real.shape[0], fake.shape[0])
    estimate_generator = torch.Generator().manual_seed(seed)
    estimates = {
        "fid": frechet_distance(real_stats, fake),
        "kid": kernel_distance(real, fake, subset_size, KID_BOOTSTRAP_SUBSETS, estimate_generator),
    }
    estimates.update({name: float(terms.mean()) for name, terms in (per_sample or {}).items()})
    draws: Dict[str, List[float]] = {"fid": [], "kid": []}
    for _ in range(resamples):
        fake_idx = torch.randint(fake.shape[0], (fake.shape[0],), generator=generator)
        resampled = fake[fake_idx]
        draws["fid"].append(frechet_distance(real_stats, resampled))
        draws["kid"].append(kernel_distance(real, resampled, subset_size, KID_BOOTSTRAP_SUBSETS, generator))
        for name, terms in (per_sample or {}).items():
            # Per-fake terms follow the same fake resample; per-real terms get their own.
            if name in PER_FAKE_TERMS:
                idx = fake_idx
            else:
                idx = torch.randint(terms.shape[0], (terms.shape[0],), generator=generator)
            draws.setdefault(name, []).append(float(terms[idx].mean()))
    return {name: bias_corrected_interval(values, estimates[name], level) for name, values in draws.items()}
