"""Length-grouped batches: a pure function of (seed, epoch), exact mid-epoch resume, batches of close
lengths, whole batches dealt to 2 processes (disjoint, covering the epoch), and the evaluation
order undone for per-example results."""

import random
import statistics

import pytest
import torch
from accelerate.data_loader import prepare_data_loader
from torch.utils.data import DataLoader

from gan_accel.data.length_grouped import (
    LengthGroupedSampler,
    length_grouped_order,
    longest_first,
    mega_batch_size,
    restore_order,
    sorted_mega_batches,
)

# Real-text-like lengths: mostly short, a long tail capped at 128 (as --max_length truncates).
# 996 = 124 full batches of 8 and a short one of 4.
LENGTHS = [min(128, int(random.Random(i).expovariate(1 / 30)) + 3) for i in range(996)]
BS = 8


def batches_of(order, bs=BS):
    return [list(order[k : k + bs]) for k in range(0, len(order), bs)]


def test_order_is_a_permutation_and_a_pure_function_of_seed_and_epoch():
    a, b = LengthGroupedSampler(LENGTHS, BS, seed=3), LengthGroupedSampler(LENGTHS, BS, seed=3)
    assert list(a) == list(b) and sorted(a) == list(range(len(LENGTHS)))
    a.set_epoch(1)
    b.set_epoch(1)
    assert list(a) == list(b) != list(LengthGroupedSampler(LENGTHS, BS, seed=3))
    assert list(LengthGroupedSampler(LENGTHS, BS, seed=4)) != list(LengthGroupedSampler(LENGTHS, BS, seed=3))


def test_resumes_exactly_mid_epoch_then_next_pass_is_full():
    full = LengthGroupedSampler(LENGTHS, BS, seed=1)
    full.set_epoch(2)
    order = list(full)
    resumed = LengthGroupedSampler(LENGTHS, BS, seed=1)
    resumed.set_position(2, 10 * BS)
    assert len(resumed) == len(LENGTHS) - 10 * BS
    assert list(resumed) == order[10 * BS :]
    assert list(resumed) == order  # the skip applies once


def test_each_batch_is_a_run_of_its_sorted_mega_batch():
    """Every full batch is BS consecutive samples of one mega-batch sorted by length (so no sample
    of that mega-batch lies strictly between the batch's shortest and longest); the batches are
    shuffled across mega-batches, the longest first, the short one last."""
    lengths = torch.tensor(LENGTHS)
    megas = sorted_mega_batches(lengths, BS, torch.Generator().manual_seed(0))
    order = length_grouped_order(lengths, BS, torch.Generator().manual_seed(0)).tolist()
    assert mega_batch_size(len(LENGTHS), BS) == 31 * BS  # min(50, 996 // (4 x 8)) batches
    runs = {tuple(run) for mega in megas for run in batches_of(mega.tolist()) if len(run) == BS}
    batches = batches_of(order)
    assert len(batches[-1]) == len(LENGTHS) % BS and all(len(b) == BS for b in batches[:-1])
    assert all(tuple(b) in runs for b in batches[:-1])
    assert max(LENGTHS[i] for i in batches[0]) == max(LENGTHS)
    mega_of = {i: k for k, mega in enumerate(megas) for i in mega.tolist()}
    assert len({mega_of[b[0]] for b in batches[1:9]}) > 1  # consecutive batches come from several mega-batches


def test_batch_lengths_are_close_and_padding_drops():
    order = list(LengthGroupedSampler(LENGTHS, BS, seed=0))
    shuffled = torch.randperm(len(LENGTHS), generator=torch.Generator().manual_seed(0)).tolist()

    def spread_and_padding(order):
        batches = [[LENGTHS[i] for i in b] for b in batches_of(order)]
        spread = statistics.median(max(b) / min(b) for b in batches)
        padding = 1 - sum(map(sum, batches)) / sum(len(b) * max(b) for b in batches)
        return spread, padding

    (grouped_spread, grouped_pad), (random_spread, random_pad) = (
        spread_and_padding(order),
        spread_and_padding(shuffled),
    )
    assert grouped_spread <= 1.25 < 3 < random_spread
    assert grouped_pad < 0.1 < 0.5 < random_pad


def shards(sampler, epoch, start=0):
    """What each of 2 processes gets from Accelerate's sharded loader (its set_epoch included)."""
    out = []
    for rank in range(2):
        sampler.set_position(epoch, start)
        dl = prepare_data_loader(
            DataLoader(list(range(len(LENGTHS))), batch_size=BS, sampler=sampler),
            num_processes=2,
            process_index=rank,
            put_on_device=False,
        )
        dl.set_epoch(epoch)
        out.append([b.tolist() for b in dl])
    return out


def test_two_processes_get_disjoint_whole_batches_covering_the_epoch():
    sampler = LengthGroupedSampler(LENGTHS, BS, seed=5)
    sampler.set_epoch(1)
    single = batches_of(list(sampler))  # 124 full batches, then the short one
    rank0, rank1 = shards(sampler, epoch=1)
    assert len(rank0) == len(rank1) == 63
    # Round-robin: each process gets whole batches of the single-process order.
    assert rank0[:62] == single[0:124:2] and rank1[:62] == single[1:124:2]
    assert rank0[62][:4] == single[124]
    seen = [i for b in rank0 + rank1 for i in b]
    assert set(seen) == set(range(len(LENGTHS)))
    # 125 batches do not split over 2 processes: Accelerate evens them out by wrapping around to
    # the start of the epoch in the last batches, the only samples seen twice.
    repeated = {i for i in seen if seen.count(i) > 1}
    assert repeated and repeated <= set(rank0[-1] + rank1[-1])


def test_two_processes_resume_mid_epoch_on_the_same_batches():
    sampler = LengthGroupedSampler(LENGTHS, BS, seed=5)
    rank0, rank1 = shards(sampler, epoch=2)
    k = 7  # global batches done before the interruption: 7 x 2 processes x BS samples
    resumed0, resumed1 = shards(sampler, epoch=2, start=k * 2 * BS)
    assert resumed0[:-1] == rank0[k:-1] and resumed1[:-1] == rank1[k:-1]


def test_longest_first_and_restore_order():
    lengths = [3, 9, 1, 9, 5]
    order = longest_first(lengths)
    assert order == [1, 3, 4, 0, 2]  # stable among equal lengths
    assert restore_order([f"out{i}" for i in order], order) == [f"out{i}" for i in range(5)]
    with pytest.raises(TypeError):
        LengthGroupedSampler(LENGTHS)  # the batch size is needed to cut batches
