"""Checkpoints that cannot be corrupted.

A checkpoint is ``OUTPUT_DIR/checkpoints/step_XXXXXXXX/``: Accelerate's ``save_state`` (models,
optimizers, schedulers and RNG states, positional in ``prepare`` order) plus the loop's own files
(``trainer_state.json`` last). Everything is written into ``.tmp-step_XXXXXXXX`` and renamed into
place only when complete, so a process killed at any moment leaves the previous checkpoint intact
and ``latest`` never sees a partial one.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Callable, Optional

from ..errors import UserError
from .atomic import swap_into_place, tmp_name, write_json_durable

STATE_FILE = "trainer_state.json"
_NAME = re.compile(r"^step_(\d{8})$")


class CheckpointManager:
    def __init__(self, accelerator, output_dir: Path, total_limit: int) -> None:
        self.accelerator = accelerator
        self.root = Path(output_dir) / "checkpoints"
        self.total_limit = total_limit

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
            raise UserError(f"--resume_from_checkpoint {spec}: no such folder; pass 'latest' or a checkpoint folder "
                            f"such as {self.root}/step_00000500")
        if not (path / STATE_FILE).is_file():
            raise UserError(f"--resume_from_checkpoint {spec}: not a complete gan_accel checkpoint (no {STATE_FILE}); "
                            "pass a folder under OUTPUT_DIR/checkpoints/")
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
            acc.save_state(str(tmp), safe_serialization=True)
            acc.wait_for_everyone()
            if acc.is_main_process:
                if write_extra is not None:
                    write_extra(tmp)
                write_json_durable(tmp / STATE_FILE, trainer_state)
                swap_into_place(tmp, final)  # re-saving a step (a signal right after a periodic save) swaps
                self._prune()
        except OSError as err:
            if acc.is_main_process:
                shutil.rmtree(tmp, ignore_errors=True)
            previous = self.latest()
            kept = f"the previous checkpoint {previous} is kept" if previous else "no earlier checkpoint exists"
            raise UserError(f"could not write checkpoint {final} ({err}); {kept}. Free disk space or change --output_dir") from None
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
    def load(self, path: Path) -> dict:
        """Restore Accelerate's state on every rank and return the loop's state dict."""
        try:
            state = json.loads((path / STATE_FILE).read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise UserError(f"--resume_from_checkpoint {path}: unreadable {STATE_FILE} ({err})") from None
        try:
            self.accelerator.load_state(str(path))
        except (OSError, RuntimeError, KeyError, ValueError) as err:
            raise UserError(f"--resume_from_checkpoint {path}: could not load it ({str(err).splitlines()[0]}); "
                            "it was written by an incompatible run") from None
        return state

