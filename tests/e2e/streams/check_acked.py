#!/usr/bin/env python3
"""Checks a producer's acknowledgements against what a consumer read back.

Usage: check_acked.py ACKED CONSUMED PREFIX
ACKED holds "acked PARTITION OFFSET VALUE" lines (idempotent_producer output); CONSUMED holds
"PARTITION OFFSET VALUE" lines (kcat -f '%p %o %s\\n'). Every acknowledged value must be stored at its
acknowledged offset; no value with PREFIX may be stored twice; offsets within a partition are unique.
Exits 1 with a message on the first kind of violation found."""
import sys

acked_path, consumed_path, prefix = sys.argv[1:4]
stored = {}
seen_values = {}
problems = []
for line in open(consumed_path):
    parts = line.rstrip("\n").split(" ", 2)
    if len(parts) != 3:
        continue
    p, o, v = int(parts[0]), int(parts[1]), parts[2]
    if (p, o) in stored:
        problems.append(f"offset {p}/{o} read twice")
    stored[(p, o)] = v
    if v.startswith(prefix):
        seen_values[v] = seen_values.get(v, 0) + 1
acked = 0
for line in open(acked_path):
    parts = line.split()
    if len(parts) != 4 or parts[0] != "acked":
        continue
    acked += 1
    p, o, v = int(parts[1]), int(parts[2]), parts[3]
    if stored.get((p, o)) != v:
        problems.append(f"acknowledged {v} at {p}/{o} but found {stored.get((p, o))!r}")
dups = [v for v, n in seen_values.items() if n > 1]
if dups:
    problems.append(f"{len(dups)} values stored more than once, e.g. {dups[:3]}")
if acked == 0:
    problems.append("nothing was acknowledged")
for p in problems[:10]:
    print("FAIL:", p, file=sys.stderr)
print(f"acked {acked}, stored {len(stored)}, problems {len(problems)}")
sys.exit(1 if problems else 0)
