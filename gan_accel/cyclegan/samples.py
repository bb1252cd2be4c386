"""Sample grids of a translation run: for each fixed input, ``real | translated | reconstructed``
for domain A then domain B on one row (six columns)."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn as nn

from ..data import to_float_images
from ..sampling import save_grid
from .data import random_crop_flip

COLUMNS = ("real_A", "fake_B", "rec_A", "real_B", "fake_A", "rec_B")


def fixed_inputs(images_u8: torch.Tensor, num: int, image_size: int, seed: int) -> torch.Tensor:
    """``num`` images picked once by ``seed``, centre-cropped to ``image_size``: float [-1, 1], CPU."""
    idx = torch.randperm(images_u8.shape[0], generator=torch.Generator().manual_seed(seed))[:num]
    centre = torch.full((len(idx), 3), 0.5)
    return random_crop_flip(to_float_images(images_u8[idx]), image_size, centre, flip=False)


@torch.no_grad()
def translation_rows(G_AB: nn.Module, G_BA: nn.Module, real_a: torch.Tensor, real_b: torch.Tensor) -> torch.Tensor:
    """``[rows * 6, C, H, W]`` in the order of :data:`COLUMNS` (rows: the shorter input's length)."""
    fake_b = G_AB(real_a)
    fake_a = G_BA(real_b)
    rec_a = G_BA(fake_b)
    rec_b = G_AB(fake_a)
    n = min(len(real_a), len(real_b))
    columns = [real_a, fake_b, rec_a, real_b, fake_a, rec_b]
    return torch.stack([c[:n].float().cpu() for c in columns], dim=1).flatten(0, 1)


def save_translation_grid(
    G_AB: nn.Module, G_BA: nn.Module, real_a: torch.Tensor, real_b: torch.Tensor, path: Path
) -> Path:
    """The grid of :func:`translation_rows` (generators in eval mode for the call)."""
    modes = [G_AB.training, G_BA.training]
    G_AB.eval(), G_BA.eval()
    try:
        images = translation_rows(G_AB, G_BA, real_a, real_b)
    finally:
        G_AB.train(modes[0]), G_BA.train(modes[1])
    return save_grid(images, path, nrow=len(COLUMNS))
