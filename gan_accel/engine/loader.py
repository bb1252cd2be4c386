"""What the engine reads from the training loader: a micro-batch's size, the batches per epoch,
and why an epoch yields none."""

from __future__ import annotations

from typing import Optional

import torch


def num_samples(batch) -> int:
    """Samples in a micro-batch: a tensor's first dimension, or that of a dict's first tensor."""
    if torch.is_tensor(batch):
        return batch.shape[0]
    values = batch.values() if hasattr(batch, "values") else batch
    return next(v.shape[0] for v in values if torch.is_tensor(v))


def batches_per_epoch(loader) -> Optional[int]:
    """Batches one process gets per epoch (None: the loader has no length)."""
    try:
        return len(loader)
    except TypeError:
        return None


def empty_epoch_message(loader, num_processes: int) -> str:
    """Why the training loader yields no batch, naming the flag to change: an epoch without a
    batch makes no step, and the loop would start the next one forever."""
    try:
        size = f"{len(loader.dataset)} samples"
    except TypeError:
        size = "its samples"
    per = f" per process x {num_processes} processes" if num_processes > 1 else ""
    batch = getattr(loader, "batch_size", None)
    batch = f"--batch_size {batch}{per}" if batch else "the batch size"
    full = ", full batches only" if getattr(loader, "drop_last", False) else ""
    return f"the training data yields no batch in an epoch ({size}; {batch}{full}): lower --batch_size or add data"
