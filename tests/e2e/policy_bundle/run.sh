#!/usr/bin/env bash
# The bundle commands end to end: keygen, sign (--dir and --file), inspect, verify (ok and each refusal
# with its reason and exit 1), key rotation, and GNU tar listing and extracting the archive, proving it is
# an ordinary tar.gz. Expects $GOVERN (ctest sets it). No database or service is involved.
set -euo pipefail
: "${GOVERN:?GOVERN must point at the govern binary}"
GOVERN="$(realpath "$GOVERN")"
work="$(mktemp -d /tmp/govern-bundle-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
checks=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# expect DESCRIPTION EXIT_CODE SUBSTRING -- command...
expect() {
  local desc="$1" want_rc="$2" want="$3"
  shift 3
  checks=$((checks + 1))
  local out rc=0
  out="$("$@" 2>&1)" || rc=$?
  if [ "$rc" != "$want_rc" ]; then fail "$desc: exit $rc, want $want_rc; output: $out"
  elif [[ "$out" != *"$want"* ]]; then fail "$desc: output lacks '$want'; got: $out"; fi
}
g() { "$GOVERN" "$@"; }

# Keys: one with a derived key id, one named; the private key file is 0600; no overwriting.
expect "keygen" 0 "key id" g policy keygen --out-private a.key --out-public a.pub
expect "keygen named" 0 "key id ops-2026" g policy keygen --out-private b.key --out-public b.pub --key-id ops-2026
expect "keygen refuses to overwrite" 1 "exists" g policy keygen --out-private a.key --out-public x.pub
expect "keygen bad id" 2 "key id" g policy keygen --out-private c.key --out-public c.pub --key-id "no spaces"
[ "$(stat -c %a a.key)" = 600 ] || fail "private key mode is $(stat -c %a a.key)"
grep -q '^-----BEGIN GOVERN BUNDLE PUBLIC KEY-----$' a.pub || fail "public key file header"
a_id="$(sed -n 's/^Key-Id: //p' a.pub)"
[ ${#a_id} = 16 ] || fail "derived key id '$a_id'"

# Content.
mkdir -p src/tests
printf 'permit(principal, action == Action::"call_tool", resource);\n' >src/policies.cedar
printf '[]\n' >src/entities.json
printf '{"agents": {"default": {"calls_per_minute": 60}}}\n' >src/limits.json
printf 'case\n' >src/tests/one.txt

expect "sign --dir" 0 "version 5" g policy sign --dir src --version 5 --org acme --key a.key --out v5.tar.gz --created 1795833000
expect "sign --file" 0 "version 6" g policy sign --file policies.cedar=src/policies.cedar --file entities.json=src/entities.json \
  --version 6 --org acme --key a.key --out v6.tar.gz
expect "sign needs --dir or --file" 2 "--dir" g policy sign --version 1 --org acme --key a.key --out x.tar.gz
expect "sign unsafe name" 2 "unsafe" g policy sign --file ../x=src/entities.json --version 1 --org acme --key a.key --out x.tar.gz
expect "sign missing file" 1 "not a readable" g policy sign --file p=src/nope --version 1 --org acme --key a.key --out x.tar.gz
expect "sign with a public key" 1 "private key" g policy sign --dir src --version 1 --org acme --key a.pub --out x.tar.gz

# It is a real tar.gz: GNU tar lists and extracts it, and the content is byte-identical.
checks=$((checks + 1))
listing="$(tar tzf v5.tar.gz | tr '\n' ' ')"
[ "$listing" = "manifest.json signatures.json entities.json limits.json policies.cedar tests/one.txt " ] ||
  fail "tar tzf lists: $listing"
mkdir out && tar xzf v5.tar.gz -C out
for f in policies.cedar entities.json limits.json tests/one.txt; do
  cmp -s "src/$f" "out/$f" || fail "extracted $f differs"
done
grep -q '"version": 5' out/manifest.json || fail "manifest version"
grep -q "\"key_id\": \"$a_id\"" out/signatures.json || fail "signatures.json key id"
# Reproducible: the same input and creation time give the same bytes.
g policy sign --dir src --version 5 --org acme --key a.key --out v5again.tar.gz --created 1795833000 >/dev/null
cmp -s v5.tar.gz v5again.tar.gz || fail "signing is not reproducible"

# Re-signing into the content directory leaves the old archive out of the new bundle.
g policy sign --dir src --version 5 --org acme --key a.key --out src/inplace.tar.gz >/dev/null
g policy sign --dir src --version 6 --org acme --key a.key --out src/inplace.tar.gz >/dev/null
checks=$((checks + 1))
[ "$(tar tzf src/inplace.tar.gz | grep -c inplace)" = 0 ] || fail "the archive bundled itself"
rm src/inplace.tar.gz

# inspect needs no trust.
expect "inspect" 0 "version  5" g policy inspect v5.tar.gz
expect "inspect key id" 0 "key id $a_id" g policy inspect v5.tar.gz
expect "inspect files" 0 "policies.cedar" g policy inspect v5.tar.gz
expect "inspect created" 0 "2026-11-28T02:30:00Z" g policy inspect v5.tar.gz

# verify: ok, then every refusal with its reason and exit code 1.
expect "verify ok" 0 "ok: policy bundle acme/default version 5" g policy verify v5.tar.gz --trust a.pub
expect "verify min-version ok" 0 "ok:" g policy verify v6.tar.gz --trust a.pub --min-version 6
expect "verify older" 1 "version_too_old" g policy verify v5.tar.gz --trust a.pub --min-version 6
expect "verify untrusted" 1 "untrusted_key" g policy verify v5.tar.gz --trust b.pub
expect "verify wrong org" 1 "wrong_bundle" g policy verify v5.tar.gz --trust a.pub --org globex
expect "verify wrong name" 1 "wrong_bundle" g policy verify v5.tar.gz --trust a.pub --name team-b
expect "verify org and name" 0 "ok:" g policy verify v5.tar.gz --trust a.pub --org acme --name default
head -c 300 v5.tar.gz >cut.tar.gz
expect "verify truncated" 1 "malformed_archive" g policy verify cut.tar.gz --trust a.pub
expect "inspect truncated" 1 "malformed_archive" g policy inspect cut.tar.gz
# Tamper with one file after signing: repack with GNU tar in ustar form.
(cd out && sed -i 's/call_tool/call_t00l/' policies.cedar &&
  tar --format=ustar --owner=0 --group=0 -cf ../tampered.tar manifest.json signatures.json entities.json limits.json policies.cedar tests/one.txt)
expect "verify tampered file" 1 "file_hash_mismatch" g policy verify tampered.tar --trust a.pub
expect "inspect shows the change" 0 "CHANGED" g policy inspect tampered.tar
(cd out && printf 'permit(principal, action == Action::"call_tool", resource);\n' >policies.cedar &&
  sed -i 's/"version": 5/"version": 9/' manifest.json &&
  tar --format=ustar -cf ../manifest_changed.tar manifest.json signatures.json entities.json limits.json policies.cedar tests/one.txt)
expect "verify changed manifest" 1 "bad_signature" g policy verify manifest_changed.tar --trust a.pub
(cd out && sed -i 's/"version": 9/"version": 5/' manifest.json && printf 'x' >extra.cedar &&
  tar --format=ustar -cf ../extra.tar manifest.json signatures.json entities.json limits.json policies.cedar tests/one.txt extra.cedar)
expect "verify extra file" 1 "file_not_in_manifest" g policy verify extra.tar --trust a.pub
(cd out && tar --format=ustar -cf ../missing.tar manifest.json signatures.json entities.json policies.cedar tests/one.txt)
expect "verify missing file" 1 "file_missing" g policy verify missing.tar --trust a.pub
(cd out && tar --format=ustar -cf ../untouched.tar manifest.json signatures.json entities.json limits.json policies.cedar tests/one.txt)
expect "GNU tar ustar repack of the original verifies" 0 "ok:" g policy verify untouched.tar --trust a.pub
(cd out && tar --format=ustar -cf ../with_dir.tar manifest.json signatures.json entities.json limits.json policies.cedar tests)
expect "verify directory entry" 1 "malformed_archive" g policy verify with_dir.tar --trust a.pub
printf 'not a bundle' >junk.tar.gz
expect "verify junk" 1 "malformed_archive" g policy verify junk.tar.gz --trust a.pub
expect "verify bad trust file" 2 "public key" g policy verify v5.tar.gz --trust a.key

# Rotation: sign with both keys; agents trusting either accept; then B alone; then A is dropped.
expect "sign with two keys" 0 "$a_id, ops-2026" g policy sign --dir src --version 7 --org acme --key a.key --key b.key --out v7.tar.gz
expect "dual-signed, old agents" 0 "signed by $a_id" g policy verify v7.tar.gz --trust a.pub --min-version 6
expect "dual-signed, rotated agents" 0 "signed by $a_id, ops-2026" g policy verify v7.tar.gz --trust a.pub --trust b.pub
expect "inspect two signatures" 0 "key id ops-2026" g policy inspect v7.tar.gz
g policy sign --dir src --version 8 --org acme --key b.key --out v8.tar.gz >/dev/null
expect "new key only, rotated agents" 0 "signed by ops-2026" g policy verify v8.tar.gz --trust a.pub --trust b.pub
expect "new key only, un-rotated agents" 1 "untrusted_key" g policy verify v8.tar.gz --trust a.pub
g policy sign --dir src --version 9 --org acme --key a.key --out v9-old-key.tar.gz >/dev/null
expect "old key after it is dropped" 1 "untrusted_key" g policy verify v9-old-key.tar.gz --trust b.pub

echo "$((checks - failures)) of $checks checks passed"
[ "$failures" -eq 0 ]
