"""The panel's yardstick without learned features: colour and texture statistics (docs/photos.md, "The panel").

Each image becomes a descriptor of 90 numbers, none of them learned:

- colour: the mean, spread and skew of L*, a*, b* (CIE Lab, where equal steps look about equal)
  and an 8-bin histogram of each;
- edges: at 3 scales (the image, and averaged down 2x and 4x), an 8-bin histogram of gradient
  orientations weighted by magnitude, and the mean magnitude;
- texture: at the same 3 scales, the rotation-invariant uniform local binary patterns of L*
  (8 neighbours at radius 1: 9 uniform codes and 1 bin for the rest).

The distance is the Fréchet distance between the descriptors of two image sets, after mapping
each dimension through the real reference's ranks to a standard normal (:class:`RankGaussian`), so
that a histogram bin counts as much as a mean and no single image can move the figure far.
A generator that drew fresh real images would score the real-vs-real floor; blur moves the edge
and texture bins, shuffled pixels keep the colour and lose every edge.

Why ranks and not the reference's mean and deviation (panel version 1): several descriptors are
bins real crops almost never fill (a saturated blue, a saturated green). Divided by their tiny real
deviation, the few generated images that put pixels there sat 80-220 deviations out and drove the
covariance: the same generator scored 42 to 130 x floor on three draws of its noise. Through the
ranks, an image beyond every real one sits at the last rank (about 3.5 deviations for 4,000 real
crops): a generator that does it often still moves the mean far, one image does not.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from benchmarks.common import FrechetYardstick

SCALES = (1, 2, 4)  # average-pool factors of the edge and texture statistics
COLOUR_BINS = 8
ORIENTATION_BINS = 8
LBP_BINS = 10  # riu2 codes 0..8, and every non-uniform pattern


def srgb_to_lab(rgb: torch.Tensor) -> torch.Tensor:
    """``[B, 3, H, W]`` sRGB in [0, 1] -> CIE Lab (D65), L in [0, 100], a and b about [-100, 100]."""
    linear = torch.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    to_xyz = torch.tensor(
        [[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]], dtype=rgb.dtype
    )
    xyz = torch.einsum("ij,bjhw->bihw", to_xyz, linear)
    white = torch.tensor([0.95047, 1.0, 1.08883], dtype=rgb.dtype).view(1, 3, 1, 1)
    t = xyz / white
    f = torch.where(t > (6 / 29) ** 3, t.clamp(min=1e-12) ** (1 / 3), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return torch.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], 1)


def histogram(values: torch.Tensor, low: float, high: float, bins: int, weights=None) -> torch.Tensor:
    """Per-row histogram ``[B, bins]`` of ``values [B, N]`` over [low, high], normalised to sum 1."""
    index = ((values - low) / (high - low) * bins).long().clamp(0, bins - 1)
    weights = torch.ones_like(values) if weights is None else weights
    out = torch.zeros(values.shape[0], bins, dtype=values.dtype).scatter_add_(1, index, weights)
    return out / out.sum(1, keepdim=True).clamp(min=1e-12)


def colour_statistics(lab: torch.Tensor) -> torch.Tensor:
    """Mean, spread, skew and an 8-bin histogram of each Lab channel: ``[B, 33]``."""
    flat = lab.flatten(2)
    mean = flat.mean(2)
    std = flat.std(2, unbiased=False)
    skew = ((flat - mean[..., None]) ** 3).mean(2) / std.clamp(min=1e-3) ** 3
    ranges = ((0.0, 100.0), (-60.0, 60.0), (-60.0, 60.0))
    hists = [histogram(flat[:, c], *ranges[c], COLOUR_BINS) for c in range(3)]
    return torch.cat([mean / 50, std / 25, skew, *hists], 1)


def edge_statistics(lightness: torch.Tensor) -> torch.Tensor:
    """Orientation histogram (weighted by magnitude, orientation mod pi) and mean magnitude: ``[B, 9]``."""
    sobel = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], dtype=lightness.dtype)
    kernels = torch.stack([sobel, sobel.T])[:, None]
    grad = F.conv2d(F.pad(lightness, (1, 1, 1, 1), mode="replicate"), kernels)
    magnitude = grad.pow(2).sum(1).sqrt().flatten(1)
    angle = torch.atan2(grad[:, 1], grad[:, 0]).flatten(1) % math.pi
    return torch.cat(
        [histogram(angle, 0.0, math.pi, ORIENTATION_BINS, magnitude), magnitude.mean(1, keepdim=True) / 100], 1
    )


def lbp_histogram(lightness: torch.Tensor) -> torch.Tensor:
    """Rotation-invariant uniform LBP (P=8, R=1) histogram of ``[B, 1, H, W]``: ``[B, 10]``."""
    padded = F.pad(lightness, (1, 1, 1, 1), mode="replicate")
    h, w = lightness.shape[-2:]
    ring = [(0, 0), (0, 1), (0, 2), (1, 2), (2, 2), (2, 1), (2, 0), (1, 0)]  # clockwise neighbours
    bits = torch.stack([(padded[:, 0, r : r + h, c : c + w] >= lightness[:, 0]).to(lightness.dtype) for r, c in ring])
    ones = bits.sum(0)
    transitions = (bits - bits.roll(1, 0)).abs().sum(0)
    code = torch.where(transitions <= 2, ones, torch.full_like(ones, LBP_BINS - 1))
    return histogram(code.flatten(1), 0.0, float(LBP_BINS), LBP_BINS)


@torch.no_grad()
def descriptors(images: torch.Tensor) -> torch.Tensor:
    """float images in [-1, 1] ``[B, C, H, W]`` (C 1 or 3) -> float64 ``[B, 90]``."""
    rgb = ((images.double() + 1) / 2).clamp(0, 1)
    if rgb.shape[1] == 1:
        rgb = rgb.expand(-1, 3, -1, -1)
    lab = srgb_to_lab(rgb)
    parts = [colour_statistics(lab)]
    for scale in SCALES:
        lightness = F.avg_pool2d(lab[:, :1], scale) if scale > 1 else lab[:, :1]
        parts += [edge_statistics(lightness), lbp_histogram(lightness)]
    return torch.cat(parts, 1)


class RankGaussian:
    """Each dimension of a descriptor mapped through the ranks of a reference set to a standard
    normal: a value's mid-rank among the reference's ``n`` values (ties share one) becomes the
    quantile ``(rank + 1/2) / (n + 1)`` of the normal. Values below or above every reference value
    land at the first or the last rank, so the output is bounded by about ``Phi^-1(1 - 1/(2n))``."""

    def __init__(self, reference: torch.Tensor) -> None:
        self.sorted = reference.double().sort(0).values.T.contiguous()  # [D, n]
        self.n = reference.shape[0]

    def __call__(self, values: torch.Tensor) -> torch.Tensor:
        rows = values.double().T.contiguous()  # [D, B]: searchsorted runs along the last dimension
        below = torch.searchsorted(self.sorted, rows, right=False)
        at_most = torch.searchsorted(self.sorted, rows, right=True)
        quantile = ((below + at_most).double() / 2 + 0.5) / (self.n + 1)
        return (math.sqrt(2) * torch.erfinv(2 * quantile - 1)).T


class ColourTexture(FrechetYardstick):
    """The yardstick: Fréchet distance of rank-normalised descriptors against a fixed real reference."""

    name = "colour_texture"
    label = "colour+texture FD"

    def __init__(self, reference: torch.Tensor, floor_images: torch.Tensor) -> None:
        self.ranks = RankGaussian(torch.cat([descriptors(chunk) for chunk in reference.split(250)]))
        self.set_reference(reference, floor_images)

    def features(self, images: torch.Tensor) -> torch.Tensor:
        return self.ranks(torch.cat([descriptors(chunk) for chunk in images.split(250)]))
