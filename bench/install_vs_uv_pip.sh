#!/usr/bin/env bash
# envkit against uv and pip, side by side in one run: the same real NVIDIA
# wheels of one CUDA 12.x release (runtime, nvcc, cuBLAS, cuDNN: over 1 GB),
# served from a local directory by nginx on 127.0.0.1, installed into a fresh
# prefix / virtual environment:
#   envkit install --frozen --packaging wheel --mirror <local>   (cold and warm cache)
#   uv pip install --no-index --find-links <local>             (cold and warm cache)
#   pip install --no-index --find-links <local> --no-cache-dir
# Medians of 5 runs (RUNS=N for another number), envkit and uv taking turns at
# going first, pip last; venv creation not counted. The wheels (and uv, from PyPI)
# are downloaded once into bench/.work/ (or $ENVKIT_BENCH_WORK); that step needs
# PyPI, the measured runs need no network. Writes bench/results/install_vs_uv_pip.json
# and draws docs/img/install_vs_uv_pip.svg with bench/plot_bars.py.
# Usage: bench/install_vs_uv_pip.sh [ENVKIT_BINARY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
envkit=${1:-$here/build/src/cli/envkit}
work=${ENVKIT_BENCH_WORK:-$here/bench/.work}
source "$here/bench/serve.sh"
mkdir -p "$work"
run=$(mktemp -d)
trap 'kill $(cat "$run/nginx.pid" 2>/dev/null) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$run"' EXIT

# The wheels the committed recipe database locks for CUDA 12.4 and cuDNN 9.1.
mkdir -p "$run/lockproj"
printf 'requires:\n  cuda: "12.4"\n  cudnn: ">=9.1,<9.2"\nsystem:\n  driver: 550.54.15\n' \
  >"$run/lockproj/envkit.yaml"
"$envkit" -q -C "$run/lockproj" --recipes "$here/recipes" lock --json >"$run/lock.json"

[ -x "$work/tools/bin/uv" ] || { python3 -m venv "$work/tools" && "$work/tools/bin/pip" -q install uv; }
uv_version=$("$work/tools/bin/uv" --version)

python3 - "$run" "$work" <<'PY'
import hashlib, json, os, subprocess, sys, urllib.parse
run, work = sys.argv[1:3]
wanted = {"cuda_cudart", "cuda_nvcc", "libcublas", "cudnn"}
lock = json.load(open(f"{run}/lock.json"))
picked = []
for package in lock["packages"]:
    for a in package["artifacts"]:
        if a["kind"] == "wheel" and a["component"] in wanted and "x86_64" in a["url"]:
            picked.append((package, a))
os.makedirs(f"{work}/flat", exist_ok=True)
for package, a in picked:
    url = urllib.parse.urlsplit(a["url"])
    path = os.path.join(work, "mirror", url.netloc, url.path.lstrip("/"))
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run(["curl", "-sSfLo", path + ".part", a["url"]], check=True)
        os.rename(path + ".part", path)
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    assert digest == a["sha256"], (path, digest)
    flat = os.path.join(work, "flat", os.path.basename(path))
    if not os.path.exists(flat):
        os.symlink(path, flat)
# A lock of just these wheels (docs/lockfile.md), for `install --frozen`.
def q(s): return json.dumps(s)
lines = ["version: 1", f"manifest-hash: {q('sha256:' + '0' * 64)}", "recipes: {}", "system:", "  source: none",
         "platforms:", "  - platform: linux-x86_64", "    packages:"]
by_package = {}
for package, a in picked:
    by_package.setdefault((package["name"], package["version"], package.get("build", "")), []).append(a)
for (name, version, build), artifacts in sorted(by_package.items()):
    lines += [f"      - name: {name}", f"        version: {q(version)}"]
    if build:
        lines.append(f"        build: {build}")
    lines.append("        artifacts:")
    for a in sorted(artifacts, key=lambda a: a["component"]):
        root = {"cuda_cudart": "nvidia/cuda_runtime", "cuda_nvcc": "nvidia/cuda_nvcc",
                "libcublas": "nvidia/cublas", "cudnn": "nvidia/cudnn"}[a["component"]]
        lines += [f"          - component: {a['component']}", "            kind: wheel",
                  "            format: whl", "            layout: nvidia-wheel",
                  f"            wheel-root: {root}", f"            url: {a['url']}",
                  f"            sha256: {q(a['sha256'])}"]
os.makedirs(f"{run}/project", exist_ok=True)
open(f"{run}/project/envkit.lock", "w").write("\n".join(lines) + "\n")
# What uv and pip are asked for: the same distributions, pinned.
reqs = [os.path.basename(urllib.parse.urlsplit(a["url"]).path).split("-")[0:2] for _, a in picked]
open(f"{run}/requirements.txt", "w").write("".join(f"{n.replace('_', '-')}=={v}\n" for n, v in reqs))
print("wheels:", ", ".join(f"{n}=={v}" for n, v in reqs))
print("bytes:", sum(os.path.getsize(os.path.join(work, "flat", f)) for f in os.listdir(f"{work}/flat")))
PY

[ -n "${LOCK_ONLY:-}" ] && { echo "$run/project/envkit.lock"; exit 0; }
serve_dir "$work" "$run"

UV_VERSION="$uv_version" python3 - "$envkit" "$run" "$work" "http://127.0.0.1:$port" "$here" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time
envkit, run, work, base, here = sys.argv[1:6]
uv = f"{work}/tools/bin/uv"
quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
def timed(args, **kw):
    # The last run's dirty pages written out first, not during this one.
    os.sync()
    start = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"{args[0]} failed ({done.returncode}): {done.stderr}")
    return time.perf_counter() - start
def envkit_install(cache, prefix):
    return timed([envkit, "-q", "-C", f"{run}/project", "--cache-dir", cache, "install", "--frozen",
                  "--packaging", "wheel", "--mirror", f"{base}/mirror", "--prefix", prefix])
def uv_install(cache, venv):
    subprocess.run([uv, "venv", "-q", venv, "--python", sys.executable], **quiet)
    return timed([uv, "pip", "install", "-q", "--python", f"{venv}/bin/python", "--no-index",
                  "--find-links", f"{base}/flat/", "-r", f"{run}/requirements.txt"],
                 env=dict(os.environ, UV_CACHE_DIR=cache))
def pip_install(venv):
    subprocess.run([sys.executable, "-m", "venv", venv], **quiet)
    return timed([f"{venv}/bin/pip", "install", "-q", "--no-index", "--no-cache-dir",
                  "--find-links", f"{base}/flat/", "-r", f"{run}/requirements.txt"])
results = {k: [] for k in ["envkit cold", "envkit warm", "uv cold", "uv warm", "pip"]}
for i in range(int(os.environ.get("RUNS", "5"))):
    for path in [f"{run}/ek-cache", f"{run}/uv-cache"]:
        shutil.rmtree(path, ignore_errors=True)
    def envkit_round():
        results["envkit cold"].append(envkit_install(f"{run}/ek-cache", f"{run}/ek-{i}-cold"))
        results["envkit warm"].append(envkit_install(f"{run}/ek-cache", f"{run}/ek-{i}-warm"))
    def uv_round():
        results["uv cold"].append(uv_install(f"{run}/uv-cache", f"{run}/uv-{i}-cold"))
        results["uv warm"].append(uv_install(f"{run}/uv-cache", f"{run}/uv-{i}-warm"))
    def pip_round():
        results["pip"].append(pip_install(f"{run}/pip-{i}"))
    # envkit and uv first in turn (the first run after the last round's
    # deletions pays for them); pip last, its slow writes behind no one's run.
    for one in ([envkit_round, uv_round] if i % 2 == 0 else [uv_round, envkit_round]) + [pip_round]:
        one()
    # An envkit prefix is a link to its generations (.NAME.generations/): both go.
    for path in os.listdir(run):
        if path.lstrip(".").startswith(("ek-", "uv-", "pip-")) and "cache" not in path:
            full = os.path.join(run, path)
            os.unlink(full) if os.path.islink(full) else shutil.rmtree(full, ignore_errors=True)
medians = {k: statistics.median(v) for k, v in results.items()}
for k, v in results.items():
    print(f"{k:12s} median {medians[k]:7.2f} s   runs: {', '.join(f'{t:.2f}' for t in v)}")
print(f"envkit vs uv:  cold {medians['uv cold'] / medians['envkit cold']:.2f}x, "
      f"warm {medians['uv warm'] / medians['envkit warm']:.2f}x faster")
print(f"envkit vs pip: {medians['pip'] / medians['envkit cold']:.2f}x faster (cold)")
out = {"uv": os.environ.get("UV_VERSION", ""), "pip": subprocess.run(
    [sys.executable, "-m", "pip", "--version"], capture_output=True, text=True).stdout.split()[1],
       "medians_s": medians, "runs_s": results}
os.makedirs(f"{here}/bench/results", exist_ok=True)
json.dump(out, open(f"{here}/bench/results/install_vs_uv_pip.json", "w"), indent=1)
subprocess.run([sys.executable, f"{here}/bench/plot_bars.py", f"{here}/bench/results/install_vs_uv_pip.json",
                f"{here}/docs/img/install_vs_uv_pip.svg"], check=True)
PY
