"""Run the selected benchmarks, print one table, write the JSON."""

from __future__ import annotations

import json
import platform
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Optional

import torch

from benchmarks.common import set_threads


def cpuinfo(path: str = "/proc/cpuinfo") -> Dict[str, str]:
    """The first processor's fields of ``path`` (empty where there is none)."""
    fields: Dict[str, str] = {}
    try:
        text = Path(path).read_text()
    except OSError:
        return fields
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


def machine() -> Dict[str, object]:
    """The CPU (its name, family and model as lscpu prints them, and the instructions bf16 speed
    depends on), the thread count and the library versions: every figure names its machine."""
    info_cpu = cpuinfo()
    flags = info_cpu.get("flags", "").split()
    import os

    info = {
        "cpu": info_cpu.get("model name") or platform.processor() or platform.machine(),
        "cpu_family_model": f"{info_cpu.get('cpu family', '?')}/{info_cpu.get('model', '?')}",
        "cpu_isa": [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags],
        "logical_cpus": os.cpu_count(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
    }
    try:
        import accelerate
        import transformers

        info.update(accelerate=accelerate.__version__, transformers=transformers.__version__)
    except ImportError:
        pass
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def run_benchmark(args, command: str = "", log: Callable[[str], None] = print) -> dict:
    from benchmarks.contenders.classifier import bench_classifier
    from benchmarks.contenders.gan import GANBenchSetup, bench_gan
    from benchmarks.contenders.sampling import bench_sampling

    set_threads(args.threads)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="gan_accel_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    cpu = args.device == "cpu"
    result: Dict[str, object] = {"machine": machine(), "command": command}
    if "gan" in parts or "sampling" in parts:
        setup = GANBenchSetup(
            image_size=args.gan_image_size,
            batch_size=args.gan_batch_size,
            rounds=args.gan_rounds,
            chunk=args.gan_chunk,
            warmup=args.gan_warmup,
            seed=args.seed,
            cpu=cpu,
            g_channels=args.gan_channels,
            d_channels=args.gan_channels,
        )
        variants = [v for v in args.gan_variants.split(",") if v]
        log(
            f"GAN: {len(variants) + 2} contenders x {setup.rounds} rounds x {setup.chunk} steps (+{setup.warmup} warm-up)"
        )
        result["gan"] = bench_gan(setup, variants, log=log, export_to=work / "generator")
    if "infogan" in parts:
        from benchmarks.contenders.infogan import InfoGANBenchSetup, bench_infogan

        setup = InfoGANBenchSetup(
            rounds=args.infogan_rounds, chunk=args.infogan_chunk, warmup=args.infogan_warmup, seed=args.seed
        )
        log(
            f"InfoGAN: the example task vs a hand-written Accelerate loop x {setup.rounds} rounds x {setup.chunk} steps"
        )
        result["infogan"] = bench_infogan(setup, log=log)
    if "classifier" in parts:
        from benchmarks.corpora import default_setup

        result["classifier"] = {}
        for corpus in [c.strip() for c in args.classifier_corpora.split(",") if c.strip()]:
            overrides = {"epochs": args.classifier_epochs} if args.classifier_epochs else {}
            if corpus == "synthetic":
                overrides["n_train"] = args.classifier_n_train
            setup = default_setup(corpus, reps=args.classifier_reps, seed=args.seed, cpu=cpu, **overrides)
            log(f"Classifier on {corpus}: toolkit vs transformers.Trainer (defaults, group_by_length) x {setup.reps}")
            result["classifier"][corpus] = bench_classifier(setup, work / "classifier" / corpus, log=log)
    if "sampling" in parts:
        result["sampling"] = bench_sampling(
            work / "generator",
            args.sample_images,
            args.sample_batch_size,
            args.sample_reps,
            work / "samples",
            device=args.device,
            log=log,
        )
    return result


def _fmt(s: dict, digits: int = 1) -> str:
    return f"{s['median']:.{digits}f} (spread {100 * s['spread']:.0f}%)"


def table(result: dict) -> str:
    rows: List[tuple] = []
    g = result.get("gan")
    if g:
        ips = g["images_per_s"]
        rows.append(("GAN plain PyTorch loop", "img/s", _fmt(ips["plain"])))
        rows.append(("GAN toolkit (Engine.train_loop)", "img/s", _fmt(ips["toolkit"])))
        rows.append(("  ratio toolkit / plain", "x", _fmt(g["ratio_vs_plain"], 3)))
        rows.append(
            (
                "  max |weight diff| (G, D, EMA)",
                "",
                f"{g['weights_max_abs_diff']:.3g} after {g['steps_compared']} steps",
            )
        )
        for name, s in g["variant_ratio_vs_toolkit"].items():
            rows.append((f"  toolkit --{name} / toolkit", "x", _fmt(s, 3)))
        rows.append(("  end-of-run checkpoint + grid (once)", "s", f"{g['end_of_run_io_seconds']:.2f}"))
        rows += roofline_rows(g.get("roofline"))

    i = result.get("infogan")
    if i:
        rows.append(("InfoGAN hand-written Accelerate loop", "img/s", _fmt(i["images_per_s"]["plain"])))
        rows.append(("InfoGAN task (docs/infogan_example.py)", "img/s", _fmt(i["images_per_s"]["toolkit"])))
        rows.append(("  ratio task / hand-written", "x", _fmt(i["ratio_vs_plain"], 3)))
        if "ratio_vs_plain_torch_step" in i:  # the loop stepping the torch optimizers, as the engine does
            rows.append(("  ratio task / hand-written, torch step()", "x", _fmt(i["ratio_vs_plain_torch_step"], 3)))
        diff = f"{i['weights_max_abs_diff']:.3g} after {i['steps_compared']} steps"
        rows.append(("  max |weight diff| (G, Q, D)", "", diff))
        rows.append(("  end-of-run checkpoint + grid (once)", "s", f"{i['end_of_run_io_seconds']:.2f}"))
    for corpus, c in (result.get("classifier") or {}).items():
        rows += classifier_rows(corpus, c)
    s = result.get("sampling")
    if s:
        rows.append((f"Sampling (generate_images, batch {s['batch_size']})", "img/s", _fmt(s["images_per_s"], 0)))
        rows.append(("  with PNG files (sample_gan.py)", "img/s", _fmt(s["images_per_s_with_png_files"], 0)))
    width = max(len(r[0]) for r in rows) if rows else 10
    lines = [f"{'benchmark':<{width}}  {'unit':<9}  median (max-min spread)", "-" * (width + 40)]
    lines += [f"{a:<{width}}  {b:<9}  {c}" for a, b, c in rows]
    return "\n".join(lines)


def roofline_rows(roof: Optional[dict]) -> List[tuple]:
    """FLOPs per update, and each contender's GFLOP/s with its share of the CPU's peak."""
    if not roof:
        return []
    rows = [("  FLOPs per update (counted: matmul, conv)", "GFLOP", f"{roof['flops_per_update'] / 1e9:.3f}")]
    for name, achieved in roof["achieved_flops_per_s"].items():
        share = roof["share_of_peak"].get(name)
        rows.append(
            (
                f"  {name}: achieved" + (" / peak" if share is not None else ""),
                "GFLOP/s",
                f"{achieved / 1e9:.1f}" + (f" ({100 * share:.1f}% of peak)" if share is not None else ""),
            )
        )
    peak = roof.get("peak")
    if peak:
        rows.append(
            (
                "  peak (lscpu: cores x clock x FLOPs/cycle)",
                "GFLOP/s",
                f"fp32 {peak['fp32_peak_flops'] / 1e9:.0f} ({peak['fp32_unit']}), bf16 {peak['bf16_peak_flops'] / 1e9:.0f} "
                f"({peak['bf16_unit']}); {peak['cores']} cores x {peak['ghz']:.2f} GHz ({peak['clock_source']})",
            )
        )
    return rows


def classifier_rows(corpus: str, c: dict) -> List[tuple]:
    sps, acc, pad = c["samples_per_s"], c["accuracy"], c["padding_fraction"]
    names = {
        "trainer": "transformers.Trainer (defaults)",
        "trainer_grouped": "Trainer group_by_length",
        "toolkit": "toolkit (ClassifierTrainer)",
    }
    rows = [(f"Classifier, {corpus} corpus", "", "")]
    for key, label in names.items():
        rows.append(
            (
                f"  {label}",
                "samples/s",
                f"{_fmt(sps[key])}  acc {acc[key]['median']:.4f}  padding {100 * pad[key]:.0f}%",
            )
        )
    rows.append(("  ratio toolkit / Trainer defaults", "x", _fmt(c["ratio_vs_trainer"], 3)))
    rows.append(("  ratio toolkit / Trainer group_by_length", "x", _fmt(c["ratio_vs_trainer_grouped"], 3)))
    rows.append(
        ("  same, the toolkit's exports left out", "x", _fmt(c["ratio_vs_trainer_grouped_without_exports"], 3))
    )
    return rows


def write_json(result: dict, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str) + "\n")
    return path
