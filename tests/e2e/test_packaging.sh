#!/usr/bin/env bash
# packaging/freetoken.service: the hardening the unit promises is there,
# systemd accepts the unit (systemd-analyze verify, where systemd is
# installed), and its ExecStart, expanded the way systemd expands it with
# the unit's Environment= defaults and the example environment file, starts
# a server that listens on loopback, takes FT_API_KEY from the environment
# (not from its command line) and refuses requests without it.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
unit=$src/packaging/freetoken.service
envfile=$src/packaging/freetoken.env.example
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The [Service] settings the README promises.
for want in DynamicUser=yes NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
            CapabilityBoundingSet= RestrictSUIDSGID=yes 'EnvironmentFile=/etc/freetoken/freetoken.env'; do
  grep -qx "$want" "$unit" || fail "freetoken.service lacks '$want'"
done
exec_line=$(sed -n 's/^ExecStart=//p' "$unit")
[[ $exec_line == "/usr/local/bin/ft serve "* ]] || fail "ExecStart is not ft serve: $exec_line"
grep -q -- '--api-key' <<< "$exec_line" && fail "the key must not be on the command line: $exec_line"
grep -q '^FT_API_KEY=' "$envfile" || fail "the example environment file has no FT_API_KEY"

"$build/tests/ftgen" --quiet --seed 3 --size tiny --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/bundle" --quiet

if command -v systemd-analyze > /dev/null; then
  # With ExecStart pointing at this build's ft (verify checks that it exists).
  sed "s#/usr/local/bin/ft#$build/runtime/ft#" "$unit" > "$tmp/freetoken.service"
  systemd-analyze verify --man=no "$tmp/freetoken.service" > "$tmp/verify.out" 2>&1 ||
    fail "systemd-analyze verify: $(cat "$tmp/verify.out")"
  ! grep -qi "unknown\|invalid" "$tmp/verify.out" || fail "systemd-analyze verify: $(cat "$tmp/verify.out")"
else
  echo "note: no systemd-analyze here; the unit's syntax is not verified"
fi

# The environment systemd gives ExecStart: the unit's Environment= defaults,
# then the environment file (later assignments win), here with this test's
# bundle and a free port.
declare -A env
for kv in $(sed -n 's/^Environment=//p' "$unit"); do env[${kv%%=*}]=${kv#*=}; done
while IFS= read -r line; do
  [[ $line =~ ^([A-Z_]+)=(.*)$ ]] && env[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
done < "$envfile"
env[FT_BUNDLE]=$tmp/bundle
env[FT_PORT]=0
env[FT_SERVE_ARGS]="--parallel 2 --threads 1"
# systemd's expansion: ${VAR} is one word, $VAR splits on whitespace.
args=()
for word in $exec_line; do
  if [[ $word =~ ^\$\{([A-Z_]+)\}$ ]]; then args+=("${env[${BASH_REMATCH[1]}]}")
  elif [[ $word =~ ^\$([A-Z_]+)$ ]]; then read -r -a split <<< "${env[${BASH_REMATCH[1]}]}"; args+=("${split[@]}")
  else args+=("$word"); fi
done
args[0]=$build/runtime/ft
key=${env[FT_API_KEY]}
env -i PATH="$PATH" FT_API_KEY="$key" "${args[@]}" > "$tmp/log" 2>&1 &
pid=$!
trap 'kill $pid 2> /dev/null || true; wait $pid 2> /dev/null || true' EXIT
for _ in $(seq 300); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$tmp/log")
[[ $url == http://127.0.0.1:* ]] || fail "not listening on loopback: $(cat "$tmp/log")"
! tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "$key" || fail "the key is on the command line"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code "$url/health")" = 200 ] || fail "/health"
[ "$(code "$url/v1/models")" = 401 ] || fail "/v1/models without the key was not refused"
[ "$(code "$url/v1/models" -H "Authorization: Bearer $key")" = 200 ] || fail "/v1/models with FT_API_KEY"
[ "$(code "$url/metrics" -H "x-api-key: $key")" = 200 ] || fail "/metrics with the key"
kill -TERM "$pid"; wait "$pid" || fail "ft serve did not exit cleanly on SIGTERM ($?)"
trap - EXIT
echo "ok: freetoken.service"
