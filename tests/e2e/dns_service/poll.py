#!/usr/bin/env python3
"""poll.py URL TOKEN NAME IP PORT...: PUTs {"ttl":60,"rdata":[IP]} to URL (the A RRset of NAME) with the
bearer TOKEN, then polls every replica at once over UDP until each answers NAME A with IP; prints, per
replica, the microseconds from the API's 204 to its first answer holding the new address. Exit 1 when
the API refuses or a replica has not answered within 10 s. Timing only: kdig checks the answers."""
import json, random, select, socket, struct, sys, time, urllib.request


def query(name, qid):
    q = struct.pack(">HHHHHH", qid, 0, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\x00" + struct.pack(">HH", 1, 1)


def main():
    url, token, name, ip_text = sys.argv[1:5]
    ip = socket.inet_aton(ip_text)
    ports = [int(p) for p in sys.argv[5:]]
    socks = {}
    for p in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect(("127.0.0.1", p))
        socks[s] = p
    body = json.dumps({"ttl": 60, "rdata": [ip_text]}).encode()
    req = urllib.request.Request(url, data=body, method="PUT", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=10) as resp:
        if resp.status != 204:
            print("API answered %d" % resp.status, file=sys.stderr)
            return 1
    t0 = time.time()
    done = {}
    deadline = time.time() + 10
    while len(done) < len(ports) and time.time() < deadline:
        pending = [s for s, p in socks.items() if p not in done]
        qid = random.randrange(65536)
        for s in pending:
            s.send(query(name, qid))
        end = time.time() + 0.05
        waiting = set(pending)
        while waiting and time.time() < end:
            r, _, _ = select.select(list(waiting), [], [], max(0, end - time.time()))
            for s in r:
                data = s.recv(4096)
                if len(data) < 12 or struct.unpack(">H", data[:2])[0] != qid:
                    continue
                waiting.discard(s)
                ancount = struct.unpack(">H", data[6:8])[0]
                if ancount > 0 and (b"\x00\x01\x00\x01" in data[12:]) and ip in data[12:]:
                    done[socks[s]] = int((time.time() - t0) * 1e6)
        if len(done) < len(ports):
            time.sleep(0.001)
    for p in ports:
        print(done.get(p, -1))
    return 0 if len(done) == len(ports) else 1


if __name__ == "__main__":
    sys.exit(main())
