"""Accelerator construction and the run folder (refusing to clobber another run)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional, Sequence

from accelerate import Accelerator, DistributedDataParallelKwargs
from accelerate.utils import DataLoaderConfiguration, ProjectConfiguration, broadcast_object_list

from ..config import RunArguments
from ..errors import UserError
from .atomic import write_text_atomic
from .lock import RunLock
from .rundir import RUN_OUTPUTS, clear_run_outputs

RUN_MARKER = "config.json"


def build_accelerator(run: RunArguments, project_name: str, unused_parameters: bool = False) -> Accelerator:
    """One Accelerator for the whole run, configured from :class:`RunArguments`.

    ``broadcast_buffers=False``: a D with BatchNorm runs two forwards (real, fake) before one
    backward; buffer broadcasting between them raises an in-place error on CUDA (pytorch #22095).
    ``unused_parameters``: some parameters get no gradient in some steps (a progressive GAN's
    full-size layers while it trains at half size); DDP waits for every parameter's gradient
    unless told to look for the unused ones after each forward, and the next step fails with
    "Expected to have finished reduction". Off otherwise: the search walks the graph every step.
    """
    world_size = launched_processes()
    accelerator = Accelerator(
        cpu=run.cpu or (world_size > 1 and not accelerator_available()),
        mixed_precision=run.mixed_precision,
        gradient_accumulation_steps=run.gradient_accumulation_steps,
        log_with=run.trackers or None,
        project_config=ProjectConfiguration(
            project_dir=run.output_dir, logging_dir=str(Path(run.output_dir) / "logs")
        ),
        kwargs_handlers=[
            DistributedDataParallelKwargs(broadcast_buffers=False, find_unused_parameters=unused_parameters)
        ],
        # Batches from pinned host memory (streamed image data, CUDA) are copied asynchronously.
        dataloader_config=DataLoaderConfiguration(non_blocking=True),
    )
    if accelerator.num_processes != world_size:
        raise UserError(
            f"the launcher started {world_size} processes (WORLD_SIZE), but they did not form one run "
            f"({accelerator.num_processes} process(es) each); launch with `accelerate launch --num_processes "
            f"{world_size}` or torchrun, and check the accelerate config"
        )
    return accelerator


def launched_processes() -> int:
    """The processes a launcher (torchrun, accelerate launch, srun via torchrun) started: WORLD_SIZE."""
    try:
        return max(int(os.environ.get("WORLD_SIZE", "1")), 1)
    except ValueError:
        return 1


def accelerator_available() -> bool:
    """A GPU (or other torch accelerator) is present. Without one, Accelerate forms a multi-process
    run only when asked for the CPU: otherwise each of torchrun's N processes trains alone, all in
    one run folder."""
    import torch

    return torch.accelerator.is_available()


def prepare_output_dir(
    accelerator: Accelerator,
    run: RunArguments,
    lock: Optional[RunLock] = None,
    outputs: Optional[Sequence[str]] = None,
) -> Path:
    """Create ``--output_dir``; refuse one that holds another run unless resuming or overwriting.

    Every rank checks (the answer is the same on all); only the main process creates the folder,
    takes ``lock`` (before anything in the folder is written, so a second run cannot touch it)
    and, with ``--overwrite_output_dir``, clears what a previous run wrote (``outputs``: the
    top-level names the task declares it writes; never the user's files).
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
    error = None
    if accelerator.is_main_process:
        try:
            clear = holds_run and run.overwrite_output_dir and not run.resume_from_checkpoint
            _create_and_lock(out, lock, clear, outputs or RUN_OUTPUTS)
        except UserError as err:
            error = str(err)
    if accelerator.num_processes > 1:
        # The other ranks must fail with the main process, not wait for it at the next barrier.
        error = broadcast_object_list([error])[0]
    if error:
        raise UserError(error)
    return out


def _create_and_lock(out: Path, lock: Optional[RunLock], clear: bool, outputs: Sequence[str]) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"--output_dir {out}: cannot create it ({err.strerror}); choose a writable folder") from None
    if lock is not None:
        lock.acquire()
    if clear:
        try:
            removed, kept = clear_run_outputs(out, outputs)
        except OSError as err:
            raise UserError(f"--overwrite_output_dir: cannot clear {out} ({err}); check its permissions") from None
        print(
            f"--overwrite_output_dir: removed the previous run's {', '.join(removed) or 'outputs'} from {out}"
            + (f"; kept {', '.join(kept)}" if kept else ""),
            flush=True,
        )


def print_and_save_config(accelerator: Optional[Accelerator], config: dict, output_dir: Optional[Path]) -> None:
    """Print the resolved config (main process) and write it to ``OUTPUT_DIR/config.json``."""
    if accelerator is not None and not accelerator.is_main_process:
        return
    print(f"Resolved config:\n{json.dumps(config, indent=2, sort_keys=True)}", flush=True)
    if output_dir is not None:
        try:
            save_config(config, output_dir)
        except OSError as err:
            raise UserError(
                f"--output_dir {output_dir}: cannot write {RUN_MARKER} ({err.strerror}); "
                "choose a writable folder with free space"
            ) from None


def save_config(config: dict, output_dir: Path) -> None:
    """``OUTPUT_DIR/config.json``, written to a temporary name and renamed over: it is rewritten
    while the run trains (a budget's planned length), and a kill must leave one version or the
    other, never half a file."""
    path = Path(output_dir) / RUN_MARKER
    write_text_atomic(path, json.dumps(config, indent=2, sort_keys=True) + "\n", "run config")
