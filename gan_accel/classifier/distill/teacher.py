"""The teacher's forward pass and the logit cache (``--cache_teacher_logits``).

The cache (``OUTPUT_DIR/teacher_logits.safetensors``) records what its logits depend on: a hash
of the teacher's weights (not its path: a teacher retrained in place gives other logits), a hash
of every training example's token ids, and the settings that change the teacher's inputs
(``--max_length``, the padding multiple). It also records a hash of the logits themselves. It is
reused only when all of it matches and the hash checks; a stale, truncated or damaged cache is
rebuilt (the damaged one with a warning).

The teacher is a network with no optimizer: placed and cast by Accelerate with
``prepare_model(teacher, evaluation_mode=True)``, which skips the DDP wrapper (DDP refuses a
module none of whose parameters requires a gradient, and there is nothing to all-reduce).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

import torch
from torch.utils.data import Dataset

CACHE_FILE = "teacher_logits.safetensors"
EXAMPLE_ID = "example_id"  # the batch key holding each example's index in the training set


class IndexedDataset(Dataset):
    """Adds each example's index (``example_id``) so a batch can look up cached teacher logits;
    the padding collator stacks it into a ``[B]`` tensor like the labels."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int) -> dict:
        return {**self.dataset[i], EXAMPLE_ID: i}

    @property
    def encodings(self) -> dict:
        """The wrapped dataset's token ids (what length grouping reads)."""
        return self.dataset.encodings


def model_inputs(batch: dict) -> dict:
    """The batch without what the model must not see (labels: the loss is ours; example ids)."""
    return {k: v for k, v in batch.items() if k not in ("labels", EXAMPLE_ID)}


@torch.no_grad()
def teacher_forward(teacher, batch: dict, hidden: bool = False) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """``(logits [B, C] float32, last hidden state [B, L, D] or None)``.

    ``no_grad`` rather than ``inference_mode``: the soft-target loss saves the teacher's
    probabilities for its backward, and inference tensors cannot be saved for backward.
    """
    out = teacher(**model_inputs(batch), output_hidden_states=hidden)
    return out.logits.float(), (out.hidden_states[-1] if hidden else None)


# ---- the cache ------------------------------------------------------------------------------
def weights_sha256(module: torch.nn.Module) -> str:
    """A hash of every parameter and buffer (names, dtypes, shapes, values)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        digest.update(t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()


def fingerprint(teacher: torch.nn.Module, dataset, settings: Dict[str, object]) -> Dict[str, str]:
    """What the cached logits depend on: the teacher's weights, the exact token ids of every
    example, and ``settings`` (those that change the teacher's inputs). A resume (or a rerun into
    the same folder) reuses the file only when all of it matches."""
    digest = hashlib.sha256()
    for i in range(len(dataset)):
        digest.update(json.dumps(dataset[i]["input_ids"]).encode())
    return {
        "teacher_sha256": weights_sha256(teacher),
        "examples": str(len(dataset)),
        "input_ids_sha256": digest.hexdigest(),
        **{k: str(v) for k, v in sorted(settings.items())},
    }


def tensor_sha256(t: torch.Tensor) -> str:
    return hashlib.sha256(t.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()).hexdigest()


def compute_teacher_logits(accelerator, teacher, loader, num_labels: int) -> torch.Tensor:
    """Teacher logits ``[N, C]`` (float32, CPU) for every example of ``loader.dataset`` (an
    :class:`IndexedDataset`), in index order.

    ``loader``: a raw, unshuffled DataLoader. Prepared here, it shards the pass over the
    processes; ``gather_for_metrics`` inside the loop collects every shard on every rank and drops
    the examples Accelerate repeated to even out the last batch.
    """
    logits = torch.full((len(loader.dataset), num_labels), float("nan"))
    for batch in accelerator.prepare_data_loader(loader):
        ids, out = accelerator.gather_for_metrics((batch[EXAMPLE_ID], teacher_forward(teacher, batch)[0]))
        logits[ids.cpu()] = out.cpu()
    if torch.isnan(logits).any():
        raise RuntimeError("teacher logit cache: some training examples were never scored")
    return logits


def load_cached_logits(
    path: Path, expected: Dict[str, str], warn: Callable[[str], None] = print
) -> Optional[torch.Tensor]:
    """The cached logits when ``path`` holds them for exactly this teacher, data and settings,
    and they pass their hash; else None (``warn`` says why when the file is damaged)."""
    from safetensors import safe_open

    if not path.is_file():
        return None
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = dict(f.metadata() or {})
            checksum = meta.pop("logits_sha256", None)
            if meta != expected:
                return None  # another teacher, data or settings: stale, not damaged
            logits = f.get_tensor("logits")
    except Exception as err:  # noqa: BLE001 - a truncated or garbled file fails in many ways
        warn(
            f"warning: {path} is damaged ({str(err).splitlines()[0] if str(err) else type(err).__name__}); "
            "computing the teacher logits again"
        )
        return None
    if checksum != tensor_sha256(logits):
        warn(f"warning: {path} does not match its hash (a damaged file); computing the teacher logits again")
        return None
    return logits


def save_cached_logits(path: Path, logits: torch.Tensor, meta: Dict[str, str]) -> None:
    """Written to a temporary name and renamed: a killed run never leaves a truncated cache."""
    from safetensors.torch import save_file

    from ...loop.atomic import atomic_file

    logits = logits.contiguous()
    with atomic_file(path, "teacher logits cache") as tmp:
        save_file({"logits": logits}, str(tmp), metadata={**meta, "logits_sha256": tensor_sha256(logits)})


def fill_logit_cache(engine, data, collate, batch_size: int, settings: Dict[str, object]) -> Tuple[torch.Tensor, dict]:
    """``(logits, record)``: teacher logits for the training set, from the run folder's cache when
    it was computed for this teacher (by its weights), data and ``settings``, else computed now;
    the record says which, and how long it took."""
    import time

    from torch.utils.data import DataLoader

    start = time.perf_counter()
    meta = fingerprint(engine.module("teacher"), data.train, settings)

    def compute() -> torch.Tensor:
        # Its own generator: creating a loader's iterator draws a seed, from the global RNG by
        # default, which would shift the student's dropout stream; with it, a run with the cache
        # draws the same dropout masks as one without.
        loader = DataLoader(
            data.train,
            batch_size=batch_size,
            shuffle=False,
            collate_fn=collate,
            generator=torch.Generator().manual_seed(0),
        )
        return compute_teacher_logits(engine.accelerator, engine.nets.teacher, loader, len(data.label_names))

    logits, reused = cached_teacher_logits(
        engine.accelerator, engine.run.output_dir, meta, compute, warn=engine.run.print
    )
    seconds = time.perf_counter() - start
    engine.run.print(
        f"teacher logits for {len(data.train)} training examples: "
        f"{'reused from the run folder' if reused else 'computed'} in {seconds:.1f} s"
    )
    return logits, {"teacher_cache_seconds": seconds, "teacher_cache_reused": reused}


def cached_teacher_logits(
    accelerator, run_dir: Path, meta: Dict[str, str], compute, warn: Callable[[str], None] = print
) -> Tuple[torch.Tensor, bool]:
    """``(logits on the accelerator's device, reused)``: from ``RUN_DIR/teacher_logits.safetensors``
    when it matches ``meta``, else ``compute()`` on every rank, saved by the main process."""
    path = Path(run_dir) / CACHE_FILE
    logits = load_cached_logits(path, meta, warn)
    reused = logits is not None
    if not reused:
        logits = compute()
        if accelerator.is_main_process:
            save_cached_logits(path, logits, meta)
    accelerator.wait_for_everyone()
    return logits.to(accelerator.device), reused
