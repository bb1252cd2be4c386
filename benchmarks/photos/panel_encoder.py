"""The panel's self-supervised yardstick: an encoder trained without labels on held-out real crops.

A small CNN learns, SimCLR-style, to match two augmented views of the same crop against the other
crops of its batch (NT-Xent loss): random resized crops, horizontal flips, brightness, contrast and
saturation jitter, and now and then grey. Nothing tells it which photo or region a crop comes
from, so its features are not the run's domain features nor the region judge's. It trains on
crops of its own (another seed than the training, judge and reference crops) and is then frozen;
the figure is the Fréchet distance in its pooled features against real crops it never saw, next to
the same distance between two sets of such real crops (the floor).

Trained once per data and settings, cached in the panel's work folder (a file named by both), so
every later call loads it and two calls agree.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from benchmarks.common import FrechetYardstick
from gan_accel.metrics.cache import load_cached, save_atomic, settings_key, tensor_hash

ENCODER_VERSION = 1  # bump when the network or its training changes: an old cached encoder is not reused


@dataclass(frozen=True)
class EncoderSettings:
    """How the encoder trains (all part of its cache key)."""

    steps: int = 600  # optimizer steps (about 2 minutes on 2 CPU cores at 32 px)
    batch_size: int = 128  # crops per step; each gives 2 views, the others are its negatives
    width: int = 32  # channels of the first stage (features = 4 * width)
    lr: float = 2e-3  # AdamW, cosine-decayed
    temperature: float = 0.2
    min_scale: float = 0.35  # random resized crop keeps at least this share of the side
    seed: int = 7  # not the judge's nor the runs'

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "width"):
            if getattr(self, name) < 2:
                raise ValueError(f"EncoderSettings.{name} must be >= 2; got {getattr(self, name)}")
        if not 0 < self.min_scale <= 1:
            raise ValueError(f"EncoderSettings.min_scale must be in (0, 1]; got {self.min_scale}")


class Encoder(nn.Module):
    """conv stem, 3 strided stages (halving the side), global average pool: the features. The
    projection head is used in training only (SimCLR: features before it transfer better)."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()

        def stage(c_in: int, c_out: int, stride: int) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())

        self.body = nn.Sequential(
            stage(channels, width, 1),
            stage(width, width, 2),
            stage(width, 2 * width, 2),
            stage(2 * width, 4 * width, 2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.num_features = 4 * width
        self.head = nn.Sequential(nn.Linear(4 * width, 4 * width), nn.ReLU(), nn.Linear(4 * width, 64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def augment(x: torch.Tensor, settings: EncoderSettings, gen: torch.Generator) -> torch.Tensor:
    """One random view per image of float [-1, 1] ``x``: resized crop, flip, colour jitter, sometimes grey."""
    b = x.shape[0]

    def uniform(low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(b, generator=gen)

    scale = uniform(settings.min_scale, 1.0)
    flip = torch.where(torch.rand(b, generator=gen) < 0.5, -1.0, 1.0)
    theta = torch.zeros(b, 2, 3)
    theta[:, 0, 0] = scale * flip
    theta[:, 1, 1] = scale
    theta[:, 0, 2] = (1 - scale) * uniform(-1.0, 1.0)
    theta[:, 1, 2] = (1 - scale) * uniform(-1.0, 1.0)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    view = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    view = view + uniform(-0.3, 0.3).view(b, 1, 1, 1)  # brightness
    mean = view.mean((1, 2, 3), keepdim=True)
    view = mean + (view - mean) * uniform(0.6, 1.4).view(b, 1, 1, 1)  # contrast
    if x.shape[1] == 3:
        grey = view.mean(1, keepdim=True)
        saturation = torch.where(torch.rand(b, generator=gen) < 0.2, 0.0, uniform(0.6, 1.4)).view(b, 1, 1, 1)
        view = grey + (view - grey) * saturation
    return view.clamp(-1, 1)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """SimCLR's loss: each view must pick its partner among the 2B - 1 other views."""
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = z @ z.T / temperature
    logits.fill_diagonal_(-math.inf)  # a view is not its own partner
    b = z1.shape[0]
    partner = torch.cat([torch.arange(b, 2 * b), torch.arange(b)])
    return F.cross_entropy(logits, partner)


def train_encoder(images: torch.Tensor, settings: EncoderSettings) -> Encoder:
    """Train on float [-1, 1] ``images [N, C, H, W]`` (CPU); the caller's random streams untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        model = Encoder(images.shape[1], settings.width)
        opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=1e-4)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=settings.steps)
        gen = torch.Generator().manual_seed(settings.seed)
        model.train()
        batch = min(settings.batch_size, len(images))
        for _ in range(settings.steps):
            x = images[torch.randperm(len(images), generator=gen)[:batch]]
            v1, v2 = augment(x, settings, gen), augment(x, settings, gen)
            loss = nt_xent(model.head(model(v1)), model.head(model(v2)), settings.temperature)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
    return model.eval().requires_grad_(False)


def image_hashes(images: torch.Tensor) -> set:
    """One content hash per image: how the panel proves its floor images are not training images."""
    return {tensor_hash(image.contiguous()) for image in images}


def drop_held_out(images: torch.Tensor, *held_out: torch.Tensor) -> torch.Tensor:
    """``images`` without any image equal to one of ``held_out``: crops cut at random places of the
    same photos coincide now and then (about one in ten thousand pairs at full size), and the
    encoder must never train on a crop its reference or floor measures with."""
    held = set().union(*(image_hashes(h) for h in held_out))
    keep = [i for i, image in enumerate(images) if tensor_hash(image.contiguous()) not in held]
    return images[keep]


def load_or_train(images: torch.Tensor, workdir: Path, settings: EncoderSettings) -> Encoder:
    """The encoder of ``images``, loaded from ``workdir`` or trained and saved there."""
    key = settings_key(version=ENCODER_VERSION, data=tensor_hash(images.contiguous()), **asdict(settings))
    path = Path(workdir) / f"panel_encoder-{key}.pt"
    model = Encoder(images.shape[1], settings.width)
    cached = load_cached(path)
    if cached is not None:
        model.load_state_dict(cached["state_dict"])
        return model.eval().requires_grad_(False)
    model = train_encoder(images, settings)
    save_atomic({"state_dict": model.state_dict()}, path)
    return model


class SelfSupervised(FrechetYardstick):
    """The yardstick: Fréchet distance in the frozen encoder's features against a fixed real reference."""

    name = "ssl_encoder"
    label = "SSL encoder FD"

    def __init__(
        self,
        train_images: torch.Tensor,
        reference: torch.Tensor,
        floor_images: torch.Tensor,
        workdir: Path,
        settings: EncoderSettings = EncoderSettings(),
    ) -> None:
        if image_hashes(train_images) & (image_hashes(reference) | image_hashes(floor_images)):
            raise ValueError(
                "the encoder's training crops include reference or floor crops: its floor would be too low"
            )
        self.model = load_or_train(train_images, workdir, settings)
        self.set_reference(reference, floor_images)

    @torch.no_grad()
    def features(self, images: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.model(chunk.float()).double() for chunk in images.split(250)])
