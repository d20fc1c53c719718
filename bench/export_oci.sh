#!/usr/bin/env bash
# `envkit export --oci` of a real torch environment, and what a registry stores for two.
#
# Environment A is torch 2.4.1's whole closure (bench/install_closure_vs_uv.sh's project:
# about 5 GB installed); B is the same project with one more requirement (tqdm). Both are
# installed from the wheels in bench/.work/mirror (served by nginx on 127.0.0.1; a wheel not
# there yet is downloaded from PyPI once and checked against the lock), then:
#   gzip floor:   tar of A's prefix (dereferenced, as the layers hold it) | pigz -6 on all cores
#   export gzip:  envkit export --oci, empty layer cache (compresses every layer)
#   export zstd:  the same with --compress zstd
#   re-export:    the same lock again (layers from envkit's cache)
# and, for the registry: A and B exported into one layout, each pushed with `skopeo copy` to
# Debian's docker-registry on 127.0.0.1; bytes the two manifests reference against bytes the
# registry stores, and how many of B's blobs the registry already had (its access log's uploads).
# Writes bench/results/export_oci.json. Needs nginx, pigz, skopeo, docker-registry.
# Usage: bench/export_oci.sh [ENVKIT_BINARY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
envkit=${1:-$here/build-rel/src/cli/envkit}
work=${ENVKIT_BENCH_WORK:-$here/bench/.work}
source "$here/bench/serve.sh"
for tool in pigz skopeo docker-registry; do
  command -v "$tool" >/dev/null || { echo "needs $tool (scripts/setup)" >&2; exit 77; }
done
run=$(mktemp -d)
cleanup() {
  kill "$(cat "$run/nginx.pid" 2>/dev/null)" 2>/dev/null || true
  kill "$(cat "$run/registry.pid" 2>/dev/null)" 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$run"
}
trap cleanup EXIT

for name in a b; do write_torch_project "$run/$name"; done
echo "tqdm==4.67.1" >"$run/b/requirements.txt"
echo "python-requirements: requirements.txt" >>"$run/b/envkit.yaml"
for name in a b; do "$envkit" -q -C "$run/$name" --recipes "$here/recipes" lock; done

# Every locked wheel into the mirror folder, once (verified against the lock).
python3 - "$run" "$work" <<'PY'
import hashlib, os, subprocess, sys, urllib.parse
import yaml
run, work = sys.argv[1:3]
for name in ["a", "b"]:
    lock = yaml.safe_load(open(f"{run}/{name}/envkit.lock"))
    platform = next(p for p in lock["platforms"] if p["platform"] == "linux-x86_64")
    artifacts = [(w["url"], w["sha256"]) for w in platform["python"]["packages"]]
    artifacts += [(a["url"], a["sha256"]) for p in platform.get("packages", [])
                  for a in p.get("artifacts", []) if a.get("kind") == "wheel"]
    for url, sha256 in artifacts:
        parts = urllib.parse.urlsplit(url)
        path = os.path.join(work, "mirror", parts.netloc, parts.path.lstrip("/"))
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            subprocess.run(["curl", "-sSfLo", path + ".part", url], check=True)
            os.rename(path + ".part", path)
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        assert digest.hexdigest() == sha256, (path, digest.hexdigest())
PY
serve_dir "$work" "$run"
for name in a b; do
  "$envkit" -q -C "$run/$name" --cache-dir "$run/cache" install --frozen \
    --mirror "http://127.0.0.1:$port/mirror"
done

registry_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$run/registry"
cat >"$run/registry/config.yml" <<CONF
version: 0.1
log: {level: info, accesslog: {disabled: false}}
storage: {filesystem: {rootdirectory: $run/registry/data}}
http: {addr: 127.0.0.1:$registry_port}
CONF
docker-registry serve "$run/registry/config.yml" >"$run/registry/log" 2>&1 &
echo $! >"$run/registry.pid"
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$registry_port/v2/" >/dev/null && break; sleep 0.1; done

python3 - "$envkit" "$run" "$here" "$registry_port" <<'PY'
import json, os, shutil, subprocess, sys, time
envkit, run, here, registry_port = sys.argv[1:5]
prefix = f"{run}/a/.envkit/env"
def timed(args, **kw):
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.perf_counter() - start
def export(name, out, *extra, cache=f"{run}/cache"):
    return timed([envkit, "-q", "-C", f"{run}/{name}", "--cache-dir", cache, "export", "--oci", out,
                  *extra])
installed = int(subprocess.run(["du", "-sb", "--dereference-args", prefix + "/"], capture_output=True,
                               text=True, check=True).stdout.split()[0])
subprocess.run(["sync"], check=True)
floor = timed(["bash", "-c", f"tar -C {prefix}/ -cf - . | pigz -6 -p {os.cpu_count()} >/dev/null"])
results = {"installed_bytes": installed, "cores": os.cpu_count(), "pigz -6 of the tar s": floor}
# Each cold export with a layer cache of its own (the install cache stays warm).
shutil.rmtree(f"{run}/cache/oci", ignore_errors=True)
results["export gzip cold s"] = export("a", f"{run}/img-gzip")
results["re-export gzip s"] = export("a", f"{run}/img-gzip")
shutil.rmtree(f"{run}/cache/oci", ignore_errors=True)
results["export zstd cold s"] = export("a", f"{run}/img-zstd", "--compress", "zstd")
results["re-export zstd s"] = export("a", f"{run}/img-zstd", "--compress", "zstd")
results["export gzip / pigz"] = results["export gzip cold s"] / floor
results["export zstd / pigz"] = results["export zstd cold s"] / floor
# The registry: A then B, pushed from one layout.
export("a", f"{run}/img", "--ref", "a")
export("b", f"{run}/img", "--ref", "b")
referenced = 0
def uploads():  # blob uploads the registry started, from its access log
    return open(f"{run}/registry/log").read().count("POST /v2/envkit/bench/blobs/uploads/")
for ref in ["a", "b"]:
    start, before = time.perf_counter(), uploads()
    subprocess.run(["skopeo", "copy", "--dest-tls-verify=false", f"oci:{run}/img:{ref}",
                    f"docker://127.0.0.1:{registry_port}/envkit/bench:{ref}"],
                   capture_output=True, check=True)
    results[f"skopeo push {ref} s"] = time.perf_counter() - start
    index = json.load(open(f"{run}/img/index.json"))
    for descriptor in index["manifests"]:
        if descriptor.get("annotations", {}).get("org.opencontainers.image.ref.name") != ref:
            continue
        digest = descriptor["digest"].split(":")[1]
        manifest = json.load(open(f"{run}/img/blobs/sha256/{digest}"))
        referenced += sum(layer["size"] for layer in manifest["layers"]) + manifest["config"]["size"]
        blobs = len(manifest["layers"]) + 1
    results[f"push {ref}: blobs uploaded"] = uploads() - before
    results[f"push {ref}: blobs already there"] = blobs - (uploads() - before)
stored = int(subprocess.run(["du", "-sb", f"{run}/registry/data"], capture_output=True, text=True,
                            check=True).stdout.split()[0])
results["registry bytes referenced by a and b"] = referenced
results["registry bytes stored"] = stored
for key, value in results.items():
    print(f"{key:40s} {value:.2f}" if isinstance(value, float) else f"{key:40s} {value}")
os.makedirs(f"{here}/bench/results", exist_ok=True)
json.dump(results, open(f"{here}/bench/results/export_oci.json", "w"), indent=1)
PY
