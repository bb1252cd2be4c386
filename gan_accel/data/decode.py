"""Decoding many images in parallel worker processes.

A decodable source is a map-style dataset whose item ``i`` is ``(uint8 [C, S, S] or None, upscaled,
error)``: ``None`` for a file that is not a readable image (it is skipped and counted, as the
in-memory path always did). Two sources: the files of an image folder, and the rows of a Hugging
Face ``datasets`` table. A ``DataLoader`` runs them in workers, so the worker start-up, thread
settings and ordering are PyTorch's, and items come back in index order.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple

import torch
from torch.utils.data import DataLoader, Dataset

from .images import UNREADABLE_ERRORS, bombs_as_errors, decode_image_file, decode_pil

log = logging.getLogger(__name__)

Decoded = Tuple[Optional[torch.Tensor], bool, str]


class FolderImages(Dataset):
    """The files of an image folder, decoded one by one (``decode_image_file``, as in memory)."""

    def __init__(self, files: Sequence[Path], image_size: int, channels: int) -> None:
        # Plain strings: a list of Path objects costs several times the memory per file.
        self.files = [str(f) for f in files]
        self.image_size = image_size
        self.channels = channels

    def __len__(self) -> int:
        return len(self.files)

    def describe(self, i: int) -> str:
        return self.files[i]

    def __getitem__(self, i: int) -> Decoded:
        try:
            image, upscaled = decode_image_file(self.files[i], self.image_size, self.channels)
        except UNREADABLE_ERRORS as err:
            return None, False, str(err)
        return image[0], upscaled, ""


class HFImages(Dataset):
    """Rows of a Hugging Face ``datasets`` table; ``column`` holds an ``Image`` feature."""

    def __init__(self, table, column: str, image_size: int, channels: int) -> None:
        self.table = table
        self.column = column
        self.image_size = image_size
        self.channels = channels

    def __len__(self) -> int:
        return len(self.table)

    def describe(self, i: int) -> str:
        return f"row {i} of {self.column!r}"

    def __getitem__(self, i: int) -> Decoded:
        try:
            with bombs_as_errors():  # the row's PIL image is opened when the row is read
                img = self.table[int(i)][self.column]
                img.load()
                image, upscaled = decode_pil(img, self.image_size, self.channels)
        except UNREADABLE_ERRORS as err:
            return None, False, str(err)
        return image[0], upscaled, ""


def _stack(batch: List[Decoded]) -> Tuple[torch.Tensor, List[Tuple[bool, bool, str]]]:
    """In the worker: one uint8 tensor for the readable images of a chunk (one shared-memory
    transfer per chunk, not one per image) and (readable, upscaled, error) per item."""
    images = [image for image, _, _ in batch if image is not None]
    flags = [(image is not None, upscaled, err) for image, upscaled, err in batch]
    return (torch.stack(images) if images else torch.empty(0, dtype=torch.uint8)), flags


def decode_all(items: Dataset, num_workers: int, chunk: int = 64) -> Iterator[Tuple[int, Decoded]]:
    """Yield ``(index, item)`` for every item, in order, decoded by ``num_workers`` processes
    (0: in this process)."""
    loader = DataLoader(
        items, batch_size=chunk, num_workers=num_workers, collate_fn=_stack, prefetch_factor=4 if num_workers else None
    )
    index = 0
    for images, flags in loader:
        readable = iter(images)
        for ok, upscaled, err in flags:
            yield index, ((next(readable) if ok else None), upscaled, err)
            index += 1
