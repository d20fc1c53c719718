#!/usr/bin/env bash
# Time of a whole `envkit lock` process (read envkit.yaml, load the recipe
# database, solve every platform, write envkit.lock) for each reference
# manifest in manifests/, against the full database. Each run locks a fresh
# copy of the manifest folder (no envkit.lock present), so nothing is reused.
# Goal (solver issue): every lock under 50 ms. Prints the median and the
# slowest of 15 runs, and the process floor (`envkit --version`).
# Usage: bench/lock_speed.sh [ENVKIT_BINARY] [RECIPES_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
envkit=${1:-$here/build/src/cli/envkit}
recipes=${2:-$here/recipes}
python3 - "$envkit" "$recipes" "$here/manifests" <<'PY'
import os, shutil, statistics, subprocess, sys, tempfile, time
envkit, recipes, manifests = sys.argv[1:4]
env = dict(os.environ, ENVKIT_OVERRIDE_DRIVER="none", ENVKIT_OVERRIDE_CUDA_ARCH="")
def timed(args, cwd, expect):
    start = time.perf_counter()
    status = subprocess.run([envkit, "--recipes", recipes, *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    elapsed = (time.perf_counter() - start) * 1000
    assert status == expect, (args, cwd, status)
    return elapsed
worst = 0.0
with tempfile.TemporaryDirectory() as scratch:
    for name in sorted(os.listdir(manifests)):
        source = os.path.join(manifests, name)
        if not os.path.isdir(source):
            continue
        unsat = os.path.exists(os.path.join(source, "expected-error.txt"))
        times = []
        for i in range(15):
            work = os.path.join(scratch, f"{name}-{i}")
            os.makedirs(work)
            shutil.copy(os.path.join(source, "envkit.yaml"), work)
            times.append(timed(["lock"], work, 1 if unsat else 0))
        worst = max(worst, statistics.median(times))
        label = name + (" (unsatisfiable)" if unsat else "")
        print(f"lock {label:48s} median {statistics.median(times):6.1f} ms  max {max(times):6.1f} ms")
    floor = [timed(["--version"], scratch, 0) for _ in range(15)]
    print(f"{'--version (process floor)':53s} median {statistics.median(floor):6.1f} ms")
print(f"slowest median: {worst:.1f} ms (goal: < 50 ms)")
PY
