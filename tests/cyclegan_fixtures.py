"""Shared pieces of the CycleGAN tests: tiny flags, a tiny two-domain folder, checkpoint tensors."""

from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file

from helpers import write_png  # noqa: F401  (re-exported: the CycleGAN tests import it from here)

# 16 px, 8-channel nets, 1 residual block; a pool of 3 so it fills within a few steps and swaps.
TINY_CYCLEGAN = [
    "--image_size",
    "16",
    "--load_size",
    "18",
    "--g_channels",
    "8",
    "--n_blocks",
    "1",
    "--d_channels",
    "8",
    "--d_layers",
    "2",
    "--batch_size",
    "4",
    "--log_every",
    "1",
    "--sample_every",
    "0",
    "--num_sample_images",
    "3",
    "--pool_size",
    "3",
    "--no_evaluate",
]


def make_domains(root: Path, num_a: int = 6, num_b: int = 10, seed: int = 0) -> Path:
    """DATA/trainA (dark blobs) and DATA/trainB (bright blobs) of 20x20 grey images: with batch 4
    an epoch (max(6, 10) pairs) is 2 updates, so a few steps cross epoch boundaries."""
    rng = np.random.default_rng(seed)
    for name, count, base in (("trainA", num_a, 40), ("trainB", num_b, 200)):
        for i in range(count):
            write_png(
                root / name / f"{i:03d}.png",
                np.clip(rng.normal(base, 30, (20, 20)), 0, 255).astype(np.uint8),
                mode="L",
            )
    return root


def checkpoint_tensors(ckpt: Path) -> dict:
    """Every network, optimizer state and image pool of a checkpoint, by name."""
    out = {}
    for i, name in enumerate(["G_AB", "G_BA", "D_A", "D_B"]):
        file = ckpt / ("model.safetensors" if i == 0 else f"model_{i}.safetensors")
        out.update({f"{name}.{k}": v for k, v in load_file(str(file)).items()})
    for pool in ("pool_A", "pool_B"):
        out.update({f"{pool}.{k}": v for k, v in load_file(str(ckpt / f"{pool}.safetensors")).items()})
    for name in ("optimizer.bin", "optimizer_1.bin", "optimizer_2.bin"):
        for idx, st in torch.load(ckpt / name, weights_only=True)["state"].items():
            out.update({f"{name}.{idx}.{k}": v for k, v in st.items()})
    return out
