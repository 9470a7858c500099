#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# The two tiers of the test cluster, measured without MPI (scripts/start-cluster.sh and
# the `cluster` tests run it inside a test host):
#   cluster_rates.py serve PORT          receive one TCP stream; print its rate in bytes/s
#   cluster_rates.py send ADDR PORT S    send to ADDR:PORT for S seconds
#   cluster_rates.py shm                 print the copy rate through /dev/shm in bytes/s
# The receiver times from the first byte to the last, so connection set-up is not
# counted. Bad arguments: one line, exit 2.
import mmap
import os
import socket
import sys
import time

CHUNK = 1 << 16


def serve(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        s.listen(1)
        s.settimeout(30)  # never wait forever for a sender that did not start
        conn, _ = s.accept()
        with conn:
            conn.settimeout(30)
            first = conn.recv(CHUNK)
            t0, total = time.perf_counter(), 0
            while first:
                b = conn.recv(CHUNK)
                if not b:
                    break
                total += len(b)
            t = time.perf_counter() - t0
    print(int(total / t) if t > 0 else 0)


def send(addr, port, seconds):
    buf = b"\0" * CHUNK
    for _ in range(50):  # the receiver may still be starting
        try:
            s = socket.create_connection((addr, port), timeout=30)
            break
        except OSError:
            time.sleep(0.1)
    else:
        sys.exit(f"cluster_rates: cannot connect to {addr}:{port}")
    with s:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            s.sendall(buf)


def shm():
    size = 64 << 20
    path = f"/dev/shm/mini5d-rate-{os.getpid()}"
    src = os.urandom(size)
    with open(path, "w+b") as f:
        f.truncate(size)
        m = mmap.mmap(f.fileno(), size)
        os.unlink(path)
        m[:] = src  # touch the pages first
        best = 0.0
        for _ in range(5):
            t0 = time.perf_counter()
            m[:] = src
            best = max(best, size / (time.perf_counter() - t0))
        m.close()
    print(int(best))


def main(argv):
    try:
        if argv[:1] == ["serve"] and len(argv) == 2:
            return serve(int(argv[1]))
        if argv[:1] == ["send"] and len(argv) == 4:
            return send(argv[1], int(argv[2]), float(argv[3]))
        if argv == ["shm"]:
            return shm()
    except ValueError as e:
        sys.exit(f"cluster_rates: {e}")
    print("usage: cluster_rates.py serve PORT | send ADDR PORT SECONDS | shm", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
