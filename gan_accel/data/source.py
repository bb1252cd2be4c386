"""One interface to the training images, in memory or streamed: the trainer asks it for the
loader and, per batch, for the float images and labels of that batch.

In memory (today's fast path): the decoded uint8 dataset sits on the accelerator and the loader
yields sample indices; a batch is a gather, never a decode or a host-to-device copy. Streamed:
the loader's workers gather uint8 batches from the decode cache (or decode them on the fly) and
Accelerate copies each batch to the device. Both loaders use the same sampler, so the same
indices give the same pixels.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple, Union

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from ..errors import ConfigError
from .cache import ImageCache, build_cache, default_cache_root, folder_key, open_cache, settings_key, writable_root
from .content import content_digests
from .decode import FolderImages, HFImages, decode_all
from .images import ImageData, folder_files, load_image_data, to_float_images, unlabelled_reason
from .memory import choose_in_memory
from .streaming import CachedRows, DecodedRows, TensorRows, stream_loader

NO_CACHE = "none"


def available_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


# In memory, images up to this size as floats are converted once, where the loader is made: per
# batch the conversion is three small kernels (~0.1 ms), a visible share of a small model's update.
FLOAT_COPY_MAX_BYTES = 256 * 2**20
EVAL_SUBSET = 25_000  # real images the evaluator sees when streaming (reference 10k + held-out)


@dataclass
class ImageSource:
    name: str
    shape: Tuple[int, int, int]  # (C, S, S)
    labels: Optional[torch.Tensor]  # int64 [N] on the CPU, or None
    class_names: List[str]
    in_memory: bool
    reason: str  # why this path was chosen (printed at start)
    images: Optional[torch.Tensor] = None  # uint8 [N, C, S, S] on the CPU (in memory)
    stream: Optional[Dataset] = None  # batches of {"images", "labels"} (streamed)
    cache: Optional[ImageCache] = None
    channels_last: bool = False
    unlabelled_reason: str = "has no class sub-folders"  # ends the error of a run that needs labels
    # The content hash of each image file (str path -> xxh3), when the cache key computed them: the
    # run's data fingerprint reuses them instead of reading every file again.
    file_digests: Optional[Dict[str, str]] = None
    _on_device: Dict[str, torch.Tensor] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return self.images.shape[0] if self.in_memory else len(self.stream)

    @property
    def channels(self) -> int:
        return self.shape[0]

    @property
    def image_size(self) -> int:
        return self.shape[-1]

    @property
    def num_classes(self) -> int:
        return len(self.class_names) if self.labels is not None else 0

    def check_batch_size(self, batch_size: int, num_processes: int) -> None:
        """Refuse, in one line naming --batch_size, a batch that gives some process no full batch
        (the loader drops the last incomplete one)."""
        if len(self) // batch_size < num_processes:
            raise ConfigError(
                f"--batch_size {batch_size} x {num_processes} processes is larger than the dataset "
                f"({len(self)} images); lower --batch_size"
            )

    def describe(self) -> str:
        where = "in memory on the accelerator" if self.in_memory else "streamed by DataLoader workers"
        origin = f" from the decode cache {self.cache.path}" if self.cache is not None else ""
        return f"{where}{origin} ({self.reason})"

    def make_loader(
        self, batch_size: int, sampler: Sampler, num_workers: int, device: torch.device, channels_last: bool = False
    ) -> DataLoader:
        """The loader to ``prepare``; in memory, also places the images on ``device``."""
        self.channels_last = channels_last
        if not self.in_memory:
            return stream_loader(self.stream, sampler, batch_size, num_workers, pin_memory=device.type == "cuda")
        images = self.images.to(device)
        if channels_last:
            images = images.contiguous(memory_format=torch.channels_last)  # batches gathered from it stay NHWC
        if images.numel() * 4 <= FLOAT_COPY_MAX_BYTES:
            images = to_float_images(images)  # the same values a batch's conversion gives, bit for bit
        self._on_device["images"] = images
        if self.labels is not None:
            self._on_device["labels"] = self.labels.to(device)
        # The dataset is the index range: a batch of indices gathers its images on the device.
        return DataLoader(range(len(self)), batch_size=batch_size, sampler=sampler, drop_last=True)

    def real_batch(
        self, batch: Union[torch.Tensor, Dict[str, torch.Tensor]]
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """A batch from the prepared loader -> (float images in [-1, 1], int64 labels or None)."""
        if self.in_memory:
            # batch: the 1-D index tensor of the index loader; index_select gathers the same rows
            # as images[batch] at about half the cost (advanced indexing is general).
            images = self._on_device.get("images")
            if images is None:  # a task's code asked before making its loader (a bare KeyError otherwise)
                raise RuntimeError(
                    f"ImageSource {self.name}: real_batch() called before make_loader(); make the loader "
                    "first (it places the images on the device) and pass real_batch the batches it yields"
                )
            labels = self._on_device.get("labels")
            images = images.index_select(0, batch)
            images = images if images.is_floating_point() else to_float_images(images)
            return images, labels.index_select(0, batch) if labels is not None else None
        real = to_float_images(batch["images"])
        if self.channels_last:
            real = real.contiguous(memory_format=torch.channels_last)
        return real, batch.get("labels")

    def image_data(self, limit: int = EVAL_SUBSET) -> ImageData:
        """The real images as an :class:`ImageData` for the evaluator: all of them in memory; a
        fixed subset of at most ``limit`` when streaming (its memory does not grow with N)."""
        if self.in_memory:
            return ImageData(self.images, self.labels, self.class_names, name=self.name)
        n = len(self)
        rows = (
            torch.randperm(n, generator=torch.Generator().manual_seed(0))[:limit].sort().values
            if n > limit
            else torch.arange(n)
        )
        batch = self.stream.__getitems__(rows.tolist())
        return ImageData(
            batch["images"], batch.get("labels"), self.class_names, name=f"{self.name}[{len(rows)} of {n}]"
        )


def from_image_data(data: ImageData, in_memory: bool, reason: str) -> ImageSource:
    source = ImageSource(data.name, tuple(data.images.shape[1:]), data.labels, data.class_names, in_memory, reason)
    if in_memory:
        source.images = data.images
    else:
        source.stream = TensorRows(data.images, data.labels)
    return source


def _decode_to_memory(
    items, labels: Optional[List[int]], num_workers: int
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    decoded = [(i, image) for i, (image, _, _) in decode_all(items, num_workers) if image is not None]
    images = torch.stack([image for _, image in decoded])
    kept = [labels[i] for i, _ in decoded] if labels is not None else None
    return images, torch.tensor(kept, dtype=torch.int64) if kept is not None else None


def open_images(data_args, accelerator) -> ImageSource:
    """The training images of a task's :class:`~gan_accel.gan.config.GANDataArguments` (bundled
    digits, MNIST, Fashion-MNIST, CIFAR-10, an image folder, a Hugging Face dataset), as the GAN
    reads them: checked (a missing folder, an image that cannot be decoded, a bad --data_dir is one
    line naming the flag), decoded once into the shared decode cache, in memory or streamed. Call it
    from ``Task.read_data`` (under ``main_process_first``: one process builds the cache, the others
    read it); messages print on the main process."""
    return open_image_source(
        data_args, accelerator.device, print_fn=accelerator.print, show_progress=accelerator.is_local_main_process
    )


def open_image_source(
    args,
    device: torch.device,
    local_processes: Optional[int] = None,
    print_fn: Callable = print,
    show_progress: bool = True,
) -> ImageSource:
    """The training images of ``args`` (:class:`GANDataArguments`), in memory or streamed."""
    source = _open_image_source(args, device, local_processes, print_fn, show_progress)
    if source.labels is None and args.dataset == "folder" and not args.dataset_name:
        source.unlabelled_reason = unlabelled_reason(Path(args.data_dir))
    return source


def _open_image_source(
    args, device: torch.device, local_processes: Optional[int], print_fn: Callable, show_progress: bool
) -> ImageSource:
    S = args.image_size
    C = args.channels
    if args.dataset not in ("folder", "imagefolder") and not args.dataset_name:
        # Bundled and torchvision sets come decoded whole anyway (and are small).
        data = load_image_data(args.dataset, args.data_dir, S, C, args.download)
        in_memory, why = choose_in_memory(
            args.data_in_memory, data.images.numel(), args.max_data_memory_mb, device, local_processes
        )
        return from_image_data(data, in_memory, why)
    settings = {"image_size": S, "channels": C}
    digests: List[str] = []
    if args.dataset == "folder" and not args.dataset_name:
        root, files, labels, class_names = folder_files(args.data_dir)
        items, name = FolderImages(files, S, C), f"folder:{root}"

        def key() -> str:  # reads every file: only when caching
            digests.extend(content_digests(files))
            return folder_key(root, files, digests, labels, settings)

    else:
        from .hf import load_hf_table

        table = load_hf_table(args.dataset, args.data_dir, args.dataset_name, args.dataset_split)
        items = HFImages(table.table, table.image_column, S, C)
        name = table.name
        labels = table.labels
        class_names = table.class_names
        key = lambda: settings_key({**settings, "fingerprint": table.fingerprint})  # noqa: E731
    in_memory, why = choose_in_memory(
        args.data_in_memory, len(items) * C * S * S, args.max_data_memory_mb, device, local_processes
    )
    workers = args.data_decode_workers if args.data_decode_workers is not None else available_cpus()
    if args.data_cache_dir == NO_CACHE:
        label_tensor = torch.tensor(labels, dtype=torch.int64) if labels is not None else None
        if not in_memory:
            return ImageSource(
                name, (C, S, S), label_tensor, class_names, False, why, stream=DecodedRows(items, label_tensor)
            )
        if isinstance(items, FolderImages):
            return from_image_data(load_image_data("folder", args.data_dir, S, C), True, why)
        images, kept_labels = _decode_to_memory(items, labels, workers)
        return ImageSource(name, (C, S, S), kept_labels, class_names, True, why, images=images)
    flag = f"--dataset_name {args.dataset_name}" if args.dataset_name else f"--data_dir {args.data_dir}"
    cache = _open_or_build(args, items, name, flag, key(), labels, class_names, workers, print_fn, show_progress)
    source = ImageSource(name, cache.shape, cache.labels, cache.class_names, in_memory, why, cache=cache)
    if digests:
        source.file_digests = dict(zip(items.files, digests))
    if in_memory:
        source.images = cache.read_all()
    else:
        source.stream = CachedRows(cache)
    return source


def _open_or_build(
    args,
    items,
    name: str,
    flag: str,
    key: str,
    labels,
    class_names,
    workers: int,
    print_fn: Callable,
    show_progress: bool,
) -> ImageCache:
    root = writable_root(Path(args.data_cache_dir) if args.data_cache_dir else default_cache_root() / "images")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name.rstrip("/").rsplit("/", 1)[-1])[-48:]
    entry = root / f"{safe}-{args.image_size}px-{args.channels}ch-{key[:16]}"
    cache, why = open_cache(entry, key)
    if cache is not None:
        print_fn(f"Decode cache: {entry} ({cache.num_images} images)")
        return cache
    # Every process that builds says so (not only the main one): with main_process_first the others
    # should find the entry complete and build nothing.
    print(f"Decode cache: building {entry} ({why}); {len(items)} images, {workers} worker processes", flush=True)
    from tqdm.auto import tqdm

    # disable=None: a bar on a terminal only, not in logs and captured output.
    with tqdm(
        total=len(items), desc="decode", unit="img", disable=None if show_progress else True, mininterval=2
    ) as bar:
        return build_cache(
            entry,
            key,
            items,
            labels,
            class_names,
            (args.channels, args.image_size, args.image_size),
            workers,
            what=flag,
            progress=lambda done, total: bar.update(1),
        )
