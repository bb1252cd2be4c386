"""Where the decoded dataset lives: in one uint8 tensor on the accelerator, or streamed."""

from __future__ import annotations

import os
from typing import Optional, Tuple

import psutil
import torch

MB = 1 << 20
# Half of what is free: the rest is for the networks, optimizer states, activations, and (on the
# CPU) the page cache and the other processes of the machine.
BUDGET_FRACTION = 0.5


def local_process_count() -> int:
    """Processes of this run on this machine (torchrun / accelerate launch set LOCAL_WORLD_SIZE)."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", "1"))


def default_budget_bytes(device: torch.device, local_processes: int = 1) -> Tuple[int, str]:
    """A share of the accelerator's free memory; of the available RAM on the CPU (and on MPS,
    whose memory is the RAM), split between the processes of this machine (each holds a copy)."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free * BUDGET_FRACTION), f"half the free memory of {device}"
    available = psutil.virtual_memory().available
    share = f" / {local_processes} processes" if local_processes > 1 else ""
    return int(available * BUDGET_FRACTION / local_processes), f"half the available RAM{share}"


def choose_in_memory(
    setting: str,
    needed_bytes: int,
    max_mb: Optional[float],
    device: torch.device,
    local_processes: Optional[int] = None,
) -> Tuple[bool, str]:
    """``(in_memory, why)`` for ``--data_in_memory auto|yes|no`` and a decoded size in bytes."""
    size = f"{needed_bytes / MB:,.1f} MB decoded"
    if setting == "yes":
        return True, f"{size}; --data_in_memory yes"
    if setting == "no":
        return False, f"{size}; --data_in_memory no"
    if max_mb is not None:
        budget = int(max_mb * MB)
        source = "--max_data_memory_mb"
    else:
        budget, source = default_budget_bytes(device, local_processes or local_process_count())
    verdict = "fits" if needed_bytes <= budget else "exceeds"
    why = f"{size} {verdict} the budget of {budget / MB:,.1f} MB ({source}; --data_in_memory auto)"
    return needed_bytes <= budget, why
