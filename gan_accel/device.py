"""The ``--device`` flag of the scripts that run a model outside a training run (training runs
leave devices to Accelerate)."""

from __future__ import annotations

from typing import List

import torch

from .errors import UserError


def available_devices() -> List[str]:
    """What ``--device`` may be on this machine, e.g. ``['cpu', 'cuda', 'cuda:0', 'cuda:1']``."""
    names = ["cpu"]
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count:
        names += ["cuda", *(f"cuda:{index}" for index in range(count))]
    if torch.backends.mps.is_available():
        names.append("mps")
    return names


def check_device(value: str, flag: str = "--device") -> torch.device:
    """``value`` as a ``torch.device`` that exists here, else a one-line error naming the devices
    that do (torch's own errors are "Found no NVIDIA driver" or a list of every device type)."""
    available = available_devices()
    hint = f"this machine has: {', '.join(available)}"
    try:
        device = torch.device(value)
    except (RuntimeError, ValueError):
        raise UserError(f"{flag} {value}: not a device name; {hint}") from None
    name = device.type if device.index is None else f"{device.type}:{device.index}"
    if name not in available:
        raise UserError(f"{flag} {value}: no such device on this machine; {hint}")
    return device
