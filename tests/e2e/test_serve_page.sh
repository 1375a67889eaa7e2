#!/usr/bin/env bash
# The chat page at / (runtime/serve/page/) over plain HTTP: served without
# the API key (the API itself still wants it), with its Content-Type, a
# strict Content-Security-Policy and no external resource; the hooks the
# script needs are there; HEAD answers like GET without a body; other
# methods get 405 with Allow; and without a key a Host header that does not
# name loopback gets 403 for the page too (DNS rebinding).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl > /dev/null || fail "curl is needed"

"$build/tests/ftgen" --quiet --seed 11 --size tiny --format q8_0 --ctx 512 --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; }
trap cleanup EXIT
"$ft" serve "$tmp/b" --port 0 --threads 1 --api-key k3y > "$tmp/key.log" 2>&1 &
pids+=($!)
"$ft" serve "$tmp/b" --port 0 --threads 1 > "$tmp/open.log" 2>&1 &
pids+=($!)
url_of() {
  for _ in $(seq 300); do
    if grep -qs '^listening on http://' "$1"; then sed -n 's/^listening on //p' "$1"; return; fi
    sleep 0.1
  done
  fail "ft serve did not print its address: $(cat "$1")"
}
url=$(url_of "$tmp/key.log")
open=$(url_of "$tmp/open.log")

# get PATH NAME [curl args]: the status into $tmp/NAME.code, headers and body beside it
get() {
  local p=$1 n=$2; shift 2
  curl -s -D "$tmp/$n.hdr" -o "$tmp/$n.body" -w '%{http_code}' "$@" "$url$p" > "$tmp/$n.code"
}
header() { grep -i "^$2:" "$tmp/$1.hdr" | head -1 | sed 's/^[^:]*: *//' | tr -d '\r'; }

get / html
[ "$(cat "$tmp/html.code")" = 200 ] || fail "GET / without a key: $(cat "$tmp/html.code") $(cat "$tmp/html.body")"
[ "$(header html content-type)" = "text/html; charset=utf-8" ] || fail "GET / Content-Type: $(header html content-type)"
csp=$(header html content-security-policy)
for want in "default-src 'none'" "script-src 'self'" "style-src 'self'" "connect-src 'self'" \
            "frame-ancestors 'none'" "base-uri 'none'" "form-action 'none'"; do
  [[ "$csp" == *"$want"* ]] || fail "CSP lacks $want: $csp"
done
[[ "$csp" != *unsafe* && "$csp" != *http* && "$csp" != *'*'* ]] || fail "CSP too loose: $csp"
[ "$(header html x-content-type-options)" = nosniff ] || fail "no X-Content-Type-Options: nosniff"
for hook in 'id="log"' 'id="input"' 'id="send"' 'id="stop"' 'id="key"' 'id="max-tokens"' \
            'src="/chat.js"' 'href="/chat.css"'; do
  grep -qF "$hook" "$tmp/html.body" || fail "the page lacks $hook"
done
# No inline script or style (the CSP would block them) and nothing external.
if grep -qiE '<script>|<script [^>]*>[^<]|<style|style="| on[a-z]+="' "$tmp/html.body"; then fail "inline script or style in the page"; fi

get /chat.js js
[ "$(cat "$tmp/js.code")" = 200 ] || fail "GET /chat.js: $(cat "$tmp/js.code")"
[ "$(header js content-type)" = "text/javascript; charset=utf-8" ] || fail "chat.js Content-Type: $(header js content-type)"
[ -n "$(header js content-security-policy)" ] || fail "chat.js without a CSP"
for hook in "'/v1/chat/completions'" 'stream: true' 'include_usage: true' 'reasoning_content' \
            'cached_tokens' 'new AbortController()' "'Bearer '" 'getReader()' "'[DONE]'" "get('q')"; do
  grep -qF "$hook" "$tmp/js.body" || fail "chat.js lacks $hook"
done
get /chat.css css
[ "$(cat "$tmp/css.code")" = 200 ] && [ "$(header css content-type)" = "text/css; charset=utf-8" ] ||
  fail "GET /chat.css: $(cat "$tmp/css.code") $(header css content-type)"
if grep -qE 'https?://|@import|url\(' "$tmp/html.body" "$tmp/js.body" "$tmp/css.body"; then
  fail "the page loads something external: $(grep -hoE 'https?://[^"'"'"' ]*|@import|url\(' "$tmp/html.body" "$tmp/js.body" "$tmp/css.body" | head -3)"
fi

# The page is open, the API behind it is not.
get /v1/models models
[ "$(cat "$tmp/models.code")" = 401 ] || fail "/v1/models without a key: $(cat "$tmp/models.code")"
# A query string (the page's ?q=) is the same page.
get "/?q=hello" q
[ "$(cat "$tmp/q.code")" = 200 ] && cmp -s "$tmp/q.body" "$tmp/html.body" || fail "GET /?q=hello is not the page"

# HEAD: the headers of GET, no body (read off the socket: HTTP/1.0, so the
# server closes the connection after its answer).
hostport=${url#http://}
exec 3<> "/dev/tcp/${hostport%:*}/${hostport##*:}"
printf 'HEAD / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
timeout 10 cat <&3 > "$tmp/head.raw" || fail "HEAD /: no answer"
exec 3>&-
tr -d '\r' < "$tmp/head.raw" | sed '/^$/q' | tail -n +2 > "$tmp/head.hdr"
head -1 "$tmp/head.raw" | grep -q '^HTTP/1\.[01] 200' || fail "HEAD /: $(head -1 "$tmp/head.raw")"
# the answer ends with the blank line after the headers
[ "$(tail -c 4 "$tmp/head.raw" | od -An -c | tr -d ' \n')" = '\r\n\r\n' ] || fail "HEAD / sent a body: $(tail -c 100 "$tmp/head.raw")"
[ "$(header head content-length)" = "$(wc -c < "$tmp/html.body")" ] ||
  fail "HEAD / Content-Length $(header head content-length), GET sent $(wc -c < "$tmp/html.body")"
[ -n "$(header head content-security-policy)" ] || fail "HEAD / without a CSP"

# Other methods: 405 naming GET and HEAD.
for m in POST PUT DELETE; do
  get / "m$m" -X "$m" -d x
  [ "$(cat "$tmp/m$m.code")" = 405 ] || fail "$m /: $(cat "$tmp/m$m.code")"
  [ "$(header "m$m" allow)" = "GET, HEAD" ] || fail "$m /: Allow '$(header "m$m" allow)'"
  jq -e '.error.message | test("GET or HEAD")' "$tmp/m$m.body" > /dev/null || fail "$m /: $(cat "$tmp/m$m.body")"
done
get /chat.html other -H "Authorization: Bearer k3y"
[ "$(cat "$tmp/other.code")" = 404 ] || fail "GET /chat.html: $(cat "$tmp/other.code")"

# Without a key: a rebound name is refused, loopback names are served.
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Host: evil.example:8080" "$open/")
[ "$code" = 403 ] || fail "GET / with Host evil.example: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Host: localhost" "$open/")
[ "$code" = 200 ] || fail "GET / with Host localhost: $code"

for p in "${pids[@]}"; do
  kill "$p"
  set +e; wait "$p"; rc=$?; set -e
  [ "$rc" = 0 ] || fail "ft serve exited with $rc after SIGTERM"
done
pids=()
for log in "$tmp/key.log" "$tmp/open.log"; do
  if grep -v '^listening' "$log" | grep -q .; then fail "ft serve printed: $(head -20 "$log")"; fi
done
echo "ok: / /chat.js /chat.css ($(wc -c < "$tmp/html.body")+$(wc -c < "$tmp/js.body")+$(wc -c < "$tmp/css.body") bytes)"
