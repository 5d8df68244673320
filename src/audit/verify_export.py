#!/usr/bin/env python3
"""An independent verifier of a Govern audit export (docs/audit-format.md), written from the format
document alone: Python's standard library, and Ed25519 through the `cryptography` package or, without
it, the `openssl` command. It checks the hash chain, recomputes the Merkle root with a compact range,
and checks every checkpoint against the verifier keys given.

usage: verify_export.py EXPORT_FILE VERIFIER_KEY...
Prints "ok <entries> <checkpoints matched>" and exits 0, or prints the first problem and exits 1.
"""
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile


def sha256(b):
    return hashlib.sha256(b).digest()


def ed25519_verify(pub, sig, msg):
    if os.environ.get("VERIFY_EXPORT_USE_OPENSSL") == "1":
        return openssl_verify(pub, sig, msg)
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        from cryptography.exceptions import InvalidSignature
        try:
            Ed25519PublicKey.from_public_bytes(pub).verify(sig, msg)
            return True
        except InvalidSignature:
            return False
    except ImportError:
        return openssl_verify(pub, sig, msg)


def openssl_verify(pub, sig, msg):
    spki = bytes.fromhex("302a300506032b6570032100") + pub
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, data in (("pub.der", spki), ("sig", sig), ("msg", msg)):
            paths[name] = os.path.join(d, name)
            with open(paths[name], "wb") as f:
                f.write(data)
        r = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-keyform", "DER", "-inkey",
                            paths["pub.der"], "-rawin", "-in", paths["msg"], "-sigfile", paths["sig"]],
                           capture_output=True)
        return r.returncode == 0


def parse_vkey(vkey):
    name, key_id, b64 = vkey.split("+", 2)
    raw = base64.b64decode(b64, validate=True)
    if raw[0] != 1 or len(raw) != 33:
        raise ValueError("not an Ed25519 verifier key")
    if sha256(name.encode() + b"\n\x01" + raw[1:])[:4].hex() != key_id:
        raise ValueError("key id does not match")
    return (name, bytes.fromhex(key_id)), raw[1:]


def open_checkpoint(note, keys):
    text, sigs = note[: note.rindex("\n\n") + 1], note[note.rindex("\n\n") + 2:]
    verified = False
    for line in sigs.splitlines():
        if not line.startswith("\u2014 "):
            raise ValueError("bad signature line")
        name, b64 = line[2:].split(" ")
        blob = base64.b64decode(b64, validate=True)
        pub = keys.get((name, blob[:4]))
        if pub is None:
            continue
        if not ed25519_verify(pub, blob[4:], text.encode()):
            raise ValueError("checkpoint signature by %s does not verify" % name)
        verified = True
    if not verified:
        raise ValueError("checkpoint not signed by a known key")
    lines = text.split("\n")[:-1]
    if len(lines) != 5 or not lines[3].startswith("chain ") or not lines[4].startswith("time "):
        raise ValueError("not a Govern checkpoint")
    return lines[0], int(lines[1]), base64.b64decode(lines[2], validate=True), bytes.fromhex(lines[3][6:])


def node(l, r):
    return sha256(b"\x01" + l + r)


class CompactRange:
    def __init__(self, size, hashes):
        self.size, self.hashes = size, list(hashes)

    def append(self, leaf):
        self.hashes.append(leaf)
        self.size += 1
        s = self.size
        while s % 2 == 0:
            r = self.hashes.pop()
            self.hashes[-1] = node(self.hashes[-1], r)
            s //= 2

    def root(self):
        if not self.hashes:
            return sha256(b"")
        r = self.hashes[-1]
        for h in reversed(self.hashes[:-1]):
            r = node(h, r)
        return r


def raw_details(line, details):
    """The details text as it stands in the line (canonical in exports), or a re-serialization."""
    at = line.find('"details":')
    if at >= 0:
        obj, end = json.JSONDecoder().raw_decode(line, at + len('"details":'))
        if obj == details:
            return line[at + len('"details":'):end]
    return json.dumps(details, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(e, details_text):
    def s(v):
        return json.dumps(v, ensure_ascii=False)
    # Members in JCS order. json.dumps(ensure_ascii=False) escapes strings as JCS does: \" \\ \b \t
    # \n \f \r, other controls as \u00xx in lower case, everything else as itself.
    parts = ['"action":' + s(e["action"]), '"actor":' + s(e["actor"]), '"details":' + details_text,
             '"idempotency_key":' + s(e["idempotency_key"]), '"org":' + s(e["org"]),
             '"outcome":' + s(e["outcome"]), '"seq":' + str(e["seq"]), '"target":' + s(e["target"]),
             '"time":' + s(e["time"])]
    return ("{" + ",".join(parts) + "}").encode()


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    keys = dict(parse_vkey(v) for v in argv[2:])
    with open(argv[1], encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = json.loads(lines[0])
    if header.get("format") != "govern-audit-export" or header.get("version") != 1:
        print("not an export")
        return 1
    org, seq = header["org"], header["first_seq"]
    head = bytes.fromhex(header["prev_hash"])
    tree = CompactRange(seq - 1, [bytes.fromhex(h) for h in header["frontier"]])
    checkpoints = {}
    for line in lines[1:]:
        obj = json.loads(line)
        if "checkpoint" in obj:
            origin, size, root, chain = open_checkpoint(obj["checkpoint"], keys)
            if origin != "govern.audit/" + org:
                print("checkpoint for another origin: " + origin)
                return 1
            checkpoints[size] = (root, chain)
    matched = 0
    if seq - 1 in checkpoints:
        if checkpoints[seq - 1] != (tree.root(), head):
            print("checkpoint_mismatch at %d" % (seq - 1))
            return 1
        matched += 1
    for line in lines[1:]:
        e = json.loads(line)
        if "checkpoint" in e:
            continue
        if e["seq"] != seq:
            print("seq_gap at %d" % seq)
            return 1
        if bytes.fromhex(e["prev_hash"]) != head:
            print("prev_hash_mismatch at %d" % seq)
            return 1
        leaf = sha256(b"\x00" + canonical(e, raw_details(line, e["details"])))
        head = sha256(head + leaf)
        if head.hex() != e["entry_hash"]:
            print("entry_hash_mismatch at %d" % seq)
            return 1
        tree.append(leaf)
        if seq in checkpoints:
            if checkpoints[seq] != (tree.root(), head):
                print("checkpoint_mismatch at %d" % seq)
                return 1
            matched += 1
        seq += 1
    beyond = [s for s in checkpoints if s >= seq]
    if beyond:
        print("checkpoint_beyond_end at %d" % seq)
        return 1
    print("ok %d %d" % (seq - header["first_seq"], matched))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
