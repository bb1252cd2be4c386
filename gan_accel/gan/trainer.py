"""The GAN run: data, models and the recipe (:mod:`.recipe`) on the engine, plus what only a GAN
writes: EMA sample grids, FID evaluation with the best generator kept, the generator export."""
from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Optional

import torch
from accelerate.utils import set_seed

from ..config import RunArguments, config_to_dict
from ..data import ResumableSampler
from ..data.fingerprint import check_run_outside_data, image_fingerprint
from ..data.source import open_image_source
from ..engine import BestKeeper, Engine
from ..errors import ConfigError
from ..loop import TrainingRun, build_accelerator
from ..loop.trackers import log_image
from ..models import build_models, save_generator
from ..models.hub import publish
from ..sampling import class_rows, fixed_noise, grid_labels, save_grid
from .config import GANDataArguments, GANEvalArguments, GANModelArguments, GANTrainArguments
from .ema import EMA, recalibrate_batchnorm
from .noise import StepNoise
from .recipe import GANRecipe
from .speed import compile_in_place, to_channels_last


class GANTrainer:
    def __init__(self, data_args: GANDataArguments, model_args: GANModelArguments, train: GANTrainArguments,
                 run_args: RunArguments, eval_args: Optional[GANEvalArguments] = None) -> None:
        model_args.check_image_size(data_args.image_size)
        self.data_args, self.model_args, self.train_args, self.run_args = data_args, model_args, train, run_args
        self.eval_args = eval_args or GANEvalArguments()
        # Data first: a bad folder or file fails before the run folder is touched. One process
        # downloads/decodes first, the others then read its cache.
        check_run_outside_data(run_args.output_dir, data_args)
        accelerator = build_accelerator(run_args, "gan")
        with accelerator.main_process_first():
            self.data = open_image_source(data_args, accelerator.device, print_fn=accelerator.print,
                                          show_progress=accelerator.is_local_main_process)
        if model_args.conditional and self.data.labels is None:
            raise ConfigError(f"--conditional needs labelled data; {self.data.name} {self.data.unlabelled_reason}")
        P = accelerator.num_processes  # checked before the run folder (config.json) is written
        if len(self.data) // train.batch_size < P:  # full batches only (drop_last), one per process at least
            raise ConfigError(f"--batch_size {train.batch_size} x {P} processes is larger than the dataset "
                              f"({len(self.data)} images); lower --batch_size")
        self.run = TrainingRun(run_args, config_to_dict(data_args, model_args, train, self.eval_args, run_args), project="gan",
                               accelerator=accelerator, data_fingerprint=image_fingerprint(data_args, self.data))
        set_seed(run_args.seed)  # weight init
        self.run.print(f"Data: {self.data.name}, {len(self.data)} images {self.data.shape}, "
                       f"{self.data.num_classes} classes, {self.data.describe()}")
        self.num_classes = self.data.num_classes if model_args.conditional else 0
        self.engine = self.build_engine()
        self.ema = EMA(self.engine.module("G"), train.ema_decay, train.ema_start)
        if train.compile:
            # After the EMA copy (kept eager: it only samples) and in place, so state-dict keys and
            # checkpoints are the same with or without --compile.
            compile_in_place({"G": self.engine.module("G"), "D": self.engine.module("D")}, accelerator.device, self.run.print)
        self.sample_z = fixed_noise(train.num_sample_images, model_args.z_dim, run_args.seed + 12345)
        self.sample_labels = grid_labels(train.num_sample_images, self.num_classes)
        self.evaluator = self.build_evaluator()
        self.add_hooks()
        self.engine.resume()

    def build_engine(self) -> Engine:
        m, t, acc = self.model_args, self.train_args, self.run.accelerator
        G, D = build_models(m.arch, z_dim=m.z_dim, channels=self.data.channels, image_size=self.data.image_size,
                            g_channels=m.g_channels, d_channels=m.d_channels, d_norm=m.d_norm, g_norm=m.g_norm,
                            num_classes=self.num_classes)
        if t.channels_last:
            to_channels_last(G, D)  # before the optimizers (and the EMA copy) see the parameters
        # In memory: a loader of sample indices whose images are gathered from a tensor on the
        # device (no per-sample decode or host-to-device copy of pixels); streamed: uint8 batches
        # from DataLoader workers. The same sampler either way, so the same indices, the same
        # pixels, and the engine's exact mid-epoch resume and sharding hold for both.
        sampler = ResumableSampler(len(self.data), seed=self.run_args.seed)
        loader = self.data.make_loader(t.batch_size, sampler, self.data_args.dataloader_num_workers, acc.device,
                                       t.channels_last)
        noise = StepNoise(self.run_args.seed, acc.device, acc.num_processes, acc.process_index, t.batch_size)
        recipe = GANRecipe(t, self.data.real_batch, noise, m.z_dim, conditional=bool(self.num_classes)).recipe(G, D)
        return Engine(self.run, recipe, loader, max_steps=t.max_steps, unit="img", desc="gan")

    def add_hooks(self) -> None:
        engine, t = self.engine, self.train_args
        engine.register_state("ema", self.ema)
        engine.on_update(lambda: self.ema.update(engine.module("G"), self.run.state.step))
        # Grids come after the checkpoint, and the final one after the export (train): a failing
        # grid must never cost the training since the last checkpoint. Looked up at call time
        # (the benchmark stubs it).
        engine.every(t.sample_every, lambda: self.save_samples(), at_end=False, after_checkpoint=True)
        # A non-finite FID (a diverged G) never becomes the best (BestKeeper).
        self.keeper = BestKeeper(self.run.state, "eval/fid", greater_is_better=False, export=self.export_best)
        if self.evaluator is not None:
            engine.every(self.eval_args.eval_every, self.evaluate)

    # ---- evaluation --------------------------------------------------------------------
    def build_evaluator(self):
        """The evaluator (domain classifier, reference statistics, floor: built once, cached on
        disk) lives on the main process only; the other ranks never wait for it."""
        e = self.eval_args
        if not e.eval_every or not self.run.accelerator.is_main_process:
            return None
        from ..metrics import GANEvaluator

        cache_dir = e.eval_cache_dir or str(self.run.output_dir / "cache")
        # Streamed: a fixed subset of the real images, so its memory does not grow with the dataset.
        return GANEvaluator(self.data.image_data(), feature_extractor=e.eval_feature_extractor, num_images=e.eval_num_images,
                            cache_dir=cache_dir, device=self.run.accelerator.device, seed=self.run_args.seed,
                            inception_weights=e.inception_weights)

    def evaluate(self) -> dict:
        run, state = self.run, self.run.state
        self._evaluated = self.calibrated_ema()
        metrics = self.evaluator.evaluate(self._evaluated)
        if self.keeper.update(metrics):
            metrics["eval/best_step"] = float(state.step)
        metrics["eval/best_fid"] = state.best_metric
        run.logger.write(state.step, metrics)
        run.print(f"step {state.step}: FID {metrics['eval/fid']:.3f} (floor {metrics['eval/fid_floor']:.3f}), "
                  f"KID {metrics['eval/kid_mean']:.4f}, best FID {state.best_metric:.3f}")
        return metrics

    def export_best(self, metrics: dict) -> None:
        save_generator(copy.deepcopy(self._evaluated).cpu(), self.run.output_dir / "best_generator",
                       run_config=self.run.config)

    # ---- outputs -----------------------------------------------------------------------
    def calibrated_ema(self) -> torch.nn.Module:
        """A copy of the EMA generator with BatchNorm statistics recomputed for its weights."""
        G = copy.deepcopy(self.ema.module)
        recalibrate_batchnorm(G, self.model_args.z_dim, self.num_classes, self.run.accelerator.device,
                              seed=self.run_args.seed)
        return G.eval()

    def save_samples(self) -> Optional[Path]:
        # Main process only, on the EMA copy (a plain module): calling the DDP-wrapped G on one
        # rank would hang, since the other ranks never join its collectives.
        if not self.run.accelerator.is_main_process:
            return None
        G = self.calibrated_ema()
        with torch.no_grad():
            dev = self.run.accelerator.device
            labels = self.sample_labels.to(dev) if self.sample_labels is not None else None
            images = G(self.sample_z.to(dev), labels).float().cpu()
        # A row per class when conditional; otherwise as square as the count allows (100 -> 10 x 10).
        if self.num_classes:
            images, nrow = class_rows(images, self.sample_labels, self.num_classes)
        else:
            nrow = max(1, math.ceil(math.sqrt(len(images))))
        path = save_grid(images, self.run.output_dir / "samples" / f"step_{self.run.state.step:06d}.png", nrow=nrow)
        log_image(self.run.accelerator, "samples", path, self.run.state.step)  # --report_to trackers that take images
        return path

    def train(self) -> Path:
        """Train to --max_steps (or a signal), export the EMA generator when finished, then draw
        the final grid (after the export it must not endanger)."""
        run = self.run
        finished = self.engine.train()
        main = run.accelerator.is_main_process
        try:
            if main and finished and run.state.step >= self.train_args.max_steps:
                out = run.output_dir / "generator"
                save_generator(self.calibrated_ema().cpu(), out, run_config=run.config)  # refuses non-finite weights
                run.print(f"Exported the EMA generator to {out}")
                publish(out, run.args)  # --push_to_hub
                self.save_samples()
        finally:
            run.finish()
        if main:  # once, and only what this run wrote
            written = [f"{name}: {run.output_dir / name}" for name in ("samples", "generator", "best_generator")
                       if (run.output_dir / name).is_dir()]
            print(f"Run folder: {run.output_dir}" + (f"  ({', '.join(written)})" if written else ""))
        return run.output_dir


def train_gan(data_args: GANDataArguments, model_args: GANModelArguments, train: GANTrainArguments,
              run_args: RunArguments, eval_args: Optional[GANEvalArguments] = None) -> Path:
    return GANTrainer(data_args, model_args, train, run_args, eval_args).train()
