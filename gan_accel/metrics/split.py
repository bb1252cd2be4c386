"""The fixed split of the real images into a training part and a held-out part.

The domain classifier trains on the training part and reports its accuracy on the held-out
part; the FID reference statistics come from the training part; the real-data floor compares a
training subset with held-out images. The split uses its own seed (not the evaluation seed), so
every evaluation of a dataset shares one classifier and one cache.
"""

from __future__ import annotations

from typing import Tuple

import torch

SPLIT_SEED = 0


def split_indices(n: int, heldout_fraction: float = 0.2, seed: int = SPLIT_SEED) -> Tuple[torch.Tensor, torch.Tensor]:
    """Random ``(train_idx, heldout_idx)`` over ``range(n)``; both are non-empty."""
    if not 0.0 < heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction must be in (0, 1); got {heldout_fraction}")
    if n < 4:
        raise ValueError(f"need at least 4 real images to split into training and held-out parts; got {n}")
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    n_heldout = min(n - 2, max(2, round(n * heldout_fraction)))
    return perm[n_heldout:], perm[:n_heldout]
