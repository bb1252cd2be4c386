"""The real-vs-real interval: how far the real-data floor moves from one draw of real images to another.

The floor compares ``n`` real training images with ``n`` held-out ones. Its interval is the spread of
that same comparison over :data:`REAL_DRAWS` draws, each ``n`` random training images against ``n``
random held-out images: two disjoint sets (the split keeps the parts apart) with no image twice in a
set, measured in the same features (FID, KID) and, for the SWD, by its own estimator on every
direction. The interval is the central :data:`REAL_DRAW_LEVEL` of the draws (the 2.5% and 97.5%
quantiles, linearly interpolated: with 20 draws, between the lowest two and the highest two),
widened to hold the floor itself, which is one more draw of the same kind.

It replaces a bootstrap of the held-out images. Resampling with replacement repeats about a third of
the images; repeats inflate FID and SWD and their spread, so its top lay near twice the floor and a
15-minute photo run read "saturated" on every metric from its first evaluation on. Draws without
repeats measure what two sets of real images score against each other.

What is compared with the interval must be measured at the same size ``n`` (``fid_at_floor_size``,
``kid_at_floor_size_mean``, ``swd``): FID and KID are biased upwards at small sizes, so a full-size
value would look better than the floor from its sample size alone.

Each draw reuses features computed once: the training side comes from the reference's features, the
held-out side is extracted once per evaluator, and the result is cached with the floor.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Tuple

import torch

from .bootstrap import frechet_distance, kernel_distance, mean_and_covariance, percentile_interval
from .swd import SWD_MAX_IMAGES, SWDReference

# Draws behind each real-vs-real interval: each costs one FID, a few KID subsets and two SWD sides
# (once per evaluator, then cached); with 20 the 95% ends lie between the two lowest and between the
# two highest draws.
REAL_DRAWS = 20
REAL_DRAW_LEVEL = 0.95
# KID subsets per draw, each of the compared value's subset size: fewer than the 50 the compared value
# averages (each costs three kernel matrices), so the draws hold a little more estimator noise and
# the interval is, if anything, a little wider than the real images' own spread.
REAL_DRAW_KID_SUBSETS = 4


def disjoint_draws(
    num_train: int, num_heldout: int, n: int, draws: int, seed: int
) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    """``draws`` pairs ``(train rows, held-out rows)`` of ``min(n, pool)`` distinct rows each, from
    their own generator (the caller's random stream does not move)."""
    generator = torch.Generator().manual_seed(seed)
    return [
        (
            torch.randperm(num_train, generator=generator)[:n],
            torch.randperm(num_heldout, generator=generator)[:n],
        )
        for _ in range(draws)
    ]


def draw_interval(values: List[float], floor: float, level: float = REAL_DRAW_LEVEL) -> List[float]:
    """The central ``level`` share of the draws, widened to hold ``floor`` (when finite)."""
    low, high = percentile_interval(values, level)
    if math.isfinite(floor):
        low, high = min(low, floor), max(high, floor)
    return [low, high]


def feature_intervals(
    train: torch.Tensor,
    heldout: torch.Tensor,
    n: int,
    floor: Dict[str, float],
    kid_subset_size: int,
    draws: int = REAL_DRAWS,
    seed: int = 0,
) -> Dict[str, List[float]]:
    """``{"fid": [low, high], "kid": [low, high]}`` over ``draws`` draws of ``n`` training features
    (``train`` ``[N, D]``, the FID reference's side) against ``n`` held-out ones (``heldout`` ``[M, D]``).
    ``floor``: ``{"fid", "kid"}``, each interval holds its own."""
    train, heldout = train.double().cpu(), heldout.double().cpu()
    generator = torch.Generator().manual_seed(seed + 1)  # KID's subsets, apart from the draws
    values: Dict[str, List[float]] = {"fid": [], "kid": []}
    for a, b in disjoint_draws(len(train), len(heldout), n, draws, seed):
        real, other = train[a], heldout[b]
        values["fid"].append(frechet_distance(mean_and_covariance(real), other))
        values["kid"].append(kernel_distance(real, other, kid_subset_size, REAL_DRAW_KID_SUBSETS, generator))
    return {name: draw_interval(v, floor[name]) for name, v in values.items()}


def swd_interval(
    load: Callable[[torch.Tensor], torch.Tensor],
    train_idx: torch.Tensor,
    heldout_idx: torch.Tensor,
    n: int,
    floor: float,
    draws: int = REAL_DRAWS,
    seed: int = 0,
) -> List[float]:
    """The SWD's ``[low, high]`` over ``draws`` draws of ``n`` training images (at most
    :data:`SWD_MAX_IMAGES`: the size a generated set is compared at) against ``n`` held-out ones, each
    by :class:`SWDReference` with its seed and every direction. ``load``: rows of the real images ->
    float images ``[k, C, H, W]``."""
    n = min(n, SWD_MAX_IMAGES)
    values = [
        SWDReference(load(train_idx[a]), seed).score(load(heldout_idx[b])).value
        for a, b in disjoint_draws(len(train_idx), len(heldout_idx), n, draws, seed)
    ]
    return draw_interval(values, floor)
