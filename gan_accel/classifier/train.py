"""Fine-tuning loop for sequence classifiers, the way the Hugging Face course teaches it
(pretrained model, Adam, linear warm-up, ``accelerator.prepare`` / ``backward``), run through the
same :class:`TrainingRun` scaffolding as the GAN loop (run folder, logging, checkpoints, resume,
signals, non-finite guard).

Exact resume: the train order comes from :class:`ResumableSampler` positioned by
``TrainState.epoch``/``epoch_start``; ``save_state`` restores weights, optimizer, scheduler,
RNG (dropout) and Accelerate's accumulation counter.
"""
from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import torch

from ..config import RunArguments, config_to_dict
from ..gan.step import apply_update
from ..loop.guard import grads_finite
from ..loop.run import TrainingRun
from .config import ClassifierDataArguments, ClassifierModelArguments, ClassifierTrainArguments
from .data import ClassificationData, LabelledRows, build_dataloaders, encode_data, read_labelled_rows
from .evaluate import BestModelKeeper, evaluate
from .model import ScheduleLength, build_optimizer, build_scheduler, load_model, load_tokenizer, schedule_length

OnUpdate = Callable[[Any], None]


@dataclass
class Parts:
    """Everything the loop touches; model/optimizer/scheduler/dataloaders already prepared."""

    model: Any
    optimizer: Any
    scheduler: Any
    train_dl: Any
    eval_dl: Any
    sampler: Any
    tokenizer: Any
    data: ClassificationData
    length: ScheduleLength


def build_parts(run: TrainingRun, raw: LabelledRows, tokenizer, data_args: ClassifierDataArguments,
                model_args: ClassifierModelArguments, train_args: ClassifierTrainArguments) -> Parts:
    from accelerate.utils import set_seed

    acc = run.accelerator
    set_seed(run.args.seed)  # the new classification head is drawn from this
    with acc.main_process_first():
        data = encode_data(raw, data_args, tokenizer)
    model = load_model(model_args, data.label_names)
    run.print(f"labels: {data.label_names}  train: {len(data.train)}  validation: {len(data.validation)}")
    run.print(f"model.config: {model.config}")
    train_dl, eval_dl, sampler = build_dataloaders(data, tokenizer, train_args.batch_size,
                                                   train_args.eval_batch_size or 2 * train_args.batch_size, run.args.seed,
                                                   group_by_length=data_args.group_by_length,
                                                   pad_to_multiple_of=data_args.padding_multiple(acc.device.type))
    # Sized from the UNPREPARED loader: see ScheduleLength for why the ticks are x num_processes.
    length = schedule_length(len(train_dl), acc.num_processes, train_args, run.args.gradient_accumulation_steps)
    optimizer = build_optimizer(model, train_args)
    scheduler = build_scheduler(optimizer, length)  # on the raw optimizer, prepared in the same call
    model, optimizer, train_dl, eval_dl, scheduler = acc.prepare(model, optimizer, train_dl, eval_dl, scheduler)
    run.print(f"optimizer updates: {length.total_updates} ({length.updates_per_epoch} per epoch), "
              f"warm-up: {length.warmup_updates}, global batch: "
              f"{train_args.batch_size * acc.num_processes * run.args.gradient_accumulation_steps}")
    return Parts(model, optimizer, scheduler, train_dl, eval_dl, sampler, tokenizer, data, length)


def train_step(acc, parts: Parts, batch: dict, max_grad_norm: float, agree_on_finite: bool) -> Dict[str, Any]:
    """One micro-batch inside ``accumulate``; on a sync step, a guarded optimizer update.

    Returns ``{"loss/train": tensor}`` plus, on sync steps, ``"finite"`` (a 0-dim bool tensor on
    the device: no host sync here; the guard reads it back at log/checkpoint time).
    """
    model, optimizer, scheduler = parts.model, parts.optimizer, parts.scheduler
    out: Dict[str, Any] = {}
    with acc.accumulate(model):
        loss = model(**batch).loss
        acc.backward(loss)
        out["loss/train"] = loss.detach()
        if acc.sync_gradients:
            finite = None  # apply_update checks the gradients (after DDP's all-reduce: same on every rank)
            if max_grad_norm > 0:
                # The global norm is finite iff every gradient is: it doubles as the check (one pass
                # over the gradients, not two). Clipped non-finite gradients stay non-finite.
                norm = acc.clip_grad_norm_(model.parameters(), max_grad_norm)
                finite = torch.isfinite(norm) if norm is not None else None
            if agree_on_finite:
                # Local SGD skips the all-reduce, so ranks could disagree: vote (any bad -> skip).
                local = finite if finite is not None else grads_finite(model)
                finite = acc.reduce((~local).float().to(acc.device), reduction="sum") == 0
            # The GAN path's update: a fused optimizer skips a non-finite update on the device
            # (found_inf); the scheduler steps num_processes ticks (see ScheduleLength).
            out["finite"] = apply_update(acc, optimizer, scheduler, model, check_finite=acc.mixed_precision != "fp16",
                                         finite=finite)
    return out


def _local_sgd(acc, model, steps: int):
    if steps <= 0 or acc.num_processes == 1:
        return nullcontext(None)
    from accelerate.local_sgd import LocalSGD

    return LocalSGD(accelerator=acc, model=model, local_sgd_steps=steps, enabled=True)


class ClassifierLoop:
    """The epoch/update loop; cadences (log, eval, checkpoint, stop) are checked per update."""

    def __init__(self, run: TrainingRun, parts: Parts, train_args: ClassifierTrainArguments,
                 on_update: Optional[OnUpdate] = None) -> None:
        self.run, self.parts, self.args, self.on_update = run, parts, train_args, on_update
        self.acc, self.state = run.accelerator, run.state
        self.keeper = BestModelKeeper(self.acc, self.state, run.output_dir / "model", parts.tokenizer,
                                      train_args.metric_for_best_model, train_args.greater_is_better)
        self.write_extra, self.read_extra = schedule_io(run, parts.length)
        self.local_sgd = None
        self.last_eval: Dict[str, float] = {}
        self.last_eval_step = -1

    def run_loop(self) -> bool:
        """Train to the end; True when finished, False when stopped by a signal."""
        acc, state, parts = self.acc, self.state, self.parts
        total = parts.length.total_updates
        logger = self.run.make_logger(total, unit="sample", desc="fine-tune")
        samples_per_batch = self.args.batch_size * acc.num_processes  # global, full batches
        with self.run.stop, _local_sgd(acc, parts.model, self.args.local_sgd_steps) as local_sgd:
            self.local_sgd = local_sgd
            if local_sgd is not None:
                local_sgd.num_steps = state.step
            parts.model.train()
            while state.step < total:
                parts.sampler.set_position(state.epoch, state.epoch_start)
                parts.train_dl.set_epoch(state.epoch)
                for batch in parts.train_dl:
                    out = train_step(acc, parts, batch, self.args.max_grad_norm, local_sgd is not None)
                    state.micro_step += 1
                    state.epoch_start += samples_per_batch
                    logger.accumulate({"loss/train": out["loss/train"]}, samples=int(batch["labels"].shape[0]))
                    if "finite" not in out:
                        continue
                    self.run.guard.record(out["finite"], "gradients")
                    if local_sgd is not None:
                        local_sgd.step()
                    if self.after_update(logger, epoch_done=acc.gradient_state.end_of_dataloader):
                        return not self.run.stopped_by_signal
        return True

    def after_update(self, logger, epoch_done: bool) -> bool:
        """Cadences after one optimizer update; True when the loop must end."""
        state, run = self.state, self.run
        state.step += 1
        logger.advance(state.step)
        last = state.step >= self.parts.length.total_updates
        if logger.should_log(state.step) or last:
            logger.flush(state.step, extra={"lr": self.parts.scheduler.get_last_lr()[0]})
        if self.on_update is not None:
            self.on_update(state)
        if epoch_done:
            self.eval_and_keep(logger, epoch=state.epoch)
            state.epoch, state.epoch_start = state.epoch + 1, 0
        elif run.due(self.args.eval_steps) or last:
            self.eval_and_keep(logger, epoch=state.epoch)
        if run.should_stop():
            self.save()
            run.print(f"Stopped by a signal at step {state.step}; resume with --resume_from_checkpoint latest")
            return True
        if last:
            self.save()
            return True
        if run.due(run.args.checkpointing_steps):
            self.save()
        return False

    def sync_replicas(self) -> None:
        """Under local SGD the replicas drift apart between averages: average them before an
        evaluation (each rank scores its shard with its own weights) and before a checkpoint."""
        if self.local_sgd is not None:
            with torch.no_grad():
                for p in self.parts.model.parameters():
                    p.data = self.acc.reduce(p.data, reduction="mean")

    def save(self) -> None:
        self.sync_replicas()
        self.run.save(self.write_extra)

    def eval_and_keep(self, logger, epoch: int) -> None:
        self.sync_replicas()
        metrics = evaluate(self.acc, self.parts.model, self.parts.eval_dl, len(self.parts.data.label_names))
        self.last_eval, self.last_eval_step = metrics, self.state.step
        kept = self.keeper.update(self.parts.model, metrics, epoch)
        logger.write(self.state.step, metrics)
        self.run.print(f"step {self.state.step} epoch {epoch}: accuracy {metrics['eval/accuracy']:.4f}  "
                       f"f1_macro {metrics['eval/f1_macro']:.4f}  loss {metrics['eval/loss']:.4f}  "
                       f"samples {int(metrics['eval/samples'])}" + ("  (best so far: saved)" if kept else ""))


SCHEDULE_FILE = "schedule.json"


def schedule_io(run: TrainingRun, length: ScheduleLength):
    """``(write_extra, read_extra)`` for checkpoints: the schedule's length is saved, and a resume
    that re-sizes it (another --max_steps / --num_train_epochs) says so instead of silently
    bending the LR curve."""
    current = {"total_updates": length.total_updates, "warmup_updates": length.warmup_updates}

    def write_extra(folder: Path) -> None:
        (folder / SCHEDULE_FILE).write_text(json.dumps(current) + "\n")

    def read_extra(folder: Path) -> None:
        path = folder / SCHEDULE_FILE
        saved = json.loads(path.read_text()) if path.is_file() else current
        if saved != current:
            run.print(f"warning: the checkpoint's LR schedule was {saved}, this run's is {current}: the linear "
                      "schedule continues re-sized, so this is not identical to a run planned with this length")

    return write_extra, read_extra


def write_eval_results(loop: ClassifierLoop, out: Path) -> dict:
    parts = loop.parts
    results = {
        "final": {"step": loop.last_eval_step, **loop.last_eval},
        "best": loop.keeper.best_record(),
        "metric_for_best_model": loop.args.metric_for_best_model,
        "label_names": parts.data.label_names,
        "num_train_examples": len(parts.data.train),
        "num_eval_examples": len(parts.data.validation),
        "final_lr": parts.scheduler.get_last_lr()[0],
        "steps": loop.state.step,
    }
    if loop.acc.is_main_process:
        (out / "eval_results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def train_classifier(data_args: ClassifierDataArguments, model_args: ClassifierModelArguments,
                     train_args: ClassifierTrainArguments, run_args: RunArguments,
                     on_update: Optional[OnUpdate] = None) -> Path:
    """Fine-tune and export; returns the run folder. ``on_update(state)`` is called after every
    optimizer update (tests use it to interrupt a run at an exact step)."""
    # Files and tokenizer first: a bad file or model name fails before the run folder is touched.
    raw = read_labelled_rows(data_args)
    tokenizer = load_tokenizer(model_args)
    run = TrainingRun(run_args, config_to_dict(data_args, model_args, train_args, run_args), project="classifier")
    parts = build_parts(run, raw, tokenizer, data_args, model_args, train_args)
    loop = ClassifierLoop(run, parts, train_args, on_update)
    run.resume(loop.read_extra)
    finished = loop.run_loop()
    if finished:
        results = write_eval_results(loop, run.output_dir)
        run.print(f"Model: {run.output_dir / 'model'}  best {train_args.metric_for_best_model}: "
                  f"{results['best'].get('eval/' + train_args.metric_for_best_model)} at step {results['best'].get('step')}")
    run.finish()
    return run.output_dir
