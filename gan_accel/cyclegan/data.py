"""The two image domains of an unpaired translation, and the reference's random crop and flip.

Layout of a folder dataset (the reference's): ``DATA/trainA`` and ``DATA/trainB`` hold the
images of each domain (optionally ``testA``/``testB``, used for evaluation). Each folder is read
with the GAN path's decoder (every image mode converted to ``--channels``; unreadable files
skipped and counted); class sub-folders, when both domains have the same ones, label the images
for the class-preservation metric. Domains are decoded once into uint8 tensors; a batch is an
index into them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from ..data import ImageData, load_image_data
from ..errors import UserError
from .digits_pair import digits_pair

DATASETS = ("digits", "folder")
PREPROCESS = ("resize_and_crop", "resize")


@dataclass
class Domains:
    train_a: ImageData
    train_b: ImageData
    test_a: Optional[ImageData] = None  # evaluation sets (folder layout only)
    test_b: Optional[ImageData] = None

    @property
    def labelled(self) -> bool:
        """Both domains carry the same classes: translations can be checked for their class."""
        a = self.train_a
        b = self.train_b
        return a.labels is not None and b.labels is not None and a.class_names == b.class_names

    def eval_sets(self):
        """``(source A, target B)`` images for evaluation: the test split when there is one."""
        return (self.test_a or self.train_a), (self.test_b or self.train_b)


def load_domains(
    dataset: str, data_dir: Optional[str], load_size: int, channels: int, size_flag: Optional[str] = None
) -> Domains:
    """Both domains as uint8 ``[N, channels, load_size, load_size]`` on the CPU (``size_flag``:
    how warnings name ``load_size``, e.g. ``CycleGANDataArguments.decode_size_flag``)."""
    if dataset == "digits":
        if data_dir:
            raise UserError(
                f"--data_dir {data_dir} is only read with --dataset folder; drop it or pass --dataset folder"
            )
        return Domains(*digits_pair(load_size, channels))
    if dataset != "folder":
        raise UserError(f"--dataset must be one of {', '.join(DATASETS)}; got {dataset!r}")
    if not data_dir:
        raise UserError("--dataset folder needs --data_dir DATA (a folder with DATA/trainA and DATA/trainB of images)")
    root = Path(data_dir)
    if not root.is_dir():
        raise UserError(f"--data_dir {data_dir}: not a folder; point it at a folder with trainA/ and trainB/")
    for name in ("trainA", "trainB"):
        if not (root / name).is_dir():
            raise UserError(
                f"--data_dir {data_dir}: no {name}/ folder; the layout is DATA/trainA and DATA/trainB "
                "(the images of each domain, unpaired)"
            )

    def load(name: str) -> ImageData:
        return load_image_data("folder", str(root / name), load_size, channels, size_flag=size_flag)

    train_a = load("trainA")
    train_b = load("trainB")
    tests = [load(name) if (root / name).is_dir() else None for name in ("testA", "testB")]
    return Domains(train_a, train_b, *tests)


def random_crop_flip(images: torch.Tensor, size: int, u: torch.Tensor, flip: bool) -> torch.Tensor:
    """Per image, a random ``size`` x ``size`` crop and (if ``flip``) a left-right flip with
    probability 1/2 (the reference's ``--preprocess resize_and_crop``, after its resize).

    images: ``[B, C, L, L]``; u: uniforms in [0, 1) of shape ``[B, 3]`` (top, left, flip), drawn
    by the caller per sample of the global batch so any number of processes crops alike.
    """
    B = images.shape[0]
    C = images.shape[1]
    L = images.shape[-1]
    span = L - size + 1
    top = (u[:, 0] * span).long().clamp_(max=span - 1)
    left = (u[:, 1] * span).long().clamp_(max=span - 1)
    ar = torch.arange(size, device=images.device)
    rows = (top[:, None] + ar)[:, None, :, None].expand(B, C, size, L)
    x = images.gather(2, rows)
    cols = left[:, None] + ar
    if flip:
        cols = torch.where(u[:, 2:3] < 0.5, left[:, None] + size - 1 - ar, cols)
    return x.gather(3, cols[:, None, None, :].expand(B, C, size, size))
