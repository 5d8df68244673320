#!/usr/bin/env bash
# govern-streams-serve with SASL required, ACLs and DLP screening, judged by real clients: kcat (librdkafka
# 2.0.2) with SASL PLAIN (header values screened; ACL and users files reloaded while it runs), and
# streams_oauth_client (librdkafka, OAUTHBEARER with real Govern access tokens
# signed by a test key ring whose JWKS the broker trusts). Expects $STREAMS_SERVE, $STREAMS_OAUTH and
# $STREAMS_TOKEN_TOOL (ctest sets them). Each check prints FAIL with what it saw; the exit status counts
# failures.
set -uo pipefail
: "${STREAMS_SERVE:?}" "${STREAMS_OAUTH:?}" "${STREAMS_TOKEN_TOOL:?}"
STREAMS_SERVE="$(realpath "$STREAMS_SERVE")"
STREAMS_OAUTH="$(realpath "$STREAMS_OAUTH")"
TOOL="$(realpath "$STREAMS_TOKEN_TOOL")"
command -v kcat >/dev/null || { echo "missing kcat" >&2; exit 1; }
work="$(mktemp -d /tmp/govern-streams-sec-XXXXXX)"
broker_pid=""
cleanup() {
  [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
contains() { [[ "$3" == *"$2"* ]] || fail "$1: lacks '$2' in: $3"; }
lacks() { [[ "$3" != *"$2"* ]] || fail "$1: has '$2' in: $3"; }

ISS="https://auth.streams.test"
mkdir trusted untrusted
"$TOOL" keygen trusted && "$TOOL" keygen untrusted || { echo "keygen failed" >&2; exit 1; }
cat > users <<EOT
alice $("$TOOL" users alice-pw)
bob $("$TOOL" users bob-pw)
EOT
cat > acl <<'EOT'
allow User:alice all topic:*
allow User:alice create cluster:*
allow User:bob read topic:public
allow User:bob describe topic:orders
allow User:carol write topic:oauth
allow User:carol read topic:oauth
EOT

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
B="127.0.0.1:$port"
"$STREAMS_SERVE" --listen "$B" --data-dir "$work/data" --require-sasl true --users-file users \
  --jwks-file trusted/jwks.json --issuer "$ISS" --acl-file acl --screening "pii=block,flagged*=flag" --reload-ms 200 \
  >>"$work/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.05
done

plain() {  # plain USER PASSWORD kcat-args...
  local u="$1" p="$2"
  shift 2
  timeout 20 kcat -b "$B" -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=PLAIN \
    -X sasl.username="$u" -X sasl.password="$p" -X socket.timeout.ms=4000 -X message.timeout.ms=6000 "$@" 2>&1
}

# 1. Without SASL the broker serves nothing but ApiVersions: metadata fails.
out="$(timeout 15 kcat -b "$B" -L -m 3 2>&1)" && fail "metadata without SASL succeeded: $out"

# 2. PLAIN: alice produces and consumes; a wrong password is refused.
printf 'one\ntwo\nthree\n' | plain alice alice-pw -P -t orders -p 0 >/dev/null
out="$(plain alice alice-pw -C -t orders -p 0 -o beginning -e -q)"
[ "$out" = $'one\ntwo\nthree' ] || fail "alice round trip: $out"
out="$(plain alice wrong -L -m 3)"
contains "wrong password" "SASL authentication error: authentication failed" "$out"
out="$(plain mallory alice-pw -L -m 3)"
contains "unknown user" "SASL authentication error: authentication failed" "$out"

# 3. ACLs: bob may not write or read orders; metadata hides what he may not describe.
printf 'p1\n' | plain alice alice-pw -P -t public -p 0 >/dev/null
printf 's1\n' | plain alice alice-pw -P -t secret -p 0 >/dev/null
out="$(printf 'x\n' | plain bob bob-pw -P -t orders -p 0)"
contains "bob produce" "Topic authorization failed" "$out"
out="$(plain bob bob-pw -C -t orders -p 0 -o beginning -e -q)"
contains "bob consume" "Topic authorization failed" "$out"
out="$(plain bob bob-pw -C -t public -p 0 -o beginning -e -q)"
[ "$out" = "p1" ] || fail "bob reads public: $out"
out="$(plain bob bob-pw -L)"
contains "bob metadata" '"public"' "$out"
contains "bob metadata" '"orders"' "$out"
lacks "bob metadata" '"secret"' "$out"
out="$(plain bob bob-pw -L -t secret)"
contains "bob metadata of secret" "Topic authorization failed" "$out"

# 4. Screening: block refuses the partition's records with POLICY_VIOLATION; flag adds govern-dlp.
out="$(printf 'mail alice@example.com\n' | plain alice alice-pw -P -t pii -p 0)"
contains "block" "Policy violation" "$out"
printf 'nothing to see\n' | plain alice alice-pw -P -t pii -p 0 >/dev/null
out="$(plain alice alice-pw -C -t pii -p 0 -o beginning -e -q)"
[ "$out" = "nothing to see" ] || fail "pii holds only the clean record: $out"
grep -q "produce refused by screening.*email" broker.log || fail "broker log does not name the detector"
for codec in none zstd gzip; do
  printf 'plain one\nmail bob@example.org\n' | plain alice alice-pw -P -t "flagged-$codec" -p 0 -z "$codec" >/dev/null
  out="$(plain alice alice-pw -C -t "flagged-$codec" -p 0 -o beginning -e -q -X check.crcs=true -f '%s|%h\n')"
  contains "flag $codec" "mail bob@example.org|govern-dlp=email" "$out"
  contains "flag $codec" "plain one|" "$out"
  lacks "flag $codec" "plain one|govern-dlp" "$out"
done

# Header values are screened too: a clean value with an address in a header is blocked, or flagged.
out="$(printf 'clean value\n' | plain alice alice-pw -P -t pii -p 0 -H 'trace=user alice@example.com')"
contains "block by header" "Policy violation" "$out"
printf 'clean value\n' | plain alice alice-pw -P -t flagged-hdr -p 0 -H 'trace=user bob@example.org' >/dev/null
out="$(plain alice alice-pw -C -t flagged-hdr -p 0 -o beginning -e -q -f '%s|%h\n')"
contains "flag by header" "clean value|trace=user bob@example.org,govern-dlp=email" "$out"

# 5. OAUTHBEARER with Govern tokens: good, expired, wrong audience, untrusted key; kcat's unsecured JWT.
# (Token files end in .jwt: "trusted" and "untrusted" are the key ring folders.)
"$TOOL" mint trusted "$ISS" carol govern:streams 300 > good.jwt
"$TOOL" mint trusted "$ISS" carol govern:streams -60 > expired.jwt
"$TOOL" mint trusted "$ISS" carol govern:telemetry 300 > wrongaud.jwt
"$TOOL" mint untrusted "$ISS" carol govern:streams 300 > untrusted.jwt
# carol may not create topics: alice makes the topic.
printf 'hello-alice\n' | plain alice alice-pw -P -t oauth -p 0 >/dev/null
out="$(timeout 30 "$STREAMS_OAUTH" "$B" good.jwt produce oauth hello-oauth 2>&1)" || fail "oauth produce: $out"
out="$(timeout 30 "$STREAMS_OAUTH" "$B" good.jwt consume oauth 2 2>&1)"
[ "$out" = $'hello-alice\nhello-oauth' ] || fail "oauth consume: $out"
out="$(timeout 30 "$STREAMS_OAUTH" "$B" good.jwt produce orders nope 2>&1)"
contains "oauth produce to orders" "TOPIC_AUTHORIZATION_FAILED" "$out"
for t in expired wrongaud untrusted; do
  out="$(timeout 30 "$STREAMS_OAUTH" "$B" "$t.jwt" produce oauth x 2>&1)" && fail "oauth $t accepted: $out"
  contains "oauth $t" "error:" "$out"
done
grep -q "invalid token: .*expired\|token expired\|expired" broker.log || fail "broker log lacks the expired rejection"
out="$(timeout 20 kcat -b "$B" -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=OAUTHBEARER \
  -X sasl.oauthbearer.config='principal=carol' -X enable.sasl.oauthbearer.unsecure.jwt=true -L -m 3 2>&1)" \
  && fail "unsecured JWT accepted: $out"

# 6. The ACL and users files are reloaded while the broker runs (--reload-ms 200): bob is granted write on
# orders (the file replaced by a rename), then removed from the users file.
cp acl acl.new && echo "allow User:bob write topic:orders" >> acl.new && mv acl.new acl
# Until the reload lands bob's produce is refused; any other failure (a slow machine) is retried too,
# and the record must then be there to read.
ok=""
for _ in $(seq 60); do
  printf 'from-bob\n' | plain bob bob-pw -P -t orders -p 0 >/dev/null 2>&1 || true
  out="$(plain alice alice-pw -C -t orders -p 0 -o beginning -e -q)"
  if [[ "$out" == *from-bob* ]]; then ok=1; break; fi
  sleep 0.25
done
[ -n "$ok" ] || fail "bob's write grant was not picked up: orders holds: $out"
grep -v '^bob ' users > users.new && mv users.new users
ok=""
for _ in $(seq 40); do
  out="$(plain bob bob-pw -L -m 3)"
  if [[ "$out" == *"SASL authentication error"* ]]; then ok=1; break; fi
  sleep 0.25
done
[ -n "$ok" ] || fail "bob still authenticates after his removal: $out"
grep -q "ACL file reloaded" broker.log || fail "broker log lacks the ACL reload"
grep -q "users file reloaded" broker.log || fail "broker log lacks the users reload"

kill "$broker_pid" && wait "$broker_pid" 2>/dev/null
broker_pid=""
if [ "$failures" -ne 0 ]; then
  echo "--- broker log" >&2
  tail -50 broker.log >&2
fi
echo "streams security e2e: $failures failure(s)"
exit "$failures"
