#!/usr/bin/python3
"""A daemon shared by a team, over real HTTP (issue 52; docs/operations.md#team-use).

  team_test.py TRAININGD

The configured token is the admin's; the admin makes a viewer and two users and a token for
each. Bob's job runs; the viewer and Alice may not stop it (403) and it keeps running; Bob cannot
be deleted while it runs (409); the admin stops it. Tokens that are revoked or wrong are 401.
The audit shows the refusals with who and from where. After a restart the tokens still work and
the job is still Bob's.
"""
import json
import subprocess
import sys
import tempfile
import time

from trainingd_e2e import Daemon, cli_env, expect, small_spec

TRAININGD = sys.argv[1]
ADMIN = "e2e-admin-token-0123456789abcdef"


def auth(token):
    return {"Authorization": "Bearer " + token}


def cli(d, token, *args):
    """`trainingd ARGS` against daemon d with TRAININGD_TOKEN=token: (exit code, stdout, stderr)."""
    r = subprocess.run([TRAININGD] + list(args), env=cli_env(d, TRAININGD_TOKEN=token),
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def check_cli(d):
    """The CLI verbs: users, tokens, whoami, audit, and their refusals' exit codes."""
    code, out, err = cli(d, ADMIN, "users", "create", "carol", "--role", "viewer", "-o", "json")
    expect(code == 0 and json.loads(out)["role"] == "viewer", (code, out, err))
    code, out, err = cli(d, ADMIN, "tokens", "create", "carol", "--expires-in", "1h")
    secret = out.strip()
    expect(code == 0 and secret.startswith("tdk_") and len(secret.split()) == 1, (code, out, err))
    code, out, err = cli(d, secret, "whoami", "-o", "json")
    expect(code == 0 and json.loads(out)["name"] == "carol", (code, out, err))
    code, out, err = cli(d, secret, "users", "list")
    expect(code == 1 and "may not" in err, (code, out, err))
    code, out, err = cli(d, "tdk_wrong", "whoami")
    expect(code == 4, (code, out, err))
    code, out, err = cli(d, ADMIN, "users", "create", "Carol!", "--role", "user")
    expect(code == 2 and "name" in err, (code, out, err))
    code, out, err = cli(d, ADMIN, "users", "update", "carol", "--role", "user", "-o", "json")
    expect(code == 0 and json.loads(out)["role"] == "user", (code, out, err))
    code, out, err = cli(d, ADMIN, "tokens", "list", "carol", "-q")
    expect(code == 0 and len(out.split()) == 1, (code, out, err))
    code, out, err = cli(d, ADMIN, "tokens", "revoke", out.strip())
    expect(code == 0, (code, out, err))
    code, out, err = cli(d, secret, "whoami")
    expect(code == 4 and "revoked" in err, (code, out, err))
    code, out, err = cli(d, ADMIN, "users", "delete", "carol", "--yes")
    expect(code == 0, (code, out, err))
    code, out, err = cli(d, ADMIN, "audit", "--limit", "5", "-o", "json")
    expect(code == 0 and len(json.loads(out)["entries"]) == 5, (code, out, err))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        data = tmp + "/data"
        d = Daemon(TRAININGD, data, env={"TRAININGD_TOKEN": ADMIN})
        try:
            status, me = d.call("GET", "/api/v1/whoami", headers=auth(ADMIN))
            expect(status == 200 and me["name"] == "admin" and me["role"] == "admin", me)
            tokens = {}
            for name, role in (("vera", "viewer"), ("alice", "user"), ("bob", "user")):
                status, user = d.call("POST", "/api/v1/users", {"name": name, "role": role},
                                      headers=auth(ADMIN))
                expect(status == 201 and user["role"] == role, (status, user))
                status, token = d.call("POST", "/api/v1/users/%s/tokens" % name, {},
                                       headers=auth(ADMIN))
                expect(status == 201 and token["token"].startswith("tdk_"), (status, token))
                tokens[name] = token["token"]
                status, me = d.call("GET", "/api/v1/whoami", headers=auth(tokens[name]))
                expect(status == 200 and me == {"name": name, "role": role,
                                                "token_id": token["id"]}, me)
            # Only shown once: the listing has no secret.
            status, listed = d.call("GET", "/api/v1/users/bob/tokens", headers=auth(ADMIN))
            expect(status == 200 and "token" not in listed["tokens"][0], listed)

            status, job = d.call("POST", "/api/v1/jobs", small_spec("bobs", 200000),
                                 headers=auth(tokens["bob"]))
            expect(status == 201 and job["owner"] == "bob", (status, job))
            jid = job["id"]
            deadline = time.time() + 120
            while time.time() < deadline:
                _, job = d.call("GET", "/api/v1/jobs/" + jid, headers=auth(tokens["vera"]))
                if job["state"] == "running":
                    break
                time.sleep(0.1)
            expect(job["state"] == "running", job)

            for who in ("vera", "alice"):
                status, body = d.call("POST", "/api/v1/jobs/%s/stop" % jid, {},
                                      headers=auth(tokens[who]))
                expect(status == 403 and body["error"]["code"] == "forbidden", (who, status, body))
            status, body = d.call("DELETE", "/api/v1/jobs/" + jid, headers=auth(tokens["alice"]))
            expect(status == 403, (status, body))
            # A priority is its owner's (or an admin's) to change, in its range, named when bad.
            status, body = d.call("PATCH", "/api/v1/jobs/" + jid, {"priority": 9},
                                  headers=auth(tokens["alice"]))
            expect(status == 403, (status, body))
            status, body = d.call("PATCH", "/api/v1/jobs/" + jid, {"priority": 5000},
                                  headers=auth(tokens["bob"]))
            expect(status == 400 and body["error"]["field"] == "priority", (status, body))
            status, body = d.call("PATCH", "/api/v1/jobs/" + jid, {"priority": 7},
                                  headers=auth(tokens["bob"]))
            expect(status == 200 and body["priority"] == 7, (status, body))
            code, out, err = cli(d, tokens["bob"], "jobs", "set-priority", jid, "--priority", "-3",
                                 "-o", "json")
            expect(code == 0 and json.loads(out)["priority"] == -3, (code, out, err))
            code, out, err = cli(d, tokens["bob"], "jobs", "set-priority", jid, "--priority",
                                 "1001")
            expect(code == 2 and "--priority" in err, (code, out, err))
            status, body = d.call("POST", "/api/v1/jobs", small_spec("veras", 10),
                                  headers=auth(tokens["vera"]))
            expect(status == 403, (status, body))
            status, body = d.call("POST", "/api/v1/users", {"name": "eve", "role": "admin"},
                                  headers=auth(tokens["alice"]))
            expect(status == 403, (status, body))
            time.sleep(1)
            _, job = d.call("GET", "/api/v1/jobs/" + jid, headers=auth(ADMIN))
            expect(job["state"] == "running", ("the refusals stopped the job", job))
            status, jobs = d.call("GET", "/api/v1/jobs", headers=auth(ADMIN))
            expect(status == 200 and len(jobs["jobs"]) == 1, jobs)

            status, body = d.call("DELETE", "/api/v1/users/bob", headers=auth(ADMIN))
            expect(status == 409 and jid in body["error"]["message"], (status, body))

            # Events follow the same rules: a viewer's token in the query of a stream.
            status, _, r = d.request("GET", "/api/v1/events?access_token=" + tokens["vera"])
            expect(status == 200, status)
            r.close()

            status, body = d.call("POST", "/api/v1/jobs/%s/stop" % jid, {}, headers=auth(ADMIN))
            expect(status == 202, (status, body))
            job = None
            deadline = time.time() + 120
            while time.time() < deadline:
                _, job = d.call("GET", "/api/v1/jobs/" + jid, headers=auth(ADMIN))
                if job["state"] == "stopped":
                    break
                time.sleep(0.1)
            expect(job["state"] == "stopped", job)

            # Revoked and wrong tokens.
            status, listed = d.call("GET", "/api/v1/users/alice/tokens", headers=auth(ADMIN))
            status, _ = d.call("DELETE", "/api/v1/tokens/%d" % listed["tokens"][0]["id"],
                               headers=auth(ADMIN))
            expect(status == 204, status)
            status, body = d.call("GET", "/api/v1/jobs", headers=auth(tokens["alice"]))
            expect(status == 401 and "revoked" in body["error"]["message"], (status, body))
            status, body = d.call("GET", "/api/v1/jobs", headers=auth("tdk_wrong"))
            expect(status == 401, (status, body))
            status, body = d.call("PATCH", "/api/v1/users/vera", {"disabled": True},
                                  headers=auth(ADMIN))
            expect(status == 200 and body["disabled"] is True, (status, body))
            status, body = d.call("GET", "/api/v1/jobs", headers=auth(tokens["vera"]))
            expect(status == 401 and "disabled" in body["error"]["message"], (status, body))

            # The audit: the refusals, who, which token, from where. Its rows are written
            # through the store's writer: give it a moment.
            deadline = time.time() + 10
            while time.time() < deadline:
                status, audit = d.call("GET", "/api/v1/audit?limit=1000", headers=auth(ADMIN))
                expect(status == 200, (status, audit))
                refusals = [e for e in audit["entries"] if e["status"] == 403]
                if len(refusals) >= 5:
                    break
                time.sleep(0.2)
            stop_refusals = [e for e in refusals if e["route"] == "/api/v1/jobs/{id}/stop"]
            expect({e["user"] for e in stop_refusals} == {"vera", "alice"}, stop_refusals)
            expect(all(e["resource"] == jid and e["remote"] == "127.0.0.1" and e["token_id"] > 0
                       for e in stop_refusals), stop_refusals)
            expect(any(e["status"] == 401 and e["user"] is None for e in audit["entries"]),
                   audit["entries"][:5])
            expect(any(e["status"] == 202 and e["user"] == "admin" for e in audit["entries"]),
                   audit["entries"][:5])
            status, body = d.call("GET", "/api/v1/audit", headers=auth(tokens["bob"]))
            expect(status == 403, (status, body))
            check_cli(d)
        finally:
            code, log = d.stop()
        expect(code == 0, log)

        # A restart keeps users, tokens (as hashes), revocations and owners.
        d = Daemon(TRAININGD, data, env={"TRAININGD_TOKEN": ADMIN})
        try:
            status, me = d.call("GET", "/api/v1/whoami", headers=auth(tokens["bob"]))
            expect(status == 200 and me["name"] == "bob", (status, me))
            status, _ = d.call("GET", "/api/v1/whoami", headers=auth(tokens["alice"]))
            expect(status == 401, status)
            status, job = d.call("GET", "/api/v1/jobs/" + jid, headers=auth(tokens["bob"]))
            expect(status == 200 and job["owner"] == "bob" and job["priority"] == -3, job)
            status, body = d.call("DELETE", "/api/v1/users/bob", headers=auth(ADMIN))
            expect(status == 204, (status, body))
        finally:
            code, log = d.stop()
        expect(code == 0, log)
    print("team: ok")


if __name__ == "__main__":
    main()
