"""One run, declared once: every task (GAN, CycleGAN, classifier, distillation, yours) is a
:class:`Task` that this runner executes, always in this order:

1. build the accelerator;
2. ``read_data()`` under ``main_process_first`` (one process downloads/decodes, the others read
   its cache), then ``check()``: a bad file, flag or size fails here, before the run folder is
   touched;
3. :class:`~gan_accel.loop.TrainingRun`: the checkpoint to resume is checked (task, recipe,
   settings by each field's resume policy, every file), the folder is locked, and
   ``--overwrite_output_dir`` clears what the task declares it writes (``outputs``);
4. the seed, then ``build()`` (networks, recipe, loaders) on the engine, ``hooks()`` added,
   resume;
5. train; when finished, ``export()`` on the main process; ``run.finish()`` always (``finally``);
6. one closing ``Run folder`` line naming the exports THIS run wrote.

A task declares only what differs: its config classes (``configs``), its data, its networks
and recipe, its hooks (samples, evaluation, EMA...) and the files it writes (``outputs``, with
how each is checked on load). ``Task.main(argv)`` is a whole training script: ``--help``,
``--config``, ``--dry_run`` and one-line errors.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar, Dict, List, Optional, Sequence, Tuple

from .config import RunArguments, config_to_dict, parse_config, resume_compare_as, resume_policy
from .data.fingerprint import check_run_outside_data
from .errors import cli_entry
from .loop.accel import print_and_save_config
from .loop.rundir import RUN_OUTPUTS  # written by every run; a task's own outputs are added to them


@dataclass(frozen=True)
class Output:
    """A file or folder a task writes at the top of its run folder.

    ``kind``: ``export`` (a result: named in the closing line when this run wrote it), ``cache``
    (rebuilt when missing, damaged or stale; ``checked`` says how) or ``record``.
    """

    name: str
    kind: str = "export"
    label: str = ""  # how the closing line names it (default: ``name``)
    checked: str = ""  # how it is checked when read back


@dataclass
class Plan:
    """What ``Task.build`` returns: the engine's inputs."""

    recipe: object  # engine.Recipe
    loader: object  # the raw training DataLoader (a resumable sampler)
    max_steps: int
    eval_loaders: Sequence = ()


OnUpdate = Callable[[object], None]


class Task:
    """Subclass and declare; the runner's sequence (``start``, ``train``) is not overridden."""

    project: ClassVar[str] = ""  # recorded in every checkpoint
    configs: ClassVar[Dict[str, type]] = {}  # attribute -> config dataclass, in CLI order
    outputs: ClassVar[Tuple[Output, ...]] = ()
    unit: ClassVar[str] = "sample"  # what the progress bar counts
    desc: ClassVar[str] = "train"

    def __init__(self, *configs, on_update: Optional[OnUpdate] = None, start: bool = True) -> None:
        """``configs``: one instance of each of ``configs``' classes and a :class:`RunArguments`,
        in any order (a config class that can be built from defaults may be left out).
        ``on_update(state)``: called after every update (tests interrupt a run at an exact
        step with it). ``start=False``: only check the settings (``--dry_run``)."""
        given = list(configs)
        for attr, cls in {**self.configs, "run_args": RunArguments}.items():
            match = [c for c in given if type(c) is cls]
            if len(match) > 1:
                raise TypeError(f"{type(self).__name__}: two {cls.__name__} given")
            setattr(self, attr, match[0] if match else cls())
            given = [c for c in given if c is not getattr(self, attr)]
        if given:
            raise TypeError(f"{type(self).__name__}: unexpected configs {[type(c).__name__ for c in given]}")
        self.on_update = on_update
        self.check_settings()
        if start:
            self.start()

    @classmethod
    def config_types(cls) -> Tuple[type, ...]:
        return (*cls.configs.values(), RunArguments)

    def config_values(self) -> tuple:
        return tuple(getattr(self, attr) for attr in (*self.configs, "run_args"))

    # ---- what a task declares (override) ----------------------------------------------
    def check_settings(self) -> None:
        """Checks across config classes (each class checks its own fields in ``__post_init__``)."""

    def read_data(self) -> None:
        """Read and check the data (runs under ``main_process_first``; ``self.accelerator`` is set)."""

    def check(self) -> None:
        """Checks that need the data or the accelerator, before the run folder is touched."""

    def data_fingerprint(self) -> Optional[dict]:
        """What the run trains on (:mod:`gan_accel.data.fingerprint`): kept in every checkpoint, and a
        resume on other data is refused (``--allow_data_change``: a warning). None: not checked."""
        return None

    def build(self) -> Plan:
        raise NotImplementedError

    def hooks(self) -> list:
        """:class:`~gan_accel.engine.Hook` and :class:`~gan_accel.engine.State` items for the engine."""
        return []

    def train_engine(self) -> bool:
        """Train to the end; True when finished (a task may wrap it, e.g. in local SGD)."""
        return self.engine.train()

    def export(self) -> None:
        """The task's exports, on the main process, once the run is finished."""

    # ---- the run, the same for every task ----------------------------------------------
    def start(self) -> None:
        from accelerate.utils import set_seed

        from .engine import Engine, Hook
        from .loop import TrainingRun, build_accelerator

        for config in self.config_values():  # a run folder inside a data folder would become training data
            check_run_outside_data(self.run_args.output_dir, config)
        self.accelerator = build_accelerator(self.run_args, self.project)
        with self.accelerator.main_process_first():
            self.read_data()
        self.check()
        names = (*RUN_OUTPUTS, *(o.name for o in self.outputs))
        self.run = TrainingRun(
            self.run_args,
            config_to_dict(*self.config_values()),
            project=self.project,
            accelerator=self.accelerator,
            policy=resume_policy(*self.config_types()),
            compare_as=resume_compare_as(*self.config_types()),
            outputs=names,
            data_fingerprint=self.data_fingerprint(),
        )
        self._outputs_before = _stat_outputs(self.run.output_dir, self.outputs)
        set_seed(self.run_args.seed)  # weight init
        plan = self.build()
        self.engine = Engine(
            self.run,
            plan.recipe,
            plan.loader,
            max_steps=plan.max_steps,
            eval_loaders=plan.eval_loaders,
            unit=self.unit,
            desc=self.desc,
        )
        self.engine.add(*self.hooks())
        if self.on_update is not None:
            self.engine.add(Hook(lambda: self.on_update(self.run.state), every=1))
        self.engine.resume()

    def train(self) -> Path:
        """Train, export when finished, close the run; returns the run folder."""
        run = self.run
        main = run.accelerator.is_main_process
        try:
            start = time.perf_counter()
            finished = self.train_engine() and run.state.step >= self.engine.max_steps
            self.train_seconds = time.perf_counter() - start
            if finished and main:
                self.export()
        finally:
            run.finish()
        if main:  # once, and only what this run wrote
            print(closing_line(run.output_dir, self.written()), flush=True)
        return run.output_dir

    def written(self) -> List[Output]:
        """The exports this run wrote (created or replaced since it started)."""
        after = _stat_outputs(self.run.output_dir, self.outputs)
        return [
            o
            for o in self.outputs
            if o.kind == "export" and after[o.name] is not None and after[o.name] != self._outputs_before[o.name]
        ]

    # ---- the command line --------------------------------------------------------------
    @classmethod
    def resolve_settings(cls, configs: tuple, argv: Optional[Sequence[str]]) -> tuple:
        """The parsed configs (in ``config_types`` order) as the task runs them: a task may fill in
        settings from its data, e.g. the GAN's ``--preset auto``, where ``argv`` tells which flags the
        user gave (those win). Default: unchanged."""
        return configs

    @classmethod
    def main(cls, argv: Optional[Sequence[str]] = None, description: str = "") -> int:
        """A training script: parse flags (and ``--config``), ``--dry_run`` or train."""
        configs = parse_config(cls.config_types(), argv, description=description or cls.__doc__ or "")
        task = cls(*cls.resolve_settings(configs, argv), start=False)
        if task.run_args.dry_run:
            print_and_save_config(None, config_to_dict(*task.config_values()), None)
            return 0
        task.start()
        task.train()
        return 0

    @classmethod
    def script(cls, description: str = "") -> Callable[[Optional[Sequence[str]]], int]:
        """``main = Task.script(__doc__)`` in a script: :meth:`main` with one-line errors."""
        return cli_entry(lambda argv=None: cls.main(argv, description))


def _stat_outputs(folder: Path, outputs: Sequence[Output]) -> Dict[str, Optional[tuple]]:
    stats = {}
    for output in outputs:
        try:
            st = os.stat(Path(folder) / output.name)
            stats[output.name] = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            stats[output.name] = None
    return stats


def closing_line(folder: Path, written: Sequence[Output]) -> str:
    names = [f"{o.label or o.name}: {Path(folder) / o.name}" for o in written]
    return f"Run folder: {folder}" + (f"  ({', '.join(names)})" if names else "")
