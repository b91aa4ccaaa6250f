"""Writes a completed ASHA experiment of N trials into a stopped daemon's SQLite store, for the
experiment page's browser test (experiment_page_test.mjs): the rows the daemon would have
written had it run the search, without running it.

    experiment_fixture.py DB SOURCE_EXPERIMENT_ID NEW_ID [TRIALS]

SOURCE_EXPERIMENT_ID is a real experiment in DB (the test's small ASHA search): its canonical spec
and a trial job's row are the templates, so the stored spec is one the daemon reloads
(api::ParseExperimentSpec). The new one: searcher.max_trials TRIALS, rungs 25, 100, 400, 1600
(eta 4), one bracket; synchronous successive halving over a made-up response surface of the space (learning
rate best near 3e-3 for adam and 3e-2 for sgd, batch size mattering a little, seeded noise);
every trial a completed job with its rung results, the top quarter of each rung promoted; the
trials that reached rung 1 also get a validation/accuracy series (a point every 25 steps). The
series are under 100 points and the page asks for ~500, so the scalar queries return raw points
and never read scalar_rollups: none are written. experiment_decisions are left out (nothing reads
them but the daemon's own audit). Prints a JSON summary.
"""
import json
import math
import random
import sqlite3
import sys

ETA = 4
RUNGS = [25, 100, 400, 1600]


def surface(hp, rng):
    """A trial's accuracy after s steps: its ceiling and how fast it gets there."""
    lr = hp["optimizer.learning_rate"]
    best = math.log10(3e-3 if hp["optimizer.type"] == "adam" else 3e-2)
    miss = abs(math.log10(lr) - best)
    ceiling = 0.92 - 0.11 * miss * miss - 0.0004 * abs(hp["batch_size"] - 64) + rng.gauss(0, 0.01)
    ceiling = max(0.1, min(0.925, ceiling))
    speed = 40 + 400 * miss + rng.uniform(0, 60)
    return lambda s: 0.1 + (ceiling - 0.1) * (1 - math.exp(-s / speed))


def main():
    db_path, source, new_id = sys.argv[1], sys.argv[2], sys.argv[3]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    rng = random.Random(25)
    db = sqlite3.connect(db_path)
    db.row_factory = sqlite3.Row
    (spec_json,) = db.execute("SELECT spec_json FROM experiments WHERE id = ?", (source,)).fetchone()
    job = dict(db.execute("SELECT * FROM jobs WHERE experiment_id = ? ORDER BY trial_index LIMIT 1",
                          (source,)).fetchone())
    spec = json.loads(spec_json)
    spec["name"] = "generated-%d" % n
    spec["base_job"]["max_steps"] = RUNGS[-1]
    spec["searcher"].update({"max_trials": n, "max_concurrent_trials": 4, "min_steps": RUNGS[0],
                             "max_steps": RUNGS[-1], "reduction_factor": ETA, "brackets": 1})
    spec["budget"] = {"max_seconds": 0.0, "max_steps": 150000}
    space = spec["space"]
    metric = spec["searcher"]["metric"]
    job_spec = json.loads(job["spec_json"])

    def sample():
        lr = space["optimizer.learning_rate"]
        bs = space["batch_size"]
        return {
            "batch_size": rng.randint(bs["min"], bs["max"]),
            "optimizer.learning_rate": float("%.6g" % math.exp(
                rng.uniform(math.log(lr["min"]), math.log(lr["max"])))),
            "optimizer.type": rng.choice(space["optimizer.type"]["values"]),
        }

    t0 = 1795700000.0
    clock = [t0]

    def tick(steps):  # 8 ms a step, 4 trials at once
        clock[0] += steps * 0.008 / 4
        return clock[0]

    trials = []
    for i in range(n):
        hp = sample()
        trials.append({"index": i, "hp": hp, "curve": surface(hp, rng), "results": [],
                       "created": tick(0) + 0.001 * i, "steps": 0})
    # Synchronous successive halving: every trial to rung 0, the best quarter on to the next.
    at = trials
    for k, steps in enumerate(RUNGS):
        for t in at:
            t["steps"] = steps
            t["results"].append((round(t["curve"](steps), 4), tick(steps - (RUNGS[k - 1] if k else 0))))
        at = sorted(at, key=lambda t: (-t["results"][k][0], t["index"]))[:len(at) // ETA]
    finished = clock[0]
    best = max(trials, key=lambda t: (t["results"][-1][0] if len(t["results"]) == len(RUNGS) else -1,
                                      -t["index"]))

    cols = list(job.keys())
    steps_used = 0
    for t in trials:
        i = t["index"]
        job_id = "jgen%013d" % i
        hp_json = json.dumps(t["hp"], separators=(",", ":"), sort_keys=True)
        js = json.loads(json.dumps(job_spec))
        js["name"] = "%s-trial-%d" % (spec["name"], i)
        js["batch_size"] = t["hp"]["batch_size"]
        js["optimizer"]["type"] = t["hp"]["optimizer.type"]
        js["optimizer"]["learning_rate"] = t["hp"]["optimizer.learning_rate"]
        js["max_steps"] = t["steps"]
        end = t["results"][-1][1]
        row = dict(job)
        row.update({
            "id": job_id, "name": js["name"], "spec_json": json.dumps(js), "state": "completed",
            "created_at": t["created"], "started_at": t["created"], "finished_at": end,
            "global_step": t["steps"], "max_steps": t["steps"], "error": "",
            "reason": "reached max_steps %d" % t["steps"],
            "checkpoint_dir": job["checkpoint_dir"].rsplit("/", 1)[0] + "/" + job_id,
            "crash_count": 0, "experiment_id": new_id, "trial_index": i,
            "hyperparameters_json": hp_json,
        })
        db.execute("INSERT INTO jobs (%s) VALUES (%s)" % (", ".join(cols), ", ".join("?" * len(cols))),
                   [row[c] for c in cols])
        done = len(t["results"]) == len(RUNGS)
        db.execute(
            "INSERT INTO trials (experiment_id, trial_index, job_id, hyperparameters_json, seed, "
            "state, target_steps, restarts, reason, checkpoints_kept, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
            (new_id, i, job_id, hp_json, rng.randrange(2**31), "completed" if done else "pruned",
             t["steps"], "" if done else "its rung cannot promote it any more",
             1 if t is best else 0, t["created"]))
        for k, (m, when) in enumerate(t["results"]):
            db.execute("INSERT INTO rung_results (experiment_id, trial_index, rung, step, metric, "
                       "recorded_at) VALUES (?, ?, ?, ?, ?, ?)", (new_id, i, k, RUNGS[k], m, when))
        steps_used += t["steps"]
        if len(t["results"]) > 1:
            cur = db.execute("INSERT INTO series (job_id, tag) VALUES (?, ?)", (job_id, metric))
            sid = cur.lastrowid
            for s in range(25, t["steps"] + 1, 25):
                noise = rng.gauss(0, 0.004)
                v = t["curve"](s) + noise
                for k, steps in enumerate(RUNGS):
                    if steps == s:
                        v = t["results"][k][0]  # the rung result is the series' point there
                db.execute("INSERT INTO scalars (series_id, step, wall_time, value) "
                           "VALUES (?, ?, ?, ?)", (sid, s, t["created"] + s * 0.008, v))
    db.execute(
        "INSERT INTO experiments (id, name, spec_json, state, created_at, finished_at, error, "
        "reason, seconds_used, run_started_at, peak_disk_bytes) "
        "VALUES (?, ?, ?, 'completed', ?, ?, '', 'every trial is done', ?, 0, ?)",
        (new_id, spec["name"], json.dumps(spec), t0, finished, finished - t0, 25 * 2**20))
    db.commit()
    counts = [sum(1 for t in trials if len(t["results"]) > k) for k in range(len(RUNGS))]
    print(json.dumps({"id": new_id, "trials": n, "rung_trials": counts, "steps_used": steps_used,
                      "best": {"trial": best["index"], "metric": best["results"][-1][0]},
                      "series": sum(1 for t in trials if len(t["results"]) > 1)}))


if __name__ == "__main__":
    main()
