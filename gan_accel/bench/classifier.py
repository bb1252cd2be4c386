"""Classifier contenders: the toolkit's loop (:class:`ClassifierTrainer` on the engine) and ``transformers.Trainer``
on the same tiny DistilBERT, data, batch, epochs, optimizer, schedule and per-epoch evaluation.

Timed: the training loop proper of each (the toolkit's ``train_loop()``; Trainer from
``on_train_begin`` to ``on_train_end``), evaluations included. Both start from the same weights
(the new head is drawn after the same ``set_seed``); their shuffles differ (each its own
sampler), so accuracies are compared, not weights. Trainer runs with ``save_strategy="no"`` and
``report_to=[]``, its defaults otherwise; the toolkit's loop writes its best-model export and
final checkpoint: that time is measured apart and reported both ways.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict

from .common import Stopwatch, reset_accelerate, synchronize


@dataclass
class ClassifierBenchSetup:
    n_train: int = 960
    n_val: int = 200
    batch_size: int = 16
    epochs: int = 3
    learning_rate: float = 1e-3   # a randomly initialised tiny model needs more than fine-tuning's 2e-5
    warmup_ratio: float = 0.1
    max_length: int = 32
    dim: int = 64                 # the tiny DistilBERT (gan_accel.classifier.tiny)
    n_layers: int = 2
    seed: int = 0
    reps: int = 5
    cpu: bool = True


def make_inputs(setup: ClassifierBenchSetup, folder: Path) -> Dict[str, Path]:
    """The generated corpus and the tiny model trained on its vocabulary (offline)."""
    from ..classifier.synthetic import make_corpus
    from ..classifier.tiny import TinyModelArguments, make_tiny_model

    corpus = make_corpus(Path(folder) / "data", setup.n_train, setup.n_val)
    model_dir = make_tiny_model(TinyModelArguments(train_file=str(corpus["train"]), output_dir=str(Path(folder) / "tiny"),
                                                   dim=setup.dim, n_layers=setup.n_layers, n_heads=2,
                                                   max_position_embeddings=64))
    return {**corpus, "model": model_dir}


def _configs(setup: ClassifierBenchSetup, inputs: Dict[str, Path]):
    from ..classifier.config import ClassifierDataArguments, ClassifierModelArguments, ClassifierTrainArguments

    data = ClassifierDataArguments(train_file=str(inputs["train"]), validation_file=str(inputs["validation"]),
                                   max_length=setup.max_length)
    model = ClassifierModelArguments(model_name_or_path=str(inputs["model"]))
    train = ClassifierTrainArguments(learning_rate=setup.learning_rate, warmup_ratio=setup.warmup_ratio,
                                     num_train_epochs=setup.epochs, batch_size=setup.batch_size)
    return data, model, train


def run_toolkit(setup: ClassifierBenchSetup, inputs: Dict[str, Path], out_dir: Path) -> Dict[str, float]:
    """``train_classifier``'s steps, with the loop timed apart from the set-up."""
    from ..classifier.train import ClassifierTrainer
    from ..config import RunArguments

    reset_accelerate()
    data_args, model_args, train_args = _configs(setup, inputs)
    run_args = RunArguments(output_dir=str(out_dir), overwrite_output_dir=True, seed=setup.seed, checkpointing_steps=0,
                            cpu=setup.cpu)
    trainer = ClassifierTrainer(data_args, model_args, train_args, run_args)
    engine, io = trainer.engine, Stopwatch()
    engine.save_checkpoint = io.wrap(engine.save_checkpoint)   # the final checkpoint
    trainer.keeper.update = io.wrap(trainer.keeper.update)     # the best-model export after each evaluation
    device = trainer.run.accelerator.device
    synchronize(device)
    t0 = time.perf_counter()
    trainer.train_loop()
    synchronize(device)
    seconds = time.perf_counter() - t0
    trainer.run.finish()
    raw = engine.optimizers["model"].optimizer
    return {"seconds": seconds, "io_seconds": io.seconds, "samples": len(trainer.data.train) * setup.epochs,
            "accuracy": trainer.last_eval["eval/accuracy"], "updates": trainer.state.step,
            "optimizer": type(raw).__name__, "fused": bool(raw.defaults.get("fused"))}


def run_trainer(setup: ClassifierBenchSetup, inputs: Dict[str, Path], out_dir: Path, fused: bool = True) -> Dict[str, float]:
    import numpy as np
    from accelerate.utils import set_seed
    from transformers import DataCollatorWithPadding, Trainer, TrainerCallback, TrainingArguments

    from ..classifier.data import encode_data, read_labelled_rows
    from ..classifier.model import load_model, load_tokenizer

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

    args = TrainingArguments(
        output_dir=str(out_dir), per_device_train_batch_size=setup.batch_size,
        per_device_eval_batch_size=2 * setup.batch_size, num_train_epochs=setup.epochs,
        learning_rate=setup.learning_rate, lr_scheduler_type="linear", warmup_steps=setup.warmup_ratio,  # float: a ratio
        weight_decay=0.0, max_grad_norm=train_args.max_grad_norm,
        # AdamW with weight decay 0 is the toolkit's Adam; the same (fused) kernel.
        optim="adamw_torch_fused" if fused else "adamw_torch",
        eval_strategy="epoch", save_strategy="no", report_to=[], seed=setup.seed, use_cpu=setup.cpu,
    )
    timer = LoopTimer()
    trainer = Trainer(model=model, args=args, train_dataset=data.train, eval_dataset=data.validation,
                      data_collator=DataCollatorWithPadding(tokenizer), processing_class=tokenizer,
                      compute_metrics=accuracy, callbacks=[timer])
    trainer.train()
    evals = [h["eval_accuracy"] for h in trainer.state.log_history if "eval_accuracy" in h]
    return {"seconds": timer.seconds, "samples": len(data.train) * setup.epochs, "accuracy": evals[-1],
            "updates": trainer.state.global_step, "optimizer": type(trainer.optimizer.optimizer).__name__
            if hasattr(trainer.optimizer, "optimizer") else type(trainer.optimizer).__name__}


def bench_classifier(setup: ClassifierBenchSetup, folder: Path, log=print) -> dict:
    """Repeat toolkit/Trainer pairs (alternating which goes first) and report samples/s, the
    per-pair ratio (median and spread) and both final accuracies."""
    from .common import ratios, summary

    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    inputs = make_inputs(setup, folder)
    results = {"toolkit": [], "trainer": []}
    fused = True
    for r in range(setup.reps):
        order = ["toolkit", "trainer"] if r % 2 == 0 else ["trainer", "toolkit"]
        for name in order:
            out = Path(folder) / f"{name}_{r}"
            if name == "toolkit":
                res = run_toolkit(setup, inputs, out)
                fused = res["fused"]
            else:
                res = run_trainer(setup, inputs, out, fused=fused)
            results[name].append(res)
        log(f"  classifier rep {r + 1}/{setup.reps}: " + "  ".join(
            f"{n} {results[n][-1]['seconds']:.2f}s acc {results[n][-1]['accuracy']:.3f}" for n in order))
    sps = {n: [x["samples"] / x["seconds"] for x in rs] for n, rs in results.items()}
    sps_no_io = [x["samples"] / (x["seconds"] - x["io_seconds"]) for x in results["toolkit"]]
    acc = {n: [x["accuracy"] for x in rs] for n, rs in results.items()}
    return {
        "setup": {k: getattr(setup, k) for k in ("n_train", "n_val", "batch_size", "epochs", "learning_rate",
                                                   "warmup_ratio", "max_length", "dim", "n_layers", "reps", "seed")},
        "samples_per_s": {"toolkit": summary(sps["toolkit"]), "trainer": summary(sps["trainer"]),
                          "toolkit_without_exports": summary(sps_no_io)},
        "ratio_vs_trainer": summary(ratios(sps["toolkit"], sps["trainer"])),
        "ratio_vs_trainer_without_exports": summary(ratios(sps_no_io, sps["trainer"])),
        "accuracy": {"toolkit": summary(acc["toolkit"]), "trainer": summary(acc["trainer"])},
        "accuracy_gap_points": 100 * (summary(acc["toolkit"])["median"] - summary(acc["trainer"])["median"]),
        "updates": {n: rs[0]["updates"] for n, rs in results.items()},
        "optimizer": {n: rs[0]["optimizer"] for n, rs in results.items()},
        "toolkit_export_seconds": summary([x["io_seconds"] for x in results["toolkit"]]),
    }
