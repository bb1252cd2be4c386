"""What a folder of images holds, by content: an xxh3-128 hash of every file's bytes.

The decode cache's key and the resume fingerprint name a file by this hash, not by its size and
modification time: ``cp -p``, ``rsync -a`` and ``tar x`` keep both while the pixels change, and a
copy without ``-p`` changes the time while the pixels stay.

Cost: every start reads every image file once more. The hash runs at several GB/s (xxh3, see
``cache.file_digest``), so reading is what costs: a few tens of ms for a folder of some thousand
small images in the page cache, the disk's speed for a folder that is not (a cache miss then decodes
from the page cache, so the decode does not read the disk twice). Files are read by a few threads
(reads release the GIL), so per-file latency on network file systems overlaps. ``ImageSource``
keeps the hashes it computed for the cache key, so the fingerprint of the same run reuses them.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import List, Sequence, Union

import xxhash

READ_BYTES = 1 << 20  # a small image is one read; a large one is hashed block by block
CHUNK = 256  # files per thread task: a task per file would cost as much as hashing a small one
MAX_THREADS = 8


def content_digest(path: Union[str, Path]) -> str:
    """xxh3-128 of every byte of one file."""
    digest = xxhash.xxh3_128()
    with open(path, "rb", buffering=0) as f:
        while True:
            block = f.read(READ_BYTES)
            if not block:
                return digest.hexdigest()
            digest.update(block)


def _digests(paths: Sequence[Union[str, Path]]) -> List[str]:
    return [content_digest(path) for path in paths]


def content_digests(files: Sequence[Union[str, Path]]) -> List[str]:
    """``content_digest`` of each file, in order."""
    if len(files) <= CHUNK:
        return _digests(files)
    chunks = [files[i : i + CHUNK] for i in range(0, len(files), CHUNK)]
    threads = min(MAX_THREADS, len(chunks), os.cpu_count() or 1)
    with ThreadPoolExecutor(threads) as pool:
        return [digest for part in pool.map(_digests, chunks) for digest in part]
