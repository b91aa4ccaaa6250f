"""What the end-to-end tests share: a `trainingd serve` on a port the OS chooses, HTTP requests
and server-sent events over real sockets, waiting for a job's state, and a check that the daemon
printed no sanitizer report (an AddressSanitizer or ThreadSanitizer build of the daemon runs these
tests too; its reports go to the daemon's stderr).

    from trainingd_e2e import Daemon, expect, small_spec
    d = Daemon(TRAININGD, data_dir)          # started; d.port, d.proc
    status, body = d.request("POST", "/api/v1/jobs", small_spec("a", 100))
    d.wait_state(body["id"], {"completed"})
    d.stop()
"""
import http.client
import json
import os
import re
import resource
import shlex
import signal
import subprocess
import threading
import time


# Set by CTest in the ASan and TSan builds (tests/e2e/CMakeLists.txt), whose trainingd runs the
# engine about ten times slower: small_spec trains the softmax model there, whose steps cost a
# third of the MLP's. The daemon's code runs the same; the MLP's layers have sanitized tests of
# their own.
SANITIZED = os.environ.get("TRAININGD_SANITIZED") == "1"

# What the sanitizers print when they find something (ASan, TSan, LSan, UBSan).
SANITIZER_REPORT = re.compile(r"^(WARNING|ERROR): \w+Sanitizer|runtime error: ", re.M)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def cli_env(d, **extra):
    """The environment of a `trainingd` client run against daemon d (None: a port nothing
    listens on): TRAININGD_URL set, none of the caller's other TRAININGD_ variables or NO_COLOR,
    then `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRAININGD_") and k != "NO_COLOR"}
    env["TRAININGD_URL"] = "http://127.0.0.1:%d" % d.port if d else "http://127.0.0.1:1"
    env.update(extra)
    return env


def completions(trainingd, d, *typed):
    """What `trainingd completion bash` offers for each of `typed` (the words on the command line,
    the last one being completed: "" for a new word), as a set of words each. The script runs
    with `trainingd` first on PATH and TRAININGD_URL at d, as in a user's shell, so ids come from
    d."""
    script = "source <(%s completion bash)" % shlex.quote(trainingd)
    for words in typed:
        script += ('; COMP_WORDS=(%s); COMP_CWORD=%d; COMPREPLY=(); _trainingd; '
                   'echo "${COMPREPLY[*]}"' % (" ".join(shlex.quote(w) for w in words),
                                                len(words) - 1))
    env = cli_env(d, PATH=os.path.dirname(trainingd) + os.pathsep + os.environ.get("PATH", ""))
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env,
                         timeout=30)
    lines = out.stdout.splitlines()
    expect(out.returncode == 0 and len(lines) == len(typed), (out.stdout, out.stderr))
    return [set(line.split()) for line in lines]


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


def monotonic_series(d, job_id, tag):
    """The steps of the job's series `tag`, checked strictly increasing."""
    status, body = d.call("GET", "/api/v1/jobs/%s/scalars?tag=%s&max_points=100000" %
                          (job_id, tag))
    expect(status == 200, (status, body))
    steps = [p["step"] for p in body["points"]]
    expect(steps == sorted(set(steps)), "%s steps strictly increasing: %r" % (tag, steps[:50]))
    return steps


def metric(d, name):
    """The value of the daemon's unlabelled metric `name` in /metrics now."""
    status, text = d.call("GET", "/metrics")
    expect(status == 200, status)
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    expect(m, "%s in /metrics" % name)
    return float(m.group(1))


def small_spec(name, max_steps, checkpoint_every=500, **overrides):
    """An MLP job (softmax in a sanitizer build) on 11,000 Fashion-MNIST examples: quick to load
    and to train."""
    spec = {"name": name, "model": "softmax" if SANITIZED else "mlp", "max_steps": max_steps,
            "batch_size": 50, "seed": 3,
            "dataset": {"name": "fashion-mnist", "validation_size": 1000,
                        "max_train_examples": 11000, "max_test_examples": 1000},
            "optimizer": {"type": "adam", "learning_rate": 0.001},
            "hooks": {"checkpoint": {"every_steps": checkpoint_every},
                      "summary": {"every_steps": 50}, "logging": {"every_n_iter": 500},
                      "evaluation": {"every_steps": 1000}, "final_eval": {"split": "test"}}}
    spec.update(overrides)
    return spec


def small_search(name, max_trials, **searcher):
    """An ASHA search over the learning rate of a softmax on 3,000 examples: rungs of 10, 20 and
    40 steps, eta 2, one trial at a time; `searcher` overrides the searcher's fields."""
    s = {"name": "asha", "metric": "validation/accuracy", "mode": "max",
         "max_trials": max_trials, "max_concurrent_trials": 1, "min_steps": 10, "max_steps": 40,
         "reduction_factor": 2, "seed": 3}
    s.update(searcher)
    return {
        "name": name,
        "base_job": {
            "name": "t", "model": "softmax", "batch_size": 50, "max_steps": 40, "seed": 1,
            "dataset": {"name": "fashion-mnist", "validation_size": 500,
                        "max_train_examples": 3000, "max_test_examples": 500},
            "optimizer": {"type": "adam", "learning_rate": 0.001},
            "hooks": {"checkpoint": {"every_steps": 1000}, "summary": {"every_steps": 10},
                      "evaluation": {"every_steps": 1000, "split": "validation"},
                      "final_eval": {"split": "test"}, "logging": {"enabled": False}}},
        "space": {"optimizer.learning_rate": {"type": "log", "min": 0.0001, "max": 0.1}},
        "searcher": s,
    }


def colour_npz(seed=5, n_train=600, n_test=150):
    """A small seeded colour dataset as np.savez_compressed writes it (Debian's python3-numpy):
    uint8 [N, 8, 8, 3] images whose class (0-2) is the channel that carries the signal. With the
    default validation split: 540 to train, 60 to validate, 150 to test."""
    import io

    import numpy as np

    rng = np.random.default_rng(seed)

    def make(n):
        y = rng.integers(0, 3, n).astype(np.uint8)
        x = rng.integers(0, 100, (n, 8, 8, 3)).astype(np.uint8)
        x[np.arange(n), :, :, y] += 100
        return x, y
    x_train, y_train = make(n_train)
    x_test, y_test = make(n_test)
    buf = io.BytesIO()
    np.savez_compressed(buf, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    return buf.getvalue()


def expect_trained_on_upload(job, ds, max_steps):
    """A job on the uploaded colour npz (colour_npz) completed on its exact data, above chance;
    its test accuracy."""
    expect(job["state"] == "completed" and job["global_step"] == max_steps, job)
    recorded = job["spec"]["dataset"]
    expect(recorded["name"] == ds["name"] and recorded["sha256"] == ds["sha256"] and
           recorded["format"] == "npz", recorded)
    accuracy = job["latest_scalars"].get("test/accuracy", 0)
    expect(accuracy > 0.6, "test accuracy %s (chance 0.33): %s" % (accuracy,
                                                                 job["latest_scalars"]))
    return accuracy


class Daemon:
    """`trainingd serve --listen 127.0.0.1:0 --data-dir DATA_DIR [extra...]`, started and read up
    to its listening line. `config` (a dict) is written next to the data directory and passed
    with --config; `env` is added to the environment; `nofile` sets RLIMIT_NOFILE (soft, hard)
    for the daemon. Its stderr is collected as it comes: `log`, `wait_log()`."""

    def __init__(self, trainingd, data_dir, *extra, config=None, env=None, nofile=None):
        args = [trainingd, "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir]
        if config is not None:
            path = data_dir.rstrip("/") + ".json"
            with open(path, "w") as f:
                json.dump(config, f)
            args += ["--config", path]
        preexec = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, nofile)) if nofile else None
        self.proc = subprocess.Popen(args + list(extra), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {})), preexec_fn=preexec)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
        if not m:
            self.proc.kill()
            raise AssertionError("no listening line: %r %r" % (line, self.proc.stderr.read()))
        self.port = int(m.group(1))
        # stderr is read as it comes (a full pipe would block the daemon) into self.log.
        self._log = []
        self._log_changed = threading.Condition()
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()

    def _read_stderr(self):
        for line in self.proc.stderr:
            with self._log_changed:
                self._log.append(line)
                self._log_changed.notify_all()
        with self._log_changed:
            self._log.append(None)  # the end
            self._log_changed.notify_all()

    @property
    def log(self):
        """Everything the daemon has written on stderr so far."""
        with self._log_changed:
            return "".join(line for line in self._log if line is not None)

    def wait_log(self, text, timeout=30):
        """Waits until stderr holds `text`; False if it ends or the time passes first."""
        deadline = time.time() + timeout
        with self._log_changed:
            while True:
                if text in "".join(line for line in self._log if line is not None):
                    return True
                left = deadline - time.time()
                if (self._log and self._log[-1] is None) or left <= 0:
                    return False
                self._log_changed.wait(left)

    def request(self, method, path, body=None, headers=None, host=None, timeout=30,
                content_type="application/json"):
        """Sends exactly the headers given, plus Host (`host`, or a Host in `headers`, default
        127.0.0.1:PORT) and, with a body,
        Content-Type: application/json unless given. `body`: a dict or list
        (sent as JSON), str or bytes (sent as they are). Returns (status, payload, response):
        the payload parsed as JSON when it is JSON, else text; an event stream is not read."""
        h = dict(headers or {})
        host = h.pop("Host", host)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host if host is not None else "127.0.0.1:%d" % self.port)
        data = None
        if body is not None:
            if content_type is not None:
                h.setdefault("Content-Type", content_type)
            if not isinstance(body, bytes):
                body = (body if isinstance(body, str) else json.dumps(body)).encode()
            data = body
            h["Content-Length"] = str(len(data))
        elif method in ("POST", "PUT"):
            h["Content-Length"] = "0"
        for k, v in h.items():
            conn.putheader(k, v)
        conn.endheaders(data)
        r = conn.getresponse()
        if r.getheader("Content-Type") == "text/event-stream":
            conn.close()
            return r.status, None, r
        raw = r.read()
        conn.close()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode(errors="replace")
        return r.status, payload, r

    def call(self, method, path, body=None, headers=None, timeout=30):
        """request() without the response object: (status, payload)."""
        status, payload, _ = self.request(method, path, body, headers, timeout=timeout)
        return status, payload

    def events(self, path, last_event_id=None, until=None, timeout=120):
        """Reads server-sent events until until(event) is true; returns them all, each a dict
        with id, event and data (parsed)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            h["Last-Event-ID"] = str(last_event_id)
        conn.request("GET", path, headers=h)
        r = conn.getresponse()
        expect(r.status == 200, "event stream %s: %d" % (path, r.status))
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

    def job(self, job_id):
        status, job = self.call("GET", "/api/v1/jobs/" + job_id)
        expect(status == 200, (status, job))
        return job

    def wait_state(self, job_id, states, timeout=300):
        deadline = time.time() + timeout
        job = None
        while time.time() < deadline:
            job = self.job(job_id)
            if job["state"] in states:
                return job
            time.sleep(0.1)
        raise AssertionError("job %s not in %s after %ds: %r" % (job_id, states, timeout, job))

    def stop(self, sig=signal.SIGTERM, timeout=120):
        """Signals the daemon and waits for it; returns (exit code, everything on stderr). A
        sanitizer report on stderr fails the test, whatever the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=timeout)
        self.proc.stdout.close()
        self.proc.stderr.close()
        log = self.log
        expect(not SANITIZER_REPORT.search(log), "the daemon printed a sanitizer report:\n" + log)
        return self.proc.returncode, log

    def kill(self):
        """kill -9: no final checkpoint, no cleanup."""
        return self.stop(signal.SIGKILL)
