"""SIGINT and SIGTERM at every phase of every command (gan_accel.interrupt): exit 130/143, one line
naming the signal, no traceback, and the folder as the command found it (names, bytes, mtimes),
or a checkpoint that resumes. The process signals itself at a named phase
(``GAN_ACCEL_TEST_SIGNAL_AT``), so each phase is hit exactly. The default run draws a few
(command, phase, signal) cases; ``-m slow`` runs them all."""

import hashlib
import os
import random
import signal
import subprocess
import sys

import pytest
from PIL import Image

from classifier_fixtures import make_corpus, make_tiny
from cyclegan_fixtures import make_domains
from gan_accel import interrupt
from gan_accel.cyclegan.export import save_translator
from gan_accel.cyclegan.models import ResnetGenerator
from helpers import ROOT, TINY_GAN, load_script

train_gan = load_script("train_gan").main
ENTRY = "import sys; from gan_accel.cli import main; sys.exit(main())"  # the gan-accel command
TRAIN = [*TINY_GAN, "--max_steps", "3", "--checkpointing_steps", "0", "--log_every", "1"]
EVAL = ["--eval_num_images", "100"]  # the smallest evaluation (the domain classifier needs every digit)


LAUNCHERS = {  # 2 processes on the CPU
    "torchrun": ["torch.distributed.run", "--standalone", "--nproc_per_node", "2"],
    "accelerate": ["accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1"],
}


def command(argv, at="", timeout=300, torchrun=False):
    """``torchrun``: True or a :data:`LAUNCHERS` name, the command on 2 processes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", interrupt.TEST_SIGNAL_ENV: at}
    if torchrun:
        env["ACCELERATE_USE_CPU"] = "1"
        launcher = LAUNCHERS["torchrun" if torchrun is True else torchrun]
        extra = ["--mixed_precision", "no", "--dynamo_backend", "no"] if torchrun == "accelerate" else []
        cmd = [sys.executable, "-m", *launcher, *extra, str(ROOT / "scripts" / "train_gan.py"), *argv[1:]]
    else:
        cmd = [sys.executable, "-c", ENTRY, *argv]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def snapshot(folder):
    """Every entry under ``folder``: a file's bytes and modification time, a folder's name."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            found[os.path.relpath(os.path.join(root, name), folder)] = "dir"
        for name in files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = (
                hashlib.sha256(open(path, "rb").read()).hexdigest(),
                os.stat(path).st_mtime_ns,
            )
    return found


def traceback_lines_of_ours(proc):
    return [line for line in proc.stderr.splitlines() if "gan_accel" in line and "File " in line]


def assert_one_line(proc, sig):
    assert proc.returncode == 128 + sig, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len([line for line in proc.stderr.splitlines() if sig.name in line]) == 1, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A workspace with a finished tiny run (its generator, metrics), a CycleGAN translator with a
    folder to translate, and a user's file."""
    root = tmp_path_factory.mktemp("signals")
    assert train_gan([*TRAIN, "--max_steps", "2", "--output_dir", str(root / "done")]) == 0
    save_translator(ResnetGenerator(1, 4, 1), root / "generator_A2B", "A2B", 16)
    make_domains(root / "domains", num_a=3, num_b=1)
    (root / "mine").mkdir()
    (root / "mine" / "notes.txt").write_text("the user's own")
    corpus = make_corpus(root / "corpus", n_train=32, n_val=8)
    make_tiny(root / "tiny", corpus["train"])
    return root


def args_of(name, work):
    """(argv, folder whose state is checked) of each command."""
    w = str(work)
    return {
        "train-gan": ["train-gan", *TRAIN, "--output_dir", f"{w}/new"],
        "train-gan-in-users-folder": ["train-gan", *TRAIN, "--output_dir", f"{w}/mine"],
        # A tiny in-run evaluation at step 2 (of 3): the signal lands while it runs.
        "train-gan-eval": ["train-gan", *TRAIN, *EVAL, "--eval_every", "2", "--output_dir", f"{w}/new"],
        "train-gan-resume": ["train-gan", *TRAIN, "--output_dir", f"{w}/done", "--resume_from_checkpoint", "latest"],
        "sample-gan": [
            "sample-gan",
            "--generator",
            f"{w}/done/generator",
            "--num_images",
            "3",
            "--batch_size",
            "1",
            "--output_dir",
            f"{w}/png",
        ],
        "export-onnx": ["export-onnx", "--generator", f"{w}/done/generator", "--output", f"{w}/g.onnx"],
        "evaluate-gan": [
            "evaluate-gan",
            "--generator",
            f"{w}/done/generator",
            "--dataset",
            "digits",
            "--num_images",
            "100",
            "--output_dir",
            f"{w}/ev",
        ],
        "plot-run": ["plot-run", f"{w}/done"],
        "translate": [
            "translate",
            "--generator",
            f"{w}/generator_A2B",
            "--input_dir",
            f"{w}/domains/trainA",
            "--output_dir",
            f"{w}/tr",
        ],
        "predict": ["predict", "--model", f"{w}/tiny", "--text", "a", "b", "--output_file", f"{w}/pred.jsonl"],
        "compare-metrics": ["compare-metrics", f"{w}/a.json", f"{w}/b.json"],
        "make-photo-crops": [
            "make-photo-crops",
            "--output_dir",
            f"{w}/crops",
            "--num_crops",
            "4",
            "--num_heldout",
            "0",
        ],
    }[name]


# (command, phase): "start" is the command's first line; the others are gan_accel.interrupt.phase calls.
STARTUP = [("train-gan", p) for p in ("start", "folder", "build", "build,discard")]
STARTUP += [("train-gan-in-users-folder", "build"), ("train-gan-resume", "build"), ("train-gan-resume", "folder")]
OTHERS = [(c, "start") for c in ("sample-gan", "export-onnx", "evaluate-gan", "plot-run", "translate", "predict")]
OTHERS += [("compare-metrics", "start"), ("make-photo-crops", "start")]
# Each command's work: files written one by one, an ONNX export, an evaluation.
WRITING = [("sample-gan", "write"), ("make-photo-crops", "write"), ("translate", "write"), ("plot-run", "write")]
WORK = WRITING + [("export-onnx", "export"), ("evaluate-gan", "evaluate"), ("predict", "predict")]
TRAINING = [
    ("train-gan", "update"),
    ("train-gan", "update:2"),
    ("train-gan", "export"),
    ("train-gan-eval", "evaluate"),
]
SIGNALS = (signal.SIGINT, signal.SIGTERM)
CASES = [(c, p, s) for c, p in STARTUP + OTHERS + WORK + TRAINING for s in SIGNALS]
# The default run: a few drawn cases, one of them a command's work; not an evaluation (its domain
# classifier costs 10-30 s a case on 2 cores: -m slow runs those).
CHEAP = [case for case in CASES if case[1] != "evaluate"]
DRAWN = random.Random(57).sample([case for case in CHEAP if case[:2] not in WORK], 3)
DRAWN += random.Random(57).sample([case for case in CHEAP if case[:2] in WORK], 1)


def spec(phase, sig):
    """ "build,discard" -> "build:SIGTERM,discard:SIGTERM" (the second one lands during the clean-up)."""
    return ",".join(
        f"{p.split(':')[0]}:{sig.name}" + (f":{p.split(':')[1]}" if ":" in p else "") for p in phase.split(",")
    )


def check_case(work, name, phase, sig):
    argv = args_of(name, work)
    before = snapshot(work)
    proc = command(argv, spec(phase, sig))
    assert_one_line(proc, sig)
    if (name, phase) in WRITING:  # what was written before the signal is whole; nothing half-written
        new = sorted(set(snapshot(work)) - set(before))
        assert not [n for n in new if ".tmp" in os.path.basename(n)], new
        for path in new:
            if path.endswith(".png"):
                Image.open(work / path).verify()
        return
    if name.startswith("train-gan") and phase.startswith(
        ("update", "export", "evaluate")
    ):  # a checkpoint that resumes
        run = work / "new"
        assert (run / "checkpoints").is_dir() and not (run / "run.lock").exists()
        assert "stopped after step" in proc.stderr or "finishing this step" in proc.stderr
        if phase == "evaluate":  # the evaluation at step 2 ends, then the checkpoint of step 2
            assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_00000002"]
        assert command([*argv, "--resume_from_checkpoint", "latest"]).returncode == 0
        assert (run / "generator").is_dir()
        return
    # The folder as found (evaluate-gan: no eval_results.json, whole or partial); the same command then runs.
    assert snapshot(work) == before


@pytest.mark.parametrize("name,phase,sig", DRAWN, ids=[f"{c}-{p}-{s.name}" for c, p, s in DRAWN])
def test_a_signal_at_a_drawn_phase_is_one_line_and_leaves_the_folder_as_found(tmp_path, work, name, phase, sig):
    check_case(copy_of(work, tmp_path), name, phase, sig)


@pytest.mark.slow
@pytest.mark.parametrize("name,phase,sig", CASES, ids=[f"{c}-{p}-{s.name}" for c, p, s in CASES])
def test_a_signal_at_every_phase_is_one_line_and_leaves_the_folder_as_found(tmp_path, work, name, phase, sig):
    check_case(copy_of(work, tmp_path), name, phase, sig)


def copy_of(work, tmp_path):
    import shutil

    shutil.copytree(work, tmp_path / "w", symlinks=True, copy_function=shutil.copy2)
    return tmp_path / "w"


def test_a_start_stopped_before_its_first_update_can_be_run_again(tmp_path):
    """The issue's case: the same command after a SIGTERM in build() is not refused."""
    argv = ["train-gan", *TRAIN, "--max_steps", "1", "--output_dir", str(tmp_path / "run")]
    assert_one_line(command(argv, "build:SIGTERM"), signal.SIGTERM)
    assert not (tmp_path / "run").exists()
    assert command(argv).returncode == 0


@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
@pytest.mark.parametrize("how", ["script", "module", "gan-accel"])
def test_a_stop_while_the_command_imports_torch_is_one_line(tmp_path, how, sig):
    """The seconds of torch's import, before the command's own first line: ``python scripts/X.py``
    and ``python -m gan_accel.cli.X`` (and torchrun/accelerate launch of either) answer as
    ``gan-accel X`` does."""
    argv = ["plot-run", str(tmp_path)]
    if how in ("script", "module"):
        env = {**os.environ, "PYTHONPATH": str(ROOT), interrupt.TEST_SIGNAL_ENV: f"import:{sig.name}"}
        run = [str(ROOT / "scripts" / "plot_run.py")] if how == "script" else ["-m", "gan_accel.cli.plot_run"]
        proc = subprocess.run([sys.executable, *run, *argv[1:]], env=env, capture_output=True, text=True, timeout=120)
    else:
        proc = command(argv, f"import:{sig.name}")
    assert_one_line(proc, sig)
    assert "torch" not in proc.stderr  # stopped before the import, by the command's own handler


def test_a_second_signal_within_the_window_is_the_same_stop(monkeypatch):
    exits = []
    monkeypatch.setattr(os, "_exit", lambda code: exits.append(code))
    clock = [100.0]
    monkeypatch.setattr(interrupt.time, "monotonic", lambda: clock[0])
    stops = []
    with interrupt.graceful(stops.append):
        os.kill(os.getpid(), signal.SIGTERM)
        clock[0] += interrupt.SAME_STOP_WINDOW_S / 2
        os.kill(os.getpid(), signal.SIGTERM)  # a scheduler's, then torchrun's: one stop
        assert stops == [signal.SIGTERM] and not exits
        clock[0] += interrupt.SAME_STOP_WINDOW_S
        os.kill(os.getpid(), signal.SIGINT)  # later: the user means it
        assert exits == [128 + signal.SIGINT]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_torchrun_a_signal_to_every_process_of_the_job_checkpoints_and_resumes(tmp_path, sig):
    """Each worker gets the signal twice (its own, then torchrun's): one stop, a checkpoint, and
    no traceback of ours (torchrun itself re-raises the signal as SignalException: exit 1)."""
    argv = ["train-gan", *TRAIN, "--output_dir", str(tmp_path / "run")]
    proc = command(argv, f"update:{sig.name}:job", torchrun=True)
    assert proc.returncode != 0
    assert not traceback_lines_of_ours(proc), proc.stderr[-3000:]
    assert proc.stderr.count(f"{sig.name} received: finishing this step") == 2, proc.stderr[-3000:]
    assert (tmp_path / "run" / "checkpoints").is_dir() and not (tmp_path / "run" / "run.lock").exists()
    assert command([*argv, "--resume_from_checkpoint", "latest"], torchrun=True).returncode == 0


@pytest.mark.slow
def test_accelerate_launch_a_signal_to_every_process_of_the_job_exits_143(tmp_path):
    """What torchrun cannot: accelerate launch (its elastic agent in its own process) exits with
    128 + the signal it received, after its workers checkpointed."""
    argv = ["train-gan", *TRAIN, "--output_dir", str(tmp_path / "run")]
    proc = command(argv, "update:SIGTERM:job", torchrun="accelerate")
    assert proc.returncode == 143 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.count("SIGTERM received: finishing this step") == 2, proc.stderr[-3000:]
    assert (tmp_path / "run" / "checkpoints").is_dir() and not (tmp_path / "run" / "run.lock").exists()
    assert command([*argv, "--resume_from_checkpoint", "latest"], torchrun="accelerate").returncode == 0


@pytest.mark.slow
def test_torchrun_a_signal_before_the_first_update_leaves_no_folder(tmp_path):
    proc = command(["train-gan", *TRAIN, "--output_dir", str(tmp_path / "run")], "build:SIGTERM", torchrun=True)
    # Each worker exits 143 with one line; torchrun reports a failed child (ChildFailedError, exit 1).
    assert proc.returncode != 0 and "exitcode  : 143" in proc.stderr, proc.stderr[-3000:]
    assert not traceback_lines_of_ours(proc), proc.stderr[-3000:]
    assert proc.stderr.count("SIGTERM received: stopped before the first update") >= 1, proc.stderr[-3000:]
    assert not (tmp_path / "run").exists()
