#!/usr/bin/python3
"""Data directories that earlier releases wrote, opened by this trainingd (docs/operations.md#upgrading).

    old_data_test.py TRAININGD OLD_DATA_DIR

OLD_DATA_DIR is tests/e2e/old_data: one folder per release, named by its commit, holding
data.tar.gz as make_old_data.py left it with that release's trainingd (README.md there says
how). Each holds a completed job, a stopped one, one that was running when the daemon was killed
with SIGKILL and one still queued then, and manifest.json: what the release's database held.
For each, on a copy, this trainingd must:

- start (migrating an older schema after a backup that still holds the old version) and write
  the directory's format marker;
- show every job with its state, step, checkpoints and every point of every series as the
  release left them;
- run the interrupted and the queued job to completion, and resume the stopped one to completion,
  with every series monotonic and the points recorded before the upgrade unchanged; when this
  build computes the release's bits (its completed job run again gives the same series), the
  resumed jobs also record again the same values after their checkpoints, and the stopped one
  ends with the same losses as its spec run from scratch now (exact resume across the upgrade);
- back up while serving (`db backup`), refuse `db restore` while serving; and, for an older
  release, `db migrate --dry-run` changes nothing, `db migrate` migrates, `db restore` of the
  backup brings the old version back and a start migrates it again;
- refuse, with exit code 6 and nothing changed, the directory once its database claims a newer
  schema or its format marker a newer format.
"""
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainingd_e2e import Daemon, expect  # noqa: E402

EXIT_NEWER = 6


def schema_version(db):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    v = con.execute("PRAGMA user_version").fetchone()[0]
    con.close()
    return v


def set_user_version(db, v):
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version = %d" % v)
    con.commit()
    con.close()


def run(trainingd, *args):
    p = subprocess.run([trainingd] + list(args), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def series(d, job_id):
    status, tags = d.call("GET", "/api/v1/jobs/%s/scalars/tags" % job_id)
    expect(status == 200, (status, tags))
    out = {}
    for tag in tags["tags"]:
        status, s = d.call("GET", "/api/v1/jobs/%s/scalars?tag=%s&max_points=100000" %
                           (job_id, tag.replace("/", "%2F")))
        expect(status == 200, (status, s))
        out[tag] = [[p["step"], p["value"]] for p in s["points"]]
    return out


def checkpoints(d, job_id):
    status, c = d.call("GET", "/api/v1/jobs/%s/checkpoints" % job_id)
    expect(status == 200, (status, c))
    return sorted(x["global_step"] for x in c["checkpoints"])


def submit_copy(d, job_id, name):
    """Submits the spec of job `job_id` again under `name`; returns the new job's id."""
    status, job = d.call("GET", "/api/v1/jobs/" + job_id)
    expect(status == 200, (status, job))
    status, new = d.call("POST", "/api/v1/jobs", dict(job["spec"], name=name))
    expect(status == 201, (status, new))
    return new["id"]


def extract(tarball, into):
    with tarfile.open(tarball) as tar:
        tar.extractall(into)
    with open(os.path.join(into, "manifest.json")) as f:
        return json.load(f)


def check_release(trainingd, release, tarball, tmp, current):
    where = os.path.join(tmp, release)
    m = extract(tarball, where)
    data = os.path.join(where, "data")
    db = os.path.join(data, "trainingd.db")
    old = m["schema_version"]
    jobs = m["jobs"]
    t0 = time.time()

    d = Daemon(trainingd, data, "--data-root", os.path.join(tmp, "none"),
               "--max-concurrent-jobs", "2")
    try:
        backups = sorted(glob.glob(db + ".before-v*"))
        if old < current:
            expect(d.wait_log("migrated the database to schema version %d" % current, 10), d.log)
            expect(len(backups) == 1 and backups[0].startswith(db + ".before-v%d-" % current),
                   backups)
            expect(schema_version(backups[0]) == old, backups)
        else:
            expect(not backups and "migrat" not in d.log, (backups, d.log))
        with open(os.path.join(data, "format.json")) as f:
            marker = json.load(f)
        expect(marker["format"] == 1 and marker["store_schema"] == current, marker)

        status, listed = d.call("GET", "/api/v1/jobs?limit=100")
        expect(status == 200, (status, listed))
        by_name = {j["name"]: j for j in listed["jobs"]}
        expect(set(by_name) == set(jobs), (sorted(by_name), sorted(jobs)))
        for name in ("done", "stopped"):
            j, want = by_name[name], jobs[name]
            expect(j["id"] == want["id"] and j["state"] == want["state"] and
                   j["global_step"] == want["global_step"], (name, j, want))
            expect(checkpoints(d, j["id"]) == want["checkpoints"], (name, want["checkpoints"]))
            expect(series(d, j["id"]) == want["series"], (name, "series differ"))

        # While it serves: a consistent backup, and no restore.
        copy = os.path.join(where, "while-serving.db")
        code, out = run(trainingd, "db", "backup", copy, "--data-dir", data)
        expect(code == 0 and schema_version(copy) == current, (code, out))
        code, out = run(trainingd, "db", "restore", copy, "--data-dir", data)
        expect(code == 1 and "stop it first" in out, (code, out))

        # Does this build compute what the release computed? The release's completed job run
        # again from scratch: the same bits in every per-step series, or the values after the
        # checkpoints cannot be compared with the release's.
        fresh_done = submit_copy(d, jobs["done"]["id"], "done-again")
        d.wait_state(fresh_done, {"completed", "failed"}, timeout=120)
        again = series(d, fresh_done)
        same_bits = all(again.get(t) == v for t, v in jobs["done"]["series"].items()
                        if t != "global_step/sec")
        if not same_bits:
            print("%s: this build's numerics differ from the release's (the same spec gives other "
                  "losses): values after the checkpoints are not compared" % release)

        stopped = jobs["stopped"]["id"]
        status, body = d.call("POST", "/api/v1/jobs/%s/resume" % stopped, {})
        expect(status == 202, (status, body))
        for name, want in jobs.items():
            j = d.wait_state(want["id"], {"completed", "failed", "stopped"}, timeout=120)
            expect(j["state"] == "completed" and j["global_step"] == want["max_steps"],
                   (name, j["state"], j["global_step"], j.get("error")))
            got = series(d, want["id"])
            for tag, points in got.items():
                steps = [p[0] for p in points]
                expect(steps == sorted(set(steps)), (name, tag, "not monotonic"))
            # Every point recorded before the upgrade is still there with its value: those up to
            # the checkpoint the job resumed from were kept, and the per-step summaries after it
            # were dropped and recorded again by the resumed run -- the same values at the same
            # steps, resume being exact. (Points a kill -9 kept from being committed were never
            # recorded: a killed job's series may have a gap before its checkpoint.)
            # Evaluations run every N steps of a run, so a resumed run evaluates at other steps:
            # theirs are compared up to the checkpoint; global_step/sec is a timing.
            kept = max([c for c in want["checkpoints"] if c <= want["global_step"]], default=0)
            for tag, before in want["series"].items():
                if tag == "global_step/sec":
                    continue
                if "/" in tag or not same_bits:
                    before = [p for p in before if p[0] <= kept]
                have = {p[0]: p[1] for p in got.get(tag, [])}
                missing = [p for p in before if have.get(p[0]) != p[1]]
                expect(not missing, (name, tag, "points recorded before the upgrade changed",
                                     missing[:5]))

        # Exact resume across the upgrade: the stopped job, resumed from the old release's
        # checkpoint, ends where the same spec run from scratch by this build ends.
        if same_bits:
            fresh = submit_copy(d, stopped, "fresh")
            d.wait_state(fresh, {"completed", "failed"}, timeout=120)
            a, b = series(d, stopped), series(d, fresh)
            for tag in ("test/loss", "test/accuracy"):  # the final evaluation, at max_steps
                expect(a[tag][-1] == b[tag][-1] and a[tag][-1][0] == jobs["stopped"]["max_steps"],
                       (release, tag, a[tag], b[tag]))
            # Summaries fall every N steps of a run: the steps both runs recorded (none when the
            # stop came between two of them).
            at = {p[0]: p[1] for p in b["loss"]}
            common = [p for p in a["loss"] if p[0] in at and p[0] > jobs["stopped"]["global_step"]]
            expect(all(at[p[0]] == p[1] for p in common), (release, "loss", common[:3]))
    finally:
        code, log = d.stop()
    expect(code == 0, (code, log))

    code, out = run(trainingd, "db", "status", "--data-dir", data)
    expect(code == 0 and "schema version %d" % current in out, (code, out))

    # Newer than this build: refused with exit code 6, nothing changed.
    set_user_version(db, current + 1)

    def files():  # SQLite's -wal and -shm come and go with any reader
        return sorted(f for f in os.listdir(data) if not f.endswith(("-wal", "-shm")))
    before = files()
    d_code = subprocess.run([trainingd, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
                            capture_output=True, text=True, timeout=60)
    expect(d_code.returncode == EXIT_NEWER and "newer than this trainingd" in d_code.stderr,
           (d_code.returncode, d_code.stderr))
    code, out = run(trainingd, "db", "migrate", "--data-dir", data)
    expect(code == EXIT_NEWER, (code, out))
    expect(files() == before and schema_version(db) == current + 1,
           ("a refused start changed the directory", before, files()))
    set_user_version(db, current)
    with open(os.path.join(data, "format.json"), "w") as f:
        json.dump({"format": 2, "written_by": "trainingd 99"}, f)
    d_code = subprocess.run([trainingd, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
                            capture_output=True, text=True, timeout=60)
    expect(d_code.returncode == EXIT_NEWER and "format 2" in d_code.stderr,
           (d_code.returncode, d_code.stderr))

    if old < current:
        check_db_commands(trainingd, tarball, os.path.join(tmp, release + "-db"), old, current)
    print("%s: schema version %d -> %d, %d jobs, %.1f s" % (release, old, current, len(jobs),
                                                            time.time() - t0))


def check_db_commands(trainingd, tarball, where, old, current):
    """`db migrate --dry-run`, `db migrate`, `db restore` of the backup, and a start after it, on
    another copy of an older release's directory."""
    m = extract(tarball, where)
    data = os.path.join(where, "data")
    db = os.path.join(data, "trainingd.db")
    code, out = run(trainingd, "db", "migrate", "--dry-run", "--data-dir", data)
    expect(code == 0 and "would run" in out and ("  %d: " % current) in out, (code, out))
    expect(schema_version(db) == old and not glob.glob(db + ".before-v*"), "a dry run changed it")
    code, out = run(trainingd, "db", "migrate", "--data-dir", data)
    expect(code == 0 and "migrated to schema version %d" % current in out, (code, out))
    expect(schema_version(db) == current, out)
    backups = glob.glob(db + ".before-v%d-*" % current)
    expect(len(backups) == 1 and schema_version(backups[0]) == old, backups)
    code, out = run(trainingd, "db", "migrate", "--data-dir", data)
    expect(code == 0 and "up to date" in out, (code, out))
    code, out = run(trainingd, "db", "restore", backups[0], "--data-dir", data)
    expect(code == 0 and "restored" in out, (code, out))
    expect(schema_version(db) == old, "restore did not bring the old version back")
    kept = glob.glob(db + ".before-restore-*")
    expect(len(kept) == 1 and schema_version(kept[0]) == current, kept)
    d = Daemon(trainingd, data, "--data-root", os.path.join(where, "none"))
    try:
        expect(d.wait_log("migrated the database to schema version %d" % current, 10), d.log)
        status, listed = d.call("GET", "/api/v1/jobs?limit=100")
        expect(status == 200 and {j["name"] for j in listed["jobs"]} == set(m["jobs"]), listed)
    finally:
        code, log = d.stop()
    expect(code == 0, (code, log))
    code, out = run(trainingd, "db", "restore", os.path.join(where, "manifest.json"),
                    "--data-dir", data)
    expect(code == 1 and "manifest.json" in out, (code, out))


def main():
    trainingd, old_data = sys.argv[1], sys.argv[2]
    releases = sorted(r for r in os.listdir(old_data)
                      if os.path.isfile(os.path.join(old_data, r, "data.tar.gz")))
    expect(releases, "no data directories in " + old_data)
    # The current schema version, as a fresh directory gets it.
    with tempfile.TemporaryDirectory() as tmp:
        d = Daemon(trainingd, os.path.join(tmp, "fresh"))
        d.stop()
        current = schema_version(os.path.join(tmp, "fresh", "trainingd.db"))
    with tempfile.TemporaryDirectory() as tmp:
        for release in releases:
            check_release(trainingd, release, os.path.join(old_data, release, "data.tar.gz"), tmp,
                          current)
    print("old data directories: %d releases opened" % len(releases))


if __name__ == "__main__":
    main()
