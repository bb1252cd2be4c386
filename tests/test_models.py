"""Architectures: output shapes per size, conditioning, export round trip."""

import pytest
import torch

from gan_accel.models import build_models, load_generator, save_generator, supported_sizes


@pytest.mark.parametrize("size", supported_sizes("dcgan"))
@pytest.mark.parametrize("channels", [1, 3])
def test_dcgan_shapes(size, channels):
    G, D = build_models(
        "dcgan", z_dim=8, channels=channels, image_size=size, g_channels=4, d_channels=4, d_norm="batch"
    )
    x = G(torch.randn(3, 8))
    assert x.shape == (3, channels, size, size)
    assert x.min() >= -1 and x.max() <= 1
    assert D(x).shape == (3,)


@pytest.mark.parametrize("d_norm", ["batch", "none", "spectral"])
def test_conditional_backward(d_norm):
    G, D = build_models(
        "dcgan", z_dim=8, channels=1, image_size=32, g_channels=4, d_channels=4, d_norm=d_norm, num_classes=10
    )
    y = torch.randint(0, 10, (4,))
    D(G(torch.randn(4, 8), y), y).sum().backward()
    assert all(p.grad is not None for p in G.parameters())
    with pytest.raises(ValueError, match="pass labels"):
        G(torch.randn(4, 8))


def test_spectral_norm_is_applied():
    _, D = build_models("dcgan", z_dim=8, channels=1, image_size=32, g_channels=4, d_channels=4, d_norm="spectral")
    convs = [m for m in D.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    assert convs and all(hasattr(m, "parametrizations") for m in convs)
    _, D_plain = build_models("dcgan", z_dim=8, channels=1, image_size=32, g_channels=4, d_channels=4, d_norm="none")
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in D_plain.modules())


def test_export_round_trip(tmp_path):
    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=4, d_channels=4, d_norm="batch")
    G.eval()
    save_generator(G, tmp_path / "g")
    G2 = load_generator(tmp_path / "g")
    z = torch.randn(2, 8)
    assert torch.equal(G(z), G2(z))
    assert (G2.z_dim, G2.num_classes) == (8, 0)
