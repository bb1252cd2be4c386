"""Checks on the folders a script reads and writes, made before anything is written."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Union

from ..errors import UserError

PathLike = Union[str, Path]


def is_within(path: PathLike, folder: PathLike) -> bool:
    """``path`` is ``folder`` or lies under it, once symlinks and ``..`` are resolved (a path that
    does not exist yet is resolved as far as it exists)."""
    path = Path(path).resolve()
    folder = Path(folder).resolve()
    return path == folder or folder in path.parents


def check_output_outside_input(input_flag: str, input_path: PathLike, output_flag: str, output_path: PathLike) -> None:
    """Refuse an output equal to, or inside, what is read: outputs written there replace the inputs
    or are read back as inputs on the next run (``out/out/...``)."""
    if output_path is None or input_path is None or not is_within(output_path, input_path):
        return
    where = "is the same as" if Path(output_path).resolve() == Path(input_path).resolve() else "is inside"
    raise UserError(
        f"{output_flag} {output_path}: {where} {input_flag} {input_path}; the outputs would replace the "
        f"inputs or be read again as inputs; choose an {output_flag} outside {input_path}"
    )


def check_targets_outside_input(
    input_flag: str, input_dir: PathLike, output_flag: str, output_dir: PathLike, targets: Iterable[Path]
) -> None:
    """The converse case: an input folder inside the output folder is fine unless some output file
    lands inside the input folder (it would replace an input, or be read on the next run)."""
    for target in targets:
        if is_within(target, input_dir):
            raise UserError(
                f"{output_flag} {output_dir}: the output {target} would be written inside {input_flag} "
                f"{input_dir}; choose an {output_flag} that does not contain {input_dir}"
            )


def check_writable_folder(flag: str, folder: PathLike) -> None:
    """A folder that exists, or can be created: no existing file at its place or above it."""
    for path in [Path(folder), *Path(folder).parents]:
        if path.exists():
            if not path.is_dir():
                what = "is a file" if path == Path(folder) else f"cannot be created: {path} is a file"
                raise UserError(f"{flag} {folder}: {what}, not a folder; pass a folder")
            return
