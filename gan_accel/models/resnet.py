"""SNGAN-style residual generator and discriminator (Miyato et al. 2018, the CIFAR-10 ResNet).

Same interface as DCGAN: ``G(z, labels=None) -> [B, C, S, S] in [-1, 1]`` and
``D(x, labels=None) -> logits [B]``. Conditional G uses conditional BatchNorm (a per-class gain and
bias for every BN of the residual blocks, Miyato & Koyama 2018); conditional D uses the projection
head shared with DCGAN.

Widths: at 16x16 and 32x32 every block is ``g_channels`` / ``d_channels`` wide (SNGAN CIFAR: 256 /
128); at 64x64 G halves from 8x towards the output and D doubles up to 8x (SNGAN's ImageNet/STL
layout), so ``g_channels`` / ``d_channels`` is the width at full resolution.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from huggingface_hub import PyTorchModelHubMixin

from .layers import ProjectionHead, d_norm_layer, maybe_spectral

RESNET_SIZES = (16, 32, 64)

# Per image size: G's width multipliers (4x4 input, then the output of each up block) and D's
# blocks as (width multiplier, downsample). D ends at 8x8 (16, 32) or 4x4 (64).
G_PLAN = {16: (1, 1, 1), 32: (1, 1, 1, 1), 64: (8, 8, 4, 2, 1)}
D_PLAN = {
    16: ((1, True), (1, False), (1, False)),
    32: ((1, True), (1, True), (1, False), (1, False)),
    64: ((1, True), (2, True), (4, True), (8, True), (8, False)),
}


def xavier_init(module: nn.Module) -> None:
    """SNGAN init: Xavier-uniform, gain sqrt(2) for 3x3 convs (a ReLU precedes them), gain 1 for
    1x1 shortcuts and linear layers; zero biases. Applied BEFORE spectral norm wraps a layer, so the
    norm's power-iteration vectors are estimated for the initial weights."""
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            gain = math.sqrt(2) if isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3) else 1.0
            nn.init.xavier_uniform_(m.weight, gain)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


def d_conv(c_in: int, c_out: int, kernel: int, d_norm: str) -> nn.Module:
    conv = nn.Conv2d(c_in, c_out, kernel, 1, kernel // 2)
    xavier_init(conv)
    return maybe_spectral(conv, d_norm)


class ConditionalBatchNorm2d(nn.Module):
    """BatchNorm without its own affine; gain and bias come from the class: gamma_y * x_hat + beta_y.
    Unconditional (``num_classes=0``): a plain affine BatchNorm2d. ``g_norm="none"`` drops the
    normalisation (exact DDP equivalence) and keeps only the per-class affine, if any."""

    def __init__(self, channels: int, num_classes: int, g_norm: str = "batch") -> None:
        super().__init__()
        if g_norm == "batch":
            self.bn = nn.BatchNorm2d(channels, affine=not num_classes)
        else:
            self.bn = nn.Identity()
        self.gain = nn.Embedding(num_classes, channels) if num_classes else None
        self.bias = nn.Embedding(num_classes, channels) if num_classes else None
        if num_classes:
            nn.init.ones_(self.gain.weight)  # start as plain BN: gamma = 1, beta = 0
            nn.init.zeros_(self.bias.weight)

    def forward(self, x: torch.Tensor, labels: Optional[torch.Tensor]) -> torch.Tensor:
        h = self.bn(x)
        if self.gain is None:
            return h
        if labels is None:
            raise ValueError("this generator is class-conditional: pass labels")
        return h * self.gain(labels)[:, :, None, None] + self.bias(labels)[:, :, None, None]


class GBlock(nn.Module):
    """BN-ReLU-up-conv3-BN-ReLU-conv3, plus a nearest-upsampled (1x1-conv when widths differ) shortcut."""

    def __init__(self, c_in: int, c_out: int, num_classes: int, g_norm: str) -> None:
        super().__init__()
        self.bn1 = ConditionalBatchNorm2d(c_in, num_classes, g_norm)
        self.bn2 = ConditionalBatchNorm2d(c_out, num_classes, g_norm)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, 1, 1)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1)
        self.shortcut = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else None

    def forward(self, x: torch.Tensor, labels: Optional[torch.Tensor]) -> torch.Tensor:
        h = F.interpolate(F.relu(self.bn1(x, labels)), scale_factor=2.0)
        h = self.conv2(F.relu(self.bn2(self.conv1(h), labels)))
        skip = F.interpolate(x, scale_factor=2.0)
        return h + (self.shortcut(skip) if self.shortcut is not None else skip)


class DBlock(nn.Module):
    """ReLU-conv3-ReLU-conv3(-avgpool), plus a (1x1-conv)(-avgpool) shortcut. The first block of D
    ("optimized" in SNGAN) has no ReLU before its first conv, since its input is the image."""

    def __init__(self, c_in: int, c_out: int, down: bool, d_norm: str, first: bool = False) -> None:
        super().__init__()
        self.down = down
        self.first = first
        self.conv1 = d_conv(c_in, c_out, 3, d_norm)
        self.conv2 = d_conv(c_out, c_out, 3, d_norm)
        # --d_norm batch: BN before each ReLU of the residual path (SNGAN itself uses spectral).
        self.norm1 = nn.Sequential(*d_norm_layer(d_norm, c_in)) if not first else nn.Identity()
        self.norm2 = nn.Sequential(*d_norm_layer(d_norm, c_out))
        self.shortcut = d_conv(c_in, c_out, 1, d_norm) if (c_in != c_out or down) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x if self.first else F.relu(self.norm1(x))
        h = self.conv2(F.relu(self.norm2(self.conv1(h))))
        if self.down:
            h = F.avg_pool2d(h, 2)
        skip = x
        if self.shortcut is not None:
            # First block: pool then conv (SNGAN's OptimizedBlock); others: conv then pool.
            skip = self.shortcut(F.avg_pool2d(x, 2)) if self.first else self.shortcut(x)
            if self.down and not self.first:
                skip = F.avg_pool2d(skip, 2)
        return h + skip


def _widths(plan: Sequence[int], channels: int) -> list:
    return [m * channels for m in plan]


class ResNetGenerator(nn.Module, PyTorchModelHubMixin):
    arch = "resnet"

    def __init__(
        self,
        z_dim: int = 128,
        channels: int = 1,
        image_size: int = 32,
        g_channels: int = 256,
        num_classes: int = 0,
        g_norm: str = "batch",
    ) -> None:
        super().__init__()
        if image_size not in G_PLAN:
            raise ValueError(f"resnet generator: image_size must be one of {RESNET_SIZES}; got {image_size}")
        self.z_dim = z_dim
        self.channels = channels
        self.image_size = image_size
        self.num_classes = num_classes
        widths = _widths(G_PLAN[image_size], g_channels)
        self.linear = nn.Linear(z_dim, 4 * 4 * widths[0])  # z -> [B, w0, 4, 4]
        self.blocks = nn.ModuleList(GBlock(a, b, num_classes, g_norm) for a, b in zip(widths[:-1], widths[1:]))
        self.bn = nn.BatchNorm2d(widths[-1]) if g_norm == "batch" else nn.Identity()
        self.to_image = nn.Conv2d(widths[-1], channels, 3, 1, 1)
        xavier_init(self)

    def forward(self, z: torch.Tensor, labels: Optional[torch.Tensor] = None) -> torch.Tensor:
        if self.num_classes and labels is None:
            raise ValueError("this generator is class-conditional: pass labels")
        h = self.linear(z).view(z.shape[0], -1, 4, 4)
        for block in self.blocks:  # each doubles the side
            h = block(h, labels)
        return torch.tanh(self.to_image(F.relu(self.bn(h))))


class ResNetDiscriminator(nn.Module):
    def __init__(
        self,
        channels: int = 1,
        image_size: int = 32,
        d_channels: int = 128,
        d_norm: str = "spectral",
        num_classes: int = 0,
    ) -> None:
        super().__init__()
        if image_size not in D_PLAN:
            raise ValueError(f"resnet discriminator: image_size must be one of {RESNET_SIZES}; got {image_size}")
        blocks = []
        c_in = channels
        for i, (mult, down) in enumerate(D_PLAN[image_size]):
            blocks.append(DBlock(c_in, mult * d_channels, down, d_norm, first=i == 0))
            c_in = mult * d_channels
        self.blocks = nn.Sequential(*blocks)
        self.head = ProjectionHead(c_in, num_classes, d_norm)  # PyTorch's default init

    def forward(self, x: torch.Tensor, labels: Optional[torch.Tensor] = None) -> torch.Tensor:
        # ReLU then global SUM pooling (SNGAN): phi(x) is [B, width].
        phi = F.relu(self.blocks(x)).sum(dim=(2, 3))
        return self.head(phi, labels)
