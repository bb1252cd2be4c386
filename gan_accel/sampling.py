"""Generating images from a generator: batches, grids and individual PNG files."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch
import torch.nn as nn

from . import interrupt


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
def generate_images(
    G: nn.Module,
    num_images: int,
    batch_size: int = 256,
    seed: int = 0,
    labels: Optional[torch.Tensor] = None,
    device=None,
) -> torch.Tensor:
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
    """One PNG of ``images`` (``[N, C, H, W]`` in [-1, 1], any device), ``nrow`` images per row
    in the order given (row-major), 2-pixel black borders; the folder is created. Written under a
    temporary name and renamed: a reader, or a run killed mid-write, sees the previous grid or the
    new one, never half of one. Call it on the main process (from a hook: ``if
    self.accelerator.is_main_process``), with an unwrapped network (``engine.module(name)``)."""
    path = Path(path)
    # torchvision imported on use: with it comes torch._dynamo (~2 s on a 2-core CPU), which `--help` and error exits do not need
    from torchvision.utils import make_grid, save_image

    from .loop.atomic import atomic_file

    path.parent.mkdir(parents=True, exist_ok=True)
    grid = make_grid(images.detach().float().cpu(), nrow=nrow, normalize=True, value_range=(-1, 1), padding=2)
    with atomic_file(path, "image grid") as tmp:  # same suffix: save_image picks the format from it
        save_image(grid, str(tmp))
    return path


def save_individual(images: torch.Tensor, folder: Path, start: int = 0) -> int:
    folder = Path(folder)
    from torchvision.utils import save_image  # on use, as in save_grid

    from .loop.atomic import atomic_file

    folder.mkdir(parents=True, exist_ok=True)
    for i, img in enumerate(images):
        with interrupt.deferred():  # a signal lands between two files, not inside one
            with atomic_file(folder / f"{start + i:06d}.png", "image") as tmp:
                save_image(img, str(tmp), normalize=True, value_range=(-1, 1))
            interrupt.phase("write")
    return len(images)


# ---- inspection: per-image seeds, truncation, interpolation (scripts/sample_gan.py) -----------
TRUNCATION_MODES = ("interpolate", "resample")


def seed_latent(seed: int, z_dim: int, truncation: float = 1.0, mode: str = "interpolate") -> torch.Tensor:
    """``[z_dim]`` noise drawn from its own seed, so any one image can be regenerated from its
    seed alone (a batch drawn from one seed would tie an image to its position in the batch).

    Truncation trick (Brock et al. 2019, Karras et al. 2019): ``interpolate`` moves z toward the
    mean latent, ``psi * z`` (the mean of N(0, I) is 0; psi=0 gives the mean image, psi=1 plain
    sampling); ``resample`` redraws every entry with ``|z| > truncation`` (BigGAN's threshold),
    from the same seeded generator, so the result is still a function of the seed."""
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(z_dim, generator=gen)
    if mode == "interpolate":
        return z * truncation
    if mode != "resample":
        raise ValueError(f"unknown truncation mode {mode!r}; one of {TRUNCATION_MODES}")
    if truncation <= 0:
        raise ValueError("resample truncation needs a threshold > 0")
    outside = z.abs() > truncation
    while bool(outside.any()):  # P(|z| > t) < 1 for every t > 0: each round shrinks the set
        z[outside] = torch.randn(int(outside.sum()), generator=gen)
        outside = z.abs() > truncation
    return z


def seed_label(seed: int, num_classes: int) -> int:
    """The class an image gets when no ``--class_label`` is given: a function of its seed (so the
    seed alone regenerates it), spread evenly over consecutive seeds."""
    return seed % num_classes


def slerp(a: torch.Tensor, b: torch.Tensor, t: float) -> torch.Tensor:
    """Spherical interpolation for Gaussian latents: the direction moves along the great circle
    from ``a`` to ``b`` and the norm linearly between theirs. A straight line (lerp) passes through
    latents of abnormally small norm (|z| of N(0, I) concentrates near sqrt(z_dim); the midpoint
    of two independent draws has about 1/sqrt(2) of it), which the generator never saw."""
    norm_a = a.norm()
    norm_b = b.norm()
    unit_a = a / norm_a
    unit_b = b / norm_b
    cos = (unit_a * unit_b).sum().clamp(-1.0, 1.0)
    omega = torch.arccos(cos)
    if float(omega) < 1e-6:  # (anti)parallel within float precision: sin(omega) would divide by ~0
        direction = unit_a * (1 - t) + unit_b * t
        direction = direction / direction.norm()
    else:
        direction = (torch.sin((1 - t) * omega) * unit_a + torch.sin(t * omega) * unit_b) / torch.sin(omega)
    return direction * ((1 - t) * norm_a + t * norm_b)


def interpolation_paths(latents: torch.Tensor, steps: int) -> torch.Tensor:
    """``[n, steps, z_dim]``: a path of ``steps`` slerp points (both ends included) from each
    latent to the next one, the last to the first (so the animation loops)."""
    ts = [i / (steps - 1) for i in range(steps)] if steps > 1 else [0.0]
    n = len(latents)
    return torch.stack([torch.stack([slerp(latents[k], latents[(k + 1) % n], t) for t in ts]) for k in range(n)])


@torch.no_grad()
def generate_from_latents(
    G: nn.Module, z: torch.Tensor, labels: Optional[torch.Tensor], batch_size: int = 256
) -> torch.Tensor:
    """Images in [-1, 1] (float, CPU) for given latents and labels (``None`` if unconditional)."""
    device = next(G.parameters()).device
    out = []
    for start in range(0, len(z), batch_size):
        yb = labels[start : start + batch_size].to(device) if labels is not None else None
        out.append(G(z[start : start + batch_size].to(device), yb).float().clamp_(-1, 1).cpu())
    return torch.cat(out) if out else torch.empty(0)


def save_gif(frames: list, path: Path, duration_ms: int = 80) -> Path:
    """An animated GIF that loops forever from a list of ``[C, H, W]`` tensors in [-1, 1]."""
    from PIL import Image

    from .loop.atomic import atomic_file

    pictures = []
    for frame in frames:
        array = ((frame.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).permute(1, 2, 0).numpy()
        pictures.append(Image.fromarray(array[:, :, 0] if array.shape[2] == 1 else array))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, "animation") as tmp:
        pictures[0].save(tmp, save_all=True, append_images=pictures[1:], duration=duration_ms, loop=0)
    return path
