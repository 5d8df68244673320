# docs/configuration.md lists exactly the keys the binary declares (run scripts/gen-docs to update).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
doc="$here/../../../docs/configuration.md"
checks=$((checks + 1))
want="$("$GOVERN" config docs)"
got="$(awk '/<!-- keys:begin/{on=1; next} /<!-- keys:end/{on=0} on' "$doc")"
if [ "$want" != "$got" ]; then
  fail "docs/configuration.md is stale; run scripts/gen-docs"
  diff <(echo "$want") <(echo "$got") >&2 || true
fi
finish
