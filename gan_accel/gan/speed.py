"""Speed features of the GAN path: channels_last memory format and in-place ``torch.compile``.

Both are applied to the networks themselves, never by wrapping them, so checkpoint key names,
``accelerator.unwrap_model`` and the EMA copy are unchanged (``torch.compile(G)`` would return an
``OptimizedModule`` whose state-dict keys start with ``_orig_mod.``).
"""

from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn as nn


def to_channels_last(*modules: nn.Module) -> None:
    """NHWC weights: convolutions then produce NHWC activations (the images are converted too)."""
    for m in modules:
        m.to(memory_format=torch.channels_last)


def compile_unavailable(device: torch.device) -> Optional[str]:
    """None when ``torch.compile`` works here, else why not (one line).

    Compilation fails lazily, at the first call, e.g. without a C++ compiler for the CPU backend
    or on an unsupported Python: a 2-op probe finds out now, before a training step does.
    """
    if not hasattr(torch, "compile"):
        return "this torch has no torch.compile"
    try:
        import torch._dynamo as dynamo

        if not dynamo.is_dynamo_supported():
            return "TorchDynamo does not support this Python/platform"
        probe = torch.compile(lambda x: torch.tanh(x) * 2 + 1, dynamic=False)
        probe(torch.ones(4, device=device))
    except Exception as err:  # backends raise many types (InductorError, BackendCompilerFailed, ...)
        lines = str(err).strip().splitlines()
        return f"{type(err).__name__}: {lines[0] if lines else ''}"
    return None


def compile_in_place(modules: dict, device: torch.device, log: Callable[[str], None]) -> bool:
    """``module.compile()`` each of ``{name: module}`` (unwrapped modules: DDP keeps wrapping
    them); on failure of the probe, print why and keep eager. Returns whether it compiled."""
    reason = compile_unavailable(device)
    if reason is not None:
        log(f"--compile: torch.compile is unavailable here ({reason}); training continues without it")
        return False
    for m in modules.values():
        # Static shapes: a network called a second way (FastGAN's D takes an extra argument on real
        # images) is recompiled, by default with symbolic sizes, and under bf16 autocast inductor
        # failed on that backward graph mid-run; a static recompile per signature costs seconds once.
        m.compile(dynamic=False)
    log(f"--compile: compiled {', '.join(modules)} (the first steps are slow while graphs are built)")
    return True
