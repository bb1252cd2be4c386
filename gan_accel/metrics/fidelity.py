"""Fidelity and diversity apart: improved precision and recall, density and coverage.

FID mixes two failures into one number: images that look wrong (fidelity) and images that miss
part of the data (diversity). These metrics separate them, with k-nearest-neighbour balls around
feature vectors (the same features as FID):

- precision (Kynkaenniemi et al. 2019): share of generated samples inside the real manifold, the
  union of balls around each real sample reaching its k-th nearest real neighbour (k = 3).
- recall: share of real samples inside the generated manifold (the same with the roles swapped).
- density (Naeem et al. 2020): how many real balls (k = 5) contain a generated sample, averaged
  and divided by k; about 1 for a generator that matches the data, above 1 where samples crowd
  around dense real regions. Unlike precision it is not fooled by one outlier real ball.
- coverage: share of real samples whose ball contains at least one generated sample.

A generator that drops half the classes keeps its precision and density but loses recall and
coverage; a noisy one loses precision and density first.

Every function works on float ``[N, D]`` features and computes distances with ``torch.cdist`` in
row chunks, so memory stays at ``chunk_size * N`` distances whatever the set sizes.
"""

from __future__ import annotations

from typing import Dict, Tuple

import torch

from ..errors import ConfigError

K_PRECISION_RECALL = 3  # Kynkaenniemi et al. 2019
K_DENSITY_COVERAGE = 5  # Naeem et al. 2020
# The k-th *other* neighbour needs k + 1 images, and the real-data floor compares as many real
# images as generated ones: fewer generated images fail at the first evaluation.
MIN_IMAGES = max(K_PRECISION_RECALL, K_DENSITY_COVERAGE) + 1
CHUNK_SIZE = 1024  # query rows per cdist call: 1024 x 10000 float32 distances = 40 MB


def _row_chunks(x: torch.Tensor, chunk_size: int):
    for start in range(0, x.shape[0], chunk_size):
        yield x[start : start + chunk_size]


def check_num_images(flag: str, value: int) -> None:
    """Refuse an evaluation size the metrics cannot use, naming the flag and the minimum."""
    if value < MIN_IMAGES:
        raise ConfigError(
            f"--{flag} must be >= {MIN_IMAGES} (density and coverage measure each image against its "
            f"{K_DENSITY_COVERAGE} nearest neighbours); got {value}"
        )


def kth_neighbour_distance(features: torch.Tensor, k: int, chunk_size: int = CHUNK_SIZE) -> torch.Tensor:
    """``[N]``: distance from each row to its k-th nearest *other* row (the radius of its ball)."""
    if not 1 <= k < features.shape[0]:
        raise ValueError(f"k-NN radii need 1 <= k < number of samples; got k={k} for {features.shape[0]} samples")
    features = features.float()
    # The k+1 smallest include the row itself at distance 0, so the k-th other neighbour is index k.
    return torch.cat(
        [
            torch.cdist(chunk, features).topk(k + 1, dim=1, largest=False).values[:, k]
            for chunk in _row_chunks(features, chunk_size)
        ]
    )


def k_nearest(
    queries: torch.Tensor, reference: torch.Tensor, k: int = 1, chunk_size: int = CHUNK_SIZE
) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(distances [M, k], indices [M, k])`` of each query's k nearest reference rows, nearest first."""
    reference = reference.float()
    dists = []
    idxs = []
    for chunk in _row_chunks(queries.float(), chunk_size):
        d, i = torch.cdist(chunk, reference).topk(k, dim=1, largest=False)
        dists.append(d)
        idxs.append(i)
    return torch.cat(dists), torch.cat(idxs)


def nearest_neighbour(
    queries: torch.Tensor, reference: torch.Tensor, chunk_size: int = CHUNK_SIZE
) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(distance [M], index [M])`` of each query's nearest reference row."""
    distances, indices = k_nearest(queries, reference, 1, chunk_size)
    return distances[:, 0], indices[:, 0]


def balls_containing(
    queries: torch.Tensor, centres: torch.Tensor, radii: torch.Tensor, chunk_size: int = CHUNK_SIZE
) -> torch.Tensor:
    """``[M]`` int: for each query, the number of balls ``(centres[i], radii[i])`` that contain it."""
    centres = centres.float()
    radii = radii.float()
    return torch.cat(
        [
            (torch.cdist(chunk, centres) <= radii[None, :]).sum(dim=1)
            for chunk in _row_chunks(queries.float(), chunk_size)
        ]
    )


def per_sample_scores(
    real: torch.Tensor,
    fake: torch.Tensor,
    k_pr: int = K_PRECISION_RECALL,
    k_dc: int = K_DENSITY_COVERAGE,
    chunk_size: int = CHUNK_SIZE,
) -> Dict[str, torch.Tensor]:
    """The per-sample terms each metric averages (the bootstrap resamples them):

    ``precision`` ``[M]`` 0/1 per fake (inside the real manifold), ``density`` ``[M]`` per fake
    (real k_dc-balls containing it / k_dc), ``recall`` ``[N]`` 0/1 per real (inside the fake
    manifold), ``coverage`` ``[N]`` 0/1 per real (its k_dc-ball holds a fake).
    """
    real_radii_pr = kth_neighbour_distance(real, k_pr, chunk_size)
    fake_radii_pr = kth_neighbour_distance(fake, k_pr, chunk_size)
    real_radii_dc = kth_neighbour_distance(real, k_dc, chunk_size)
    nearest_fake, _ = nearest_neighbour(real, fake, chunk_size)
    return {
        "precision": (balls_containing(fake, real, real_radii_pr, chunk_size) > 0).double(),
        "recall": (balls_containing(real, fake, fake_radii_pr, chunk_size) > 0).double(),
        "density": balls_containing(fake, real, real_radii_dc, chunk_size).double() / k_dc,
        "coverage": (nearest_fake <= real_radii_dc).double(),
    }


def fidelity_diversity(
    real: torch.Tensor,
    fake: torch.Tensor,
    k_pr: int = K_PRECISION_RECALL,
    k_dc: int = K_DENSITY_COVERAGE,
    chunk_size: int = CHUNK_SIZE,
) -> Dict[str, float]:
    """``{"precision", "recall", "density", "coverage"}`` of fake features ``[M, D]`` against real ``[N, D]``."""
    terms = per_sample_scores(real, fake, k_pr, k_dc, chunk_size)
    return {name: float(values.mean()) for name, values in terms.items()}
