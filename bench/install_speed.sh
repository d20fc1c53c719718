#!/usr/bin/env bash
# `envkit install` of real CUDA libraries from a mirror on 127.0.0.1 (nginx):
# /usr/local/cuda's cudart, crt, nvrtc, curand, nvJitLink and CCCL (1,700 headers) as NVIDIA
# redist archives (tar.xz, xz -0), imported, locked, then installed
#   cold:   empty cache, new prefix (download + sha256 + unpack + link)
#   warm:   filled cache, new prefix (link only)
#   no-op:  the same prefix again (nothing to do)
# against the floor (every archive decoded with `xz -d` in parallel) and the
# manual way (curl, then sha256sum, then tar -xJf, one after another).
# Medians of 3 runs; peak memory of a cold install. Needs /usr/local/cuda and nginx.
# Usage: bench/install_speed.sh [ENVKIT_BINARY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
envkit=${1:-$here/build/src/cli/envkit}
[ -d /usr/local/cuda/dist-info ] || { echo "needs /usr/local/cuda with dist-info" >&2; exit 77; }
source "$here/bench/serve.sh"
work=$(mktemp -d)
trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

python3 - "$work" <<'PY'
import hashlib, json, os, shutil, subprocess, sys
work = sys.argv[1]
cuda = "/usr/local/cuda"
wanted = {"nvidia_cuda_runtime-": "cuda_cudart", "nvidia_cuda_crt-": "cuda_crt",
          "nvidia_cuda_nvrtc-": "cuda_nvrtc", "nvidia_curand-": "libcurand",
          "nvidia_nvjitlink-": "libnvjitlink", "nvidia_cuda_cccl-": "cuda_cccl"}
manifest = {"release_date": "2025-10-01", "release_label": "13.0.2", "release_product": "cuda"}
for info in sorted(os.listdir(f"{cuda}/dist-info")):
    prefix = next((p for p in wanted if info.startswith(p)), None)
    if not prefix:
        continue
    name, version = wanted[prefix], info[len(prefix):-len(".dist-info")]
    top = f"{name}-linux-x86_64-{version}-archive"
    stage = os.path.join(work, "stage", top)
    for line in open(f"{cuda}/dist-info/{info}/RECORD"):
        path = line.split(",")[0]
        if not path.startswith("nvidia/cu13/"):
            continue
        inside = path[len("nvidia/cu13/"):]
        if not os.path.isfile(os.path.join(cuda, inside)):
            continue  # listed by the wheel, not in this tree (CCCL's .metadata)
        os.makedirs(os.path.dirname(os.path.join(stage, inside)), exist_ok=True)
        shutil.copy(os.path.join(cuda, inside), os.path.join(stage, inside))
    rel = f"{name}/linux-x86_64/{top}.tar.xz"
    out = os.path.join(work, "www", rel)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    subprocess.run(["tar", "-C", os.path.join(work, "stage"), "-cJf", out, top], check=True,
                   env=dict(os.environ, XZ_OPT="-0 -T0"))
    data = open(out, "rb").read()
    manifest[name] = {"name": name, "license": "CUDA Toolkit", "version": version,
                      "linux-x86_64": {"relative_path": rel, "sha256": hashlib.sha256(data).hexdigest(),
                                       "md5": "0" * 32, "size": str(len(data))}}
json.dump(manifest, open(os.path.join(work, "redistrib_13.0.2.json"), "w"), indent=2)
PY
unpacked=$(du -sb "$work/stage" | cut -f1); files=$(find "$work/stage" -type f | wc -l)
compressed=$(du -sb "$work/www" | cut -f1)

serve_dir "$work/www" "$work"
base="http://127.0.0.1:$port"

"$envkit" -q --recipes "$work/db" recipes import nvidia-redist "$work/redistrib_13.0.2.json" --base-url "$base/"
mkdir -p "$work/project"
printf 'requires:\n  cuda: "13.0"\nsystem:\n  driver: 580.95.05\n' >"$work/project/envkit.yaml"
"$envkit" -q -C "$work/project" --recipes "$work/db" lock

COMPRESSED=$compressed UNPACKED=$unpacked FILES=$files python3 - "$envkit" "$work" "$base" <<'PY'
import glob, os, shutil, statistics, subprocess, sys, time
envkit, work, base = sys.argv[1:4]
def run(args, **kw):
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    return time.perf_counter() - start
def install(cache, prefix):
    return run([envkit, "-q", "-C", f"{work}/project", "--cache-dir", cache, "install",
                "--frozen", "--prefix", prefix])
cold, warm, noop = [], [], []
for i in range(3):
    cache, prefix = f"{work}/cache{i}", f"{work}/env{i}"
    cold.append(install(cache, prefix))
    # A warm install's own time: the disk settled first. Right after the cold install
    # its 462 MB are still being written back, and the warm install's one fsync (its
    # receipts, the commit point) would wait for them (docs/benchmarks.md).
    for j in range(3):
        subprocess.run(["sync"], check=True)
        warm.append(install(cache, f"{work}/env{i}-warm{j}"))
    noop.append(install(cache, prefix))
archives = sorted(glob.glob(f"{work}/www/**/*.tar.xz", recursive=True))
floor = [run(["bash", "-c", " & ".join(f"xz -d -c {a} >/dev/null" for a in archives) + " & wait"])
         for _ in range(3)]
def manual():
    out = f"{work}/manual"
    shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
    start = time.perf_counter()
    for a in archives:
        rel = os.path.relpath(a, f"{work}/www")
        dest = f"{out}/{os.path.basename(a)}"
        subprocess.run(["curl", "-sSfo", dest, f"{base}/{rel}"], check=True)
        subprocess.run(["sha256sum", dest], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["tar", "-C", out, "-xJf", dest], check=True)
    return time.perf_counter() - start
manual_times = [manual() for _ in range(3)]
rss = subprocess.run(["/usr/bin/time", "-f", "%M", envkit, "-q", "-C", f"{work}/project", "--cache-dir",
                      f"{work}/cache-rss", "install", "--frozen", "--prefix", f"{work}/env-rss"],
                     check=True, capture_output=True, text=True).stderr.strip().splitlines()[-1]
m = statistics.median
print(f"archives: {len(archives)}, {int(os.environ.get('COMPRESSED', 0))/2**20:.0f} MiB compressed, "
      f"{int(os.environ.get('UNPACKED', 0))/2**20:.0f} MiB / {os.environ.get('FILES')} files unpacked")
print(f"cold install  median {m(cold)*1000:7.0f} ms   (all runs: {', '.join(f'{t*1000:.0f}' for t in cold)})")
print(f"warm install  median {m(warm)*1000:7.0f} ms   (9 runs, each after `sync`; min {min(warm)*1000:.0f})")
print(f"no-op install median {m(noop)*1000:7.0f} ms")
print(f"floor: xz -d of every archive in parallel  median {m(floor)*1000:7.0f} ms  -> cold/floor = {m(cold)/m(floor):.2f}")
print(f"manual: curl, sha256sum, tar -xJf in turn   median {m(manual_times)*1000:7.0f} ms  -> manual/cold = {m(manual_times)/m(cold):.2f}")
print(f"peak memory of a cold install: {int(rss)/1024:.0f} MiB")
PY
