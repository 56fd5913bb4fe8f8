#!/usr/bin/env bash
# deploy/check.sh: every check of deploy/ that needs neither a Docker engine nor a Kubernetes cluster. Run it
# from anywhere (it works from the repository root); .ci/run runs it. Exits non-zero naming each check that
# failed (it runs them all, then says which failed).
#
#   yamllint          every YAML file of deploy/ (deploy/.yamllint, --strict)
#   kubernetes        every manifest of deploy/kubernetes (and of its load/, the generator Job) against the Kubernetes schemas (kubernetes-validate,
#                     offline, --strict) of 1.30 (the oldest this deployment supports: preStop's sleep action)
#                     and 1.37 (the newest it ships); a missing schema (an unknown kind) fails too
#   kustomization     deploy/kubernetes/kustomization.yaml (the base) lists every manifest there and the scaling
#                     component its own; each overlay of deploy/overlays built (`kubectl kustomize`, offline) and
#                     the result validated like the manifests
#   hadolint          deploy/Dockerfile
#   build context     the files deploy/Dockerfile.dockerignore lets into `docker build` hold a workspace that
#                     loads (`cargo metadata --locked --offline`) with the gateway's mcpgw binary
#   scripts           shellcheck on this script and every other shell script of deploy/
#   nginx -t          deploy/nginx/mcpgw.conf inside a minimal nginx.conf of its own (the upstream's servers at
#                     127.0.0.1), as the current user, its own pid and logs; no nginx needs to run
#   body limit        nginx's client_max_body_size equals deploy/mcpgw.toml's [server] max_body_bytes
#   configmap         the ConfigMap the base generates holds deploy/mcpgw.toml's text, byte for byte (the file is
#                     deploy/kubernetes/mcpgw.toml; deploy/mcpgw.toml links to it)
#   mcpgw check       the built binary accepts that config (`mcpgw check`: validates it, starts its backend
#                     once, lists it), the image's /usr/local/bin/mcpgw being the built binary and the secret
#                     files it reads (API keys' digests, Redis's password) made for the check
#
# The tools come from PyPI, pinned in deploy/requirements.txt, in a venv at target/deploy-venv (made again
# only when that file or the Python changes). nginx is Debian's (`apt-get install nginx`; .ci/run installs
# it). The binary: $MCPGW_BIN, else `cargo build -p gateway --bin mcpgw` (target/debug/mcpgw).
# Environment: MCPGW_PYTHON (default python3), MCPGW_BIN, CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${MCPGW_PYTHON:-python3}"
VENV=target/deploy-venv
KUBERNETES_VERSIONS=(1.30.0 1.37.0)

die() {
  echo "deploy/check.sh: $*" >&2
  exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- the tools -----------------------------------------------------------------------------------------------
command -v "$PYTHON" >/dev/null 2>&1 || die "no $PYTHON (Debian: apt-get install python3 python3-venv)"
stamp="$( { sha256sum deploy/requirements.txt; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.requirements.sha256" 2>/dev/null)" != "$stamp" ]; then
  echo "==> a venv at $VENV with deploy/requirements.txt"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV" </dev/null || die "'$PYTHON -m venv' failed (Debian: apt-get install python3-venv)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r deploy/requirements.txt \
    </dev/null || die "pip install -r deploy/requirements.txt failed"
  "$VENV/bin/python" -m pip check --disable-pip-version-check </dev/null \
    || die "deploy/requirements.txt does not pin every dependency of its tools"
  echo "$stamp" >"$VENV/.requirements.sha256"
fi
export PATH="$PWD/$VENV/bin:$PATH"
py="$VENV/bin/python"

if [ -n "${MCPGW_BIN:-}" ]; then
  mcpgw="$MCPGW_BIN"
else
  echo "==> cargo build -p gateway --bin mcpgw"
  cargo build --quiet --locked -p gateway --bin mcpgw </dev/null || die "cargo build -p gateway --bin mcpgw failed"
  mcpgw="${CARGO_TARGET_DIR:-target}/debug/mcpgw"
fi
[ -x "$mcpgw" ] || die "no mcpgw binary at $mcpgw"
mcpgw="$(cd "$(dirname "$mcpgw")" && pwd)/$(basename "$mcpgw")"

# --- the checks ----------------------------------------------------------------------------------------------
# Each is a function that returns non-zero on failure (they are called in a condition, where `set -e` does not
# apply: each says `|| return 1` where it must stop).
failed=()
run() { # NAME FUNCTION
  local name=$1 started
  started=$(date +%s)
  printf '\n==> %s\n' "$name"
  if "$2"; then
    printf 'ok: %s (%s s)\n' "$name" "$(($(date +%s) - started))"
  else
    printf 'FAILED: %s\n' "$name" >&2
    failed+=("$name")
  fi
}

check_yamllint() {
  yamllint -c deploy/.yamllint --strict deploy
}

# kubernetes-validate FILE: every document validated against every version; it only warns (exit 0) on a kind
# it has no schema for, so any line that is not an INFO fails too.
validate_manifest() {
  local file=$1 out status=0 args=()
  local v
  for v in "${KUBERNETES_VERSIONS[@]}"; do args+=(-k "$v"); done
  out=$(kubernetes-validate --strict "${args[@]}" "$file" 2>&1) || status=$?
  printf '%s\n' "$out"
  if [ "$status" -ne 0 ] || printf '%s\n' "$out" | grep -qv '^INFO '; then
    echo "$file: not valid (or not a Kubernetes object kubernetes-validate knows)" >&2
    return 1
  fi
}

check_kubernetes() {
  local file status=0
  for file in deploy/kubernetes/*.yaml deploy/kubernetes/scaling/*.yaml deploy/kubernetes/load/*.yaml; do
    [ "$(basename "$file")" = kustomization.yaml ] && continue
    validate_manifest "$file" || status=1
  done
  return "$status"
}

check_kustomization() {
  # A Kustomization is kustomize's, not a Kubernetes API object: the base's and the scaling component's
  # listings are compared with their directories, then kubectl's kustomize builds each overlay (every listed
  # file read, the ConfigMap generated, namespace and images applied) offline.
  "$py" - <<'PY' || return 1
import os, sys, yaml
problems = []
def listing(d, api, kind, known):
    with open(os.path.join(d, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    if k.get("apiVersion") != api or k.get("kind") != kind:
        problems.append(f"{d}/kustomization.yaml: not a {api} {kind}")
    problems.extend(f"{d}/kustomization.yaml: unexpected field {key!r}" for key in k if key not in known)
    listed = k.get("resources") or []
    if len(set(listed)) != len(listed):
        problems.append(f"{d}/kustomization.yaml lists a resource twice")
    present = sorted(n for n in os.listdir(d) if n.endswith((".yaml", ".yml")) and n != "kustomization.yaml")
    problems.extend(f"{d}/kustomization.yaml lists {n}, which does not exist" for n in listed if n not in present)
    problems.extend(f"{d}/{n} is not listed in its kustomization.yaml" for n in present if n not in listed)
    print(f"{d}/kustomization.yaml lists {len(listed)} files; the directory holds {len(present)} manifests")
    return k
base = listing("deploy/kubernetes", "kustomize.config.k8s.io/v1beta1", "Kustomization",
               {"apiVersion", "kind", "namespace", "resources", "images", "labels", "configMapGenerator"})
generated = [f for g in base.get("configMapGenerator") or [] for f in g.get("files") or []]
if generated != ["mcpgw.toml"]:
    problems.append(f"the base generates its ConfigMap from {generated}, not mcpgw.toml alone")
listing("deploy/kubernetes/scaling", "kustomize.config.k8s.io/v1alpha1", "Component",
        {"apiVersion", "kind", "resources"})
if os.path.realpath("deploy/mcpgw.toml") != os.path.realpath("deploy/kubernetes/mcpgw.toml"):
    problems.append("deploy/mcpgw.toml is not deploy/kubernetes/mcpgw.toml (a link to it)")
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
  local overlay status=0
  for overlay in deploy/overlays/*/; do
    overlay=${overlay%/}
    kubectl kustomize "$overlay" >"$tmp/kustomized-$(basename "$overlay").yaml" || return 1
    echo "kubectl kustomize $overlay: $(grep -c '^kind: ' "$tmp/kustomized-$(basename "$overlay").yaml") objects"
    validate_manifest "$tmp/kustomized-$(basename "$overlay").yaml" || status=1
  done
  return "$status"
}

check_hadolint() {
  hadolint deploy/Dockerfile
}

check_build_context() {
  # The files `docker build -f deploy/Dockerfile .` would send (moby's .dockerignore rules: the last pattern
  # matching a path or one of its parent directories decides), copied to a directory of their own; cargo must
  # load the workspace from there as the Dockerfile's builder does (--locked), and find the mcpgw binary.
  git ls-files -z --cached --others --exclude-standard >"$tmp/files" || return 1
  "$py" - "$tmp/files" "$tmp/context" <<'PY' || return 1
import os, re, shutil, sys
listing, dest = sys.argv[1], sys.argv[2]
def compile_pattern(p):
    out, i = "", 0
    while i < len(p):
        if p.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif p.startswith("**", i):
            out, i = out + ".*", i + 2
        elif p[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif p[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(p[i]), i + 1
    return re.compile("^" + out + "$")
patterns = []
with open("deploy/Dockerfile.dockerignore") as f:
    for line in f:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        patterns.append((negated, compile_pattern(line)))
def excluded(path):
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    out = False
    for negated, rx in patterns:
        if any(rx.match(p) for p in prefixes):
            out = not negated
    return out
paths = [p for p in open(listing).read().split("\0") if p and os.path.isfile(p)]
sent = [p for p in paths if not excluded(p)]
for p in sent:
    os.makedirs(os.path.join(dest, os.path.dirname(p)), exist_ok=True)
    shutil.copy2(p, os.path.join(dest, p))
top = sorted({p.split("/")[0] for p in sent})
print(f"build context: {len(sent)} of {len(paths)} files, top level: {' '.join(top)}")
PY
  # The resolve is the whole lock file's (--locked: unchanged); only this machine's platform is downloaded.
  local host
  host=$(rustc -vV | sed -n 's/^host: //p') || return 1
  cargo metadata --quiet --locked --offline --filter-platform "$host" --format-version 1 \
    --manifest-path "$tmp/context/Cargo.toml" >"$tmp/metadata.json" </dev/null || return 1
  "$py" - "$tmp/metadata.json" <<'PY'
import json, os, sys
meta = json.load(open(sys.argv[1]))
bins = [t for p in meta["packages"] if p["name"] == "gateway" for t in p["targets"]
        if t["name"] == "mcpgw" and "bin" in t["kind"]]
if not bins or not os.path.isfile(bins[0]["src_path"]):
    sys.exit("the build context has no gateway package with an mcpgw binary")
print(f"cargo loads the workspace from the build context: {len(meta['workspace_members'])} members, "
      f"{len(meta['packages'])} packages locked")
PY
}

check_shellcheck() {
  # Every *.sh of deploy/ and every file there whose first line is a sh/bash/dash shebang.
  local f scripts=()
  while IFS= read -r -d '' f; do
    case "$f" in
      *.sh) scripts+=("$f") ;;
      *) head -n 1 "$f" | grep -qE '^#!.*(/|env )(ba|da)?sh( |$)' && scripts+=("$f") ;;
    esac
  done < <(find deploy -type f -not -path 'deploy/secrets/*' -print0 | sort -z)
  echo "shellcheck ${scripts[*]}"
  shellcheck "${scripts[@]}"
}

check_nginx() {
  # The layout the compose file mounts into nginx's image: the server block as conf.d/default.conf inside the
  # `http` block, the upstream as mcpgw/upstream.conf beside nginx.conf (its `include` is relative to it).
  command -v nginx >/dev/null 2>&1 || { echo "no nginx here (Debian: apt-get install nginx)" >&2; return 1; }
  local n="$tmp/nginx"
  mkdir -p "$n/conf.d" "$n/mcpgw" "$n/temp" || return 1
  cp deploy/nginx/mcpgw.conf "$n/conf.d/default.conf" || return 1
  sed -E 's/^([[:space:]]*server[[:space:]]+)[^[:space:]:;]+/\1127.0.0.1/' deploy/nginx/upstream.conf \
    >"$n/mcpgw/upstream.conf" || return 1
  grep -E '^[[:space:]]*server[[:space:]]' "$n/mcpgw/upstream.conf" || { echo "no server line in upstream.conf" >&2; return 1; }
  cat >"$n/nginx.conf" <<EOF || return 1
worker_processes 1;
pid $n/nginx.pid;
error_log $n/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $n/temp/body;
  proxy_temp_path $n/temp/proxy;
  fastcgi_temp_path $n/temp/fastcgi;
  uwsgi_temp_path $n/temp/uwsgi;
  scgi_temp_path $n/temp/scgi;
  include conf.d/default.conf;
}
EOF
  nginx -t -q -p "$n" -e "$n/error.log" -c "$n/nginx.conf" </dev/null || return 1
  nginx -v 2>&1
}

check_body_limit() {
  "$py" - deploy/nginx/mcpgw.conf deploy/mcpgw.toml <<'PY'
import re, sys
nginx = re.findall(r"^\s*client_max_body_size\s+(\d+)([kKmMgG]?)\s*;", open(sys.argv[1]).read(), re.M)
if len(nginx) != 1:
    sys.exit(f"{sys.argv[1]}: expected one client_max_body_size, found {len(nginx)}")
number, unit = nginx[0]
nginx_bytes = int(number) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit.lower()]
gateway = re.findall(r"^\s*max_body_bytes\s*=\s*(\d+)\s*(?:#.*)?$", open(sys.argv[2]).read(), re.M)
if len(gateway) != 1:
    sys.exit(f"{sys.argv[2]}: expected one [server] max_body_bytes, found {len(gateway)}")
if nginx_bytes != int(gateway[0]):
    sys.exit(f"nginx's client_max_body_size is {nginx_bytes} bytes, the gateway's max_body_bytes {gateway[0]}")
print(f"both {nginx_bytes} bytes")
PY
}

check_configmap() {
  kubectl kustomize deploy/overlays/replicas >"$tmp/generated.yaml" || return 1
  "$py" - "$tmp/generated.yaml" deploy/mcpgw.toml "$tmp/configmap.toml" <<'PY'
import sys, yaml
cm = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ConfigMap")
text = cm["data"]["mcpgw.toml"]
open(sys.argv[3], "w").write(text)
if text != open(sys.argv[2]).read():
    sys.exit(f"{sys.argv[1]}'s data mcpgw.toml differs from {sys.argv[2]}")
print(f"the same {len(text)} bytes")
PY
}

check_mcpgw() {
  # The config names the image's binary (/usr/local/bin/mcpgw, its demo backend); here that is the built one.
  local source secret status=0
  if [ ! -f "$tmp/configmap.toml" ]; then
    echo "the ConfigMap's config was not extracted (see the configmap check)" >&2
    return 1
  fi
  # The secret files it reads (/run/secrets/mcpgw-auth: the Secret mcpgw-auth, compose's secrets), made here
  # as deploy/README.md makes them: a digest per key, a Redis password.
  mkdir -p "$tmp/secrets"
  for secret in client-key-digest metrics-key-digest; do
    echo "a key of deploy/check.sh for $secret" | "$mcpgw" auth hash-key >"$tmp/secrets/$secret" || return 1
  done
  echo "a-redis-password-of-deploy-check" >"$tmp/secrets/redis-password"
  for source in deploy/mcpgw.toml "$tmp/configmap.toml"; do
    sed -e "s|/usr/local/bin/mcpgw|$mcpgw|g" -e "s|/run/secrets/mcpgw-auth/|$tmp/secrets/|g" "$source" \
      >"$tmp/checked.toml" || return 1
    echo "mcpgw check --config $source"
    "$mcpgw" check --config "$tmp/checked.toml" </dev/null || status=1
  done
  return "$status"
}

run "yamllint (every YAML file of deploy/)" check_yamllint
run "kubernetes-validate (every manifest, Kubernetes ${KUBERNETES_VERSIONS[*]}, strict)" check_kubernetes
run "kustomization (listing; kubectl kustomize, validated)" check_kustomization
run "hadolint deploy/Dockerfile" check_hadolint
run "Docker build context (Dockerfile.dockerignore; cargo metadata --locked)" check_build_context
run "shellcheck (deploy/ scripts)" check_shellcheck
run "nginx -t (deploy/nginx, upstream at 127.0.0.1)" check_nginx
run "nginx client_max_body_size = [server] max_body_bytes" check_body_limit
run "ConfigMap config = deploy/mcpgw.toml" check_configmap
run "mcpgw check (deploy/mcpgw.toml and the ConfigMap's config)" check_mcpgw

echo
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'deploy/check.sh: %s check(s) failed:\n' "${#failed[@]}" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "deploy/check.sh: every check passed"
