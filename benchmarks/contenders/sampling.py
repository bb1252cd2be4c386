"""Sampling throughput along ``scripts/sample_gan.py``'s path: load the exported generator,
``generate_images`` in batches, and (end to end) write the PNG files."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from benchmarks.common import summary, synchronize


def bench_sampling(
    generator_dir: Path, num_images: int, batch_size: int, reps: int, out_dir: Path, device="cpu", log=print
) -> dict:
    from gan_accel.models import load_generator
    from gan_accel.sampling import generate_images, save_individual

    G = load_generator(generator_dir).to(device)
    generate_images(G, min(num_images, batch_size), batch_size=batch_size, seed=0)  # warm-up
    generate, end_to_end = [], []
    for r in range(reps):
        synchronize(device)
        t0 = time.perf_counter()
        images = generate_images(G, num_images, batch_size=batch_size, seed=r)
        synchronize(device)
        t1 = time.perf_counter()
        save_individual(images, Path(out_dir))
        t2 = time.perf_counter()
        generate.append(num_images / (t1 - t0))
        end_to_end.append(num_images / (t2 - t0))
        shutil.rmtree(out_dir, ignore_errors=True)
        log(
            f"  sampling rep {r + 1}/{reps}: generate {generate[-1]:.0f} img/s, with PNG files {end_to_end[-1]:.0f} img/s"
        )
    return {
        "num_images": num_images,
        "batch_size": batch_size,
        "device": str(device),
        "image_shape": [G.channels, G.image_size, G.image_size],
        "images_per_s": summary(generate),
        "images_per_s_with_png_files": summary(end_to_end),
    }


def export_generator(trainer, out: Path) -> Path:
    """The toolkit's export (calibrated EMA generator), as ``train_gan.py`` writes it."""
    from gan_accel.models import save_generator

    save_generator(trainer.calibrated_ema().cpu(), out)
    return out


__all__ = ["bench_sampling", "export_generator"]
