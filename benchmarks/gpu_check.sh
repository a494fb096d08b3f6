#!/usr/bin/env bash
# The GPU check (about 5 minutes, at most 10): the CUDA-marked tests, then train steps of TopoRAG and G-Retriever
# with a Llama-2-7B-shaped LLM made in code (benchmarks/gpu_check.py). Needs CUDA and nothing downloaded.
#     bash benchmarks/gpu_check.sh [gpu_check.py options, e.g. --steps 10]      (or: make gpu-check)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
if ! "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    echo "gpu_check: no CUDA device for $PY (no GPU, or torch's CPU build: see README, Running on a GPU)" >&2
    exit 1
fi
"$PY" -c "import torch; print('device:', torch.cuda.get_device_name(0), '| torch', torch.__version__)"
echo "== CUDA-marked tests"
timeout 180 "$PY" -m pytest -m cuda -q
echo "== train steps with a Llama-2-7B-shaped LLM"
timeout 420 "$PY" benchmarks/gpu_check.py "$@"
