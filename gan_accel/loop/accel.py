"""Accelerator construction and the run folder (refusing to clobber another run)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Optional

from accelerate import Accelerator, DistributedDataParallelKwargs
from accelerate.utils import DataLoaderConfiguration, ProjectConfiguration

from ..config import RunArguments
from ..errors import UserError

RUN_MARKER = "config.json"


def build_accelerator(run: RunArguments, project_name: str) -> Accelerator:
    """One Accelerator for the whole run, configured from :class:`RunArguments`.

    ``broadcast_buffers=False``: a D with BatchNorm runs two forwards (real, fake) before one
    backward; buffer broadcasting between them raises an in-place error on CUDA (pytorch #22095).
    """
    accelerator = Accelerator(
        cpu=run.cpu,
        mixed_precision=run.mixed_precision,
        gradient_accumulation_steps=run.gradient_accumulation_steps,
        log_with=run.trackers or None,
        project_config=ProjectConfiguration(project_dir=run.output_dir, logging_dir=str(Path(run.output_dir) / "logs")),
        kwargs_handlers=[DistributedDataParallelKwargs(broadcast_buffers=False)],
        # Batches from pinned host memory (streamed image data, CUDA) are copied asynchronously.
        dataloader_config=DataLoaderConfiguration(non_blocking=True),
    )
    return accelerator


def prepare_output_dir(accelerator: Accelerator, run: RunArguments) -> Path:
    """Create ``--output_dir``; refuse one that holds another run unless resuming or overwriting.

    Every rank checks (the answer is the same on all), only the main process deletes/creates.
    """
    out = Path(run.output_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"--output_dir {out}: exists and is not a folder; choose another path")
    holds_run = out.is_dir() and ((out / RUN_MARKER).exists() or (out / "checkpoints").exists())
    if holds_run and not (run.overwrite_output_dir or run.resume_from_checkpoint):
        raise UserError(
            f"--output_dir {out}: holds another run; pass --overwrite_output_dir to replace it, "
            "--resume_from_checkpoint latest to continue it, or choose another folder"
        )
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        if holds_run and run.overwrite_output_dir and not run.resume_from_checkpoint:
            shutil.rmtree(out)
        out.mkdir(parents=True, exist_ok=True)
    accelerator.wait_for_everyone()
    return out


def print_and_save_config(accelerator: Optional[Accelerator], config: dict, output_dir: Optional[Path]) -> None:
    """Print the resolved config (main process) and write it to ``OUTPUT_DIR/config.json``."""
    if accelerator is not None and not accelerator.is_main_process:
        return
    text = json.dumps(config, indent=2, sort_keys=True)
    print(f"Resolved config:\n{text}", flush=True)
    if output_dir is not None:
        (output_dir / RUN_MARKER).write_text(text + "\n")
