"""Translate a folder of images with an exported generator: the same relative file names out."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import List, Tuple

import torch

from .. import interrupt
from ..data import IMAGE_EXTENSIONS, to_float_images
from ..data.images import UNREADABLE_ERRORS, decode_image_file  # the GAN path's decoder: any mode, EXIF orientation
from ..data.paths import check_folders, check_writable_folder
from ..errors import UserError

log = logging.getLogger(__name__)


def list_images(input_dir: Path) -> List[Path]:
    if not input_dir.is_dir():
        raise UserError(f"--input_dir {input_dir}: not a folder; point it at a folder of images")
    files = sorted(p for p in input_dir.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS)
    if not files:
        raise UserError(f"--input_dir {input_dir}: no images ({', '.join(IMAGE_EXTENSIONS)}) found under it")
    return files


def check_outputs_free(files: List[Path], input_dir: Path, output_dir: Path, overwrite: bool) -> None:
    """Refuse before anything is written when an output would replace an existing file, or an input
    (even with --overwrite: the originals would be lost), or land where the next run reads it."""
    check_writable_folder("--output_dir", output_dir)
    targets = [output_dir / f.relative_to(input_dir) for f in files]
    # What the translations write into: the top of each relative name under --output_dir.
    written_into = sorted({output_dir / f.relative_to(input_dir).parts[0] for f in files})
    check_folders({"--input_dir": input_dir}, {"--output_dir": output_dir}, {"--output_dir": written_into})
    taken = [target for target in targets if target.exists()]
    if taken and not overwrite:
        raise UserError(
            f"--output_dir {output_dir}: {len(taken)} of the output files already exist (e.g. {taken[0]}); "
            "choose another folder or pass --overwrite"
        )


@torch.no_grad()
def translate_folder(
    G: torch.nn.Module,
    input_dir: Path,
    output_dir: Path,
    image_size: int,
    channels: int,
    batch_size: int = 16,
    device: str = "cpu",
    overwrite: bool = False,
) -> Tuple[int, int]:
    """Translate every image under ``input_dir``; returns ``(written, skipped unreadable)``."""
    files = list_images(input_dir)
    check_outputs_free(files, input_dir, output_dir, overwrite)
    G = G.to(device).eval()
    # Staged beside --output_dir and moved in when all are written: a failed write leaves the
    # folder as it was, so the same command runs again (no "already exist, pass --overwrite").
    from ..loop.atomic import staged_files

    with staged_files(output_dir, "translations") as stage:
        written, skipped = _translate_into(G, files, input_dir, stage, image_size, channels, batch_size, device)
        if not written:
            raise UserError(f"--input_dir {input_dir}: none of the {len(files)} image files could be read")
    return written, skipped


def _translate_into(G, files, input_dir: Path, folder: Path, image_size: int, channels: int, batch_size: int, device):
    from torchvision.utils import save_image  # on use, as in gan_accel.sampling.save_grid

    from ..loop.atomic import atomic_file

    written = 0
    skipped = 0
    for start in range(0, len(files), batch_size):
        batch = []
        names = []
        for path in files[start : start + batch_size]:
            try:
                batch.append(decode_image_file(path, image_size, channels)[0])
                names.append(path.relative_to(input_dir))
            except UNREADABLE_ERRORS as err:
                skipped += 1
                log.warning("skipping unreadable image %s (%s)", path, err)
        if not batch:
            continue
        out = G(to_float_images(torch.cat(batch)).to(device)).float().clamp(-1, 1).cpu()
        for image, name in zip(out, names):
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with interrupt.deferred():  # a signal lands between two files, not inside one
                with atomic_file(target, "translation") as tmp:
                    save_image(image, str(tmp), normalize=True, value_range=(-1, 1))
                interrupt.phase("write")
            written += 1
    return written, skipped
