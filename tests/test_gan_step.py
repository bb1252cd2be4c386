"""The GAN recipe's two phases in isolation, run as the engine runs them: G's phase leaves D
untouched; D's phase leaves G untouched; the update skips non-finite gradients."""

import pytest
import torch
from accelerate import Accelerator

from gan_accel.data import to_float_images
from gan_accel.engine import RandomStreams, adam, apply_update, backward_phase
from gan_accel.engine.step import Nets, Step
from gan_accel.gan.config import GANTrainArguments
from gan_accel.gan.recipe import STREAMS, GANRecipe
from gan_accel.gan.step import d_loss
from gan_accel.models import build_models


@pytest.fixture
def parts():
    torch.manual_seed(0)
    acc = Accelerator(cpu=True, gradient_accumulation_steps=2)
    G, D = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=4, d_channels=4, d_norm="batch")
    opt_G = torch.optim.Adam(G.parameters(), lr=1e-2)
    opt_D = torch.optim.Adam(D.parameters(), lr=1e-2)
    G, D, opt_G, opt_D = acc.prepare(G, D, opt_G, opt_D)
    return acc, G, D, opt_G, opt_D


def snapshot(module, grads=False):
    return [
        (p.grad.clone() if p.grad is not None else None) if grads else p.detach().clone() for p in module.parameters()
    ]


def same(a, b):
    return all(
        (x is None and y is None) or (x is not None and y is not None and torch.equal(x, y)) for x, y in zip(a, b)
    )


def d_step(acc, D, *args, **kwargs):
    loss, metrics = d_loss(D, *args, **kwargs)
    acc.backward(loss)
    return metrics


@pytest.mark.parametrize("loss", ["nonsaturating", "hinge", "wgan_gp", "lsgan"])
def test_g_step_leaves_d_params_and_grads_unchanged(parts, loss):
    acc, G, D, opt_G, opt_D = parts
    images = torch.randint(0, 256, (4, 1, 16, 16), dtype=torch.uint8)
    real_batch = lambda idx: (to_float_images(images[idx]), None)  # noqa: E731 (in memory: a batch is indices)
    gan = GANRecipe(GANTrainArguments(loss=loss), real_batch, RandomStreams(STREAMS, 0, acc, 4), z_dim=8)
    d_phase, g_phase = gan.recipe({"G": G, "D": D}).phases
    with acc.accumulate(G, D):  # micro-step 1 of 2: D's gradients stay accumulated
        assert not acc.sync_gradients
        step = Step(Nets(G=G, D=D), torch.arange(4), 0, 0, {}, acc, frozenset({"D", "G"}))
        step.update(gan.inputs(step))
        backward_phase(acc, d_phase, step)
        assert all(p.grad is None for p in G.parameters())  # fake was detached for D
        d_params, d_grads = snapshot(D), snapshot(D, grads=True)
        assert all(g is not None for g in d_grads)
        backward_phase(acc, g_phase, step)  # the recipe declares D frozen in G's phase
        assert same(d_grads, snapshot(D, grads=True)), "G's loss leaked gradients into D"
        assert all(p.requires_grad for p in D.parameters())  # unfrozen again
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in G.parameters() if p.requires_grad)
        g_before = snapshot(G)
        assert apply_update(acc, opt_G, _NoSched(), check_finite=True) is None  # not a sync step
    assert same(d_params, snapshot(D))
    assert same(g_before, snapshot(G))


@pytest.mark.parametrize("fused", [True, False])
def test_update_applies_on_sync_and_skips_nonfinite(parts, fused):
    acc, G, D, opt_G, opt_D = parts
    # fused: skipped on the device (found_inf); otherwise skipped after a host check.
    opt_D = acc.prepare(
        adam(1e-2, (0.5, 0.999))([acc.unwrap_model(D)])
        if fused
        else torch.optim.Adam(acc.unwrap_model(D).parameters(), lr=1e-2)
    )
    assert bool(opt_D.optimizer.defaults.get("fused")) is fused
    real = torch.rand(4, 1, 16, 16) * 2 - 1
    for _micro in range(2):
        with acc.accumulate(G, D):
            fake = G(torch.randn(4, 8))
            d_step(acc, D, real, fake, None, "nonsaturating")
            result = apply_update(acc, opt_D, _NoSched(), check_finite=True)
    assert bool(result) is True
    with acc.accumulate(G, D):
        pass
    before = snapshot(D)
    moments = [s["exp_avg"].clone() for s in opt_D.optimizer.state.values()]
    with acc.accumulate(G, D):
        assert acc.sync_gradients
        for p in D.parameters():
            p.grad = torch.full_like(p, float("nan"))
        assert bool(apply_update(acc, opt_D, _NoSched(), check_finite=True)) is False
    assert same(before, snapshot(D)) and all(p.grad is None for p in D.parameters())
    # Adam's moments and step count are untouched too: the update did not happen at all.
    assert same(moments, [s["exp_avg"] for s in opt_D.optimizer.state.values()])
    assert all(int(s["step"]) == 1 for s in opt_D.optimizer.state.values())


class _NoSched:
    def step(self):
        pass
