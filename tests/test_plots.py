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
    assert sorted(groups) == ["eval", "eval_fid", "loss", "lr"] and sorted(groups["eval"]) == ["eval/accuracy"]


def test_each_eval_family_gets_its_own_figure_and_settings_none():
    keys = [
        "eval/fid",
        "eval/fid_ci_low",
        "eval/kid_mean",
        "eval/best_step",
        "eval/precision",
        "eval/recall_ci_high",
        "eval/coverage",
        "eval/coverage_kl",
        "eval/density",
        "eval/classes_covered",
        "eval/num_generated",
        "eval/classifier_accuracy",
        "eval/protocol_id",
        "time_s",
    ]
    groups = group_by_prefix({key: ([1], [0.5]) for key in keys})
    assert sorted(groups) == ["eval", "eval_fid", "eval_fidelity"]  # no figure for time_s
    assert set(groups["eval_fid"]) == {"eval/fid", "eval/fid_ci_low", "eval/kid_mean", "eval/best_step"}
    assert set(groups["eval_fidelity"]) == {"eval/precision", "eval/recall_ci_high", "eval/coverage", "eval/density"}
    # sizes, the protocol and the fixed classifier's accuracy are settings: the same at every evaluation
    assert set(groups["eval"]) == {"eval/coverage_kl", "eval/classes_covered"}  # class-coverage KL stays
    assert group_by_prefix({"eval/best_step": ([1], [1.0]), "eval/fid_floor": ([1], [0.5])}) == {}  # no curve


EVALS = [  # three evaluations as the GAN's evaluator logs them, with sizes of 1,000 beside FIDs of 1 to 40
    {
        "step": step,
        "time_s": 30.0 * step / 100,
        "eval/fid": fid,
        "eval/fid_ci_low": fid - 0.5,
        "eval/fid_ci_high": fid + 0.5,
        "eval/fid_floor": 0.5,
        "eval/fid_at_floor_size": fid + 1,
        "eval/kid_mean": fid / 100,
        "eval/kid_ci_low": fid / 120,
        "eval/kid_ci_high": fid / 80,
        "eval/kid_floor_mean": 0.002,
        "eval/num_generated": 1000.0,
        **{f"eval/{m}": 0.1 * step / 100 for m in ("precision", "recall", "density", "coverage")},
        **{f"eval/{m}_ci_low": 0.05 * step / 100 for m in ("precision", "recall", "density", "coverage")},
        **{f"eval/{m}_ci_high": 0.15 * step / 100 for m in ("precision", "recall", "density", "coverage")},
        **({"eval/best_step": float(step)} if best else {}),
    }
    for step, fid, best in ((100, 40.0, True), (200, 3.0, True), (300, 4.0, False))
]


def figures_of(run, monkeypatch):
    """{family: figure} as plot_metrics draws them (kept open for the assertions)."""
    drawn = {}
    real = plots.family_figure
    monkeypatch.setattr(
        plots, "family_figure", lambda family, *a, **kw: drawn.setdefault(family, real(family, *a, **kw))
    )
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "close", lambda fig: None)
    written = plots.plot_metrics(run)
    return drawn, sorted(p.name for p in written)


def horizontal_lines(ax):
    return [line.get_ydata()[0] for line in ax.lines if len(set(line.get_ydata())) == 1 and len(line.get_ydata()) == 2]


def test_fid_and_kid_with_interval_floor_best_step_and_minutes(tmp_path, monkeypatch):
    loss_lines = [{"step": s, "time_s": 0.3 * s, "loss/D": 1.0} for s in range(10, 301, 10)]
    write_metrics(tmp_path, sorted(loss_lines + EVALS, key=lambda r: r["step"]))
    figures, written = figures_of(tmp_path, monkeypatch)
    assert written == ["eval_fid.png", "eval_fidelity.png", "loss.png"]
    fid_ax, fid_minutes, kid_ax, kid_minutes = figures["eval_fid"].axes  # rows FID, KID; steps | minutes
    assert (fid_ax.get_ylabel(), kid_ax.get_ylabel()) == ("FID", "KID")
    fid_line = next(line for line in fid_ax.lines if line.get_label() == "FID")
    assert list(fid_line.get_xdata()) == [100, 200, 300] and list(fid_line.get_ydata()) == [40.0, 3.0, 4.0]
    assert 0.5 in horizontal_lines(fid_ax) and 0.002 in horizontal_lines(kid_ax)  # the real-data floors
    assert len(fid_ax.collections) == 1 and len(kid_ax.collections) == 1  # the intervals as bands
    assert fid_ax.get_yscale() == "log" and fid_minutes.get_yscale() == "log"  # 40 down to a floor of 0.5
    labels = [t.get_text() for t in fid_ax.get_legend().get_texts()]
    assert "kept (best_generator/): step 200" in labels and "real-data floor 0.5" in labels
    star = [line for line in fid_ax.lines if line.get_marker() == "*"]
    assert [(list(s.get_xdata()), list(s.get_ydata())) for s in star] == [([200.0], [3.0])]
    # no size or count on any axis: only FID and KID
    assert not any("num_" in line.get_label() for ax in figures["eval_fid"].axes for line in ax.lines)
    # the same curves against wall-clock minutes (0.3 s a step: step 200 is at 1 minute)
    assert (kid_ax.get_xlabel(), kid_minutes.get_xlabel()) == ("step", "wall-clock minutes")
    fid_in_minutes = next(line for line in fid_minutes.lines if line.get_label() == "FID")
    assert list(fid_in_minutes.get_xdata()) == pytest.approx([0.5, 1.0, 1.5])
    best_in_minutes = [line for line in fid_minutes.lines if line.get_marker() == "*"]
    assert list(best_in_minutes[0].get_xdata()) == pytest.approx([1.0]) and len(fid_minutes.collections) == 1


def test_precision_recall_density_coverage_with_their_intervals_as_bands(tmp_path, monkeypatch):
    write_metrics(tmp_path, EVALS)
    figures, _ = figures_of(tmp_path, monkeypatch)
    ax, _ = figures["eval_fidelity"].axes
    assert [line.get_label() for line in ax.lines] == ["precision", "recall", "density", "coverage"]
    assert len(ax.collections) == 4
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(0.05) and band.max() == pytest.approx(0.45)


def test_losses_are_a_smoothed_line_over_the_faint_raw_one(tmp_path, monkeypatch):
    values = [1.0 + (0.5 if s % 2 else -0.5) for s in range(40)]
    write_metrics(tmp_path, [{"step": s, "loss/D": v} for s, v in enumerate(values, start=1)])
    figures, _ = figures_of(tmp_path, monkeypatch)
    (ax,) = figures["loss"].axes
    raw, trend = ax.lines
    assert list(raw.get_ydata()) == values and raw.get_alpha() < 0.5
    assert trend.get_label() == "loss/D (smoothed)" and trend.get_color() == raw.get_color()
    assert list(trend.get_ydata()) == plots.smooth(values, 4)
    assert max(trend.get_ydata()[10:]) - min(trend.get_ydata()[10:]) < 0.5  # the zigzag of 1.0 is damped
    assert len(figures["loss"].axes) == 1  # lines without times (written before they had them): steps only


def test_smooth_and_minutes_of_steps():
    assert plots.smooth([1.0, 3.0, 3.0], 3) == [1.0, 2.0, 2.5]
    minutes = plots.minutes_of_steps(([10, 20, 20, 40], [60.0, 120.0, 125.0, 245.0]))
    assert minutes(20) == pytest.approx(125 / 60) and minutes(40) == pytest.approx(245 / 60)
    assert minutes(30) == pytest.approx(185 / 60)
    assert minutes(50) == pytest.approx(245 / 60 + 10 * (185 / 60) / 30)  # beyond: at the mean pace
    assert plots.minutes_of_steps(([5], [1.0])) is None and plots.minutes_of_steps(([1, 2], [3.0, 3.0])) is None


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


def test_the_swd_has_its_panel_and_each_floor_its_real_vs_real_interval(tmp_path, monkeypatch):
    swd = {"eval/swd_floor": 10.0, "eval/swd_floor_ci_low": 8.0, "eval/swd_floor_ci_high": 12.0}
    floors = {"eval/fid_floor_ci_low": 0.4, "eval/fid_floor_ci_high": 0.6, "eval/swd_saturated": 0.0, **swd}
    lines = [
        {**r, **floors, "eval/swd": r["eval/fid"] * 10, "eval/swd_ci_low": r["eval/fid"] * 9, "eval/swd_ci_high": 99.0}
        for r in EVALS
    ]
    write_metrics(tmp_path, lines)
    figures, _ = figures_of(tmp_path, monkeypatch)
    fid_ax, _, kid_ax, _, swd_ax, _ = figures["eval_fid"].axes  # rows FID, KID, SWD
    assert swd_ax.get_ylabel() == "SWD" and 10.0 in horizontal_lines(swd_ax) and len(swd_ax.collections) == 1
    swd_line = next(line for line in swd_ax.lines if line.get_label() == "SWD")
    assert list(swd_line.get_ydata()) == [400.0, 30.0, 40.0]
    band = "real-vs-real interval (up to its top: saturated)"
    for ax, (low, high) in ((fid_ax, (0.4, 0.6)), (swd_ax, (8.0, 12.0))):
        assert band in [t.get_text() for t in ax.get_legend().get_texts()]
        (span,) = ax.patches
        assert (span.get_y(), span.get_y() + span.get_height()) == pytest.approx((low, high))
    assert not kid_ax.patches  # no real-vs-real interval logged for the KID here: none drawn
