#!/usr/bin/python3
"""daemon_bench.py: the daemon's HTTP speed, live-event fan-out and training overhead.

  /usr/bin/python3 bench/daemon_bench.py --build build [--only http,sse,overhead]

http      wrk (Debian's package) against GET /healthz and GET /api/v1/jobs (50 jobs listed),
          64 connections, 2 threads, 10 s each: requests/s and p99 latency
sse       500 concurrent event-stream clients on one CNN job (summaries every 10 steps): the
          delay from each scalar's wall_time (stamped when the hook wrote it) to its arrival at
          every client, p50/p99/max, against one client alone on the same job (1, 500, 500, 1
          clients in turn); "added" = the difference. The clients are bench/sse_clients (C++,
          one thread polling every socket); --sse-client python runs them in asyncio here instead,
          which on 2 cores mostly measures the Python client
overhead  the CNN at batch 50 trained by the daemon with 4 event-stream clients attached, against
          `trainingd run` of the same job, alternating A B B A (--overhead-rounds): examples/s from the jobs' own
          global_step/sec summaries, and the ratio; also the CPU the daemon's other threads used
profile   (not in the default set; needs perf, as root) perf samples the daemon for
          --profile-seconds while a CNN job runs with 4 event-stream clients: samples per thread,
          and how many fall in daemon/API/JSON/Asio/SQLite code
Prints one JSON object per measurement.
"""
import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def start_daemon(trainingd, data_dir, *extra):
    p = subprocess.Popen([trainingd, "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir]
                         + list(extra), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    m = re.search(r":(\d+)/", p.stdout.readline())
    return p, int(m.group(1))


def call(port, method, path, body=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        raw = r.read()
        return json.loads(raw) if raw else None


def wait_state(port, jid, states, timeout=600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = call(port, "GET", "/api/v1/jobs/" + jid)
        if job["state"] in states:
            return job
        time.sleep(0.2)
    raise RuntimeError("job %s stuck" % jid)


def small_job(name, steps, summary_every=100):
    return {"name": name, "model": "softmax", "max_steps": steps, "batch_size": 100,
            "dataset": {"name": "fashion-mnist", "max_train_examples": 10000,
                        "validation_size": 1000, "max_test_examples": 1000},
            "hooks": {"summary": {"every_steps": summary_every}, "logging": False,
                      "checkpoint": {"every_steps": 1000000}}}


def bench_http(trainingd, tmp):
    if not shutil.which("wrk"):
        print(json.dumps({"bench": "http", "error": "wrk not installed (apt-get install wrk)"}))
        return
    p, port = start_daemon(trainingd, os.path.join(tmp, "http"))
    try:
        ids = [call(port, "POST", "/api/v1/jobs", small_job("list-%d" % i, 10))["id"]
               for i in range(50)]
        for jid in ids:
            wait_state(port, jid, {"completed", "failed"})
        for path in ("/healthz", "/api/v1/jobs"):
            out = subprocess.run(["wrk", "-t2", "-c64", "-d10s", "--latency",
                                  "http://127.0.0.1:%d%s" % (port, path)],
                                 capture_output=True, text=True).stdout
            rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
            p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
            scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
            errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
            print(json.dumps({"bench": "http", "path": path, "connections": 64,
                              "requests_per_sec": rps, "p99_ms": float(p99.group(1)) * scale,
                              "non_2xx": int(errors.group(1)) if errors else 0}))
    finally:
        p.terminate()
        p.wait()


WALL_TIME = re.compile(rb'"wall_time":([0-9.eE+-]+)')


async def sse_client(port, path, delays, ready, stop_at):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n"
                  % (path, port)).encode())
    await writer.drain()
    ready.append(1)
    scalar = False
    try:
        while time.time() < stop_at:
            line = await asyncio.wait_for(reader.readline(), timeout=max(0.1, stop_at - time.time()))
            if not line:
                break
            # Cheap parsing (no JSON decoder): with 500 clients in one process, the client's own
            # CPU time would otherwise be most of what is measured.
            if line.startswith(b"event: "):
                scalar = line.startswith(b"event: scalar")
            elif scalar and line.startswith(b"data: "):
                m = WALL_TIME.search(line)
                if m:
                    delays.append(time.time() - float(m.group(1)))
    except asyncio.TimeoutError:
        pass
    writer.close()


def sse_delays(port, jid, clients, seconds, native=None):
    path = "/api/v1/jobs/%s/events?last_event_id=%d" % (jid, 2 ** 62)
    if native:  # bench/sse_clients.cpp: poll() over the sockets, a few microseconds per event
        out = subprocess.run([native, str(port), path, str(clients), str(seconds)],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)

    async def run():
        delays, ready = [], []
        stop_at = time.time() + seconds
        tasks = [asyncio.create_task(sse_client(port, "/api/v1/jobs/%s/events?last_event_id=%d"
                                                % (jid, 2 ** 62), delays, ready, stop_at))
                 for _ in range(clients)]
        await asyncio.gather(*tasks)
        return delays, len(ready)
    delays, connected = asyncio.run(run())
    delays.sort()
    q = lambda f: delays[min(len(delays) - 1, int(f * len(delays)))] * 1e3 if delays else None
    return {"clients": clients, "connected": connected, "events_received": len(delays),
            "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": delays[-1] * 1e3 if delays else None}


def bench_sse(trainingd, tmp, clients=500, seconds=20, native=None):
    """The delay with `clients` clients, against the same client alone on the same running job:
    the difference is what the fan-out adds (the rest is this machine's scheduling of a client
    beside a job that keeps both cores busy, and the client itself)."""
    p, port = start_daemon(trainingd, os.path.join(tmp, "sse"))
    try:
        # A CNN job with summaries every 10 steps: a few events per second, as a real job sends
        # (a faster stream would measure this Python client, not the daemon).
        spec = cnn_job(10 ** 6)
        spec["hooks"]["summary"] = {"every_steps": 10}
        jid = call(port, "POST", "/api/v1/jobs", spec)["id"]
        wait_state(port, jid, {"running"})
        time.sleep(3)  # past data loading
        rounds = []
        # A B B A: drift in the machine's speed cancels out of the comparison.
        for n in (1, clients, clients, 1):
            r = sse_delays(port, jid, n, seconds, native)
            rounds.append(r)
            print(json.dumps(dict(bench="sse_round", **r)))
        call(port, "POST", "/api/v1/jobs/%s/stop" % jid, {})
        one = [r for r in rounds if r["clients"] == 1]
        many = [r for r in rounds if r["clients"] == clients]
        mean = lambda rs, k: statistics.mean(r[k] for r in rs)
        print(json.dumps({"bench": "sse", "client": "cpp" if native else "python",
                          "clients": clients,
                          "baseline_p50_ms": mean(one, "p50_ms"),
                          "baseline_p99_ms": mean(one, "p99_ms"),
                          "p50_ms": mean(many, "p50_ms"), "p99_ms": mean(many, "p99_ms"),
                          "added_p50_ms": mean(many, "p50_ms") - mean(one, "p50_ms"),
                          "added_p99_ms": mean(many, "p99_ms") - mean(one, "p99_ms")}))
    finally:
        p.terminate()
        p.wait()


def cnn_job(steps):
    with open(os.path.join(os.path.dirname(__file__), "..", "examples", "cnn.json")) as f:
        spec = json.load(f)
    spec["max_steps"] = steps
    spec["hooks"]["step_counter"] = {"every_steps": 50}
    spec["hooks"]["evaluation"] = False
    spec["hooks"]["final_eval"] = False
    return spec


def rates_from_events(path):
    """global_step/sec values from an event file, via the independent reader."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "tools"))
    import read_tfevents
    out = []
    for e in read_tfevents.read_events(path):
        v = read_tfevents.to_dict(e).get("scalars", {}).get("global_step/sec")
        if v is not None:
            out.append(v)
    return out


def run_examples_per_sec(trainingd, spec, spec_path, d):
    subprocess.run([trainingd, "run", spec_path, "--checkpoint-dir", d, "--threads", "2"],
                   check=True, capture_output=True)
    ev = [f for f in os.listdir(d) if "tfevents" in f][0]
    rates = rates_from_events(os.path.join(d, ev))[2:]  # skip the warm-up triggers
    return statistics.median(rates) * spec["batch_size"]


def thread_cpu_seconds(pid):
    """CPU seconds (user + system) of each live thread of a process, by thread id."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return out


def daemon_examples_per_sec(trainingd, spec, data_dir, sse_clients=4, cpu=None):
    """The job's median examples/s with SSE clients attached. With `cpu` (a dict), also records
    how much CPU the daemon's threads other than the job's two compute threads used while the
    job trained: the HTTP, SSE, SQLite and handler threads that could take cores from it."""
    p, port = start_daemon(trainingd, data_dir)
    try:
        jid = call(port, "POST", "/api/v1/jobs", spec)["id"]
        wait_state(port, jid, {"running"})
        readers = [subprocess.Popen(["curl", "-sN", "http://127.0.0.1:%d/api/v1/jobs/%s/events"
                                     % (port, jid)], stdout=subprocess.DEVNULL)
                   for _ in range(sse_clients)]
        time.sleep(3)  # past data loading: from here on the job only trains
        before, t0 = thread_cpu_seconds(p.pid), time.monotonic()
        # Sample just before the end (the job's threads are gone after it).
        last, t1 = before, t0
        while call(port, "GET", "/api/v1/jobs/%s" % jid)["state"] == "running":
            last, t1 = thread_cpu_seconds(p.pid), time.monotonic()
            time.sleep(0.5)
        wait_state(port, jid, {"completed", "failed"})
        for c in readers:
            c.terminate()
        if cpu is not None and t1 > t0:
            used = {tid: last[tid] - before.get(tid, 0.0) for tid in last}
            ranked = sorted(used.values(), reverse=True)
            cpu["wall_seconds"] = t1 - t0
            cpu["compute_seconds"] = sum(ranked[:2])
            cpu["service_seconds"] = sum(ranked[2:])
            cpu["threads"] = len(ranked)
        d = os.path.join(data_dir, "jobs", jid)
        ev = [f for f in os.listdir(d) if "tfevents" in f][0]
        rates = rates_from_events(os.path.join(d, ev))[2:]
        return statistics.median(rates) * spec["batch_size"]
    finally:
        p.terminate()
        p.wait()


def bench_overhead(trainingd, tmp, steps=600, rounds=4):
    spec = cnn_job(steps)
    spec_path = os.path.join(tmp, "cnn.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    results = {"run": [], "daemon": []}
    shares = []
    for r in range(rounds):
        # A B B A ...: the machine's drift cancels out of the comparison.
        order = ("run", "daemon") if r % 2 == 0 else ("daemon", "run")
        cpu = {}
        for kind in order:
            d = os.path.join(tmp, "%s-%d" % (kind, r))
            if kind == "run":
                results["run"].append(run_examples_per_sec(trainingd, spec, spec_path, d))
            else:
                results["daemon"].append(daemon_examples_per_sec(trainingd, spec, d, cpu=cpu))
        # The daemon's service threads' CPU as a share of the two cores over the same time: an
        # upper bound on what they can take from training, free of the machine's speed swings.
        share = 100 * cpu["service_seconds"] / (2 * cpu["wall_seconds"])
        shares.append(share)
        print(json.dumps({"bench": "overhead_round", "round": r + 1,
                          "run_examples_per_sec": results["run"][-1],
                          "daemon_examples_per_sec": results["daemon"][-1],
                          "daemon_service_cpu_percent_of_2_cores": share, **cpu}))
    a, b = statistics.median(results["run"]), statistics.median(results["daemon"])
    diffs = [100 * (x - y) / x for x, y in zip(results["run"], results["daemon"])]
    print(json.dumps({"bench": "overhead", "steps": steps, "rounds": rounds, "run_median": a,
                      "daemon_median": b, "overhead_percent": 100 * (a - b) / a,
                      "median_round_overhead_percent": statistics.median(diffs),
                      "service_cpu_percent_median": statistics.median(shares),
                      "service_cpu_percent_max": max(shares)}))


def bench_profile(trainingd, tmp, seconds=30, sse_clients=4):
    """Where a training daemon's CPU goes, by perf (needs perf, as root): a CNN job with
    `sse_clients` curl event streams, sampled at 499 Hz for `seconds`. Prints the samples per
    thread and how many fall in the daemon's own code (HTTP, events, JSON, SQLite) rather than
    the engine: the CPU view of the daemon's overhead (docs/benchmarks.md)."""
    p, port = start_daemon(trainingd, os.path.join(tmp, "profile"))
    readers = []
    try:
        jid = call(port, "POST", "/api/v1/jobs", cnn_job(10 ** 6))["id"]
        wait_state(port, jid, {"running"})
        readers = [subprocess.Popen(["curl", "-sN", "http://127.0.0.1:%d/api/v1/jobs/%s/events"
                                     % (port, jid)], stdout=subprocess.DEVNULL)
                   for _ in range(sse_clients)]
        time.sleep(8)  # past data loading
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-F", "499", "-p", str(p.pid), "-o", data, "--",
                        "sleep", str(seconds)], check=True, stderr=subprocess.DEVNULL)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "tid,ip,sym,dso"],
                                check=True, capture_output=True, text=True).stdout
    finally:
        for c in readers:
            c.terminate()
        p.terminate()
        p.wait()
    service = re.compile(r"trainingd::(daemon|api)::|boost::|nlohmann|sqlite|asio|beast")
    per_thread, in_service = {}, {}
    for line in script.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 2:
            continue
        tid = int(parts[0])
        per_thread[tid] = per_thread.get(tid, 0) + 1
        if service.search(parts[2] if len(parts) > 2 else ""):
            in_service[tid] = in_service.get(tid, 0) + 1
    ranked = sorted(per_thread.items(), key=lambda kv: -kv[1])
    total = sum(per_thread.values())
    compute, others = ranked[:2], ranked[2:]
    print(json.dumps({"bench": "profile", "seconds": seconds, "samples": total,
                      "threads": [{"tid": t, "samples": n, "in_daemon_code": in_service.get(t, 0)}
                                  for t, n in ranked],
                      "compute_threads_percent": 100 * sum(n for _, n in compute) / total,
                      "compute_threads_in_daemon_code": sum(in_service.get(t, 0)
                                                            for t, _ in compute),
                      "other_threads_samples": sum(n for _, n in others),
                      "other_threads_percent": 100 * sum(n for _, n in others) / total}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="http,sse,overhead")
    ap.add_argument("--sse-clients", type=int, default=500)
    ap.add_argument("--sse-seconds", type=float, default=20)
    ap.add_argument("--sse-client", choices=("cpp", "python"), default="cpp",
                    help="cpp: build/bench/sse_clients (default); python: asyncio in this process")
    ap.add_argument("--overhead-steps", type=int, default=600)
    ap.add_argument("--overhead-rounds", type=int, default=4)
    ap.add_argument("--profile-seconds", type=float, default=30,
                    help="--only profile: how long perf samples the daemon")
    args = ap.parse_args()
    trainingd = os.path.join(args.build, "daemon", "trainingd")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only.split(","):
            if name == "http":
                bench_http(trainingd, tmp)
            elif name == "sse":
                native = (os.path.join(args.build, "bench", "sse_clients")
                          if args.sse_client == "cpp" else None)
                bench_sse(trainingd, tmp, args.sse_clients, args.sse_seconds, native)
            elif name == "overhead":
                bench_overhead(trainingd, tmp, args.overhead_steps, args.overhead_rounds)
            elif name == "profile":
                bench_profile(trainingd, tmp, args.profile_seconds)
            else:
                ap.error("unknown benchmark " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
