#!/bin/bash
# mgx-verify's Ray executor on the device machine (issue 28): `--executor=ray --targets=gpu` over
# the 96-model sample bench/bench_verify.py uses, on one GPU and on two, and on two with a Ray
# worker killed mid-run, through bench/bench_verify.py (which prints the figures).
#
# Ray's wheel for Python 3.12 (79 MB) is larger than what one call to the device carries (64 MiB
# with the working tree), so what the device needs travels in two parts, .ray-a/ and .ray-b/ (both
# ignored: .git/info/exclude), one part per call. The device tool removes a carried folder that the
# next call does not name, so the first call copies its part to /tmp, which stays while the machine
# is warm (it goes back 30 s after a call: make the second call at once).
#
# Here, in the repository's root (the checkout the device tool sends):
#   bash scripts/ray-device.sh --parts
#     Ray's wheel ($RAY_WHEEL, default /tmp/whl/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl;
#     downloaded where it is not there), the wheels of what Ray needs and the device lacks (its
#     packages: ../.library/device/KINDS.md; Ray's Requires-Dist followed through the wheels
#     downloaded), mgxir's GPU packages the device lacks (lark, nvmath-python,
#     nvidia-cudnn-frontend, as scripts/gpu-device.sh), and the models of the sample with the
#     files beside them that models read: one tar split into .ray-a/part.00 and .ray-b/part.01.
# On the device, two calls of the device tool's `run`, on kind nvidia-h200-x2:
#   1. carry [".ray-a"], command: bash scripts/ray-device.sh --check
#   2. carry [".ray-b"], command: bash scripts/ray-device.sh --run ray      (timeout_s 600)
#   3. (the peer, optional) carry [], command: bash scripts/ray-device.sh --run process
#      the process executor's runs with the same batches, while the machine is still warm (both
#      parts stay there); in one call, `--run ray process` may pass the 600 s a call may run
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
first() { for path in "$@"; do [ -e "$path" ] && break; done; echo "$path"; }
# beside the repository's main checkout (../), or a worktree's (../../)
KINDS=${KINDS:-$(first "$here/../.library/device/KINDS.md" "$here/../../.library/device/KINDS.md")}
MODELS=${MODELS:-$(first "$here/../shared/onnx-models" "$here/../../shared/onnx-models")}
RAY_WHEEL=${RAY_WHEEL:-/tmp/whl/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl}
EVERY=12 # bench_verify's sample: every 12th model by name (96 of 1142)
download() { # NAME-SPEC... into $dest: py3.12 manylinux wheels, no dependencies
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$dest" "$@"
}

case "${1:-}" in
--parts)
  stage=$(mktemp -d /tmp/ray-device.XXXXXX)
  dest=$stage/whl
  mkdir -p "$dest" "$stage/models"
  if [ -f "$RAY_WHEEL" ]; then cp "$RAY_WHEEL" "$dest/"; else download ray==2.60.0 || exit 1; fi
  for wheel in lark-1.3.1 nvmath_python-1.0.0 nvidia_cudnn_frontend-1.32.0; do
    found=$(ls /tmp/whl/"$wheel"-*.whl 2>/dev/null | head -1)
    if [ -n "$found" ]; then cp "$found" "$dest/"; else download "$(echo "${wheel%-*}" | tr _ -)==${wheel##*-}" || exit 1; fi
  done
  # what Ray needs and the device lacks, followed through each wheel downloaded (extras left out)
  python3 - "$KINDS" "$dest" <<'EOF' || exit 1
import re, subprocess, sys, zipfile
from pathlib import Path

kinds, folder = sys.argv[1], Path(sys.argv[2])
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def needs(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    lines = [line.split(":", 1)[1] for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    return [line.split(";")[0].replace(" ", "") for line in lines if "extra ==" not in line]


on_device = {norm(n.strip().rstrip(".")) for n in Path(kinds).read_text().split("Packages:", 1)[1].split(",")}
queue, done = sorted(folder.glob("ray-*.whl")), set()
while queue:
    for requirement in needs(queue.pop()):
        name = norm(re.match(r"[A-Za-z0-9_.-]+", requirement).group(0))
        if name in on_device or name in done:
            continue
        done.add(name)
        print(f"the device lacks {requirement}: its wheel travels", flush=True)
        before = set(folder.iterdir())
        platforms = [f"--platform={p}" for p in PLATFORMS]
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version=3.12",
             "--implementation=cp", *platforms, "-d", str(folder), requirement],
            check=True,
        )
        queue += sorted(set(folder.iterdir()) - before)
EOF
  python3 - "$MODELS" "$stage/models" "$EVERY" <<'EOF'
import shutil, sys
from pathlib import Path
models, out, every = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
sample = sorted(models.glob("*.onnx"))[::every]
for path in sample:
    shutil.copy(path, out)
for path in models.iterdir():  # the files beside the models that their imports read (external data)
    if path.suffix != ".onnx" and path.is_file() and path.stat().st_size < (8 << 20):
        shutil.copy(path, out)
print(f"{len(sample)} models of {models}")
EOF
  ls -la "$dest"
  tar -cf "$stage.tar" -C "$stage" whl models && rm -rf "$stage"
  rm -rf .ray-a .ray-b && mkdir -p .ray-a .ray-b
  split -n 2 -d "$stage.tar" "$stage.part." && rm "$stage.tar"
  mv "$stage.part.00" .ray-a/part.00 && mv "$stage.part.01" .ray-b/part.01
  { git check-ignore -q .ray-a && git check-ignore -q .ray-b; } || echo "warning: .ray-a and .ray-b are not ignored here: add /.ray-a/ and /.ray-b/ to .git/info/exclude"
  tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  for part in .ray-a .ray-b; do
    size=$(du -sb "$part" | cut -f1)
    echo "$part: $((size >> 20)) MiB; with the tracked files $(((size + tree) >> 20)) MiB of the 64 a call carries"
  done
  ;;
--check) # the first call: the first part arrived
  cp .ray-a/part.00 /tmp/ray-part.00 && ls -la /tmp/ray-part.00 && nvidia-smi -L && python3 --version
  ;;
--run) # the second call: join the parts, install offline, run the figures
  shift
  [ -f /tmp/ray-part.00 ] || {
    echo "error: /tmp/ray-part.00 is not here: the machine was given back after the first call; make it again"
    exit 1
  }
  OUT=${OUT:-/tmp/out}
  mkdir -p "$OUT" /tmp/ray-bundle
  cat /tmp/ray-part.00 .ray-b/part.01 | tar -xf - -C /tmp/ray-bundle || exit 1
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    /tmp/ray-bundle/whl/*.whl 2>&1 | tail -3
  export PYTHONPATH=/tmp/site:$here PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
  python3 -c "import ray, mgxir.drivers.verify.executors; print('ray', ray.__version__)" || exit 1
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for executor in "${@:-ray}"; do
    echo "== executor $executor"
    python3 bench/bench_verify.py --models /tmp/ray-bundle/models --gpus 0,1 --executor "$executor" \
      --timeout 60 --json "$OUT/$executor.json" 2>&1 | tee "$OUT/$executor.log"
  done
  ;;
*)
  sed -n 2,25p "$0"
  exit 2
  ;;
esac
