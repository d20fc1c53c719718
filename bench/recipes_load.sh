#!/usr/bin/env bash
# How long a whole envkit process takes to load the recipe database.
# Until `envkit lock` exists, the stand-ins are the commands that read what the
# solver reads (`recipes list`: every package's facts) and what locking one
# version reads (`recipes show cuda 12.4.1`: facts plus that package's artifacts).
# Goal (recipe-database issue): a whole `envkit lock` process under 50 ms.
# Usage: bench/recipes_load.sh [ENVKIT_BINARY] [RECIPES_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
envkit=${1:-$here/build/src/cli/envkit}
recipes=${2:-$here/recipes}
python3 - "$envkit" "$recipes" <<'PY'
import statistics, subprocess, sys, time
envkit, recipes = sys.argv[1], sys.argv[2]
cases = {
    "recipes list (all facts)": ["recipes", "list"],
    "recipes show torch (facts)": ["recipes", "show", "torch", "2.1"],
    "recipes show cuda 12.4.1 (facts + artifacts)": ["recipes", "show", "cuda", "12.4.1"],
    "--version (process floor)": ["--version"],
}
for name, args in cases.items():
    times = []
    for _ in range(21):
        start = time.perf_counter()
        subprocess.run([envkit, "--recipes", recipes, *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1000)
    print(f"{name:48s} median {statistics.median(times):6.1f} ms  min {min(times):6.1f} ms")
PY
