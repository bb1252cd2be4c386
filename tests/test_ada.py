"""Adaptive discriminator augmentation: the gated transforms, the p update, p rising when D
overfits a tiny set in a real run, and the same p on two processes."""

import pytest
import torch
from accelerate import Accelerator
from safetensors.torch import load_file

from gan_accel.errors import ConfigError
from gan_accel.gan.ada import AdaptiveAugment, adjusted_p
from gan_accel.gan.augment import ADA_TRANSFORMS, adaptive_augment, make_augment, rotate90, xflip
from gan_accel.gan.config import GANTrainArguments
from helpers import TINY_GAN, load_script, read_jsonl, write_png

train_gan = load_script("train_gan").main


def seeded(seed=0):
    return torch.Generator().manual_seed(seed)


def images(b=8, c=3, s=8, seed=1):
    return torch.rand(b, c, s, s, generator=seeded(seed)) * 2 - 1


def test_p_zero_is_the_identity_and_p_one_transforms_every_image():
    x = images()
    assert torch.equal(adaptive_augment(x, 0.0, ADA_TRANSFORMS, seeded()), x)
    flipped = adaptive_augment(x, 1.0, ("xflip",), seeded())
    assert torch.equal(flipped, x.flip(3))


def test_gates_are_per_image_and_follow_p():
    x = images(b=2000, c=1, s=4)
    out = adaptive_augment(x, 0.3, ("xflip",), seeded(3))
    changed = (out != x).flatten(1).any(1).float().mean().item()
    assert 0.25 < changed < 0.35  # each image flipped with probability 0.3 (a flip of noise always changes it)


def test_same_generator_state_same_transforms_for_real_and_fake():
    augment = make_augment((), lambda: seeded(5), ada_p=0.5, ada_transforms=ADA_TRANSFORMS)
    x = images()
    assert torch.equal(augment(x), augment(x))
    assert make_augment((), lambda: seeded(5), ada_p=0.0, ada_transforms=ADA_TRANSFORMS) is None


def test_rotate90_turns_each_image_by_a_whole_quarter():
    x = images(b=16)
    out = rotate90(x, seeded(2))
    for i in range(len(x)):
        assert any(torch.equal(out[i], torch.rot90(x[i], k, dims=(1, 2))) for k in range(4))


@pytest.mark.parametrize("p", [0.5, 1.0])
def test_differentiable_so_g_gets_a_gradient(p):
    x = images(b=4, c=1, s=6).double().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: adaptive_augment(t, p, ADA_TRANSFORMS, seeded(7)), (x,))
    assert torch.equal(xflip(x, seeded()), x.flip(3))


def test_adjusted_p_moves_towards_the_target_and_stays_in_0_1():
    assert adjusted_p(0.0, 0.9, 0.6, 1000, kimg=10) == pytest.approx(0.1)  # D overfits: augment more
    assert adjusted_p(0.5, 0.2, 0.6, 1000, kimg=10) == pytest.approx(0.4)  # D does not: augment less
    assert adjusted_p(0.0, 0.2, 0.6, 1000, kimg=10) == 0.0
    assert adjusted_p(0.95, 1.0, 0.6, 1000, kimg=1) == 1.0
    assert adjusted_p(0.3, 0.6, 0.6, 1000, kimg=1) == 0.3


def test_adaptive_augment_goes_up_then_down_from_observed_signs():
    acc = Accelerator(cpu=True)
    ada = AdaptiveAugment(target=0.6, kimg=0.1, interval=1, device=acc.device)
    for _ in range(3):
        ada.observe(torch.tensor(1.0), 20)  # every real called real: overfitting
    assert ada.adjust(acc) == 1.0 and ada.p == pytest.approx(0.6)
    ada.observe(torch.tensor(-0.5), 40)
    assert ada.adjust(acc) == -0.5 and ada.p == pytest.approx(0.2)
    state = ada.state_dict()
    other = AdaptiveAugment(target=0.6, kimg=0.1, interval=1, device=acc.device)
    other.load_state_dict(state)
    assert other.p == ada.p and float(other.count) == 0.0


def test_bad_ada_flags_are_refused():
    with pytest.raises(ConfigError, match="--ada_transforms"):
        GANTrainArguments(ada=True, ada_transforms="xflip,shear")
    with pytest.raises(ConfigError, match="--ada_target"):
        GANTrainArguments(ada_target=1.5)


def tiny_folder(root, count=16):
    gen = torch.Generator().manual_seed(0)
    for i in range(count):
        pixels = (torch.rand(16, 16, 3, generator=gen) * 255).to(torch.uint8).numpy()
        write_png(root / ("a" if i % 2 else "b") / f"{i}.png", pixels)
    return root


def ada_run(tmp_path, name, *extra):
    out = tmp_path / name
    argv = [
        *TINY_GAN,
        "--dataset",
        "folder",
        "--data_dir",
        str(tiny_folder(tmp_path / "data")),
        "--channels",
        "3",
        "--preset",
        "none",
        "--batch_size",
        "8",
        "--log_every",
        "4",
        "--max_steps",
        "60",
        "--ada",
        "--ada_interval",
        "2",
        "--ada_kimg",
        "0.5",
        "--output_dir",
        str(out),
        *extra,
    ]
    assert train_gan(argv) == 0
    return [r for r in read_jsonl(out / "metrics.jsonl") if "aug/p" in r], out


def test_p_rises_when_d_overfits_a_tiny_set_and_stays_down_when_it_does_not(tmp_path):
    # 16 noise images and a D learning 10x faster than G: D tells them apart at once (r_t -> 1).
    records, out = ada_run(tmp_path, "overfit", "--lr_d", "2e-3")
    assert records[-1]["aug/p"] > 0.2 and records[-1]["aug/rt"] > 0.6
    assert records[-1]["aug/p"] > records[0]["aug/p"]
    assert (out / "plots" / "aug.png").is_file()  # p and r_t over the run
    saved = load_file(str(out / "checkpoints" / "step_00000060" / "ada.safetensors"))
    assert saved["p"].item() > 0.2
    # From p = 0.5 with a D that barely learns (its BatchNorm keeps its logits centred: about half
    # the reals are called real, r_t ~ 0 < 0.6): p comes down, to 0.
    records, _ = ada_run(tmp_path, "calm", "--lr_d", "1e-8", "--ada_initial_p", "0.5")
    assert records[0]["aug/p"] <= 0.5 and records[-1]["aug/rt"] < 0.6
    assert records[-1]["aug/p"] < 0.1


class TwoRanks:
    """An accelerator of 2 processes whose reduce adds the other rank's totals (as gloo would):
    the reduction path of ADA without starting processes (tests/test_budget.py runs ADA under
    torchrun)."""

    num_processes = 2

    def __init__(self, other):
        self.other = other

    def reduce(self, tensor, reduction):
        assert reduction == "sum"
        return tensor + self.other


def test_two_processes_agree_on_p():
    # Rank 0 sees an overfitting D (all +1) on 30 reals, rank 1 a calm one (all -1) on 5.
    sums = {0: torch.tensor([30.0, 30.0], dtype=torch.float64), 1: torch.tensor([-5.0, 5.0], dtype=torch.float64)}
    results = []
    for rank, sign, count in ((0, 1.0, 30), (1, -1.0, 5)):
        ada = AdaptiveAugment(target=0.6, kimg=0.1, interval=1, device=torch.device("cpu"))
        ada.observe(torch.tensor(sign), count)
        r_t = ada.adjust(TwoRanks(sums[1 - rank]))
        results.append((round(ada.p, 6), round(r_t, 6)))
    # Global r_t = (30 - 5) / 35 > 0.6: both ranks raise p by 35 / 100 (alone, rank 0 would by 0.3 and
    # rank 1 would leave it at 0).
    assert results == [(0.35, 0.714286), (0.35, 0.714286)]
