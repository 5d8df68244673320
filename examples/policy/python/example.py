#!/usr/bin/env python3
"""Embedding Govern's policy engine from Python with ctypes (no packages needed).

Loads a signed policy bundle, records every decision to a local decision log, decides, swaps in a newer
bundle while deciding, and shows that refused bundles (untrusted key, broken policy, tampered file, older
version) leave the loaded one serving.

    python3 example.py LIBGOVERN_POLICY_SO BUNDLE_DIR LOG_DIR

BUNDLE_DIR holds trusted.pub, v1.tar.gz, v2.tar.gz and the refused bundles (policy_capi_bundles makes them;
in real use `govern policy keygen` and `govern policy sign --dir` do).
"""
import ctypes
import os
import sys
import threading

OK, ERR_REQUEST, ERR_BUNDLE_REFUSED = 0, 4, 5
DENY, ALLOW = 0, 1
LOG_BUFFERED, CONTEXT_HASH = 0, 0
STAT_DECISIONS, STAT_BUNDLE_VERSION, STAT_BUNDLES_REFUSED, STAT_LOG_RECORDED = 0, 3, 5, 7


class PolicyError(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def load(path):
    """Declares every function used, so ctypes converts arguments and results correctly."""
    lib = ctypes.CDLL(path)
    c_char_pp = ctypes.POINTER(ctypes.c_char_p)
    engine_p, result_p = ctypes.c_void_p, ctypes.c_void_p
    sig = {
        "govern_policy_abi_version": (ctypes.c_uint32, []),
        "govern_policy_error_name": (ctypes.c_char_p, [ctypes.c_int]),
        "govern_policy_decision_name": (ctypes.c_char_p, [ctypes.c_int]),
        # Returned strings that the caller frees come back as c_void_p (a c_char_p result would be
        # copied and the pointer lost).
        "govern_policy_string_free": (None, [ctypes.c_void_p]),
        "govern_policy_engine_from_bundle_file": (
            ctypes.c_int, [c_char_pp, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p,
                           ctypes.POINTER(engine_p), ctypes.POINTER(ctypes.c_void_p)]),
        "govern_policy_engine_swap_bundle_file": (
            ctypes.c_int, [engine_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]),
        "govern_policy_engine_open_log": (
            ctypes.c_int, [engine_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                           ctypes.POINTER(ctypes.c_void_p)]),
        "govern_policy_engine_flush_log": (ctypes.c_int, [engine_p, ctypes.POINTER(ctypes.c_void_p)]),
        "govern_policy_engine_free": (None, [engine_p]),
        "govern_policy_engine_stat": (ctypes.c_uint64, [engine_p, ctypes.c_int]),
        "govern_policy_result_new": (result_p, []),
        "govern_policy_result_free": (None, [result_p]),
        "govern_policy_decide": (ctypes.c_int, [engine_p, result_p] + [ctypes.c_char_p] * 7),
        "govern_policy_result_decision": (ctypes.c_int, [result_p]),
        "govern_policy_result_reason_count": (ctypes.c_size_t, [result_p]),
        "govern_policy_result_reason": (ctypes.c_char_p, [result_p, ctypes.c_size_t]),
        "govern_policy_result_reason_annotation": (ctypes.c_char_p, [result_p, ctypes.c_size_t, ctypes.c_char_p]),
        "govern_policy_result_message": (ctypes.c_char_p, [result_p]),
        "govern_policy_result_bundle_version": (ctypes.c_uint64, [result_p]),
        "govern_policy_result_decision_id": (ctypes.c_char_p, [result_p]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


class Engine:
    """One engine shared by every thread; each thread decides into its own result (thread-local)."""

    def __init__(self, lib, key_files, bundle_path, org=None):
        self.lib = lib
        self.local = threading.local()
        keys = (ctypes.c_char_p * len(key_files))(*[k.encode() for k in key_files])
        self.handle = ctypes.c_void_p()
        err = ctypes.c_void_p()
        rc = lib.govern_policy_engine_from_bundle_file(keys, len(key_files), org.encode() if org else None,
                                                       bundle_path.encode(), ctypes.byref(self.handle),
                                                       ctypes.byref(err))
        self._check(rc, err)

    def _check(self, rc, err):
        if rc != OK:
            message = ctypes.string_at(err.value).decode() if err.value else ""
            self.lib.govern_policy_string_free(err)
            raise PolicyError(self.lib.govern_policy_error_name(rc).decode(), message)

    def swap(self, bundle_path):
        err = ctypes.c_void_p()
        self._check(self.lib.govern_policy_engine_swap_bundle_file(self.handle, bundle_path.encode(),
                                                                   ctypes.byref(err)), err)

    def open_log(self, directory):
        err = ctypes.c_void_p()
        self._check(self.lib.govern_policy_engine_open_log(self.handle, directory.encode(), LOG_BUFFERED,
                                                           CONTEXT_HASH, None, ctypes.byref(err)), err)

    def flush_log(self):
        err = ctypes.c_void_p()
        self._check(self.lib.govern_policy_engine_flush_log(self.handle, ctypes.byref(err)), err)

    def stat(self, key):
        return self.lib.govern_policy_engine_stat(self.handle, key)

    def _result(self):
        r = getattr(self.local, "result", None)
        if r is None:
            r = self.local.result = self.lib.govern_policy_result_new()
        return r

    def decide(self, principal, action, resource, context="{}"):
        """principal/action/resource are (type, id); returns (decision, [(policy id, @id)], version, decision id)."""
        lib, r = self.lib, self._result()
        rc = lib.govern_policy_decide(self.handle, r, principal[0].encode(), principal[1].encode(),
                                      action[0].encode(), action[1].encode(), resource[0].encode(),
                                      resource[1].encode(), context.encode())
        if rc != OK:
            raise PolicyError(lib.govern_policy_error_name(rc).decode(),
                              lib.govern_policy_result_message(r).decode())
        reasons = []
        for i in range(lib.govern_policy_result_reason_count(r)):
            label = lib.govern_policy_result_reason_annotation(r, i, b"id")
            reasons.append((lib.govern_policy_result_reason(r, i).decode(), label.decode() if label else None))
        decision = lib.govern_policy_decision_name(lib.govern_policy_result_decision(r)).decode()
        return (decision, reasons, lib.govern_policy_result_bundle_version(r),
                lib.govern_policy_result_decision_id(r).decode())

    def close(self):
        # Results made by other threads are freed by those threads in real code; here only this one's.
        r = getattr(self.local, "result", None)
        if r is not None:
            self.lib.govern_policy_result_free(r)
        self.lib.govern_policy_engine_free(self.handle)


def main():
    lib_path, bundles, log_dir = sys.argv[1:4]
    lib = load(lib_path)
    assert lib.govern_policy_abi_version() == 1, "unexpected ABI version"
    b = lambda name: os.path.join(bundles, name)

    engine = Engine(lib, [b("trusted.pub")], b("v1.tar.gz"), org="acme")
    engine.open_log(log_dir)
    ada = (("Agent", "ada"), ("Action", "call_tool"), ("Tool", "web_search"))
    sam = (("Agent", "sam"), ("Action", "send_message"), ("Tool", "email"))

    d = engine.decide(*ada, context='{"url": "https://example.com"}')
    print(f"v{d[2]} ada web_search: {d[0]} by {d[1]}")
    assert d[0] == "allow" and d[1] == [("policy1", "research-web")] and d[2] == 1 and len(d[3]) == 36
    d = engine.decide(*ada, context='{"url": "https://wiki.internal.example"}')
    print(f"v{d[2]} ada internal url: {d[0]} by {d[1]}")
    assert d[0] == "deny" and d[1] == [("policy0", "no-internal-urls")]
    d = engine.decide(*sam)
    print(f"v{d[2]} sam email: {d[0]}")
    assert d[0] == "deny" and d[1] == []
    try:
        engine.decide(*ada, context="not json")
        raise AssertionError("a bad context was accepted")
    except PolicyError as e:
        print(f"bad context: {e.code}")
        assert e.code == "request"

    # Swap in v2 while four threads decide: each decision is wholly v1's or v2's.
    stop = threading.Event()
    mixed = []

    def decide_loop():
        while not stop.is_set():
            decision, _, version, _ = engine.decide(*sam)
            if (version, decision) not in ((1, "deny"), (2, "allow")):
                mixed.append((version, decision))

    threads = [threading.Thread(target=decide_loop) for _ in range(4)]
    for t in threads:
        t.start()
    engine.swap(b("v2.tar.gz"))
    stop.set()
    for t in threads:
        t.join()
    assert not mixed, mixed
    d = engine.decide(*sam)
    print(f"v{d[2]} sam email: {d[0]} by {d[1]}")
    assert d[0] == "allow" and d[1] == [("policy2", "support-email")] and d[2] == 2

    # Refused bundles: the reason comes back, and v2 keeps serving.
    for name, reason in [("untrusted.tar.gz", "untrusted_key"), ("broken.tar.gz", "rejected"),
                         ("tampered.tar", "file_hash_mismatch"), ("v1.tar.gz", "version_too_old")]:
        try:
            engine.swap(b(name))
            raise AssertionError(f"{name} was accepted")
        except PolicyError as e:
            assert e.code == "bundle_refused" and e.message.startswith(reason + ":"), e
            print(f"{name} refused: {e.message.split(':')[0]}")
        d = engine.decide(*sam)
        assert d[0] == "allow" and d[2] == 2, d
    engine.flush_log()
    decisions, recorded = engine.stat(STAT_DECISIONS), engine.stat(STAT_LOG_RECORDED)
    print(f"still serving v{engine.stat(STAT_BUNDLE_VERSION)}; refused {engine.stat(STAT_BUNDLES_REFUSED)}; "
          f"every decision recorded: {decisions == recorded}")
    assert decisions == recorded and engine.stat(STAT_BUNDLES_REFUSED) == 4
    engine.close()
    print("python example: ok")


if __name__ == "__main__":
    main()
