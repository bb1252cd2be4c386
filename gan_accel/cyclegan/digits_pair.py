"""An offline unpaired pair for the demo and the tests, made from scikit-learn's 1,797 digits.

Domain A: the digits as the GAN path shows them (white strokes on black). Domain B: thick black
strokes on white paper (each image's strokes dilated with a 3x3 maximum, then inverted). Going
from A to B needs a spatial operation (dilation) and an intensity one (inversion), and back an
erosion: a translation, not a per-pixel lookup.

A and B come from DISJOINT halves of the images (a fixed seeded split), so no digit appears in
both domains and no pair is ever seen. Labels are kept for evaluation (class preservation).
"""
from __future__ import annotations

from typing import Tuple

import torch
import torch.nn.functional as F

from ..data import ImageData, load_image_data

SPLIT_SEED = 1234


def thick_inverted(images_u8: torch.Tensor, dilation: int = 1) -> torch.Tensor:
    """uint8 ``[N, C, S, S]`` white-on-black -> thicker black-on-white (``dilation`` 3x3 maxima)."""
    x = images_u8.float()
    for _ in range(dilation):
        x = F.max_pool2d(x, kernel_size=3, stride=1, padding=1)
    return (255.0 - x).round().clamp(0, 255).to(torch.uint8)


def digits_pair(image_size: int, channels: int) -> Tuple[ImageData, ImageData]:
    """``(A, B)``: about 898 and 899 images of the same classes, drawn from disjoint halves."""
    digits = load_image_data("digits", image_size=image_size, channels=channels)
    perm = torch.randperm(len(digits), generator=torch.Generator().manual_seed(SPLIT_SEED))
    half_a, half_b = perm[: len(perm) // 2].sort().values, perm[len(perm) // 2 :].sort().values
    # The dilation is scaled with the image so the strokes thicken alike at 32, 64 or 128 px (16 px: one step too).
    dilation = max(1, image_size // 32)
    names = digits.class_names
    a = ImageData(digits.images[half_a], digits.labels[half_a], names, name="digits_A")
    b = ImageData(thick_inverted(digits.images[half_b], dilation), digits.labels[half_b], names, name="digits_B")
    return a, b
