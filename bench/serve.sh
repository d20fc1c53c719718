# Sourced by the benchmarks: serve_dir ROOT STATE_DIR starts nginx (Debian's,
# as the calling user, one process) serving ROOT on a free 127.0.0.1 port, with
# directory listings; sets $port and writes the pid to STATE_DIR/nginx.pid.
serve_dir() {
  local root=$1 state=$2 nginx
  nginx=$(command -v nginx || echo /usr/sbin/nginx)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$state/nginx"
  cat >"$state/nginx/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $state/nginx/nginx.pid; error_log $state/nginx/error.log;
events { worker_connections 64; }
http { access_log off; sendfile on;
  client_body_temp_path $state/nginx; proxy_temp_path $state/nginx; fastcgi_temp_path $state/nginx;
  uwsgi_temp_path $state/nginx; scgi_temp_path $state/nginx;
  server { listen 127.0.0.1:$port; root $root; autoindex on; } }
CONF
  "$nginx" -c "$state/nginx/nginx.conf" -p "$state/nginx" 2>/dev/null &
  echo $! >"$state/nginx.pid"
  for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && return 0; sleep 0.1; done
  echo "nginx did not start: $(cat "$state/nginx/error.log" 2>/dev/null)" >&2
  return 1
}

# write_torch_project DIR writes the benchmarks' real project into DIR/envkit.yaml: torch 2.4.1
# from PyPI (as manifests/torch-2.4.1-pypi) on this machine's python3 and zlib (Debian's
# 1.2.13): what is measured is the Python closure, and zlib's source (zlib.net) is not on PyPI.
write_torch_project() {
  mkdir -p "$1"
  cat >"$1/envkit.yaml" <<'YAML'
framework: torch ==2.4.1
external: {python: system, zlib: "1.2.13"}
indexes: [https://pypi.org/simple]
system:
  driver: 550.54.15
YAML
}
