"""The best generator kept by default: evaluations spread over the run, best_generator/ with its
score and step, the closing verdict; the animation of the grids; the plot's best-step marker."""

import json

import numpy as np
from PIL import Image

from gan_accel.gan.photo_run import best_vs_last, every_for, write_animation
from gan_accel.loop.plots import plot_metrics
from helpers import TINY_GAN, kept_evaluation, load_script, read_jsonl

train_gan = load_script("train_gan").main


def test_evaluations_spread_over_the_run_and_the_best_is_exported_with_its_score(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        train_gan(
            [
                *TINY_GAN,
                "--output_dir",
                str(out),
                "--max_steps",
                "9",
                "--num_evaluations",
                "3",
                "--eval_num_images",
                "100",
                "--num_grids",
                "3",
            ]
        )
        == 0
    )
    evals = [r for r in read_jsonl(out / "metrics.jsonl") if "eval/fid" in r]
    assert [r["step"] for r in evals] == [3, 6, 9]
    best = kept_evaluation(evals)  # the lowest FID, or a later one whose interval reaches it
    score = json.loads((out / "best_generator" / "score.json").read_text())
    assert score == {"metric": "eval/fid", "value": best["eval/fid"], "step": best["step"], "saturated": {}}
    printed = capsys.readouterr().out
    assert best_vs_last(score, evals[-1]["eval/fid"], 9) in printed
    assert sorted(p.name for p in (out / "samples").glob("step_*.png")) == [
        "step_000003.png",
        "step_000006.png",
        "step_000009.png",
    ]
    assert (out / "plots" / "eval_fid.png").is_file()


def test_best_vs_last_says_which_and_by_how_much():
    assert best_vs_last({"value": 2.0, "step": 40}, 3.0, 100) == (
        "The best generator (step 40, FID 2.000, best_generator/) is 1.50x better than the last one "
        "(step 100, FID 3.000, generator/)"
    )
    assert best_vs_last({"value": 2.0, "step": 100}, 2.0, 100).startswith("The last generator (step 100")
    assert best_vs_last({"value": 2.0, "step": 40}, 1.9, 100) == (
        "The last generator (step 100, FID 1.900, generator/) scored no higher than the kept one "
        "(step 40, FID 2.000, best_generator/)"
    )
    assert best_vs_last(None, 2.0, 100) is None and best_vs_last({"value": 1.0, "step": 1}, float("nan"), 2) is None


def test_every_for():
    assert every_for(100, 10) == 10 and every_for(5, 10) == 1 and every_for(1000, 3) == 333


def test_animation_from_the_grids_in_step_order(tmp_path):
    for step, shade in ((20, 200), (10, 0), (30, 100)):
        Image.fromarray(np.full((8, 8, 3), shade, dtype=np.uint8)).save(tmp_path / f"step_{step:06d}.png")
    gif = write_animation(tmp_path)
    with Image.open(gif) as image:
        assert image.n_frames == 3
        shades = []
        for frame in range(3):
            image.seek(frame)
            shades.append(int(np.asarray(image.convert("L"))[0, 0]))
    assert shades == [0, 200, 100]
    (tmp_path / "single").mkdir()
    assert write_animation(tmp_path / "single") is None


def test_the_eval_plot_marks_the_best_step(tmp_path, monkeypatch):
    lines = [
        {"step": 1, "eval/fid": 5.0, "eval/best_step": 1.0},
        {"step": 2, "eval/fid": 3.0, "eval/best_step": 2.0},
        {"step": 3, "eval/fid": 4.0},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    import matplotlib.axes

    marks = []
    real_axvline = matplotlib.axes.Axes.axvline
    monkeypatch.setattr(
        matplotlib.axes.Axes,
        "axvline",
        lambda self, x, **kw: marks.append((x, kw.get("label"))) or real_axvline(self, x, **kw),
    )
    assert [p.name for p in plot_metrics(tmp_path)] == ["eval_fid.png"]
    assert marks == [(2.0, "kept (best_generator/): step 2")]
