"""CycleGAN components as pure functions and tiny modules: networks, losses, the image pool, the
schedule, the unpaired sampler, crop/flip and the digits pair."""

import pytest
import torch

from gan_accel.cyclegan.data import random_crop_flip
from gan_accel.cyclegan.digits_pair import digits_pair, thick_strokes
from gan_accel.cyclegan.losses import cycle_loss, discriminator_loss, generator_adversarial_loss, identity_loss
from gan_accel.cyclegan.models import PatchDiscriminator, ResnetGenerator, min_image_size
from gan_accel.cyclegan.pool import ImagePool
from gan_accel.cyclegan.sampler import UnpairedSampler
from gan_accel.cyclegan.schedule import lr_schedule, reference_factor
from gan_accel.engine import build_scheduler


def count(module):
    return sum(p.numel() for p in module.parameters())


def test_paper_sized_networks_have_the_reference_parameter_counts():
    # pytorch-CycleGAN-and-pix2pix: 11,378,179 (resnet_9blocks) and 2,764,737 (basic D), less the
    # biases of the convolutions that instance norm follows (it cancels them; see models.py).
    g_biases = 64 + 128 + 256 + 9 * 2 * 256 + 128 + 64
    assert count(ResnetGenerator(3, 64, 9)) == 11_378_179 - g_biases
    assert count(PatchDiscriminator(3, 64, 3)) == 2_764_737 - (128 + 256 + 512)


@pytest.mark.parametrize("size,d_layers,patches", [(16, 2, 2), (32, 3, 2), (32, 2, 6)])
def test_shapes(size, d_layers, patches):
    G, D = ResnetGenerator(1, 8, 2), PatchDiscriminator(1, 8, d_layers)
    x = torch.rand(3, 1, size, size) * 2 - 1
    y = G(x)
    assert y.shape == x.shape and y.abs().max() <= 1
    assert D(x).shape == (3, 1, patches, patches)
    assert size >= min_image_size(d_layers)


def test_min_image_size_in_closed_form_equals_the_search():
    """The closed form gives what the search counting up in steps of 4 gave (that search never
    ended for --d_layers 2**32)."""

    def search(d_layers):
        size = 4
        while (size // 2**d_layers) - 2 < 1:
            size += 4
        return size

    assert [min_image_size(d) for d in range(9)] == [search(d) for d in range(9)]


def test_instance_norm_makes_a_split_batch_equal_the_whole():
    # What lets 2 processes equal 1: no statistic couples the images of a batch.
    torch.manual_seed(0)
    G, D = ResnetGenerator(1, 8, 1), PatchDiscriminator(1, 8, 2)
    x = torch.randn(4, 1, 16, 16)
    assert torch.allclose(G(x), torch.cat([G(x[:2]), G(x[2:])]), atol=1e-6)
    assert torch.allclose(D(x), torch.cat([D(x[:1]), D(x[1:])]), atol=1e-6)


def test_losses():
    ones, zeros = torch.ones(2, 1, 3, 3), torch.zeros(2, 1, 3, 3)
    assert discriminator_loss("lsgan", ones, zeros) == 0  # perfect D
    assert discriminator_loss("lsgan", zeros, ones) == 1.0  # 0.5 * (1 + 1): halved
    assert generator_adversarial_loss("lsgan", ones) == 0
    assert generator_adversarial_loss("lsgan", zeros) == 1.0  # (0 - 1)^2, not halved
    assert discriminator_loss("hinge", ones, -ones) == 0
    assert torch.isclose(discriminator_loss("nonsaturating", zeros, zeros), torch.log(torch.tensor(2.0)))
    real, rec = torch.zeros(2, 1, 4, 4), torch.full((2, 1, 4, 4), 0.5)
    assert cycle_loss(real, rec, 10.0) == 5.0 and identity_loss(real, rec, 5.0) == 2.5


def test_pool_fills_then_returns_about_half_from_history():
    pool = ImagePool(pool_size=4, seed=0)
    first = torch.arange(4.0).view(4, 1, 1, 1)
    assert torch.equal(pool.query(first), first)  # filling: every image stored and returned
    assert pool.num_images == 4 and torch.equal(pool.images, first)
    returned_stored = 0
    for step in range(250):
        base = 100.0 + 4 * step
        before = set(pool.images.flatten().tolist())
        new = base + torch.arange(4.0)
        out = pool.query(new.view(4, 1, 1, 1)).flatten().tolist()
        after = set(pool.images.flatten().tolist())
        old = [v for v in out if v < base]
        assert set(old) <= before and not set(old) & after  # an old image returned left the pool...
        assert len(after) == 4 and after - before <= {base + i for i in range(4)}  # ...for a new one
        returned_stored += sum(o != n for o, n in zip(out, new.tolist()))
    assert 0.45 < returned_stored / 1000 < 0.55  # "half the time return a stored image"


def test_pool_size_zero_passes_images_through():
    x = torch.randn(3, 1, 2, 2)
    assert ImagePool(0).query(x) is x


def test_pool_state_round_trip_continues_identically():
    a = ImagePool(pool_size=5, seed=3)
    for i in range(4):
        a.query(torch.randn(3, 1, 2, 2, generator=torch.Generator().manual_seed(i)))
    b = ImagePool(pool_size=5, seed=999)
    b.load_state_dict(a.state_dict())
    for i in range(4, 10):
        x = torch.randn(3, 1, 2, 2, generator=torch.Generator().manual_seed(i))
        assert torch.equal(a.query(x), b.query(x))
    with pytest.raises(ValueError, match="holds 5 images"):
        ImagePool(pool_size=6).load_state_dict(a.state_dict())


def test_reference_schedule_is_constant_then_linear_to_zero():
    assert [reference_factor(t, 3, 4) for t in range(8)] == [1, 1, 1, 1, 0.75, 0.5, 0.25, 0.0]
    for processes in (1, 2):
        param = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([param], lr=1.0)
        schedule = lr_schedule("reference", constant_updates=3, decay_updates=4, total_updates=7, warmup_updates=0)
        sched = build_scheduler(schedule, opt, num_processes=processes)
        lrs = []
        for _ in range(7):
            lrs.append(sched.get_last_lr()[0])
            opt.step()  # (no gradient: a no-op) in the order torch expects before the scheduler
            for _ in range(processes):  # a prepared scheduler ticks once per process per update
                sched.step()
        assert lrs == [1, 1, 1, 1, 0.75, 0.5, 0.25] and sched.get_last_lr()[0] == 0.0


def test_unpaired_sampler_streams_each_domain_and_resumes():
    s = UnpairedSampler(num_a=5, num_b=12, seed=0)
    epoch0 = list(s)
    assert len(epoch0) == 12
    a, b = [p[0] for p in epoch0], [p[1] for p in epoch0]
    assert sorted(b) == list(range(12))  # the longer domain: each image once
    assert sorted(a[:5]) == sorted(a[5:10]) == list(range(5))  # the shorter: whole permutations in turn
    s.set_epoch(1)
    epoch1 = list(s)
    assert epoch1 != epoch0 and sorted(p[1] for p in epoch1) == list(range(12))
    # The A stream continues across the epoch boundary (positions 12.. of its endless stream).
    assert [p[0] for p in epoch1] == s.stream(0, 12, 12).tolist()
    s.set_position(1, 7)
    assert list(s) == epoch1[7:]
    assert len(list(s)) == 12  # the skip applied once


def test_random_crop_and_flip():
    x = torch.arange(2 * 6 * 6, dtype=torch.float).view(2, 1, 6, 6)
    u = torch.tensor([[0.0, 0.0, 0.9], [0.99, 0.99, 0.1]])
    out = random_crop_flip(x, 4, u, flip=True)
    assert torch.equal(out[0], x[0, :, :4, :4])  # top-left, not flipped
    assert torch.equal(out[1], x[1, :, 2:, 2:].flip(-1))  # bottom-right, flipped
    assert torch.equal(random_crop_flip(x, 4, u, flip=False)[1], x[1, :, 2:, 2:])


def test_digits_pair_is_disjoint_labelled_and_styled():
    a, b = digits_pair(16, 1)
    assert len(a) + len(b) == 1797 and abs(len(a) - len(b)) <= 1
    assert a.class_names == b.class_names and a.labels is not None and b.labels is not None
    assert set(a.labels.tolist()) == set(b.labels.tolist()) == set(range(10))
    # Disjoint halves: no B image is the styled version of an A image.
    styled_a = {bytes(t.numpy()) for t in thick_strokes(a.images)}
    assert not styled_a & {bytes(t.numpy()) for t in b.images}
    assert b.images.float().mean() > 1.5 * a.images.float().mean()  # thicker strokes: more ink
