#!/usr/bin/python3
"""Dataset uploads into `trainingd serve` on loopback: throughput and the daemon's peak memory.

    /usr/bin/python3 bench/upload_bench.py build/daemon/trainingd [--sizes 50,200] [--rounds 3]
        [--format npz|csv]

For each size (MB), writes an uncompressed .npz of uint8 images with real NumPy (Debian's
python3-numpy), or with --format csv a table as people export them (20 number and 10
categorical columns of 3 to 5,000 levels, 5% of the cells blank or "NA", a string label),
starts a fresh daemon (data in a temporary directory), reads its resident memory
when idle, then uploads the file --rounds times under new names and deletes each again. Each
upload is timed from the first byte sent to the 201 (streaming, hashing, the full check of every
value, the rename), the body sent from the file in 1 MiB pieces, never held whole by the client.
The daemon's peak RSS (VmHWM) is read after the uploads: its rise over idle must not grow with
the file's size (docs/data.md). Prints each upload, then per size the median [min-max] MB/s,
the MB per CPU-second of the daemon (which the machine's other load does not change) and the
peak over idle.
"""
import argparse
import http.client
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def write_npz(path, megabytes):
    n = megabytes * 1_000_000 // 784
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    y = rng.integers(0, 10, n, dtype=np.uint8)
    test = max(1, n // 10)
    np.savez(path, x_train=x[test:], y_train=y[test:], x_test=x[:test], y_test=y[:test])


def write_csv(path, megabytes, rows=None):
    """20 number columns, 10 categorical ones (3, 10, 50, ... 5,000 levels), blanks and "NA"s in
    5% of the cells, a label of three names: about 170 bytes a row. `megabytes` of them, or
    `rows` rows (a multiple of 20,000) when given."""
    rng = np.random.default_rng(1)
    levels = [3, 10, 50, 200, 1000, 5000, 7, 30, 300, 2000]
    header = ["x%d" % i for i in range(20)] + ["c%d" % i for i in range(10)] + ["label"]
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        written = 0
        done = 0
        while (done < rows) if rows else (written < megabytes * 1_000_000):
            n = 20_000
            done += n
            cols = [np.char.mod("%.4g", rng.normal(50, 20, n)) for _ in range(20)]
            cols += [np.char.add("v", rng.integers(0, k, n).astype(str)) for k in levels]
            for c in cols:
                gone = rng.random(n) < 0.05
                c[gone & (rng.random(n) < 0.5)] = ""
                c[gone & (c != "")] = "NA"
            cols.append(np.array(["yes", "no", "maybe"])[rng.integers(0, 3, n)])
            block = "\n".join(",".join(row) for row in zip(*cols)) + "\n"
            f.write(block)
            written += len(block)


def status_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        m = re.search(r"^%s:\s+(\d+) kB" % field, f.read(), re.M)
    return int(m.group(1))


def upload(port, name, path, fmt):
    size = os.path.getsize(path)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    start = time.perf_counter()
    conn.putrequest("POST", "/api/v1/datasets?name=%s&format=%s" % (name, fmt))
    conn.putheader("Content-Type", "application/octet-stream")
    conn.putheader("Content-Length", str(size))
    conn.endheaders()
    with open(path, "rb") as f:
        while True:
            piece = f.read(1 << 20)
            if not piece:
                break
            conn.send(piece)
    r = conn.getresponse()
    body = r.read()
    took = time.perf_counter() - start
    conn.close()
    if r.status != 201:
        raise SystemExit("upload %s: %d %s" % (name, r.status, body[:300]))
    return size / took / 1e6


def cpu_seconds(pid):
    """The process's user + system CPU time: what an upload costs the daemon, whatever else
    the machine runs (wall-clock MB/s drops on a loaded machine; this does not)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def delete(port, name):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("DELETE", "/api/v1/datasets/" + name)
    r = conn.getresponse()
    r.read()
    conn.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trainingd")
    p.add_argument("--sizes", default="50,200")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--format", choices=["npz", "csv"], default="npz")
    a = p.parse_args()
    with open("/proc/cpuinfo") as f:
        cpu = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M).group(1)
    print("CPU: %s, %d cores" % (cpu, os.cpu_count()))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb in [int(s) for s in a.sizes.split(",")]:
            path = os.path.join(tmp, "x%d.%s" % (mb, a.format))
            (write_csv if a.format == "csv" else write_npz)(path, mb)
            data_dir = os.path.join(tmp, "var%d" % mb)
            proc = subprocess.Popen(
                [a.trainingd, "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            port = int(re.search(r":(\d+)/", proc.stdout.readline()).group(1))
            time.sleep(0.5)
            idle = status_kb(proc.pid, "VmRSS")
            speeds, cpu_speeds = [], []
            for r in range(a.rounds):
                cpu0 = cpu_seconds(proc.pid)
                speed = upload(port, "u%d" % r, path, a.format)
                cpu = cpu_seconds(proc.pid) - cpu0
                speeds.append(speed)
                cpu_speeds.append(os.path.getsize(path) / 1e6 / max(cpu, 1e-9))
                print("%d MB file (%d bytes), upload %d: %.0f MB/s, %.0f MB per CPU-second" %
                      (mb, os.path.getsize(path), r + 1, speed, cpu_speeds[-1]))
                delete(port, "u%d" % r)
            peak = status_kb(proc.pid, "VmHWM")
            proc.terminate()
            proc.wait()
            results.append((mb, speeds, cpu_speeds, idle, peak))
    print()
    print("| file | MB/s, median [min-max] | MB per daemon CPU-second | idle RSS | peak RSS | "
          "peak over idle |")
    print("|---:|---:|---:|---:|---:|---:|")
    for mb, speeds, cpu_speeds, idle, peak in results:
        print("| %d MB | %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] | %.1f MB | %.1f MB | %.1f MB |" %
              (mb, statistics.median(speeds), min(speeds), max(speeds),
               statistics.median(cpu_speeds), min(cpu_speeds), max(cpu_speeds), idle / 1024,
               peak / 1024, (peak - idle) / 1024))


if __name__ == "__main__":
    sys.exit(main())
