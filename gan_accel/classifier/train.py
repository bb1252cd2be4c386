"""The classifier task: fine-tuning a pretrained sequence classifier the way the Hugging Face
course teaches it (Adam, linear warm-up), as a recipe (:mod:`.recipe`) the runner
(:mod:`gan_accel.runner`) runs. This file adds what only a classifier does: evaluation with the
best model kept, local SGD, the schedule length recorded in checkpoints, the results file.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from pathlib import Path
from typing import Dict, List

import torch

from ..data.fingerprint import table_fingerprint
from ..engine import BEFORE_SAVE, UPDATE, Hook
from ..loop.guard import NonFiniteError
from ..runner import Output, Plan, Task
from .config import ClassifierDataArguments, ClassifierModelArguments, ClassifierTrainArguments
from .data import build_dataloaders, encode_data, read_labelled_rows
from .evaluate import (
    EXAMPLES,
    best_model_keeper,
    confusion_matrix,
    gather_predictions,
    scores_of,
    validation_examples,
    write_eval_results,
)
from .model import check_max_length, load_config, load_model, load_tokenizer, schedule_length
from .recipe import ClassifierRecipe, schedule_state

MODEL_CHECK = "save_pretrained folder, swapped into place when complete; finite weights"


class ClassifierTrainer(Task):
    project = "classifier"
    command = "train-classifier"
    desc = "fine-tune"
    configs = {
        "data_args": ClassifierDataArguments,
        "model_args": ClassifierModelArguments,
        "args": ClassifierTrainArguments,
    }
    outputs = (Output("model", label="model", checked=MODEL_CHECK), Output("eval_results.json", label="results"))

    def read_data(self) -> None:
        """Files and tokenizer: a bad file or model name fails before the run folder is touched."""
        self.raw = read_labelled_rows(self.data_args)
        self.tokenizer = load_tokenizer(self.model_args)
        self.data = encode_data(self.raw, self.data_args, self.tokenizer)

    def check(self) -> None:
        """The schedule's checks (warm-up shorter than the run), from the data's size; then --max_length."""
        schedule_length(
            math.ceil(len(self.data.train) / self.args.batch_size),
            self.accelerator.num_processes,
            self.args,
            self.run_args.gradient_accumulation_steps,
        )
        self.check_max_length()

    def check_max_length(self) -> None:
        """Against the tokenizer's special tokens and the model's position embeddings."""
        check_max_length(
            self.data_args.max_length,
            self.tokenizer,
            [load_config(self.model_args)],
            pair=bool(self.data_args.text_pair_column),
        )

    def data_fingerprint(self) -> dict:
        return table_fingerprint(self.data_args, self.raw)

    def loaders(self):
        args = self.args
        acc = self.accelerator
        return build_dataloaders(
            self.data,
            self.tokenizer,
            args.batch_size,
            args.eval_batch_size or 2 * args.batch_size,
            self.run_args.seed,
            group_by_length=self.data_args.group_by_length,
            pad_to_multiple_of=self.data_args.padding_multiple(acc.device.type),
        )

    def build(self) -> Plan:
        acc = self.accelerator
        run = self.run
        model = load_model(self.model_args, self.data.label_names)  # its new head drawn from the seed
        run.print(
            f"labels: {self.data.label_names}  train: {len(self.data.train)}  validation: {len(self.data.validation)}"
        )
        run.print(f"model.config: {model.config}")
        train_dl, eval_dl, _ = self.loaders()
        # Sized from the UNPREPARED loader: see ScheduleLength for why the ticks are x num_processes.
        self.length = schedule_length(
            len(train_dl), acc.num_processes, self.args, self.run_args.gradient_accumulation_steps
        )
        run.print(
            f"optimizer updates: {self.length.total_updates} ({self.length.updates_per_epoch} per epoch), "
            f"warm-up: {self.length.warmup_updates}, global batch: "
            f"{self.args.batch_size * acc.num_processes * self.run_args.gradient_accumulation_steps}"
        )
        self.uses_local_sgd = self.args.local_sgd_steps > 0 and acc.num_processes > 1
        recipe = ClassifierRecipe(self.args, self.length, local_sgd=self.uses_local_sgd).recipe({"model": model})
        return Plan(recipe, train_dl, self.length.total_updates, eval_loaders=[eval_dl])

    def hooks(self) -> list:
        self.keeper = best_model_keeper(
            self.accelerator,
            self.run.state,
            self.engine.nets.model,
            self.tokenizer,
            self.run.output_dir / "model",
            self.args.metric_for_best_model,
            self.args.greater_is_better,
        )
        self.local_sgd = None
        self.last_eval: Dict[str, float] = {}
        self.last_eval_step = -1
        return [
            Hook(lambda: self.local_sgd.step() if self.local_sgd is not None else None, when=UPDATE),
            Hook(self.evaluate, every=self.args.eval_every, at_end=True, at_epoch_end=True),
            Hook(self.sync_replicas, when=BEFORE_SAVE),
            schedule_state(self.run, self.length),
        ]

    def sync_replicas(self) -> None:
        """Under local SGD the replicas drift apart between averages: average them before an
        evaluation (each rank scores its shard with its own weights) and before a checkpoint."""
        if self.local_sgd is not None:
            with torch.no_grad():
                for p in self.engine.nets.model.parameters():
                    p.data = self.accelerator.reduce(p.data, reduction="mean")

    def evaluate(self) -> None:
        self.sync_replicas()
        state = self.run.state
        model = self.engine.nets.model
        preds, labels, losses = gather_predictions(self.accelerator, model, self.engine.eval_loaders[0])
        metrics = scores_of(preds, labels, losses, len(self.data.label_names))
        self.last_eval = metrics
        self.last_confusion = confusion_matrix(preds, labels, len(self.data.label_names))  # for eval_results.json
        self.last_eval_step = state.step
        kept = self.keeper.update(metrics)
        self.run.logger.write(state.step, metrics)
        note = (
            "  (best so far: saved)"
            if kept
            else ("" if math.isfinite(metrics["eval/loss"]) else "  (non-finite: not kept)")
        )
        self.run.print(
            f"step {state.step} epoch {state.epoch}: accuracy {metrics['eval/accuracy']:.4f}  "
            f"f1_macro {metrics['eval/f1_macro']:.4f}  loss {metrics['eval/loss']:.4f}  "
            f"samples {int(metrics['eval/samples'])}" + note
        )

    def train_engine(self) -> bool:
        steps = self.args.local_sgd_steps if self.uses_local_sgd else 0
        with _local_sgd(self.accelerator, self.engine.nets.model, steps) as local_sgd:
            self.local_sgd = local_sgd
            if local_sgd is not None:
                local_sgd.num_steps = self.run.state.step
            self.engine.nets.model.train()
            return self.engine.train()

    train_loop = train_engine  # tests drive the loop without the export

    def validation_examples(self, model) -> List[dict]:
        """A few validation texts with ``model``'s predictions (a text pair shown as "text | pair")."""
        args = self.data_args
        rows = self.raw.rows["validation"][:EXAMPLES]
        texts = [" | ".join(str(r[c] or "") for c in (args.text_column, args.text_pair_column) if c) for r in rows]
        collate = self.engine.eval_loaders[0].collate_fn
        return validation_examples(
            self.accelerator, model, self.data.validation, collate, texts, self.data.label_names
        )

    def export(self) -> None:
        """``eval_results.json``; the best model was exported by the evaluations."""
        run = self.run
        best = write_eval_results(self, run.output_dir)["best"]
        if not best:  # finished, yet no evaluation was finite (the guard allowed the NaN updates)
            raise NonFiniteError(
                f"no evaluation of this run was finite, so no model was exported to "
                f"{run.output_dir / 'model'}: the run diverged. Lower --learning_rate"
            )
        run.print(
            f"Model: {run.output_dir / 'model'}  best {self.args.metric_for_best_model}: "
            f"{best.get('eval/' + self.args.metric_for_best_model)} at step {best.get('step')}"
        )


def _local_sgd(acc, model, steps: int):
    if steps <= 0:
        return nullcontext(None)
    from accelerate.local_sgd import LocalSGD

    return LocalSGD(accelerator=acc, model=model, local_sgd_steps=steps, enabled=True)


def train_classifier(*configs, on_update=None) -> Path:
    return ClassifierTrainer(*configs, on_update=on_update).train()
