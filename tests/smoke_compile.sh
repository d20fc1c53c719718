#!/usr/bin/env bash
# Compiles the GPU smoke-training program (share/envkit/smoke/smoke.cu) with the real nvcc and
# cuDNN/cuBLAS headers, then runs it: --cpu-only must train and pass; with too few steps it must
# fail; without --cpu-only it must skip (exit 77) where there is no GPU and pass where there is.
#
# usage: smoke_compile.sh [SMOKE_SOURCE_DIR]
# CUDA comes from $CUDA_HOME, else /usr/local/cuda. Exits 77 (skipped) where nvcc or cudnn.h is
# missing. Run it by hand after changing smoke.cu: the CTest suite compiles the program once,
# through `envkit smoke` (tests/integration/smoke_test.cpp), without these warning flags.
set -euo pipefail

source_dir=${1:-$(cd "$(dirname "$0")/../share/envkit/smoke" && pwd)}
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=$cuda/bin/nvcc

if [ ! -x "$nvcc" ]; then
  echo "skipped: no nvcc at $nvcc (set CUDA_HOME to a CUDA toolkit)"
  exit 77
fi
if [ ! -f "$cuda/include/cudnn.h" ] && [ ! -f /usr/include/cudnn.h ]; then
  echo "skipped: no cudnn.h in $cuda/include or /usr/include"
  exit 77
fi
if ! command -v python3 >/dev/null; then
  echo "skipped: python3 is needed to check the program's JSON output"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== compiling $source_dir/smoke.cu with $nvcc ($("$nvcc" --version | tail -1))"
# Host-compiler warnings in our own files fail the test; warnings from CUDA's headers don't.
if ! "$nvcc" -std=c++17 -O2 -Xcompiler -Wall,-Wextra,-Wshadow "-I$cuda/include" \
  "$source_dir/smoke.cu" -o "$work/smoke" "-L$cuda/lib64" -lcudnn -lcublas \
  >"$work/compile.log" 2>&1; then
  cat "$work/compile.log"
  echo "FAIL: nvcc could not compile smoke.cu"
  exit 1
fi
cat "$work/compile.log"
if grep -E "smoke(\.cu|_model\.hpp).*warning" "$work/compile.log" >/dev/null; then
  echo "FAIL: smoke.cu or smoke_model.hpp compiles with warnings"
  exit 1
fi

export LD_LIBRARY_PATH=$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# run NAME EXPECTED_EXIT PYTHON_CHECK ARGS...: runs smoke ARGS, checks its exit status, that its
# stdout is exactly one JSON object, and PYTHON_CHECK (an expression over that object, `r`).
run() {
  local name=$1 expected=$2 check=$3
  shift 3
  echo "== smoke $*"
  local code=0
  "$work/smoke" "$@" >"$work/$name.json" 2>"$work/$name.log" || code=$?
  cat "$work/$name.log"
  cat "$work/$name.json"
  if [ "$code" != "$expected" ]; then
    echo "FAIL: smoke $* exited $code, expected $expected"
    exit 1
  fi
  if ! python3 - "$work/$name.json" "$check" <<'EOF'; then
import json, sys
text = open(sys.argv[1]).read()
r = json.loads(text)  # exactly one JSON value, nothing else
assert isinstance(r, dict), "not a JSON object"
fields = ["status", "reason", "gpu", "compute_capability", "driver", "cuda_runtime", "cudnn",
          "steps", "loss_first", "loss_last", "accuracy", "max_reference_error", "gpu_seconds",
          "cpu_seconds"]
assert list(r) == fields, "fields: %s" % list(r)
if not eval(sys.argv[2]):
    sys.exit("check failed: " + sys.argv[2])
EOF
    echo "FAIL: smoke $* printed unexpected JSON"
    exit 1
  fi
}

run cpu 0 "r['status'] == 'pass' and r['reason'] == '' and r['steps'] == 200 \
  and r['loss_last'] <= 0.5 * r['loss_first'] and r['accuracy'] >= 0.9 \
  and r['cpu_seconds'] > 0 and r['gpu'] is None and r['gpu_seconds'] is None \
  and r['cudnn'] is None and r['max_reference_error'] is None" \
  --cpu-only --json

# Too little training fails both training checks, and says so with the numbers.
run cpu-short 1 "r['status'] == 'fail' and r['steps'] == 20 \
  and 'loss did not halve' in r['reason'] and 'accuracy' in r['reason'] \
  and r['loss_last'] > 0.5 * r['loss_first']" \
  --cpu-only --json --steps 20

echo "== smoke --bogus"
code=0
"$work/smoke" --bogus >"$work/bogus.out" 2>&1 || code=$?
if [ "$code" != 2 ]; then
  cat "$work/bogus.out"
  echo "FAIL: a bad argument exited $code, expected 2"
  exit 1
fi

if [ -e /dev/nvidia0 ] || { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  run gpu 0 "r['status'] == 'pass' and r['gpu'] and r['compute_capability'] \
    and r['driver'] and r['cuda_runtime'] and r['cudnn'] \
    and r['max_reference_error'] <= 1e-3 and r['loss_last'] <= 0.5 * r['loss_first'] \
    and r['accuracy'] >= 0.9 and r['gpu_seconds'] > 0 and r['cpu_seconds'] > 0" \
    --json
else
  run gpu 77 "r['status'] == 'skip' and r['reason'].startswith('no CUDA device: ') \
    and r['gpu'] is None and r['cuda_runtime'] and r['cudnn'] and r['loss_first'] is None" \
    --json
fi
echo "PASS"
