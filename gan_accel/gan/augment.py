"""DiffAugment (Zhao et al. 2020): differentiable augmentations applied to every image D sees.

D overfits a small dataset (digits has 1,797 images) within a few thousand steps; augmenting only
the real images would teach G to produce augmented images. DiffAugment applies the same family
of transforms to real AND fake inputs of D, in the D step and in the G step, and every transform
is differentiable in the pixels, so G's gradient flows back through it.

All randomness comes from the ``generator`` argument: the same generator state gives the same
transform. The recipe seeds one per micro-step (``RandomStreams.generator("augment", step)``) and
re-seeds it for each call, so the real and the fake batch of a step get the same random parameters
(sample ``i`` of each is shifted/cut/recoloured alike), and a resumed run draws what the
uninterrupted run drew.

Images are ``[B, C, H, W]`` in [-1, 1].
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

POLICIES = ("color", "translation", "cutout")
TRANSLATION_RATIO = 0.125  # shift of up to 1/8 of the side, as in the paper
CUTOUT_RATIO = 0.5  # a square of half the side is zeroed

Augment = Callable[[torch.Tensor], torch.Tensor]


def parse_policy(policy: str) -> Tuple[str, ...]:
    """``"translation,cutout,color"`` -> ``("translation", "cutout", "color")``; '' -> ()."""
    names = tuple(p.strip() for p in policy.split(",") if p.strip())
    unknown = [p for p in names if p not in POLICIES]
    if unknown:
        raise ValueError(
            f"unknown DiffAugment policy {', '.join(unknown)}; use a comma-separated subset of {', '.join(POLICIES)}"
        )
    return names


def _rand(x: torch.Tensor, generator: torch.Generator, *shape: int) -> torch.Tensor:
    # Drawn on the generator's device, then moved: the draws do not depend on x's dtype/device.
    return torch.rand(x.shape[0], *shape, generator=generator, device=generator.device).to(x.device, x.dtype)


def _randint(x: torch.Tensor, generator: torch.Generator, low: int, high: int, *shape: int) -> torch.Tensor:
    return torch.randint(low, high, (x.shape[0], *shape), generator=generator, device=generator.device).to(x.device)


def color(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Random brightness (+[-0.5, 0.5]), saturation (x[0, 2]) and contrast (x[0.5, 1.5]) per image."""
    x = x + (_rand(x, generator, 1, 1, 1) - 0.5)
    mean = x.mean(dim=1, keepdim=True)  # grey images: saturation is the identity
    x = (x - mean) * (_rand(x, generator, 1, 1, 1) * 2) + mean
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    return (x - mean) * (_rand(x, generator, 1, 1, 1) + 0.5) + mean


def translation(x: torch.Tensor, generator: torch.Generator, ratio: float = TRANSLATION_RATIO) -> torch.Tensor:
    """Shift each image by whole pixels in [-s, s] (s = ratio * side), filling with zeros (mid-grey)."""
    B, _, H, W = x.shape
    sh = int(H * ratio + 0.5)
    sw = int(W * ratio + 0.5)
    shift_y = _randint(x, generator, -sh, sh + 1)
    shift_x = _randint(x, generator, -sw, sw + 1)
    # Gather from a zero-padded copy: output (i, j) reads input (i - dy, j - dx). Indexing is
    # differentiable in x (the indices are constants).
    padded = F.pad(x, [sw, sw, sh, sh])
    rows = torch.arange(H, device=x.device)[None, :] - shift_y[:, None] + sh  # [B, H]
    cols = torch.arange(W, device=x.device)[None, :] - shift_x[:, None] + sw  # [B, W]
    batch = torch.arange(B, device=x.device)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]]  # [B, H, W, C]
    return out.permute(0, 3, 1, 2).contiguous()


def cutout(x: torch.Tensor, generator: torch.Generator, ratio: float = CUTOUT_RATIO) -> torch.Tensor:
    """Zero a square of ``ratio * side`` at a random centre of each image (it may overhang the edge)."""
    B, _, H, W = x.shape
    ch = int(H * ratio + 0.5)
    cw = int(W * ratio + 0.5)
    top = _randint(x, generator, 0, H + (1 - ch % 2)) - ch // 2  # [B]
    left = _randint(x, generator, 0, W + (1 - cw % 2)) - cw // 2
    ys = torch.arange(H, device=x.device)[None, :]
    xs = torch.arange(W, device=x.device)[None, :]
    inside_y = (ys >= top[:, None]) & (ys < top[:, None] + ch)  # [B, H]
    inside_x = (xs >= left[:, None]) & (xs < left[:, None] + cw)  # [B, W]
    keep = ~(inside_y[:, :, None] & inside_x[:, None, :])  # [B, H, W]
    return x * keep[:, None].to(x.dtype)


_FUNCTIONS = {"color": color, "translation": translation, "cutout": cutout}


def diff_augment(x: torch.Tensor, policy: Sequence[str], generator: torch.Generator) -> torch.Tensor:
    """Apply the transforms of ``policy`` in the paper's order (color, translation, cutout).

    Pure: the output depends only on ``x``, the policy and the generator's state.
    """
    if isinstance(policy, str):
        policy = parse_policy(policy)
    for name in POLICIES:  # fixed order, whatever order the flag lists them in
        if name in policy:
            x = _FUNCTIONS[name](x, generator)
    return x


# ---- adaptive augmentation (ADA, Karras et al. 2020) ------------------------------------------
# Each transform is applied to each image with probability p (gan_accel.gan.ada adjusts p). The
# paper's pipeline uses non-leaking transforms: at p < 0.8 or so, G cannot learn the augmentation
# because the un-augmented image remains the most likely view. Flips and quarter turns are exact
# pixel permutations (differentiable: indexing); the others are DiffAugment's transforms above.
# With only these five, p can reach 1 on a small set (D still overfits at full strength); there
# every transform leaks, quarter turns worst (photos have an upright): they are off by default.
ADA_TRANSFORMS = ("xflip", "rotate90", "translation", "color", "cutout")


def xflip(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Mirror left-right (the gate in :func:`adaptive_augment` decides per image)."""
    return x.flip(3)


def rotate90(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Rotate each (square) image by k quarter turns, k uniform in {0, 1, 2, 3}."""
    turns = _randint(x, generator, 0, 4)
    rotated = torch.stack([torch.rot90(x, k, dims=(2, 3)) for k in range(4)])  # [4, B, C, H, W]
    return rotated[turns, torch.arange(x.shape[0], device=x.device)]


_ADA_FUNCTIONS = {"xflip": xflip, "rotate90": rotate90, "translation": translation, "color": color, "cutout": cutout}


def parse_ada_transforms(text: str) -> Tuple[str, ...]:
    """``"xflip,color"`` -> ``("xflip", "color")``; unknown names raise ValueError."""
    names = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in names if p not in ADA_TRANSFORMS]
    if unknown:
        raise ValueError(
            f"unknown transform {', '.join(unknown)}; use a comma-separated subset of {', '.join(ADA_TRANSFORMS)}"
        )
    return names


def adaptive_augment(x: torch.Tensor, p: float, transforms: Sequence[str], generator: torch.Generator) -> torch.Tensor:
    """Apply each transform of ``transforms`` (in ADA_TRANSFORMS' order) to each image with
    probability ``p``, independently. Every gate and every transform's parameters are drawn
    whatever ``p`` is, so the random stream (and a resumed run) does not depend on ``p``'s value;
    ``p == 0`` is the identity."""
    if p <= 0:
        return x
    for name in ADA_TRANSFORMS:
        if name in transforms:
            gate = _rand(x, generator, 1, 1, 1) < p  # [B, 1, 1, 1]
            x = torch.where(gate, _ADA_FUNCTIONS[name](x, generator), x)
    return x


def make_augment(
    policy: Sequence[str],
    make_generator: Callable[[], torch.Generator],
    ada_p: float = 0.0,
    ada_transforms: Sequence[str] = (),
    make_ada_generator: Optional[Callable[[], torch.Generator]] = None,
) -> Optional[Augment]:
    """An ``x -> augmented x`` callable that draws from FRESHLY seeded generators on every call,
    so every batch it is applied to in one step (real, fake, GP/R1 inputs) gets the same
    parameters; None when the policy is empty and ADA is off or at p = 0. DiffAugment's fixed
    policy first, then ADA's gated transforms at probability ``ada_p`` (drawn from their own
    generator, ``make_ada_generator``: DiffAugment's draws stay those of a run without ADA)."""
    use_ada = ada_p > 0 and bool(ada_transforms)
    if not policy and not use_ada:
        return None
    if not use_ada:
        return lambda x: diff_augment(x, policy, make_generator())
    make_ada_generator = make_ada_generator or make_generator

    def augment(x: torch.Tensor) -> torch.Tensor:
        x = diff_augment(x, policy, make_generator()) if policy else x
        return adaptive_augment(x, ada_p, ada_transforms, make_ada_generator())

    return augment
