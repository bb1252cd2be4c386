"""Classifier contenders: the toolkit's loop (:class:`ClassifierTrainer` on the engine, its defaults:
length-grouped batches, longest-first evaluation) against ``transformers.Trainer`` with its defaults
and with length-grouped batches (``train_sampling_strategy="group_by_length"``, the
``group_by_length=True`` of older versions), on the same tiny DistilBERT, data, batch, epochs,
schedule and per-epoch evaluation, for each corpus of :mod:`benchmarks.corpora`.

Timed: the training loop proper of each (the toolkit's ``train_loop()``; Trainer from
``on_train_begin`` to ``on_train_end``), evaluations included. All start from the same weights
(the new head is drawn after the same ``set_seed``); their shuffles differ (each its own
sampler), so accuracies are compared, not weights. Trainer runs with ``save_strategy="no"`` and
``report_to=[]``, its defaults otherwise (fused AdamW, random batches, sequential evaluation);
the toolkit's loop writes its best-model export and final checkpoint: that time is measured apart
and reported both ways.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Dict, List

from benchmarks.common import Stopwatch, ratios, reset_accelerate, summary, synchronize
from benchmarks.corpora import ClassifierBenchSetup, make_inputs, padding_fraction

CONTENDERS = ("toolkit", "trainer", "trainer_grouped")


def _configs(setup: ClassifierBenchSetup, inputs: Dict[str, Path]):
    from gan_accel.classifier.config import ClassifierDataArguments, ClassifierModelArguments, ClassifierTrainArguments

    data = ClassifierDataArguments(
        train_file=str(inputs["train"]), validation_file=str(inputs["validation"]), max_length=setup.max_length
    )
    model = ClassifierModelArguments(model_name_or_path=str(inputs["model"]))
    train = ClassifierTrainArguments(
        learning_rate=setup.learning_rate,
        warmup_ratio=setup.warmup_ratio,
        num_train_epochs=setup.epochs,
        batch_size=setup.batch_size,
    )
    return data, model, train


def run_toolkit(setup: ClassifierBenchSetup, inputs: Dict[str, Path], out_dir: Path) -> Dict[str, float]:
    """``train_classifier``'s steps, with the loop timed apart from the set-up."""
    from gan_accel.classifier.data import build_dataloaders
    from gan_accel.classifier.train import ClassifierTrainer
    from gan_accel.config import RunArguments

    reset_accelerate()
    data_args, model_args, train_args = _configs(setup, inputs)
    run_args = RunArguments(
        output_dir=str(out_dir), overwrite_output_dir=True, seed=setup.seed, checkpointing_steps=0, cpu=setup.cpu
    )
    trainer = ClassifierTrainer(data_args, model_args, train_args, run_args)
    engine, io = trainer.engine, Stopwatch()
    engine.save_checkpoint = io.wrap(engine.save_checkpoint)  # the final checkpoint
    trainer.keeper.update = io.wrap(trainer.keeper.update)  # the best-model export after each evaluation
    device = trainer.run.accelerator.device
    synchronize(device)
    t0 = time.perf_counter()
    trainer.train_loop()
    synchronize(device)
    seconds = time.perf_counter() - t0
    trainer.run.finish()
    # Padding of epoch 0's batches, from fresh (unprepared) loaders built the same way: iterating
    # the engine's own loader again would move its sampler.
    train_dl, eval_dl, _ = build_dataloaders(
        trainer.data,
        trainer.tokenizer,
        train_args.batch_size,
        train_args.eval_batch_size or 2 * train_args.batch_size,
        setup.seed,
        group_by_length=data_args.group_by_length,
        pad_to_multiple_of=data_args.padding_multiple(device.type),
    )
    raw = engine.optimizers["model"].optimizer
    return {
        "seconds": seconds,
        "io_seconds": io.seconds,
        "samples": len(trainer.data.train) * setup.epochs,
        "accuracy": trainer.last_eval["eval/accuracy"],
        "updates": trainer.run.state.step,
        "optimizer": type(raw).__name__,
        "padding_fraction": padding_fraction(train_dl),
        "eval_padding_fraction": padding_fraction(eval_dl),
    }


def run_trainer(
    setup: ClassifierBenchSetup, inputs: Dict[str, Path], out_dir: Path, grouped: bool
) -> Dict[str, float]:
    import numpy as np
    from accelerate.utils import set_seed
    from transformers import DataCollatorWithPadding, Trainer, TrainerCallback, TrainingArguments

    from gan_accel.classifier.data import encode_data, read_labelled_rows
    from gan_accel.classifier.model import load_model, load_tokenizer

    reset_accelerate()
    data_args, model_args, train_args = _configs(setup, inputs)
    raw, tokenizer = read_labelled_rows(data_args), load_tokenizer(model_args)
    set_seed(setup.seed)  # as the toolkit's ClassifierTrainer: the same new head
    data = encode_data(raw, data_args, tokenizer)
    model = load_model(model_args, data.label_names)

    class LoopTimer(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.t0 = time.perf_counter()

        def on_train_end(self, args, state, control, **kwargs):
            self.seconds = time.perf_counter() - self.t0

    def accuracy(pred):
        return {"accuracy": float((np.argmax(pred.predictions, axis=-1) == pred.label_ids).mean())}

    grouping = {"train_sampling_strategy": "group_by_length"} if grouped else {}
    args = TrainingArguments(
        output_dir=str(out_dir),
        per_device_train_batch_size=setup.batch_size,
        per_device_eval_batch_size=2 * setup.batch_size,
        num_train_epochs=setup.epochs,
        learning_rate=setup.learning_rate,
        lr_scheduler_type="linear",
        warmup_steps=setup.warmup_ratio,  # float: a ratio
        weight_decay=0.0,
        max_grad_norm=train_args.max_grad_norm,  # AdamW with weight decay 0 is the toolkit's Adam
        eval_strategy="epoch",
        save_strategy="no",
        report_to=[],
        seed=setup.seed,
        use_cpu=setup.cpu,
        **grouping,
    )
    timer = LoopTimer()
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=data.train,
        eval_dataset=data.validation,
        data_collator=DataCollatorWithPadding(tokenizer),
        processing_class=tokenizer,
        compute_metrics=accuracy,
        callbacks=[timer],
    )
    trainer.train()
    evals = [h["eval_accuracy"] for h in trainer.state.log_history if "eval_accuracy" in h]
    optimizer = getattr(trainer.optimizer, "optimizer", trainer.optimizer)
    return {
        "seconds": timer.seconds,
        "samples": len(data.train) * setup.epochs,
        "accuracy": evals[-1],
        "updates": trainer.state.global_step,
        "optimizer": type(optimizer).__name__,
        "padding_fraction": padding_fraction(trainer.get_train_dataloader()),
        "eval_padding_fraction": padding_fraction(trainer.get_eval_dataloader()),
    }


def run_contender(name: str, setup: ClassifierBenchSetup, inputs: Dict[str, Path], out_dir: Path) -> Dict[str, float]:
    if name == "toolkit":
        return run_toolkit(setup, inputs, out_dir)
    return run_trainer(setup, inputs, out_dir, grouped=name == "trainer_grouped")


def bench_classifier(setup: ClassifierBenchSetup, folder: Path, log=print) -> dict:
    """Repeat the three contenders (the order rotating every repetition, so none always runs first
    on a machine whose load drifts; repetition r seeds all three with ``seed + r``) and report samples/s, the per-repetition ratios of the toolkit
    to each Trainer (median and spread), final accuracies and padding fractions."""
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    inputs = make_inputs(setup, Path(folder))
    results: Dict[str, List[dict]] = {name: [] for name in CONTENDERS}
    for r in range(setup.reps):
        order = CONTENDERS[r % 3 :] + CONTENDERS[: r % 3]
        # One seed per repetition, the same for all three: a randomly initialised model's accuracy
        # after a few epochs depends on its seed and data order by several points, so the medians
        # compare the loops over 5 seeds rather than one lucky or unlucky draw.
        rep = replace(setup, seed=setup.seed + r)
        for name in order:
            results[name].append(run_contender(name, rep, inputs, Path(folder) / f"{name}_{r}"))
        log(
            f"  classifier {setup.corpus} rep {r + 1}/{setup.reps}: "
            + "  ".join(f"{n} {results[n][-1]['seconds']:.1f}s acc {results[n][-1]['accuracy']:.3f}" for n in order)
        )
    return summarize(setup, results)


def summarize(setup: ClassifierBenchSetup, results: Dict[str, List[dict]]) -> dict:
    sps = {n: [x["samples"] / x["seconds"] for x in rs] for n, rs in results.items()}
    sps["toolkit_without_exports"] = [x["samples"] / (x["seconds"] - x["io_seconds"]) for x in results["toolkit"]]
    acc = {n: summary([x["accuracy"] for x in rs]) for n, rs in results.items()}
    return {
        "setup": setup.as_dict(),
        "samples_per_s": {n: summary(v) for n, v in sps.items()},
        "ratio_vs_trainer": summary(ratios(sps["toolkit"], sps["trainer"])),
        "ratio_vs_trainer_grouped": summary(ratios(sps["toolkit"], sps["trainer_grouped"])),
        "ratio_vs_trainer_grouped_without_exports": summary(
            ratios(sps["toolkit_without_exports"], sps["trainer_grouped"])
        ),
        "accuracy": acc,
        "accuracy_gap_points": {n: 100 * (acc["toolkit"]["median"] - acc[n]["median"]) for n in CONTENDERS[1:]},
        "padding_fraction": {n: rs[0]["padding_fraction"] for n, rs in results.items()},
        "eval_padding_fraction": {n: rs[0]["eval_padding_fraction"] for n, rs in results.items()},
        "updates": {n: rs[0]["updates"] for n, rs in results.items()},
        "optimizer": {n: rs[0]["optimizer"] for n, rs in results.items()},
        "toolkit_export_seconds": summary([x["io_seconds"] for x in results["toolkit"]]),
    }
