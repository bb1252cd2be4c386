"""Losses and regularisers on hand-worked values and against direct computations."""

import math

import pytest
import torch

from gan_accel.gan import losses as L

REAL = torch.tensor([2.0, -1.0])
FAKE = torch.tensor([0.5, -3.0])


def sp(x):  # softplus by hand
    return math.log1p(math.exp(x))


def test_nonsaturating_hand_values():
    d = ((sp(-2.0) + sp(0.5)) + (sp(1.0) + sp(-3.0))) / 2
    assert L.d_nonsaturating(REAL, FAKE).item() == pytest.approx(d, rel=1e-6)
    assert L.g_nonsaturating(FAKE).item() == pytest.approx((sp(-0.5) + sp(3.0)) / 2, rel=1e-6)
    # At logits 0, D's loss is 2 log 2 and G's is log 2.
    zero = torch.zeros(3)
    assert L.d_nonsaturating(zero, zero).item() == pytest.approx(2 * math.log(2))
    assert L.g_nonsaturating(zero).item() == pytest.approx(math.log(2))


def test_hinge_hand_values():
    # real: relu(1-2)=0, relu(1+1)=2 ; fake: relu(1+0.5)=1.5, relu(1-3)=0
    assert L.d_hinge(REAL, FAKE).item() == pytest.approx((0 + 1.5 + 2 + 0) / 2)
    assert L.g_hinge(FAKE).item() == pytest.approx(1.25)


def test_wasserstein_hand_values():
    assert L.d_wasserstein(REAL, FAKE).item() == pytest.approx(-1.25 - 0.5)
    assert L.g_wasserstein(FAKE).item() == pytest.approx(1.25)


def test_lsgan_hand_values():
    # 0.5 * mean((2-1)^2 + 0.5^2, (-1-1)^2 + (-3)^2) = 0.5 * (1.25 + 13) / 2
    assert L.d_lsgan(REAL, FAKE).item() == pytest.approx(0.5 * (1.25 + 13.0) / 2)
    assert L.g_lsgan(FAKE).item() == pytest.approx(0.5 * ((0.5 - 1) ** 2 + 16.0) / 2)


@pytest.mark.parametrize("name", L.LOSSES)
def test_every_loss_has_both_sides_and_gradients(name):
    real = torch.randn(4, requires_grad=True)
    fake = torch.randn(4, requires_grad=True)
    L.D_LOSSES[name](real, fake).backward()
    L.G_LOSSES[name](fake).backward()
    assert real.grad is not None and fake.grad is not None


class Linear1(torch.nn.Module):
    """D(x) = w . x + sum(x^2): the input gradient is w + 2x, known in closed form."""

    def __init__(self, dim):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(dim, dtype=torch.float64))

    def forward(self, x, labels=None):
        flat = x.flatten(1)
        return flat @ self.w + flat.pow(2).sum(1)


def test_gradient_penalty_matches_direct_computation():
    torch.manual_seed(0)
    D = Linear1(12)
    real = torch.randn(5, 3, 2, 2, dtype=torch.float64)
    fake = torch.randn(5, 3, 2, 2, dtype=torch.float64)
    alpha = torch.rand(5, 1, 1, 1, dtype=torch.float64)
    x_hat = (alpha * real + (1 - alpha) * fake).flatten(1)
    grad = D.w.detach() + 2 * x_hat
    expected = ((grad.norm(dim=1) - 1) ** 2).mean()
    gp = L.gradient_penalty(D, real, fake, alpha)
    assert gp.item() == pytest.approx(expected.item(), rel=1e-10)
    gp.backward()  # create_graph=True: the penalty trains D
    assert D.w.grad is not None and torch.isfinite(D.w.grad).all()


def test_r1_matches_direct_computation():
    torch.manual_seed(1)
    D = Linear1(12)
    real = torch.randn(4, 3, 2, 2, dtype=torch.float64)
    grad = D.w.detach() + 2 * real.flatten(1)
    assert L.r1_penalty(D, real).item() == pytest.approx(grad.pow(2).sum(1).mean().item(), rel=1e-10)
