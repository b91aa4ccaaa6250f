#!/usr/bin/python3
"""`trainingd experiments ...` against a real daemon on a port the OS chooses (docs/cli.md):

- every verb, with golden-ish tables (piped: tab-separated, stable columns; ids vary) and
  -o json / jsonl / csv equal to the API's own objects; --preview's plan;
- submit -f of a small ASHA search of softmax trials to its end (exit 0), a line per change;
- one case per exit code an experiment has: completed 0, an invalid spec 2 (locally, naming the
  field, and at the daemon), stop --wait and wait on a stopped one 3, wait --timeout 124,
  Ctrl-C on wait -f 130 (the hint says how to reattach), a closed port 5, not found 1;
- resume -f to the end, delete (refused without --yes off a terminal);
- wait -f across kill -9 of the daemon and its restart: it reconnects and exits 0 at the end;
- bash completion of the verbs, flags and the daemon's experiment ids.

Each search has 4 trials (each a job of ~0.6 s). Usage: cli_experiments_test.py path/to/trainingd
"""
import csv
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainingd_e2e import Daemon, cli_env, completions, expect, metric, small_search  # noqa: E402

TRAININGD = os.path.abspath(sys.argv[1])
CREATED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
ID = re.compile(r"^[A-Za-z0-9_.~-]+$")
# A line of -f: "running: trials 2/4 started (1 running, 1 waiting), 20 steps, best
# validation/accuracy 0.81 (trial 0)".
CHANGE = re.compile(r"^(running|stopping|completed|failed|stopped): trials \d+/4 started"
                    r"( \([^)]*\))?, \d+ steps(, best validation/accuracy \S+ \(trial \d+\))?"
                    r"(; .*)?$")


def search(name="cli-search", max_trials=4):
    """experiments_test.py's search: ASHA over the learning rate of a softmax, rungs 10/20/40."""
    return small_search(name, max_trials)


def cli(d, *args, timeout=120):
    """Runs `trainingd experiments ARGS` against d; returns (code, stdout, stderr)."""
    p = subprocess.run([TRAININGD, "experiments"] + list(args), env=cli_env(d),
                       capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def api(d, method, path, body=None):
    status, answer = d.call(method, path, body)
    expect(200 <= status < 300, (method, path, status, answer))
    return answer


def write(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def check_help_and_usage(d):
    verbs = ["submit", "list", "get", "trials", "wait", "stop", "resume", "delete"]
    code, out, _ = cli(d, "--help")
    expect(code == 0 and all(v in out for v in verbs), out)
    for v in verbs:
        code, out, err = cli(d, v, "--help")
        expect(code == 0 and out.startswith("usage: trainingd experiments " + v), (v, out, err))
    for args, needle in ((["list", "--state", "done"], "--state: unknown state 'done'"),
                         (["trials", "x", "--state", "done"], "--state: unknown state 'done'"),
                         (["get"], "no experiment id given"),
                         (["wait", "x", "--timeout", "soon"], "--timeout: must be"),
                         (["frob"], "unknown verb 'frob'")):
        code, out, err = cli(d, *args)
        expect(code == 2 and needle in err and out == "", (args, code, out, err))
    p = subprocess.run([TRAININGD, "help", "exit-codes"], capture_output=True, text=True)
    expect(p.returncode == 0 and "    3  the job or experiment was stopped" in p.stdout, p.stdout)
    print("experiments --help, every verb's --help, usage errors (exit 2): ok")


def check_invalid_and_preview(d, tmp):
    path = write(os.path.join(tmp, "search.json"), search())
    # Refused here, the field named, nothing sent.
    for sets, field in ((["searcher.max_trials=0"], "searcher.max_trials"),
                        (['space={"optimizer.nope": {"type": "double", "min": 0, "max": 1}}'],
                         'space["optimizer.nope"]'),
                        (["base_job.batch_size=-1"], "base_job.batch_size")):
        args = ["submit", path]
        for s in sets:
            args += ["--set", s]
        code, out, err = cli(d, *args)
        expect(code == 2 and ("invalid spec: " + field) in err and out == "", (sets, code, err))
    # Refused by the daemon (the dataset is the daemon's to know): 400, exit 2, the field named.
    code, out, err = cli(d, "submit", path, "--set", "base_job.dataset.name=no-such-data")
    expect(code == 2 and "dataset" in err, (code, err))
    expect(api(d, "GET", "/api/v1/experiments")["experiments"] == [], "nothing was submitted")
    # --preview: the plan as a FIELD/VALUE table, and -o json equal to the API's.
    code, out, err = cli(d, "submit", path, "--preview")
    rows = dict(l.split("\t", 1) for l in out.splitlines()[1:])
    expect(code == 0 and out.splitlines()[0] == "FIELD\tVALUE", (code, out, err))
    expect(rows["trials"] == "4" and rows["rung 0"] == "10 steps: 4 trials planned" and
           rows["rung 2"] == "40 steps: 1 trials planned" and
           re.fullmatch(r"optimizer\.learning_rate=\S+", rows["trial 0"]), rows)
    plan = api(d, "POST", "/api/v1/experiments/preview", search())
    expect(rows["total steps"] == str(plan["max_total_steps"]), (rows, plan))
    code, out, _ = cli(d, "submit", path, "--preview", "-o", "json")
    expect(code == 0 and json.loads(out) == plan, out)
    code, _, err = cli(d, "submit", path, "--preview", "-f")
    expect(code == 2 and "--preview: not with -f or -q" in err, err)
    # The README's and cli.md's example spec stays one the daemon takes.
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                           "experiments", "softmax-search.json")
    code, out, err = cli(d, "submit", example, "--preview")
    expect(code == 0 and "trials\t16\n" in out, (code, out, err))
    expect(api(d, "GET", "/api/v1/experiments")["experiments"] == [], "a preview runs nothing")
    print("invalid specs (exit 2, the field named, locally and at the daemon), --preview: ok")
    return path


def check_completed_and_outputs(d, path):
    t = time.time()
    code, out, err = cli(d, "submit", path, "-f")
    took = time.time() - t
    expect(code == 0, (code, out, err))
    eid = re.search(r"submitted experiment (\S+)", err).group(1)
    lines = out.splitlines()
    expect(lines and all(CHANGE.match(l) for l in lines), out)
    expect(lines[-1].startswith("completed: trials 4/4 started") and len(lines) >= 3, out)
    expect(len(set(lines)) == len(lines), "a line per change, none repeated:\n" + out)
    e = api(d, "GET", "/api/v1/experiments/" + eid)
    expect(e["state"] == "completed" and e["best"] is not None, e)
    best = e["best"]
    expect("best validation/accuracy %.4g (trial %d)" % (best["metric"], best["trial"])
           in lines[-1], (lines[-1], best))

    # list: golden header, the row, -q, json, jsonl, csv.
    code, out, _ = cli(d, "list")
    rows = out.splitlines()
    expect(code == 0 and rows[0] == "ID\tNAME\tSTATE\tSEARCHER\tMETRIC\tTRIALS\tBEST\tSTEPS\t"
           "CREATED", out)
    row = rows[1].split("\t")
    expect(row[:8] == [eid, "cli-search", "completed", "asha", "validation/accuracy", "4/4",
                       "%.4g" % best["metric"], str(e["steps_used"])] and CREATED.match(row[8]),
           row)
    code, out, _ = cli(d, "list", "-q")
    expect(code == 0 and out == eid + "\n", out)
    code, out, _ = cli(d, "list", "--state", "running", "-q")
    expect(code == 0 and out == "", out)
    api_list = api(d, "GET", "/api/v1/experiments")["experiments"]
    code, out, _ = cli(d, "list", "-o", "json")
    expect(json.loads(out) == {"experiments": api_list}, out)
    code, out, _ = cli(d, "list", "-o", "jsonl")
    expect([json.loads(l) for l in out.splitlines()] == api_list, out)
    code, out, _ = cli(d, "list", "-o", "csv")
    parsed = list(csv.reader(io.StringIO(out)))
    expect(parsed[0][0] == "ID" and parsed[1][:3] == [eid, "cli-search", "completed"], parsed)

    # get: the FIELD/VALUE table; -o json is the API's object (with its spec).
    code, out, _ = cli(d, "get", eid)
    fields = dict(l.split("\t", 1) for l in out.splitlines()[1:])
    expect(code == 0 and out.splitlines()[0] == "FIELD\tVALUE", out)
    expect(fields["state"] == "completed" and fields["searcher"] == "asha" and
           fields["metric"] == "validation/accuracy (max)" and
           fields["trials"] == "4/4 started" and fields["steps"] == str(e["steps_used"]) and
           fields["best trial"] == str(best["trial"]) and fields["best job"] == best["job_id"] and
           fields["best validation/accuracy"] == "%.4g at step %d" % (best["metric"],
                                                                      best["step"]) and
           fields["best optimizer.learning_rate"] ==
           "%.4g" % best["hyperparameters"]["optimizer.learning_rate"] and
           fields["disk bytes"] == str(e["disk_bytes"]) and
           fields["reason"] == e["reason"], fields)
    for state, count in e["trials_by_state"].items():
        expect(count == 0 or fields["trials " + state] == str(count), (state, fields))
    for r in e["plan"]["rungs"]:
        expect(fields["rung %d" % r["index"]].startswith(
            "%d steps: %d trials (%d planned), %d promoted" % (r["steps"], r["trials"],
                                                               r["max_trials"], r["promoted"])),
               (r, fields))
    code, out, _ = cli(d, "get", eid, "-o", "json")
    expect(code == 0 and json.loads(out) == api(d, "GET", "/api/v1/experiments/" + eid), out)

    # trials: a column per hyperparameter, sorted by the daemon.
    code, out, _ = cli(d, "trials", eid)
    rows = [l.split("\t") for l in out.splitlines()]
    expect(code == 0 and rows[0] == ["INDEX", "JOB", "STATE", "RUNG", "STEP", "METRIC",
                                     "optimizer.learning_rate"], out)
    api_trials = api(d, "GET", "/api/v1/experiments/%s/trials" % eid)
    expect(len(rows) == 5, out)
    for row, t in zip(rows[1:], api_trials["trials"]):
        expect(row == [str(t["index"]), t["job_id"], t["state"],
                       "-" if t["rung"] is None else str(t["rung"]), str(t["global_step"]),
                       "-" if t["metric"] is None else "%.4g" % t["metric"],
                       "%.4g" % t["hyperparameters"]["optimizer.learning_rate"]], (row, t))
    code, out, _ = cli(d, "trials", eid, "--sort", "metric", "--desc", "--limit", "1")
    expect(code == 0 and out.splitlines()[1].split("\t")[0] == str(best["trial"]), out)
    code, out, _ = cli(d, "trials", eid, "--sort", "optimizer.learning_rate", "-q")
    by_lr = api(d, "GET", "/api/v1/experiments/%s/trials?sort=optimizer.learning_rate" % eid)
    expect(code == 0 and out.split() == [t["job_id"] for t in by_lr["trials"]], out)
    code, out, _ = cli(d, "trials", eid, "-o", "json")
    expect(code == 0 and json.loads(out) == api_trials, (out, api_trials))
    code, out, _ = cli(d, "trials", eid, "--state", "completed", "-o", "jsonl")
    expect(code == 0 and [json.loads(l) for l in out.splitlines()] ==
           [t for t in api_trials["trials"] if t["state"] == "completed"], out)
    code, _, err = cli(d, "trials", eid, "--sort", "no.such.path")
    expect(code == 2 and "sort" in err, (code, err))

    # wait on an experiment that has ended: at once, exit 0, the row.
    t = time.time()
    code, out, _ = cli(d, "wait", eid)
    expect(code == 0 and out.splitlines()[1].split("\t")[:3] == [eid, "cli-search", "completed"]
           and time.time() - t < 5, (code, out))
    print("submit -f of 4 trials to its end (exit 0, %d change lines, %.1f s), list, get, trials "
          "(golden columns; -o json/jsonl/csv equal to the API's), wait on an ended one: ok"
          % (len(lines), took))
    return eid


def hold_the_slot(d):
    """A plain job that holds the daemon's one job slot (max_concurrent_jobs is 1) until
    release(): an experiment submitted behind it runs with its trials queued however fast they
    would train, so a stop, a Ctrl-C or a kill -9 lands before its end. Returns the job's id."""
    spec = dict(search()["base_job"], name="slot", max_steps=10 ** 7)
    status, body = d.call("POST", "/api/v1/jobs", spec)
    expect(status == 201, (status, body))
    deadline = time.time() + 60
    while d.job(body["id"])["state"] != "running":
        expect(time.time() < deadline, "the slot's job never ran")
        time.sleep(0.05)
    return body["id"]


def release(d, job_id):
    status, body = d.call("POST", "/api/v1/jobs/%s/stop" % job_id, {})
    expect(status in (200, 202), (status, body))


def check_stop_timeout_interrupt_resume_delete(d, path):
    slot = hold_the_slot(d)
    code, out, err = cli(d, "submit", path, "-q", "--set", "name=cli-stop")
    eid = out.strip()
    expect(code == 0 and ID.match(eid), (code, out, err))
    t = time.time()
    code, out, err = cli(d, "wait", eid, "--timeout", "300ms")
    expect(code == 124 and time.time() - t < 5 and
           "timed out; experiment %s keeps running" % eid in err and
           "Reattach with: trainingd experiments wait " + eid in err, (code, err))
    p = subprocess.Popen([TRAININGD, "experiments", "wait", eid, "-f"], env=cli_env(d),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.8)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    expect(p.returncode == 130 and "detached; experiment %s keeps running" % eid in err and
           "trainingd experiments wait -f " + eid in err and CHANGE.match(out.splitlines()[0]),
           (p.returncode, out, err))
    expect(api(d, "GET", "/api/v1/experiments/" + eid)["state"] == "running",
           "the experiment runs on after Ctrl-C")
    code, out, err = cli(d, "stop", eid, "--wait", "-o", "json")
    expect(code == 3 and json.loads(out)["state"] == "stopped", (code, out, err))
    code, out, err = cli(d, "wait", eid, "-q")
    expect(code == 3 and out == eid + "\n", (code, out, err))
    code, _, err = cli(d, "delete", eid, "--yes")
    expect(code == 0, (code, err))  # a stopped experiment may be deleted; resume another one
    code, out, err = cli(d, "submit", path, "-q", "--set", "name=cli-resume")
    eid = out.strip()
    code, out, err = cli(d, "stop", eid)
    expect(code == 0 and out.splitlines()[1].split("\t")[2] in ("stopping", "stopped"),
           (code, out, err))
    code, _, _ = cli(d, "wait", eid)
    expect(code == 3, code)
    release(d, slot)
    code, out, err = cli(d, "resume", eid, "-f")
    lines = out.splitlines()
    expect(code == 0 and lines and all(CHANGE.match(l) for l in lines) and
           lines[-1].startswith("completed: trials 4/4 started"), (code, out, err))
    code, out, err = cli(d, "resume", eid)
    expect(code == 1 and out == "", (code, out, err))  # 409: it has completed
    # delete: refused without --yes off a terminal, then done; then not found (1).
    code, _, err = cli(d, "delete", eid)
    expect(code == 2 and "--yes" in err, err)
    code, out, _ = cli(d, "delete", eid, "--yes", "-q")
    expect(code == 0 and out == eid + "\n" and
           d.call("GET", "/api/v1/experiments/" + eid)[0] == 404, out)
    code, _, err = cli(d, "get", eid)
    expect(code == 1 and err.startswith("trainingd experiments get: "), (code, err))
    print("wait --timeout (124), Ctrl-C on wait -f (130), stop --wait (3), wait on a stopped one "
          "(3), resume -f (0), resume of a completed one (1), delete: ok")


def check_completion(d):
    experiments = {e["id"] for e in d.call("GET", "/api/v1/experiments")[1]["experiments"]}
    offered = completions(TRAININGD, d, ["trainingd", "experiments", "s"],
                          ["trainingd", "experiments", "trials", "x", "--so"], ["trainingd", "ex"],
                          ["trainingd", "experiments", "trials", ""])
    expect(offered[:3] == [{"submit", "stop"}, {"--sort"}, {"experiments", "export"}], offered)
    expect(experiments and offered[3] == experiments, (offered, experiments))
    print("completion bash: 'experiments s' -> %s, 'experiments trials' -> %d ids: ok"
          % (" ".join(sorted(offered[0])), len(experiments)))


def check_follow_across_kill9(tmp, path):
    """wait -f rides out a kill -9 of the daemon and its restart: it reconnects, and ends with
    the experiment (exit 0) as the restarted daemon finishes it."""
    data = os.path.join(tmp, "k")
    d = Daemon(TRAININGD, data)
    port = d.port
    slot = hold_the_slot(d)
    code, out, err = cli(d, "submit", path, "-q", "--set", "name=cli-kill",
                         "--set", "base_job.max_steps=200", "--set", "searcher.min_steps=50",
                         "--set", "searcher.max_steps=200")
    eid = out.strip()
    expect(code == 0, (code, err))
    out_path = os.path.join(tmp, "wait.out")
    with open(out_path, "w") as out_file:
        p = subprocess.Popen([TRAININGD, "experiments", "wait", eid, "-f", "-q"],
                             env=cli_env(d), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
        f = subprocess.Popen([TRAININGD, "experiments", "wait", eid, "-f"], env=cli_env(d),
                             stdout=out_file, stderr=subprocess.PIPE, text=True)
    # Killed once both follow: each has had the daemon's answer and holds its event stream. A
    # client whose first call the kill cuts off has never had an answer, and exits 5 at once.
    deadline = time.time() + 60
    while (open(out_path).read().count("\n") < 1 or
           metric(d, "trainingd_http_event_streams") < 2):
        expect(time.time() < deadline and f.poll() is None and p.poll() is None,
               "wait -f printed too little, or a client does not follow")
        time.sleep(0.05)
    expect(api(d, "GET", "/api/v1/experiments/" + eid)["state"] == "running", "killed midway")
    d.kill()
    time.sleep(1.0)  # the clients are reconnecting to nothing
    d = Daemon(TRAININGD, data, "--listen", "127.0.0.1:%d" % port)
    try:
        release(d, slot)  # the restarted daemon runs the search to its end
        _, err = f.communicate(timeout=120)
        _, err_q = p.communicate(timeout=30)
        lines = open(out_path).read().splitlines()
        table = lines.index("ID\tNAME\tSTATE\tSEARCHER\tMETRIC\tTRIALS\tBEST\tSTEPS\tCREATED")
        lines, row = lines[:table], lines[table + 1].split("\t")  # the changes, then the end
        e = api(d, "GET", "/api/v1/experiments/" + eid)
        expect(row[:3] == [eid, "cli-kill", "completed"], row)
        expect(f.returncode == 0 and p.returncode == 0 and e["state"] == "completed",
               (f.returncode, err, p.returncode, err_q, e["state"]))
        expect(all(CHANGE.match(l) for l in lines) and lines[-1].startswith("completed:"), lines)
    finally:
        d.stop()
    print("wait -f across kill -9 and a restart: reconnected, %d change lines, exit 0: ok"
          % len(lines))


def check_unreachable():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    for args in (["list"], ["wait", "x"], ["submit", "-", "--preview"]):
        t = time.time()
        p = subprocess.run([TRAININGD, "experiments"] + args +
                           ["--server", "http://127.0.0.1:%d" % port], env=cli_env(None),
                           input=json.dumps(search()), capture_output=True, text=True,
                           timeout=30)
        expect(p.returncode == 5 and "unreachable" in p.stderr and time.time() - t < 5,
               (args, p.returncode, p.stderr))
    print("a closed port (exit 5): ok")


def main():
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="trainingd-cli-exp-") as tmp:
        d = Daemon(TRAININGD, os.path.join(tmp, "data"))
        try:
            check_help_and_usage(d)
            path = check_invalid_and_preview(d, tmp)
            check_completed_and_outputs(d, path)
            check_stop_timeout_interrupt_resume_delete(d, path)
            check_completion(d)
        finally:
            d.stop()
        check_follow_across_kill9(tmp, path)
        check_unreachable()
    print("cli_experiments_test: all ok (%.1f s)" % (time.time() - started))


if __name__ == "__main__":
    main()
