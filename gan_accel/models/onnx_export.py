"""ONNX export of generators and CycleGAN translators, for inference without PyTorch (onnxruntime).

The legacy TorchScript-based exporter (``torch.onnx.export(..., dynamo=False)``) is used: the
dynamo-based one (torch's default) needs the ``onnxscript`` package, which a CPU-only install
rarely has, and these networks (convolutions, BatchNorm, embeddings) are exactly what the legacy
exporter was built for; it also takes ``dynamic_axes`` for the batch dimension directly.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Optional

import torch
import torch.nn as nn

from .. import interrupt
from ..errors import UserError

OPSET = 17
ONNX_FILE = "model.onnx"


class GeneratorGraph(nn.Module):
    """What the ONNX graph computes: ``images = G(truncation_psi * z, class_label)``. The
    truncation trick's interpolate mode toward the mean latent (0 for Gaussian z) is one multiply,
    so it is a graph input (psi=1: plain sampling); resampling out-of-range values is a loop
    over random draws and stays on the sampling side (scripts/sample_gan.py)."""

    def __init__(self, G: nn.Module) -> None:
        super().__init__()
        self.G = G

    def forward(
        self, z: torch.Tensor, truncation_psi: torch.Tensor, class_label: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        return self.G(z * truncation_psi, class_label)


def require_onnx() -> None:
    import importlib.util

    missing = [name for name in ("onnx", "onnxruntime") if importlib.util.find_spec(name) is None]
    if missing:
        raise UserError(
            f"ONNX export needs {' and '.join(missing)}: pip install 'gan_accel[onnx]' "
            f"(or pip install {' '.join(missing)})"
        )


def export_generator_onnx(G: nn.Module, path: Path) -> dict:
    """Write ``G`` (eval mode) to ``path``. Inputs ``z`` [batch, z_dim] float32,
    ``truncation_psi`` [1] float32 and, for class-conditional generators, ``class_label`` [batch]
    int64; output ``images`` [batch, C, H, W] in [-1, 1]. Returns the input names and shapes."""
    conditional = bool(getattr(G, "num_classes", 0))
    z = torch.randn(2, G.z_dim)
    args = [z, torch.ones(1)]
    names = ["z", "truncation_psi"]
    if conditional:
        args.append(torch.zeros(2, dtype=torch.long))
        names.append("class_label")
    axes = {"z": {0: "batch"}, "images": {0: "batch"}, **({"class_label": {0: "batch"}} if conditional else {})}
    _export(GeneratorGraph(G).eval(), tuple(args), path, names, axes)
    return {"z": ["batch", G.z_dim], "truncation_psi": [1], **({"class_label": ["batch"]} if conditional else {})}


def export_translator_onnx(G: nn.Module, path: Path, image_size: int) -> dict:
    """Write a CycleGAN translator: input ``images`` [batch, C, H, W] in [-1, 1] (H and W dynamic
    too: the network is fully convolutional; multiples of 4), output ``translated``, same shape."""
    x = torch.zeros(1, G.channels, image_size, image_size)
    axes = {name: {0: "batch", 2: "height", 3: "width"} for name in ("images", "translated")}
    _export(G.eval(), (x,), path, ["images"], axes, output="translated")
    return {"images": ["batch", G.channels, "height", "width"]}


def _export(
    module: nn.Module, args: tuple, path: Path, input_names: list, dynamic_axes: dict, output: str = "images"
) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        _export_to(module, args, tmp, input_names, dynamic_axes, output)
        interrupt.phase("export")
        tmp.replace(path)  # a half-written graph never takes the name of a good one
    finally:
        tmp.unlink(missing_ok=True)  # after a failed write: no partial file left behind


def _export_to(module: nn.Module, args: tuple, tmp: Path, input_names: list, dynamic_axes: dict, output: str) -> None:
    with torch.no_grad(), warnings.catch_warnings():
        # The exporter's notes on itself (deprecated in favour of dynamo, trace and constant-folding
        # remarks, InstanceNorm exported in its train form, which without running statistics is the
        # eval form) are not the user's concern: the --check run against PyTorch is.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message=".*(Constant folding|instance_norm).*", category=UserWarning)
        torch.onnx.export(
            module,
            args,
            str(tmp),
            input_names=input_names,
            output_names=[output],
            dynamic_axes=dynamic_axes,
            opset_version=OPSET,
            dynamo=False,
        )


def run_onnx(path: Path, feeds: dict):
    """The graph's first output for ``feeds`` (numpy arrays), on onnxruntime's CPU provider."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]
