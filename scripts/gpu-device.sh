#!/bin/bash
# The GPU target's tests and benchmarks on the device machine (an H200, through the session's
# device tool), in one call. The folder it runs from holds a copy of this repository's mgxir/,
# grammar/, bench/, test/, scripts/, examples/ and pyproject.toml, whl/: py3.12 wheels of what the device
# lacks (lark, nvmath-python, nvidia-cudnn-frontend), and shared/: MIGraphX's reference programs and ONNX
# test models (from $MGXIR_SHARED, else ../shared; the tests find it as MGXIR_SHARED), put there by
#   bash scripts/gpu-device.sh --bundle DIR      (here: copies the files, downloads the wheels)
# On the device:  bash scripts/gpu-device.sh STEP...   with STEP one of
#   check                   versions, and whether cuDNN's frontend and cuBLASLt load
#   tests=FILE[,FILE]       pytest -m gpu on those test files
#   depthwise[=ARGS]        bench/bench_depthwise.py ARGS (words joined by '+')
#   models=ARGS             bench/bench_models.py ARGS (words joined by '+')
# Logs and tables go to $OUT.
set -u
if [ "${1:-}" = "--bundle" ]; then
  dest=$2
  here=$(cd "$(dirname "$0")/.." && pwd)
  mkdir -p "$dest/whl"
  rm -rf "$dest/mgxir" "$dest/bench" "$dest/test" "$dest/scripts" "$dest/grammar" "$dest/examples"
  (cd "$here" && git ls-files -co --exclude-standard mgxir grammar bench test scripts examples pyproject.toml | tar -cf - -T -) |
    tar -xf - -C "$dest"
  shared=${MGXIR_SHARED:-$here/../shared}
  if [ -d "$shared/reference" ]; then
    rm -rf "$dest/shared" && mkdir -p "$dest/shared" && cp -r "$shared/reference" "$shared/onnx-models" "$dest/shared/"
  fi
  ls "$dest"/whl/*.whl >/dev/null 2>&1 || python3 -m pip download -q --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dest/whl" \
    lark==1.3.1 nvmath-python==1.0.0 nvidia-cudnn-frontend==1.32.0
  du -sh "$dest"
  exit 0
fi
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 MGXIR_KERNEL_CACHE=/tmp/mgxir-kernels
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
T0=$(date +%s)
log() { echo "[dev $(($(date +%s) - T0)) s] $*" | tee -a "$OUT/log"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site whl/*.whl 2>&1 |
  tail -3 | tee -a "$OUT/log"
export PYTHONPATH=/tmp/site:$PWD
[ -d shared ] && export MGXIR_SHARED=$PWD/shared
for step in "$@"; do
  name=${step%%=*}
  value=${step#*=}
  [ "$value" = "$step" ] && value=""
  args=${value//+/ }
  log "step $step"
  case $name in
  check)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$OUT/log"
    python3 -c "
import torch, cuda.core, numpy
print('torch', torch.__version__, 'cuDNN', torch.backends.cudnn.version(), 'numpy', numpy.__version__)
import cudnn; print('cudnn frontend', cudnn.__version__, 'backend', cudnn.backend_version())
from nvmath.bindings import cublasLt; print('cublasLt', cublasLt.get_version())
from mgxir.targets.gpu.compiler import device_arch, compiler_version; print(device_arch(), compiler_version())
" 2>&1 | tee -a "$OUT/log"
    ;;
  tests)
    python3 -m pytest -q -m gpu -p no:cacheprovider -rfE ${value//,/ } 2>&1 | tee "$OUT/tests.log" | tail -40 |
      tee -a "$OUT/log"
    ;;
  depthwise)
    python3 bench/bench_depthwise.py --out "$OUT/depthwise.md" $args 2>&1 | tee -a "$OUT/depthwise.log" | tail -60
    ;;
  models)
    python3 bench/bench_models.py --out "$OUT/models.md" $args 2>&1 | tee -a "$OUT/models.log" |
      grep -v "^ *File \|^    " | tail -60
    ;;
  *) log "unknown step $step" ;;
  esac
done
log "done"
