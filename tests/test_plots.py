"""plots/ from metrics.jsonl: written by every run at checkpoints and the end, and by
scripts/plot_run.py for any run folder; a plotting failure never fails a run."""

import json

import pytest
from PIL import Image

from gan_accel.loop import plots
from gan_accel.loop.plots import group_by_prefix, plot_run_safely, read_series
from helpers import load_script
from run_fixtures import run_gan, user_error

plot_run = load_script("plot_run").main


def write_metrics(run, records):
    run.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records] + ['{"step": 9, "loss/D": 1.']  # a line cut by a kill
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")


def test_series_keep_numbers_and_group_by_prefix(tmp_path):
    write_metrics(
        tmp_path,
        [
            {"step": 1, "loss/D": 1.0, "loss/G": 0.5, "lr/G": 2e-4, "warning/loss_explosion": "text"},
            {"step": 2, "loss/D": None, "loss/G": 0.4, "eval/fid": 3.0, "eval/accuracy": 0.9},
        ],
    )
    series = read_series(tmp_path / "metrics.jsonl")
    assert series["loss/D"] == ([1], [1.0]) and series["loss/G"] == ([1, 2], [0.5, 0.4])
    assert "warning/loss_explosion" not in series
    groups = group_by_prefix(series)
    assert sorted(groups) == ["eval", "loss", "lr"] and sorted(groups["eval"]) == ["eval/accuracy", "eval/fid"]


def test_precision_and_recall_get_their_own_plot():
    keys = [
        "eval/fid",
        "eval/fid_ci_low",
        "eval/precision",
        "eval/recall_ci_high",
        "eval/coverage",
        "eval/coverage_kl",
        "eval/density",
        "eval/protocol_id",
    ]
    groups = group_by_prefix({key: ([1], [0.5]) for key in keys})
    assert set(groups["eval_fidelity"]) == {"eval/precision", "eval/recall_ci_high", "eval/coverage", "eval/density"}
    assert set(groups["eval"]) == {"eval/fid", "eval/fid_ci_low", "eval/coverage_kl"}  # class-coverage KL stays


def test_a_run_writes_plots_of_every_group(tmp_path):
    run = tmp_path / "run"
    assert run_gan(run, "--max_steps", "2", "--checkpointing_steps", "0") == 0
    written = sorted(p.name for p in (run / "plots").iterdir())
    keys = {
        k.split("/")[0]
        for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
        for k in r
        if "/" in k
    }
    assert written == sorted(f"{k}.png" for k in keys) and {"loss.png", "lr.png"} <= set(written)
    assert Image.open(run / "plots" / "loss.png").size[0] > 100


def test_plot_run_script_draws_any_run_folder(tmp_path, capsys):
    write_metrics(
        tmp_path / "run", [{"step": s, "loss/train": 1.0 / s, "eval/accuracy": 0.5 + s / 10} for s in (1, 2, 3)]
    )
    assert plot_run([str(tmp_path / "run")]) == 0
    assert sorted(p.name for p in (tmp_path / "run" / "plots").iterdir()) == ["eval.png", "loss.png"]
    assert str(tmp_path / "run" / "plots" / "loss.png") in capsys.readouterr().out


@pytest.mark.parametrize(
    "case,match",
    [
        ("missing", "no such folder"),
        ("foreign", "no metrics.jsonl, so not a gan_accel run folder"),
        ("empty", "holds no numeric values yet"),
    ],
)
def test_plot_run_script_bad_folders(tmp_path, capsys, case, match):
    folder = tmp_path / "x"
    if case != "missing":
        folder.mkdir()
        (folder / "notes.txt").write_text("not a run")
    if case == "empty":
        (folder / "metrics.jsonl").write_text("")
    line = user_error(plot_run, [str(folder)], capsys)
    assert match in line and str(folder) in line
    assert not (folder / "plots").exists()


def test_plot_run_help(capsys):
    with pytest.raises(SystemExit) as info:
        plot_run(["--help"])
    assert info.value.code == 0 and "RUN_DIR" in capsys.readouterr().out


def test_a_plotting_error_is_a_warning(tmp_path, monkeypatch):
    write_metrics(tmp_path, [{"step": 1, "loss/D": 1.0}])

    def broken(run_dir, warn=None):
        raise RuntimeError("no fonts")

    monkeypatch.setattr(plots, "plot_metrics", broken)
    warnings = []
    assert plot_run_safely(tmp_path, warn=warnings.append) == []
    assert warnings == [f"warning: could not write plots to {tmp_path / 'plots'} (RuntimeError: no fonts)"]


def test_a_schedule_that_reaches_zero_is_drawn_on_a_linear_axis(tmp_path, monkeypatch, recwarn):
    import matplotlib.pyplot as plt

    scales, real_close = [], plt.close
    monkeypatch.setattr(plt, "close", lambda fig: (scales.append(fig.axes[0].get_yscale()), real_close(fig)))
    # warm-up from 0, linear decay to 0: a log axis cannot show either end
    write_metrics(tmp_path, [{"step": s, "lr/model": lr} for s, lr in ((0, 0.0), (5, 1e-3), (10, 0.0))])
    plots.plot_metrics(tmp_path)
    assert scales == ["linear"] and not [w for w in recwarn if "log-scaled" in str(w.message)]
    write_metrics(tmp_path, [{"step": s, "lr/G": lr} for s, lr in ((0, 2e-4), (5, 2e-6))])
    plots.plot_metrics(tmp_path)
    assert scales[-1] == "log"  # a positive schedule spanning decades keeps its log axis


def test_the_end_of_a_run_does_not_redraw_what_its_final_checkpoint_drew(tmp_path, monkeypatch):
    import gan_accel.loop.run as run_module

    drawn = []
    real = run_module.plot_run_safely
    monkeypatch.setattr(run_module, "plot_run_safely", lambda run_dir, warn: drawn.append(1) or real(run_dir, warn))
    run = tmp_path / "run"
    assert run_gan(run, "--max_steps", "2", "--checkpointing_steps", "0") == 0
    # one drawing: at the final checkpoint (the first checkpoint always draws); the end of the run
    # finds metrics.jsonl as it was then
    assert len(drawn) == 1 and (run / "plots" / "loss.png").is_file()
    version = plots.metrics_version(run)
    with (run / "metrics.jsonl").open("a") as f:
        f.write('{"step": 3, "loss/D": 1.0}\n')
    assert plots.metrics_version(run) != version and plots.metrics_version(tmp_path / "none") is None


def write_metrics_with_a_bad_byte(run):
    write_metrics(run, [{"step": s, "loss/D": 1.0 / s} for s in (1, 2, 3)])
    with (run / "metrics.jsonl").open("ab") as f:
        f.write(b'{"step": 4, "loss/D": 0.2, "note": "\xff\xfe"}\n{"step": 5, "loss/D": 0.1}\n')


def test_plot_run_skips_a_line_that_is_not_utf8_and_says_so(tmp_path, capsys):
    write_metrics_with_a_bad_byte(tmp_path / "run")
    assert plot_run([str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "metrics.jsonl: skipped 1 line(s) that are not valid UTF-8 (line 5)" in err[0], err
    assert (tmp_path / "run" / "plots" / "loss.png").is_file()


def test_training_plots_survive_a_line_that_is_not_utf8_and_warn_once(tmp_path):
    write_metrics_with_a_bad_byte(tmp_path)
    warnings = []
    for _ in range(2):  # every checkpoint redraws
        assert plot_run_safely(tmp_path, warn=warnings.append) == [tmp_path / "plots" / "loss.png"]
    assert len(warnings) == 1 and "not valid UTF-8" in warnings[0]
    assert read_series(tmp_path / "metrics.jsonl")["loss/D"][0] == [1, 2, 3, 5]
