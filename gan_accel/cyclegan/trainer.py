"""The CycleGAN task: the two domains, the four networks and the recipe (:mod:`.recipe`), and
what only a translation run adds: grids of fixed inputs, the translation evaluation, both
generators exported. The runner (:mod:`gan_accel.runner`) runs it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, Optional

from torch.utils.data import DataLoader

from ..data.fingerprint import domains_fingerprint
from ..engine import Hook, RandomStreams, State
from ..errors import ConfigError
from ..loop.trackers import log_image
from ..models.hub import publish
from ..runner import Output, Plan, Task
from .config import CycleGANDataArguments, CycleGANEvalArguments, CycleGANModelArguments, CycleGANTrainArguments
from .data import load_domains
from .export import save_translator
from .models import PatchDiscriminator, ResnetGenerator
from .pool import ImagePool
from .recipe import STREAMS, CycleGANRecipe
from .sampler import PairIndex, UnpairedSampler
from .samples import fixed_inputs, save_translation_grid
from .schedule import lr_schedule

DIRECTIONS = {"A2B": "G_AB", "B2A": "G_BA"}
TRANSLATOR_CHECK = "models.export: config (arch, direction), finite weights"


class CycleGANTrainer(Task):
    project = "cyclegan"
    command = "train-cyclegan"
    unit = "pair"
    desc = "cyclegan"
    configs = {
        "data_args": CycleGANDataArguments,
        "model_args": CycleGANModelArguments,
        "train_args": CycleGANTrainArguments,
        "eval_args": CycleGANEvalArguments,
    }
    outputs = (
        Output("samples"),
        *(Output(f"generator_{d}", checked=TRANSLATOR_CHECK) for d in DIRECTIONS),
        Output("eval_results.json", label="results"),
        Output("cache", "cache", checked="metrics cache: keyed by the data and the classifier"),
    )

    def check_settings(self) -> None:
        self.model_args.check_image_size(self.data_args.image_size)

    def read_data(self) -> None:
        d = self.data_args
        self.domains = load_domains(d.dataset, d.data_dir, d.decode_size, d.channels, size_flag=d.decode_size_flag)

    def check(self) -> None:
        pairs = max(len(self.domains.train_a), len(self.domains.train_b))
        P = self.accelerator.num_processes
        batch = self.train_args.batch_size
        if pairs // batch < P:
            raise ConfigError(
                f"--batch_size {batch} x {P} processes is larger than the data "
                f"({pairs} pairs an epoch); lower --batch_size"
            )

    def data_fingerprint(self) -> dict:
        return domains_fingerprint(self.data_args, self.domains)

    def build(self) -> Plan:
        d = self.data_args
        m = self.model_args
        t = self.train_args
        acc = self.accelerator
        seed = self.run_args.seed
        a = self.domains.train_a
        b = self.domains.train_b
        self.run.print(
            f"Data: A {a.name} {len(a)} images, B {b.name} {len(b)} images {tuple(a.images.shape[1:])}"
            + (f", {a.num_classes} classes" if self.domains.labelled else "")
        )
        C = d.channels
        networks = {
            "G_AB": ResnetGenerator(C, m.g_channels, m.n_blocks),
            "G_BA": ResnetGenerator(C, m.g_channels, m.n_blocks),
            "D_A": PatchDiscriminator(C, m.d_channels, m.d_layers),
            "D_B": PatchDiscriminator(C, m.d_channels, m.d_layers),
        }
        sampler = UnpairedSampler(len(a), len(b), seed=seed)
        loader = DataLoader(PairIndex(sampler.num_samples), batch_size=t.batch_size, sampler=sampler, drop_last=True)
        # Updates one process makes per epoch (the engine ends an accumulation window at the end
        # of the data too), so epochs convert to updates whatever the number of processes.
        per_epoch = math.ceil(len(loader) // acc.num_processes / self.run_args.gradient_accumulation_steps)
        total = t.max_steps or (t.n_epochs + t.n_epochs_decay) * per_epoch
        if t.lr_scheduler != "reference" and t.warmup_steps >= total:
            raise ConfigError(f"--warmup_steps ({t.warmup_steps}) must be smaller than the run's {total} updates")
        schedule = lr_schedule(
            t.lr_scheduler,
            constant_updates=t.n_epochs * per_epoch,
            decay_updates=t.n_epochs_decay * per_epoch,
            total_updates=total,
            warmup_updates=t.warmup_steps,
        )
        self.pools = {
            name: ImagePool(t.pool_size, seed=seed * 2 + i, device=acc.device)
            for i, name in enumerate(("pool_A", "pool_B"))
        }
        recipe = CycleGANRecipe(
            t,
            d,
            a.images.to(acc.device),
            b.images.to(acc.device),
            RandomStreams(STREAMS, seed, acc, t.batch_size),
            self.pools,
            acc,
            schedule,
        )
        n = t.num_sample_images
        size = d.image_size
        self.sample_a = fixed_inputs(a.images, n, size, seed + 12345).to(acc.device)
        self.sample_b = fixed_inputs(b.images, n, size, seed + 54321).to(acc.device)
        self.run.print(f"{per_epoch} updates an epoch; training for {total} updates")
        return Plan(recipe.recipe(networks), loader, total)

    def hooks(self) -> list:
        self.evaluators = self.build_evaluators()
        # The pools' histories are part of an exact resume.
        hooks = [
            *(State(name, pool) for name, pool in self.pools.items()),
            Hook(self.save_samples, every=self.train_args.sample_every),
        ]
        if self.evaluators and self.eval_args.eval_every:
            hooks.append(Hook(self.log_evaluation, every=self.eval_args.eval_every, at_end=False))
        return hooks

    # ---- outputs -----------------------------------------------------------------------
    def save_samples(self) -> Optional[Path]:
        # Main process only, on the unwrapped generators: a DDP-wrapped module called on one
        # rank would wait for the others in its collectives.
        if not self.accelerator.is_main_process:
            return None
        path = self.run.output_dir / "samples" / f"step_{self.run.state.step:06d}.png"
        save_translation_grid(
            self.engine.module("G_AB"), self.engine.module("G_BA"), self.sample_a, self.sample_b, path
        )
        log_image(self.run.accelerator, "samples", path, self.run.state.step)  # --report_to trackers that take images
        return path

    def build_evaluators(self) -> Dict[str, object]:
        """On the main process only: the other ranks never wait for it."""
        if not self.accelerator.is_main_process:
            return {}
        from .evaluate import build_evaluators

        e = self.eval_args
        return build_evaluators(
            self.domains,
            e.evaluate,
            e.eval_every,
            e.eval_num_images,
            e.eval_cache_dir or str(self.run.output_dir / "cache"),
            self.accelerator.device,
            self.run_args.seed,
            self.run.print,
        )

    def evaluate(self) -> dict:
        return {
            direction: ev.evaluate(self.engine.module(DIRECTIONS[direction]))
            for direction, ev in self.evaluators.items()
        }

    def log_evaluation(self) -> None:
        from .evaluate import flat_metrics, format_results

        results = self.evaluate()
        self.run.logger.write(self.run.state.step, flat_metrics(results))
        self.run.print(f"step {self.run.state.step}:\n{format_results(results)}")

    def export(self) -> None:
        """Both generators, and eval_results.json when evaluating."""
        out = self.run.output_dir
        grid = self.save_samples()  # the final translation grid, shown on both model cards
        for direction, name in DIRECTIONS.items():
            save_translator(
                self.engine.module(name),
                out / f"generator_{direction}",
                direction,
                self.data_args.image_size,
                run_config=self.run.config,
                samples=grid,
            )
        self.run.print(f"Exported the generators to {out / 'generator_A2B'} and {out / 'generator_B2A'}")
        for direction in DIRECTIONS:
            publish(out / f"generator_{direction}", self.run.args, suffix=f"-{direction}")  # --push_to_hub
        if self.evaluators and self.eval_args.evaluate:
            from .evaluate import format_results, write_results

            results = self.evaluate()
            self.run.print(f"{format_results(results)}\nwrote {write_results(results, self.run.state.step, out)}")


def train_cyclegan(*configs) -> Path:
    return CycleGANTrainer(*configs).train()
