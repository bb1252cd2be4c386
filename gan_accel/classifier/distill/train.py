"""A distillation run: read and check the data, teacher and student; declare the recipe; let
the engine train; evaluate and export the student."""
from __future__ import annotations

import time
from typing import Callable, Optional

import torch

from ...config import RunArguments, config_to_dict
from ...data.fingerprint import table_fingerprint
from ...engine import Engine
from ...errors import UserError
from ...loop.run import TrainingRun
from ..config import ClassifierDataArguments, ClassifierTrainArguments
from ..data import ClassificationData, build_dataloaders, encode_data, read_labelled_rows
from ..model import schedule_length
from .config import DistillArguments, DistillModelArguments
from .evaluation import DistillEvaluator
from .networks import load_networks
from .recipe import TeacherLogits, distill_recipe
from .teacher import IndexedDataset, cached_teacher_logits, compute_teacher_logits, fingerprint

OnUpdate = Callable[[object], None]


def fill_logit_cache(engine: Engine, cache: TeacherLogits, data: ClassificationData, collate, batch_size: int,
                     data_args: ClassifierDataArguments, model_args: DistillModelArguments) -> dict:
    """Teacher logits for the training set, from ``OUTPUT_DIR/teacher_logits.safetensors`` when it
    was computed for this teacher and data (a resume), else computed now; timings for the record."""
    from torch.utils.data import DataLoader

    start = time.perf_counter()
    meta = fingerprint(model_args.teacher_model_name_or_path, data.train, data_args.max_length)

    def compute() -> torch.Tensor:
        # Its own generator: creating a loader's iterator draws a seed, from the global RNG by
        # default, which would shift the student's dropout stream; with it, a run with the cache
        # draws the same dropout masks as one without.
        loader = DataLoader(data.train, batch_size=batch_size, shuffle=False, collate_fn=collate,
                            generator=torch.Generator().manual_seed(0))
        return compute_teacher_logits(engine.accelerator, engine.nets.teacher, loader, len(data.label_names))

    cache.logits, reused = cached_teacher_logits(engine.accelerator, engine.run.output_dir, meta, compute)
    seconds = time.perf_counter() - start
    engine.run.print(f"teacher logits for {len(data.train)} training examples: "
                     f"{'reused from the run folder' if reused else 'computed'} in {seconds:.1f} s")
    return {"teacher_cache_seconds": seconds, "teacher_cache_reused": reused}


def train_distill(data_args: ClassifierDataArguments, model_args: DistillModelArguments, args: DistillArguments,
                  train_args: ClassifierTrainArguments, run_args: RunArguments,
                  on_update: Optional[OnUpdate] = None) -> TrainingRun:
    """Distil and export the student; returns the finished run. ``on_update(state)`` is called
    after every update (tests use it to interrupt a run at an exact step)."""
    from accelerate.utils import set_seed

    if train_args.local_sgd_steps:
        raise UserError("--local_sgd_steps is not supported by distillation; leave it at 0")
    # Files, teacher and student first: a bad file, label set or vocabulary fails before the run
    # folder is touched.
    raw = read_labelled_rows(data_args)
    set_seed(run_args.seed)  # a student checkpoint with another head gets a fresh one, drawn from this
    nets = load_networks(model_args, raw.label_names, args.alpha_cos, data_args.max_length,
                         pair=bool(data_args.text_pair_column))
    run = TrainingRun(run_args, config_to_dict(data_args, model_args, args, train_args, run_args), project="distill",
                      data_fingerprint=table_fingerprint(data_args, raw))
    acc = run.accelerator
    with acc.main_process_first():
        data = encode_data(raw, data_args, nets.tokenizer)
    data = ClassificationData(IndexedDataset(data.train), data.validation, data.label_names)
    eval_batch_size = train_args.eval_batch_size or 2 * train_args.batch_size
    train_dl, eval_dl, _ = build_dataloaders(data, nets.tokenizer, train_args.batch_size, eval_batch_size, run_args.seed)
    # Sized from the UNPREPARED loader: the engine converts updates into scheduler ticks.
    length = schedule_length(len(train_dl), acc.num_processes, train_args, run_args.gradient_accumulation_steps)
    cache = TeacherLogits()
    recipe = distill_recipe(nets.student, nets.teacher, args, train_args, length, cache)
    engine = Engine(run, recipe, train_dl, max_steps=length.total_updates, eval_loaders=[eval_dl], desc="distil")
    run.print(f"labels: {data.label_names}  train: {len(data.train)}  validation: {len(data.validation)}  "
              f"optimizer updates: {length.total_updates} (warm-up {length.warmup_updates})")
    record = {"cache_teacher_logits": args.cache_teacher_logits}
    if args.cache_teacher_logits and args.alpha_kd > 0:
        record.update(fill_logit_cache(engine, cache, data, train_dl.collate_fn, eval_batch_size, data_args, model_args))
    evaluator = DistillEvaluator(engine, nets.tokenizer, engine.eval_loaders[0], len(data.label_names),
                                 train_args.metric_for_best_model, train_args.greater_is_better)
    engine.every(train_args.eval_every, evaluator, at_end=True, at_epoch_end=True)
    if on_update is not None:
        engine.on_update(lambda: on_update(run.state))
    engine.resume()
    start = time.perf_counter()
    finished = engine.train()
    if finished:
        record["train_seconds"] = time.perf_counter() - start
        evaluator.write_results(record)
    run.finish()
    return run
