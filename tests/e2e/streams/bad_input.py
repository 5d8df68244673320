#!/usr/bin/env python3
"""Sends malformed Kafka frames to a broker; each must get a protocol error or a closed connection.

Usage: bad_input.py PORT. Exits 1 if the broker answered a malformed frame with something other than
an error or a close, or if a well-formed ApiVersions request on a separate connection, held open
throughout, stops being answered."""
import socket, struct, sys, zlib

port = int(sys.argv[1])
failures = 0


def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def recv_frame(s):
    try:
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                return None
            head += chunk
        n = struct.unpack(">i", head)[0]
        body = b""
        while len(body) < n:
            chunk = s.recv(n - len(body))
            if not chunk:
                return None
            body += chunk
        return body
    except (ConnectionResetError, socket.timeout):
        return None


def frame(key, ver, corr, body):
    b = struct.pack(">hhi", key, ver, corr) + struct.pack(">h", 4) + b"test" + body
    return struct.pack(">i", len(b)) + b


def expect_closed(name, payload):
    global failures
    s = conn()
    s.sendall(payload)
    if recv_frame(s) is not None:
        print(f"FAIL: {name}: answered instead of closing", file=sys.stderr)
        failures += 1
    s.close()


def api_versions_ok(s, corr):
    s.sendall(frame(18, 0, corr, b""))
    r = recv_frame(s)
    return r is not None and struct.unpack(">ih", r[:6]) == (corr, 0)


bystander = conn()
if not api_versions_ok(bystander, 1):
    print("FAIL: ApiVersions v0 not answered", file=sys.stderr)
    failures += 1

expect_closed("oversized frame", struct.pack(">i", 0x7FFFFFF0) + b"x" * 100)
expect_closed("negative size", struct.pack(">i", -5))
expect_closed("frame shorter than a header", struct.pack(">i", 3) + b"abc")
expect_closed("unknown api key", frame(1234, 0, 5, b""))
expect_closed("version above the advertised range", frame(0, 99, 5, b""))
expect_closed("truncated produce body", frame(0, 7, 5, b"\xff\xff\x00"))
expect_closed("metadata with a hostile array count", frame(3, 4, 5, struct.pack(">i", 0x7FFFFFFF)))
expect_closed("random bytes", struct.pack(">i", 64) + bytes(range(64)))

# A produce whose batch has a bad CRC: CORRUPT_MESSAGE (2) for the partition, connection kept.
def batch(value):
    rec = b"\x00\x00\x00\x01" + bytes([len(value) * 2]) + value + b"\x00"
    recs = bytes([len(rec) * 2]) + rec
    body = struct.pack(">hiqqqhii", 0, 0, 1, 1, -1, -1, -1, 1) + recs
    return body


def crc32c(data):
    c = 0xFFFFFFFF
    for x in data:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF


body = batch(b"payload")
crc = crc32c(body) ^ 0x1  # wrong on purpose
after = struct.pack(">ibI", -1, 2, crc) + body
records = struct.pack(">qi", 0, len(after)) + after
produce = (struct.pack(">h", -1) + struct.pack(">hi", -1, 5000) + struct.pack(">i", 1) + struct.pack(">h", 3) + b"bad"
           + struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", len(records)) + records)
s = conn()
s.sendall(frame(3, 4, 7, struct.pack(">i", 1) + struct.pack(">h", 3) + b"bad" + b"\x01"))  # create "bad"
recv_frame(s)
s.sendall(frame(0, 7, 8, produce))
r = recv_frame(s)
if r is None:
    print("FAIL: bad CRC: connection closed, want CORRUPT_MESSAGE", file=sys.stderr)
    failures += 1
else:
    # corr, topics[1], name, partitions[1], index, error
    off = 4 + 4 + 2 + 3 + 4 + 4
    err = struct.unpack(">h", r[off:off + 2])[0]
    if err != 2:
        print(f"FAIL: bad CRC: error {err}, want 2", file=sys.stderr)
        failures += 1
s.close()

# A client that vanishes mid-frame.
s = conn()
s.sendall(struct.pack(">i", 1000) + b"\x00\x00")
s.close()

if not api_versions_ok(bystander, 2):
    print("FAIL: the bystander connection stopped being answered", file=sys.stderr)
    failures += 1
print(f"bad input checks done, failures {failures}")
sys.exit(1 if failures else 0)
