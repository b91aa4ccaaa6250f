#!/usr/bin/python3
"""The daemon's browser protections over real HTTP, against `trainingd serve` on a port the OS
chooses (docs/operations.md#browser-protections).

  browser_protection_test.py TRAININGD

- Host: only names of this server with the bound port (localhost, 127.0.0.1, [::1], the
  configured allowed_hosts), any case; anything else, a missing port included, is 421 with a
  JSON error naming Host -- the DNS-rebinding attack of issue 11 gets nothing
- the cross-site form post that used to stop a job (Origin: http://evil.example, form type,
  empty body) is 403; without its Origin it is 415; text/plain is 415; the job keeps running; the
  dashboard's own request (same origin, application/json, empty or {}) stops it; a configured
  allowed_origins entry may post, another origin may not; Origin: null never
- OPTIONS preflights get 405 and no CORS headers
- X-Frame-Options, Content-Security-Policy (the dashboard's real policy on its HTML) and
  Referrer-Policy on every answer
- with a token: ?access_token= works on event streams (events, logs?follow=true) only; on
  other routes it is a 401 telling to use the Authorization header
- the descriptor limit: the soft limit is raised to the hard one; a connection cap that does not
  fit is lowered with a warning; a limit with no room for connections refuses to start
"""
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import trainingd_e2e
from trainingd_e2e import expect

TRAININGD = sys.argv[1]
TOKEN = "e2e-browser-token-0123456789"


class Daemon(trainingd_e2e.Daemon):
    """The daemon, read up to its start-up line about Host names; requests carry exactly the
    headers given (no Content-Type is added)."""

    def __init__(self, data_dir, *extra, **kw):
        super().__init__(TRAININGD, data_dir, *extra, **kw)
        self.wait_log("must name this server in Host")

    def request(self, method, path, body=None, headers=None, host=None):
        return super().request(method, path, body, headers, host, content_type=None)

    def job_state(self, jid, headers=None):
        status, job, _ = self.request("GET", "/api/v1/jobs/" + jid, headers=headers)
        expect(status == 200, (status, job))
        return job["state"]


def error(status, payload, want_status, want_field=None):
    expect(status == want_status, "status %d, wanted %d: %r" % (status, want_status, payload))
    expect(isinstance(payload, dict) and payload["error"]["message"], "JSON error: %r" % payload)
    if want_field:
        expect(payload["error"].get("field") == want_field, "field %s: %r" % (want_field, payload))


def spec(name):
    return {"name": name, "model": "softmax", "max_steps": 10 ** 6, "batch_size": 100,
            "dataset": {"name": "fashion-mnist", "max_train_examples": 2000,
                        "validation_size": 500, "max_test_examples": 500},
            "hooks": {"summary": {"every_steps": 100}, "logging": False,
                      "checkpoint": {"every_steps": 10 ** 6}}}


def security_headers(r, html=False):
    expect(r.getheader("X-Frame-Options") == "DENY", "X-Frame-Options: %r" % r.getheaders())
    expect(r.getheader("Referrer-Policy") == "no-referrer", "Referrer-Policy")
    csp = r.getheader("Content-Security-Policy") or ""
    expect("frame-ancestors 'none'" in csp, "CSP %r" % csp)
    if html:
        expect("script-src 'self'" in csp and "default-src 'self'" in csp, "dashboard CSP %r" % csp)
        expect("unsafe-inline" not in csp, "no unsafe-inline: %r" % csp)
    else:
        expect(csp == "default-src 'none'; frame-ancestors 'none'", "API CSP %r" % csp)


def defaults(tmp):
    d = Daemon(os.path.join(tmp, "a"))
    try:
        port = d.port
        expect("localhost, 127.0.0.1, [::1]" in d.log and "(port %d" % port in d.log,
               "start-up line names the allowed hosts: %r" % d.log)
        # Host: names of this server with the bound port, in any case.
        for host in ("127.0.0.1:%d" % port, "localhost:%d" % port, "LocalHost:%d" % port,
                     "[::1]:%d" % port):
            status, body, r = d.request("GET", "/api/v1/jobs", host=host)
            expect(status == 200, (host, status, body))
            security_headers(r)
        for host in ("evil.example", "evil.example:%d" % port, "127.0.0.1", "localhost",
                     "localhost:%d" % (port + 1), "127.0.0.2:%d" % port, "0.0.0.0:%d" % port):
            status, body, r = d.request("GET", "/api/v1/jobs", host=host)
            error(status, body, 421, "Host")
            security_headers(r)
        status, body, _ = d.request("GET", "/", host="rebound.evil.example:%d" % port)
        error(status, body, 421, "Host")
        status, body, r = d.request("GET", "/")
        expect(status == 200 and "<html" in body, (status, body[:100]))
        security_headers(r, html=True)

        status, job, _ = d.request("POST", "/api/v1/jobs", spec("victim"),
                                   {"Content-Type": "application/json"})
        expect(status == 201, (status, job))
        jid = job["id"]
        expect(re.fullmatch(r"j[a-z2-7]{16}", jid), "job id from the OS's random source: %r" % jid)
        stop = "/api/v1/jobs/%s/stop" % jid
        # The attack of issue 11: a cross-site form post with an empty body.
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        status, body, _ = d.request("POST", stop, "", dict(form, Origin="http://evil.example"))
        error(status, body, 403, "Origin")
        status, body, _ = d.request("POST", stop, "", form)
        error(status, body, 415, "Content-Type")
        status, body, _ = d.request("POST", stop, "{}", {"Content-Type": "text/plain"})
        error(status, body, 415, "Content-Type")
        status, body, _ = d.request("POST", stop, None)
        error(status, body, 415, "Content-Type")
        status, body, _ = d.request("POST", stop, "{}", {"Content-Type": "application/json",
                                                         "Origin": "null"})
        error(status, body, 403, "Origin")
        status, body, _ = d.request("POST", stop, "{}", {"Content-Type": "application/json",
                                                         "Origin": "http://localhost:1"})
        error(status, body, 403, "Origin")
        status, body, _ = d.request("DELETE", "/api/v1/jobs/" + jid, None,
                                    {"Origin": "http://evil.example"})
        error(status, body, 403, "Origin")
        expect(d.job_state(jid) in ("queued", "running"), "the job was not touched")
        # A preflight gets no CORS allowance.
        status, body, r = d.request("OPTIONS", stop, None, {
            "Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})
        expect(status == 405, (status, body))
        expect(not [h for h, _ in r.getheaders() if h.lower().startswith("access-control")],
               "no CORS headers: %r" % r.getheaders())
        # The dashboard's own request: same origin, JSON, an empty body.
        status, body, _ = d.request("POST", stop, "", {
            "Content-Type": "application/json", "Origin": "http://127.0.0.1:%d" % port})
        expect(status == 202 and body["state"] in ("stopping", "stopped"), (status, body))
        deadline = time.time() + 120
        while d.job_state(jid) != "stopped" and time.time() < deadline:
            time.sleep(0.1)
        # Resume with {} keeps max_steps; then stop again with {}.
        status, body, _ = d.request("POST", "/api/v1/jobs/%s/resume" % jid, "{}",
                                    {"Content-Type": "application/json",
                                     "Origin": "http://localhost:%d" % port})
        expect(status == 202 and body["max_steps"] == 10 ** 6, (status, body))
        status, body, _ = d.request("POST", stop, "{}", {"Content-Type": "application/json"})
        expect(status == 202, (status, body))
        print("defaults: Host 421, cross-site stop 403/415, same-origin JSON stop 202, headers: ok")
    finally:
        code, log = d.stop()
        expect(code == 0, "clean exit: %d %s" % (code, log))


def configured(tmp):
    config = {"allowed_hosts": ["trainer.test", "proxy.test:8443"],
              "allowed_origins": ["https://dash.example"]}
    d = Daemon(os.path.join(tmp, "b"), config=config, env={"TRAININGD_TOKEN": TOKEN})
    auth = {"Authorization": "Bearer " + TOKEN}
    try:
        port = d.port
        expect("trainer.test" in d.log and "https://dash.example" in d.log, d.log)
        status, _, _ = d.request("GET", "/api/v1/jobs", headers=auth, host="Trainer.Test:%d" % port)
        expect(status == 200, status)
        status, _, _ = d.request("GET", "/api/v1/jobs", headers=auth, host="proxy.test:8443")
        expect(status == 200, status)
        status, body, _ = d.request("GET", "/api/v1/jobs", headers=auth, host="proxy.test:%d" % port)
        error(status, body, 421, "Host")
        json_auth = dict(auth, **{"Content-Type": "application/json"})
        status, job, _ = d.request("POST", "/api/v1/jobs", spec("configured"),
                                   dict(json_auth, Origin="https://dash.example"))
        expect(status == 201, (status, job))
        jid = job["id"]
        status, body, _ = d.request("POST", "/api/v1/jobs/%s/stop" % jid, "{}",
                                    dict(json_auth, Origin="https://other.example"))
        error(status, body, 403, "Origin")
        expect(d.job_state(jid, auth) in ("queued", "running"), "not stopped")

        # The token in the query string: event streams only.
        for path in ("/api/v1/events", "/api/v1/jobs/%s/events" % jid,
                     "/api/v1/jobs/%s/logs?follow=true" % jid):
            sep = "&" if "?" in path else "?"
            status, _, r = d.request("GET", path + sep + "access_token=" + TOKEN)
            expect(status == 200 and r.getheader("Content-Type") == "text/event-stream",
                   (path, status))
            security_headers(r)
        for path in ("/api/v1/jobs", "/api/v1/jobs/" + jid, "/api/v1/jobs/%s/logs" % jid,
                     "/api/v1/jobs/%s/logs?follow=false" % jid, "/metrics"):
            sep = "&" if "?" in path else "?"
            status, body, _ = d.request("GET", path + sep + "access_token=" + TOKEN)
            error(status, body, 401)
            expect("Authorization" in body["error"]["message"], body)
        status, body, _ = d.request("POST", "/api/v1/jobs/%s/stop" % jid, "", json_auth)
        expect(status == 202, (status, body))
        print("configured hosts and origins; query token on event streams only: ok")
    finally:
        d.stop()


def open_files_soft_limit(pid):
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no Max open files in /proc/%d/limits" % pid)


def descriptor_limit(tmp):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    want_hard = min(hard, 4096) if hard != resource.RLIM_INFINITY else 4096
    # The soft limit is raised to the hard one; 1024 connections + the reserve fit in 4096.
    d = Daemon(os.path.join(tmp, "c"), nofile=(200, want_hard))
    try:
        expect(open_files_soft_limit(d.proc.pid) == want_hard, "soft limit raised to the hard one")
        expect("lowered" not in d.log, d.log)
        expect("at most 1024 connections (descriptor limit %d)" % want_hard in d.log, d.log)
    finally:
        d.stop()
    # A cap that does not fit is lowered, with a warning; the daemon serves.
    d = Daemon(os.path.join(tmp, "d"), "--max-connections", "5000", nofile=(300, 300))
    try:
        m = re.search(r"max_connections lowered from 5000 to (\d+) to fit the file descriptor "
                      r"limit \(300, of which (\d+) are kept", d.log)
        expect(m and int(m.group(1)) + int(m.group(2)) == 300, "warning: %r" % d.log)
        expect(d.request("GET", "/healthz")[0] == 200, "serves")
    finally:
        d.stop()
    # No room at all: refused at start, saying why.
    r = subprocess.run([TRAININGD, "serve", "--listen", "127.0.0.1:0", "--data-dir",
                        os.path.join(tmp, "e")], capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (90, 90)))
    expect(r.returncode == 1 and "leaves no room for HTTP connections" in r.stderr,
           "refused: %d %r" % (r.returncode, r.stderr))
    print("descriptor limit raised, cap lowered to fit, no room refused: ok")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        defaults(tmp)
        configured(tmp)
        descriptor_limit(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
