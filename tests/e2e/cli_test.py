#!/usr/bin/python3
"""`trainingd jobs|datasets|completion|help` against a real daemon on a port the OS chooses
(docs/cli.md):

- every command, with golden tables (piped: tab-separated; in a pseudo-terminal: aligned, the
  state coloured unless NO_COLOR) and -o json / jsonl / csv equal to the API's own objects;
- one case per exit code: completed 0, failed 1 (a NaN learning rate), usage 2 (locally and at
  the daemon), stopped 3, 401 -> 4, a closed port -> 5, wait --timeout -> 124, Ctrl-C -> 130;
- `logs -f` across kill -9 of the daemon and its restart: every line of the job's log exactly
  once, in order, and the exit code of how the job ended; and across a daemon gone (a proxy
  that drops connections) between the log's first page and the follow's first look;
- `watch`'s progress bar in a pseudo-terminal (script -qc); `completion bash` in bash: verbs,
  flags and the daemon's job ids.

Usage: cli_test.py path/to/trainingd
"""
import csv
import io
import json
import os
import re
import select
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainingd_e2e import (SANITIZED, Daemon, cli_env, colour_npz, completions, expect,  # noqa: E402
                           small_spec)

TRAININGD = os.path.abspath(sys.argv[1])
TOKEN = "cli-test-token-0123456789"
# Sanitizer builds train about ten times slower: shorter jobs last as long. (watch's bar is
# redrawn at each of the job's summaries, every 50 steps; its ETA is checked in Release only.)
WATCH_STEPS = 1000 if SANITIZED else 8000
# The kill -9 must come mid-run, and it comes when the client has printed 12 lines (about step
# 300) and the test has seen them: the sanitizer builds' softmax trains about 3,000 steps/s, as
# fast as the Release build's MLP, and an ASan run of 1,500 steps once ended before the kill.
KILL_STEPS = 10000
CREATED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def cli(d, *args, env=None, timeout=120, stdin=None):
    """Runs `trainingd ARGS` with TRAININGD_URL pointing at d; returns (code, stdout, stderr)."""
    p = subprocess.run([TRAININGD] + list(args), env=env or cli_env(d), capture_output=True,
                       text=True, timeout=timeout, stdin=stdin or subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def in_pty(d, command, env=None, timeout=120):
    """`script -qc COMMAND`: the client's stdout is a terminal. Returns (code, output)."""
    p = subprocess.run(["script", "-qec", command, "/dev/null"], env=env or cli_env(d),
                       capture_output=True, timeout=timeout)  # bytes: a lone \r stays one
    return p.returncode, p.stdout.decode().replace("\r\n", "\n")


def spec(name, steps, **kw):
    s = small_spec(name, steps, checkpoint_every=100, **kw)
    s["hooks"]["logging"]["every_n_iter"] = 50
    s["hooks"]["evaluation"]["every_steps"] = 100000
    return s


def write(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def api_log(d, jid):
    status, body = d.call("GET", "/api/v1/jobs/%s/logs?limit=10000" % jid)
    expect(status == 200, body)
    return [l["text"] for l in body["lines"]]


def check_help_and_usage(d):
    code, out, _ = cli(d, "help", "exit-codes")
    expect(code == 0 and "  124  --timeout ran out" in out and "    4  the daemon refused" in out,
           out)
    for group, verbs in (("jobs", ["submit", "list", "get", "logs", "watch", "wait", "stop",
                                   "resume", "delete", "scalars", "checkpoints", "evaluation",
                                   "export"]),
                         ("datasets", ["upload", "list", "get", "delete"])):
        code, out, _ = cli(d, group, "--help")
        expect(code == 0 and all(v in out for v in verbs), out)
        for v in verbs:
            code, out, err = cli(d, group, v, "--help")
            expect(code == 0 and out.startswith("usage: trainingd %s %s" % (group, v)),
                   (group, v, code, out, err))
    code, out, _ = cli(d, "completion", "--help")
    expect(code == 0 and "bash|zsh" in out, out)
    # Usage errors: exit 2, the flag or field named.
    for args, needle in ((["jobs", "list", "--bogus"], "--bogus: unknown flag"),
                         (["jobs", "list", "--limit", "x"], "--limit: must be an integer"),
                         (["jobs", "list", "-o", "yaml"], "-o: must be json, jsonl or csv"),
                         (["jobs", "frob"], "unknown verb 'frob'"),
                         (["jobs", "get"], "no job id given"),
                         (["jobs", "wait", "x", "--timeout", "soon"], "--timeout: must be"),
                         (["jobs", "list", "--server", "https://x"], "--server:"),
                         (["completion", "fish"], "usage: trainingd completion")):
        code, out, err = cli(d, *args)
        expect(code == 2 and needle in err and out == "", (args, code, out, err))
    print("help, --help on every command, usage errors (exit 2): ok")


def check_completed_and_outputs(d, tmp):
    # submit -f: every log line up to the end, exit 0.
    path = write(os.path.join(tmp, "a.json"), spec("cli-a", 300))
    code, out, err = cli(d, "jobs", "submit", path, "-f")
    expect(code == 0, (code, out, err))
    jid = re.search(r"submitted job (\S+)", err).group(1)
    expect(out.splitlines() == api_log(d, jid), "submit -f printed the whole log:\n" + out)
    job = d.job(jid)
    expect(job["state"] == "completed", job)

    # Golden table, piped: tab-separated, a header, no colour.
    code, out, _ = cli(d, "jobs", "list")
    lines = out.splitlines()
    expect(code == 0 and lines[0] == "ID\tNAME\tSTATE\tSTEP\tLOSS\tACCURACY\tCREATED", out)
    row = lines[1].split("\t")
    expect(row[:4] == [jid, "cli-a", "completed", "300/300"], row)
    expect(row[4] == "%.4g" % job["latest_scalars"]["loss"] and CREATED.match(row[6]), row)
    expect("\033[" not in out, "no colour when piped")
    code, out, _ = cli(d, "jobs", "list", "-q")
    expect(code == 0 and out == jid + "\n", out)
    # -o json / jsonl: the API's objects.
    code, out, _ = cli(d, "jobs", "get", jid, "-o", "json")
    expect(code == 0 and json.loads(out) == d.job(jid), out)
    _, api_list = d.call("GET", "/api/v1/jobs")
    code, out, _ = cli(d, "jobs", "list", "-o", "jsonl")
    expect([json.loads(l) for l in out.splitlines()] == api_list["jobs"], out)
    code, out, _ = cli(d, "jobs", "list", "-o", "json")
    expect(json.loads(out) == {"jobs": api_list["jobs"]}, out)
    # get as a table.
    code, out, _ = cli(d, "jobs", "get", jid)
    fields = dict(l.split("\t", 1) for l in out.splitlines()[1:])
    expect(fields["id"] == jid and fields["state"] == "completed" and
           fields["reason"] == "reached max_steps 300", fields)
    # Checkpoints as CSV equal the API's.
    _, cps = d.call("GET", "/api/v1/jobs/%s/checkpoints" % jid)
    code, out, _ = cli(d, "jobs", "checkpoints", jid, "-o", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    expect(rows[0] == ["STEP", "NAME", "BYTES", "MTIME"] and
           [(int(r[0]), r[1], int(r[2])) for r in rows[1:]] ==
           [(c["global_step"], c["name"], c["bytes"]) for c in cps["checkpoints"]], out)
    code, out, _ = cli(d, "jobs", "checkpoints", jid, "-q")
    expect(out.split() == ["0", "100", "200", "300"], out)
    # Scalars.
    _, pts = d.call("GET", "/api/v1/jobs/%s/scalars?tag=loss&max_points=5" % jid)
    code, out, _ = cli(d, "jobs", "scalars", jid, "--tag", "loss", "--max-points", "5",
                       "-o", "json")
    expect(json.loads(out) == pts, out)
    code, out, _ = cli(d, "jobs", "scalars", jid, "--tag", "loss", "--max-points", "5")
    expect(out.splitlines()[0] == "STEP\tVALUE\tMIN\tMAX\tWALL_TIME" and
           [int(l.split("\t")[0]) for l in out.splitlines()[1:]] ==
           [p["step"] for p in pts["points"]], out)
    code, out, _ = cli(d, "jobs", "scalars", jid, "-q")
    expect("loss" in out.split() and "accuracy" in out.split(), out)
    # The latest evaluation (the evaluation hook's at the end): the API's object with -o json, a
    # metrics table, the per-class table and the confusion matrix otherwise.
    _, ev = d.call("GET", "/api/v1/jobs/%s/evaluation?split=validation" % jid)
    code, out, _ = cli(d, "jobs", "evaluation", jid, "--split", "validation", "-o", "json")
    expect(code == 0 and json.loads(out) == ev, out)
    expect(ev["step"] == 300 and sum(map(sum, ev["confusion_matrix"])) == ev["examples"] > 0, ev)
    code, out, _ = cli(d, "jobs", "evaluation", jid, "--split", "validation")
    lines = out.splitlines()
    expect(code == 0 and lines[0].startswith("validation split at global step 300") and
           "f1_macro\t%.4g" % ev["f1_macro"] in lines and
           "confusion matrix (rows: true class, columns: predicted)" in lines, out)
    # Without --split: the latest of any split (final_eval's test split, recorded last).
    code, out, _ = cli(d, "jobs", "evaluation", jid, "-o", "json")
    expect(code == 0 and json.loads(out)["split"] == "test", out)
    code, out, err = cli(d, "jobs", "evaluation", jid, "--split", "dev")
    expect(code == 2 and "--split: must be train, validation or test" in err, (code, out, err))
    code, out, err = cli(d, "jobs", "evaluation", jid, "--split", "train")
    expect(code == 1 and "no evaluation of the train split" in err, (code, out, err))
    # Logs: all, --tail, jsonl.
    log = api_log(d, jid)
    code, out, _ = cli(d, "jobs", "logs", jid)
    expect(out.splitlines() == log, out)
    code, out, _ = cli(d, "jobs", "logs", jid, "--tail", "2")
    expect(out.splitlines() == log[-2:], out)
    code, out, _ = cli(d, "jobs", "logs", jid, "-o", "jsonl", "--tail", "1")
    expect(json.loads(out) == {"line": len(log), "text": log[-1]}, out)
    # On an ended job follow and wait print and exit at once, with how it ended.
    t = time.time()
    code, out, _ = cli(d, "jobs", "logs", jid, "-f")
    expect(code == 0 and out.splitlines() == log and time.time() - t < 5, (code, out))
    code, out, _ = cli(d, "jobs", "wait", jid, "-q")
    expect(code == 0 and out == jid + "\n", (code, out))
    # export: the daemon's ONNX bytes, written whole.
    onnx = os.path.join(tmp, "a.onnx")
    code, out, err = cli(d, "jobs", "export", jid, "--step", "200", "-o", onnx)
    status, _, r = d.request("GET", "/api/v1/jobs/%s/model?format=onnx&step=200" % jid)
    expect(code == 0 and status == 200, (code, err))
    conn_bytes = open(onnx, "rb").read()
    expect(len(conn_bytes) > 1000 and conn_bytes[:2] == b"\x08\x07", "an ONNX file (IR 7)")
    # In a terminal: aligned columns, the state coloured; NO_COLOR turns colour off.
    code, out = in_pty(d, "%s jobs list" % shlex.quote(TRAININGD))
    expect(code == 0 and "\033[32mcompleted\033[0m" in out, repr(out))
    code, out = in_pty(d, "%s jobs list" % shlex.quote(TRAININGD), env=cli_env(d, NO_COLOR="1"))
    lines = out.splitlines()
    expect("\033[" not in out and lines[0].startswith("ID" + " " * (len(jid) - 2 + 2) + "NAME"),
           repr(out))
    expect(lines[1].startswith(jid + "  cli-a") and lines[0].index("STATE") ==
           lines[1].index("completed"), repr(out))
    print("submit -f (exit 0), list/get/checkpoints/scalars/evaluation/logs/wait/export, tables and "
          "json/jsonl/csv: ok")
    return jid


def check_failed_stopped_timeout_interrupt(d, tmp):
    # Failed: a learning rate that makes the loss NaN.
    path = write(os.path.join(tmp, "nan.json"),
                 spec("cli-nan", 300, optimizer={"type": "adam", "learning_rate": 3e38}))
    code, out, err = cli(d, "jobs", "submit", path, "--follow")
    expect(code == 1 and "NaN" in out, (code, out, err))
    # Usage: a spec that fails validation here (no request made) and one the daemon refuses.
    code, out, err = cli(d, "jobs", "submit", path, "--set", "model=vgg")
    expect(code == 2 and "invalid spec: model: unknown model preset" in err, (code, err))
    code, out, err = cli(d, "jobs", "submit", path, "--set", "dataset.name=no-such-data")
    expect(code == 2 and "dataset" in err, (code, err))
    # A long job: wait --timeout (124), Ctrl-C on logs -f (130), stop --wait (3).
    path = write(os.path.join(tmp, "long.json"), spec("cli-long", 1000000))
    code, out, err = cli(d, "jobs", "submit", path, "-q")
    jid = out.strip()
    expect(code == 0 and re.fullmatch(r"[a-z0-9]+", jid), (code, out, err))
    d.wait_state(jid, {"running"})
    t = time.time()
    code, out, err = cli(d, "jobs", "wait", jid, "--timeout", "1s")
    expect(code == 124 and 0.9 < time.time() - t < 10 and
           "Reattach with: trainingd jobs wait " + jid in err, (code, err))
    p = subprocess.Popen([TRAININGD, "jobs", "logs", jid, "-f"], env=cli_env(d),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    expect(p.returncode == 130 and "detached; job %s keeps running" % jid in err and
           "trainingd jobs logs -f " + jid in err and out.strip(), (p.returncode, err))
    expect(d.job(jid)["state"] == "running", "the job runs on after Ctrl-C")
    code, out, err = cli(d, "jobs", "stop", jid, "--wait", "-o", "json")
    expect(code == 3 and json.loads(out)["state"] == "stopped", (code, out, err))
    # resume -f: only the new lines, then exit 0.
    before = len(api_log(d, jid))
    step = d.job(jid)["global_step"]
    code, out, err = cli(d, "jobs", "resume", jid, "--max-steps", str(step + 200), "-f")
    expect(code == 0 and out.splitlines() == api_log(d, jid)[before:], (code, out, err))
    # delete: refused without --yes off a terminal, then done.
    code, _, err = cli(d, "jobs", "delete", jid)
    expect(code == 2 and "--yes" in err, err)
    code, out, _ = cli(d, "jobs", "delete", jid, "--yes", "-q")
    expect(code == 0 and out == jid + "\n" and d.call("GET", "/api/v1/jobs/" + jid)[0] == 404,
           out)
    code, _, err = cli(d, "jobs", "get", jid)
    expect(code == 1 and "does not exist" in err, err)
    print("failed (1), invalid spec (2), --timeout (124), Ctrl-C (130), stopped (3), "
          "resume -f, delete: ok")


def check_watch(d, tmp):
    path = write(os.path.join(tmp, "w.json"), spec("cli-watch", WATCH_STEPS))
    _, out, _ = cli(d, "jobs", "submit", path, "-q")
    jid = out.strip()
    # A terminal 120 columns wide: the full labels and a bar of 30.
    code, out = in_pty(d, "stty cols 120; %s jobs watch %s" % (shlex.quote(TRAININGD), jid))
    frames = [f.strip("\r\n") for f in out.split("\r\x1b[K") if f.strip()]
    expect(code == 0 and frames, repr(out[-500:]))
    bars = [f for f in frames if re.search(r"\[[#.]{30}\]\s+\d+%% step \d+/%d" % WATCH_STEPS, f)]
    expect(len(bars) >= 2, "a progress bar redrawn in place: %r" % frames[:5])
    last = frames[-1].strip()
    expect(re.match(r"completed \[#{30}\] 100%% step %d/%d loss \S+ accuracy \S+ "
                    r"examples/s \d+ ETA \S+$" % (WATCH_STEPS, WATCH_STEPS), last), repr(last))
    # The ETA needs the step rate over half a second; a sanitizer build's shorter job may not
    # last long enough to be sure of one.
    expect(SANITIZED or any(re.search(r"running .* ETA \d+m\d\ds", f) for f in frames),
           "an ETA while running")
    expect(out.count("\n") <= 2, "one line, redrawn in place: %r" % out[-300:])
    # Piped: plain lines, no bar.
    code, out, _ = cli(d, "jobs", "watch", jid)
    expect(code == 0 and out.startswith("completed step %d/%d loss " % (WATCH_STEPS, WATCH_STEPS)),
           out)
    print("watch: a progress bar in a pseudo-terminal (%d frames), plain lines when piped: ok"
          % len(bars))


def check_list_watch(d, tmp):
    """jobs list -w, piped: the list, then each job whose row changes, until Ctrl-C (130)."""
    p = subprocess.Popen([TRAININGD, "jobs", "list", "-w", "--limit", "5"], env=cli_env(d),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # listed and following
    path = write(os.path.join(tmp, "lw.json"), spec("cli-list-watch", 30))
    _, out, _ = cli(d, "jobs", "submit", path, "-q")
    jid = out.strip()
    d.wait_state(jid, {"completed"})
    _, out, _ = cli(d, "jobs", "delete", jid, "--yes", "-q")
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    expect(p.returncode == 130, (p.returncode, err))
    lines = out.splitlines()
    expect(lines and lines[0].split("\t")[:3] == ["ID", "NAME", "STATE"], lines[:3])
    mine = [l.split("\t") for l in lines[1:] if l.startswith(jid + "\t")]
    states = [row[2] for row in mine]
    # Each row as it changed, never the same row twice in a row (a row is the job as a GET
    # answers when the stream says it changed, so "queued" may already read "running"); the
    # last: deleted.
    expect(states and states[-1] == "deleted" and "completed" in states and
           all(a != b for a, b in zip(mine, mine[1:])) and
           states.index("completed") < states.index("deleted"), (states, out))
    code, _, err = cli(d, "jobs", "list", "-w", "-o", "json")
    expect(code == 2 and "--watch" in err, (code, err))
    # On a terminal: the table (redrawn on changes) until Ctrl-C.
    code, out = in_pty(d, "timeout --preserve-status -s INT 2 %s jobs list -w" %
                       shlex.quote(TRAININGD))
    expect(code == 130 and re.search(r"^ID\s+NAME\s+STATE", out, re.M), (code, out[-300:]))
    print("list -w: the list, then %s, Ctrl-C (130): ok" % " -> ".join(states))


def check_datasets(d, tmp):
    npz = os.path.join(tmp, "c.npz")
    with open(npz, "wb") as f:
        f.write(colour_npz())
    code, out, err = cli(d, "datasets", "upload", npz, "--name", "colours")
    expect(code == 0 and out.splitlines()[0] ==
           "NAME\tFORMAT\tSHAPE\tCLASSES\tTASKS\tTRAIN\tTEST\tBYTES\tCREATED", (code, out, err))
    row = out.splitlines()[1].split("\t")
    expect(row[:8] == ["colours", "npz", "8x8x3", "3", "classification", "540", "150",
                       str(os.path.getsize(npz))], row)
    rows = ["a,b,label"] + ["%d,%d,%s" % (i % 11, (i * 7) % 11, "big" if i % 11 + (i * 7) % 11 >
                                          10 else "small") for i in range(200)]
    train, test = os.path.join(tmp, "t.csv"), os.path.join(tmp, "e.csv")
    with open(train, "w") as f:
        f.write("\n".join(rows[:151]) + "\n")
    with open(test, "w") as f:
        f.write("\n".join(rows[:1] + rows[151:]) + "\n")
    code, out, err = cli(d, "datasets", "upload", train, "--name", "tab", "--test-file", test,
                         "--normalize", "standard", "--label-column", "label", "-o", "json")
    got = json.loads(out) if code == 0 else None
    expect(code == 0 and got["splits"]["test"] == 50 and got["preprocessing"]["kind"] ==
           "standard", (code, out, err))
    _, api_one = d.call("GET", "/api/v1/datasets/tab")
    expect(got == api_one, (got, api_one))
    code, out, err = cli(d, "datasets", "upload", train, "--name", "tab2", "--test-fraction", "0.5",
                         "-q")
    expect(code == 0 and out == "tab2\n", (code, out, err))
    code, out, err = cli(d, "datasets", "upload", train, "--name", "tab")
    expect(code == 1 and "exists" in err, (code, err))
    code, out, err = cli(d, "datasets", "upload", npz, "--name", "bad/name")
    expect(code == 2 and "name" in err, (code, err))
    code, out, err = cli(d, "datasets", "upload", os.path.join(tmp, "none.npz"), "--name", "x")
    expect(code == 2 and "cannot open" in err, (code, err))
    code, out, _ = cli(d, "datasets", "list", "-q")
    expect(out.split() == ["colours", "fashion-mnist", "tab", "tab2"], out)
    _, api_all = d.call("GET", "/api/v1/datasets")
    code, out, _ = cli(d, "datasets", "list", "-o", "jsonl")
    expect([json.loads(l) for l in out.splitlines()] == api_all["datasets"], out)
    code, out, _ = cli(d, "datasets", "get", "colours", "-o", "json")
    expect(json.loads(out) == d.call("GET", "/api/v1/datasets/colours")[1], out)
    code, out, _ = cli(d, "datasets", "delete", "tab2", "--yes")
    expect(code == 0 and d.call("GET", "/api/v1/datasets/tab2")[0] == 404, out)
    code, _, err = cli(d, "datasets", "get", "tab2")
    expect(code == 1 and "tab2" in err, err)
    print("datasets upload (npz, csv with a test file as multipart, csv), list, get, delete: ok")


def check_auth_and_unreachable(tmp):
    d = Daemon(TRAININGD, os.path.join(tmp, "auth"), env={"TRAININGD_TOKEN": TOKEN})
    try:
        code, _, err = cli(d, "jobs", "list")
        expect(code == 4 and "TRAININGD_TOKEN" in err, (code, err))
        code, _, err = cli(d, "jobs", "list", env=cli_env(d, TRAININGD_TOKEN="wrong"))
        expect(code == 4, (code, err))
        code, out, err = cli(d, "jobs", "list", env=cli_env(d, TRAININGD_TOKEN=TOKEN))
        expect(code == 0 and out.startswith("ID\t"), (code, err))
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        code, out, err = cli(d, "jobs", "list", "--token-file", token_file)
        expect(code == 0, (code, err))
        code, out, err = cli(d, "datasets", "list", env=cli_env(d, TRAININGD_TOKEN_FILE=token_file))
        expect(code == 0, (code, err))
        code, _, err = cli(d, "jobs", "list", "--token", TOKEN)
        expect(code == 2 and "--token: unknown flag" in err, "no token on the command line")
    finally:
        d.stop()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    for args in (["jobs", "list"], ["jobs", "wait", "x"], ["jobs", "logs", "x", "-f"],
                 ["datasets", "list"]):
        t = time.time()
        code, _, err = cli(None, *args, "--server", "http://127.0.0.1:%d" % port)
        expect(code == 5 and "unreachable" in err and time.time() - t < 5, (args, code, err))
    print("401 (4), a token from TRAININGD_TOKEN / --token-file / TRAININGD_TOKEN_FILE, "
          "unreachable (5): ok")


def check_follow_across_kill9(tmp):
    data = os.path.join(tmp, "k")
    d = Daemon(TRAININGD, data)
    port = d.port
    path = write(os.path.join(tmp, "k.json"), spec("cli-kill", KILL_STEPS))
    code, out, _ = cli(d, "jobs", "submit", path, "-q")
    jid = out.strip()
    # Started once the job has lines: a client that printed them and then replayed the stream
    # from its start would print them twice.
    deadline = time.time() + 60
    while len(api_log(d, jid)) < 3:
        expect(time.time() < deadline, "the job logs nothing")
        time.sleep(0.02)
    out_path = os.path.join(tmp, "follow.out")
    with open(out_path, "w") as out_file:
        p = subprocess.Popen([TRAININGD, "jobs", "logs", jid, "-f"], env=cli_env(d),
                             stdout=out_file, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while open(out_path).read().count("\n") < 12:
        expect(time.time() < deadline and p.poll() is None, "logs -f printed too little")
        time.sleep(0.05)
    d.kill()
    time.sleep(1.0)  # the client is reconnecting to nothing
    d = Daemon(TRAININGD, data, "--listen", "127.0.0.1:%d" % port)
    try:
        _, err = p.communicate(timeout=120)
        printed = open(out_path).read().splitlines()
        job = d.wait_state(jid, {"completed", "failed"})
        expect(p.returncode == 0 and job["state"] == "completed", (p.returncode, err, job))
        log = api_log(d, jid)
        expect(printed == log, "logs -f across kill -9: %d lines printed, %d in the log;\n"
               "first difference: %r" % (len(printed), len(log), next(
                   ((i, a, b) for i, (a, b) in enumerate(zip(printed, log)) if a != b), None)))
        # The kill came mid-run: the restarted daemon resumed the job from a checkpoint, and
        # the client printed the old run's lines and the new one's.
        restored = [i for i, l in enumerate(log) if "Restoring parameters from" in l]
        expect(restored and restored[-1] >= 12, "the job resumed after the restart: %r" % restored)
    finally:
        d.stop()
    print("logs -f across kill -9 and a restart: %d lines, none lost or repeated, exit 0: ok"
          % len(printed))


class DroppingProxy:
    """A TCP proxy to daemon d that goes away once, as a restarting daemon does: from the first
    request whose request line starts with `trigger`, for `down` seconds, every connection is
    closed unanswered. Counts them in `dropped`."""

    def __init__(self, d, trigger, down):
        self.daemon_port, self.trigger, self.down = d.port, trigger, down
        self.until, self.dropped, self.lock = None, 0, threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.listener.close()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(65536)
            if not chunk:
                conn.close()
                return
            head += chunk
        with self.lock:
            now = time.time()
            if self.until is None and head.startswith(self.trigger):
                self.until = now + self.down
            drop = self.until is not None and now < self.until
            self.dropped += drop
        if drop:
            conn.close()
            return
        # The daemon answers only its own Host.
        head = head.replace(b"Host: 127.0.0.1:%d" % self.port,
                            b"Host: 127.0.0.1:%d" % self.daemon_port)
        up = socket.create_connection(("127.0.0.1", self.daemon_port))
        up.sendall(head)
        socks = [conn, up]
        try:
            while True:
                readable, _, _ = select.select(socks, [], [], 30)
                if not readable:
                    return
                for r in readable:
                    data = r.recv(65536)
                    if not data:
                        return
                    (up if r is conn else conn).sendall(data)
        except OSError:
            return
        finally:
            conn.close()
            up.close()


def check_follow_rides_out_a_drop_after_the_first_answer(d):
    """`logs -f` has read the log so far when the daemon goes away, just as the follow takes its
    first look: a restart to ride out (the command had its answer), not exit 5."""
    status, job = d.call("POST", "/api/v1/jobs", spec("cli-drop", 200))
    expect(status == 201, job)
    d.wait_state(job["id"], {"completed"})
    proxy = DroppingProxy(d, b"GET /api/v1/jobs/%s " % job["id"].encode(), 1.5)
    try:
        t = time.time()
        code, out, err = cli(d, "jobs", "logs", job["id"], "-f",
                             env=cli_env(d, TRAININGD_URL="http://127.0.0.1:%d" % proxy.port))
        took = time.time() - t
    finally:
        proxy.close()
    expect(code == 0 and proxy.dropped >= 1 and took >= 1.5, (code, err, proxy.dropped, took))
    expect(out.splitlines() == api_log(d, job["id"]), "every line once: %r" % out[-500:])
    print("logs -f: the daemon away after the log's first page, ridden out (%d connections "
          "dropped), exit 0: ok" % proxy.dropped)


def check_completion(d):
    jobs = {j["id"] for j in d.call("GET", "/api/v1/jobs")[1]["jobs"]}
    offered = completions(TRAININGD, d, ["trainingd", "jobs", "s"],
                          ["trainingd", "jobs", "list", "--st"], ["trainingd", "da"],
                          ["trainingd", "jobs", "get", ""], ["trainingd", "jobs", "list", ""])
    expect(offered[:3] == [{"submit", "stop", "set-priority", "scalars"}, {"--state"},
                           {"datasets"}], offered)
    # A verb's operand is one of the daemon's jobs (list takes none).
    expect(jobs and offered[3] == jobs and offered[4] == set(), (offered, jobs))
    code, out2, _ = cli(d, "completion", "zsh")
    expect(code == 0 and "bashcompinit" in out2 and "complete -F _trainingd" in out2, out2)
    print("completion bash: 'jobs s' -> %s, 'jobs get' -> %d ids: ok"
          % (" ".join(sorted(offered[0])), len(jobs)))


def main():
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="trainingd-cli-") as tmp:
        d = Daemon(TRAININGD, os.path.join(tmp, "data"))
        try:
            check_help_and_usage(d)
            check_completed_and_outputs(d, tmp)
            check_failed_stopped_timeout_interrupt(d, tmp)
            check_watch(d, tmp)
            check_list_watch(d, tmp)
            check_datasets(d, tmp)
            check_completion(d)
            check_follow_rides_out_a_drop_after_the_first_answer(d)
        finally:
            d.stop()
        check_auth_and_unreachable(tmp)
        check_follow_across_kill9(tmp)
    print("cli_test: all ok (%.1f s)" % (time.time() - started))


if __name__ == "__main__":
    main()
