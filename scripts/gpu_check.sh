#!/usr/bin/env bash
# One short check for a GPU machine (about 8 minutes on one GPU): the benchmark on CUDA with
# fp32 / bf16 / fp16, channels_last and torch.compile; the fp16 two-optimizer path with skipped
# steps counted per optimizer; images/s of each; with 2 GPUs or more, a real FSDP2 run of the
# engine's per-network prepare plan (not run yet: no multi-GPU machine so far). Figures go to $OUT (default gpu_check_out/).
#
#     bash scripts/gpu_check.sh            # then copy the summary into docs/benchmarks.md
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-gpu_check_out}
mkdir -p "$OUT"
export TQDM_DISABLE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

echo "== device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
timeout 60 "$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print('torch', torch.__version__, torch.cuda.get_device_name(0), 'bf16:', torch.cuda.is_bf16_supported())"

# DCGAN-64 on digits upscaled to 64 px, batch 128: big enough for the GPU to matter.
GAN="--device cuda --threads 4 --gan_image_size 64 --gan_batch_size 128 --gan_rounds 6 --gan_chunk 25 --gan_warmup 15"

echo "== 1/4 GAN fp32: toolkit vs plain loop; channels_last, bf16 and compile variants; sampling"
timeout 300 "$PY" -m benchmarks.speed loops $GAN --only gan,sampling --gan_variants channels_last,bf16,compile \
    --sample_images 16384 --sample_batch_size 1024 --output_json "$OUT/bench_gan_bf16.json" 2>"$OUT/bench_gan_bf16.err"

echo "== 2/4 GAN fp16 variant (a separate process: Accelerate's precision is process-wide)"
timeout 150 "$PY" -m benchmarks.speed loops $GAN --only gan --gan_variants fp16 --output_json "$OUT/bench_gan_fp16.json" \
    2>"$OUT/bench_gan_fp16.err"

echo "== 3/4 fp16 two-optimizer path: one GradScaler, D step then G step, skips counted per optimizer"
timeout 150 "$PY" - "$OUT" <<'PY' 2>"$OUT/fp16_path.err"
import json, sys, time
from pathlib import Path
import torch
from benchmarks.common import synchronize
from benchmarks.contenders.gan import GANBenchSetup, build_toolkit

out = Path(sys.argv[1])
setup = GANBenchSetup(image_size=64, batch_size=128, cpu=False, rounds=1, chunk=200, warmup=0)
trainer = build_toolkit(setup, out / "fp16_run", mixed_precision="fp16")
engine = trainer.engine
opt_G, opt_D = engine.optimizers["G"], engine.optimizers["D"]
skipped = {"D": 0, "G": 0}
def counting(opt, name):
    step = opt.step
    def wrapped(*a, **k):
        result = step(*a, **k)
        skipped[name] += bool(opt.step_was_skipped)  # a host sync: fine in a check, not in the loop
        return result
    return wrapped
opt_D.step, opt_G.step = counting(opt_D, "D"), counting(opt_G, "G")
engine.save_checkpoint = trainer.save_samples = lambda: None
engine.logger = trainer.run.make_logger(setup.chunk, unit="img", desc="fp16")
engine.max_steps = setup.chunk
synchronize("cuda"); t0 = time.perf_counter()
engine.train_loop()
synchronize("cuda"); seconds = time.perf_counter() - t0
scale = float(trainer.run.accelerator.scaler.get_scale())
finite = all(bool(torch.isfinite(t).all()) for t in [*engine.nets.G.parameters(), *engine.nets.D.parameters()])
result = {"steps": setup.chunk, "skipped": skipped, "final_scale": scale, "weights_finite": finite,
          "images_per_s": setup.chunk * setup.batch_size / seconds}
print(json.dumps(result))
(out / "fp16_path.json").write_text(json.dumps(result, indent=2) + "\n")
assert finite, "fp16 run ended with non-finite weights"
assert skipped["D"] < setup.chunk // 4 and skipped["G"] < setup.chunk // 4, "too many skipped fp16 steps"
PY

echo "== 4/4 classifier: toolkit vs transformers.Trainer on CUDA"
timeout 200 "$PY" -m benchmarks.speed loops --device cuda --only classifier --classifier_reps 3 \
    --output_json "$OUT/bench_classifier.json" 2>"$OUT/bench_classifier.err"

echo "== 5/5 FSDP2 (2 GPUs or more): the engine's per-network prepare plan on tests/test_engine.py's recipe"
if [ "$(timeout 60 "$PY" -c 'import torch; print(torch.cuda.device_count())')" -ge 2 ]; then
    cat >"$OUT/fsdp2_check.py" <<'PY'
import sys
import torch
from torch.utils.data import DataLoader
from test_engine import DIM, N, build_recipe
from gan_accel.config import RunArguments
from gan_accel.data import ResumableSampler
from gan_accel.engine import PER_NETWORK, Engine
from gan_accel.loop import TrainingRun

run = TrainingRun(RunArguments(output_dir=sys.argv[1], overwrite_output_dir=True, log_every=1), {"check": "fsdp2"}, "fsdp2")
data = torch.randn(N, DIM, generator=torch.Generator().manual_seed(1))
loader = DataLoader(range(N), batch_size=8, sampler=ResumableSampler(N), drop_last=True)
engine = Engine(run, build_recipe(data, 6, shared_optimizer=False), loader, max_steps=6)
assert engine.prepared.plan == PER_NETWORK, engine.prepared.plan
engine.train()
run.finish()
PY
    PYTHONPATH="tests${PYTHONPATH:+:$PYTHONPATH}" timeout 300 "$PY" -m accelerate.commands.launch --num_processes 2 --use_fsdp --fsdp_version 2 "$OUT/fsdp2_check.py" \
        "$OUT/fsdp2" >"$OUT/fsdp2.log" 2>&1 && echo "fsdp2: ok (4 networks, 3 optimizers, 6 G updates)" \
        || echo "fsdp2: FAILED, see $OUT/fsdp2.log"
else
    echo "fsdp2: skipped (one GPU; FSDP2 needs 2 or more)"
fi

echo "== summary"
"$PY" - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
def med(s): return f"{s['median']:.1f} (spread {100 * s['spread']:.0f}%)"
for name in ("bench_gan_bf16", "bench_gan_fp16"):
    g = json.loads((out / f"{name}.json").read_text())["gan"]
    print(f"{name}: plain {med(g['images_per_s']['plain'])} img/s, toolkit {med(g['images_per_s']['toolkit'])} img/s, "
          f"ratio {g['ratio_vs_plain']['median']:.3f}, weight diff {g['weights_max_abs_diff']:.2g}")
    for v, s in g["variant_ratio_vs_toolkit"].items():
        print(f"   {v}: {med(g['images_per_s']['toolkit_' + v])} img/s, x{s['median']:.3f} vs toolkit fp32 "
              f"(warm-up {g['warmup_seconds']['toolkit_' + v]:.1f} s)")
s = json.loads((out / "bench_gan_bf16.json").read_text())["sampling"]
print(f"sampling: {med(s['images_per_s'])} img/s, with PNG files {med(s['images_per_s_with_png_files'])} img/s")
print("fp16 path:", (out / "fp16_path.json").read_text().strip().replace("\n", " "))
c = json.loads((out / "bench_classifier.json").read_text())["classifier"]
print(f"classifier: toolkit/Trainer x{c['ratio_vs_trainer']['median']:.3f}, accuracy "
      f"{c['accuracy']['toolkit']['median']:.4f} / {c['accuracy']['trainer']['median']:.4f}")
PY
