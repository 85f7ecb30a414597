#!/bin/bash
# Runs scripts/mutation.py on a many-core machine (the device host, 16 cores) for several module groups at
# once, each its own mutmut run and scratch copy; docs/mutation.md says how tonight's scores were made.
#   bash scripts/mutation-device.sh DEADLINE_S "NAME:CHILDREN:PATH,PATH ..." (RECHECK=1: check survivors again)
# The bundle folder ($MUTATION_BUNDLE, default .dev-mutdev, git-ignored, carried to the device) holds:
#   src/    `git archive HEAD` of this repository;   shared/  ../shared (reference/, onnx-models/);
#   whl/    py3.12 wheels of mutmut 3.8.1 and the test dependencies the device lacks;
#   whl2/   wheels that must shadow the device's own (onnxruntime 1.32, which reads today's onnx IR);
#   state.tgz  a previous run's .meta files and stats (mutmut goes on from them; same Python minor only:
#              mutmut's function hashes are ast.dump()s, which differ between 3.11 and 3.12);
#   tests-NAME.txt  pytest arguments for group NAME instead of its TEST_SELECTIONS rows (drivers: without
#              the tests that need iree.compiler or spirv-as, which the device lacks).
# Results under $OUT: NAME.json per group (scripts/mutation.py --json), log, state.tgz.
set -u
D=${MUTATION_BUNDLE:-$PWD/.dev-mutdev}
MV=${MV:-/tmp/mv}
MUT=${MUT:-/tmp/mut}
DEADLINE=$1
JOBS=$2
export PYTHONUNBUFFERED=1
# the tests see no GPU, as on the 2-core machine where the selections were checked
export CUDA_VISIBLE_DEVICES=""
T0=$(date +%s)
log() { echo "[dev $(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/log"; }
log "host: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB, $(python3 --version), load $(cat /proc/loadavg)"
if [ ! -x $MV/bin/mutmut ]; then
  if python3 -m venv --without-pip --system-site-packages $MV; then
    $MV/bin/python -m pip install -q --no-index --no-deps --no-compile "$D"/whl/*.whl 2>&1 | tail -5 | tee -a "$OUT/log"
  else
    log "venv failed: pip --target instead"
    rm -rf $MV && mkdir -p $MV/bin
    python3 -m pip install -q --no-index --no-deps --no-compile --target $MV/site "$D"/whl/*.whl 2>&1 | tail -5 | tee -a "$OUT/log"
    ln -s "$(command -v python3)" $MV/bin/python && cp $MV/site/bin/* $MV/bin/
  fi
fi
# newer wheels than the device's own (onnxruntime that reads the models today's onnx writes)
if ls "$D"/whl2/*.whl >/dev/null 2>&1 && [ ! -f $MV/whl2-done ]; then
  $MV/bin/python -m pip install -q --no-index --no-deps --no-compile "$D"/whl2/*.whl 2>&1 | tail -3 | tee -a "$OUT/log"
  touch $MV/whl2-done
fi
[ -d $MV/site ] && export PYTHONPATH=$MV/site
# the device's own packages (numpy, onnx, onnxruntime) may live in an outer venv or the user site, which
# a venv does not see: its python3's whole sys.path, after the venv's own site-packages
log "python3: $(command -v python3) $(python3 -c 'import sys; print(sys.prefix, sys.base_prefix)')"
if [ -d $MV/lib ]; then
  python3 -c 'import os, sys; print("\n".join(f"import site; site.addsitedir({p!r})" for p in sys.path if p and os.path.isdir(p)))' > "$($MV/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/zz_device_paths.pth"
fi
$MV/bin/python -c "import sys, mutmut, libcst, lark, typer, pytest, hypothesis, numpy, onnx, onnxruntime, ml_dtypes, msgpack; print(sys.executable, 'imports ok, numpy', numpy.__version__, 'onnxruntime', onnxruntime.__version__, onnxruntime.__file__)" 2>&1 | tee -a "$OUT/log"
$MV/bin/python -c "import numpy, onnx, onnxruntime, mutmut" || { log "imports failed: stopping"; $MV/bin/python -c "import sys; print(sys.path)" | tee -a "$OUT/log"; exit 1; }
ls $MV/bin | tr '\n' ' ' | tee -a "$OUT/log"; echo | tee -a "$OUT/log"
mkdir -p $MUT
# a run elsewhere left its results (.meta files and stats): restored into fresh copies
if [ -f "$D/state.tgz" ] && [ ! -d $MUT/restored ]; then
  tar -xzf "$D/state.tgz" -C $MUT && mkdir -p $MUT/restored && log "state restored"
fi
cd "$D/src"
log "setup done"
# a job is NAME:CHILDREN:PATH,PATH,...
for job in $JOBS; do
  IFS=: read -r pkg children paths <<< "$job"
  tests=()
  [ -f "$D/tests-$pkg.txt" ] && tests=(--tests "$(cat "$D/tests-$pkg.txt")")
  extra=()
  [ -d "$MUT/$pkg" ] && [ "${RECHECK:-0}" = 1 ] && extra=(--recheck)
  $MV/bin/python scripts/mutation.py --max-children "$children" --deadline "$DEADLINE" ${tests[@]+"${tests[@]}"} \
    ${extra[@]+"${extra[@]}"} --json "$OUT/$pkg.json" --scratch "$MUT/$pkg" ${paths//,/ } 2>&1 | sed -u "s/^/[$pkg] /" >> "$OUT/log" &
done
while [ -n "$(jobs -r)" ]; do
  sleep 20
  echo "[dev $(( $(date +%s) - T0 )) s] load $(cut -d' ' -f1-3 /proc/loadavg), memory used $(free -g | awk '/Mem/ {print $3}') GiB" >> "$OUT/log"
done
wait
cd $MUT && find . -path '*/mutants/*' \( -name '*.meta' -o -name mutmut-stats.json \) -print0 | tar -czf "$OUT/state.tgz" --null -T -
log "all done"
