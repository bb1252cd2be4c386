"""--time_budget: durations, the plan's arithmetic, and whole runs on a simulated clock (a real
clock under a shared machine's load would make a timing assertion flaky; the simulated one makes
every step cost the same, so "ends within 10% of the budget" is exact and still exercises the
measuring, planning, re-planning and resume code of a real run)."""

import json
import re

import pytest
from safetensors.torch import load_file, save_file

import gan_accel.loop.budget as budget_mod
from gan_accel.engine.optim import curve_factor
from gan_accel.errors import ConfigError
from gan_accel.gan.config import GANTrainArguments
from gan_accel.loop.budget import TimeBudget, parse_duration, planned_steps
from helpers import TINY_GAN, load_script, read_jsonl

train_gan = load_script("train_gan").main


@pytest.mark.parametrize(
    "text,seconds",
    [("15m", 900), ("2h", 7200), ("90s", 90), ("1h30m", 5400), ("1.5h", 5400), ("45", 45), (" 2M ", 120)],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


# 0.5s and 4s: too short to start, plan and export (a 0.5s budget ran 16 times over without a word).
@pytest.mark.parametrize("text", ["", "15x", "m", "-5m", "0s", "15m junk", "0.5s", "4s", "4.9"])
def test_bad_durations_are_refused_naming_the_flag(text):
    with pytest.raises(ConfigError, match="--time_budget"):
        GANTrainArguments(time_budget=text)


def test_the_clock_starts_with_the_process():
    assert 0 < budget_mod.process_age_s() < 24 * 3600  # pytest started before this test
    assert TimeBudget(60.0, clock=lambda: 5.0, already_spent=7.0).elapsed() == 7.0


def test_planned_steps():
    assert planned_steps(100, 10, 50, 0.5, 4) == 50 + 172
    assert planned_steps(100, 99, 50, 0.5, 4) == 50  # nothing left: stop now
    assert planned_steps(100, 10, 50, 0.0, 4) == 50


def test_curve_factor_follows_the_length_it_reads():
    length = {"steps": 100}
    linear = curve_factor("linear", 10, lambda: length["steps"])
    assert linear(5) == 0.5 and linear(10) == 1.0 and linear(55) == pytest.approx(0.5) and linear(100) == 0.0
    length["steps"] = 190
    assert linear(100) == pytest.approx(0.5)
    cosine = curve_factor("cosine", 0, lambda: 10)
    assert cosine(0) == 1.0 and cosine(5) == pytest.approx(0.5) and cosine(10) == pytest.approx(0.0)
    assert curve_factor("constant", 2, lambda: 1)(1) == 0.5 and curve_factor("constant", 2, lambda: 1)(50) == 1.0


@pytest.mark.parametrize("kind,ratio", [("linear", 1), ("cosine", 2), ("constant", 2)])
def test_a_schedule_with_a_length_callable_follows_the_fixed_curve(kind, ratio):
    """The seam a budget uses (LRSchedule.length): with a length that does not change, the same
    rates as transformers' curve of that length, stretched alike for an optimizer updating
    ``ratio`` times per run step."""
    import torch

    from gan_accel.engine import LRSchedule, build_scheduler

    def rates(schedule):
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
        sched = build_scheduler(schedule.scaled(ratio), opt, num_processes=1)
        out = []
        for _ in range(10 * ratio):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr()[0])
        return out

    fixed = rates(LRSchedule(kind, 2, 10))
    planned = rates(LRSchedule(kind, 2, 0, length=lambda: 10))
    assert planned == pytest.approx(fixed, abs=1e-12) and fixed[-1] == (1.0 if kind == "constant" else 0.0)


def simulate(budget_s, step_s, end_s, budget=None, start_step=0, stop_at=None):
    """A loop on a simulated clock: ``step_s`` per update; returns (budget, last step, time at the end)."""
    now = {"t": 0.0}
    budget = budget or TimeBudget(budget_s, clock=lambda: now["t"], already_spent=0.0)
    step = start_step
    while step < budget.max_steps and step != stop_at:
        now["t"] += step_s
        step += 1
        budget.check(step)
    return budget, step, budget.elapsed() + end_s


@pytest.mark.parametrize("step_s", [0.001, 0.05, 1.0])
def test_a_simulated_run_ends_inside_its_budget(step_s):
    budget, step, total = simulate(60.0, step_s, end_s=1.0)
    assert 0.9 * 60 <= total <= 60, (step, total)


def test_replanning_follows_a_slowdown():
    now = {"t": 0.0}
    budget = TimeBudget(100.0, clock=lambda: now["t"], already_spent=0.0)
    step = 0
    while step < budget.max_steps:
        now["t"] += 0.1 if now["t"] < 30 else 0.3  # the machine gets 3x busier a third of the way in
        step += 1
        budget.check(step)
    assert 90 <= budget.elapsed() <= 100


def test_evaluations_are_planned_apart_from_the_pace():
    """Three 5 s evaluations spread over the planned length (as RunExtras sizes them), each worth 10
    updates: the run still ends inside its budget, with the evaluations' time counted apart from
    the pace (future_cost_s, end_cost_s) rather than in it."""
    now = {"t": 0.0}
    budget = TimeBudget(100.0, clock=lambda: now["t"], already_spent=0.0)
    step, evals = 0, 0
    while step < budget.max_steps:
        now["t"] += 0.5  # slow updates: an evaluation is worth 10 of them
        step += 1
        every = max(1, budget.max_steps // 3)
        if step % every == 0 or step == budget.max_steps:
            now["t"] += 5.0
            budget.hook_s += 5.0
            budget.end_cost_s = 1.5 * 5.0
            evals += 1
        budget.future_cost_s = 5.0 * max(0, (budget.max_steps - 1) // every - step // every)
        budget.check(step)
    assert 90 <= budget.elapsed() <= 100 and evals >= 3, (step, budget.elapsed(), evals)


def test_the_elapsed_time_survives_a_resume():
    budget, step, _ = simulate(60.0, 0.1, 0.0, stop_at=200)
    state = budget.state_dict()
    assert float(state["elapsed_s"]) == pytest.approx(20.0)
    now = {"t": 1000.0}
    resumed = TimeBudget(60.0, clock=lambda: now["t"], already_spent=0.0)
    resumed.load_state_dict(state)
    assert resumed.elapsed() == pytest.approx(20.0)
    while step < resumed.max_steps:
        now["t"] += 0.1
        step += 1
        resumed.check(step)
    assert 54 <= resumed.elapsed() <= 60  # the total, not 60 s more


TICK = 0.1  # simulated seconds per clock reading


@pytest.fixture
def simulated_clock(monkeypatch):
    now = {"t": 0.0}

    def clock():
        now["t"] += TICK
        return now["t"]

    monkeypatch.setattr(budget_mod, "monotonic", clock)
    monkeypatch.setattr(budget_mod, "process_age_s", lambda: 0.0)  # the test process's age is not simulated
    return now


def budget_run(out, *extra):
    argv = [
        *TINY_GAN,
        "--output_dir",
        str(out),
        "--time_budget",
        "40s",
        "--lr_scheduler",
        "linear",
        "--log_every",
        "10",
        "--checkpointing_steps",
        "0",
        *extra,
    ]
    assert train_gan(argv) == 0
    final = sorted((out / "checkpoints").iterdir())[-1]
    return final, float(load_file(str(final / "budget.safetensors"))["elapsed_s"])


def test_a_budgeted_run_ends_within_10_percent_of_its_budget(tmp_path, simulated_clock, capsys, monkeypatch):
    import gan_accel.loop.run as run_mod

    # What config.json says at each plan, and the progress bar's length from the start
    recorded, bars = [], []
    real_record = run_mod.TrainingRun.record_config
    monkeypatch.setattr(
        run_mod.TrainingRun,
        "record_config",
        lambda self, **changes: (
            real_record(self, **changes),
            recorded.append(json.loads((self.output_dir / "config.json").read_text())["max_steps"]),
            bars.append(self.logger.bar.total),
        ),
    )
    real_logger = run_mod.TrainingRun.make_logger
    monkeypatch.setattr(
        run_mod.TrainingRun,
        "make_logger",
        lambda self, *a, **kw: bars.append(real_logger(self, *a, **kw).bar.total) or self.logger,
    )
    final, elapsed = budget_run(tmp_path / "run")
    assert 36.0 <= elapsed <= 40.0, elapsed
    state = json.loads((final / "trainer_state.json").read_text())["state"]
    assert state["step"] > 50  # it trained for its budget, not --max_steps' 2000
    records = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert records[-1]["step"] == state["step"] and records[-1]["lr/G"] == 0.0  # the schedule ends with the run
    assert "--time_budget 40s" in capsys.readouterr().out
    assert (tmp_path / "run" / "generator" / "model.safetensors").is_file()
    # The bar counts without a total until the first plan (not to 1,000,000,000), then shows each
    # plan; config.json says each plan, and the length the run trained for at the end (not 2000).
    assert bars[0] is None and bars[1:] == recorded and len(recorded) >= 2
    assert recorded[-1] == state["step"] == json.loads((tmp_path / "run" / "config.json").read_text())["max_steps"]
    assert json.loads((final / "trainer_state.json").read_text())["config"]["max_steps"] == state["step"]


def test_a_resumed_budgeted_run_keeps_the_total(tmp_path, simulated_clock, monkeypatch, capsys):
    import gan_accel.loop.run as run_mod

    real_should_stop = run_mod.TrainingRun.should_stop

    def stop_at_40(self):  # as if a SIGTERM came at step 40
        return self.state.step == 40 or real_should_stop(self)

    monkeypatch.setattr(run_mod.TrainingRun, "should_stop", stop_at_40)
    out = tmp_path / "run"
    _, first = budget_run(out)
    assert 0 < first < 40
    monkeypatch.setattr(run_mod.TrainingRun, "should_stop", real_should_stop)
    _, total = budget_run(out, "--resume_from_checkpoint", "latest")
    assert 36.0 <= total <= 40.0, (first, total)
    # The checkpoint's config holds the planned length, this start the default: a length is free
    # to differ on resume, so neither a refusal nor a warning.
    assert "changed settings" not in capsys.readouterr().out


def folder_identity(path):
    """A folder as the file system knows it: rewriting it with the same bytes (an export swapped
    into place) changes its inode and time, which equal file contents cannot show."""
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


@pytest.mark.parametrize("ended_early_s", [0.0, 6.0])
def test_resuming_a_run_whose_budget_is_spent_trains_nothing(tmp_path, simulated_clock, capsys, ended_early_s):
    """ended_early_s: the finished run's last steps went faster than its last plan expected, so it
    ended that much before budget - reserve (a real clock does: 20 s and 40 s budgets resumed
    trained 3 and 15 more steps); the simulated clock's even pace never did."""
    out = tmp_path / "run"
    final, elapsed = budget_run(out)
    if ended_early_s:
        state = load_file(str(final / "budget.safetensors"))
        save_file({**state, "elapsed_s": state["elapsed_s"] - ended_early_s}, str(final / "budget.safetensors"))
    exported = folder_identity(out / "generator")
    capsys.readouterr()
    # The same budget spelled "40" (seconds): a duration, not a changed setting.
    again, _ = budget_run(out, "--resume_from_checkpoint", "latest", "--time_budget", "40")
    assert again == final  # no step past the finished run's (its first plan came after 2% of the budget)
    printed = capsys.readouterr().out
    assert f"already spent by step {final.name.split('_')[-1].lstrip('0')}" in printed
    assert folder_identity(out / "generator") == exported  # not exported again: left as it was
    assert f"Run folder: {out}\n" in printed  # the closing line names no export of this run


def test_a_resumed_budget_keeps_its_plan_and_its_end_cost():
    now = {"t": 0.0}
    first = TimeBudget(40.0, clock=lambda: now["t"], already_spent=0.0)
    first.max_steps, first.end_cost_s = 120, 5.0
    now["t"] = 30.0  # the run ended 10 s before the budget: its pace sped up after the last plan
    state = first.state_dict()
    resumed = TimeBudget(40.0, clock=lambda: now["t"], already_spent=0.0)
    resumed.load_state_dict(state)
    assert resumed.max_steps == 120 and resumed.end_cost_s == 5.0  # the schedule follows the last plan
    assert resumed.spent(120) and not resumed.spent(119)  # step 119: stopped by a signal, 10 s left
    other = TimeBudget(60.0, clock=lambda: now["t"], already_spent=0.0)
    other.load_state_dict(state)  # another budget: the old plan does not bind it
    assert other.max_steps != 120 and not other.spent(120)
    older = TimeBudget(40.0, clock=lambda: now["t"], already_spent=0.0)
    older.load_state_dict({k: v for k, v in state.items() if k in ("budget_s", "elapsed_s")})  # older checkpoint
    assert not older.spent(120) and older.elapsed() == pytest.approx(30.0)


def test_two_processes_plan_the_same_length_with_ada(tmp_path):
    """The ranks' clocks differ; the plan (from the slowest) and ADA's p (from reduced sums) must not,
    or one rank would stop while the other waits in a collective."""
    from test_distributed import torchrun

    out = tmp_path / "ddp"
    proc = torchrun(
        [
            *TINY_GAN,
            "--output_dir",
            str(out),
            "--batch_size",
            "16",
            "--time_budget",
            "8s",
            "--ada",
            "--ada_interval",
            "2",
            "--ada_kimg",
            "1",
            "--ada_target",
            "0.1",
            "--checkpointing_steps",
            "0",
        ]
    )
    assert "processes: 2" in proc.stdout and "planned length" in proc.stdout
    final = sorted((out / "checkpoints").iterdir())[-1]
    state = json.loads((final / "trainer_state.json").read_text())["state"]
    assert state["step"] > 4 and load_file(str(final / "ada.safetensors"))["p"].item() > 0
    assert (out / "generator" / "model.safetensors").is_file()


def test_max_steps_and_a_budget_on_one_command_line_are_one_clear_error(tmp_path, capsys):
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        train_gan([*TINY_GAN, "--output_dir", str(out), "--time_budget", "20s", "--max_steps", "5"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: --max_steps 5 and --time_budget 20s both set the run's length: give one (the budget measures "
        "the pace and sets the steps itself)"
    ]
    assert not out.exists()


def test_a_command_line_length_wins_over_the_config_files(tmp_path, capsys):
    # --max_steps on the command line replaces a config file's budget (and says so): the run is 3
    # steps long, and its config.json records no budget, so a resume does not bring it back.
    config = tmp_path / "budget.yaml"
    config.write_text("time_budget: 15m\n")
    out = tmp_path / "run"
    assert train_gan([*TINY_GAN, "--config", str(config), "--output_dir", str(out), "--max_steps", "3"]) == 0
    assert "--max_steps 3 (your flag) replaces the config file's --time_budget 15m" in capsys.readouterr().out
    assert [p.name for p in (out / "checkpoints").iterdir()] == ["step_00000003"]
    assert json.loads((out / "config.json").read_text())["time_budget"] is None


def test_a_probed_run_trains_the_weights_of_a_run_given_its_precision(tmp_path, simulated_clock, monkeypatch, capsys):
    """The precision probe (gan_accel.gan.precision) trains copies under a forked RNG: a run that
    measured and chose bf16 ends with the weights of a run given --mixed_precision bf16."""
    from benchmarks.common import reset_accelerate
    from gan_accel.gan import precision

    monkeypatch.setattr(precision, "MIN_BUDGET_S", 0.0)  # the test's 40 s budget would not probe
    # the real measurement runs; the decision is forced, so the test does not depend on this CPU
    monkeypatch.setattr(precision, "choose", lambda fp32, bf16: precision.Verdict("bf16", 0.2, 0.1))
    reset_accelerate()  # Accelerate's precision is process-wide: each run builds its own
    try:
        probed, _ = budget_run(tmp_path / "probed", "--measure_precision")
        out = capsys.readouterr().out
        reset_accelerate()
        simulated_clock["t"] = 0.0
        given, _ = budget_run(tmp_path / "given", "--measure_precision", "--mixed_precision", "bf16")
    finally:
        reset_accelerate()
    assert "--mixed_precision bf16: measured on this CPU" in out
    assert "mixed_precision: bf16" in out.split("accelerator.device:")[1]  # the Accelerator was built with it
    assert json.loads((tmp_path / "probed" / "config.json").read_text())["mixed_precision"] == "bf16"
    assert "measured on this CPU" not in capsys.readouterr().out  # the user's choice: no probe
    assert probed.name == given.name  # the same length
    for name in ("model.safetensors", "model_1.safetensors"):
        a, b = load_file(str(probed / name)), load_file(str(given / name))
        assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a), name


# ---- fewer threads on a busy CPU (gan_accel.loop.threads) --------------------------------------
@pytest.mark.parametrize(
    "start,paces,chosen",
    [
        (2, {2: 0.10, 1: 0.16}, 2),  # idle: the one thread is slower, keep both
        (2, {2: 0.94, 1: 0.31}, 1),  # busy, fewer is faster: drop
        (2, {2: 0.40, 1: 0.55}, 2),  # busy, fewer is slower: keep
        (2, {2: 0.40, 1: 0.38}, 2),  # fewer by less than FEWER_MARGIN: keep (jitter)
        (2, {1: 0.30, 2: 0.12}, 2),  # lowered, the machine free again: back up
        (2, {1: 0.30, 2: 0.45}, 1),  # lowered and still busy: stay
        (8, {8: 1.0, 4: 0.5}, 4),
        (2, {4: 0.01, 2: 0.5, 1: 0.6}, 2),  # never above the starting count
        (2, {0: 0.01, 2: 0.5}, 2),  # never below 1
        (2, {2: float("nan"), 1: 0.0}, 2),  # nothing usable: the start
    ],
)
def test_choose_threads(start, paces, chosen):
    from gan_accel.loop.threads import choose_threads

    assert choose_threads(start, paces) == chosen


def test_the_probe_compares_half_and_goes_back_up():
    from gan_accel.loop.threads import other_count, should_probe

    assert [other_count(n, 8) for n in (8, 4, 1)] == [4, 8, 2] and other_count(2, 2) == 1 and other_count(1, 1) == 1
    assert should_probe(2, 2, 0.1, None, 0, 1)  # the first plan
    assert not should_probe(1, 1, 9.0, None, 0, 1)  # one thread: nothing to compare
    assert not should_probe(2, 2, 0.14, 0.1, 1, 1) and should_probe(2, 2, 0.16, 0.1, 1, 1)  # 1.5x slower
    assert should_probe(1, 2, 0.1, 0.1, 1, 1)  # lowered: the machine may be free again
    assert not should_probe(1, 2, 0.1, 0.1, 1, 2) and should_probe(1, 2, 0.1, 0.1, 2, 2)  # backing off


def test_the_probe_times_two_windows_keeps_the_faster_and_restores_the_start():
    from gan_accel.loop.threads import ThreadProbe

    threads, said = [2], []
    probe = ThreadProbe(
        100.0, say=said.append, set_threads=lambda n: threads.append(n), get_threads=lambda: threads[-1]
    )
    probe.plan(10, 5.0, recent_pace=0.5)  # the first plan: a window with 2 threads (1 s, at least 3 updates)
    probe.observe(12, 6.5)  # 2 updates: not yet
    probe.observe(13, 6.5)
    assert threads == [2, 1]  # 3 updates, 1.5 s: 0.5 s each; now 1 thread
    probe.observe(17, 7.3)  # 0.8 s: not yet
    probe.observe(18, 7.5)  # 5 updates, 1 s
    assert threads == [2, 1, 1] and said == [
        "threads: 2 -> 1: 500 ms per update with 2 threads, 200 ms with 1 (the CPU is busy; other processes share its cores)"
    ]
    probe.plan(40, 20.0, recent_pace=0.2)  # lowered: the next plan compares 2 again
    assert probe.window == (1, 40, 20.0)
    probe.observe(45, 21.0)
    assert threads[-1] == 2
    probe.observe(46, 22.0)  # one update with 2 threads took 1 s, 5x the pace of 1: no more of them
    assert threads[-1] == 1 and probe.window is None and len(said) == 1
    probe.plan(60, 30.0, recent_pace=0.2)  # still busy: the next probe waits two plans
    assert probe.window is None
    probe.plan(80, 40.0, recent_pace=0.2)
    assert probe.window == (1, 80, 40.0)
    probe.restore()
    assert threads[-1] == 2 and probe.window is None


def test_a_budgeted_run_on_a_cpu_that_gets_busy_uses_fewer_threads_and_says_so(
    tmp_path, simulated_clock, monkeypatch, capsys
):
    """An update's simulated cost follows torch.get_num_threads(): 2 threads are faster while the
    CPU is idle, 1 thread while other processes share its cores (simulated seconds 10 to 30). The
    run drops to 1 thread in the busy phase, goes back to 2 after it, prints both changes, logs
    sys/threads, and still ends inside its budget."""
    import torch

    from gan_accel.gan import photo_run
    from gan_accel.loop.threads import ThreadProbe

    def cost(threads, t):
        busy = 10 <= t < 30
        return {(2, False): 0.3, (1, False): 0.6, (2, True): 3.0, (1, True): 0.9}[threads, busy]

    real_after_update = photo_run.RunExtras.after_update

    def after_update(self):
        simulated_clock["t"] += cost(torch.get_num_threads(), simulated_clock["t"])
        real_after_update(self)

    monkeypatch.setattr(photo_run.RunExtras, "after_update", after_update)
    real_restore, restored = ThreadProbe.restore, []
    monkeypatch.setattr(ThreadProbe, "restore", lambda self: (restored.append(self.start), real_restore(self)))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        _, elapsed = budget_run(tmp_path / "run", "--log_every", "5")
    finally:
        torch.set_num_threads(before)
    out = capsys.readouterr().out
    changes = [line for line in out.splitlines() if line.startswith("threads: ")]
    assert len(changes) == 2, out
    assert re.fullmatch(
        r"threads: 2 -> 1: 3100 ms per update with 2 threads, (1000|700) ms with 1 "  # 700: the window ended idle
        r"\(the CPU is busy; other processes share its cores\)",
        changes[0],
    ), changes[0]
    assert changes[1].startswith("threads: 1 -> 2: ") and "(the CPU has free cores again)" in changes[1]
    threads = [r["sys/threads"] for r in read_jsonl(tmp_path / "run" / "metrics.jsonl") if "sys/threads" in r]
    # The mean count over each line's updates: whole lines at 2 and at 1, probes' lines between.
    assert max(threads) == 2.0 and min(threads) == 1.0 and threads[-1] > 1.0
    assert restored == [2]  # the starting count back when training ends
    # Inside the budget; early, since the plan's pace is the run's average, which the busy phase slowed.
    assert 32.0 <= elapsed <= 40.0, elapsed


def test_a_user_thread_count_is_kept(monkeypatch):
    from gan_accel.gan.photo_run import adapts_threads

    budgeted = GANTrainArguments(time_budget="40s")
    assert adapts_threads(budgeted, "cpu", {})
    assert not adapts_threads(budgeted, "cpu", {"OMP_NUM_THREADS": "2"})  # the user's count
    assert not adapts_threads(GANTrainArguments(time_budget="40s", adapt_threads=False), "cpu", {})
    assert not adapts_threads(budgeted, "cuda", {})
    assert not adapts_threads(GANTrainArguments(), "cpu", {})  # no budget: the count is the user's
