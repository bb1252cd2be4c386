"""The GAN update against the CPU's limit: FLOPs counted per update, achieved FLOP/s, and the
share of the CPU's peak, so that "close to the limit" is a number.

FLOPs are counted by ``torch.utils.flop_counter.FlopCounterMode`` on one update of the plain
loop (:class:`benchmarks.contenders.gan.PlainGAN`, the toolkit's formulas): matrix multiplications and
convolutions, forward and backward (each multiply-add is 2 FLOPs). Element-wise work (BatchNorm,
activations, Adam, the EMA) is not counted: it is memory-bound and small against the convolutions.

The peak is ``cores x clock x FLOPs per cycle per core`` from ``lscpu``, with these assumptions,
written into the result:

- cores: the physical cores the benchmark's threads can use (``min(threads, cores)``);
- clock: ``CPU max MHz`` when lscpu gives it, else the ``@ x.xxGHz`` of the model name, else
  half the BogoMIPS (x86 reports twice the TSC clock); turbo and AVX-512 down-clocking ignored;
- fp32: two FMA units per core: 64 FLOPs/cycle with AVX-512 (2 x 16 lanes x 2), 32 with
  AVX2+FMA, 8 otherwise (a Zen 4 core executes AVX-512 on 256-bit halves: half the 64);
- bf16: AMX (``amx_bf16``): 1,024 bf16 multiply-adds per cycle per core (2,048 FLOPs);
  ``avx512_bf16`` (VDPBF16PS): 2 units x 32 pairs x 2 = 128; neither: bf16 is emulated in fp32,
  the fp32 peak.

Timing numbers are meaningful only on an idle machine; the counting is exact anywhere.
"""

from __future__ import annotations

import copy
import re
import subprocess
from dataclasses import asdict, dataclass
from typing import Callable, Dict, Optional

FP32_FLOPS_PER_CYCLE = {"avx512f": 64, "avx2": 32}
BF16_FLOPS_PER_CYCLE = {"amx_bf16": 2048, "avx512_bf16": 128}
FALLBACK_FP32_FLOPS_PER_CYCLE = 8  # SSE: 2 units x 4 lanes, no FMA


def count_flops(fn: Callable[[], object]) -> int:
    """FLOPs of the matrix multiplications and convolutions ``fn`` runs (forward and backward)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def gan_update_flops(plain) -> int:
    """FLOPs of one D + G update of a :class:`benchmarks.contenders.gan.PlainGAN`, counted on a copy (the
    benchmark's own loop keeps its position, noise and weights)."""
    return count_flops(lambda: copy.deepcopy(plain).train(1))


@dataclass(frozen=True)
class CpuPeak:
    cores: int
    ghz: float
    clock_source: str  # where ghz came from
    fp32_flops_per_cycle: int
    bf16_flops_per_cycle: int
    fp32_unit: str  # the flag the fp32 figure assumes
    bf16_unit: str

    @property
    def fp32_flops(self) -> float:
        return self.cores * self.ghz * 1e9 * self.fp32_flops_per_cycle

    @property
    def bf16_flops(self) -> float:
        return self.cores * self.ghz * 1e9 * self.bf16_flops_per_cycle

    def as_dict(self) -> dict:
        return {**asdict(self), "fp32_peak_flops": self.fp32_flops, "bf16_peak_flops": self.bf16_flops}


def _field(lscpu: str, name: str) -> Optional[str]:
    match = re.search(rf"^{re.escape(name)}:\s*(.+)$", lscpu, re.MULTILINE)
    return match.group(1).strip() if match else None


def _clock_ghz(lscpu: str) -> tuple:
    max_mhz = _field(lscpu, "CPU max MHz")
    if max_mhz:
        return float(max_mhz) / 1000, "CPU max MHz"
    model = _field(lscpu, "Model name") or ""
    match = re.search(r"@\s*([\d.]+)\s*GHz", model)
    if match:
        return float(match.group(1)), "model name"
    bogomips = _field(lscpu, "BogoMIPS")
    if bogomips:
        return float(bogomips) / 2000, "BogoMIPS / 2"
    raise ValueError("lscpu gives no clock (CPU max MHz, model name @ GHz or BogoMIPS)")


def cpu_peak(lscpu: str, threads: int) -> CpuPeak:
    """The peak of the cores ``threads`` threads can use, from ``lscpu``'s text (see the module's
    assumptions)."""
    flags = set((_field(lscpu, "Flags") or "").split())
    per_socket = int(_field(lscpu, "Core(s) per socket") or 1)
    sockets = int(_field(lscpu, "Socket(s)") or 1)
    ghz, source = _clock_ghz(lscpu)
    fp32_unit = next((f for f in FP32_FLOPS_PER_CYCLE if f in flags), "none")
    fp32 = FP32_FLOPS_PER_CYCLE.get(fp32_unit, FALLBACK_FP32_FLOPS_PER_CYCLE)
    bf16_unit = next((f for f in BF16_FLOPS_PER_CYCLE if f in flags), "none (emulated in fp32)")
    bf16 = BF16_FLOPS_PER_CYCLE.get(bf16_unit, fp32)
    return CpuPeak(min(threads, per_socket * sockets), ghz, source, fp32, bf16, fp32_unit, bf16_unit)


def read_lscpu() -> Optional[str]:
    try:
        return subprocess.run(["lscpu"], capture_output=True, text=True, check=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def roofline(flops_per_update: int, images_per_s: Dict[str, float], batch_size: int, peak: Optional[CpuPeak]) -> dict:
    """Achieved FLOP/s of each contender (its median images/s as updates/s) and its share of the
    peak of its precision (``bf16`` contenders against the bf16 peak)."""
    out = {"flops_per_update": flops_per_update, "achieved_flops_per_s": {}, "share_of_peak": {}}
    for name, ips in images_per_s.items():
        achieved = flops_per_update * ips / batch_size
        out["achieved_flops_per_s"][name] = achieved
        if peak is not None:
            out["share_of_peak"][name] = achieved / (peak.bf16_flops if "bf16" in name else peak.fp32_flops)
    if peak is not None:
        out["peak"] = peak.as_dict()
    return out
