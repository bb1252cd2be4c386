"""SNGAN ResNet G/D: shapes, a D and a G step for every arch x conditional x loss, spectral norm,
conditional BatchNorm, export, and BatchNorm recalibration of the EMA generator."""

import copy

import pytest
import torch
from accelerate import Accelerator

from gan_accel.gan.augment import make_augment
from gan_accel.gan.ema import EMA, recalibrate_batchnorm
from gan_accel.gan.losses import LOSSES
from gan_accel.gan.step import d_loss, g_loss
from gan_accel.models import build_models, load_generator, save_generator, supported_sizes
from gan_accel.models.resnet import ConditionalBatchNorm2d, ResNetGenerator

TINY = dict(z_dim=8, g_channels=8, d_channels=8)


@pytest.mark.parametrize("size", supported_sizes("resnet"))
@pytest.mark.parametrize("channels", [1, 3])
def test_resnet_shapes(size, channels):
    G, D = build_models("resnet", channels=channels, image_size=size, d_norm="spectral", **TINY)
    x = G(torch.randn(3, 8))
    assert x.shape == (3, channels, size, size)
    assert x.min() >= -1 and x.max() <= 1
    assert D(x).shape == (3,)


@pytest.mark.parametrize("arch", ["dcgan", "resnet"])
@pytest.mark.parametrize("conditional", [False, True])
@pytest.mark.parametrize("loss", LOSSES)
def test_d_and_g_step_backward(arch, conditional, loss):
    torch.manual_seed(0)
    acc = Accelerator(cpu=True)
    num_classes = 10 if conditional else 0
    G, D = build_models(arch, channels=1, image_size=16, d_norm="spectral", num_classes=num_classes, **TINY)
    labels = torch.randint(0, 10, (4,)) if conditional else None
    real = torch.rand(4, 1, 16, 16) * 2 - 1
    fake = G(torch.randn(4, 8), labels)
    augment = make_augment(("translation", "cutout", "color"), lambda: torch.Generator().manual_seed(1))
    gp = 10.0 if loss == "wgan_gp" else 0.0
    total, metrics = d_loss(D, real, fake, labels, loss, gp, torch.rand(4, 1, 1, 1), r1_weight=1.0, augment=augment)
    acc.backward(total)
    assert all(torch.isfinite(v) for v in metrics.values())
    assert "reg/r1" in metrics and ("reg/gp" in metrics) == (loss == "wgan_gp")
    # (The logit's bias cancels out of the Wasserstein/hinge losses: its gradient may be 0.)
    assert all(
        p.grad is not None and (p.grad.abs().sum() > 0 or name == "head.linear.bias")
        for name, p in D.named_parameters()
    )
    assert all(p.grad is None for p in G.parameters())  # the fake was detached for D
    D.zero_grad()
    D.requires_grad_(False)  # as the GAN recipe's G phase declares D frozen
    acc.backward(g_loss(D, fake, labels, loss, augment=augment)[0])
    D.requires_grad_(True)
    assert all(p.grad is None or p.grad.abs().sum() == 0 for p in D.parameters())
    # Every G parameter gets a gradient (conditional: only the rows of the classes drawn).
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in G.parameters())


def test_resnet_spectral_norm_is_applied_and_normalises():
    _, D = build_models("resnet", channels=1, image_size=32, d_norm="spectral", num_classes=10, **TINY)
    layers = [m for m in D.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear, torch.nn.Embedding))]
    assert len(layers) == 12 and all(hasattr(m, "parametrizations") for m in layers)
    D.train()
    for _ in range(10):  # power iteration converges over forward passes
        D(torch.randn(2, 1, 32, 32), torch.randint(0, 10, (2,)))
    for m in layers:
        sigma = torch.linalg.matrix_norm(m.weight.detach().flatten(1), ord=2)
        assert sigma == pytest.approx(1.0, abs=0.05)
    _, D_plain = build_models("resnet", channels=1, image_size=32, d_norm="none", **TINY)
    assert not any(hasattr(m, "parametrizations") for m in D_plain.modules())
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in D_plain.modules())


def test_conditional_batchnorm_is_per_class():
    G, _ = build_models("resnet", channels=1, image_size=16, d_norm="spectral", num_classes=10, **TINY)
    cbns = [m for m in G.modules() if isinstance(m, ConditionalBatchNorm2d)]
    assert len(cbns) == 4 and all(not m.bn.affine for m in cbns)
    assert all(torch.equal(m.gain.weight, torch.ones_like(m.gain.weight)) for m in cbns)  # starts as plain BN
    for m in cbns:  # make the classes differ
        torch.nn.init.normal_(m.gain.weight, 1.0, 0.5)
    G.eval()
    z = torch.randn(1, 8).repeat(2, 1)
    x = G(z, torch.tensor([3, 7]))
    assert not torch.allclose(x[0], x[1])
    assert torch.equal(G(z, torch.tensor([3, 3]))[1], x[0])  # same class, same z: same image
    with pytest.raises(ValueError, match="pass labels"):
        G(z)


@pytest.mark.parametrize("num_classes", [0, 10])
def test_resnet_export_round_trip(tmp_path, num_classes):
    G, _ = build_models("resnet", channels=3, image_size=32, d_norm="spectral", num_classes=num_classes, **TINY)
    G.eval()
    save_generator(G, tmp_path / "g")
    G2 = load_generator(tmp_path / "g")
    assert isinstance(G2, ResNetGenerator) and (G2.z_dim, G2.num_classes, G2.image_size) == (8, num_classes, 32)
    z, y = torch.randn(2, 8), (torch.tensor([1, 9]) if num_classes else None)
    assert torch.equal(G(z, y), G2(z, y))


@pytest.mark.parametrize("arch", ["dcgan", "resnet"])
@pytest.mark.parametrize("num_classes", [0, 10])
def test_recalibrated_ema_batchnorm_has_the_statistics_of_its_own_weights(arch, num_classes):
    """The EMA weights never ran forward in training, so G's running statistics do not describe
    them. recalibrate_batchnorm must set each BN's running mean/var to the batch statistics of the
    EMA generator itself: checked against a direct computation with forward hooks."""
    torch.manual_seed(0)
    G, _ = build_models(arch, channels=1, image_size=16, d_norm="spectral", num_classes=num_classes, **TINY)
    ema = EMA(G, decay=0.5, warmup=False)
    with torch.no_grad():
        for p in G.parameters():
            p.add_(torch.randn_like(p) * 0.3)  # G moves: the EMA weights are now different from G's
    G.train()
    G(torch.randn(16, 8), torch.randint(0, 10, (16,)) if num_classes else None)  # G's own BN stats
    ema.update(G, step=1)
    ema_weights = {k: v.clone() for k, v in ema.module.state_dict().items()}
    calibrated = copy.deepcopy(ema.module)
    recalibrate_batchnorm(calibrated, 8, num_classes, "cpu", batches=3, batch_size=32, seed=5)

    # Direct computation: the same calibration batches through a train-mode copy, recording each
    # BN's input; cumulative averages of per-batch mean and unbiased variance.
    probe = copy.deepcopy(ema.module).train()
    bns = [m for m in probe.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert bns
    seen = {id(m): [] for m in bns}
    hooks = [m.register_forward_hook(lambda m, inp, out: seen[id(m)].append(inp[0].detach())) for m in bns]
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for _ in range(3):
            z = torch.randn(32, 8, generator=g)
            y = torch.randint(0, num_classes, (32,), generator=g) if num_classes else None
            probe(z, y)
    for h in hooks:
        h.remove()
    calibrated_bns = [m for m in calibrated.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    training_bns = [m for m in ema.module.modules() if isinstance(m, torch.nn.BatchNorm2d)]  # G's stats, copied
    for bn, bn_cal, bn_train in zip(bns, calibrated_bns, training_bns):
        xs = seen[id(bn)]
        mean = torch.stack([x.mean(dim=(0, 2, 3)) for x in xs]).mean(0)
        var = torch.stack([x.var(dim=(0, 2, 3), unbiased=True) for x in xs]).mean(0)
        assert torch.allclose(bn_cal.running_mean, mean, atol=1e-5)
        assert torch.allclose(bn_cal.running_var, var, rtol=1e-4, atol=1e-6)
        assert not torch.allclose(bn_cal.running_mean, bn_train.running_mean, atol=1e-3)  # it did change
    # Only BN buffers changed; the EMA module itself is untouched (calibration works on a copy).
    assert not calibrated.training
    for k, v in calibrated.state_dict().items():
        if "running" not in k and "num_batches" not in k:
            assert torch.equal(v, ema_weights[k]), k
    assert all(torch.equal(v, ema_weights[k]) for k, v in ema.module.state_dict().items())
