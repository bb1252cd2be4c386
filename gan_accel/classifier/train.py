"""Fine-tuning of sequence classifiers, the way the Hugging Face course teaches it (pretrained
model, Adam, linear warm-up, ``accelerator.prepare`` / ``backward``), as a recipe
(:mod:`.recipe`) on the engine, which owns the loop: run folder, logging, checkpoints, exact
resume, signals, non-finite guard. This file adds what only a classifier does: evaluation with
the best model kept, local SGD, the schedule length recorded in checkpoints, the results file.
"""
from __future__ import annotations

import json
import math
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import torch
from accelerate.utils import set_seed

from ..config import RunArguments, config_to_dict
from ..data.fingerprint import table_fingerprint
from ..engine import Engine
from ..loop.accel import build_accelerator
from ..loop.guard import NonFiniteError
from ..loop.run import TrainingRun
from .config import ClassifierDataArguments, ClassifierModelArguments, ClassifierTrainArguments
from .data import build_dataloaders, encode_data, read_labelled_rows
from .evaluate import best_model_keeper, best_record, evaluate
from .model import ScheduleLength, check_max_length, load_config, load_model, load_tokenizer, schedule_length
from .recipe import classifier_recipe

OnUpdate = Callable[[Any], None]
SCHEDULE_FILE = "schedule.json"


class ClassifierTrainer:
    def __init__(self, data_args: ClassifierDataArguments, model_args: ClassifierModelArguments,
                 train_args: ClassifierTrainArguments, run_args: RunArguments, on_update: Optional[OnUpdate] = None) -> None:
        """``on_update(state)`` is called after every optimizer update (tests use it to interrupt a
        run at an exact step)."""
        # Files and tokenizer first: a bad file or model name fails before the run folder is touched.
        raw = read_labelled_rows(data_args)
        self.tokenizer = load_tokenizer(model_args)
        self.args = train_args
        acc = build_accelerator(run_args, "classifier")
        # The schedule's checks (warm-up shorter than the run) from the data's size, before the folder is touched.
        schedule_length(math.ceil(len(raw.labels["train"]) / train_args.batch_size), acc.num_processes, train_args,
                        run_args.gradient_accumulation_steps)
        check_max_length(data_args.max_length, self.tokenizer, [load_config(model_args)],
                         pair=bool(data_args.text_pair_column))
        self.run = run = TrainingRun(run_args, config_to_dict(data_args, model_args, train_args, run_args),
                                     project="classifier", accelerator=acc,
                                     data_fingerprint=table_fingerprint(data_args, raw))
        self.state = run.state
        set_seed(run_args.seed)  # the new classification head is drawn from this
        with acc.main_process_first():
            self.data = encode_data(raw, data_args, self.tokenizer)
        model = load_model(model_args, self.data.label_names)
        run.print(f"labels: {self.data.label_names}  train: {len(self.data.train)}  validation: {len(self.data.validation)}")
        run.print(f"model.config: {model.config}")
        train_dl, eval_dl, _ = build_dataloaders(self.data, self.tokenizer, train_args.batch_size,
                                                 train_args.eval_batch_size or 2 * train_args.batch_size, run_args.seed,
                                                 group_by_length=data_args.group_by_length,
                                                 pad_to_multiple_of=data_args.padding_multiple(acc.device.type))
        # Sized from the UNPREPARED loader: see ScheduleLength for why the ticks are x num_processes.
        self.length = schedule_length(len(train_dl), acc.num_processes, train_args, run_args.gradient_accumulation_steps)
        self.engine = Engine(run, classifier_recipe(model, train_args, self.length), train_dl,
                             max_steps=self.length.total_updates, eval_loaders=[eval_dl], unit="sample", desc="fine-tune")
        run.print(f"optimizer updates: {self.length.total_updates} ({self.length.updates_per_epoch} per epoch), "
                  f"warm-up: {self.length.warmup_updates}, global batch: "
                  f"{train_args.batch_size * acc.num_processes * run_args.gradient_accumulation_steps}")
        self.keeper = best_model_keeper(acc, self.state, self.engine.nets.model, self.tokenizer, run.output_dir / "model",
                                        train_args.metric_for_best_model, train_args.greater_is_better)
        self.local_sgd = None
        self.last_eval: Dict[str, float] = {}
        self.last_eval_step = -1
        self.add_hooks(on_update)
        self.engine.resume()

    def add_hooks(self, on_update: Optional[OnUpdate]) -> None:
        engine = self.engine
        engine.on_update(lambda: self.local_sgd.step() if self.local_sgd is not None else None)
        if on_update is not None:
            engine.every(1, lambda: on_update(self.state))
        engine.every(self.args.eval_every, self.evaluate, at_end=True, at_epoch_end=True)
        engine.before_save(self.sync_replicas)
        engine.checkpoint_files(*schedule_io(self.run, self.length))

    def sync_replicas(self) -> None:
        """Under local SGD the replicas drift apart between averages: average them before an
        evaluation (each rank scores its shard with its own weights) and before a checkpoint."""
        if self.local_sgd is not None:
            with torch.no_grad():
                for p in self.engine.nets.model.parameters():
                    p.data = self.run.accelerator.reduce(p.data, reduction="mean")

    def evaluate(self) -> None:
        self.sync_replicas()
        acc, model = self.run.accelerator, self.engine.nets.model
        metrics = evaluate(acc, model, self.engine.eval_loaders[0], len(self.data.label_names))
        self.last_eval, self.last_eval_step = metrics, self.state.step
        kept = self.keeper.update(metrics)
        self.run.logger.write(self.state.step, metrics)
        note = "  (best so far: saved)" if kept else ("" if math.isfinite(metrics["eval/loss"]) else "  (non-finite: not kept)")
        self.run.print(f"step {self.state.step} epoch {self.state.epoch}: accuracy {metrics['eval/accuracy']:.4f}  "
                       f"f1_macro {metrics['eval/f1_macro']:.4f}  loss {metrics['eval/loss']:.4f}  "
                       f"samples {int(metrics['eval/samples'])}" + note)

    def train_loop(self) -> bool:
        """Train to the end; True when finished, False when stopped by a signal."""
        with _local_sgd(self.run.accelerator, self.engine.nets.model, self.args.local_sgd_steps) as local_sgd:
            self.local_sgd = local_sgd
            if local_sgd is not None:
                local_sgd.num_steps = self.state.step
                self.engine.agree_across_ranks = True  # no all-reduce: ranks vote on skipping an update
            self.engine.nets.model.train()
            return self.engine.train()

    def train(self) -> Path:
        """Fine-tune and export; returns the run folder."""
        run = self.run
        best = write_eval_results(self, run.output_dir)["best"] if self.train_loop() else None
        if best:
            run.print(f"Model: {run.output_dir / 'model'}  best {self.args.metric_for_best_model}: "
                      f"{best.get('eval/' + self.args.metric_for_best_model)} at step {best.get('step')}")
        run.finish()
        if best == {}:  # finished, yet no evaluation was finite (the guard allowed the NaN updates)
            raise NonFiniteError(f"no evaluation of this run was finite, so no model was exported to "
                                 f"{run.output_dir / 'model'}: the run diverged. Lower --learning_rate")
        return run.output_dir


def _local_sgd(acc, model, steps: int):
    if steps <= 0 or acc.num_processes == 1:
        return nullcontext(None)
    from accelerate.local_sgd import LocalSGD

    return LocalSGD(accelerator=acc, model=model, local_sgd_steps=steps, enabled=True)


def schedule_io(run: TrainingRun, length: ScheduleLength):
    """``(write, read)`` for checkpoints: the schedule's length is saved, and a resume that
    re-sizes it (another --max_steps / --num_train_epochs) says so instead of silently bending
    the LR curve."""
    current = {"total_updates": length.total_updates, "warmup_updates": length.warmup_updates}

    def write(folder: Path) -> None:
        (folder / SCHEDULE_FILE).write_text(json.dumps(current) + "\n")

    def read(folder: Path) -> None:
        path = folder / SCHEDULE_FILE
        saved = json.loads(path.read_text()) if path.is_file() else current
        if saved != current:
            run.print(f"warning: the checkpoint's LR schedule was {saved}, this run's is {current}: the linear "
                      "schedule continues re-sized, so this is not identical to a run planned with this length")

    return write, read


def write_eval_results(trainer: ClassifierTrainer, out: Path) -> dict:
    best_file = out / "model" / "eval_results.json"
    results = {
        # null, not a bare NaN (which is not JSON), for a diverged evaluation
        "final": {"step": trainer.last_eval_step, **{k: v if math.isfinite(v) else None for k, v in trainer.last_eval.items()}},
        "best": best_record(out / "model"),
        "metric_for_best_model": trainer.args.metric_for_best_model,
        "label_names": trainer.data.label_names,
        "num_train_examples": len(trainer.data.train),
        "num_eval_examples": len(trainer.data.validation),
        "final_lr": trainer.engine.schedulers["model"].get_last_lr()[0],
        "steps": trainer.state.step,
    }
    if trainer.run.accelerator.is_main_process:
        (out / "eval_results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def train_classifier(data_args: ClassifierDataArguments, model_args: ClassifierModelArguments,
                     train_args: ClassifierTrainArguments, run_args: RunArguments,
                     on_update: Optional[OnUpdate] = None) -> Path:
    return ClassifierTrainer(data_args, model_args, train_args, run_args, on_update).train()
