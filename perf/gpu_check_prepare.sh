#!/usr/bin/env bash
# Prepares what perf/gpu_check.sh needs on a GPU machine that has Python, torch and transformers
# but nothing else and no network (docs/quackie_models.md, "Devices"): run once here, from the
# repository root, then send the working tree with .whl and .gpu_check to the GPU machine
# (together well under 64 MiB) and run `bash perf/gpu_check.sh` there.
#   .whl/        wheels of the explanation packages (captum, lime, shap and its slicer, nltk) for
#                CPython 3.12 on x86-64 Linux, the GPU image's Python
#   .gpu_check/  the classifier in float16 (half the bytes; gpu_check.sh turns it back into
#                float32 before anything runs: the same float16-rounded weights on both devices)
#                and the ExpMRC SQuAD dev file (read from ../shared/data, never committed)
# Both folders are listed in .git/info/exclude, so git never sees them.
set -euo pipefail
cd "$(dirname "$0")/.."
source .venv/bin/activate
mkdir -p .git/info
for folder in /.whl/ /.gpu_check/; do
  grep -qxF "$folder" .git/info/exclude 2>/dev/null || echo "$folder" >> .git/info/exclude
done
rm -rf .whl .gpu_check && mkdir -p .whl .gpu_check
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
  -d .whl captum==0.9.0 shap==0.51.0 slicer==0.0.8 nltk==3.9.2
python -m pip wheel -q --no-deps -w .whl lime==0.2.0.1  # lime is published as a source archive only
OMP_WAIT_POLICY=PASSIVE HF_HUB_OFFLINE=1 python - <<'EOF'
import shutil, sys, tempfile
from pathlib import Path
import torch
sys.path.insert(0, "perf")
from quackie_lime import DEMO_MODEL, SQUAD_DEV, untrained_minilm
from transformers import AutoModelForSequenceClassification, AutoTokenizer

source = DEMO_MODEL if (DEMO_MODEL / "config.json").is_file() else untrained_minilm(Path(tempfile.mkdtemp()) / "minilm")
network = AutoModelForSequenceClassification.from_pretrained(source, local_files_only=True, dtype=torch.float32)
network.half().save_pretrained(".gpu_check/model-fp16")
AutoTokenizer.from_pretrained(source, local_files_only=True).save_pretrained(".gpu_check/model-fp16")
Path(".gpu_check/model-fp16/SOURCE").write_text(f"{source}\n")
Path(".gpu_check/expmrc").mkdir()
shutil.copy(SQUAD_DEV, ".gpu_check/expmrc/")
print(f"model: {source} (float16 copy)")
EOF
du -sh .whl .gpu_check
