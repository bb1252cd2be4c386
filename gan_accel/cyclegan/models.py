"""The CycleGAN networks (Zhu et al. 2017, Appendix 7.2), sized by flags.

Generator: the ResNet of Johnson et al.: ``c7s1-k, d2k, d4k, R4k x n_blocks, u2k, uk, c7s1-C``
with instance norm, reflection padding and a tanh output. Discriminator: the 70x70 PatchGAN
``C64-C128-C256-C512`` (``--d_layers`` 3) that outputs a map of real/fake logits, one per
overlapping patch. With ``g_channels 64, n_blocks 9, d_channels 64, d_layers 3`` at 256 px these
are the paper's networks; ``g_channels 16, n_blocks 3`` at 32 px train in minutes on a CPU.

Instance norm (affine-free, no running statistics, as the reference) normalises each image on
its own, so a batch split over processes computes exactly what one process computes on the whole
batch: DDP needs no SyncBatchNorm, and eval mode equals train mode.

A convolution followed by instance norm has no bias here. Instance norm subtracts each channel's
mean, which cancels a bias exactly, so its true gradient is 0; the reference keeps these biases
(11,378,179 and 2,764,737 parameters at the paper's sizes) but Adam turns their float noise into
random steps of the size of the learning rate (which alone made a 2-process run differ from one
process by 7e-4). The networks compute the same functions without them.
"""

from __future__ import annotations

import torch
import torch.nn as nn
from huggingface_hub import PyTorchModelHubMixin


def instance_norm(channels: int) -> nn.Module:
    return nn.InstanceNorm2d(channels, affine=False, track_running_stats=False)


def reference_init(module: nn.Module, gain: float = 0.02) -> None:
    """The reference's ``init_type normal``: conv weights ~ N(0, 0.02), biases 0."""
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
            nn.init.normal_(m.weight, 0.0, gain)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


class ResidualBlock(nn.Module):
    """``x + [pad, conv3, IN, ReLU, pad, conv3, IN](x)`` (R-k in the paper)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.ReflectionPad2d(1),
            nn.Conv2d(channels, channels, 3, bias=False),
            instance_norm(channels),
            nn.ReLU(True),
            nn.ReflectionPad2d(1),
            nn.Conv2d(channels, channels, 3, bias=False),
            instance_norm(channels),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


class ResnetGenerator(nn.Module, PyTorchModelHubMixin):
    """Image ``[B, C, H, W]`` in [-1, 1] -> image of the same shape in [-1, 1]; H, W divisible by 4.

    channels:   image channels in and out (1 grey, 3 RGB).
    g_channels: width of the first layer (the paper's 64); 2x and 4x after the two downsamplings.
    n_blocks:   residual blocks at 1/4 resolution (the paper: 6 at 128 px, 9 at 256 px).
    """

    arch = "cyclegan_resnet"

    def __init__(self, channels: int = 3, g_channels: int = 64, n_blocks: int = 9) -> None:
        super().__init__()
        self.channels = channels
        self.g_channels = g_channels
        self.n_blocks = n_blocks
        k = g_channels
        layers = [
            nn.ReflectionPad2d(3),
            nn.Conv2d(channels, k, 7, bias=False),
            instance_norm(k),
            nn.ReLU(True),
        ]  # c7s1-k
        for mult in (1, 2):  # d2k, d4k: stride-2 3x3 convolutions
            layers += [
                nn.Conv2d(k * mult, k * mult * 2, 3, stride=2, padding=1, bias=False),
                instance_norm(k * mult * 2),
                nn.ReLU(True),
            ]
        layers += [ResidualBlock(4 * k) for _ in range(n_blocks)]
        for mult in (4, 2):  # u2k, uk: fractionally strided 3x3 convolutions
            layers += [
                nn.ConvTranspose2d(k * mult, k * mult // 2, 3, stride=2, padding=1, output_padding=1, bias=False),
                instance_norm(k * mult // 2),
                nn.ReLU(True),
            ]
        layers += [nn.ReflectionPad2d(3), nn.Conv2d(k, channels, 7), nn.Tanh()]  # c7s1-C
        self.net = nn.Sequential(*layers)
        reference_init(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class PatchDiscriminator(nn.Module):
    """Image ``[B, C, H, W]`` -> patch logits ``[B, 1, h, w]`` (LSGAN scores, no sigmoid).

    d_channels: width of the first layer (the paper's 64), doubled per layer up to 8x.
    d_layers:   stride-2 layers after the first (3: the 70x70 receptive field of the paper).
    The first layer has no norm; LeakyReLU(0.2) throughout; the last two convolutions have stride 1.
    """

    def __init__(self, channels: int = 3, d_channels: int = 64, d_layers: int = 3) -> None:
        super().__init__()
        width = d_channels
        layers = [nn.Conv2d(channels, width, 4, stride=2, padding=1), nn.LeakyReLU(0.2, True)]
        for n in range(1, d_layers + 1):
            out = d_channels * min(2**n, 8)
            stride = 2 if n < d_layers else 1  # C512 of the paper keeps the resolution
            layers += [
                nn.Conv2d(width, out, 4, stride=stride, padding=1, bias=False),
                instance_norm(out),
                nn.LeakyReLU(0.2, True),
            ]
            width = out
        layers += [nn.Conv2d(width, 1, 4, stride=1, padding=1)]
        self.net = nn.Sequential(*layers)
        reference_init(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def min_image_size(d_layers: int) -> int:
    """The smallest side both networks accept: G needs a multiple of 4; D's d_layers stride-2
    convolutions and two 4x4 stride-1 convolutions must leave at least one patch, i.e.
    side // 2**d_layers >= 3. In closed form: a search counting up in steps of 4 never ended
    for --d_layers 2**32."""
    return max(4, -(-3 * 2**d_layers // 4) * 4)  # 3 * 2**d_layers, rounded up to a multiple of 4
