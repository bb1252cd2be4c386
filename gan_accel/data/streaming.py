"""The streaming path: uint8 batches gathered in DataLoader workers, one batch per fetch.

Each dataset implements ``__getitems__`` (PyTorch's batched fetch): a worker receives the whole
index list of a batch from the sampler, which runs in the main process, and returns the batch
already stacked, so there is no per-sample collate. The sampler is the trainer's
``ResumableSampler``: the order, the mid-epoch resume position and Accelerate's sharding of
batches across processes are those of the in-memory path, and so are the pixels of every batch.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from ..errors import UserError
from .cache import ImageCache
from .decode import FolderImages, HFImages


class WorkerUserError(UserError):
    """A :class:`UserError` raised in a DataLoader worker. PyTorch re-raises a worker's exception in
    the main process as ``type("Caught ... in DataLoader worker process N. Original Traceback ...")``:
    for a user's mistake that traceback is noise, so this type keeps the original message alone."""

    def __init__(self, message: str) -> None:
        if message.startswith("Caught ") and "\nOriginal Traceback" in message:
            last_line = message.rstrip().rsplit("\n", 1)[-1]  # "module.WorkerUserError: the message"
            message = last_line.split(f"{type(self).__name__}: ", 1)[-1]
        super().__init__(message)


def _batch(images: torch.Tensor, labels: Optional[torch.Tensor], rows: Sequence[int]) -> Dict[str, torch.Tensor]:
    out = {"images": images}
    if labels is not None:
        out["labels"] = labels[torch.as_tensor(rows, dtype=torch.int64)]
    return out


class _Batched(Dataset):
    def __getitem__(self, i: int) -> Dict[str, torch.Tensor]:
        return self.__getitems__([i])

    def __getitems__(self, rows: List[int]) -> Dict[str, torch.Tensor]:
        raise NotImplementedError


class CachedRows(_Batched):
    """Batches read from the decode cache (``os.pread`` per row: memory stays one batch)."""

    def __init__(self, cache: ImageCache) -> None:
        self.cache = cache

    def __len__(self) -> int:
        return self.cache.num_images

    def __getitems__(self, rows: List[int]) -> Dict[str, torch.Tensor]:
        return _batch(self.cache.read_rows(rows), self.cache.labels, rows)


class TensorRows(_Batched):
    """Batches gathered from a CPU tensor (a small dataset streamed with ``--data_in_memory no``)."""

    def __init__(self, images: torch.Tensor, labels: Optional[torch.Tensor]) -> None:
        self.images = images
        self.labels = labels

    def __len__(self) -> int:
        return self.images.shape[0]

    def __getitems__(self, rows: List[int]) -> Dict[str, torch.Tensor]:
        return _batch(self.images[torch.as_tensor(rows, dtype=torch.int64)], self.labels, rows)


class DecodedRows(_Batched):
    """Batches decoded on the fly (``--data_cache_dir none``): no disk space, but every epoch pays
    the decode again; with enough workers that can still keep up with a large model."""

    def __init__(self, items, labels: Optional[torch.Tensor]) -> None:
        assert isinstance(items, (FolderImages, HFImages))
        self.items = items
        self.labels = labels

    def __len__(self) -> int:
        return len(self.items)

    def __getitems__(self, rows: List[int]) -> Dict[str, torch.Tensor]:
        images = []
        for row in rows:
            image, _, err = self.items[row]
            if image is None:
                # Without the cache there is no decode pass to leave broken files out up front.
                raise WorkerUserError(
                    f"{self.items.describe(row)}: unreadable image ({err}); remove it, or drop "
                    "--data_cache_dir none so the cache build skips it"
                )
            images.append(image)
        return _batch(torch.stack(images), self.labels, rows)


def _passthrough(batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    return batch  # __getitems__ already stacked it


def stream_loader(
    dataset: Dataset, sampler: Sampler, batch_size: int, num_workers: int, pin_memory: bool
) -> DataLoader:
    """Persistent workers keep their open file and warm state from epoch to epoch; pinned host
    memory (CUDA) lets the copy to the device run asynchronously (the Accelerator is built with
    non-blocking transfers). ``drop_last`` as in memory: every step sees a full batch."""
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        drop_last=True,
        num_workers=num_workers,
        collate_fn=_passthrough,
        pin_memory=pin_memory,
        persistent_workers=num_workers > 0,
        prefetch_factor=4 if num_workers else None,
    )


def stop_workers(loader) -> None:
    """Stop a loader's persistent worker processes now, at the end of training. Left to the
    garbage collector (the loader sits in reference cycles with the run), the shutdown can run
    after the queues it signals the workers through were finalised: each worker is then waited
    for 5 s and killed, at whatever later ``gc.collect`` of the same process (5-20 s seen in a
    process that trains several times, as a notebook or a test session does)."""
    base = getattr(loader, "base_dataloader", loader)  # accelerate's DataLoaderShard wraps the DataLoader
    iterator = getattr(base, "_iterator", None)  # only persistent workers outlive their epoch
    if iterator is not None and hasattr(iterator, "_shutdown_workers"):
        iterator._shutdown_workers()
        base._iterator = None  # a later pass starts fresh workers
