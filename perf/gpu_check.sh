#!/usr/bin/env bash
# The GPU checks of docs/quackie_models.md ("Devices"), in one run on a machine with an NVIDIA GPU,
# Python 3.12, torch and transformers, after perf/gpu_check_prepare.sh was run where pip works
# (it leaves the wheels in .whl and the model and SQuAD dev file in .gpu_check). About 3 minutes
# on an H200. Usage there, from the repository root: bash perf/gpu_check.sh [SAMPLES]
#   1. LIME-100: ours on the GPU (batch size 128) against the lime package with a plain
#      classifier on the same GPU, same explanations (perf/quackie_lime.py --device cuda);
#   2. all 15 baseline rows: ours against each row on its own with the plain classifier, both
#      on the GPU, and ours on the GPU against ours on the CPU: per row, the largest score
#      difference and the top-sentence agreement (perf/quackie_baselines.py --compare-with cpu);
#   3. all 15 rows on 495 samples (the demo track's size) on the GPU, ours alone.
# The whole log goes to $OUT/gpu_check.log when OUT is set (the device runner's folder).
set -uo pipefail
cd "$(dirname "$0")/.."
samples=${1:-10}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "installing the wheels of .whl failed: run perf/gpu_check_prepare.sh first"; exit 1; }
export PYTHONPATH=/tmp/site OMP_WAIT_POLICY=PASSIVE HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
export EXPBENCH_SHARED_DATA="$PWD/.gpu_check"
log="${OUT:-/tmp}/gpu_check.log"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, \
'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
  # the float16 copy back to float32: both devices explain the same float32 network
  python3 -c "import torch; from transformers import AutoModelForSequenceClassification as M, AutoTokenizer as T
M.from_pretrained('.gpu_check/model-fp16', dtype=torch.float32).save_pretrained('/tmp/model')
T.from_pretrained('.gpu_check/model-fp16').save_pretrained('/tmp/model')" || exit 1
  echo "model: $(cat .gpu_check/model-fp16/SOURCE) (float16-rounded weights, run in float32)"
  echo "== 1. LIME-100 on the GPU"
  timeout 150 python3 perf/quackie_lime.py --device cuda --samples "$samples" --threads 4 --model /tmp/model
  echo "== 2. all 15 rows: GPU against the plain classifier on the GPU, and GPU against CPU ($(nproc) threads)"
  timeout 200 python3 perf/quackie_baselines.py --device cuda --samples "$samples" --threads "$(nproc)" \
    --model /tmp/model --compare-with cpu
  echo "== 3. all 15 rows on 495 samples on the GPU"
  timeout 200 python3 perf/quackie_baselines.py --device cuda --samples 495 --threads 4 --model /tmp/model --no-peer
  date -u
} 2>&1 | tee "$log"
