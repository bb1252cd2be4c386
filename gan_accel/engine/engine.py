"""The multi-network training engine: every loop mechanic once, for every recipe.

It owns the prepare plan, the accumulation window (ONE ``accelerator.accumulate`` over every
trained network per micro-batch), the phases' backward passes, one update function per optimizer,
the update counters, resumable batches, the non-finite guard, the cadence (log, hooks, signals,
checkpoints) and the checkpoint contents. A recipe declares networks, optimizers and phases
(:mod:`.recipe`) and adds hooks; it never writes a loop.

Use::

    engine = Engine(run, recipe, loader, max_steps=1000)   # builds optimizers, prepares everything
    engine.add(State("ema", ema), Hook(save_samples, every=250))  # checkpointed state, cadence hooks
    engine.resume()                                        # --resume_from_checkpoint, if given
    finished = engine.train()                              # False when stopped by a signal

Tasks do not call it themselves: :mod:`gan_accel.runner` runs the whole sequence around it.
"""

from __future__ import annotations

import functools
import operator
from pathlib import Path
from typing import Dict, List, Optional

import torch

from .. import interrupt
from ..data.streaming import stop_workers
from ..errors import ConfigError, UserError
from ..loop.guard import NonFiniteError, all_finite, what_is_kept
from ..loop.run import TrainingRun
from .backward import GradientLeaks, autocast, backward_phase, mark_stepped
from .cadence import AFTER_CHECKPOINT, BEFORE_SAVE, STEP, UPDATE, Hook, State
from .extra_state import check_recipe, extra_tensors, load_extra_states, save_extra_states, write_recipe
from .loader import batches_per_epoch, empty_epoch_message, num_samples
from .optim import build_scheduler
from .prepare import prepare_recipe
from .recipe import Recipe
from .step import Nets, Step
from .update import apply_update


class Engine:
    def __init__(
        self,
        run: TrainingRun,
        recipe: Recipe,
        loader,
        *,
        max_steps: int,
        eval_loaders=(),
        unit: str = "sample",
        desc: str = "train",
    ) -> None:
        """``loader``: the raw training DataLoader; its sampler must be resumable
        (``set_position(epoch, start)``, e.g. :class:`gan_accel.data.ResumableSampler`)."""
        acc = self.accelerator = run.accelerator
        self.run = run
        self.recipe = recipe
        self.state = run.state
        self.max_steps = max_steps
        self.unit = unit
        self.desc = desc
        self.sampler = loader.sampler
        if not hasattr(self.sampler, "set_position"):
            raise ConfigError("the training loader's sampler must be resumable (gan_accel.data.ResumableSampler)")
        modules = {n.name: n.module for n in recipe.networks}
        raw_opts = {o.name: o.make([modules[n] for n in recipe.networks_of(o.name)]) for o in recipe.optimizers}
        # Schedules count run steps; each optimizer's is stretched by its phases' cadence (D
        # updating n times per G update gets an n times longer schedule).
        raw_scheds = {
            o.name: build_scheduler(
                o.schedule.scaled(recipe.updates_per_step(o.name)), raw_opts[o.name], acc.num_processes
            )
            for o in recipe.optimizers
        }
        self.prepared = prepare_recipe(acc, recipe, raw_opts, raw_scheds, [loader, *eval_loaders])
        self.loader = self.prepared.loaders[0]
        self.eval_loaders = self.prepared.loaders[1:]
        if batches_per_epoch(self.loader) == 0:
            raise UserError(empty_epoch_message(loader, acc.num_processes))
        self._raw_loader = loader
        self.nets = Nets(self.prepared.nets)
        self.optimizers = self.prepared.optimizers
        self.schedulers = self.prepared.schedulers
        self.check_finite = acc.mixed_precision != "fp16"  # fp16: the GradScaler finds and skips inf/NaN itself
        self.hooks: List[Hook] = []
        self.states: List[State] = []
        self.logger = None
        self._plan_phases()

    def _plan_phases(self) -> None:
        """Per phase, what the hot loop needs, computed once: the optimizers it steps, the
        parameters it freezes, and the networks its first backward must not write into."""
        r = self.recipe
        self._trained = [self.nets[n] for n in r.trained()]
        self._steps = {
            p.name: [(k, self.optimizers[k], self.schedulers[k], self._spec(k)) for k in r.optimizers_of(p)]
            for p in r.phases
        }
        self._frozen = {
            p.name: [q for n in p.frozen for q in self.nets[n].parameters() if q.requires_grad] for p in r.phases
        }
        self._leaks = GradientLeaks(r, self.nets, self.run.print)

    def _spec(self, name: str):
        return next(o for o in self.recipe.optimizers if o.name == name)

    # ---- what recipes add ---------------------------------------------------------------
    def module(self, name: str) -> torch.nn.Module:
        """The network without its distributed wrapper (for sampling, exports, EMA copies)."""
        return self.accelerator.unwrap_model(self.nets[name])

    def add(self, *items) -> None:
        """What a task adds: :class:`Hook` (cadence callbacks) and :class:`State` (saved in every
        checkpoint, restored on resume: add it before ``resume``)."""
        for item in items:
            if isinstance(item, Hook):
                self.hooks.append(item)
            elif isinstance(item, State):
                if any(st.name == item.name for st in self.states):
                    raise ConfigError(f"engine: two states named {item.name!r}")
                self.states.append(item)
            else:
                raise ConfigError(f"engine.add: expected a Hook or a State, got {type(item).__name__}")

    def _hooks(self, when: str) -> List[Hook]:
        return [hook for hook in self.hooks if hook.when == when]

    @property
    def extra_states(self) -> Dict[str, object]:
        """The tensor states by name (``NAME.safetensors`` in every checkpoint)."""
        return {st.name: st.obj for st in self.states if st.obj is not None}

    # ---- one micro-batch ----------------------------------------------------------------
    def micro_step(self, batch) -> Optional[Dict[str, torch.Tensor]]:
        """Phases of this micro-batch; returns the verdicts of the optimizers updated (None on an
        accumulation micro-step)."""
        acc = self.accelerator
        state = self.state
        window = state.windows
        active = [p for p in self.recipe.phases if p.runs_in(window)]
        step = Step(self.nets, batch, state.micro_step, window, state.updates, acc, frozenset(p.name for p in active))
        metrics: Dict[str, torch.Tensor] = {}
        verdicts: Dict[str, torch.Tensor] = {}
        with acc.accumulate(*self._trained):
            synced = acc.sync_gradients
            if self.recipe.inputs is not None:
                with autocast(acc):
                    step.update(self.recipe.inputs(step))
            for i, phase in enumerate(active):
                with self._leaks.first_backward(phase.name):
                    metrics.update(backward_phase(acc, phase, step, self._frozen[phase.name]))
                for name, opt, sched, spec in self._steps[phase.name]:
                    verdicts[name] = apply_update(
                        acc,
                        opt,
                        sched,
                        self.check_finite,
                        max_grad_norm=spec.max_grad_norm,
                        agree_across_ranks=spec.agree_across_ranks,
                    )
                    if synced and i + 1 < len(active) and self.recipe.inputs is not None:
                        mark_stepped(opt)
        state.micro_step += 1
        samples = num_samples(batch)
        state.epoch_start += samples * acc.num_processes
        self.logger.accumulate(metrics, samples=samples)
        return verdicts if synced else None

    # ---- the loop -----------------------------------------------------------------------
    def batches(self):
        """Micro-batches from the saved position on, epoch after epoch."""
        state = self.state
        while True:
            epoch = state.epoch
            # A prepared loader calls sampler.set_epoch(its own pass count) at every pass, and a
            # fresh loader counts from 0: without this a resumed run would replay epoch 0.
            self.loader.set_epoch(epoch)
            self.sampler.set_position(epoch, state.epoch_start)
            from_start, micro_steps = state.epoch_start == 0, state.micro_step
            yield from self.loader
            # A whole pass without a batch (a loader without a length, so not refused when built)
            # would loop here forever, without a step at which a signal is read.
            if from_start and state.micro_step == micro_steps:
                raise UserError(empty_epoch_message(self._raw_loader, self.accelerator.num_processes))
            if state.epoch == epoch:  # not already advanced by the update that ended the epoch
                state.epoch, state.epoch_start = epoch + 1, 0

    def train(self) -> bool:
        """Train to ``max_steps``; True when finished, False when stopped by a signal."""
        run = self.run
        state = self.state
        self.logger = run.make_logger(self.max_steps, unit=self.unit, desc=self.desc)
        if state.step >= self.max_steps:
            run.print(f"Already at step {state.step} >= --max_steps {self.max_steps}: nothing to train")
        try:
            self.train_loop()
        except BaseException:
            run.abort()
            raise
        finally:
            stop_workers(self.loader)
        return not run.stopped_by_signal

    def train_loop(self) -> None:
        """Continue from the current state until ``max_steps`` or a signal (callable again after
        raising ``max_steps``: it continues exactly as a resumed run would)."""
        run = self.run
        state = self.state
        with run.stop:
            for batch in self.batches() if state.step < self.max_steps else ():
                verdicts = self.micro_step(batch)
                if verdicts is None:
                    continue
                state.windows += 1
                for name in verdicts:
                    state.updates[name] = state.updates.get(name, 0) + 1
                if verdicts:
                    run.guard.record(functools.reduce(operator.and_, verdicts.values()))  # read back at log time
                if self.recipe.progress in verdicts and self.after_update():
                    break

    def after_update(self) -> bool:
        """The cadence after each update of the progress optimizer; True means stop."""
        run = self.run
        state = self.state
        state.step = state.updates[self.recipe.progress]
        interrupt.phase("update")
        epoch_end = self.accelerator.gradient_state.end_of_dataloader
        for hook in self._hooks(UPDATE):
            hook.fn()
        self.logger.advance(state.step)
        done = state.step >= self.max_steps
        if self.logger.should_log(state.step) or done:
            self.log()
        for hook in self._hooks(STEP):
            if hook.due(state.step, done, epoch_end):
                hook.fn()
        if epoch_end:
            state.epoch, state.epoch_start = state.epoch + 1, 0
        stop = run.should_stop()
        if stop or done or run.due(run.args.checkpointing_steps):
            self.save_checkpoint()
        if stop:
            run.print(f"Stopped by a signal at step {state.step}; resume with --resume_from_checkpoint latest")
            return True
        for hook in self._hooks(AFTER_CHECKPOINT):
            if hook.due(state.step, done, epoch_end):
                hook.fn()
        return done

    def log(self) -> None:
        # The skip counts live on the device until now: read them back once per log line, and stop
        # a diverged run here (after --max_nonfinite_steps skipped updates in a row) rather than at
        # the next checkpoint (maybe never: --checkpointing_steps 0), after writing the line that
        # shows it (every rank reads the same counts, so all flush).
        try:
            self.run.guard.check()
        finally:
            extra = {f"lr/{name}": sched.get_last_lr()[0] for name, sched in self.schedulers.items()}
            extra["nonfinite/skipped_total"] = self.state.nonfinite_total
            self.logger.flush(self.state.step, extra=extra)

    # ---- checkpoints --------------------------------------------------------------------
    def signature(self) -> dict:
        return {**self.recipe.signature(), "checkpoint_model_order": self.prepared.model_order}

    def weights_finite(self) -> bool:
        """Parameters AND floating-point buffers of every trained network, and every registered
        state: a diverging D can keep finite weights while its BatchNorm running variance
        overflows to inf (seen with a GAN at --lr_d 1e10)."""
        nets = [self.nets[n] for n in self.recipe.trained()]
        tensors = [t for m in nets for t in (*m.parameters(), *m.buffers()) if t.is_floating_point()]
        return bool(all_finite([*tensors, *extra_tensors(self.extra_states)]))

    def save_checkpoint(self) -> Path:
        for hook in self._hooks(BEFORE_SAVE):
            hook.fn()
        if not self.weights_finite():
            raise NonFiniteError(
                f"weights became non-finite at step {self.state.step}; no checkpoint was written: "
                f"the run stopped {what_is_kept(self.run.checkpoints.latest())}. "
                "Lower the learning rates."
            )
        return self.run.save(write_extra=self._write_checkpoint_files)

    def _write_checkpoint_files(self, folder: Path) -> None:
        save_extra_states(self.extra_states, folder)
        write_recipe(folder, self.signature())
        for st in self.states:
            if st.write is not None:
                st.write(folder)

    def _read_checkpoint_files(self, folder: Path) -> None:
        load_extra_states(self.extra_states, folder)
        for st in self.states:
            if st.read is not None:
                st.read(folder)

    def resume(self) -> bool:
        """Load ``--resume_from_checkpoint`` (after registering extra state); False when none."""
        if self.run.resume_path is None:
            return False
        check_recipe(self.run.resume_path, self.signature())
        return self.run.resume(read_extra=self._read_checkpoint_files)
