"""The CycleGAN run: the two domains, the four networks and the recipe (:mod:`.recipe`) on the
engine, plus what only a translation run writes: grids of fixed inputs, the translation
evaluation, and both generators exported."""
from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Dict, Optional

from accelerate.utils import set_seed
from torch.utils.data import DataLoader

from ..config import RunArguments, config_to_dict
from ..data.fingerprint import check_run_outside_data, domains_fingerprint
from ..engine import Engine
from ..errors import ConfigError
from ..gan.noise import StepNoise
from ..loop import TrainingRun, build_accelerator
from ..loop.trackers import log_image
from ..models.hub import publish
from .config import CycleGANDataArguments, CycleGANEvalArguments, CycleGANModelArguments, CycleGANTrainArguments
from .data import load_domains
from .export import save_translator
from .models import PatchDiscriminator, ResnetGenerator
from .pool import ImagePool
from .recipe import CycleGANRecipe
from .sampler import PairIndex, UnpairedSampler
from .samples import fixed_inputs, save_translation_grid
from .schedule import lr_schedule

DIRECTIONS = {"A2B": "G_AB", "B2A": "G_BA"}


class CycleGANTrainer:
    def __init__(self, data_args: CycleGANDataArguments, model_args: CycleGANModelArguments,
                 train: CycleGANTrainArguments, run_args: RunArguments, eval_args: CycleGANEvalArguments) -> None:
        model_args.check_image_size(data_args.image_size)
        self.data_args, self.model_args, self.train_args, self.run_args, self.eval_args = (
            data_args, model_args, train, run_args, eval_args)
        # Data first: a bad folder fails before the run folder is touched.
        check_run_outside_data(run_args.output_dir, data_args)
        accelerator = build_accelerator(run_args, "cyclegan")
        with accelerator.main_process_first():
            self.domains = load_domains(data_args.dataset, data_args.data_dir, data_args.decode_size,
                                        data_args.channels, size_flag=data_args.decode_size_flag)
        pairs, P = max(len(self.domains.train_a), len(self.domains.train_b)), accelerator.num_processes
        if pairs // train.batch_size < P:  # checked before the run folder is made: nothing on disk changes
            raise ConfigError(f"--batch_size {train.batch_size} x {P} processes is larger than the data "
                              f"({pairs} pairs an epoch); lower --batch_size")
        config = config_to_dict(data_args, model_args, train, eval_args, run_args)
        self.run = TrainingRun(run_args, config, project="cyclegan", accelerator=accelerator,
                               data_fingerprint=domains_fingerprint(data_args, self.domains))
        set_seed(run_args.seed)  # weight init
        a, b = self.domains.train_a, self.domains.train_b
        self.run.print(f"Data: A {a.name} {len(a)} images, B {b.name} {len(b)} images {tuple(a.images.shape[1:])}"
                       + (f", {a.num_classes} classes" if self.domains.labelled else ""))
        self.engine = self.build_engine()
        n, size = train.num_sample_images, data_args.image_size
        self.sample_a = fixed_inputs(a.images, n, size, run_args.seed + 12345).to(accelerator.device)
        self.sample_b = fixed_inputs(b.images, n, size, run_args.seed + 54321).to(accelerator.device)
        self.evaluators = self.build_evaluators()
        self.engine.every(train.sample_every, self.save_samples)
        if self.evaluators and eval_args.eval_every:
            self.engine.every(eval_args.eval_every, self.log_evaluation, at_end=False)
        self.engine.resume()

    def build_engine(self) -> Engine:
        d, m, t, acc = self.data_args, self.model_args, self.train_args, self.run.accelerator
        C = d.channels
        G_AB, G_BA = ResnetGenerator(C, m.g_channels, m.n_blocks), ResnetGenerator(C, m.g_channels, m.n_blocks)
        D_A, D_B = PatchDiscriminator(C, m.d_channels, m.d_layers), PatchDiscriminator(C, m.d_channels, m.d_layers)
        a, b = self.domains.train_a, self.domains.train_b
        sampler = UnpairedSampler(len(a), len(b), seed=self.run_args.seed)
        loader = DataLoader(PairIndex(sampler.num_samples), batch_size=t.batch_size, sampler=sampler, drop_last=True)
        P = acc.num_processes
        # Updates one process makes per epoch (the engine ends an accumulation window at the end
        # of the data too), so epochs convert to updates whatever the number of processes.
        per_epoch = math.ceil(len(loader) // P / self.run_args.gradient_accumulation_steps)
        total = t.max_steps or (t.n_epochs + t.n_epochs_decay) * per_epoch
        if t.lr_scheduler != "reference" and t.warmup_steps >= total:
            raise ConfigError(f"--warmup_steps ({t.warmup_steps}) must be smaller than the run's {total} updates")
        schedule = lr_schedule(t.lr_scheduler, constant_updates=t.n_epochs * per_epoch,
                               decay_updates=t.n_epochs_decay * per_epoch, total_updates=total,
                               warmup_updates=t.warmup_steps)
        seed = self.run_args.seed
        self.pools = {name: ImagePool(t.pool_size, seed=seed * 2 + i, device=acc.device)
                      for i, name in enumerate(("pool_A", "pool_B"))}
        noise = StepNoise(seed, acc.device, P, acc.process_index, t.batch_size)
        recipe = CycleGANRecipe(t, d, a.images.to(acc.device), b.images.to(acc.device), noise, self.pools, acc)
        engine = Engine(self.run, recipe.recipe(G_AB, G_BA, D_A, D_B, schedule), loader, max_steps=total,
                        unit="pair", desc="cyclegan")
        for name, pool in self.pools.items():
            engine.register_state(name, pool)  # the histories are part of an exact resume
        self.run.print(f"{per_epoch} updates an epoch; training for {total} updates")
        return engine

    # ---- outputs -----------------------------------------------------------------------
    def save_samples(self) -> Optional[Path]:
        # Main process only, on the unwrapped generators: a DDP-wrapped module called on one
        # rank would wait for the others in its collectives.
        if not self.run.accelerator.is_main_process:
            return None
        path = self.run.output_dir / "samples" / f"step_{self.run.state.step:06d}.png"
        save_translation_grid(self.engine.module("G_AB"), self.engine.module("G_BA"), self.sample_a, self.sample_b, path)
        log_image(self.run.accelerator, "samples", path, self.run.state.step)  # --report_to trackers that take images
        return path

    def build_evaluators(self) -> Dict[str, object]:
        """One evaluator per direction (its target-domain classifier and reference statistics are
        built once and cached), on the main process only; none when the domains carry no labels
        (the domain classifier's features need them)."""
        e = self.eval_args
        if not (e.evaluate or e.eval_every) or not self.run.accelerator.is_main_process:
            return {}
        source_a, target_b = self.domains.eval_sets()
        if not self.domains.labelled:
            self.run.print("Evaluation skipped: it needs both domains labelled with the same classes "
                           "(class sub-folders in trainA and trainB)")
            return {}
        from .evaluate import TranslationEvaluator

        kwargs = dict(num_images=e.eval_num_images, cache_dir=e.eval_cache_dir or str(self.run.output_dir / "cache"),
                      device=self.run.accelerator.device, seed=self.run_args.seed)
        return {"A2B": TranslationEvaluator(source_a, target_b, **kwargs),
                "B2A": TranslationEvaluator(target_b, source_a, **kwargs)}

    def evaluate(self) -> dict:
        return {direction: ev.evaluate(self.engine.module(DIRECTIONS[direction]))
                for direction, ev in self.evaluators.items()}

    def log_evaluation(self) -> None:
        if not self.evaluators:
            return
        from .evaluate import flat_metrics, format_results

        results = self.evaluate()
        self.run.logger.write(self.run.state.step, flat_metrics(results))
        self.run.print(f"step {self.run.state.step}:\n{format_results(results)}")

    def finish(self) -> None:
        """Export both generators and write eval_results.json (main process)."""
        out = self.run.output_dir
        grid = self.save_samples()  # the final translation grid, shown on both model cards
        for direction, name in DIRECTIONS.items():
            save_translator(self.engine.module(name), out / f"generator_{direction}", direction, self.data_args.image_size,
                            run_config=self.run.config, samples=grid)
        self.run.print(f"Exported the generators to {out / 'generator_A2B'} and {out / 'generator_B2A'}")
        for direction in DIRECTIONS:
            publish(out / f"generator_{direction}", self.run.args, suffix=f"-{direction}")  # --push_to_hub
        if self.evaluators and self.eval_args.evaluate:
            from .evaluate import format_results

            results = self.evaluate()
            payload = {"step": self.run.state.step, **{k: asdict(v) for k, v in results.items()}}
            (out / "eval_results.json").write_text(json.dumps(payload, indent=2) + "\n")
            self.run.print(f"{format_results(results)}\nwrote {out / 'eval_results.json'}")

    def train(self) -> Path:
        run = self.run
        finished = self.engine.train()
        if run.accelerator.is_main_process and finished and run.state.step >= self.engine.max_steps:
            self.finish()
        run.finish()
        return run.output_dir


def train_cyclegan(data_args: CycleGANDataArguments, model_args: CycleGANModelArguments, train: CycleGANTrainArguments,
                   run_args: RunArguments, eval_args: CycleGANEvalArguments) -> Path:
    return CycleGANTrainer(data_args, model_args, train, run_args, eval_args).train()
