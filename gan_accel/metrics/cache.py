"""Where evaluation artefacts are cached, and the keys that name them.

Cache files are keyed by everything that changes their content (dataset, image size, channels,
a hash of the pixels and labels, the split, the settings that built them), so a stale file is
never reused: a changed input gives a new file name instead.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Optional

import torch

from ..data import ImageData
from ..loop.atomic import WRITE_ERRORS, write_failure
from ..writes import write_point

CACHE_ENV = "GAN_ACCEL_CACHE"


def resolve_cache_dir(cache_dir: Optional[str] = None) -> Path:
    """``cache_dir`` if given, else ``$GAN_ACCEL_CACHE``, else ``~/.cache/gan_accel``."""
    if cache_dir:
        return Path(cache_dir)
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "gan_accel")


def data_fingerprint(real: ImageData) -> str:
    """sha256 of the pixels, labels, shape and name: two datasets with the same fingerprint give
    the same classifier and reference statistics."""
    h = hashlib.sha256()
    h.update(f"{real.name}|{tuple(real.images.shape)}|{real.class_names}".encode())
    h.update(real.images.contiguous().numpy().tobytes())
    if real.labels is not None:
        h.update(real.labels.contiguous().numpy().tobytes())
    return h.hexdigest()


def tensor_hash(t: torch.Tensor) -> str:
    """Short sha256 of a CPU tensor's bytes (e.g. the held-out indices)."""
    return hashlib.sha256(t.contiguous().numpy().tobytes()).hexdigest()[:16]


def settings_key(**settings: Any) -> str:
    """A short stable hash of JSON-serialisable settings (sorted keys)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def save_atomic(obj: Any, path: Path) -> None:
    """``torch.save`` to a temporary file then rename, so a crash or a concurrent reader never
    sees a half-written cache file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write_point(tmp)
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except WRITE_ERRORS as err:
        tmp.unlink(missing_ok=True)
        raise write_failure("cache file", path, err, "the metrics are computed again next time") from err


def load_cached(path: Path) -> Optional[Any]:
    """The cached object, or None when the file is missing or unreadable (it is then rebuilt)."""
    if not path.is_file():
        return None
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # a truncated/corrupt cache is not the user's problem: rebuild it
        return None
