"""ProGAN's multi-scale sliced Wasserstein distance (Karras et al. 2018), a yardstick without learned
features: it keeps ranking generators after the domain FID can no longer tell them from real images.

Each image becomes a Laplacian pyramid (levels down to 16 px); from every level a fixed number of
7x7 patches per image is drawn, each patch flattened into a descriptor and normalised per channel;
the descriptors of generated and real images are projected on random unit directions, and per level
the SWD is the mean over directions of the mean absolute difference of the sorted projections
(x 1e3, as ProGAN reports it). The headline value is the average over levels.

Two choices differ from ProGAN, each for cost or for what the number must show:

- Patches are subsampled (:data:`SWD_PATCHES_PER_IMAGE` per image and level, on at most
  :data:`SWD_MAX_IMAGES` images) and the directions are drawn once: an evaluation every few hundred
  steps on a CPU costs a matrix product and a sort per level, the real side (its patches, their
  normalisation, their sorted projections) is computed once (:class:`SWDReference`), and the
  bootstrap reuses the sort (:func:`resampled_sorted`) on fewer directions.
- Both sets are normalised with the real patches' per-channel mean and deviation. ProGAN
  normalises each set by its own, which hides a colour cast or a loss of contrast over the whole
  set: exactly what a generator may get wrong.

Everything is deterministic given the seed: the patch positions and the directions come from
generators seeded here, never from the caller's random streams.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import torch
import torch.nn.functional as F

SWD_PATCH = 7  # patch side, in pixels of its level
SWD_MIN_LEVEL = 16  # the coarsest level's side (smaller images: one level, the image itself)
SWD_PATCHES_PER_IMAGE = 128
SWD_PROJECTIONS = 128
SWD_MAX_IMAGES = 256  # images per side: 32,768 descriptors per level
SWD_SCALE = 1e3
# Directions each bootstrap resample is measured on (the first of them): a resample costs a few
# passes over every projection, 20 resamples 20 times that; the spread of fewer directions holds the
# directions' own noise too, so the interval is wider, never narrower. Its bias correction (the
# resamples' mean against the value) absorbs the different estimator.
SWD_BOOTSTRAP_PROJECTIONS = 32
# The binomial filter of cv2.pyrDown, which ProGAN's pyramid matches.
_BINOMIAL = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0]) / 16.0


def pyramid_sizes(size: int, min_level: int = SWD_MIN_LEVEL) -> List[int]:
    """The side of each pyramid level, finest first: halving while at least ``min_level``; an image
    smaller than that but at least a patch wide is one level; smaller still, none."""
    sizes = []
    while size >= min_level:
        sizes.append(size)
        size //= 2
    if not sizes and size >= SWD_PATCH:
        sizes.append(size)
    return sizes


def _blur(x: torch.Tensor, gain: float = 1.0) -> torch.Tensor:
    """The 5x5 binomial filter, per channel, with mirrored borders (scipy's ``mirror`` mode)."""
    c = x.shape[1]
    kernel = (_BINOMIAL[:, None] * _BINOMIAL[None, :] * gain).to(x)
    x = F.pad(x, (2, 2, 2, 2), mode="reflect")
    return F.conv2d(x, kernel.expand(c, 1, 5, 5), groups=c)


def laplacian_pyramid(images: torch.Tensor, num_levels: int) -> List[torch.Tensor]:
    """``num_levels`` levels of float images ``[N, C, H, W]``, finest first: band-pass differences,
    the last level the low-pass image itself."""
    levels = [images.float()]
    for _ in range(1, num_levels):
        down = _blur(levels[-1])[:, :, ::2, ::2]
        up = torch.zeros(*down.shape[:2], down.shape[2] * 2, down.shape[3] * 2, dtype=down.dtype)
        up[:, :, ::2, ::2] = down
        h, w = levels[-1].shape[2:]
        levels[-1] = levels[-1] - _blur(up, gain=4.0)[:, :, :h, :w]
        levels.append(down)
    return levels


def sample_patches(level: torch.Tensor, per_image: int, generator: torch.Generator) -> torch.Tensor:
    """``per_image`` random 7x7 patches of each image of ``level`` ``[N, C, H, W]`` as
    ``[N, per_image, C, 49]``."""
    n, _, h, w = level.shape
    ys = torch.randint(h - SWD_PATCH + 1, (n, per_image), generator=generator)
    xs = torch.randint(w - SWD_PATCH + 1, (n, per_image), generator=generator)
    offsets = torch.arange(SWD_PATCH)
    rows = (ys[..., None, None] + offsets[:, None]).expand(n, per_image, SWD_PATCH, SWD_PATCH)
    cols = (xs[..., None, None] + offsets[None, :]).expand(n, per_image, SWD_PATCH, SWD_PATCH)
    image = torch.arange(n)[:, None, None, None].expand_as(rows)
    patches = level.permute(0, 2, 3, 1)[image, rows, cols]  # [N, p, 7, 7, C]
    return patches.permute(0, 1, 4, 2, 3).reshape(n, per_image, level.shape[1], SWD_PATCH * SWD_PATCH)


def descriptors(images: torch.Tensor, per_image: int = SWD_PATCHES_PER_IMAGE, seed: int = 0) -> List[torch.Tensor]:
    """Per pyramid level, the patch descriptors ``[N, per_image, C, 49]`` of ``images`` (float
    ``[N, C, H, W]``); the positions come from ``seed``, so equal-size sets get the same ones."""
    generator = torch.Generator().manual_seed(seed)
    levels = laplacian_pyramid(images, len(pyramid_sizes(images.shape[-1])))
    return [sample_patches(level, per_image, generator) for level in levels]


def channel_stats(desc: torch.Tensor):
    """Per-channel mean and deviation ``[C, 1]`` over every patch and pixel of ``desc`` ``[..., C, 49]``."""
    per_channel = desc.movedim(-2, 0).reshape(desc.shape[-2], -1)
    return per_channel.mean(1, keepdim=True), per_channel.std(1, keepdim=True).clamp(min=1e-8)


def normalise(desc: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """``desc`` ``[..., C, 49]`` with each channel standardised, flattened to ``[..., C * 49]``."""
    return ((desc - mean) / std).flatten(-2)


def random_directions(dim: int, count: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` random unit vectors of ``dim`` dimensions as the columns of ``[dim, count]``."""
    directions = torch.randn(dim, count, generator=generator)
    return directions / directions.norm(dim=0, keepdim=True)


def sorted_projections(desc: torch.Tensor, directions: torch.Tensor) -> torch.Tensor:
    """The projections of the descriptors ``[M, D]`` on each direction, sorted: ``[P, M]``."""
    return (desc @ directions).T.sort(dim=1).values


def distance_of_sorted(a: torch.Tensor, b: torch.Tensor) -> float:
    """The sliced Wasserstein-1 distance between sorted projections ``a`` ``[P, N]`` and ``b``
    ``[P, M]``: mean over directions of the mean gap between matching order statistics, x
    :data:`SWD_SCALE`. Unequal counts are compared at the same quantiles of both."""
    if a.shape[1] != b.shape[1]:
        m = min(a.shape[1], b.shape[1])
        a, b = (_at_quantiles(s, m) for s in (a, b))
    return float((a - b).abs().mean()) * SWD_SCALE


def _at_quantiles(sorted_values: torch.Tensor, m: int) -> torch.Tensor:
    n = sorted_values.shape[1]
    idx = ((torch.arange(m, dtype=torch.float64) + 0.5) * n / m).long().clamp(max=n - 1)
    return sorted_values[:, idx]


def resampled_sorted(sorted_values: torch.Tensor, order: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """The sorted projections ``[P, N]`` of a resample that draws value ``i`` ``counts[i]`` times
    (``counts`` ``[N]`` summing to N; ``order``: the original index of each sorted value). Repeating
    each value of a sorted row as often as it was drawn keeps the row sorted, so a bootstrap resample
    costs a cumulative sum and a gather instead of a sort."""
    p, n = sorted_values.shape
    drawn = counts[order]
    start = torch.where(drawn > 0, drawn.cumsum(dim=1) - drawn, n)  # where each drawn value's run starts
    runs = torch.zeros(p, n + 1, dtype=torch.long).scatter_(1, start, torch.arange(n).expand(p, n))
    return sorted_values.gather(1, runs[:, :n].cummax(dim=1).values)


def sliced_wasserstein(a: torch.Tensor, b: torch.Tensor, projections: int = SWD_PROJECTIONS, seed: int = 0) -> float:
    """SWD between two descriptor sets ``[M, D]`` and ``[K, D]`` on ``projections`` directions drawn from ``seed``."""
    directions = random_directions(a.shape[1], projections, torch.Generator().manual_seed(seed))
    return distance_of_sorted(sorted_projections(a, directions), sorted_projections(b, directions))


@dataclass
class SWDScore:
    """One SWD measurement: the average over levels, each level's value (finest first, keyed by
    its side in pixels) and the bootstrap interval of the average (None without resamples)."""

    value: float
    levels: Dict[str, float]
    interval: Optional[List[float]] = None


class SWDReference:
    """The real side of the SWD, computed once: per level the real descriptors' channel statistics,
    the directions and the sorted real projections. :meth:`score` then only describes the other set.

    images:     the real reference images (float ``[N, C, H, W]``, at most ``max_images`` used).
    seed:       the patch positions and the directions.
    max_images: images per side (the reference's and each scored set's); :data:`SWD_MAX_IMAGES`
                in a run, others where a benchmark measures what the size changes.
    """

    def __init__(
        self,
        images: torch.Tensor,
        seed: int = 0,
        per_image: int = SWD_PATCHES_PER_IMAGE,
        projections: int = SWD_PROJECTIONS,
        max_images: int = SWD_MAX_IMAGES,
    ) -> None:
        self.seed = seed
        self.per_image = per_image
        self.max_images = max_images
        self.sizes = pyramid_sizes(images.shape[-1])
        generator = torch.Generator().manual_seed(seed + 1)  # directions apart from the positions
        self.stats, self.directions, self.sorted = [], [], []
        for desc in descriptors(images[:max_images], per_image, seed):
            mean, std = channel_stats(desc)
            self.stats.append((mean, std))
            directions = random_directions(desc.shape[-2] * desc.shape[-1], projections, generator)
            self.directions.append(directions)
            self.sorted.append(sorted_projections(normalise(desc, mean, std).flatten(0, 1), directions))

    def projected(self, images: torch.Tensor) -> List[torch.Tensor]:
        """Per level, the projections ``[N, per_image, P]`` of the other set's descriptors."""
        out = []
        # Another seed than the reference's: the same positions in two sets would pair them.
        levels = descriptors(images[: self.max_images], self.per_image, self.seed + 2)
        for desc, (mean, std), directions in zip(levels, self.stats, self.directions):
            out.append(normalise(desc, mean, std) @ directions)
        return out

    def _levels(self, projected: Sequence, counts: Optional[torch.Tensor] = None) -> List[float]:
        """Per level, the distance of the projections ``(sorted [P, N * p], order)``; ``counts``
        ``[N]``: how often each image was drawn (a bootstrap resample), None: once each."""
        values = []
        for (sorted_values, order), real in zip(projected, self.sorted):
            if counts is not None:
                k = SWD_BOOTSTRAP_PROJECTIONS
                drawn = counts.repeat_interleave(self.per_image)
                sorted_values, real = resampled_sorted(sorted_values[:k], order[:k], drawn), real[:k]
            values.append(distance_of_sorted(sorted_values, real))
        return values

    def score(self, images: torch.Tensor, resamples: int = 0, level: float = 0.95) -> SWDScore:
        """The SWD of ``images`` against the reference, with a bias-corrected bootstrap interval over
        ``resamples`` resamples of the images (whole images: their patches are not independent)."""
        from .bootstrap import bias_corrected_interval

        if not torch.isfinite(images).all():
            return SWDScore(math.nan, {str(s): math.nan for s in self.sizes})
        n = min(len(images), self.max_images)
        projected = [proj.flatten(0, 1).T.sort(dim=1) for proj in self.projected(images)]  # sorted once
        per_level = self._levels(projected)
        value = sum(per_level) / len(per_level)
        interval = None
        if resamples > 0:
            generator = torch.Generator().manual_seed(self.seed + 3)
            draws = []
            for _ in range(resamples):
                counts = torch.bincount(torch.randint(n, (n,), generator=generator), minlength=n)
                levels = self._levels(projected, counts)
                draws.append(sum(levels) / len(levels))
            interval = bias_corrected_interval(draws, value, level, (0.0, math.inf))
        return SWDScore(value, {str(s): v for s, v in zip(self.sizes, per_level)}, interval)
