"""The run folder under concurrent runs, overwrites, changed settings on resume and full disks."""

import errno
import json
import logging
import math
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from accelerate import Accelerator
from safetensors import SafetensorError

from gan_accel.loop.metrics_log import ExplosionCheck, MetricsLogger
from helpers import read_jsonl
from run_fixtures import BASE_FLAGS, LockHolder, copy_run, run_gan, snapshot, train_gan, user_error


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("base") / "run"
    assert run_gan(out) == 0
    return out


def test_lock_is_released_after_a_run_and_a_stale_lock_is_taken_over(base_run, tmp_path, caplog):
    assert not (base_run / "run.lock").exists()  # released at the end of the run
    run = copy_run(base_run, tmp_path / "run")
    holder = LockHolder(run)
    holder.kill()  # SIGKILL: its lock file stays, naming a process that is gone
    assert (run / "run.lock").read_text().split()[1] == str(holder.pid)
    with caplog.at_level(logging.WARNING):
        assert run_gan(run, "--resume_from_checkpoint", "latest", "--max_steps", "5") == 0
    assert "taking over a stale lock of a run that is gone (host" in caplog.text and f"pid {holder.pid}" in caplog.text
    assert read_jsonl(run / "metrics.jsonl")[-1]["step"] == 5 and not (run / "run.lock").exists()


def test_latest_without_a_checkpoint_starts_fresh_with_the_old_lines_set_aside(base_run, tmp_path, capsys):
    # A re-queued job whose first attempt died before its first checkpoint: "latest" finds none and
    # starts fresh; the old attempt's lines used to stay in front of the new run's steps 1, 2, ...
    run = copy_run(base_run, tmp_path / "run")
    shutil.rmtree(run / "checkpoints")
    before = read_jsonl(run / "metrics.jsonl")
    capsys.readouterr()
    assert run_gan(run, "--resume_from_checkpoint", "latest") == 0
    out = capsys.readouterr().out
    assert "no complete checkpoint" in out and f"{len(before)} lines logged after step 0" in out
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2, 3, 4]
    assert read_jsonl(run / "metrics.jsonl.dropped") == before


def test_resuming_an_older_checkpoint_sets_the_abandoned_branch_aside(base_run, tmp_path, capsys):
    """--resume_from_checkpoint step_2 of a run that reached step 4 starts a new branch: 'latest'
    resumed the abandoned step_4, metrics.jsonl and samples/ mixed both branches, and the old
    branch's exports stood beside the new one's. They are renamed NAME.dropped, never deleted."""
    run = copy_run(base_run, tmp_path / "run")
    old_lines = read_jsonl(run / "metrics.jsonl")[2:]
    capsys.readouterr()
    branch = ["--resume_from_checkpoint", str(run / "checkpoints" / "step_00000002"), "--max_steps", "3"]
    assert run_gan(run, *branch) == 0
    out = capsys.readouterr().out
    assert "a new branch from step 2" in out and "checkpoints/ step_00000004" in out, out
    assert (run / "checkpoints" / "step_00000004.dropped").is_dir()
    assert (run / "samples" / "step_000004.png.dropped").is_file()  # the abandoned branch's final grid
    assert (run / "generator.dropped" / "model.safetensors").is_file()
    assert read_jsonl(run / "metrics.jsonl.dropped") == old_lines
    assert run_gan(run, "--resume_from_checkpoint", "latest", "--max_steps", "4") == 0
    assert "Resumed from " + str(run / "checkpoints" / "step_00000003") in capsys.readouterr().out
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl") if "loss/D" in r] == [1, 2, 3, 4]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "step_00000003",
        "step_00000004",
        "step_00000004.dropped",
    ]


def test_what_a_branch_sets_aside(tmp_path):
    from gan_accel.loop.rundir import abandoned_after, set_aside

    out = tmp_path
    for name in ("checkpoints/step_00000002", "checkpoints/step_00000006", "checkpoints/step_00000008.dropped"):
        (out / name).mkdir(parents=True)
    (out / "checkpoints/step_00000002/trainer_state.json").write_text("{}")
    for name in ("step_000002.png", "step_000006.png", "training.gif"):
        (out / "samples" / name).parent.mkdir(exist_ok=True)
        (out / "samples" / name).write_bytes(b"png")
    (out / "generator").mkdir()  # the user's export from before the checkpoint: kept
    since = (out / "checkpoints/step_00000002/trainer_state.json").stat().st_mtime_ns
    os.utime(out / "generator", ns=(since - 10**9, since - 10**9))
    (out / "best_generator").mkdir()
    os.utime(out / "best_generator", ns=(since + 10**9, since + 10**9))  # reached after step 2
    later = abandoned_after(out, 2, since, ["generator", "best_generator"])
    assert [p.relative_to(out).as_posix() for p in later] == [
        "checkpoints/step_00000006",
        "samples/step_000006.png",
        "best_generator",
    ]
    assert set_aside(out / "checkpoints/step_00000006").name == "step_00000006.dropped"
    (out / "checkpoints/step_00000006").mkdir()  # a second abandoned branch
    assert set_aside(out / "checkpoints/step_00000006").name == "step_00000006.dropped2"


def test_a_best_generator_of_the_kept_branch_is_not_set_aside(tmp_path):
    """best_generator/ reached at the checkpoint's own step is written just after that checkpoint
    (evaluations follow it): its recorded step, not its date, says it belongs to the kept branch.
    Set aside, it was gone for good when nothing was left to train (no evaluation recreates it)."""
    import json

    from gan_accel.loop.rundir import abandoned_after

    checkpoint = tmp_path / "checkpoints/step_00000004"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text("{}")
    since = (checkpoint / "trainer_state.json").stat().st_mtime_ns
    for reached, abandoned in ((4, False), (3, False), (6, True)):
        best = tmp_path / "best_generator"
        best.mkdir(exist_ok=True)
        (best / "score.json").write_text(json.dumps({"metric": "eval/fid", "value": 9.0, "step": reached}))
        os.utime(best, ns=(since + 10**9, since + 10**9))  # written after the checkpoint
        later = abandoned_after(tmp_path, 4, since, ["best_generator"])
        assert (best in later) is abandoned, reached


def test_second_run_on_a_folder_in_use_is_refused_and_first_is_untouched(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    holder = LockHolder(run)
    try:
        line = user_error(
            train_gan,
            [
                "--output_dir",
                str(run),
                "--max_steps",
                "2",
                "--dataset",
                "digits",
                "--image_size",
                "16",
                "--z_dim",
                "8",
            ],
            capsys,
        )
    finally:
        holder.kill()
    assert f"--output_dir {run}: in use by another run" in line and f"pid {holder.pid}" in line
    assert sorted(p.name for p in run.iterdir()) == ["run.lock"]  # no config.json written


def test_overwrite_removes_only_what_a_run_writes(base_run, tmp_path, capsys):
    run = copy_run(base_run, tmp_path / "run")
    (run / "notes.txt").write_text("my notes")
    (run / "png").mkdir()
    (run / "png" / "0.png").write_bytes(b"img")
    (run / "grid.png").write_bytes(b"grid")
    (run / "eval").mkdir()
    mine = {k: v for k, v in snapshot(run).items() if k.split("/")[0] in ("notes.txt", "png", "eval", "grid.png")}
    assert run_gan(run, "--overwrite_output_dir", "--max_steps", "2", "--checkpointing_steps", "0") == 0
    after = snapshot(run)
    assert {k: v for k, v in after.items() if k in mine} == mine
    assert "kept eval, grid.png, notes.txt, png" in capsys.readouterr().out
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_00000002"]  # the old run's are gone
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2]


def test_learning_rates_may_change_on_resume_and_take_effect(base_run, tmp_path, capsys):
    run = copy_run(base_run, tmp_path / "run")
    assert (
        run_gan(
            run,
            "--resume_from_checkpoint",
            str(run / "checkpoints/step_00000002"),
            "--lr_g",
            "1e-5",
            "--adam_beta2",
            "0.99",
        )
        == 0
    )
    assert (
        "resuming with changed settings (--adam_beta2 0.999 -> 0.99; --lr_g 0.0002 -> 1e-05)"
        in capsys.readouterr().out
    )
    resumed = [r for r in read_jsonl(run / "metrics.jsonl") if r["step"] > 2][-2:]
    assert [r["lr/G"] for r in resumed] == [1e-5, 1e-5] and [r["lr/D"] for r in resumed] == [2e-4, 2e-4]
    saved = json.loads((run / "checkpoints/step_00000004/trainer_state.json").read_text())
    assert saved["config"]["lr_g"] == 1e-5 and saved["project"] == "gan"


def test_full_disk_at_a_checkpoint_is_one_line_and_leaves_no_partial_folder(base_run, tmp_path, capsys, monkeypatch):
    run = copy_run(base_run, tmp_path / "run")

    def full_disk_save(self, output_dir, **kwargs):
        (Path(output_dir) / "model.safetensors").write_bytes(b"x" * 1000)  # a partial file, then the failure
        # what torch.save's zip writer raises on ENOSPC
        raise RuntimeError(
            "[enforce fail at inline_container.cc:626] . PytorchStreamWriter failed writing file "
            f"data/0: file write failed ({errno.errorcode[errno.ENOSPC]})"
        )

    monkeypatch.setattr(Accelerator, "save_state", full_disk_save)
    line = user_error(
        train_gan,
        [*BASE_FLAGS, "--output_dir", str(run), "--resume_from_checkpoint", "latest", "--max_steps", "6"],
        capsys,
        bar="gan",
    )
    assert "could not write checkpoint" in line and "step_00000006" in line and "PytorchStreamWriter" in line
    assert f"the previous checkpoint {run}/checkpoints/step_00000004 is kept" in line
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_00000002", "step_00000004"]
    assert not (run / "run.lock").exists()  # released on the error: the next run may start


# What safetensors raises on a full disk: its own error type, neither OSError nor RuntimeError.
SAFETENSORS_FULL = "Error while serializing: I/O error: No space left on device (os error 28)"


def resume_to_step_6(run, capsys) -> str:
    """Resume the copied run (checkpoints at steps 2 and 4) to step 6, expecting one error line."""
    argv = [*BASE_FLAGS, "--output_dir", str(run), "--resume_from_checkpoint", "latest", "--max_steps", "6"]
    return user_error(train_gan, argv, capsys, bar="gan")


def safetensors_full_disk(tensors, filename, metadata=None):
    Path(filename).write_bytes(b"x" * 100)  # a partial file, then the failure
    raise SafetensorError(SAFETENSORS_FULL)


def test_full_disk_in_safetensors_at_a_checkpoint_is_one_line(base_run, tmp_path, capsys, monkeypatch):
    """The weights' writer fails (before: a SafetensorError traceback and an empty .tmp-step_6/)."""
    import accelerate.utils.other

    run = copy_run(base_run, tmp_path / "run")
    monkeypatch.setattr(accelerate.utils.other, "safe_save_file", safetensors_full_disk)
    before = snapshot(run / "checkpoints")
    line = resume_to_step_6(run, capsys)
    assert f"could not write checkpoint {run}/checkpoints/step_00000006 ({SAFETENSORS_FULL})" in line
    assert f"the previous checkpoint {run}/checkpoints/step_00000004 is kept" in line
    assert snapshot(run / "checkpoints") == before  # no .tmp-step_00000006, the others untouched
    assert not (run / "run.lock").exists()


def test_full_disk_at_the_export_is_one_line_and_keeps_the_previous_export(base_run, tmp_path, capsys, monkeypatch):
    import safetensors.torch

    run = copy_run(base_run, tmp_path / "run")
    # The checkpoints' writer (bound inside Accelerate) still works; the export's does not.
    monkeypatch.setattr(safetensors.torch, "save_file", safetensors_full_disk)
    before = snapshot(run / "generator")
    line = resume_to_step_6(run, capsys)
    assert f"could not write export {run}/generator ({SAFETENSORS_FULL}); the previous generator is kept" in line
    assert snapshot(run / "generator") == before
    assert not [p.name for p in run.iterdir() if p.name.startswith((".tmp-", ".old-"))]
    assert (run / "checkpoints" / "step_00000006").is_dir()  # the training is not lost
    assert not (run / "run.lock").exists()


def test_non_finite_values_are_null_in_json(base_run):
    state = json.loads((base_run / "checkpoints/step_00000004/trainer_state.json").read_text())
    assert state["state"]["best_metric"] is None  # valid JSON: no bare NaN


def test_metrics_jsonl_writes_null_and_warns_of_a_loss_explosion(tmp_path):
    acc = SimpleNamespace(is_main_process=True, is_local_main_process=False, log=lambda *a, **k: None)
    logger = MetricsLogger(
        acc, tmp_path, total_steps=10, initial_step=0, log_every=1, explosion_factor=1e3, explosion_window=5
    )
    for step, loss in enumerate([1.0, 1.2, 0.9, 1.1, 5e3, 2e4, 1.0, float("nan")], start=1):
        logger.write(step, {"loss/D": loss, "loss/G": 0.7})
    records = read_jsonl(tmp_path / "metrics.jsonl")
    warned = [r["step"] for r in records if "warning/loss_explosion" in r]
    assert warned == [5, 6]  # 5e3 > 1e3 x median 1.05; 2e4 > 1e3 x median 1.1 (the median resists one spike)
    assert "loss/D = 5e+03 is" in records[4]["warning/loss_explosion"]
    assert records[-1]["loss/D"] is None and records[-1]["loss/G"] == 0.7


def test_every_line_has_its_wall_clock_time_and_a_resumed_run_continues_it(tmp_path, monkeypatch):
    import gan_accel.loop.metrics_log as metrics_log

    acc = SimpleNamespace(is_main_process=True, is_local_main_process=False, log=lambda *a, **k: None)
    now = {"t": 100.0}
    monkeypatch.setattr(metrics_log.time, "perf_counter", lambda: now["t"])
    monkeypatch.setattr(metrics_log, "process_age_s", lambda: 5.0)  # imports and set-up before the logger
    first = MetricsLogger(acc, tmp_path, total_steps=10, initial_step=0, log_every=1)
    for step in (1, 2):
        now["t"] += 10.0
        first.write(step, {"loss/D": 1.0})
    with (tmp_path / "metrics.jsonl").open("a") as f:
        f.write('{"step": 2, "note": "a line without a time"}\n')
    assert metrics_log.last_logged_time(tmp_path / "metrics.jsonl") == 25.0
    resumed = MetricsLogger(acc, tmp_path, total_steps=10, initial_step=2, log_every=1)
    now["t"] += 1.0
    resumed.write(3, {"loss/D": 1.0})
    times = [r.get("time_s") for r in read_jsonl(tmp_path / "metrics.jsonl") if "time_s" in r]
    assert times == [15.0, 25.0, 31.0]  # 25 s before, then 5 s of start-up and 1 s of training
    assert metrics_log.last_logged_time(tmp_path / "missing.jsonl") == 0.0


def test_the_bar_of_a_length_not_yet_planned_counts_without_a_total():
    from gan_accel.loop.budget import UNPLANNED_STEPS

    acc = SimpleNamespace(is_main_process=True, is_local_main_process=True, log=lambda *a, **k: None)
    assert MetricsLogger(acc, ".", total_steps=UNPLANNED_STEPS, initial_step=0, log_every=1).bar.total is None
    assert MetricsLogger(acc, ".", total_steps=300, initial_step=0, log_every=1).bar.total == 300


def test_explosion_check_ignores_losses_near_zero_and_can_be_off():
    near_zero = ExplosionCheck(1e3, 20)
    assert not any(near_zero.check({"loss/D": v}) for v in [1e-6, -2e-6, 1e-6, 0.5])  # floor 1e-3: 0.5 < 1
    off = ExplosionCheck(0.0, 20)
    assert not any(off.check({"loss/D": v}) for v in [1.0, 1.0, 1.0, 1e9])
    assert math.isfinite(ExplosionCheck.FLOOR)


def test_a_metrics_file_that_cannot_be_written_warns_once_and_the_run_goes_on(tmp_path, capsys):
    acc = SimpleNamespace(is_main_process=True, is_local_main_process=False, log=lambda *a, **k: None)
    logger = MetricsLogger(acc, tmp_path, total_steps=10, initial_step=0, log_every=1)
    (tmp_path / "metrics.jsonl").mkdir()  # appending fails (as on a full or read-only disk)
    logger.write(1, {"loss/D": 1.0})
    logger.write(2, {"loss/D": 0.9})
    out = capsys.readouterr()
    assert (out.out + out.err).count("could not append to") == 1
    assert logger.write_failed


def test_tqdm_disable_hides_the_training_bar(monkeypatch):
    acc = SimpleNamespace(is_main_process=True, is_local_main_process=True, log=lambda *a, **k: None)
    assert not MetricsLogger(acc, ".", total_steps=3, initial_step=0, log_every=1).bar.disable
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert MetricsLogger(acc, ".", total_steps=3, initial_step=0, log_every=1).bar.disable
