#!/usr/bin/env bash
# envkit against uv for a real framework's whole Python closure: torch 2.4.1
# from PyPI (torch, its nvidia-*-cu12 wheels, triton, sympy, ...: about 2.7 GB
# of wheels) locked by `envkit lock` for the machine's python3, the locked
# wheels downloaded once from PyPI into bench/.work/ (or $ENVKIT_BENCH_WORK),
# then served by nginx on 127.0.0.1 and installed, with no other network:
#   envkit install --frozen --mirror <local>                  (cold: empty cache)
#   envkit install --frozen --prefix <second>                 (warm: a second environment)
#   uv pip install --no-index --no-deps --find-links <local> -r <the locked pins>
#                                                             (cold, then warm: a second venv)
#   the same with each pin's --hash=sha256 (cold): the locked wheels checked as envkit checks them
# Each run's time is the install command's (uv's venv is made before the clock
# starts; envkit's venv of python3 is part of its install), after a sync; a cold
# run starts SETTLE seconds (default 61) after the last deletion, for ext4 without
# a journal (see timed() below; SETTLE=0 on other file systems). The
# tools take turns at going first in a round. The second
# environment's disk is what it adds beyond the first (du of both minus du of
# the first: hard links count once). Medians of 3. Writes
# bench/results/install_closure_vs_uv.json and docs/img/install_closure_vs_uv.svg
# (bench/plot_bars.py). The machine may be shared with other builds: say so
# with the numbers.
# Usage: bench/install_closure_vs_uv.sh [ENVKIT_BINARY]   (RUNS=1 for one round;
# DOWNLOAD_ONLY=1 to fetch the wheels and stop)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
envkit=${1:-$here/build-rel/src/cli/envkit}
work=${ENVKIT_BENCH_WORK:-$here/bench/.work}
runs=${RUNS:-3}
source "$here/bench/serve.sh"
mkdir -p "$work"
run=$(mktemp -d)
trap 'kill $(cat "$run/nginx.pid" 2>/dev/null) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$run"' EXIT

write_torch_project "$run/project"
"$envkit" -q -C "$run/project" --recipes "$here/recipes" lock

[ -x "$work/tools/bin/uv" ] || { python3 -m venv "$work/tools" && "$work/tools/bin/pip" -q install uv; }
uv_version=$("$work/tools/bin/uv" --version)

# The closure's wheels, downloaded once (verified against the lock), kept at
# mirror/<host>/<path> for envkit's --mirror and linked into flat/ for uv.
python3 - "$run" "$work" <<'PY'
import hashlib, os, subprocess, sys, urllib.parse
import yaml  # envkit.lock is YAML (docs/lockfile.md)
run, work = sys.argv[1:3]
lock = yaml.safe_load(open(f"{run}/project/envkit.lock"))
platform = next(p for p in lock["platforms"] if p["platform"] == "linux-x86_64")
wheels = platform["python"]["packages"]
os.makedirs(f"{work}/flat", exist_ok=True)
pins, hashed, total = [], [], 0
for wheel in wheels:
    url = urllib.parse.urlsplit(wheel["url"])
    path = os.path.join(work, "mirror", url.netloc, url.path.lstrip("/"))
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run(["curl", "-sSfLo", path + ".part", wheel["url"]], check=True)
        os.rename(path + ".part", path)
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    assert sha.hexdigest() == wheel["sha256"], (path, sha.hexdigest())
    flat = os.path.join(work, "flat", os.path.basename(path))
    if not os.path.lexists(flat):
        os.symlink(path, flat)
    pins.append(f"{wheel['name']}=={wheel['version']}\n")
    hashed.append(f"{wheel['name']}=={wheel['version']} --hash=sha256:{wheel['sha256']}\n")
    total += os.path.getsize(path)
# The CUDA stack's own artifacts that the closure does not provide (cuda_nvcc's and
# cuda_cccl's wheels): envkit installs them too, uv is not asked to.
extra = 0
closure_urls = {wheel["url"] for wheel in wheels}
for package in platform.get("packages", []):
    for artifact in package.get("artifacts", []):
        url = urllib.parse.urlsplit(artifact.get("url", ""))
        path = os.path.join(work, "mirror", url.netloc, url.path.lstrip("/"))
        # Its wheels (on PyPI; the lock's redist archives are the other packaging).
        if artifact.get("kind") != "wheel" or artifact["url"] in closure_urls:
            continue
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            subprocess.run(["curl", "-sSfLo", path + ".part", artifact["url"]], check=True)
            os.rename(path + ".part", path)
        extra += os.path.getsize(path)
open(f"{run}/requirements.txt", "w").write("".join(pins))
open(f"{run}/requirements-hashed.txt", "w").write("".join(hashed))
print(f"CUDA stack artifacts beyond the closure (envkit only): {extra} bytes")
print(f"wheels: {len(wheels)}, bytes: {total}")
PY

[ -n "${DOWNLOAD_ONLY:-}" ] && exit 0  # just fill bench/.work
serve_dir "$work" "$run"

UV_VERSION="$uv_version" RUNS="$runs" python3 - "$envkit" "$run" "$work" "http://127.0.0.1:$port" "$here" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time
envkit, run, work, base, here = sys.argv[1:6]
uv = f"{work}/tools/bin/uv"
quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
# This VM's ext4 has no journal. There a new file does not get an inode freed in the last
# 60 s (fs/ext4/ialloc.c, recently_deleted), and every file creation scans past those: after a
# round's deletions (15 GB, ~100,000 files) whichever tool ran next took 2-4 s longer, and spent
# a third of its CPU in that scan. So a cold run starts SETTLE seconds (default 61; 0 where the
# file system has a journal) after the last deletion, and measures the installer, not the scan.
settle = float(os.environ.get("SETTLE", "61"))
last_removal = [float("-inf")]
def remove(path):
    if os.path.islink(path):
        os.unlink(path)
    else:
        shutil.rmtree(path, ignore_errors=True)
    last_removal[0] = time.monotonic()
def settled():
    os.sync()
    time.sleep(max(0.0, settle - (time.monotonic() - last_removal[0])))
def timed(args, cold=False, **kw):
    if cold:
        settled()
    # The last run's dirty pages written out first, not during this one.
    os.sync()
    start = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"{args[0]} failed ({done.returncode}): {done.stderr}")
    return time.perf_counter() - start
def envkit_install(cache, prefix, cold):
    return timed([envkit, "-q", "-C", f"{run}/project", "--cache-dir", cache, "install", "--frozen",
                  "--mirror", f"{base}/mirror", "--prefix", prefix], cold=cold)
def uv_install(cache, venv, cold, requirements="requirements.txt"):
    subprocess.run([uv, "venv", "-q", venv, "--python", sys.executable], **quiet)
    return timed([uv, "pip", "install", "-q", "--python", f"{venv}/bin/python", "--no-index",
                  "--no-deps", "--find-links", f"{base}/flat/", "-r", f"{run}/{requirements}"],
                 cold=cold, env=dict(os.environ, UV_CACHE_DIR=cache))
def kib(*paths):
    # du counts a hard-linked inode once across its arguments.
    out = subprocess.run(["du", "-sk", "--total", *paths], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1].split()[0])
def extra_mib(first, second):
    return (kib(first, second) - kib(first)) / 1024
results = {k: [] for k in ["envkit cold", "envkit warm", "uv cold", "uv warm", "uv+hashes cold"]}
disk = {"envkit second env MiB": [], "uv second env MiB": []}
def envkit_round(i):
    results["envkit cold"].append(envkit_install(f"{run}/ek-cache", f"{run}/ek-{i}-cold", True))
    results["envkit warm"].append(envkit_install(f"{run}/ek-cache", f"{run}/ek-{i}-warm", False))
    disk["envkit second env MiB"].append(extra_mib(f"{run}/ek-{i}-cold", f"{run}/ek-{i}-warm"))
def uv_round(i):
    results["uv cold"].append(uv_install(f"{run}/uv-cache", f"{run}/uv-{i}-cold", True))
    results["uv warm"].append(uv_install(f"{run}/uv-cache", f"{run}/uv-{i}-warm", False))
    disk["uv second env MiB"].append(extra_mib(f"{run}/uv-{i}-cold", f"{run}/uv-{i}-warm"))
def uv_hashes_round(i):
    # The same locked wheels with their sha256 (`--hash`), which uv then checks as envkit does.
    results["uv+hashes cold"].append(uv_install(f"{run}/uvh-cache", f"{run}/uvh-{i}-cold", True,
                                                "requirements-hashed.txt"))
rounds = [envkit_round, uv_round, uv_hashes_round]
for i in range(int(os.environ["RUNS"])):
    for path in [f"{run}/ek-cache", f"{run}/uv-cache", f"{run}/uvh-cache"]:
        remove(path)
    # Each tool first in turn (the first run after a round's deletions ran on freed memory).
    for one in rounds[i % len(rounds):] + rounds[:i % len(rounds)]:
        one(i)
    # An envkit prefix is a link to its generations (.NAME.generations/): both go.
    for path in os.listdir(run):
        if path.lstrip(".").startswith(("ek-", "uv-", "uvh-")) and "cache" not in path:
            remove(os.path.join(run, path))
medians = {k: statistics.median(v) for k, v in results.items()}
for k, v in results.items():
    print(f"{k:12s} median {medians[k]:7.2f} s   runs: {', '.join(f'{t:.2f}' for t in v)}")
for k, v in disk.items():
    print(f"{k:22s} {', '.join(f'{m:.1f}' for m in v)}")
print(f"envkit/uv+hashes: cold {medians['envkit cold'] / medians['uv+hashes cold']:.2f}")
print(f"envkit/uv: cold {medians['envkit cold'] / medians['uv cold']:.2f}, "
      f"warm {medians['envkit warm'] / medians['uv warm']:.2f}")
out = {"uv": os.environ.get("UV_VERSION", ""), "medians_s": medians, "runs_s": results,
       "second_env_extra_mib": disk}
os.makedirs(f"{here}/bench/results", exist_ok=True)
json.dump(out, open(f"{here}/bench/results/install_closure_vs_uv.json", "w"), indent=1)
subprocess.run([sys.executable, f"{here}/bench/plot_bars.py", f"{here}/bench/results/install_closure_vs_uv.json",
                f"{here}/docs/img/install_closure_vs_uv.svg",
                "torch 2.4.1's closure from 127.0.0.1 (median, lower is better)"], check=True)
PY
