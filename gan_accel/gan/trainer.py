"""The GAN task: image data, G and D with the recipe (:mod:`.recipe`), and what only a GAN adds:
EMA, sample grids, FID evaluation with the best generator kept, the generator export. The runner
(:mod:`gan_accel.runner`) runs it."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Optional

import torch

from ..data import ResumableSampler
from ..data.fingerprint import image_fingerprint
from ..data.source import open_images
from ..engine import AFTER_CHECKPOINT, UPDATE, BestKeeper, Hook, RandomStreams, State
from ..engine.cadence import LAST
from ..errors import ConfigError, UserError
from ..loop.trackers import log_image
from ..models import save_generator
from ..models.hub import card_metrics, publish
from ..runner import Output, Plan, Task
from ..sampling import class_rows, fixed_noise, grid_labels, save_grid
from . import photo_run
from .config import GANDataArguments, GANEvalArguments, GANModelArguments, GANTrainArguments
from .ema import EMA, recalibrate_batchnorm
from .recipe import STREAMS, GANRecipe
from .speed import compile_in_place, to_channels_last


class GANTrainer(Task):
    project = "gan"
    command = "train-gan"
    unit = "img"
    desc = "gan"
    configs = {
        "data_args": GANDataArguments,
        "model_args": GANModelArguments,
        "train_args": GANTrainArguments,
        "eval_args": GANEvalArguments,
    }
    outputs = (
        Output("samples"),
        Output("generator", checked="models.export: config, finite weights"),
        Output(
            "best_generator",
            checked="models.export: config, finite weights; score.json: the metric that chose it, its value and step",
        ),
        Output("cache", "cache", checked="metrics cache: keyed by the data and the feature extractor"),
        Output("eval_results.json", "record", label="results"),
    )

    @classmethod
    def resolve_settings(cls, configs: tuple, argv) -> tuple:
        """``--preset auto`` (the default for a folder without --config): settings from the data,
        the device and the budget; every explicit flag wins (gan_accel.gan.preset). Then a
        budgeted CPU run's precision, measured (gan_accel.gan.precision): before the Accelerator
        is built, which fixes it."""
        from . import precision
        from .preset import given_settings, resolve

        configs = resolve(configs, argv)
        return precision.resolve(configs, given_settings(configs, argv))

    def check_settings(self) -> None:
        self.model_args.check_image_size(self.data_args.image_size)
        self.model_args.check_recon_weight(self.train_args.recon_weight)

    def unused_parameters(self) -> bool:
        # A progressive run's full-size layers get no gradient at half size, its half-size heads none after the fade.
        return self.model_args.progressive

    def read_data(self) -> None:
        self.data = open_images(self.data_args, self.accelerator)

    def check(self) -> None:
        if self.model_args.conditional and self.data.labels is None:
            raise ConfigError(f"--conditional needs labelled data; {self.data.name} {self.data.unlabelled_reason}")
        e = self.eval_args
        unlabelled = self.data.labels is None
        if (
            (e.eval_every or e.num_evaluations)
            and e.eval_feature_extractor == "domain"
            and (unlabelled or self.data.num_classes < 2)
        ):
            # Here, before the run folder exists: the evaluator is only built once training starts.
            flag = "--eval_every" if e.eval_every else "--num_evaluations"
            why = self.data.unlabelled_reason if unlabelled else f"has {self.data.num_classes} class"
            raise ConfigError(
                f"{flag} with --eval_feature_extractor domain needs at least 2 classes (for a folder: one "
                f"sub-folder per class); {self.data.name} {why}; use --eval_feature_extractor inception or "
                f"leave out {flag}"
            )
        self.data.check_batch_size(self.train_args.batch_size, self.accelerator.num_processes)

    def data_fingerprint(self) -> dict:
        return image_fingerprint(self.data_args, self.data)

    def build(self) -> Plan:
        m = self.model_args
        t = self.train_args
        acc = self.accelerator
        seed = self.run_args.seed
        self.run.print(
            f"Data: {self.data.name}, {len(self.data)} images {self.data.shape}, "
            f"{self.data.num_classes} class{'' if self.data.num_classes == 1 else 'es'}, {self.data.describe()}"
        )
        self.num_classes = self.data.num_classes if m.conditional else 0
        G, D = m.build_networks(self.data.channels, self.data.image_size, self.num_classes)
        if getattr(D, "reconstructs", False) and t.recon_weight == 0:
            D.freeze_decoders()  # before the optimizers and DDP see the parameters
        if t.channels_last:
            to_channels_last(G, D)  # before the optimizers (and the EMA copy) see the parameters
        # In memory: a loader of sample indices whose images are gathered from a tensor on the
        # device; streamed: uint8 batches from DataLoader workers. The same sampler either way, so
        # the same indices, the same pixels, and the engine's exact mid-epoch resume and sharding.
        loader = self.data.make_loader(
            t.batch_size,
            ResumableSampler(len(self.data), seed=seed),
            self.data_args.dataloader_num_workers,
            acc.device,
            t.channels_last,
        )
        streams = RandomStreams(STREAMS, seed, acc, t.batch_size)
        # Your own photos (gan_accel.gan.photo_run): adaptive augmentation, and a --time_budget run
        # whose length (and its schedule's) is planned while it trains.
        self.ada = photo_run.build_ada(t, acc.device)
        self.budget = photo_run.build_budget(t, acc, self.run.print)
        recipe = GANRecipe(
            t,
            self.data.real_batch,
            streams,
            m.z_dim,
            conditional=bool(self.num_classes),
            ada=self.ada,
            schedule_length=self.budget.schedule_length if self.budget is not None else None,
            progressive=(m.progressive_share, m.progressive_fade),
            reconstructs=getattr(D, "reconstructs", False),
        )
        self.sample_z = fixed_noise(t.num_sample_images, m.z_dim, seed + 12345)
        self.sample_labels = grid_labels(t.num_sample_images, self.num_classes)
        max_steps = self.budget.max_steps if self.budget is not None else t.max_steps
        return Plan(recipe.recipe({"G": G, "D": D}), loader, max_steps)

    def hooks(self) -> list:
        engine = self.engine
        t = self.train_args
        self.ema = EMA(engine.module("G"), t.ema_decay, t.ema_start)
        if t.compile:
            # After the EMA copy (kept eager: it only samples) and in place, so state-dict keys and
            # checkpoints are the same with or without --compile.
            compile_in_place(
                {"G": engine.module("G"), "D": engine.module("D")}, self.accelerator.device, self.run.print
            )
        # A non-finite FID (a diverged G) never becomes the best (BestKeeper); a later generator
        # whose interval reaches the best value replaces the kept one (photo_run.ties_best). Once
        # the FID saturates (no larger than between real images) the SWD picks; once both have, the last.
        self.keeper = BestKeeper(
            self.run.state,
            photo_run.SELECTING[0],
            greater_is_better=False,
            export=self.export_best,
            ties=photo_run.ties_best,
            fallbacks=photo_run.SELECTING[1:],
            saturated=photo_run.saturated_keys,
        )
        self.evaluator = self.build_evaluator()
        self.last_eval: Optional[dict] = None
        # ADA, the budget, and grids/evaluations spread over the run's (planned) length.
        self.extras = photo_run.RunExtras(engine, self.run, self.ada, self.budget, self.run_args.log_every)
        hooks = [
            State("ema", self.ema),
            Hook(lambda: self.ema.update(engine.module("G"), self.run.state.step), when=UPDATE),
            # Grids come after the checkpoint, and the final one after the export: a failing
            # grid must never cost the training since the last checkpoint. Looked up at call
            # time (the benchmark stubs it).
            Hook(lambda: self.save_samples(), every=t.sample_every, at_end=False, when=AFTER_CHECKPOINT),
        ]
        self.extras.size_hook(hooks[-1], t.num_grids)
        if self.evaluator is not None:
            hooks.append(Hook(self.extras.timed(self.evaluate), every=self.eval_args.eval_every))
            self.extras.size_hook(hooks[-1], self.eval_args.num_evaluations, timed=True)
        return [*hooks, *self.extras.items()]

    def train_engine(self) -> bool:
        self.extras.end_if_spent()
        try:
            return super().train_engine()
        finally:
            if self.budget is not None and self.budget.threads is not None:
                self.budget.threads.restore()

    # ---- evaluation --------------------------------------------------------------------
    def build_evaluator(self):
        """The evaluator (domain classifier, reference statistics, floor: built once, cached on
        disk) lives on the main process only; the other ranks never wait for it."""
        e = self.eval_args
        if not (e.eval_every or e.num_evaluations) or not self.accelerator.is_main_process:
            return None
        from ..metrics import GANEvaluator
        from ..metrics.domain import WeakClassifierError

        cache_dir = e.eval_cache_dir or str(self.run.output_dir / "cache")
        try:
            # Streamed: a fixed subset of the real images, so its memory does not grow with the dataset.
            return GANEvaluator(
                photo_run.real_subset(self.data.image_data(), e.eval_real_images),
                feature_extractor=e.eval_feature_extractor,
                num_images=e.eval_num_images,
                cache_dir=cache_dir,
                device=self.accelerator.device,
                seed=self.run_args.seed,
                inception_weights=e.inception_weights,
            )
        except WeakClassifierError as err:
            if e.chosen_by_preset:
                # The user asked for a GAN, not for its evaluation: train without it.
                self.run.print(
                    f"warning: training without evaluation: {err.summary} (class sub-folders by date or "
                    "camera, not by content). The preset turned evaluation on; to evaluate anyway pass "
                    "--num_evaluations N with --eval_feature_extractor inception --inception_weights FILE"
                )
                return None
            raise UserError(
                f"{err.summary}; train without evaluation (--num_evaluations 0 --eval_every 0) or use "
                "--eval_feature_extractor inception --inception_weights FILE"
            ) from None

    def evaluate(self) -> dict:
        run = self.run
        state = self.run.state
        self._evaluated = self.calibrated_ema()
        # The full result (with its protocol) for the best export's model card; flat floats for the log.
        self._evaluation = self.evaluator.evaluate_full(self._evaluated)
        metrics = self._evaluation.flat()
        kept = self.keeper.update(metrics)
        selecting = self.keeper.selecting
        if kept:
            metrics["eval/best_step"] = float(state.step)
        if selecting is not None:
            metrics[f"eval/best_{selecting.split('/')[1]}"] = state.best_metric  # eval/best_fid, eval/best_swd
        self.last_eval = {"step": state.step, "fid": metrics["eval/fid"]}  # for the closing verdict
        run.logger.write(state.step, metrics)
        photo_run.write_eval_results(
            run.output_dir,
            self._evaluation,
            state.step,
            selecting or LAST,
            state.saturated,
            self.keeper.newly_saturated,
        )
        for key in self.keeper.newly_saturated:  # once per run: the step is in the checkpoint's state
            run.print(photo_run.saturation_line(key, metrics, state.step, selecting))
        if selecting is None:
            best = "kept: the last generator"
        else:
            best = f"best {photo_run.METRIC_LABELS[selecting]} {state.best_metric:.3f}"
            if kept and metrics[selecting] > state.best_metric:
                best += (
                    f" (inside this evaluation's interval from {metrics[f'{selecting}_ci_low']:.3f}: "
                    "a tie, best_generator/ takes the later generator)"
                )
        swd = (
            f", SWD {metrics['eval/swd']:.2f} (floor {metrics['eval/swd_floor']:.2f})" if "eval/swd" in metrics else ""
        )
        run.print(
            f"step {state.step}: FID {metrics['eval/fid']:.3f} (floor {metrics['eval/fid_floor']:.3f}), "
            f"KID {metrics['eval/kid_mean']:.4f}{swd}, {best}"
        )
        return metrics

    def export_best(self, metrics: dict) -> None:
        save_generator(
            copy.deepcopy(self._evaluated).cpu(),
            self.run.output_dir / "best_generator",
            run_config=self.run.config,
            metrics=card_metrics(self._evaluation),  # each with the protocol it was measured with
        )
        key = self.keeper.selecting
        photo_run.write_best_score(
            self.run.output_dir / "best_generator",
            key or LAST,
            metrics[key] if key else None,
            self.run.state.step,
            self.run.state.saturated,
        )

    # ---- outputs -----------------------------------------------------------------------
    def calibrated_ema(self) -> torch.nn.Module:
        """A copy of the EMA generator with BatchNorm statistics recomputed for its weights."""
        G = copy.deepcopy(self.ema.module)
        recalibrate_batchnorm(
            G, self.model_args.z_dim, self.num_classes, self.accelerator.device, seed=self.run_args.seed
        )
        return G.eval()

    def save_samples(self) -> Optional[Path]:
        # Main process only, on the EMA copy (a plain module): calling the DDP-wrapped G on one
        # rank would hang, since the other ranks never join its collectives.
        if not self.accelerator.is_main_process:
            return None
        G = self.calibrated_ema()
        with torch.no_grad():
            dev = self.accelerator.device
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

    def export(self) -> None:
        """The calibrated EMA generator, then the final grid (after the export it must not endanger)."""
        out = self.run.output_dir / "generator"
        save_generator(self.calibrated_ema().cpu(), out, run_config=self.run.config)  # refuses non-finite weights
        self.run.print(f"Exported the EMA generator to {out}")
        publish(out, self.run.args)  # --push_to_hub
        self.save_samples()
        self.closing_outputs()

    def closing_outputs(self) -> None:
        """The animation of the grids, and which export is better (best_generator/ or generator/)."""
        gif = photo_run.write_animation(self.run.output_dir / "samples")
        if gif is not None:
            self.run.print(f"Training animation: {gif}")
        if self.last_eval is not None:
            best = photo_run.read_best_score(self.run.output_dir / "best_generator")
            saturated = self.run.state.saturated
            if best is not None and any(key in saturated for key in photo_run.SELECTING):
                verdict = photo_run.chosen_by(best, saturated)  # FID values no longer rank: say what chose
            else:
                verdict = photo_run.best_vs_last(best, self.last_eval["fid"], self.last_eval["step"])
            if verdict:
                self.run.print(verdict)


def train_gan(
    data_args: GANDataArguments,
    model_args: GANModelArguments,
    train: GANTrainArguments,
    run_args,
    eval_args: Optional[GANEvalArguments] = None,
) -> Path:
    return GANTrainer(data_args, model_args, train, run_args, *([eval_args] if eval_args else [])).train()
