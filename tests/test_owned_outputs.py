"""A command replaces only what it wrote itself: the user's own files in its output folder or at
its output name are refused in one line naming the file and the flag, and results go where no
later export of a run removes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gan_accel.models import build_models, save_generator
from helpers import load_script, one_line_error

sample_gan = load_script("sample_gan").main
export_onnx = load_script("export_onnx").main
evaluate_gan = load_script("evaluate_gan").main


@pytest.fixture
def run_with_generator(tmp_path) -> Path:
    """A run folder R (config.json + metrics.jsonl) trained on the folder ``photos``, with R/generator."""
    torch.manual_seed(0)
    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=4, d_channels=4, d_norm="none")
    run = tmp_path / "R"
    save_generator(G, run / "generator")
    photos = tmp_path / "photos"
    photos.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": "folder", "data_dir": str(photos)}))
    (run / "metrics.jsonl").write_text("")
    return run


def test_sample_gan_never_replaces_the_users_own_images_or_seeds(run_with_generator, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "000000.png").write_bytes(b"my photo")
    (out / "seeds.json").write_text('{"my": "notes"}')
    argv = ["--generator", str(run_with_generator / "generator"), "--num_images", "2", "--output_dir", str(out)]
    line = one_line_error(sample_gan, argv, capsys)
    assert f"--output_dir {out}: {out / '000000.png'} is not a file sample-gan wrote" in line
    assert (out / "000000.png").read_bytes() == b"my photo"
    (out / "000000.png").unlink()
    line = one_line_error(sample_gan, argv, capsys)  # its own seeds.json is not ours either
    assert f"{out / 'seeds.json'} is not a file sample-gan wrote" in line
    assert (out / "seeds.json").read_text() == '{"my": "notes"}'


def test_sample_gan_replaces_what_it_wrote_itself(run_with_generator, tmp_path):
    argv = ["--generator", str(run_with_generator / "generator"), "--num_images", "2"]
    out = tmp_path / "samples"
    assert sample_gan([*argv, "--output_dir", str(out)]) == 0
    assert sample_gan([*argv, "--output_dir", str(out), "--seed", "5"]) == 0
    assert [i["seed"] for i in json.loads((out / "seeds.json").read_text())["images"]] == [5, 6]


def test_sample_gan_refuses_the_folder_its_generator_was_trained_on(run_with_generator, tmp_path, capsys):
    argv = ["--generator", str(run_with_generator / "generator"), "--num_images", "2"]
    line = one_line_error(sample_gan, [*argv, "--output_dir", str(tmp_path / "photos" / "fake")], capsys)
    assert "--output_dir" in line and "is inside --data_dir of its run" in line
    assert list((tmp_path / "photos").iterdir()) == []


@pytest.mark.parametrize("name", ["photo.png", "notes.txt"])
def test_export_onnx_output_is_an_onnx_name_never_the_users_file(run_with_generator, tmp_path, capsys, name):
    mine = tmp_path / name
    mine.write_text("mine")
    argv = ["--generator", str(run_with_generator / "generator"), "--output", str(mine)]
    line = one_line_error(export_onnx, argv, capsys)
    assert f"--output {mine}: not a .onnx file name" in line
    assert mine.read_text() == "mine"


def test_evaluate_gan_writes_beside_the_generator_and_refuses_inside_it(run_with_generator, capsys):
    from gan_accel.cli.evaluate_gan import default_output_dir

    generator = run_with_generator / "generator"
    before = sorted(p.name for p in generator.iterdir())
    assert default_output_dir(str(generator)) == run_with_generator / "generator_eval"
    assert default_output_dir(str(generator) + "/") == run_with_generator / "generator_eval"
    for inside in (generator, generator / "eval"):
        argv = ["--generator", str(generator), "--num_images", "100", "--output_dir", str(inside)]
        line = one_line_error(evaluate_gan, argv, capsys)
        assert f"--output_dir {inside}: is " in line and "--generator" in line
    assert sorted(p.name for p in generator.iterdir()) == before


def test_sample_gan_grid_never_replaces_the_users_own_file(run_with_generator, tmp_path, capsys):
    mine = tmp_path / "holiday.png"
    mine.write_bytes(b"my photo")
    argv = ["--generator", str(run_with_generator / "generator"), "--num_images", "2", "--grid", str(mine)]
    line = one_line_error(sample_gan, [*argv, "--output_dir", str(tmp_path / "samples")], capsys)
    assert f"--grid {mine}: not a grid sample-gan wrote" in line
    assert mine.read_bytes() == b"my photo"
    assert not (tmp_path / "samples").exists()  # refused before anything was written


def test_sample_gan_replaces_the_grid_it_wrote_itself(run_with_generator, tmp_path, capsys):
    grid = tmp_path / "grid.png"
    argv = ["--generator", str(run_with_generator / "generator"), "--num_images", "2", "--grid", str(grid)]
    assert sample_gan([*argv, "--output_dir", str(tmp_path / "a")]) == 0
    first = grid.read_bytes()
    assert sample_gan([*argv, "--output_dir", str(tmp_path / "a"), "--seed", "7"]) == 0
    assert grid.read_bytes() != first  # its own grid, recorded in a/seeds.json, is replaced
    # Another --output_dir's seeds.json does not record it: the grid is then refused like any file.
    line = one_line_error(sample_gan, [*argv, "--output_dir", str(tmp_path / "b")], capsys)
    assert f"--grid {grid}: not a grid sample-gan wrote" in line
