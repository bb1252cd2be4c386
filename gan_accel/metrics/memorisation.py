"""Memorisation check: does the generator copy its training images?

Rule (the copy rate): a generated image counts as a copy when it is closer to its nearest
training image than 95% of the real held-out images are to theirs, i.e. its nearest-neighbour
distance is below the 5th percentile (``COPY_PERCENTILE``) of the held-out images' nearest
training distances. Held-out images are real but were never trained on, so they show how close a
fresh image of the data typically falls to the training set. A generator that draws fresh images
scores about 5%; the check is flagged when the copy rate exceeds ``COPY_FLAG_FACTOR`` (3) times
that, 15%, in either space:

- feature space (the FID features): near-copies that differ by small shifts or noise;
- pixel space (L2 on the [-1, 1] images): exact or almost exact copies.

The same training images serve as the reference for held-out and generated images (the FID
reference, at most ``max_reference_images``), so both distances are measured alike.
"""

from __future__ import annotations

from typing import Dict, Tuple

import torch

from .fidelity import k_nearest

COPY_PERCENTILE = 5.0
COPY_FLAG_FACTOR = 3.0
SPACES = ("features", "pixels")


def copy_rate(
    generated_distances: torch.Tensor, heldout_distances: torch.Tensor, percentile: float = COPY_PERCENTILE
) -> Tuple[float, float]:
    """``(rate, threshold)``: the share of generated nearest-training distances below the
    ``percentile``-th percentile of the held-out ones, and that percentile."""
    threshold = float(torch.quantile(heldout_distances.double(), percentile / 100.0))
    return float((generated_distances.double() < threshold).double().mean()), threshold


def memorisation_report(
    spaces: Dict[str, Tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    neighbours: int = 3,
    percentile: float = COPY_PERCENTILE,
) -> Tuple[Dict[str, object], Dict[str, torch.Tensor]]:
    """The copy rate in each space and the generated images' nearest training images.

    spaces: ``{"features": (train [N, D], heldout [H, D], generated [M, D]), "pixels": (...)}``
    (pixels flattened to vectors). Returns ``(report, nearest)``: ``report`` is JSON-ready
    (``copy_rate_<space>``, ``threshold_<space>``, ``copying`` and the rule), ``nearest`` maps each
    space to the ``[M, neighbours]`` training indices, nearest first, plus ``"order"``: the
    generated images sorted by feature distance relative to the threshold, closest first.
    """
    report: Dict[str, object] = {
        "rule": f"copy: nearest training distance below the {percentile:g}th percentile of "
        f"held-out real images' nearest training distances; flagged above "
        f"{COPY_FLAG_FACTOR:g} x {percentile:g}%",
        "percentile": percentile,
    }
    nearest: Dict[str, torch.Tensor] = {}
    ratios = []
    for space, (train, heldout, generated) in spaces.items():
        heldout_distances = k_nearest(heldout, train, 1)[0][:, 0]
        distances, indices = k_nearest(generated, train, neighbours)
        rate, threshold = copy_rate(distances[:, 0], heldout_distances, percentile)
        report[f"copy_rate_{space}"] = rate
        report[f"threshold_{space}"] = threshold
        nearest[space] = indices.cpu()
        ratios.append(distances[:, 0].double().cpu() / max(threshold, 1e-12))
    flag_at = COPY_FLAG_FACTOR * percentile / 100.0
    report["copying"] = any(report[f"copy_rate_{space}"] > flag_at for space in spaces)
    # The most suspicious first: smallest distance relative to the held-out threshold, in any space.
    nearest["order"] = torch.stack(ratios).min(dim=0).values.argsort()
    return report, nearest


def nearest_grid(
    generated: torch.Tensor, train: torch.Tensor, nearest: Dict[str, torch.Tensor], rows: int
) -> torch.Tensor:
    """An image grid, one row per generated image (the ``rows`` most suspicious): the image, then
    its nearest training images in feature space, then in pixel space. Float [0, 1] ``[C, H, W]``."""
    from torchvision.utils import make_grid  # on use, as in gan_accel.sampling.save_grid

    tiles = []
    for i in nearest["order"][:rows].tolist():
        tiles.append(generated[i])
        for space in SPACES:
            tiles.extend(train[j] for j in nearest[space][i].tolist())
    per_row = 1 + sum(nearest[space].shape[1] for space in SPACES)
    grid = make_grid(
        torch.stack(tiles).float(), nrow=per_row, padding=2, pad_value=1.0, normalize=True, value_range=(-1.0, 1.0)
    )
    return grid


@torch.no_grad()
def check_memorisation(
    evaluator, G: torch.nn.Module, rows: int = 16, neighbours: int = 3, percentile: float = COPY_PERCENTILE
) -> Tuple[Dict[str, object], torch.Tensor]:
    """``(report, grid)`` for generator ``G`` against a :class:`~gan_accel.metrics.GANEvaluator`'s
    data: its FID reference images are the training side, its held-out split the real yardstick,
    and the generated images are those its evaluation scores (same seed)."""
    from ..data import to_float_images

    generated = evaluator.generated_images(G)
    train = to_float_images(evaluator.real.images[evaluator.reference_idx])
    heldout = to_float_images(evaluator.real.images[evaluator.heldout_idx])
    spaces = {
        # The reference features FID/KID already hold, in reference order: no second pass.
        "features": (
            evaluator.distance.reference_features(),
            evaluator.features_of(heldout),
            evaluator.features_of(generated),
        ),
        "pixels": (train.flatten(1), heldout.flatten(1), generated.flatten(1)),
    }
    report, nearest = memorisation_report(spaces, neighbours, percentile)
    report.update(num_generated=generated.shape[0], num_train=train.shape[0], num_heldout=heldout.shape[0])
    return report, nearest_grid(generated, train, nearest, rows)
