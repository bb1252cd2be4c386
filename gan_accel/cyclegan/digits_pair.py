"""An offline unpaired pair for the demo and the tests, made from scikit-learn's 1,797 digits.

Domain A: the digits as the GAN path shows them (thin white strokes on black). Domain B: thick
strokes (each image dilated with a 3x3 maximum filter). Going from A to B is a spatial operation
(dilation) and back an erosion that must keep the digit: a translation, not a per-pixel lookup.

Why not also invert B (black ink on white, the first design): with the polarity flipped, the
cycle loss was as happy with a generator that maps every 4 to a plausible 9 and back, and
measured class preservation was 0.03 after 560 updates (docs/cyclegan.md).

A and B come from DISJOINT halves of the images (a fixed seeded split), so no digit appears in
both domains and no pair is ever seen. Labels are kept for evaluation (class preservation).
"""

from __future__ import annotations

from typing import Tuple

import torch
import torch.nn.functional as F

from ..data import ImageData, load_image_data

SPLIT_SEED = 1234


def thick_strokes(images_u8: torch.Tensor, dilation: int = 1) -> torch.Tensor:
    """uint8 ``[N, C, S, S]`` -> the same digits with thicker strokes (``dilation`` 3x3 maxima)."""
    x = images_u8
    for _ in range(dilation):
        x = F.max_pool2d(x.float(), kernel_size=3, stride=1, padding=1)
    return x.round().clamp(0, 255).to(torch.uint8)


def digits_pair(image_size: int, channels: int) -> Tuple[ImageData, ImageData]:
    """``(A, B)``: about 898 and 899 images of the same classes, drawn from disjoint halves."""
    digits = load_image_data("digits", image_size=image_size, channels=channels)
    perm = torch.randperm(len(digits), generator=torch.Generator().manual_seed(SPLIT_SEED))
    half_a = perm[: len(perm) // 2].sort().values
    half_b = perm[len(perm) // 2 :].sort().values
    # The dilation is scaled with the image so the strokes thicken alike at 32, 64 or 128 px (16 px: one step too).
    dilation = max(1, image_size // 32)
    names = digits.class_names
    a = ImageData(digits.images[half_a], digits.labels[half_a], names, name="digits_A")
    b = ImageData(thick_strokes(digits.images[half_b], dilation), digits.labels[half_b], names, name="digits_B")
    return a, b
