"""Reliability: signals, SIGKILL during saves, failed writes, non-finite steps, resume checks."""

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch
from accelerate import Accelerator

from gan_accel import interrupt
from gan_accel.gan import step as gan_step
from gan_accel.loop.checkpoint import CheckpointManager
from gan_accel.loop.guard import NonFiniteError
from gan_accel.loop.signals import GracefulStop
from helpers import ROOT, TINY_GAN, load_script, read_jsonl
from test_gan_train import tensors_of, trainer

train_gan = load_script("train_gan").main


def start_training(out, *extra):
    # The same intra-op thread count as the in-process runs it is compared with: CPU kernels sum
    # in a thread-count-dependent order, so bit-identity needs equal thread counts.
    threads = str(torch.get_num_threads())
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "train_gan.py"),
        *TINY_GAN,
        "--output_dir",
        str(out),
        "--log_every",
        "1",
        *extra,
    ]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_step(proc, metrics, step, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= step:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("training did not reach the step in time")


# A decaying schedule: a signal must not change it (unlike a shorter --max_steps).
SIGNAL_FLAGS = ["--max_steps", "400", "--lr_scheduler", "linear", "--checkpointing_steps", "0", "--batch_size", "16"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The weights at step 400 of the run the signal tests interrupt, trained without a stop."""
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    assert train_gan([*TINY_GAN, *SIGNAL_FLAGS, "--output_dir", str(out)]) == 0
    return tensors_of(out / "checkpoints" / "step_00000400")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_checkpoints_and_resume_is_exact(tmp_path, sig, uninterrupted):
    run = tmp_path / "run"
    proc = start_training(run, *SIGNAL_FLAGS)
    wait_for_step(proc, run / "metrics.jsonl", 5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    # As a shell reports a process a signal ended (130, 143): `train && sample` samples no unfinished run.
    assert proc.returncode == 128 + sig, err[-2000:]
    assert "finishing this step, saving a checkpoint" in err
    assert f"exit code {128 + sig}: continue with --resume_from_checkpoint latest" in out
    ckpts = sorted((run / "checkpoints").iterdir())
    assert len(ckpts) == 1
    stopped_at = json.loads((ckpts[0] / "trainer_state.json").read_text())["state"]["step"]
    assert 5 <= stopped_at < 400
    assert not (run / "generator").exists()  # no export of an unfinished run

    assert train_gan([*TINY_GAN, *SIGNAL_FLAGS, "--output_dir", str(run), "--resume_from_checkpoint", "latest"]) == 0
    a, b = uninterrupted, tensors_of(run / "checkpoints" / "step_00000400")
    assert all(torch.equal(a[k], b[k]) for k in a), [k for k in a if not torch.equal(a[k], b[k])][:8]


def test_run_summary_after_a_signal_names_only_what_exists(tmp_path):
    run = tmp_path / "run"
    proc = start_training(run, "--max_steps", "100000", "--checkpointing_steps", "0")
    wait_for_step(proc, run / "metrics.jsonl", 2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    summary = [line for line in out.splitlines() if line.startswith("Run folder:")]
    assert summary == [f"Run folder: {run}"]  # no generator/ (not exported) and no samples/ (none written)
    assert not (run / "generator").exists()


def test_finite_divergence_stops_without_exporting(tmp_path, capsys):
    # Learning rates of 1e10 keep the losses finite (~1e19) but D's BatchNorm running variance
    # overflows: the run must stop with one line and export nothing, not end with rc 0.
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        train_gan([*TINY_GAN, "--output_dir", str(out), "--max_steps", "4", "--lr_g", "1e10", "--lr_d", "1e10"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: weights became non-finite at step 4")
    assert not (out / "generator").exists() and not (out / "checkpoints").exists()


def test_second_signal_exits_at_once(monkeypatch):
    exits = []
    monkeypatch.setattr(os, "_exit", lambda code: exits.append(code))
    clock = [0.0]
    monkeypatch.setattr(interrupt.time, "monotonic", lambda: clock[0])
    with GracefulStop() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.should_stop() and not exits
        clock[0] += interrupt.SAME_STOP_WINDOW_S  # sooner, it is the same stop (tests/test_signals.py)
        os.kill(os.getpid(), signal.SIGTERM)
        assert exits == [128 + signal.SIGTERM]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored


def test_sigkill_during_saves_leaves_a_loadable_checkpoint(tmp_path):
    rng = random.Random(0)
    run = tmp_path / "run"
    flags = ["--max_steps", "100000", "--checkpointing_steps", "1", "--checkpoints_total_limit", "2"]
    for attempt in range(3):
        resume = ["--resume_from_checkpoint", "latest"] if attempt else []
        proc = start_training(run, *flags, *resume)
        wait_for_step(proc, run / "metrics.jsonl", 3 + 3 * attempt)
        time.sleep(rng.uniform(0.0, 0.3))  # saves happen every step: kill lands mid-save often
        proc.kill()
        proc.wait()
        manager = CheckpointManager(Accelerator(cpu=True), run, 2)
        latest = manager.latest()
        # A kill between the rename and the pruning leaves one extra complete checkpoint; the
        # next save prunes it.
        assert latest is not None and len(manager.complete_checkpoints()) <= 3
        state = json.loads((latest / "trainer_state.json").read_text())
        assert state["state"]["step"] == int(latest.name.split("_")[1])
    # The newest complete checkpoint resumes and trains on.
    assert (
        train_gan(
            [
                *TINY_GAN,
                "--output_dir",
                str(run),
                "--max_steps",
                str(state["state"]["step"] + 2),
                "--checkpointing_steps",
                "1",
                "--resume_from_checkpoint",
                "latest",
            ]
        )
        == 0
    )


def test_latest_ignores_incomplete_folders(tmp_path):
    root = tmp_path / "checkpoints"
    for name, complete in [
        ("step_00000002", True),
        ("step_00000004", True),
        (".tmp-step_00000006", True),
        ("step_00000008", False),
    ]:
        (root / name).mkdir(parents=True)
        if complete:
            (root / name / "trainer_state.json").write_text("{}")
    manager = CheckpointManager(Accelerator(cpu=True), tmp_path, total_limit=1)
    assert manager.latest() == root / "step_00000004"
    manager._prune()
    assert sorted(p.name for p in root.iterdir()) == [".tmp-step_00000006", "step_00000004", "step_00000008"]


def test_failed_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    t = trainer(tmp_path / "run", 2)
    t.train()
    before = tensors_of(tmp_path / "run" / "checkpoints" / "step_00000002")

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(t.run.accelerator, "save_state", disk_full)
    t.run.state.step = 3
    with pytest.raises(Exception, match=r"could not write checkpoint .*No space left.*step_00000002 is kept"):
        t.engine.save_checkpoint()
    names = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert names == ["step_00000002"]
    after = tensors_of(tmp_path / "run" / "checkpoints" / "step_00000002")
    assert all(torch.equal(before[k], after[k]) for k in before)


def nan_loss_after(calls_ok, calls_nan=None):
    """A D loss that is NaN on calls [calls_ok, calls_ok + calls_nan) (forever when None)."""
    real_loss = gan_step.D_LOSSES["nonsaturating"]
    count = {"n": 0}

    def loss(real_logits, fake_logits):
        n = count["n"]
        count["n"] += 1
        value = real_loss(real_logits, fake_logits)
        if n >= calls_ok and (calls_nan is None or n < calls_ok + calls_nan):
            return value * float("nan")
        return value

    return loss


def test_transient_nonfinite_steps_are_skipped_and_counted(tmp_path, monkeypatch):
    monkeypatch.setitem(gan_step.D_LOSSES, "nonsaturating", nan_loss_after(3, 2))
    t = trainer(tmp_path / "run", 8, max_nonfinite_steps=3)
    t.train()
    assert t.run.state.step == 8 and t.run.state.nonfinite_total == 2
    records = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert max(r.get("nonfinite/skipped_total", 0) for r in records) == 2
    assert all(torch.isfinite(p).all() for p in t.engine.nets.D.parameters())


def test_persistent_nonfinite_stops_and_keeps_last_finite_checkpoint(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(gan_step.D_LOSSES, "nonsaturating", nan_loss_after(5))
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        train_gan(
            [
                *TINY_GAN,
                "--output_dir",
                str(out),
                "--max_steps",
                "50",
                "--checkpointing_steps",
                "2",
                "--max_nonfinite_steps",
                "3",
            ]
        )
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: 3 consecutive updates had non-finite gradients")
    names = sorted(p.name for p in (out / "checkpoints").iterdir())
    # D's loss is NaN from update 6 on: updates 6, 7, 8 are skipped (weights stay finite, so the
    # step-6 checkpoint is legitimate) and the third one in a row stops the run before step 8 saves.
    assert names[-1] == "step_00000006"
    for v in tensors_of(out / "checkpoints" / names[-1]).values():
        assert torch.isfinite(v.float()).all()


def test_never_checkpoints_nonfinite_weights(tmp_path):
    t = trainer(tmp_path / "run", 2)
    t.train()
    with torch.no_grad():
        next(t.engine.nets.G.parameters()).view(-1)[0] = float("inf")
    t.run.state.step = 3
    with pytest.raises(NonFiniteError, match="non-finite"):
        t.engine.save_checkpoint()
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir()) == ["step_00000002"]


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("short") / "run"
    assert train_gan([*TINY_GAN, "--output_dir", str(out), "--max_steps", "2"]) == 0
    return out


@pytest.mark.parametrize(
    "flags,match",
    [
        (["--g_channels", "16"], r"different settings \(--g_channels 8 -> 16\)"),
        (["--loss", "hinge", "--batch_size", "8"], r"--batch_size 32 -> 8; --loss 'nonsaturating' -> 'hinge'"),
    ],
)
def test_resume_with_incompatible_flags_is_refused(short_run, flags, match, capsys):
    with pytest.raises(SystemExit):
        train_gan(
            [
                *TINY_GAN,
                "--output_dir",
                str(short_run),
                "--max_steps",
                "4",
                "--resume_from_checkpoint",
                "latest",
                *flags,
            ]
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and __import__("re").search(match, err[0]), err


def test_resume_with_safe_flag_changes_continues(short_run):
    assert (
        train_gan(
            [
                *TINY_GAN,
                "--output_dir",
                str(short_run),
                "--max_steps",
                "3",
                "--log_every",
                "3",
                "--resume_from_checkpoint",
                "latest",
            ]
        )
        == 0
    )
    assert (short_run / "checkpoints" / "step_00000003").is_dir()


@pytest.mark.parametrize(
    "target,match",
    [
        ("missing", "no such folder"),
        ("foreign", "not a complete gan_accel checkpoint"),
        ("a file", "is a file, not a checkpoint folder"),
    ],
)
def test_resume_from_missing_or_foreign_folder(tmp_path, target, match, capsys):
    path = tmp_path / target
    if target == "foreign":
        path.mkdir()
        (path / "model.safetensors").write_text("not ours")
    if target == "a file":
        path.write_text("a file, not a folder")
    with pytest.raises(SystemExit) as info:
        train_gan(
            [
                *TINY_GAN,
                "--output_dir",
                str(tmp_path / "run"),
                "--max_steps",
                "2",
                "--resume_from_checkpoint",
                str(path),
            ]
        )
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and match in err[0] and str(path) in err[0]


def test_sigkill_past_a_checkpoint_then_resume_logs_each_step_once(tmp_path):
    run = tmp_path / "run"
    flags = ["--checkpointing_steps", "10", "--checkpoints_total_limit", "1"]
    proc = start_training(run, "--max_steps", "100000", *flags)
    wait_for_step(proc, run / "metrics.jsonl", 15)  # a checkpoint at step 10, then 5 more logged steps at least
    proc.kill()
    proc.wait()
    saved = CheckpointManager(Accelerator(cpu=True), run, 1).latest()
    step = int(saved.name.split("_")[1])
    logged_before = [r["step"] for r in read_jsonl(run / "metrics.jsonl")]
    assert max(logged_before) > step  # the kill came after more steps were logged
    assert (
        train_gan(
            [
                *TINY_GAN,
                "--output_dir",
                str(run),
                "--log_every",
                "1",
                "--max_steps",
                str(step + 5),
                *flags,
                "--resume_from_checkpoint",
                "latest",
            ]
        )
        == 0
    )
    steps = [r["step"] for r in read_jsonl(run / "metrics.jsonl") if any(k.startswith("loss/") for k in r)]
    assert steps == list(range(1, step + 6))
    dropped = [r["step"] for r in read_jsonl(run / "metrics.jsonl.dropped")]
    assert dropped == [s for s in logged_before if s > step]


def test_drop_lines_after_keeps_the_file_whole_and_the_dropped_lines_aside(tmp_path):
    from gan_accel.loop.metrics_log import drop_lines_after

    path = tmp_path / "metrics.jsonl"
    lines = [
        b'{"step": 1, "loss/D": 1.0}\n',
        b"not json \xff\n",
        b'{"step": 2, "eval/fid": 3.0}\n',
        b'{"step": 3, "loss/D": 1.0}\n',
        b'{"step": 4, "loss/D": 1.0}\n',
        b'{"step": 5, "lo',
    ]  # torn last line
    path.write_bytes(b"".join(lines))
    assert drop_lines_after(path, 2) == 3
    assert path.read_bytes() == b"".join(lines[:3])  # a line that is not a record stays for readers to skip
    assert (tmp_path / "metrics.jsonl.dropped").read_bytes() == b"".join(lines[3:]) + b"\n"
    assert drop_lines_after(path, 2) == 0 and drop_lines_after(tmp_path / "none.jsonl", 0) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.jsonl", "metrics.jsonl.dropped"]
