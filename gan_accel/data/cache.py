"""The decode cache: a dataset decoded once (resize, crop, channels) into an on-disk uint8 array.

An entry is a folder ``CACHE_DIR/<name>-<S>px-<C>ch-<key>/`` holding ``images.u8`` (the raw
``[N, C, S, S]`` array, row after row), ``labels.npy`` (when labelled) and ``meta.json``. The key
hashes what the pixels depend on: every file's relative path and a hash of its bytes (``content.py``:
a copy that keeps size and mtime with other pixels is a change; or a Hugging Face dataset's
fingerprint) plus the image settings and this format's version, so a changed folder
gets a new entry. An entry is built in a temporary sibling folder and renamed into place only
when complete, so a crashed build never looks finished. Rows are read with ``os.pread`` on demand.

What opening an entry checks (the user documentation quotes this). Every time an entry is
opened, before any row is used:

- ``meta.json`` against a hash of its own content (image count, shape, class names and their
  order, the key, the hashes below), so an edited or damaged ``meta.json`` is caught;
- ``images.u8``: its exact size, and an xxh3-128 hash of ALL its bytes against the one recorded
  when the entry was built (any overwritten, flipped or zeroed byte, at any offset, even with the
  file's modification time restored);
- ``labels.npy``: a hash of all its bytes (a shifted or edited label is caught).

Any mismatch makes the entry count as missing: it is rebuilt from the images, with a line saying
why. Opening therefore reads the whole array once: 5,000 RGB images of 64 px (61 MB) open in about
50 ms, 15 MB in about 16 ms, with the file in the page cache on a 2-core machine (the former
size-and-last-64-KiB check took 0.1 ms); from disk, opening runs at the disk's speed. Not covered: a
file changed while a run is reading it (rows are not re-hashed as they are read), and a deliberate
edit that also rewrites the recorded hashes: the hashes catch damage, they are not a signature.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, Sequence

import numpy as np
import torch
import xxhash

from ..errors import UserError
from ..writes import declare_output, write_point
from .decode import decode_all

log = logging.getLogger(__name__)

FORMAT_VERSION = 2  # 2: EXIF orientation applied; full hashes of every file
READ_BYTES = 8 << 20  # hashing reads the array in blocks of this size (memory stays one block)


def default_cache_root() -> Path:
    """``$GAN_ACCEL_CACHE``, else ``$XDG_CACHE_HOME/gan_accel``, else ``~/.cache/gan_accel``: outside
    the data folder, which may be read-only or shared, and shared by every run on the machine."""
    if os.environ.get("GAN_ACCEL_CACHE"):
        return Path(os.environ["GAN_ACCEL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gan_accel"


def folder_key(
    root: Path, files: Sequence[Path], digests: Sequence[str], labels: Optional[Sequence[int]], settings: dict
) -> str:
    """Hash of the file list (relative path, content hash from ``content_digests``, label) and the
    decode settings."""
    h = hashlib.sha256(json.dumps({"version": FORMAT_VERSION, **settings}, sort_keys=True).encode())
    for i, path in enumerate(files):
        label = labels[i] if labels is not None else -1
        # fsencode: a file name that is not valid UTF-8 comes back as its original bytes, where
        # str.encode() would refuse the surrogates Python decodes such names to.
        h.update(os.fsencode(os.path.relpath(path, root)) + f"\0{digests[i]}\0{label}\n".encode())
    return h.hexdigest()


def settings_key(settings: dict) -> str:
    return hashlib.sha256(json.dumps({"version": FORMAT_VERSION, **settings}, sort_keys=True).encode()).hexdigest()


def file_digest(path: Path) -> str:
    """xxh3-128 of every byte of ``path``: about ten times the speed of sha256 here (3.3 GB/s
    against 0.37), which is what makes hashing the whole array at every open affordable."""
    digest = xxhash.xxh3_128()
    buffer = bytearray(READ_BYTES)  # one buffer refilled: no new bytes object per block
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as f:
        while True:
            count = f.readinto(buffer)
            if not count:
                return digest.hexdigest()
            digest.update(view[:count])


def meta_digest(meta: dict) -> str:
    """Hash of meta.json's content, its own hash left out."""
    content = {key: value for key, value in meta.items() if key != "meta_xxh3"}
    return xxhash.xxh3_128(json.dumps(content, sort_keys=True).encode()).hexdigest()


@dataclass
class ImageCache:
    """An opened, validated entry. Rows are read with ``os.pread``, not a memory map: mapped pages
    of a file count in the process's RSS once touched, so an epoch over a memory map would grow
    every reader to the size of the dataset; ``pread`` goes through the shared page cache."""

    path: Path
    num_images: int
    shape: tuple  # (C, S, S)
    labels: Optional[torch.Tensor]  # int64 [N] or None
    class_names: List[str] = field(default_factory=list)
    skipped: int = 0
    _fd: Optional[int] = field(default=None, repr=False)
    _pid: int = field(default=-1, repr=False)

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.shape))

    def _file(self) -> int:
        # One descriptor per process: DataLoader workers are forked and must not share one's state.
        if self._fd is None or self._pid != os.getpid():
            self._fd = os.open(self.path / "images.u8", os.O_RDONLY)
            self._pid = os.getpid()
        return self._fd

    def read_rows(self, rows: Sequence[int]) -> torch.Tensor:
        """uint8 ``[len(rows), C, S, S]``, in the order given."""
        fd = self._file()
        n = self.row_bytes
        out = np.empty((len(rows), n), dtype=np.uint8)
        for j, row in enumerate(rows):
            if os.preadv(fd, [out[j]], int(row) * n) != n:
                raise OSError(f"{self.path}: short read at row {row}; delete the folder to rebuild it")
        return torch.from_numpy(out).view(len(rows), *self.shape)

    def read_all(self) -> torch.Tensor:
        array = np.fromfile(self.path / "images.u8", dtype=np.uint8, count=self.num_images * self.row_bytes)
        return torch.from_numpy(array).view(self.num_images, *self.shape)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_fd": None, "_pid": -1}


def open_cache(entry: Path, key: str) -> "tuple[Optional[ImageCache], str]":
    """The entry if it is complete and matches ``key``; else ``(None, why)``."""
    try:
        meta = json.loads((entry / "meta.json").read_text())
    except FileNotFoundError:
        return None, "no cache yet"
    except (OSError, ValueError) as err:
        return None, f"unreadable meta.json ({err})"
    if not isinstance(meta, dict) or meta.get("version") != FORMAT_VERSION or meta.get("key") != key:
        return None, "stale (other format or key)"
    if meta.get("meta_xxh3") != meta_digest(meta):
        return None, "meta.json does not match its recorded hash (edited or corrupt)"
    shape = tuple(meta["shape"])
    n = meta["num_images"]
    images = entry / "images.u8"
    size = images.stat().st_size if images.is_file() else -1
    if size != n * int(np.prod(shape)):
        return None, f"images.u8 is {size} bytes, expected {n * int(np.prod(shape))} (truncated or partial)"
    if file_digest(images) != meta["images_xxh3"]:
        return None, "images.u8 does not match its recorded hash (corrupt)"
    labels = None
    if meta["labelled"]:
        try:
            if file_digest(entry / "labels.npy") != meta["labels_xxh3"]:
                return None, "labels.npy does not match its recorded hash (corrupt)"
            labels = torch.from_numpy(np.load(entry / "labels.npy"))
        except (OSError, ValueError) as err:
            return None, f"unreadable labels.npy ({err})"
        if labels.shape != (n,):
            return None, "labels.npy does not match the images"
    return ImageCache(entry, n, shape, labels, meta["class_names"], meta["skipped"]), ""


def build_cache(
    entry: Path,
    key: str,
    items,
    labels: Optional[Sequence[int]],
    class_names: List[str],
    shape: tuple,
    num_workers: int,
    what: str,
    progress: Callable = lambda done, total: None,
) -> ImageCache:
    """Decode ``items`` (see ``decode.py``) into a new entry at ``entry``; unreadable ones are left
    out (and their labels with them). Written under a temporary name and renamed when complete."""
    from ..loop.atomic import WRITE_ERRORS, write_failure  # on use: the loop package imports this one

    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.parent / f".tmp-{entry.name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        write_point(tmp)
        kept = []
        skipped = 0
        upscaled = 0
        with open(tmp / "images.u8", "wb") as out:
            for i, (image, small, err) in decode_all(items, num_workers):
                if image is None:
                    skipped += 1
                    log.warning("skipping unreadable image %s (%s)", items.describe(i), err)
                else:
                    out.write(image.numpy().tobytes())
                    kept.append(i)
                    upscaled += small
                progress(i + 1, len(items))
            out.flush()
            os.fsync(out.fileno())
        if not kept:
            raise UserError(f"{what}: none of the {len(items)} image files could be read (all corrupt or unsupported)")
        if skipped:
            log.warning("%d of %d images of %s were unreadable and skipped", skipped, len(items), what)
        if upscaled:
            log.warning(
                "%d images of %s are smaller than --image_size %d and were upscaled", upscaled, what, shape[-1]
            )
        if labels is not None:
            np.save(tmp / "labels.npy", np.asarray([labels[i] for i in kept], dtype=np.int64))
        meta = {
            "version": FORMAT_VERSION,
            "key": key,
            "num_images": len(kept),
            "shape": list(shape),
            "labelled": labels is not None,
            "class_names": list(class_names),
            "skipped": skipped,
            "source": what,
            "images_xxh3": file_digest(tmp / "images.u8"),
        }
        if labels is not None:
            meta["labels_xxh3"] = file_digest(tmp / "labels.npy")
        meta["meta_xxh3"] = meta_digest(meta)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        _replace(tmp, entry)
    except WRITE_ERRORS as err:
        raise write_failure("decode cache", entry, err, "nothing was written") from err
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cache, why = open_cache(entry, key)
    if cache is None:
        raise OSError(f"{entry}: the decode cache just written does not validate ({why})")
    return cache


def _replace(tmp: Path, entry: Path) -> None:
    """Move a finished build into place. A stale or broken entry is moved aside first; if another
    process finished the same entry meanwhile, keep theirs (both hold the same pixels)."""
    if entry.exists():
        trash = entry.parent / f".old-{entry.name}-{uuid.uuid4().hex[:8]}"
        try:
            entry.rename(trash)
        except FileNotFoundError:
            pass
        shutil.rmtree(trash, ignore_errors=True)
    try:
        tmp.rename(entry)
    except OSError:
        if not (entry / "meta.json").exists():
            raise


def writable_root(root: Path, flag: str = "--data_cache_dir") -> Path:
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(
            f"{flag} {root}: cannot create it ({err.strerror}); pass a writable folder or 'none'"
        ) from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {root}: not writable; pass a writable folder or 'none' (decode on the fly)")
    declare_output(flag, root)  # a failed write in it names this flag
    return root
