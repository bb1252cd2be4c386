"""Progressive resolution (--progressive_share, --progressive_fade): the alpha schedule, the
half-size path of G and D, resume inside stage 1 and inside the fade, full-size exports, and a
2-process run (DDP with parameters that get no gradient)."""

import json
import shutil

import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

from gan_accel.errors import ConfigError
from gan_accel.gan.config import GANModelArguments
from gan_accel.gan.recipe import next_alpha, progressive_alpha
from gan_accel.models import build_models, load_generator, save_generator
from helpers import TINY_GAN, load_script, one_line_error, read_jsonl
from test_distributed import EXACT, torchrun
from test_gan_train import tensors_of

train_gan = load_script("train_gan").main
sample_gan = load_script("sample_gan").main
export_onnx = load_script("export_onnx").main


# ---- the schedule --------------------------------------------------------------------------
def test_alpha_is_zero_then_fades_then_one_by_the_last_update():
    alphas = [progressive_alpha(step, 20, 0.5, 0.25) for step in range(20)]
    assert alphas[:11] == [0.0] * 11  # steps 0..10: half size
    assert alphas[11:15] == pytest.approx([0.2, 0.4, 0.6, 0.8])  # the fade from 10 to 15
    assert alphas[15:] == [1.0] * 5
    # A fade that would end after the run ends on its last update: a finished run is full-size.
    assert progressive_alpha(9, 10, 0.6, 0.4) == 1.0 and 0 < progressive_alpha(8, 10, 0.6, 0.4) < 1
    assert progressive_alpha(3, 10, 0.5, 0.0) == 0.0 and progressive_alpha(5, 10, 0.5, 0.0) == 1.0
    assert progressive_alpha(0, 10, 0.0, 0.1) == 1.0  # off: full size from the start


def test_alpha_never_goes_back_down_when_the_length_is_replanned():
    # A --time_budget run: unplanned (10**9) at first, then plans that grow and shrink.
    lengths = [10**9] * 5 + [40] * 10 + [100] * 10 + [30] * 5 + [60] * 10
    alpha, seen = 0.0, []
    for step, length in enumerate(lengths):
        alpha = next_alpha(alpha, step, length, 0.3, 0.2)
        seen.append(alpha)
    assert seen[:5] == [0.0] * 5  # before the first plan: half size
    assert all(b >= a for a, b in zip(seen, seen[1:]))
    # The plan of 100 alone would put step 15 back to half size; the run keeps what it reached.
    assert progressive_alpha(15, 100, 0.3, 0.2) == 0.0 and seen[15] == seen[14] > 0
    assert seen[-1] == 1.0


def test_progressive_settings_are_checked_in_one_line_naming_the_flags():
    with pytest.raises(ConfigError, match="--progressive_share .*--arch dcgan.*--arch resnet"):
        GANModelArguments(arch="resnet", progressive_share=0.5)
    with pytest.raises(ConfigError, match="--progressive_share 0.8 \\+ --progressive_fade 0.3"):
        GANModelArguments(progressive_share=0.8, progressive_fade=0.3)
    for share in (1.0, -0.1, float("nan")):
        with pytest.raises(ConfigError, match="--progressive_share must be in"):
            GANModelArguments(progressive_share=share)


def test_resnet_with_progressive_is_refused_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "run"
    line = one_line_error(
        train_gan, [*TINY_GAN, "--arch", "resnet", "--progressive_share", "0.5", "--output_dir", str(out)], capsys
    )
    assert "--progressive_share" in line and "--arch resnet" in line and not out.exists()


# ---- the networks --------------------------------------------------------------------------
def networks(progressive=True, size=32, channels=3):
    torch.manual_seed(0)
    return build_models(
        "dcgan",
        z_dim=8,
        channels=channels,
        image_size=size,
        g_channels=8,
        d_channels=8,
        d_norm="batch",
        progressive=progressive,
    )


def grads(module):
    return {name: p.grad is not None for name, p in module.named_parameters()}


@pytest.mark.parametrize("size", [16, 32])
def test_stage_one_runs_the_half_path_only_and_draws_full_size_images(size):
    G, D = networks(size=size)
    z = torch.randn(4, 8)
    fake = G(z)  # alpha 0 (a new network): stage 1
    assert fake.shape == (4, 3, size, size)
    # Nearest upsampling of a half-size image: every 2x2 block is one pixel.
    assert torch.equal(fake[..., ::2, ::2], fake[..., 1::2, 1::2])
    D(fake).sum().backward()
    g, d = grads(G), grads(D)
    assert all(g[n] for n in g if n.startswith("to_rgb_half")) and all(
        d[n] for n in d if n.startswith("from_rgb_half")
    )
    # G's last block and full-size output, D's full-size stem and first block: no gradient, not run.
    assert not any(g[n] for n in g if n.startswith("net.") and int(n.split(".")[1]) >= G.split)
    assert not any(d[n] for n in d if n.startswith("features.") and int(n.split(".")[1]) < D.split)
    assert all(d[n] for n in d if n.startswith("features.") and int(n.split(".")[1]) >= D.split)


def test_the_fade_trains_both_paths_and_full_size_equals_the_plain_networks():
    G, D = networks()
    for net in (G, D):
        net.alpha.fill_(0.5)
    D(G(torch.randn(4, 8))).sum().backward()
    assert all(grads(G).values()) and all(grads(D).values())
    # alpha 1: exactly the networks without the half-size heads (the same weights).
    plain_G, plain_D = networks(progressive=False)
    plain_G.load_state_dict(G.state_dict(), strict=False)
    plain_D.load_state_dict(D.state_dict(), strict=False)
    G.alpha.fill_(1.0)
    D.alpha.fill_(1.0)
    z = torch.randn(4, 8)
    fake = G(z)
    assert torch.equal(fake, plain_G(z)) and torch.equal(D(fake), plain_D(fake))
    extra = set(G.state_dict()) - set(plain_G.state_dict())
    assert extra == {"alpha", "to_rgb_half.0.weight", "to_rgb_half.0.bias"}


def test_off_adds_nothing_to_the_networks_or_the_export(tmp_path):
    G, D = networks(progressive=False)
    names = set(G.state_dict()) | {f"D.{k}" for k in D.state_dict()}
    assert not any("half" in n or "alpha" in n for n in names)
    save_generator(G, tmp_path / "g")
    assert "progressive" not in json.loads((tmp_path / "g" / "config.json").read_text())


def test_an_export_taken_in_stage_one_samples_full_size_images(tmp_path):
    G, _ = networks(channels=1)
    G.eval()
    save_generator(G, tmp_path / "g")  # alpha 0: half-size images, upsampled
    loaded = load_generator(tmp_path / "g")
    assert float(loaded.alpha) == 0.0
    z = torch.randn(3, 8)
    with torch.no_grad():
        assert torch.equal(loaded(z), G(z))
    assert (
        sample_gan(["--generator", str(tmp_path / "g"), "--num_images", "2", "--output_dir", str(tmp_path / "s")]) == 0
    )
    assert Image.open(tmp_path / "s" / "000000.png").size == (32, 32)


# ---- training ------------------------------------------------------------------------------
PROGRESSIVE = ["--progressive_share", "0.25", "--progressive_fade", "0.5"]  # at 8 steps: 0 to step 2, fade to 6


def test_resume_in_stage_one_and_in_the_fade_equals_the_uninterrupted_run(tmp_path):
    common = [*TINY_GAN, *PROGRESSIVE, "--lr_scheduler", "constant", "--checkpointing_steps", "2", "--max_steps", "8"]
    common += ["--checkpoints_total_limit", "4"]
    straight = tmp_path / "straight"
    assert train_gan([*common, "--output_dir", str(straight)]) == 0
    ckpts = straight / "checkpoints"
    alpha = {s: load_file(str(ckpts / f"step_{s:08d}" / "model.safetensors"))["alpha"].item() for s in (2, 4, 8)}
    assert alpha[2] == 0.0 and 0.0 < alpha[4] < 1.0 and alpha[8] == 1.0  # stage 1, fade, full size
    logged = [r["progressive/alpha"] for r in read_jsonl(straight / "metrics.jsonl")]
    assert logged == sorted(logged) and logged[0] == 0.0 and logged[-1] == 1.0
    final = tensors_of(ckpts / "step_00000008")
    for at in (2, 4):
        split = tmp_path / f"split_{at}"
        shutil.copytree(straight, split)
        for later in range(at + 2, 10, 2):  # as if it had died after the checkpoint of step `at`
            shutil.rmtree(split / "checkpoints" / f"step_{later:08d}")
        assert train_gan([*common, "--output_dir", str(split), "--resume_from_checkpoint", "latest"]) == 0
        resumed = tensors_of(split / "checkpoints" / "step_00000008")
        assert resumed.keys() == final.keys() and "G.to_rgb_half.0.weight" in resumed
        assert all(torch.equal(final[k], resumed[k]) for k in final), at


def test_exports_of_a_32px_run_reload_sample_and_export_to_onnx(tmp_path):
    out = tmp_path / "run"
    flags = [*TINY_GAN, *PROGRESSIVE, "--image_size", "32", "--max_steps", "4", "--output_dir", str(out)]
    assert train_gan(flags) == 0
    config = json.loads((out / "generator" / "config.json").read_text())
    assert config["progressive"] is True and config["image_size"] == 32
    assert float(load_generator(out / "generator").alpha) == 1.0  # a finished run is full-size
    assert (
        sample_gan(["--generator", str(out / "generator"), "--num_images", "2", "--output_dir", str(tmp_path / "s")])
        == 0
    )
    assert Image.open(tmp_path / "s" / "000000.png").size == (32, 32)
    assert export_onnx(["--generator", str(out / "generator"), "--output", str(tmp_path / "g.onnx")]) == 0


def test_two_processes_train_progressively_and_equal_one_process(tmp_path):
    # Stage 1 (full-size layers unused), the fade, then full size (half-size heads unused): DDP
    # must not wait for their gradients. BN-free networks, so 2 processes equal 1 exactly.
    flags = [*EXACT, "--progressive_share", "0.34", "--progressive_fade", "0.33", "--max_steps", "6"]
    single, ddp = tmp_path / "single", tmp_path / "ddp"
    assert train_gan([*flags, "--output_dir", str(single), "--batch_size", "32"]) == 0
    torchrun([*flags, "--output_dir", str(ddp), "--batch_size", "16"])
    logged = [r["progressive/alpha"] for r in read_jsonl(ddp / "metrics.jsonl")]
    assert logged[0] == 0.0 and 0.0 < logged[3] < 1.0 and logged[-1] == 1.0
    a = tensors_of(single / "checkpoints" / "step_00000006")
    b = tensors_of(ddp / "checkpoints" / "step_00000006")
    assert a.keys() == b.keys()
    worst = max((a[k].double() - b[k].double()).abs().max().item() for k in a)
    assert worst < 1e-5, worst
