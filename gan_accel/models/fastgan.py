"""A light FastGAN (Liu et al. 2021, "Towards Faster and Stabilized GAN Training for High-fidelity
Few-shot Image Synthesis"; the choices of lucidrains' lightweight-gan), scaled down for short runs
at 16-128 px on a CPU.

Same interface as DCGAN: ``G(z, labels=None) -> [B, C, S, S] in [-1, 1]`` and
``D(x, labels=None) -> logits [B]``; conditional models as DCGAN's (class embedding concatenated
to z, projection head).

G: z -> 4x4 (transposed conv, norm, GLU), then up-blocks (nearest x2, 3x3 conv, norm, GLU) and a
3x3 conv to the image, tanh. **Skip-layer excitation** (SLE): the map at side r gates, channel by
channel, the map at side 4r (4 -> 16, 8 -> 32, ...): pool to 4x4, 4x4 conv, LeakyReLU, 1x1 conv,
sigmoid. Widths: ``g_channels / 4`` at side S, doubling towards 4x4 (half of DCGAN's, whose
cost per update they keep in the same range).

D: DCGAN's down-blocks (4x4 stride-2 convs) to 4x4 and a linear head, plus FastGAN's
**self-supervised reconstruction**, on real images only: a small decoder rebuilds the whole
image at side S/2 from D's features at S/4, another rebuilds one quadrant (one per image) at
S/2 from the features at S/2. ``D(x, labels, quadrants)`` returns ``(logits, recon_loss)``, the
mean squared error against ``x`` itself (resized, or its quadrant), so the target is the very
view D judged (augmented or not). FastGAN scores the reconstruction with LPIPS, whose weights
must be downloaded: not possible offline, hence MSE (lightweight-gan's choice too).

Left out of FastGAN: LPIPS, spectral norm in G, the noise injection and the second conv of its
"comp" up-blocks, the multi-scale D input and its patch logits: each costs time that a run of
minutes on a CPU does not have.
"""

from __future__ import annotations

from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from huggingface_hub import PyTorchModelHubMixin

from .dcgan import _num_up, dcgan_init
from .layers import ProjectionHead, conditional_input, d_norm_layer, g_norm_layer, maybe_spectral

FASTGAN_SIZES = (16, 32, 64, 128)


class UpBlock(nn.Sequential):
    """Nearest x2, 3x3 conv to twice ``c_out``, norm, GLU (halves the channels back): [B, c_in, r, r]
    -> [B, c_out, 2r, 2r]."""

    def __init__(self, c_in: int, c_out: int, norm: List[nn.Module], conv=lambda m: m) -> None:
        super().__init__(
            nn.Upsample(scale_factor=2.0, mode="nearest"),
            conv(nn.Conv2d(c_in, 2 * c_out, 3, 1, 1, bias=not norm)),
            *norm,
            nn.GLU(dim=1),
        )


class SkipExcitation(nn.Module):
    """SLE: per-channel gates in (0, 1) for a high-resolution map, from a low-resolution one."""

    def __init__(self, c_low: int, c_high: int) -> None:
        super().__init__()
        self.gate = nn.Sequential(
            nn.AdaptiveAvgPool2d(4),
            nn.Conv2d(c_low, c_high, 4, 1, 0),  # [B, c_low, 4, 4] -> [B, c_high, 1, 1]
            nn.LeakyReLU(0.1),
            nn.Conv2d(c_high, c_high, 1, 1, 0),
            nn.Sigmoid(),
        )

    def forward(self, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
        return high * self.gate(low)


class FastGANGenerator(nn.Module, PyTorchModelHubMixin):
    arch = "fastgan"

    def __init__(
        self,
        z_dim: int = 128,
        channels: int = 1,
        image_size: int = 32,
        g_channels: int = 64,
        num_classes: int = 0,
        g_norm: str = "batch",
    ) -> None:
        super().__init__()
        if image_size not in FASTGAN_SIZES:
            raise ValueError(f"fastgan generator: image_size must be one of {FASTGAN_SIZES}; got {image_size}")
        self.z_dim = z_dim
        self.channels = channels
        self.image_size = image_size
        self.num_classes = num_classes
        n_up = _num_up(image_size)
        # widths[i]: the map at side 4 * 2**i; g_channels / 4 at S, doubling towards 4x4. Half of
        # DCGAN's widths: a 3x3 conv at the doubled side to twice the width (GLU) costs 4.5x a
        # DCGAN 4x4 stride-2 transposed conv of the same widths.
        widths = [max(1, g_channels * 2**n_up // 4 // 2**i) for i in range(n_up + 1)]
        self.embed = nn.Embedding(num_classes, z_dim) if num_classes else None
        in_dim = z_dim * 2 if num_classes else z_dim
        bn = g_norm == "batch"
        self.init = nn.Sequential(
            nn.ConvTranspose2d(in_dim, 2 * widths[0], 4, 1, 0, bias=not bn),  # [B, z, 1, 1] -> 4x4
            *g_norm_layer(g_norm, 2 * widths[0]),
            nn.GLU(dim=1),
        )
        self.ups = nn.ModuleList(
            UpBlock(widths[i], widths[i + 1], g_norm_layer(g_norm, 2 * widths[i + 1])) for i in range(n_up)
        )
        # SLE from side 4 * 2**i to side 16 * 2**i, for every such pair inside the image.
        self.sle = nn.ModuleDict({str(i + 2): SkipExcitation(widths[i], widths[i + 2]) for i in range(n_up - 1)})
        self.to_image = nn.Conv2d(widths[-1], channels, 3, 1, 1)
        dcgan_init(self)

    def forward(self, z: torch.Tensor, labels: Optional[torch.Tensor] = None) -> torch.Tensor:
        h = self.init(conditional_input(z, labels, self.embed)[:, :, None, None])
        maps = [h]  # maps[i]: side 4 * 2**i
        for i, up in enumerate(self.ups, start=1):
            h = up(h)
            if str(i) in self.sle:
                h = self.sle[str(i)](maps[i - 2], h)
            maps.append(h)
        return torch.tanh(self.to_image(h))


class Decoder(nn.Sequential):
    """D's reconstruction decoder: [B, c_in, r, r] -> [B, channels, 2r, 2r] in [-1, 1]."""

    def __init__(self, c_in: int, channels: int, d_norm: str) -> None:
        # Thin (a 1x1 conv narrows first): it runs on every real batch, at twice the side of its
        # input; as wide as its input, it cost more than the rest of D.
        c_mid = max(1, c_in // 4)
        spectral = lambda m: maybe_spectral(m, d_norm)  # noqa: E731
        super().__init__(
            spectral(nn.Conv2d(c_in, c_mid, 1)),
            nn.LeakyReLU(0.2),
            UpBlock(c_mid, c_mid, d_norm_layer(d_norm, 2 * c_mid), conv=spectral),
            maybe_spectral(nn.Conv2d(c_mid, channels, 3, 1, 1), d_norm),
            nn.Tanh(),
        )


def quadrant(x: torch.Tensor, quadrants: torch.Tensor) -> torch.Tensor:
    """Per image, one quarter of ``x`` [B, C, H, W]: 0 top left, 1 top right, 2 bottom left, 3 bottom right."""
    h, w = x.shape[2] // 2, x.shape[3] // 2
    parts = torch.stack(
        [x[:, :, :h, :w], x[:, :, :h, w : 2 * w], x[:, :, h : 2 * h, :w], x[:, :, h : 2 * h, w : 2 * w]], dim=1
    )  # [B, 4, C, h, w]
    return parts[torch.arange(x.shape[0], device=x.device), quadrants]


class FastGANDiscriminator(nn.Module):
    # The GAN recipe draws quadrants for D's forward (and adds the loss it returns) when this is set.
    reconstructs = True

    def __init__(
        self,
        channels: int = 1,
        image_size: int = 32,
        d_channels: int = 64,
        d_norm: str = "batch",
        num_classes: int = 0,
    ) -> None:
        super().__init__()
        if image_size not in FASTGAN_SIZES:
            raise ValueError(f"fastgan discriminator: image_size must be one of {FASTGAN_SIZES}; got {image_size}")
        self.image_size = image_size
        width = d_channels
        blocks = [nn.Sequential(maybe_spectral(nn.Conv2d(channels, width, 4, 2, 1), d_norm), nn.LeakyReLU(0.2))]
        for _ in range(_num_up(image_size) - 1):
            blocks.append(
                nn.Sequential(
                    maybe_spectral(nn.Conv2d(width, width * 2, 4, 2, 1, bias=d_norm != "batch"), d_norm),
                    *d_norm_layer(d_norm, width * 2),
                    nn.LeakyReLU(0.2),
                )
            )
            width *= 2
        self.blocks = nn.ModuleList(blocks)  # block i ends at side S / 2**(i+1); the last at 4x4
        self.head = ProjectionHead(width * 16, num_classes, d_norm)
        self.decode_whole = Decoder(d_channels * 2, channels, d_norm)  # from side S/4
        self.decode_part = Decoder(d_channels, channels, d_norm)  # from a quarter of side S/2
        dcgan_init(self)

    def freeze_decoders(self) -> None:
        """For a run without the reconstruction (``--recon_weight 0``): decoders that never run
        must not be trainable, or DDP, which does not look for unused parameters, waits for their
        gradients and fails at the next update; frozen, no optimizer holds them."""
        self.decode_whole.requires_grad_(False)
        self.decode_part.requires_grad_(False)

    def forward(self, x: torch.Tensor, labels: Optional[torch.Tensor] = None, quadrants=None):
        """``quadrants`` ([B] int64 in 0..3, for real images): also return the reconstruction
        loss. It is computed here, in ``forward``, because DDP's gradient hooks watch only the
        forward of the wrapped module."""
        features = []
        h = x
        for block in self.blocks:
            h = block(h)
            features.append(h)
        logits = self.head(h.flatten(1), labels)
        if quadrants is None:
            return logits
        half = self.image_size // 2
        whole = self.decode_whole(features[1])
        part = self.decode_part(quadrant(features[0], quadrants))
        target_whole = F.interpolate(x, size=half, mode="area")
        loss = F.mse_loss(whole.float(), target_whole.float()) + F.mse_loss(
            part.float(), quadrant(x, quadrants).float()
        )
        return logits, loss
