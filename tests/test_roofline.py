"""The benchmark's roofline: FLOPs counted per update and the CPU's peak from lscpu. Only the
counting and the arithmetic are tested: a timing on a shared machine is no figure."""

import pytest
import torch

from benchmarks.contenders.gan import GANBenchSetup, PlainGAN, load_digits
from benchmarks.speed.roofline import count_flops, cpu_peak, gan_update_flops, roofline

XEON_AMX = """Model name:                              Intel(R) Xeon(R) Processor
Thread(s) per core:                      1
Core(s) per socket:                      2
Socket(s):                               1
BogoMIPS:                                5200.00
Flags:                                   fpu sse2 fma avx2 avx512f avx512_bf16 amx_bf16 amx_tile
"""
EPYC = """Model name:                              AMD EPYC 9454 48-Core Processor
Core(s) per socket:                      48
Socket(s):                               1
CPU max MHz:                             3810.0000
Flags:                                   fpu sse2 fma avx2 avx512f avx512_bf16
"""
AVX2_ONLY = """Model name:                              Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz
Core(s) per socket:                      4
Socket(s):                               1
Flags:                                   fpu sse2 fma avx2
"""


@pytest.mark.parametrize(
    "text,threads,cores,ghz,source,fp32,bf16",
    [
        (XEON_AMX, 2, 2, 2.6, "BogoMIPS / 2", 64, 2048),
        (EPYC, 8, 8, 3.81, "CPU max MHz", 64, 128),  # 8 threads use 8 of the 48 cores
        (AVX2_ONLY, 8, 4, 3.4, "model name", 32, 32),  # bf16 emulated: the fp32 peak
    ],
)
def test_cpu_peak_from_lscpu(text, threads, cores, ghz, source, fp32, bf16):
    peak = cpu_peak(text, threads)
    assert (peak.cores, peak.clock_source, peak.fp32_flops_per_cycle, peak.bf16_flops_per_cycle) == (
        cores,
        source,
        fp32,
        bf16,
    )
    assert peak.ghz == pytest.approx(ghz) and peak.fp32_flops == pytest.approx(cores * ghz * 1e9 * fp32)
    with pytest.raises(ValueError, match="no clock"):
        cpu_peak("Flags: avx2\n", 1)


def test_flops_of_a_linear_forward_and_backward():
    layer = torch.nn.Linear(16, 8, bias=False)
    x = torch.randn(4, 16, requires_grad=True)
    # forward 2*B*in*out; backward twice that (the input's gradient and the weight's)
    assert count_flops(lambda: layer(x).sum().backward()) == 6 * 4 * 16 * 8


def test_a_gan_update_is_counted_on_a_copy():
    setup = GANBenchSetup(image_size=16, batch_size=8, z_dim=8, g_channels=8, d_channels=8)
    plain = PlainGAN(setup, load_digits(setup).images[:32], "cpu")
    before = {k: v.clone() for k, v in plain.G.state_dict().items()}
    flops = gan_update_flops(plain)
    assert flops > 0 and flops == gan_update_flops(plain)  # the same update again: the loop did not move
    assert plain.step == 0 and all(torch.equal(before[k], v) for k, v in plain.G.state_dict().items())


def test_roofline_shares_against_the_peak_of_each_precision():
    peak = cpu_peak(XEON_AMX, 2)  # fp32 332.8 GFLOP/s, bf16 10,649.6 GFLOP/s
    roof = roofline(int(1e9), {"toolkit": 64.0, "toolkit_bf16": 128.0}, 64, peak)
    assert roof["achieved_flops_per_s"] == {"toolkit": 1e9, "toolkit_bf16": 2e9}
    assert roof["share_of_peak"]["toolkit"] == pytest.approx(1e9 / peak.fp32_flops)
    assert roof["share_of_peak"]["toolkit_bf16"] == pytest.approx(2e9 / peak.bf16_flops)
    assert roofline(10, {"plain": 1.0}, 1, None)["share_of_peak"] == {}
