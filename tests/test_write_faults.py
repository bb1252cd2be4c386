"""Every write of every command can be the one that fails (a full disk, a read-only file system,
an I/O error), injected through gan_accel.writes: the command ends in one ``error:`` line naming
the path and a flag it accepts, exits non-zero without a traceback, leaves no empty or partial
file, and the same command run again without the fault succeeds (a run resumes).

The clean run of each command is counted first; the default run fails one drawn write per
command, ``-m slow`` every write with each of the three errors."""

from __future__ import annotations

import errno
import functools
import json
import logging
import random
import re
import shutil
import sys
from pathlib import Path

import pytest

from benchmarks.common import reset_accelerate
from gan_accel.writes import injected
from helpers import TINY_GAN, load_script

CODES = (errno.ENOSPC, errno.EROFS, errno.EIO)
TRAIN_FLAGS = [*TINY_GAN, "--max_steps", "4", "--checkpointing_steps", "2", "--log_every", "1"]
TRAIN_FULL = [*TRAIN_FLAGS, "--num_grids", "2", "--num_evaluations", "1", "--eval_num_images", "100"]


def _main(name):
    return load_script(name).main


class Inputs:
    """What the commands read, each made once per module on first use (a command's clean run is
    the costly part; the default run shares them all)."""

    def __init__(self, root: Path):
        self.root = root

    @functools.cached_property
    def gan(self) -> Path:
        """A finished tiny run (grids, the GIF, an evaluation, plots, exports) to read from."""
        run = self.root / "base"
        reset_accelerate()
        assert _main("train_gan")([*TRAIN_FULL, "--output_dir", str(run)]) == 0
        return run

    @functools.cached_property
    def translator(self) -> Path:
        from cyclegan_fixtures import make_domains
        from gan_accel.cyclegan.export import save_translator
        from gan_accel.cyclegan.models import ResnetGenerator

        make_domains(self.root / "domains", num_a=3, num_b=1)
        return save_translator(ResnetGenerator(1, 4, 1), self.root / "generator_A2B", "A2B", 16)

    @functools.cached_property
    def corpus(self) -> dict:
        from classifier_fixtures import make_corpus

        return make_corpus(self.root / "corpus", n_train=64, n_val=20)

    @functools.cached_property
    def tiny(self) -> Path:
        from classifier_fixtures import make_tiny

        return make_tiny(self.root / "tiny", self.corpus["train"])

    @functools.cached_property
    def classifier(self) -> Path:
        """A trained classifier's model folder: predict reads it; distillation's teacher."""
        from classifier_fixtures import train_argv, train_in_process

        argv = train_argv(self.corpus, self.tiny, self.root / "clf", "--max_steps", "2", "--eval_every", "0")
        return train_in_process(argv) / "model"

    @functools.cached_property
    def photos(self) -> Path:
        """A folder of photo crops (one sub-folder per photo) for a run that decodes its data."""
        out = self.root / "photos"
        argv = ["--output_dir", str(out), "--num_crops", "64", "--num_heldout", "0", "--crop_size", "48"]
        assert _main("make_photo_crops")([*argv, "--size", "16"]) == 0
        return out / "train"

    @functools.cached_property
    def eval_cache(self) -> Path:
        """evaluate-gan's --cache_dir, filled once (the domain classifier, the reference statistics):
        every later run then makes the same writes, so a counted write is the same write."""
        cache = self.root / "eval-cache"
        argv = ["--generator", str(self.gan / "generator"), "--num_images", "100", "--bootstrap", "0", "--nearest"]
        reset_accelerate()
        assert _main("evaluate_gan")([*argv, "--output_dir", str(self.root / "warm"), "--cache_dir", str(cache)]) == 0
        return cache

    def folders(self) -> list:
        """The made inputs: a command must leave them as they were."""
        return [self.root / name for name in ("base", "domains", "generator_A2B", "corpus", "tiny", "clf", "photos")]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is as fast, and the machine is shared
    yield Inputs(tmp_path_factory.mktemp("inputs"))
    torch.set_num_threads(threads)


def classifier_flags(w: Path, i: Inputs, *extra) -> list:
    from classifier_fixtures import train_argv

    return train_argv(i.corpus, i.tiny, w / "run", *CLASSIFIER_RUN, *extra)


def distill_flags(w: Path, i: Inputs) -> list:
    from distill_fixtures import distill_argv

    setup = {"corpus": i.corpus, "teacher": i.classifier}
    return distill_argv(setup, w / "run", "--student_from_teacher", *CLASSIFIER_RUN)


CLASSIFIER_RUN = ["--max_steps", "4", "--eval_every", "2", "--checkpointing_steps", "2", "--log_every", "2"]
RESUMABLE = {"train-gan", "train-gan-photos", "train-classifier", "distill-classifier"}

# name -> (script, argv from (work folder, inputs)); each writes only under the work folder.
COMMANDS = {
    "train-gan": ("train_gan", lambda w, i: [*TRAIN_FULL, "--output_dir", str(w / "run")]),
    "train-gan-photos": (  # a folder of images: the decode cache is written too
        "train_gan",
        lambda w, i: (
            [*TRAIN_FLAGS, "--dataset", "folder", "--data_dir", str(i.photos)]
            + ["--data_cache_dir", str(w / "cache"), "--output_dir", str(w / "run")]
        ),
    ),
    "sample-gan": (
        "sample_gan",
        lambda w, i: [
            "--generator",
            str(i.gan / "generator"),
            "--num_images",
            "3",
            "--output_dir",
            str(w / "png"),
            "--grid",
            str(w / "grid.png"),
        ],
    ),
    "sample-gan-interpolate": (
        "sample_gan",
        lambda w, i: (
            ["--generator", str(i.gan / "generator"), "--num_images", "2", "--interpolate", "3"]
            + ["--output_dir", str(w / "png")]
        ),
    ),
    "export-onnx": (
        "export_onnx",
        lambda w, i: ["--generator", str(i.gan / "generator"), "--output", str(w / "g.onnx")],
    ),
    "evaluate-gan": (
        "evaluate_gan",
        lambda w, i: (
            ["--generator", str(i.gan / "generator"), "--num_images", "100", "--bootstrap", "0", "--nearest"]
            + ["--nearest_rows", "2", "--output_dir", str(w / "eval"), "--cache_dir", str(i.eval_cache)]
        ),
    ),
    "plot-run": ("plot_run", lambda w, i: [str(i.gan), "--output_dir", str(w / "plots")]),
    "translate": (
        "translate",
        lambda w, i: (
            ["--generator", str(i.translator), "--input_dir", str(i.root / "domains")]
            + ["--output_dir", str(w / "out"), "--batch_size", "2"]
        ),
    ),
    "train-classifier": ("train_classifier", classifier_flags),
    "distill-classifier": ("distill_classifier", distill_flags),
    "predict": (
        "predict",
        lambda w, i: (
            ["--model", str(i.classifier), "--input_file", str(i.corpus["validation"])]
            + ["--output_file", str(w / "out" / "preds.csv")]
        ),
    ),
    "make-photo-crops": (
        "make_photo_crops",
        lambda w, i: (
            ["--output_dir", str(w / "crops"), "--num_crops", "4", "--num_heldout", "2"]
            + ["--crop_size", "48", "--size", "16"]
        ),
    ),
}


def run_command(name, work, i: Inputs, *extra):
    script, argv = COMMANDS[name]
    reset_accelerate()
    # Handlers made during an earlier test (a command's basicConfig, transformers' own) write to
    # that test's captured stderr, now closed: point them at this one's.
    loggers = [logging.root, *(v for v in logging.Logger.manager.loggerDict.values() if isinstance(v, logging.Logger))]
    for handler in {h for logger in loggers for h in logger.handlers}:
        if isinstance(handler, logging.StreamHandler) and getattr(handler.stream, "closed", False):
            handler.stream = sys.stderr  # not setStream: it flushes the closed one
            vars(handler).pop("flush", None)  # transformers binds the old stderr's flush
    try:
        return _main(script)([*argv(work, i), *extra])
    except SystemExit as stop:
        return stop.code


def files_under(folder: Path) -> dict:
    return {p: p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


def final_name(path: Path) -> Path:
    """Where a write lands: ``.tmp-NAME`` (``.tmp-ENTRY-1a2b3c4d`` for a decode cache),
    ``.unchecked-NAME`` and ``.NAME.PID.tmp`` (a metrics cache) are renamed when complete."""
    match = re.fullmatch(r"\.(?:tmp|unchecked)-(.*?)(?:-[0-9a-f]{8})?|\.(.*)\.\d+\.tmp", path.name)
    return path.with_name(match.group(1) or match.group(2)) if match else path


def kind_of(path: Path) -> str:
    """The kind of a write, so the default run fails at least one of each kind."""
    path = final_name(path)
    if "checkpoints" in path.parts:
        return "checkpoint"
    if path.name in ("metrics.jsonl", "run.lock", "report.html"):
        return path.name
    if "cache" in path.parts:
        return "cache" if path.suffix else "decode cache"
    if "plots" in path.parts:
        return "plot"
    if path.suffix == ".png":
        return "grid" if "grid" in path.name or "samples" in path.parts or "interpolation" in path.name else "image"
    if path.suffix in (".json", ".gif", ".onnx", ".csv"):
        return path.suffix
    return "export" if path.name.startswith(("generator", "model", "best")) else "folder"


_WRITES: dict = {}


def writes_of(name, i: Inputs) -> list:
    """The paths of the writes of a clean run of ``name``, in order. Every file the run leaves in
    its work folder must have passed the write point (a file written around it is a write no
    fault can reach)."""
    if name not in _WRITES:
        work = i.root / f"clean-{name}"
        COMMANDS[name][1](work, i)  # its inputs are made before the count, not counted
        with injected(0) as faults:
            assert run_command(name, work, i) == 0
        assert faults.paths, f"{name} wrote nothing through gan_accel.writes"
        announced = {final_name(p) for p in faults.paths if work in p.parents}
        for path in files_under(work):
            assert announced & {path, *path.parents}, f"{name} wrote {path} without passing the write point"
        _WRITES[name] = list(faults.paths)
    return _WRITES[name]


def drawn_plan(i: Inputs) -> dict:
    """command -> the writes its default run fails, drawn once (a failure reproduces): every kind of
    write (an image, a grid, a JSON file, a plot, an export, ...) of each command that runs in a
    second, and for the training commands one write each, drawn so that together they fail every
    kind of write (a checkpoint, a metrics line, the report, ...) at least once."""
    kinds = {name: [kind_of(p) for p in writes_of(name, i)] for name in sorted(COMMANDS)}
    plan: dict = {name: [] for name in kinds}
    covered: set = set()

    def pick(name, kind, rng):
        # Past the first write, the check before the work, which has its own tests.
        ks = [k for k, each in enumerate(kinds[name], 1) if each == kind and (k > 1 or len(kinds[name]) == 1)]
        plan[name].append(rng.choice(ks))
        covered.add(kind)

    def made(name) -> list:
        return sorted(set(kinds[name][1:] or kinds[name]))

    for name in sorted(set(kinds) - RESUMABLE):
        for kind in made(name):
            pick(name, kind, random.Random(f"{name}/{kind}"))
    for name in sorted(RESUMABLE):
        rng = random.Random(name)
        pick(name, rng.choice([k for k in made(name) if k not in covered] or made(name)), rng)
    for kind in sorted({k for name in kinds for k in made(name)} - covered):
        name = next(n for n in sorted(kinds) if kind in made(n))
        pick(name, kind, random.Random(f"{name}/{kind}"))
    return plan


def check_fails_cleanly(name, k, code, i: Inputs, capsys):
    work = i.root / f"{name}-k{k}-{errno.errorcode[code]}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    script, argv = COMMANDS[name]
    flags = {a for a in argv(work, i) if a.startswith("--")} | {"--output_dir"}
    before = {folder: files_under(folder) for folder in i.folders() if folder.is_dir()}
    capsys.readouterr()
    with injected(k, code) as faults:
        rc = run_command(name, work, i)
    err = capsys.readouterr().err
    failed = faults.paths[k - 1]
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    if rc == 0:
        # Only best-effort writes (a metrics line, a plot or the report during training) may fail
        # without ending the run, and then with a warning that names the path.
        assert "warning:" in err and final_name(failed).name in err, err
    else:
        assert rc == 2 and len(lines) == 1, err
        line = lines[0]
        assert str(final_name(failed)) in line or str(failed.parent) in line, (line, failed)
        assert any(flag in re.findall(r"--\w+", line) for flag in flags), (line, flags)
    for path, size in files_under(work).items():
        assert size > 0, f"empty file {path} after a failed write ({line if rc else err})"
        assert not path.name.startswith((".tmp-", ".unchecked-")), path
        if path.suffix == ".json":
            json.loads(path.read_text())
    assert {folder: files_under(folder) for folder in before} == before  # the inputs are untouched
    # The same command, without the fault, finishes: a training run resumes from its checkpoint,
    # or (none written yet) starts again, as the refusal of a folder holding a run says.
    resume = name in RESUMABLE and (work / "run").is_dir()
    assert run_command(name, work, i, *(["--resume_from_checkpoint", "latest"] if resume else [])) == 0, (
        capsys.readouterr().err
    )
    shutil.rmtree(work)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_drawn_write_fails_cleanly(name, inputs, capsys):
    plan = drawn_plan(inputs)
    for k in plan[name]:
        check_fails_cleanly(name, k, CODES[k % len(CODES)], inputs, capsys)


def test_the_draw_fails_every_kind_of_write(inputs):
    plan = drawn_plan(inputs)
    made = {kind_of(p) for name in COMMANDS for p in writes_of(name, inputs)[1:]}
    drawn = {kind_of(writes_of(name, inputs)[k - 1]) for name, ks in plan.items() for k in ks}
    assert drawn == made
    assert {"grid", "image", ".json", "checkpoint", "plot", "export"} <= made
    assert all(plan[name] for name in COMMANDS)
    for name in set(COMMANDS) - RESUMABLE:  # each kind of write of each quick command
        kinds = {kind_of(p) for p in writes_of(name, inputs)[1:]}
        assert {kind_of(writes_of(name, inputs)[k - 1]) for k in plan[name]} == kinds, name


@pytest.mark.slow
@pytest.mark.parametrize("code", CODES, ids=[errno.errorcode[c] for c in CODES])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_write_fails_cleanly(name, code, inputs, capsys):
    for k in range(1, len(writes_of(name, inputs)) + 1):
        check_fails_cleanly(name, k, code, inputs, capsys)


# command -> (the output flag, the functions that load its model or do its work, as module, name)
READ_ONLY = {
    "sample-gan": ("--output_dir", [("gan_accel.models", "load_generator")]),
    "evaluate-gan": ("--output_dir", [("gan_accel.models", "load_generator")]),
    "export-onnx": ("--output", [("gan_accel.models", "load_generator")]),
    "plot-run": ("--output_dir", [("gan_accel.cli.plot_run", "plot_metrics")]),
    "translate": ("--output_dir", [("gan_accel.cyclegan.export", "load_translator")]),
    "predict": ("--output_file", [("gan_accel.classifier.predict", n) for n in ("load_classifier", "load_weights")]),
}


@pytest.mark.parametrize("name", sorted(READ_ONLY))
def test_a_read_only_output_folder_is_found_before_the_work(name, inputs, capsys, monkeypatch):
    """The output folder is read-only: one line naming the output flag, before any model is loaded
    or anything evaluated. As root, permission bits do not stop a write, so the file system's
    answer is injected at the first write, the check made before the work."""
    import importlib
    import os

    flag, work_functions = READ_ONLY[name]
    work = inputs.root / f"read-only-{name}"
    work.mkdir()
    COMMANDS[name][1](work, inputs)  # its inputs are made first
    called = []
    for module, function in work_functions:

        def refuse(*args, _name=function, **kwargs):
            called.append(_name)
            raise RuntimeError(f"{_name} ran before the read-only output was found")

        monkeypatch.setattr(importlib.import_module(module), function, refuse)
    capsys.readouterr()
    if os.geteuid() == 0:
        with injected(1, errno.EROFS) as faults:
            rc = run_command(name, work, inputs)
        assert faults.paths[0] in (work, *work.parents)  # the first write asks the folder, before the work
    else:
        work.chmod(0o555)
        try:
            rc = run_command(name, work, inputs)
        finally:
            work.chmod(0o755)
    err = capsys.readouterr().err
    assert rc == 2 and not called, (called, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag} ") and "cannot write in" in lines[0], err
    assert not list(work.iterdir())
