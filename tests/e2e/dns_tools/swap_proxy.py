"""A UDP proxy that lies: queries for FROM are sent upstream as TO (a name of the same length) and the
answers come back under FROM, so a client gets the (validly signed) denial of another name. A validator
must call such an answer bogus. Usage: swap_proxy.py UPSTREAM_PORT FROM TO [FROM TO]...; prints its port."""
import socket
import sys


def wire(name):
    return b"".join(bytes([len(l)]) + l.encode() for l in name.strip(".").split(".")) + b"\0"


upstream = ("127.0.0.1", int(sys.argv[1]))
pairs = [(wire(sys.argv[i]), wire(sys.argv[i + 1])) for i in range(2, len(sys.argv) - 1, 2)]
for a, b in pairs:
    assert len(a) == len(b), "names must have the same length"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
up.settimeout(2)


def swap(packet, src, dst):
    qname = packet[12:12 + len(src)]
    if qname.lower() == src:
        return packet[:12] + dst + packet[12 + len(src):]
    return packet


while True:
    data, client = s.recvfrom(65535)
    for a, b in pairs:
        data = swap(data, a, b)
    up.sendto(data, upstream)
    try:
        answer, _ = up.recvfrom(65535)
    except socket.timeout:
        continue
    for a, b in pairs:
        answer = swap(answer, b, a)
    s.sendto(answer, client)
