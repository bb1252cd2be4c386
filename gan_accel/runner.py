"""One run, declared once: every task (GAN, CycleGAN, classifier, distillation, yours) is a
:class:`Task` that this runner executes, always in this order:

1. the folders: nothing the run writes or replaces (``outputs``) may hold what it reads (config
   fields whose metadata says ``reads``), nor lie inside it; then build the accelerator;
2. ``read_data()`` under ``main_process_first`` (one process downloads/decodes, the others read
   its cache), then ``check()``: a bad file, flag or size fails here, before the run folder is
   touched;
3. :class:`~gan_accel.loop.TrainingRun`: the checkpoint to resume is checked (task, recipe,
   settings by each field's resume policy, every file), the folder is locked, and
   ``--overwrite_output_dir`` clears what the task declares it writes (``outputs``);
4. the seed, then ``build()`` (networks, recipe, loaders) on the engine, ``hooks()`` added,
   resume (from an older checkpoint than the newest: the abandoned branch is set aside);
5. train; when finished, ``export()`` on the main process (not again when a resume trained
   nothing and the checkpoint's exports are as it recorded them); ``run.finish()`` always;
6. one closing ``Run folder`` line naming the exports THIS run wrote; the command exits 0, or
   128 + the signal's number when a signal stopped the run.

A start that fails before the first update (a refused resume, a bug in ``build()``, an epoch
without a batch) removes what it wrote (:meth:`~gan_accel.loop.TrainingRun.discard`): the
corrected command starts in the folder as this one found it. An exception other than a
``UserError`` from a task's own method is reported in one line naming the method.

A task declares only what differs: its config classes (``configs``), its data, its networks
and recipe, its hooks (samples, evaluation, EMA...) and the files it writes (``outputs``, with
how each is checked on load). ``Task.main(argv)`` is a whole training script: ``--help``,
``--config``, ``--dry_run`` and one-line errors.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, ClassVar, Dict, List, Optional, Sequence, Tuple

from . import interrupt
from .config import RunArguments, config_to_dict, parse_config, resume_compare_as, resume_policy
from .data.fingerprint import FOLDER_DATASETS
from .data.paths import check_folders, declare_run_outputs
from .errors import TaskMethodError, UserError, cli_entry
from .loop.accel import print_and_save_config
from .loop.atomic import write_json_durable
from .loop.report import ReportInputs, command_line
from .loop.rundir import GRIDS, RUN_OUTPUTS  # written by every run; a task's own outputs are added to them

OUTPUT_KINDS = ("export", "cache", "record")


@dataclass(frozen=True)
class Output:
    """A file or folder a task writes at the top of its run folder.

    ``kind``: ``export`` (a result: named in the closing line when this run wrote it), ``cache``
    (rebuilt when missing, damaged or stale; ``checked`` says how) or ``record``. Every kind is
    removed by ``--overwrite_output_dir``; only exports are named in the closing line.
    """

    name: str
    kind: str = "export"
    label: str = ""  # how the closing line names it (default: ``name``)
    checked: str = ""  # how it is checked when read back

    def __post_init__(self) -> None:
        # A misspelt kind would silently drop an export from the closing line.
        if self.kind not in OUTPUT_KINDS:
            raise TypeError(f"Output({self.name!r}): kind must be one of {', '.join(OUTPUT_KINDS)}; got {self.kind!r}")


@dataclass
class Plan:
    """What ``Task.build`` returns: the engine's inputs."""

    recipe: object  # engine.Recipe
    loader: object  # the raw training DataLoader (a resumable sampler)
    max_steps: int
    eval_loaders: Sequence = ()


OnUpdate = Callable[[object], None]
EXPORTS_FILE = "exported.json"  # in the final checkpoint: what its export wrote (name -> inode, mtime, size)

declare_run_outputs(RUN_OUTPUTS)


class Task:
    """Subclass and declare; the runner's sequence (``start``, ``train``) is not overridden."""

    project: ClassVar[str] = ""  # recorded in every checkpoint
    configs: ClassVar[Dict[str, type]] = {}  # attribute -> config dataclass, in CLI order
    outputs: ClassVar[Tuple[Output, ...]] = ()
    unit: ClassVar[str] = "sample"  # what the progress bar counts
    command: ClassVar[str] = ""  # its gan-accel sub-command (report.html shows the command line)
    argv: Optional[List[str]] = None  # the flags main() was given (None: started from Python)
    desc: ClassVar[str] = "train"

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        declare_run_outputs(output.name for output in cls.outputs)

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
        self.call("check_settings")
        if start:
            self.start()

    @classmethod
    def config_types(cls) -> Tuple[type, ...]:
        return (*cls.configs.values(), RunArguments)

    def config_values(self) -> tuple:
        return tuple(getattr(self, attr) for attr in (*self.configs, "run_args"))

    def read_paths(self) -> Dict[str, str]:
        """``--flag`` -> path of each file or folder the run reads: the config fields whose
        metadata says ``reads`` (``"folder dataset"``: only when ``--dataset`` is a folder; a
        torchvision root is a download cache) and whose value exists here (not a Hub name)."""
        found = {}
        for config in self.config_values():
            for spec in fields(config):
                reads = spec.metadata.get("reads")
                value = getattr(config, spec.name)
                if not reads or not value or not Path(value).exists():
                    continue
                if reads == "folder dataset" and getattr(config, "dataset", None) not in FOLDER_DATASETS:
                    continue
                found[f"--{spec.name}"] = value
        return found

    def output_names(self) -> Tuple[str, ...]:
        """What a run writes or replaces at the top of its folder (what ``--overwrite_output_dir`` removes)."""
        return (*RUN_OUTPUTS, *(o.name for o in self.outputs))

    # ---- what a task declares (override) ----------------------------------------------
    def check_settings(self) -> None:
        """Checks across config classes (each class checks its own fields in ``__post_init__``)."""

    def unused_parameters(self) -> bool:
        """Whether some trainable parameters get no gradient in some steps (DDP must then look
        for them after each forward, at a cost; see :func:`gan_accel.loop.build_accelerator`)."""
        return False

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

        from .engine import AFTER_CHECKPOINT, Engine, Hook
        from .loop import TrainingRun, build_accelerator

        # A run folder inside a data folder would become training data; data inside samples/ or
        # generator/ would be rewritten by the run, or deleted by --overwrite_output_dir.
        out = self.run_args.output_dir
        check_folders(
            self.read_paths(),
            {"--output_dir": out},
            {"--output_dir": [Path(out) / name for name in self.output_names()]},
        )
        self.accelerator = build_accelerator(self.run_args, self.project, self.unused_parameters())
        with self.accelerator.main_process_first():
            self.call("read_data")
        self.call("check")
        self.run = None
        try:
            # A signal while the folder is claimed waits until the clean-up below knows the run.
            with interrupt.deferred():
                self.run = TrainingRun(
                    self.run_args,
                    config_to_dict(*self.config_values()),
                    project=self.project,
                    accelerator=self.accelerator,
                    policy=resume_policy(*self.config_types()),
                    compare_as=resume_compare_as(*self.config_types()),
                    outputs=self.output_names(),
                    data_fingerprint=self.call("data_fingerprint"),
                    exports=[o.name for o in self.outputs if o.kind == "export" and o.name != GRIDS],
                )
                self.run.report_inputs = self.report_inputs()
            interrupt.phase("folder")
            self._outputs_before = _stat_outputs(self.run.output_dir, self.outputs)
            set_seed(self.run_args.seed)  # weight init
            plan = self.call("build")
            interrupt.phase("build")
            self.engine = Engine(
                self.run,
                plan.recipe,
                plan.loader,
                max_steps=plan.max_steps,
                eval_loaders=plan.eval_loaders,
                unit=self.unit,
                desc=self.desc,
            )
            self.engine.add(*self.call("hooks"))
            # After the task's hooks, so that a step's grid exists when its evaluation is shown.
            self.engine.add(Hook(self.run.report_after_evaluation, every=1, at_end=False, when=AFTER_CHECKPOINT))
            if self.on_update is not None:
                self.engine.add(Hook(lambda: self.on_update(self.run.state), every=1))
            self.engine.resume()
        except BaseException as err:
            if self.run is not None:
                self.discard_failed_start(err)  # the corrected command must find the folder as this one did
            raise
        self._windows_at_start = self.run.state.windows

    def report_inputs(self) -> ReportInputs:
        """How the run was started, for its report.html: the command line, and the settings a
        config chose with their reasons (its ``preset_lines``)."""
        notes = tuple(line.strip() for config in self.config_values() for line in getattr(config, "preset_lines", ()))
        command = command_line(self.command, self.argv) if self.argv is not None else ""
        return ReportInputs(command, notes)

    def call(self, method: str):
        """One of the task's own methods: an exception that is not a :class:`UserError` is a bug in
        the task, reported in one line naming the method (its traceback under ``--debug``)."""
        try:
            return getattr(self, method)()
        except (UserError, OSError):  # bad input, or the machine (a full disk): not the task's code
            raise
        except Exception as err:
            detail = " ".join(str(err).split())
            raise TaskMethodError(
                f"{type(self).__name__}.{method}() raised {type(err).__name__}" + (f": {detail}" if detail else "")
            ) from err

    def train(self) -> Path:
        """Train, export when finished, close the run; returns the run folder."""
        run = self.run
        main = run.accelerator.is_main_process
        try:
            start = time.perf_counter()
            start_step = run.state.step
            finished = self.train_engine() and run.state.step >= self.engine.max_steps
            self.train_seconds = time.perf_counter() - start
            if finished and main and run.state.step == start_step and self.exports_unchanged():
                run.print(f"Nothing trained past step {start_step}: its exports are left as they were")
            elif finished and main:
                interrupt.phase("export")
                self.call("export")
                self.record_exports()
        except BaseException as err:
            self.discard_failed_start(err)
            if isinstance(err, interrupt.Interrupted) and not run.discarded:
                err.detail = f" after step {run.state.step} (its checkpoint is kept: continue with --resume_from_checkpoint latest)"
            raise
        finally:
            run.finish()
        if main:  # once, and only what this run wrote
            print(closing_line(run.output_dir, self.written()), flush=True)
            if run.stopped_by_signal:
                print(
                    f"Stopped by a signal at step {run.state.step} (checkpoint saved), exit code {run.exit_code()}: "
                    "continue with --resume_from_checkpoint latest",
                    flush=True,
                )
        return run.output_dir

    def discard_failed_start(self, err: BaseException) -> None:
        """A run that fails (or is stopped) before its first update is a failed start: what it
        wrote is removed, once."""
        run = getattr(self, "run", None)
        if run is None or run.discarded or run.state.windows != getattr(self, "_windows_at_start", run.state.windows):
            return
        run.discard()
        if isinstance(err, interrupt.Interrupted):
            err.detail = f" before the first update; {run.output_dir} is as this command found it"

    def exports_unchanged(self) -> bool:
        """Whether the checkpoint this run resumed was exported and its exports are still there,
        as they were (a run killed before or during its export has no record: it exports)."""
        path = self.run.resume_path
        if path is None or not (path / EXPORTS_FILE).is_file():
            return False
        recorded = json.loads((path / EXPORTS_FILE).read_text())
        now = _stat_outputs(self.run.output_dir, [o for o in self.outputs if o.name in recorded])
        return bool(recorded) and all(now[name] is not None and list(now[name]) == recorded[name] for name in recorded)

    def record_exports(self) -> None:
        """Note in the final checkpoint what its export wrote, so that a resume that trains
        nothing leaves it as it is (``exports_unchanged``)."""
        checkpoint = self.run.checkpoints.root / f"step_{self.run.state.step:08d}"
        if checkpoint.is_dir():
            written = self.written()
            now = _stat_outputs(self.run.output_dir, written)
            write_json_durable(checkpoint / EXPORTS_FILE, {o.name: list(now[o.name]) for o in written})

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
        """A training script: parse flags (and ``--config``), ``--dry_run`` or train. Returns 0, or
        128 + the signal's number when a signal stopped the run (``gan_accel.loop.signals``)."""
        configs = parse_config(cls.config_types(), argv, description=description or cls.__doc__ or "")
        task = cls(*cls.resolve_settings(configs, argv), start=False)
        task.argv = list(sys.argv[1:] if argv is None else argv)
        if task.run_args.dry_run:
            print_and_save_config(None, config_to_dict(*task.config_values()), None)
            return 0
        try:
            task.start()
            task.train()
        except BaseException as err:
            task.discard_failed_start(err)  # a signal between start() and train()
            raise
        return task.run.exit_code()  # non-zero after a signal: the run stopped before its end

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
