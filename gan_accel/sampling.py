"""Generating images from a generator: batches, grids and individual PNG files."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch
import torch.nn as nn
from torchvision.utils import make_grid, save_image


def fixed_noise(num_images: int, z_dim: int, seed: int) -> torch.Tensor:
    """The same noise every time for a given seed (on the CPU, so any device shows the same z)."""
    return torch.randn(num_images, z_dim, generator=torch.Generator().manual_seed(seed))


def grid_labels(num_images: int, num_classes: int) -> Optional[torch.Tensor]:
    """Labels for a class-conditional grid of ``num_images`` images (any count, not only a
    multiple of the class count): each class gets ``num_images // num_classes`` images or one
    more, in class order (see :func:`class_rows`)."""
    if not num_classes:
        return None
    return (torch.arange(num_images) % num_classes).sort().values  # class-major: a row per class


def class_rows(images: torch.Tensor, labels: torch.Tensor, num_classes: int):
    """Arrange a conditional grid a row per class: ``(images, nrow)`` for ``make_grid``, rows
    shorter than the longest padded with black tiles (the grid's own padding colour)."""
    counts = torch.bincount(labels, minlength=num_classes)
    ncol = int(counts.max())
    rows = []
    for c in range(num_classes):
        row = images[labels == c]
        if len(row):
            rows += [row, images.new_full((ncol - len(row), *images.shape[1:]), -1.0)]
    return torch.cat(rows), ncol


@torch.no_grad()
def generate_images(G: nn.Module, num_images: int, batch_size: int = 256, seed: int = 0,
                    labels: Optional[torch.Tensor] = None, device=None) -> torch.Tensor:
    """``num_images`` images from G (eval mode) as a float CPU tensor in [-1, 1].

    Unconditional G ignores ``labels``; a conditional G without labels gets uniformly drawn ones.
    """
    device = device or next(G.parameters()).device
    z = fixed_noise(num_images, G.z_dim, seed)
    num_classes = getattr(G, "num_classes", 0)
    if num_classes and labels is None:
        labels = torch.randint(0, num_classes, (num_images,), generator=torch.Generator().manual_seed(seed + 1))
    was_training = G.training
    G.eval()
    out = []
    for start in range(0, num_images, batch_size):
        zb = z[start : start + batch_size].to(device)
        yb = labels[start : start + batch_size].to(device) if num_classes else None
        out.append(G(zb, yb).float().clamp_(-1, 1).cpu())
    G.train(was_training)
    return torch.cat(out) if out else torch.empty(0)


def save_grid(images: torch.Tensor, path: Path, nrow: int = 8) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_image(make_grid(images, nrow=nrow, normalize=True, value_range=(-1, 1), padding=2), str(path))
    return path


def save_individual(images: torch.Tensor, folder: Path, start: int = 0) -> int:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for i, img in enumerate(images):
        save_image(img, str(folder / f"{start + i:06d}.png"), normalize=True, value_range=(-1, 1))
    return len(images)
