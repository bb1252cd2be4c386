"""Image datasets decoded once into one uint8 tensor ``[N, C, H, W]`` (plus int64 labels).

Every source (scikit-learn's bundled digits, an image folder, torchvision's MNIST /
Fashion-MNIST / CIFAR-10) ends up in the same :class:`ImageData`, so training never decodes or
resizes per step: a batch is an index into a tensor that can live on the accelerator.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageOps

from ..errors import UserError

log = logging.getLogger(__name__)

DATASETS = (
    "digits",
    "folder",
    "mnist",
    "fashion_mnist",
    "cifar10",
    "imagefolder",
    "hub",
)  # the last two: gan_accel.data.hf
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".webp")
ORIENTATION_TAG = 0x0112  # EXIF Orientation: 1 upright, 2-8 mirrored and/or rotated


@dataclass
class ImageData:
    """Decoded images and their labels."""

    images: torch.Tensor  # uint8 [N, C, H, W], 0..255
    labels: Optional[torch.Tensor]  # int64 [N] or None (unlabelled folder)
    class_names: List[str] = field(default_factory=list)
    name: str = ""
    skipped_files: int = 0  # unreadable files left out (folder datasets)

    def __len__(self) -> int:
        return self.images.shape[0]

    @property
    def channels(self) -> int:
        return self.images.shape[1]

    @property
    def num_classes(self) -> int:
        return len(self.class_names) if self.labels is not None else 0


def to_float_images(images_u8: torch.Tensor) -> torch.Tensor:
    """uint8 0..255 -> float in [-1, 1] (the range of G's tanh output)."""
    return images_u8.float().div_(127.5).sub_(1.0)


def _resize_batch(x: torch.Tensor, image_size: int) -> torch.Tensor:
    """Resize float ``[N, C, H, W]`` so the shorter side is ``image_size``, then centre-crop."""
    h, w = x.shape[-2:]
    if (h, w) == (image_size, image_size):
        return x
    scale = image_size / min(h, w)
    nh = max(image_size, round(h * scale))
    nw = max(image_size, round(w * scale))
    x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=scale < 1)
    top = (nh - image_size) // 2
    left = (nw - image_size) // 2
    return x[..., top : top + image_size, left : left + image_size]


def _finish(images: torch.Tensor, image_size: int, channels: int, chunk: int = 4096) -> torch.Tensor:
    """uint8/float ``[N, C, H, W]`` in 0..255 -> uint8 ``[N, channels, S, S]``."""
    out = []
    for start in range(0, images.shape[0], chunk):
        x = images[start : start + chunk].float()
        x = _resize_batch(x, image_size)
        if x.shape[1] == 1 and channels == 3:
            x = x.repeat(1, 3, 1, 1)  # a real copy: the in-place rounding below cannot write into an expand() view
        elif x.shape[1] == 3 and channels == 1:
            x = (x * torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)).sum(1, keepdim=True)
        out.append(x.round_().clamp_(0, 255).to(torch.uint8))
    return torch.cat(out) if out else torch.empty(0, channels, image_size, image_size, dtype=torch.uint8)


def _digits_table() -> np.ndarray:
    """scikit-learn's digits as its ``[1797, 65]`` table: 64 pixels (8x8, row-major) and the label.

    Read from the file scikit-learn ships, which is what ``load_digits`` reads: importing
    ``sklearn.datasets`` (scipy and most of scikit-learn) costs 1.3-1.5 s of every run's start on
    a 2-core CPU, against 0.02 s for the file. ``load_digits`` is the fallback if the file moves.
    """
    spec = importlib.util.find_spec("sklearn")  # locates the package without importing it
    path = Path(spec.submodule_search_locations[0], "datasets", "data", "digits.csv.gz") if spec else None
    if path is not None and path.is_file():
        return np.loadtxt(path, delimiter=",")
    from sklearn.datasets import load_digits

    digits = load_digits()
    return np.concatenate([digits.data, digits.target[:, None]], axis=1)


def _load_digits() -> Tuple[torch.Tensor, torch.Tensor]:
    table = _digits_table()
    # 17 grey levels 0..16 (ink is high) -> 0..255 with white ink on black, like MNIST.
    pixels = table[:, :64].reshape(-1, 1, 8, 8).astype(np.float32) * (255.0 / 16.0)
    return torch.from_numpy(pixels), torch.from_numpy(table[:, 64].astype(np.int64))


def _load_torchvision(
    name: str, data_dir: Optional[str], download: bool
) -> Tuple[torch.Tensor, torch.Tensor, List[str]]:
    import torchvision.datasets as tvd

    if not data_dir:
        raise UserError(f"--dataset {name} needs --data_dir (where the files are, or where --download puts them)")
    cls = {"mnist": tvd.MNIST, "fashion_mnist": tvd.FashionMNIST, "cifar10": tvd.CIFAR10}[name]
    try:
        ds = cls(root=data_dir, train=True, download=download)
    except RuntimeError as err:
        hint = "pass --download to fetch it" if not download else "check the network or copy the files there"
        raise UserError(f"--data_dir {data_dir}: no {name} training set found ({err}); {hint}") from None
    except OSError as err:
        raise UserError(f"--data_dir {data_dir}: could not read {name} ({err})") from None
    data = ds.data
    data = torch.as_tensor(np.asarray(data))
    data = data.permute(0, 3, 1, 2) if data.ndim == 4 else data.unsqueeze(1)
    return data, torch.as_tensor(np.asarray(ds.targets), dtype=torch.int64), list(ds.classes)


def _pil_to_array(img, channels: int) -> np.ndarray:
    """Any PIL mode (RGBA, palette, 16-bit grey, CMYK, ...) -> uint8 HxWxC."""
    if img.mode in ("I;16", "I;16B", "I;16L", "I"):
        arr = np.asarray(img, dtype=np.float64)
        hi = 65535.0 if img.mode.startswith("I;16") or arr.max() > 255 else 255.0
        grey = Image.fromarray(np.clip(arr * (255.0 / hi), 0, 255).astype(np.uint8), mode="L")
        img = grey
    elif img.mode == "F":
        img = Image.fromarray(np.clip(np.asarray(img), 0, 255).astype(np.uint8), mode="L")
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        # Composite transparency on black (the background of the other datasets).
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (0, 0, 0, 255))
        img = Image.alpha_composite(background, rgba)
    img = img.convert("L" if channels == 1 else "RGB")
    arr = np.asarray(img, dtype=np.uint8)
    return arr[:, :, None] if arr.ndim == 2 else arr


def _images_under(folder: Path) -> List[Path]:
    return sorted(q for q in folder.rglob("*") if q.suffix.lower() in IMAGE_EXTENSIONS and q.is_file())


def _top_level_images(root: Path) -> List[Path]:
    return sorted(q for q in root.iterdir() if q.is_file() and q.suffix.lower() in IMAGE_EXTENSIONS)


def _class_folders(root: Path) -> List[Tuple[Path, List[Path]]]:
    """The first-level sub-folders holding images, with their images."""
    subdirs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    labelled = [(d, _images_under(d)) for d in subdirs]
    return [(d, files) for d, files in labelled if files]


def unlabelled_reason(root: Path) -> str:
    """Why a folder read without labels has none, for an error that needs them: a stray image at
    the top level turns a folder of class sub-folders into an unlabelled one."""
    classes = [d.name for d, _ in _class_folders(root)]
    strays = _top_level_images(root)
    if not (classes and strays):
        return "has no class sub-folders"
    more_classes = ", ..." if len(classes) > 4 else ""
    more_strays = ", ..." if len(strays) > 1 else ""
    return (
        f"has class sub-folders ({', '.join(classes[:4])}{more_classes}) but also {len(strays)} image(s) at its "
        f"top level ({strays[0]}{more_strays}), so it is read unlabelled; move them into a class sub-folder or "
        "out of the folder"
    )


def _list_folder(root: Path) -> Tuple[List[Path], Optional[List[int]], List[str]]:
    labelled = _class_folders(root)
    if labelled and not _top_level_images(root):
        # torchvision ImageFolder convention: one first-level sub-folder per class.
        class_names = [d.name for d, _ in labelled]
        files = [f for _, fs in labelled for f in fs]
        labels = [i for i, (_, fs) in enumerate(labelled) for _ in fs]
        return files, labels, class_names
    return _images_under(root), None, []


# What PIL raises for a file that is not a readable image; such files are skipped and counted.
# UnidentifiedImageError is an OSError. A decompression bomb (more pixels than
# Image.MAX_IMAGE_PIXELS: an error above twice the limit, a warning between, turned into an error
# by ``bombs_as_errors``) is skipped like a corrupt file rather than decoded.
UNREADABLE_ERRORS = (OSError, ValueError, SyntaxError, Image.DecompressionBombError, Image.DecompressionBombWarning)


@contextmanager
def bombs_as_errors():
    """Raise PIL's DecompressionBombWarning (an image between one and two times the pixel limit)
    instead of decoding it: the caller skips it as unreadable."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        yield


def folder_files(data_dir: Optional[str]) -> Tuple[Path, List[Path], Optional[List[int]], List[str]]:
    """Check ``--data_dir`` and list its images: (root, files, labels or None, class names)."""
    if not data_dir:
        raise UserError(
            "--dataset folder needs --data_dir PATH (a folder of images, optionally one sub-folder per class)"
        )
    root = Path(data_dir)
    if not root.exists():
        raise UserError(f"--data_dir {data_dir}: does not exist; point it at a folder of images")
    if not root.is_dir():
        raise UserError(f"--data_dir {data_dir}: not a folder; point it at a folder of images")
    if not os.access(root, os.R_OK | os.X_OK):
        raise UserError(f"--data_dir {data_dir}: folder is not readable (check its permissions)")
    files, labels, class_names = _list_folder(root)
    if not files:
        raise UserError(f"--data_dir {data_dir}: no images ({', '.join(IMAGE_EXTENSIONS)}) found under it")
    return root, files, labels, class_names


def decode_pil(img, image_size: int, channels: int) -> Tuple[torch.Tensor, bool]:
    """One PIL image -> uint8 ``[1, channels, S, S]`` and whether it had to be upscaled. Every
    path (in memory, the decode cache, streaming, Hugging Face datasets) decodes through here,
    so they all give the same pixels, upright: a camera's EXIF orientation is applied here (Hugging
    Face ``datasets`` applies it when it decodes a row; applying it twice is harmless, since the
    transposed image carries no orientation tag)."""
    if img.getexif().get(ORIENTATION_TAG, 1) != 1:
        img = ImageOps.exif_transpose(img)
    arr = _pil_to_array(img, channels)
    t = torch.from_numpy(arr.copy()).permute(2, 0, 1).unsqueeze(0)
    return _finish(t, image_size, channels), min(arr.shape[:2]) < image_size


def decode_image_file(path, image_size: int, channels: int) -> Tuple[torch.Tensor, bool]:
    """Decode one file (raises one of ``UNREADABLE_ERRORS`` for a broken one)."""
    with bombs_as_errors(), Image.open(path) as img:
        img.load()
        return decode_pil(img, image_size, channels)


def _load_folder(
    data_dir: Optional[str], image_size: int, channels: int, size_flag: Optional[str] = None
) -> ImageData:
    root, files, labels, class_names = folder_files(data_dir)
    arrays = []
    kept = []
    skipped = 0
    small = 0
    for i, path in enumerate(files):
        try:
            image, upscaled = decode_image_file(path, image_size, channels)
        except UNREADABLE_ERRORS as err:
            skipped += 1
            log.warning("skipping unreadable image %s (%s)", path, err)
            continue
        small += upscaled
        arrays.append(image)
        kept.append(i)
    if not arrays:
        raise UserError(
            f"--data_dir {data_dir}: none of the {len(files)} image files could be read (all corrupt or unsupported)"
        )
    if skipped:
        log.warning("%d of %d image files under %s were unreadable and skipped", skipped, len(files), data_dir)
    if small:
        log.warning(
            "%d images under %s are smaller than %s and were upscaled",
            small,
            data_dir,
            size_flag or f"--image_size {image_size}",
        )
    label_tensor = torch.tensor([labels[i] for i in kept], dtype=torch.int64) if labels is not None else None
    return ImageData(torch.cat(arrays), label_tensor, class_names, name=f"folder:{root}", skipped_files=skipped)


def load_image_data(
    dataset: str,
    data_dir: Optional[str] = None,
    image_size: int = 32,
    channels: int = 1,
    download: bool = False,
    size_flag: Optional[str] = None,
) -> ImageData:
    """Load a whole dataset as uint8 ``[N, channels, image_size, image_size]`` on the CPU.
    ``size_flag`` is how warnings name ``image_size`` when the user did not pass it as such (default
    ``--image_size N``)."""
    if dataset == "digits":
        images, labels = _load_digits()
        return ImageData(_finish(images, image_size, channels), labels, [str(i) for i in range(10)], name="digits")
    if dataset == "folder":
        return _load_folder(data_dir, image_size, channels, size_flag)
    if dataset in ("mnist", "fashion_mnist", "cifar10"):
        images, labels, classes = _load_torchvision(dataset, data_dir, download)
        return ImageData(_finish(images, image_size, channels), labels, classes, name=dataset)
    if dataset in ("imagefolder", "hub"):
        raise UserError(
            f"--dataset {dataset} is read through gan_accel.data.source (the training script); use --dataset folder here"
        )
    raise UserError(f"--dataset must be one of {', '.join(DATASETS)}; got {dataset!r}")
