"""Standard Inception-v3 (the TF-ported FID network) as a torchmetrics ``feature=`` module.

The network is torchmetrics' ``NoTrainInceptionV3``, which needs the ``torch-fidelity`` package,
and its weights file. Nothing is downloaded here: the weights must already be on disk
(``--inception_weights PATH``, the library cache, or torch.hub's checkpoint folder), otherwise a
one-line :class:`UserError` says how to get them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import List, Optional

import torch
import torch.nn as nn

from ..errors import UserError

INCEPTION_FILENAME = "weights-inception-2015-12-05-6726825d.pth"
INCEPTION_URL = f"https://github.com/toshas/torch-fidelity/releases/download/v0.2.0/{INCEPTION_FILENAME}"


def inception_candidates(cache_dir: Path) -> List[Path]:
    """Where the weights are looked for when ``--inception_weights`` is not given."""
    return [
        cache_dir / "inception" / INCEPTION_FILENAME,
        Path(torch.hub.get_dir()) / "checkpoints" / INCEPTION_FILENAME,
    ]


def find_inception_weights(weights_path: Optional[str], cache_dir: Path) -> Path:
    """The weights file, or a UserError that says where to put it."""
    if weights_path:
        path = Path(weights_path)
        if not path.is_file():
            raise UserError(f"--inception_weights {weights_path}: file not found; download {INCEPTION_URL} there")
        return path
    for path in inception_candidates(cache_dir):
        if path.is_file():
            return path
    also = "" if importlib.util.find_spec("torch_fidelity") else " and pip install 'gan_accel[inception]'"
    raise UserError(
        f"--feature_extractor inception needs the Inception-v3 FID weights, not found in {cache_dir / 'inception'}: "
        f"download {INCEPTION_URL} into that folder (or pass --inception_weights PATH){also}; "
        "or use --feature_extractor domain"
    )


class InceptionFeatures(nn.Module):
    """float images in [-1, 1] ``[B, C, H, W]`` -> float64 pool3 features ``[B, 2048]``.

    The network expects uint8 RGB and resizes to 299x299 itself; grey images are repeated to
    three channels, as every FID implementation does for MNIST-like data.
    """

    num_features = 2048

    def __init__(self, weights: Path) -> None:
        super().__init__()
        if importlib.util.find_spec("torch_fidelity") is None:
            raise UserError(
                "--feature_extractor inception needs the torch-fidelity package "
                "(pip install 'gan_accel[inception]'), or use --feature_extractor domain"
            )
        from torchmetrics.image.fid import NoTrainInceptionV3

        self.net = NoTrainInceptionV3(
            name="inception-v3-compat", features_list=["2048"], feature_extractor_weights_path=str(weights)
        )
        self.cache_key = f"inception2048-{weights.stat().st_size}-{weights.name}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u8 = ((x.float() + 1.0) * 127.5).round().clamp(0, 255).to(torch.uint8)
        if u8.shape[1] == 1:
            u8 = u8.expand(-1, 3, -1, -1)
        return self.net(u8).double()


def load_inception_features(weights_path: Optional[str], cache_dir: Path) -> InceptionFeatures:
    return InceptionFeatures(find_inception_weights(weights_path, cache_dir))
