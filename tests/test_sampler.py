import torch

from gan_accel.data import ResumableSampler


def test_same_seed_epoch_gives_same_order_and_epochs_differ():
    a, b = ResumableSampler(50, seed=3), ResumableSampler(50, seed=3)
    assert list(a) == list(b)
    a.set_epoch(1)
    assert list(a) != list(b)
    assert sorted(a) == list(range(50))


def test_set_position_resumes_mid_epoch_then_next_pass_is_full():
    full = ResumableSampler(40, seed=1)
    full.set_epoch(2)
    order = list(full)
    resumed = ResumableSampler(40, seed=1)
    resumed.set_position(2, 16)
    assert len(resumed) == 24
    assert list(resumed) == order[16:]
    assert list(resumed) == order  # the skip applies once


def test_unshuffled_is_identity():
    assert list(ResumableSampler(5, shuffle=False)) == [0, 1, 2, 3, 4]
    assert torch.equal(ResumableSampler(5, shuffle=False).permutation(7), torch.arange(5))
