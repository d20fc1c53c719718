#!/usr/bin/env bash
# Time of a whole `envkit lock` process (read envkit.yaml, load the recipe
# database, solve every platform, write envkit.lock) for each reference
# manifest in manifests/, against the full database: the CUDA stack only
# (ENVKIT_NO_PYTHON=1, no Python closure: that is uv's time and PyPI's).
# Each run locks a fresh copy of the manifest folder (no envkit.lock present).
# The recipe-facts cache lives in a cache folder of its own: the first run of
# each manifest parses every file ("cold", filling the cache), the next 15 read
# the cache ("warm"); ENVKIT_NO_FACTS_CACHE=1 gives every run a fresh, empty
# cache folder instead (nothing reused). Goal (issue 20): every median under 50 ms.
# Prints the median and the slowest of 15 runs, the first run, the median CPU time (user +
# system) of the 15, and the process floor (`envkit --version`).
# Usage: bench/lock_speed.sh ENVKIT_BINARY [RECIPES_DIR]   (absolute paths)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
envkit=$(realpath "${1:-$here/build/src/cli/envkit}")
recipes=$(realpath "${2:-$here/recipes}")
python3 - "$envkit" "$recipes" "$here/manifests" <<'PY'
import os, shutil, statistics, subprocess, sys, tempfile, time
envkit, recipes, manifests = sys.argv[1:4]
env = dict(os.environ, ENVKIT_OVERRIDE_DRIVER="none", ENVKIT_OVERRIDE_CUDA_ARCH="",
           ENVKIT_NO_PYTHON="1")
fresh_cache = os.environ.get("ENVKIT_NO_FACTS_CACHE") == "1"
cpu = []  # user + system time of each run, ms: less sensitive than wall time to a busy machine
def timed(args, cwd, cache):
    start = time.perf_counter()
    child = subprocess.Popen([envkit, "--recipes", recipes, "--cache-dir", cache, *args], cwd=cwd,
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, wait_status, usage = os.wait4(child.pid, 0)
    elapsed = (time.perf_counter() - start) * 1000
    status = os.waitstatus_to_exitcode(wait_status)
    cpu.append((usage.ru_utime + usage.ru_stime) * 1000)
    # Without the closure some manifests that PyPI makes unsatisfiable do lock.
    assert status in (0, 1), (args, cwd, status)
    return elapsed, status
worst = 0.0
with tempfile.TemporaryDirectory() as scratch:
    for name in sorted(os.listdir(manifests)):
        source = os.path.join(manifests, name)
        if not os.path.isdir(source):
            continue
        times, statuses = [], set()
        cpu.clear()
        cache = os.path.join(scratch, f"cache-{name}")
        for i in range(16):
            work = os.path.join(scratch, f"{name}-{i}")
            os.makedirs(work)
            shutil.copy(os.path.join(source, "envkit.yaml"), work)
            elapsed, status = timed(["lock"], work, f"{cache}-{i}" if fresh_cache else cache)
            statuses.add(status)
            if i == 0:
                first = elapsed
            else:
                times.append(elapsed)
        assert len(statuses) == 1, (name, statuses)
        worst = max(worst, statistics.median(times))
        label = name + (" (unsatisfiable)" if statuses == {1} else "")
        print(f"lock {label:48s} median {statistics.median(times):6.1f} ms  max {max(times):6.1f} ms"
              f"  first {first:6.1f} ms  cpu {statistics.median(cpu[1:]):5.1f} ms")
    floor = [timed(["--version"], scratch, scratch)[0] for _ in range(15)]
    print(f"{'--version (process floor)':53s} median {statistics.median(floor):6.1f} ms")
print(f"slowest median: {worst:.1f} ms (goal: < 50 ms)")
PY
