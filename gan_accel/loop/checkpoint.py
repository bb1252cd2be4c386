"""Checkpoints that cannot be corrupted.

A checkpoint is ``OUTPUT_DIR/checkpoints/step_XXXXXXXX/``: Accelerate's ``save_state`` (models,
optimizers, schedulers and RNG states, positional in ``prepare`` order) plus the loop's own files
(``trainer_state.json`` last). Everything is written into ``.tmp-step_XXXXXXXX`` and renamed into
place only when complete, so a process killed at any moment leaves the previous checkpoint intact
and ``latest`` never sees a partial one.

Each checkpoint also records the fingerprint of the data it was trained on
(``data_fingerprint.json``, see :mod:`gan_accel.data.fingerprint`): a resume on other data is
refused, or allowed with a warning by ``--allow_data_change``.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import zipfile
from pathlib import Path
from typing import Callable, Optional

from ..data.fingerprint import describe_changes
from ..errors import UserError
from ..writes import write_point
from .atomic import WRITE_ERRORS, swap_into_place, tmp_name, write_failure, write_json_durable

STATE_FILE = "trainer_state.json"
FINGERPRINT_FILE = "data_fingerprint.json"
_NAME = re.compile(r"^step_(\d{8})$")


class CheckpointManager:
    def __init__(
        self, accelerator, output_dir: Path, total_limit: int, data_fingerprint: Optional[dict] = None
    ) -> None:
        """``data_fingerprint``: what this run trains on, written into every checkpoint and checked
        on resume (None: neither)."""
        self.accelerator = accelerator
        self.root = Path(output_dir) / "checkpoints"
        self.total_limit = total_limit
        self.data_fingerprint = data_fingerprint

    # ---- finding -------------------------------------------------------------------------
    def complete_checkpoints(self) -> list:
        """Complete checkpoints, oldest first (a folder counts once it was renamed into place
        and holds its state file)."""
        if not self.root.is_dir():
            return []
        found = [p for p in self.root.iterdir() if _NAME.match(p.name) and (p / STATE_FILE).is_file()]
        return sorted(found, key=lambda p: int(_NAME.match(p.name).group(1)))

    def latest(self) -> Optional[Path]:
        done = self.complete_checkpoints()
        return done[-1] if done else None

    def resolve(self, spec: Optional[str]) -> Optional[Path]:
        """``None`` -> no resume; ``latest`` -> newest complete checkpoint or ``None`` (fresh
        start); a path -> that checkpoint, which must exist and be one of ours."""
        if not spec:
            return None
        if spec == "latest":
            return self.latest()
        path = Path(spec)
        if not path.is_dir():
            latest = self.latest()
            example = f"such as {latest}" if latest else f"named {self.root}/step_NNNNNNNN (the step, 8 digits)"
            what = "is a file, not a checkpoint folder" if path.exists() else "no such folder"
            raise UserError(f"--resume_from_checkpoint {spec}: {what}; pass 'latest' or a checkpoint folder {example}")
        if not (path / STATE_FILE).is_file():
            raise UserError(
                f"--resume_from_checkpoint {spec}: not a complete gan_accel checkpoint (no {STATE_FILE}); "
                "pass a folder under OUTPUT_DIR/checkpoints/"
            )
        return path

    # ---- writing -------------------------------------------------------------------------
    def save(self, step: int, trainer_state: dict, write_extra: Optional[Callable[[Path], None]] = None) -> Path:
        """Save on every rank (Accelerate writes per-rank RNG files); the main process writes the
        extras and the state file, then renames. Ranks meet before and after the rename."""
        acc = self.accelerator
        final = self.root / f"step_{step:08d}"
        tmp = tmp_name(final)
        if acc.is_main_process:
            self.root.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
        acc.wait_for_everyone()
        try:
            if acc.is_main_process:
                write_point(tmp)
            acc.save_state(str(tmp), safe_serialization=True)
            acc.wait_for_everyone()
            if acc.is_main_process:
                if write_extra is not None:
                    write_extra(tmp)
                if self.data_fingerprint is not None:
                    write_json_durable(tmp / FINGERPRINT_FILE, self.data_fingerprint)
                write_json_durable(tmp / STATE_FILE, json_safe(trainer_state))
                swap_into_place(tmp, final)  # re-saving a step (a signal right after a periodic save) swaps
                self._prune()
        except WRITE_ERRORS as err:
            # Drop the partial folder at once: left behind, it would keep the disk full until the
            # next resume.
            if acc.is_main_process:
                shutil.rmtree(tmp, ignore_errors=True)
            previous = self.latest()
            kept = f"the previous checkpoint {previous} is kept" if previous else "no earlier checkpoint exists"
            raise write_failure("checkpoint", final, err, kept) from err
        acc.wait_for_everyone()
        return final

    def _prune(self) -> None:
        done = self.complete_checkpoints()
        for old in done[: max(0, len(done) - self.total_limit)]:
            # Rename first so a crash mid-delete never leaves a half-deleted "complete" folder.
            doomed = old.with_name(f".del-{old.name}")
            os.replace(old, doomed)
            shutil.rmtree(doomed, ignore_errors=True)

    # ---- reading -------------------------------------------------------------------------
    def verify(self, path: Path) -> None:
        """Check that every file of a checkpoint is readable, BEFORE the run folder is touched:
        a truncated file found only by ``load_state`` would come after ``config.json`` was
        rewritten. Reading headers and archive indexes is cheap; tensors are not loaded."""
        for file in sorted(path.iterdir()):
            problem = _file_problem(file)
            if problem:
                earlier = [p for p in self.complete_checkpoints() if p.name < path.name]
                hint = (
                    f"resume from the previous checkpoint with --resume_from_checkpoint {earlier[-1]}"
                    if earlier
                    else "no earlier checkpoint exists: start a new run"
                )
                raise UserError(f"--resume_from_checkpoint {path}: {file.name} is damaged ({problem}); {hint}")

    def check_data(self, path: Path, allow_change: bool) -> Optional[str]:
        """Compare the checkpoint's data fingerprint with this run's, before the run folder is
        touched: raise when the data changed, unless ``allow_change`` (then a warning line).
        A checkpoint written before fingerprints were recorded resumes unchecked, with a note."""
        if self.data_fingerprint is None:
            return None
        saved_file = path / FINGERPRINT_FILE
        if not saved_file.is_file():
            return f"note: {path} records no data fingerprint (written by an older version): the data is not checked"
        changes = describe_changes(json.loads(saved_file.read_text()), self.data_fingerprint)
        if not changes:
            return None
        if not allow_change:
            raise UserError(
                f"--resume_from_checkpoint {path}: the data changed since this checkpoint "
                f"({'; '.join(changes)}); resume on the original data, start a new --output_dir, "
                "or pass --allow_data_change to continue on the new data"
            )
        return f"warning: --allow_data_change: resuming {path} on changed data ({'; '.join(changes)})"

    def load(self, path: Path) -> dict:
        """Restore Accelerate's state on every rank and return the loop's state dict."""
        try:
            state = json.loads((path / STATE_FILE).read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise UserError(f"--resume_from_checkpoint {path}: unreadable {STATE_FILE} ({err})") from None
        try:
            self.accelerator.load_state(str(path))
        except (OSError, RuntimeError, KeyError, ValueError) as err:
            raise UserError(
                f"--resume_from_checkpoint {path}: could not load it ({str(err).splitlines()[0]}); "
                "it was written by an incompatible run"
            ) from None
        return state


def _file_problem(file: Path) -> Optional[str]:
    """A short description of what is wrong with one checkpoint file, or None."""
    if file.is_dir():
        return None
    try:
        if file.stat().st_size == 0:
            return "empty file"
        if file.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(file), framework="pt") as f:  # validates the header against the file size
                f.keys()
        elif file.suffix in (".bin", ".pkl", ".pt"):
            # torch.save writes a zip archive; its index sits at the end, so truncation is caught
            # by opening it, and testzip() checks every member's CRC.
            if not zipfile.is_zipfile(file):
                return "not a complete torch archive (truncated?)"
            with zipfile.ZipFile(file) as archive:
                bad = archive.testzip()
            if bad is not None:
                return f"corrupt member {bad}"
        elif file.suffix == ".json":
            json.loads(file.read_text())
    except Exception as err:  # noqa: BLE001 - any failure to read is the answer
        return str(err).splitlines()[0] if str(err) else type(err).__name__
    return None


def json_safe(data):
    """Non-finite floats as ``null``: ``json`` would write bare NaN/Infinity, which is not JSON."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_safe(v) for v in data]
    return data
