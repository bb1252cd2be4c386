"""The GAN training loop: G and D, two optimizers, two schedulers and the dataloader through
ONE ``accelerator.prepare``; D phase then G phase inside one ``accumulate(G, D)`` per batch."""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from transformers import get_scheduler

from ..config import RunArguments, config_to_dict
from ..data import ResumableSampler
from ..data.source import ImageSource, open_image_source
from ..errors import ConfigError
from ..loop import TrainingRun, build_accelerator
from ..loop.guard import NonFiniteError, all_finite
from ..models import build_models, save_generator
from ..sampling import fixed_noise, grid_labels, save_grid
from .augment import make_augment, parse_policy
from .config import GANDataArguments, GANEvalArguments, GANModelArguments, GANTrainArguments
from .ema import EMA, recalibrate_batchnorm
from .noise import AUGMENT, GP_ALPHA, NOISE, StepNoise
from .speed import compile_in_place, to_channels_last
from .step import apply_update, d_step, g_step, make_adam


@dataclass
class GANParts:
    """Everything the step needs; G/D/optimizers/schedulers/loader are the prepared objects."""

    G: torch.nn.Module
    D: torch.nn.Module
    opt_G: torch.optim.Optimizer
    opt_D: torch.optim.Optimizer
    sched_G: object
    sched_D: object
    loader: DataLoader
    sampler: ResumableSampler
    ema: EMA
    data: ImageSource               # turns a batch of the loader into float images (+ labels)
    noise: StepNoise


def make_scheduler(name: str, optimizer, warmup_updates: int, total_updates: int, num_processes: int):
    """A prepared scheduler steps ``num_processes`` times per optimizer update (Accelerate notes
    #4), so lengths are counted in those steps: it then ends exactly at the last update."""
    kind = {"constant": "constant_with_warmup", "linear": "linear", "cosine": "cosine"}[name]
    return get_scheduler(kind, optimizer, num_warmup_steps=warmup_updates * num_processes,
                         num_training_steps=total_updates * num_processes)


def build_parts(run: TrainingRun, data: ImageSource, model_args: GANModelArguments, train: GANTrainArguments, seed: int,
                data_workers: int = 0) -> GANParts:
    acc = run.accelerator
    num_classes = data.num_classes if model_args.conditional else 0
    G, D = build_models(model_args.arch, z_dim=model_args.z_dim, channels=data.channels, image_size=data.image_size,
                        g_channels=model_args.g_channels, d_channels=model_args.d_channels, d_norm=model_args.d_norm, g_norm=model_args.g_norm,
                        num_classes=num_classes)
    if train.channels_last:
        to_channels_last(G, D)  # before the optimizers (and the EMA copy) see the parameters
    betas = (train.adam_beta1, train.adam_beta2)
    opt_G = make_adam(G.parameters(), train.lr_g, betas)
    opt_D = make_adam(D.parameters(), train.lr_d, betas)
    n_critic, P = train.d_steps_per_g_step, acc.num_processes
    # Each scheduler is built on its own raw optimizer and prepared in the same call (notes #4).
    sched_G = make_scheduler(train.lr_scheduler, opt_G, train.warmup_steps, train.max_steps, P)
    sched_D = make_scheduler(train.lr_scheduler, opt_D, train.warmup_steps * n_critic, train.max_steps * n_critic, P)
    sampler = ResumableSampler(len(data), seed=seed)
    # In memory: a loader of indices into a device tensor; streamed: of uint8 batches from workers.
    loader = data.make_loader(train.batch_size, sampler, data_workers, acc.device, train.channels_last)
    if len(loader) < P:
        raise ConfigError(f"--batch_size {train.batch_size} x {P} processes is larger than the dataset ({len(data)} images); lower --batch_size")
    G, D, opt_G, opt_D, sched_G, sched_D, loader = acc.prepare(G, D, opt_G, opt_D, sched_G, sched_D, loader)
    ema = EMA(acc.unwrap_model(G), train.ema_decay, train.ema_start)
    if train.compile:
        # After the EMA copy (kept eager: it only samples) and in place, so state-dict keys and
        # checkpoints are the same with or without --compile.
        compile_in_place({"G": acc.unwrap_model(G), "D": acc.unwrap_model(D)}, acc.device, run.print)
    noise = StepNoise(seed, acc.device, P, acc.process_index, train.batch_size)
    return GANParts(G, D, opt_G, opt_D, sched_G, sched_D, loader, sampler, ema, data, noise)


class GANTrainer:
    def __init__(self, data_args: GANDataArguments, model_args: GANModelArguments, train: GANTrainArguments,
                 run_args: RunArguments, eval_args: Optional[GANEvalArguments] = None) -> None:
        model_args.check_image_size(data_args.image_size)
        self.data_args, self.model_args, self.train, self.run_args = data_args, model_args, train, run_args
        self.eval_args = eval_args or GANEvalArguments()
        # Data first: a bad folder or file fails before the run folder is touched. One process
        # downloads/decodes first, the others then read its cache.
        accelerator = build_accelerator(run_args, "gan")
        with accelerator.main_process_first():
            self.data = open_image_source(data_args, accelerator.device, print_fn=accelerator.print,
                                          show_progress=accelerator.is_local_main_process)
        if model_args.conditional and self.data.labels is None:
            raise ConfigError(f"--conditional needs labelled data; {self.data.name} has no class sub-folders")
        self.run = TrainingRun(run_args, config_to_dict(data_args, model_args, train, self.eval_args, run_args), project="gan",
                               accelerator=accelerator)
        set_seed(run_args.seed)  # weight init
        self.run.print(f"Data: {self.data.name}, {len(self.data)} images {self.data.shape}, "
                       f"{self.data.num_classes} classes, {self.data.describe()}")
        self.parts = build_parts(self.run, self.data, model_args, train, run_args.seed, data_args.dataloader_num_workers)
        self.num_classes = self.data.num_classes if model_args.conditional else 0
        self.sample_z = fixed_noise(train.num_sample_images, model_args.z_dim, run_args.seed + 12345)
        self.sample_labels = grid_labels(train.num_sample_images, self.num_classes)
        self.run.resume(read_extra=self.parts.ema.load)
        self.evaluator = self.build_evaluator()

    # ---- one batch ---------------------------------------------------------------------
    def micro_step(self, idx: torch.Tensor) -> dict:
        p, t, acc, state = self.parts, self.train, self.run.accelerator, self.run.state
        real, labels = p.data.real_batch(idx)
        labels = labels if self.num_classes else None
        z = p.noise.normal(state.micro_step, NOISE, self.model_args.z_dim)
        # Phases are decided per D update WINDOW (state.d_updates only moves on a sync step), so
        # every micro-step of an accumulated update agrees, and a resumed run agrees too.
        g_phase = state.d_updates % t.d_steps_per_g_step == t.d_steps_per_g_step - 1
        # Lazy R1 (StyleGAN2): on every k-th D update only, weighted by k to keep its strength.
        r1_phase = t.r1_gamma > 0 and state.d_updates % t.r1_interval == 0
        r1_weight = t.r1_gamma / 2 * t.r1_interval if r1_phase else 0.0
        # DiffAugment: re-seeded per call, so real, fake and the penalties' inputs of this step
        # get the same transforms; seeded by the micro-step, so resume draws the same ones.
        step = state.micro_step
        augment = make_augment(parse_policy(t.diffaugment), lambda: p.noise.generator_for(step, AUGMENT))
        check = acc.mixed_precision != "fp16"  # fp16: the scaler finds and skips inf/NaN itself
        with acc.accumulate(p.G, p.D):
            # One G forward serves both phases; it keeps a graph only when G trains on it.
            with torch.set_grad_enabled(g_phase):
                fake = p.G(z, labels)
            alpha = p.noise.uniform(state.micro_step, GP_ALPHA, 1, 1, 1) if t.loss == "wgan_gp" else None
            metrics = d_step(acc, p.D, real, fake, labels, t.loss, t.gp_weight if t.loss == "wgan_gp" else 0.0, alpha,
                             r1_weight=r1_weight, augment=augment)
            d_ok = apply_update(acc, p.opt_D, p.sched_D, p.D, check)
            g_ok = None
            if g_phase:
                metrics.update(g_step(acc, p.D, fake, labels, t.loss, augment=augment))
                g_ok = apply_update(acc, p.opt_G, p.sched_G, p.G, check)
        state.micro_step += 1
        state.epoch_start += t.batch_size * acc.num_processes
        metrics["_sync"] = d_ok is not None
        metrics["_g_update"] = g_ok is not None
        metrics["_ok"] = d_ok if g_ok is None else (g_ok if d_ok is None else d_ok & g_ok)
        return metrics

    # ---- the loop ----------------------------------------------------------------------
    def batches(self):
        """Batches of sample indices, resuming mid-epoch at the saved position."""
        state, sampler, loader = self.run.state, self.parts.sampler, self.parts.loader
        while True:
            sampler.set_position(state.epoch, state.epoch_start)
            yield from loader
            state.epoch += 1
            state.epoch_start = 0

    def fit(self) -> Path:
        run, t, state = self.run, self.train, self.run.state
        run.make_logger(t.max_steps, unit="img", desc="gan")
        if state.step >= t.max_steps:
            run.print(f"Already at step {state.step} >= --max_steps {t.max_steps}: nothing to train")
        try:
            self.train_loop()
        except BaseException:
            run.abort()
            raise
        self.finish()
        return run.output_dir

    def train_loop(self) -> None:
        run, t, state, logger = self.run, self.train, self.run.state, self.run.logger
        with run.stop:
            for idx in self.batches() if state.step < t.max_steps else ():
                metrics = self.micro_step(idx)
                sync, g_update, ok = metrics.pop("_sync"), metrics.pop("_g_update"), metrics.pop("_ok")
                logger.accumulate(metrics, samples=t.batch_size)
                if not sync:
                    continue
                state.d_updates += 1
                run.guard.record(ok)  # device-side count; read back at log/checkpoint time
                if not g_update:
                    continue
                state.step += 1
                self.parts.ema.update(run.accelerator.unwrap_model(self.parts.G), state.step)
                logger.advance(state.step)
                if self.after_update():
                    break

    def after_update(self) -> bool:
        """Logging, samples, checkpoints, signals after each G update; True means stop."""
        run, t, state = self.run, self.train, self.run.state
        done = state.step >= t.max_steps
        if run.logger.should_log(state.step) or done:
            run.guard.check()  # raises after --max_nonfinite_steps skipped updates in a row
            run.logger.flush(state.step, extra={**self.lr_metrics(), "nonfinite/skipped_total": state.nonfinite_total})
        if (t.sample_every and state.step % t.sample_every == 0) or done:
            self.save_samples()
        if self.evaluator is not None and (run.due(self.eval_args.eval_every) or done):
            self.evaluate()
        if run.should_stop():
            self.save_checkpoint()
            run.print(f"Stopped by signal at step {state.step}; continue with --resume_from_checkpoint latest")
            return True
        if run.due(self.run_args.checkpointing_steps) or done:
            self.save_checkpoint()
        return done

    def lr_metrics(self) -> dict:
        return {"lr/G": self.parts.sched_G.get_last_lr()[0], "lr/D": self.parts.sched_D.get_last_lr()[0]}

    # ---- evaluation --------------------------------------------------------------------
    def build_evaluator(self):
        """The evaluator (domain classifier, reference statistics, floor: built once, cached on
        disk) lives on the main process only; the other ranks never wait for it."""
        e = self.eval_args
        if not e.eval_every or not self.run.accelerator.is_main_process:
            return None
        from ..metrics import GANEvaluator

        cache_dir = e.eval_cache_dir or str(self.run.output_dir / "cache")
        return GANEvaluator(self.data.image_data(), feature_extractor=e.eval_feature_extractor, num_images=e.eval_num_images,
                            cache_dir=cache_dir, device=self.run.accelerator.device, seed=self.run_args.seed,
                            inception_weights=e.inception_weights)

    def evaluate(self) -> dict:
        run, state = self.run, self.run.state
        G = self.calibrated_ema()
        metrics = self.evaluator.evaluate(G)
        fid = metrics["eval/fid"]
        best = state.best_metric
        if best != best or fid < best:  # NaN (no evaluation yet) or better
            state.best_metric = fid
            save_generator(copy.deepcopy(G).cpu(), run.output_dir / "best_generator")
            metrics["eval/best_step"] = float(state.step)
        metrics["eval/best_fid"] = state.best_metric
        run.logger.write(state.step, metrics)
        run.print(f"step {state.step}: FID {fid:.3f} (floor {metrics['eval/fid_floor']:.3f}), "
                  f"KID {metrics['eval/kid_mean']:.4f}, best FID {state.best_metric:.3f}")
        return metrics

    # ---- outputs -----------------------------------------------------------------------
    def calibrated_ema(self) -> torch.nn.Module:
        """A copy of the EMA generator with BatchNorm statistics recomputed for its weights."""
        G = copy.deepcopy(self.parts.ema.module)
        recalibrate_batchnorm(G, self.model_args.z_dim, self.num_classes, self.run.accelerator.device,
                              seed=self.run_args.seed)
        return G.eval()

    def save_samples(self) -> Optional[Path]:
        # Main process only, on the unwrapped EMA copy: calling the DDP-wrapped G on one rank
        # would hang (Accelerate notes #8).
        if not self.run.accelerator.is_main_process:
            return None
        G = self.calibrated_ema()
        with torch.no_grad():
            dev = self.run.accelerator.device
            labels = self.sample_labels.to(dev) if self.sample_labels is not None else None
            images = G(self.sample_z.to(dev), labels).float().cpu()
        # A row per class when conditional; otherwise as square as the count allows (100 -> 10 x 10).
        nrow = self.num_classes or max(1, math.ceil(math.sqrt(len(images))))
        return save_grid(images, self.run.output_dir / "samples" / f"step_{self.run.state.step:06d}.png", nrow=nrow)

    def save_checkpoint(self) -> Path:
        p = self.parts
        weights = [*p.G.parameters(), *p.D.parameters(), *p.ema.module.parameters()]
        if not bool(all_finite(weights)):
            raise NonFiniteError(f"weights became non-finite at step {self.run.state.step}; no checkpoint was written and "
                                 "the last finite one is kept. Lower the learning rates.")
        return self.run.save(write_extra=p.ema.save)

    def finish(self) -> None:
        run = self.run
        if run.accelerator.is_main_process and not run.stopped_by_signal and run.state.step >= self.train.max_steps:
            out = run.output_dir / "generator"
            save_generator(self.calibrated_ema().cpu(), out)
            run.print(f"Exported the EMA generator to {out}")
        run.finish()


def train_gan(data_args: GANDataArguments, model_args: GANModelArguments, train: GANTrainArguments,
              run_args: RunArguments, eval_args: Optional[GANEvalArguments] = None) -> Path:
    return GANTrainer(data_args, model_args, train, run_args, eval_args).fit()
