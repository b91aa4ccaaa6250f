"""`trainingd serve` as a child process for the end-to-end tests (daemon_test.py, stress_test.py):
started on a port the OS chooses, spoken to over real HTTP, and stopped with a check that it
printed no sanitizer report (a ThreadSanitizer or AddressSanitizer build of the daemon runs these
tests too, and its reports go to the daemon's stderr).
"""
import http.client
import json
import re
import signal
import subprocess
import threading
import time

# What the sanitizers print when they find something (ASan, TSan, LSan, UBSan).
SANITIZER_REPORT = re.compile(r"^(WARNING|ERROR): \w+Sanitizer|runtime error: ", re.M)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def read_events(r):
    """Yields the server-sent events of the HTTP response r as {"id", "event", "data"} dicts (data
    parsed as JSON), and None for each comment (keep-alive), until the stream ends."""
    cur = {}
    while True:
        line = r.fp.readline().decode()
        if not line:
            return
        line = line.rstrip("\n")
        if line == "":
            if "id" in cur:
                cur["data"] = json.loads(cur.get("data", "null"))
                yield cur
            cur = {}
        elif line.startswith(":"):
            yield None
        else:
            k, _, v = line.partition(": ")
            if k == "id":
                cur["id"] = int(v)
            elif k == "data":
                cur["data"] = cur.get("data", "") + v
            elif k == "event":
                cur[k] = v


class Daemon:
    def __init__(self, trainingd, data_dir, *extra):
        self.proc = subprocess.Popen(
            [trainingd, "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir] + list(extra),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # Lines before the listening one are allowed (a TSan build's OpenMP runtime warns first).
        self.lines = []
        m = None
        while m is None and len(self.lines) < 20:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
        if m is None:
            self.proc.kill()
            raise AssertionError("no listening line: %r" % "".join(self.lines))
        self.port = int(m.group(1))
        # The rest of the output is read all along, so the daemon never blocks on a full pipe.
        self.reader = threading.Thread(target=self._read_output, daemon=True)
        self.reader.start()

    def _read_output(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def request(self, method, path, body=None, headers=None, timeout=30):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        raw = r.read()
        conn.close()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode(errors="replace")
        return r.status, payload

    def events(self, path, last_event_id=None, until=None, timeout=120):
        """Reads server-sent events until until(event) is true; returns them all."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            h["Last-Event-ID"] = str(last_event_id)
        conn.request("GET", path, headers=h)
        r = conn.getresponse()
        assert r.status == 200, r.status
        got = []
        deadline = time.time() + timeout
        for e in read_events(r):
            if time.time() >= deadline:
                break
            if e is None:
                continue
            got.append(e)
            if until and until(e):
                break
        conn.close()
        return got

    def wait_state(self, job_id, states, timeout=300):
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, job = self.request("GET", "/api/v1/jobs/" + job_id)
            assert status == 200, (status, job)
            if job["state"] in states:
                return job
            time.sleep(0.1)
        raise AssertionError("job %s not in %s after %ds: %r" % (job_id, states, timeout, job))

    def stop(self, sig=signal.SIGTERM):
        """Signals the daemon and waits for it; returns its exit code and output. A sanitizer
        report in the output fails the test, whatever the exit code."""
        self.proc.send_signal(sig)
        self.proc.wait(timeout=120)
        self.reader.join(timeout=10)
        out = "".join(self.lines)
        expect(not SANITIZER_REPORT.search(out), "the daemon printed a sanitizer report:\n" + out)
        return self.proc.returncode, out

    def kill(self):
        """kill -9: no final checkpoint, no cleanup."""
        return self.stop(signal.SIGKILL)


def monotonic_series(d, job_id, tag):
    status, body = d.request("GET", "/api/v1/jobs/%s/scalars?tag=%s&max_points=100000" %
                             (job_id, tag))
    expect(status == 200, (status, body))
    steps = [p["step"] for p in body["points"]]
    expect(steps == sorted(set(steps)), "%s steps strictly increasing: %r" % (tag, steps[:50]))
    return steps
