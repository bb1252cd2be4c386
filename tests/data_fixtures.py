"""A tiny labelled image folder of mixed sizes and modes (for the decode cache and streaming)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from helpers import TINY_GAN

CLASSES = ("cats", "dogs")
PER_CLASS = 40

# The tiny GAN on a folder: 16 px RGB, with the cache under the test's own folder.
FOLDER_GAN = [
    *TINY_GAN,
    "--dataset",
    "folder",
    "--channels",
    "3",
    "--batch_size",
    "16",
    "--d_norm",
    "none",
    "--g_norm",
    "none",
    "--checkpointing_steps",
    "0",
    "--data_decode_workers",
    "0",
]


def make_folder(root: Path, per_class: int = PER_CLASS, seed: int = 0) -> Path:
    """Sizes around and below 16 px and three PIL modes, so resize, crop, upscale and channel
    conversion all run."""
    rng = np.random.default_rng(seed)
    for _c, name in enumerate(CLASSES):
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            h, w = 12 + (i % 4) * 5, 14 + (i % 3) * 6
            pixels = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
            img = Image.fromarray(pixels)
            img = img.convert("L") if i % 5 == 0 else img.convert("RGBA") if i % 7 == 0 else img
            img.save(root / name / f"{i:03d}.png")
    return root
