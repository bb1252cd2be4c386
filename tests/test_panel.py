"""The panel of yardsticks (benchmarks/photos/panel.py), its verdict rule, and scoring along a run, on tiny
inputs: a few crops, networks trained for a few steps, a 6-step run."""

from __future__ import annotations

import statistics

import pytest
import torch
import torchvision.transforms.functional as TF
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.common import reset_accelerate
from benchmarks.digits_judge import shuffled_pixels
from benchmarks.photos import panel_encoder
from benchmarks.photos import side_by_side as bench_panel
from benchmarks.photos.along import along_table, score_along
from benchmarks.photos.panel import PANEL_VERSION, YARDSTICKS, Panel, PanelSettings, load_crops, mean_of_draws
from benchmarks.photos.panel_encoder import EncoderSettings, SelfSupervised, drop_held_out, image_hashes
from benchmarks.photos.panel_stats import RankGaussian
from benchmarks.photos.panel_verdict import (
    MIN_SEEDS,
    along_run_summary,
    cell,
    draw_noise_line,
    figure_noise,
    median_noise,
    spread,
    table,
    verdict,
)
from helpers import load_script

TINY = PanelSettings(
    train_crops=30,
    heldout_crops=80,
    judge_crops=270,
    num_images=80,
    encoder_crops=160,
    judge_epochs=3,
    judge_min_accuracy=0.0,
    judge_images=80,
    encoder=EncoderSettings(steps=30, batch_size=32, width=8),
)


@pytest.fixture(scope="module")
def tiny_panel(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("panel")
    return Panel(workdir, "photos", TINY), workdir


def test_each_yardstick_ranks_real_near_its_floor_below_blurred_below_shuffled_and_noise(tiny_panel):
    panel, _ = tiny_panel
    real = load_crops(panel.data["heldout"], 3)[: TINY.num_images]  # crops no yardstick was built with
    rows = {
        "real": panel.score_images(real),
        "blurred": panel.score_images(TF.gaussian_blur(real, 9, 2.0)),
        "shuffled": panel.score_images(shuffled_pixels(real)),
        "noise": panel.score_images(torch.rand_like(real) * 2 - 1),
    }
    for name in YARDSTICKS:
        x = {row: scores[name]["x_floor"] for row, scores in rows.items()}
        assert x["real"] < 2.0, (name, x)
        assert x["real"] < x["blurred"] < x["shuffled"], (name, x)
        assert x["blurred"] < x["noise"], (name, x)
    # the floor's own images score 1x on the yardsticks measured against the panel's reference
    floor = panel.score_images(panel.floor_images)
    assert floor["colour_texture"]["x_floor"] == pytest.approx(1.0)
    assert floor["ssl_encoder"]["x_floor"] == pytest.approx(1.0)
    low, high = rows["real"]["colour_texture"]["interval"]
    assert low <= rows["real"]["colour_texture"]["value"] <= high


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=3), min_size=2, max_size=30),
    st.lists(st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=3, max_size=3), min_size=1, max_size=10),
)
def test_ranks_map_every_value_within_the_references_last_rank_and_keep_its_order(reference, values):
    reference, values = torch.tensor(reference, dtype=torch.float64), torch.tensor(values, dtype=torch.float64)
    ranks = RankGaussian(reference)
    out = ranks(values)
    n = len(reference)
    bound = float(torch.erfinv(torch.tensor(1 - 1 / (n + 1), dtype=torch.float64)) * 2**0.5)
    assert out.shape == values.shape and torch.isfinite(out).all()
    assert out.abs().max() <= bound + 1e-9
    for d in range(values.shape[1]):  # monotone in each dimension: a larger value never ranks lower
        order = values[:, d].argsort()
        assert (out[order, d].diff() >= -1e-12).all()
    # the reference against itself, where a dimension has no ties: symmetric around 0
    own = ranks(reference)
    for d in range(reference.shape[1]):
        if len(reference[:, d].unique()) == n:
            assert abs(float(own[:, d].mean())) < 1e-9


def test_one_image_far_outside_the_real_range_cannot_move_colour_texture_far(tiny_panel):
    panel, _ = tiny_panel
    real = load_crops(panel.data["heldout"], 3)[: TINY.num_images]
    base = panel.stats.distance(real)["value"]
    odd = real.clone()
    odd[0] = torch.tensor([-1.0, -1.0, 1.0]).view(3, 1, 1)  # saturated blue: a bin real crops leave empty
    one = panel.stats.distance(odd)["value"]
    odd[: len(odd) // 2] = odd[0]
    half = panel.stats.distance(odd)["value"]
    assert one < 1.5 * base  # one image of 80 moves the figure a little ...
    assert half > 5 * base  # ... half of them a lot


def test_the_score_of_several_noise_draws_is_their_mean_and_keeps_each_draw():
    draws = [
        {n: {"value": v, "floor": 2.0, "x_floor": v / 2, "interval": [0, 9]} for n in YARDSTICKS}
        for v in (2.0, 4.0, 6.0)
    ]
    out = mean_of_draws(draws)
    for name in YARDSTICKS:
        assert out[name]["value"] == 4.0 and out[name]["x_floor"] == 2.0
        assert out[name]["draws"] == [1.0, 2.0, 3.0] and out[name]["interval"] is None
    assert mean_of_draws(draws[:1])[YARDSTICKS[0]]["interval"] == [0, 9]
    records = [{"panel": out}, {"panel": mean_of_draws(draws[:2])}]
    # The mean's standard error, relative: [1, 2, 3] -> 1 / sqrt(3) / 2 = 28.9%; [1, 2] -> 33.3%.
    assert figure_noise(out[YARDSTICKS[0]]) == pytest.approx(0.2887, abs=1e-4)
    assert draw_noise_line(records) == "one generator, its noise drawn again: up to " + ", ".join(
        f"{label} 3.00x (their mean +-33.3%)" for label in ("region judge FID", "colour+texture FD", "SSL encoder FD")
    )


def test_the_encoder_never_trains_on_the_images_its_floor_is_measured_with(tiny_panel, tmp_path):
    panel, _ = tiny_panel
    trained_on = image_hashes(load_crops(panel.data["encoder"], 3))
    assert not trained_on & (image_hashes(panel.reference) | image_hashes(panel.floor_images))
    mixed = torch.cat([load_crops(panel.data["encoder"], 3), panel.floor_images[:5], panel.reference[:3]])
    with pytest.raises(ValueError, match="floor"):
        SelfSupervised(mixed, panel.reference, panel.floor_images, tmp_path, TINY.encoder)
    # Crops that coincide with held-out ones (random cuts of the same photos do, at full size) are dropped.
    kept = drop_held_out(mixed, panel.reference, panel.floor_images)
    assert kept.shape[0] == mixed.shape[0] - 8
    assert not image_hashes(kept) & (image_hashes(panel.reference) | image_hashes(panel.floor_images))


def test_a_second_panel_reads_its_judges_back_from_the_cache_and_gives_the_same_figures(tiny_panel, monkeypatch):
    panel, workdir = tiny_panel

    def no_training(*args, **kwargs):
        raise AssertionError("trained again instead of reading the cache")

    images = shuffled_pixels(panel.floor_images)
    before = panel.score_images(images)
    monkeypatch.setattr(panel_encoder, "train_encoder", no_training)
    monkeypatch.setattr("gan_accel.metrics.domain.train_domain_classifier", no_training)
    again = Panel(workdir, "photos", TINY)
    after = again.score_images(images)
    for name in YARDSTICKS:
        assert after[name]["value"] == pytest.approx(before[name]["value"], rel=1e-9)
        assert after[name]["floor"] == pytest.approx(before[name]["floor"], rel=1e-9)


@pytest.fixture(scope="module")
def tiny_run(tiny_panel):
    """A 6-step run on the tiny panel's training crops, every second checkpoint kept."""
    panel, workdir = tiny_panel
    run = workdir / "run"
    reset_accelerate()
    load_script("train_gan").main(
        ["--dataset", "folder", "--data_dir", str(panel.data["train"]), "--output_dir", str(run)]
        + ["--image_size", "16", "--z_dim", "8", "--g_channels", "8", "--d_channels", "8", "--batch_size", "16"]
        + ["--max_steps", "6", "--checkpointing_steps", "2", "--checkpoints_total_limit", "10", "--log_every", "1"]
    )
    return run


def test_along_the_run_scores_every_kept_checkpoint_and_the_last_matches_the_export(tiny_panel, tiny_run):
    panel, _ = tiny_panel
    run = tiny_run
    result = score_along(panel, run)
    points = [row["point"] for row in result["rows"]]
    assert points == ["step_00000002", "step_00000004", "step_00000006", "generator"]
    assert [row["step"] for row in result["rows"]] == [2, 4, 6, 6]
    assert all(row["minutes"] is not None for row in result["rows"])
    # the last checkpoint's EMA, BatchNorm recalibrated, is the generator the run exported
    for name in YARDSTICKS:
        assert result["rows"][2]["panel"][name]["value"] == pytest.approx(result["rows"][3]["panel"][name]["value"])
    text = along_table(result)
    assert text.count("\n| step_") == 3 and len(result["summary"]) == len(YARDSTICKS)


def test_swd_ranks_scores_every_generator_the_panel_scored_and_correlates_with_each_yardstick(tiny_panel, tiny_run):
    import json

    from benchmarks.photos import swd_ranks

    panel, workdir = tiny_panel
    along = {**score_along(panel, tiny_run), "version": PANEL_VERSION}
    (workdir / "along_run.json").write_text(json.dumps(along))
    stale = {**along, "version": PANEL_VERSION - 1}  # an older panel's figures are not compared
    (workdir / "along_stale.json").write_text(json.dumps(stale))
    generators = swd_ranks.scored_generators(workdir, "photos")
    assert [name for name, _, _ in generators] == [f"run/step_0000000{k}" for k in (2, 4, 6)]
    train = load_crops(panel.data["train"], 3)
    rows = swd_ranks.measure(train[: 4 * 6], generators, sizes=((6, 4),), count=6)
    (row,) = rows
    assert len(row["real_vs_real"]) == swd_ranks.REAL_DRAWS and all(v > 0 for v in row["real_vs_real"])
    assert sorted(row["generators"]) == sorted(name for name, _, _ in generators)
    assert row["draw_ratio"] >= 1.0 and all(-1.0 <= row["spearman"][y] <= 1.0 for y in YARDSTICKS)
    assert swd_ranks.report(rows).count("\n| 6 x 4 |") == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=3, max_size=20, unique=True))
def test_spearman_is_one_for_any_increasing_map_and_minus_one_for_a_decreasing_one(values):
    from benchmarks.photos.swd_ranks import spearman

    assert spearman(values, [v**3 + 2 * v for v in values]) == pytest.approx(1.0)
    assert spearman(values, [-v for v in values]) == pytest.approx(-1.0)


# ---- the verdict rule -----------------------------------------------------------------------
def records_of(setting, values_by_seed):
    return [
        {
            "setting": setting,
            "seed": seed,
            "updates": 100,
            "panel": {n: {"x_floor": v} for n, v in zip(YARDSTICKS, vs)},
        }
        for seed, vs in values_by_seed.items()
    ]


figures = st.floats(min_value=0.5, max_value=50.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(*[st.lists(figures, min_size=n, max_size=n)] * 6)))
def test_a_lever_is_adopted_only_when_every_yardstick_prefers_it_over_3_seeds_or_more(columns):
    base_cols, cand_cols = columns[:3], columns[3:]
    seeds = range(len(base_cols[0]))
    records = records_of("base", {s: [c[s] for c in base_cols] for s in seeds})
    records += records_of("lever", {s: [c[s] for c in cand_cols] for s in seeds})
    v = verdict(records, "base", "lever")
    every = all(statistics.median(c) < statistics.median(b) for b, c in zip(base_cols, cand_cols))
    assert v["adopted"] == (every and len(seeds) >= MIN_SEEDS)
    assert v["seeds"] == list(seeds)
    for name, b, c in zip(YARDSTICKS, base_cols, cand_cols):
        assert v["medians"][name] == [statistics.median(b), statistics.median(c)]


def test_seeds_that_only_one_setting_ran_do_not_count():
    records = records_of("base", {0: [2, 2, 2], 1: [2, 2, 2], 2: [2, 2, 2]})
    records += records_of("lever", {0: [1, 1, 1], 1: [1, 1, 1], 7: [1, 1, 1]})
    v = verdict(records, "base", "lever")
    assert v["seeds"] == [0, 1] and not v["adopted"] and "2 seed(s)" in v["reason"]


def test_one_yardstick_against_is_enough_to_keep_the_baseline():
    records = records_of("base", {s: [2, 2, 2] for s in range(3)})
    records += records_of("lever", {s: [1, 1, 2.1] for s in range(3)})
    v = verdict(records, "base", "lever")
    assert not v["adopted"] and v["reason"] == "not preferred by ssl_encoder"


def test_a_lead_inside_the_figures_own_noise_is_a_tie_not_a_preference():
    def scored(setting, figure, draws):
        records = records_of(setting, {s: [figure] * 3 for s in range(3)})
        for r in records:
            for name in YARDSTICKS:
                r["panel"][name]["draws"] = draws
        return records

    # Each figure the mean of 4 draws with a standard error of 5.8% (8.2% for the difference of two):
    # a 3% lead is no lead ...
    noisy = [1.8, 2.2, 1.8, 2.2]
    v = verdict(scored("base", 2.0, noisy) + scored("lever", 1.94, [d * 0.97 for d in noisy]), "base", "lever")
    assert v["noise"][YARDSTICKS[0]] == pytest.approx(0.0816, abs=1e-4)
    assert not v["adopted"] and "ahead inside its noise" in v["reason"]
    # ... a 20% lead is, and so is a 3% one when the draws agree.
    assert verdict(scored("base", 2.0, noisy) + scored("lever", 1.6, noisy), "base", "lever")["adopted"]
    steady = [2.0, 2.0, 2.001, 1.999]
    assert verdict(scored("base", 2.0, steady) + scored("lever", 1.94, steady), "base", "lever")["adopted"]


def test_the_noise_of_a_median_is_that_of_the_run_at_the_median():
    quiet, loud, louder = [2.0, 2.0, 2.0, 2.0001], [1.0, 3.0, 1.0, 3.0], [0.5, 3.5, 0.5, 3.5]
    runs = [{"x_floor": x, "draws": d} for x, d in ((3.0, quiet), (1.0, quiet), (2.0, loud))]
    assert median_noise(runs) == figure_noise({"draws": loud}) > 10 * figure_noise({"draws": quiet})
    # With an even count the median is the middle two's mean: the noisier of them counts.
    runs.append({"x_floor": 2.5, "draws": louder})
    assert median_noise(runs) == figure_noise({"draws": louder})


def test_the_table_shows_each_seed_the_median_and_the_spread():
    records = records_of("base", {1: [3.0, 1, 1], 0: [2.0, 1, 1], 2: [6.0, 1, 1]})
    assert spread([2.0, 3.0, 6.0]) == 3.0
    assert cell([2.0, 3.0, 6.0]) == "3.00 (2.00, 3.00, 6.00) 3.00x"
    row = [line for line in table(records, ["base"]).splitlines() if line.startswith("| base")][0]
    assert row.split(" | ")[1:3] == ["0, 1, 2", "3.00 (2.00, 3.00, 6.00) 3.00x"]


def test_along_run_summary_says_where_quality_peaks_and_where_the_kept_generator_sits():
    points = [{"step": s, "scores": {n: v for n in YARDSTICKS}} for s, v in ((500, 3.0), (1000, 2.0), (1500, 2.6))]
    lines = along_run_summary(points, best_step=1500)
    assert len(lines) == len(YARDSTICKS)
    assert "peaks at step 1,000 (2.00x) then falls to 2.60x at step 1,500" in lines[0]
    assert "best_generator/ holds step 1,500 (2.60x there), +500 steps from the peak" in lines[0]
    flat_points = [{"step": s, "scores": {n: 2.0 for n in YARDSTICKS}} for s in (500, 1000)]
    assert "within 10%" in along_run_summary(flat_points, None)[0]


# ---- the side-by-side command's parts -------------------------------------------------------
def test_a_setting_takes_environment_variables_before_its_flags():
    s = bench_panel.parse_setting("one=OMP_NUM_THREADS=1 --ema_decay 0.9995")
    assert (s.name, s.env, s.flags) == ("one", {"OMP_NUM_THREADS": "1"}, ["--ema_decay", "0.9995"])
    assert bench_panel.parse_setting("today=").flags == []
    with pytest.raises(ValueError, match="NAME=FLAGS"):
        bench_panel.parse_setting("--ema_decay 0.9")
    assert bench_panel.run_env(s, "pairs")["OMP_NUM_THREADS"] == "1"


def test_pairs_start_two_settings_of_one_seed_together_and_alternate_reverses_the_order():
    a, b = bench_panel.parse_setting("a="), bench_panel.parse_setting("b=")
    pairs = bench_panel.schedule([a, b], [0, 1, 2], "pairs")
    assert [[(s.name, seed) for s, seed in group] for group in pairs] == [
        [("a", 0), ("b", 0)],
        [("a", 1), ("b", 1)],
        [("a", 2), ("b", 2)],
    ]
    alternate = bench_panel.schedule([a, b], [0, 1], "alternate")
    assert [(g[0][0].name, g[0][1]) for g in alternate] == [("a", 0), ("b", 0), ("b", 1), ("a", 1)]


def test_a_record_of_another_panel_version_is_scored_again_and_a_current_one_is_not(tiny_panel, monkeypatch):
    import argparse
    import json

    panel, workdir = tiny_panel
    scored = []
    monkeypatch.setattr(
        bench_panel, "run_group", lambda jobs: [{"wall_s": 1.0, "load_avg": [2.01, 2.0, 1.9]}] * len(jobs)
    )
    monkeypatch.setattr(
        bench_panel,
        "score_run",
        lambda panel, out: (
            scored.append(out.name)
            or {"updates": 7, "exported": "generator", "panel": {n: {"x_floor": 2.0} for n in YARDSTICKS}}
        ),
    )
    monkeypatch.setattr(bench_panel, "Panel", lambda *args, **kwargs: panel)
    base = {"minutes": 1.0, "flags": [], "env": {}, "layout": "pairs", "wall_s": 1.0, "updates": 3}
    old = {**base, "setting": "a", "seed": 0, "version": PANEL_VERSION - 1, "panel": {}}
    current = {**base, "setting": "b", "seed": 0, "version": PANEL_VERSION, "panel": {}}
    results = workdir / "panel_photos.json"
    results.write_text(json.dumps([old, current]))
    args = argparse.Namespace(
        workdir=str(workdir), folder="photos", minutes=1.0, seeds=1, first_seed=0, layout="pairs",
        keep_checkpoints=False, record=None, argv=[], machine="test",
    )  # fmt: skip
    bench_panel.run(args, [bench_panel.parse_setting("a="), bench_panel.parse_setting("b=")])
    assert scored == ["a_seed0_1m"]
    records = json.loads(results.read_text())
    assert sorted((r["setting"], r["version"], r["updates"]) for r in records) == [
        ("a", PANEL_VERSION, 7),
        ("b", PANEL_VERSION, 3),
    ]
    assert [r.get("load_avg") for r in sorted(records, key=lambda r: r["setting"])] == [[2.01, 2.0, 1.9], None]


def test_a_finished_run_keeps_the_load_it_trained_under_and_is_not_started_again(tmp_path, monkeypatch):
    import json

    started = []

    class Finished:
        def __init__(self, cmd, **kwargs):
            started.append(cmd)

        def wait(self):
            return 0

    monkeypatch.setattr(bench_panel.subprocess, "Popen", Finished)
    monkeypatch.setattr(bench_panel.os, "getloadavg", lambda: (2.004, 1.96, 1.5))
    out = tmp_path / "runs" / "a_seed0_1m"
    out.mkdir(parents=True)
    job = (["--seed", "0"], {"OMP_NUM_THREADS": "1", "PATH": "/bin"}, out)
    runs = bench_panel.run_group([job])
    done = json.loads((tmp_path / "runs" / "a_seed0_1m.done.json").read_text())
    assert done["load_avg"] == [2.0, 1.96, 1.5] and done == runs[0]
    assert done["env"] == {"OMP_NUM_THREADS": "1"} and len(started) == 1
    assert bench_panel.run_group([job]) == runs and len(started) == 1
    other = (["--seed", "0"], {"OMP_NUM_THREADS": "2"}, out)  # another thread count: trained again
    bench_panel.run_group([other])
    assert len(started) == 2


def test_a_record_names_the_cpu_from_the_first_processor_of_cpuinfo(tmp_path):
    from benchmarks.speed.report import cpuinfo

    one = "processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\nmodel name\t: Xeon {i}\nflags\t\t: avx2 avx512f\n"
    path = tmp_path / "cpuinfo"
    path.write_text(one.format(i=0) + "\n" + one.format(i=1).replace("106", "207"))
    fields = cpuinfo(str(path))
    assert (fields["model name"], fields["cpu family"], fields["model"]) == ("Xeon 0", "6", "106")
    assert fields["flags"].split() == ["avx2", "avx512f"]
    assert cpuinfo(str(tmp_path / "absent")) == {}


def test_the_grids_are_saved_side_by_side(tmp_path):
    from PIL import Image

    grid = tmp_path / "g.png"
    Image.new("RGB", (40, 40), "red").save(grid)
    cells = {("a", 0): grid, ("a", 1): grid, ("b", 0): grid, ("b", 1): None}
    path = bench_panel.save_grids(cells, ["a", "b"], [0, 1], tmp_path / "sheet.png")
    with Image.open(path) as sheet:
        assert sheet.size == (2 * 48, 2 * (40 + 16 + 8))
        assert sheet.getpixel((48 + 20, 16 + 20))[:3] == (255, 0, 0)  # a, seed 1
        assert sheet.getpixel((48 + 20, 64 + 16 + 20))[:3] == (255, 255, 255)  # b, seed 1: no grid


def test_the_scans_folder_is_two_grey_scans_cut_into_train_and_heldout(tmp_path):
    from benchmarks.photos.folders import make_crops
    from benchmarks.photos.scans import scan_images

    scans = scan_images()
    assert sorted(scans) == ["mri", "terrain"] and all(im.mode == "L" for im in scans.values())
    out = make_crops("scans", tmp_path / "scans", num_crops=4, num_heldout=2)
    assert sorted(p.name for p in (out / "train").iterdir()) == ["mri", "terrain"]
    assert len(list((out / "heldout").rglob("*.png"))) == 2


def test_the_mahotas_folder_is_three_real_photographs_cut_into_train_and_heldout(tmp_path):
    pytest.importorskip("mahotas", reason="the mahotas folder's photographs ship in the mahotas wheel")
    from benchmarks.photos.equal_time import make_region_crops
    from benchmarks.photos.folders import GRIDS, mahotas_images, make_crops, missing, sources

    images = mahotas_images()
    assert sorted(images) == ["DepartmentStore", "luispedro", "nuclear"]  # never lena
    assert all(im.mode == "RGB" for im in images.values()) and missing("mahotas") is None
    assert sources("mahotas")[1:] == (128, 3)
    out = make_crops("mahotas", tmp_path / "mahotas", num_crops=6, num_heldout=3)
    assert sorted(p.name for p in (out / "train").iterdir()) == sorted(images)
    train, heldout = sorted((out / "train").rglob("*.png")), sorted((out / "heldout").rglob("*.png"))
    assert len(train) == 6 and len(heldout) == 3
    # The held-out crops are cut at other places (another seed) than the training crops.
    assert train[0].read_bytes() != heldout[0].read_bytes()
    # The region judge's classes: a 3x3 grid over the scene and the portrait, the micrograph one class.
    make_region_crops(tmp_path / "judge", 300, 2, images, 128, GRIDS["mahotas"])
    regions = sorted(p.name for p in (tmp_path / "judge").iterdir())
    assert "nuclear_r0c0" in regions and not [r for r in regions if r.startswith("nuclear_") and r != "nuclear_r0c0"]
    assert len(regions) == 19


def test_the_folder_command_refuses_a_missing_package_in_one_line(tmp_path, monkeypatch, capsys):
    import sys

    from benchmarks.photos import main

    monkeypatch.setitem(sys.modules, "mahotas", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "mahotas.demos", None)
    with pytest.raises(SystemExit) as info:
        main(["folder", "--name", "mahotas", "--output_dir", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "--name mahotas" in err and "pip install mahotas" in err
    assert not (tmp_path / "m").exists()
