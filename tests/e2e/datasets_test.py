"""Datasets over real HTTP (docs/data.md): files that real NumPy wrote, uploaded to `trainingd
serve`, trained on, and refused when they are wrong -- every refusal a 4xx naming what is wrong,
with nothing left on disk and the daemon still up.

Usage: /usr/bin/python3 datasets_test.py TRAININGD   (Debian's python3-numpy)
"""
import hashlib
import io
import os
import socket
import sys
import tempfile
import time
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainingd_e2e import Daemon, expect  # noqa: E402

TRAININGD = sys.argv[1]
MAX_UPLOAD = 8 << 20  # the daemon's max_dataset_bytes here


def npz_bytes(compressed=False, **arrays):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def colour_arrays(n_train=300, n_test=90, seed=1):
    """Images whose class is the colour channel that carries the signal."""
    rng = np.random.default_rng(seed)

    def make(n):
        y = rng.integers(0, 3, n).astype(np.uint8)
        x = rng.integers(0, 60, (n, 8, 8, 3)).astype(np.uint8)
        for i, c in enumerate(y):
            x[i, :, :, c] += 150
        return x, y
    x_train, y_train = make(n_train)
    x_test, y_test = make(n_test)
    return dict(x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)


def upload(d, name, body, fmt="npz", query="", headers=None):
    h = {"Content-Type": "application/octet-stream"}
    h.update(headers or {})
    return d.call("POST", "/api/v1/datasets?name=%s&format=%s%s" % (name, fmt, query), body,
                  headers=h)


def multipart(parts, boundary="trainingd-e2e-7d1f"):
    """A multipart/form-data body of (name, bytes) parts, as curl -F writes it."""
    body = b""
    for name, data in parts:
        body += (b"--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s.csv\"\r\n"
                 b"Content-Type: text/csv\r\n\r\n" % (boundary.encode(), name.encode(),
                                                        name.encode()))
        body += data + b"\r\n"
    body += b"--%s--\r\n" % boundary.encode()
    return body, {"Content-Type": "multipart/form-data; boundary=" + boundary}


def leftovers(datasets_dir):
    """What an interrupted or refused upload could have left."""
    return [n for n in os.listdir(datasets_dir) if n.startswith(".")]


def lying_header_npz():
    """x_train.npy's header says 100 images; its data holds 10."""
    arrays = colour_arrays()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, a in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, a)
            data = member.getvalue()
            if name == "x_train":
                small = io.BytesIO()
                np.lib.format.write_array(small, a[:10])
                data = small.getvalue().replace(b"(10, 8, 8, 3)", b"(100, 8, 8, 3)")
            z.writestr(name + ".npy", data)
    return buf.getvalue()


def zip_bomb_npz():
    """x_train.npy declares 1 GB of uint8 and inflates to it from about 1 MB."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|u1", "fortran_order": False, "shape": (1 << 30 // 64, 8, 8)})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("x_train.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            zeros = bytes(1 << 24)
            for _ in range(64):
                f.write(zeros)
        for name in ("y_train", "x_test", "y_test"):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.zeros(4 if name != "x_test" else (4, 8, 8),
                                                       np.uint8))
            z.writestr(name + ".npy", member.getvalue())
    return buf.getvalue()


def bad_uploads():
    """(what, body, format, query, status, what the message must name)."""
    good = colour_arrays()
    nan = dict(good, x_train=np.where(np.arange(300)[:, None] == 7, np.nan,
                                      np.ones((300, 5), np.float32)).astype(np.float32),
               x_test=np.ones((90, 5), np.float32))
    negative = dict(good, y_train=good["y_train"].astype(np.int8))
    negative["y_train"][3] = -1
    huge = dict(good, y_train=good["y_train"].astype(np.int32))
    huge["y_train"][5] = 100000
    short = dict(good, y_train=good["y_train"][:299])
    fortran = dict(good, x_train=np.asfortranarray(good["x_train"]))
    objects = dict(good, y_train=np.array([{"a": 1}] * 300, dtype=object))
    whole = npz_bytes(**good)
    csv_ok = "f1,f2,label\n" + "".join("%d,%d,%s\n" % (i, i * 2, "ab"[i % 2]) for i in range(40))
    return [
        ("a truncated zip", whole[:len(whole) // 2], "npz", "", 400, ""),
        ("not a zip at all", b"hello, world\n" * 100, "npz", "", 400, ""),
        ("a zip bomb", zip_bomb_npz(), "npz", "", 400, "x_train"),
        ("a header that lies about its shape", lying_header_npz(), "npz", "", 400, "x_train"),
        ("object dtype, pickled", npz_bytes(**objects), "npz", "", 400, "y_train"),
        ("Fortran order", npz_bytes(**fortran), "npz", "", 400, "x_train"),
        ("a NaN feature", npz_bytes(**nan), "npz", "", 400, "x_train"),
        ("a negative label", npz_bytes(**negative), "npz", "", 400, "y_train"),
        ("a huge label", npz_bytes(**huge), "npz", "", 400, "y_train"),
        ("counts that do not match", npz_bytes(**short), "npz", "", 400, "y_train"),
        ("ragged CSV rows", (csv_ok + "1,2\n").encode(), "csv", "", 400, "line 42"),
        ("CSV that is not UTF-8", (csv_ok + "3,4,caf\xe9\n").encode("latin-1"), "csv", "", 400,
         "UTF-8"),
        ("duplicate CSV columns", ("f1,f1,label\n1,2,a\n3,4,b\n").encode(), "csv", "", 400, "f1"),
        ("a CSV without its label column", csv_ok.encode(), "csv", "&label_column=kind", 400,
         "kind"),
        ("an unknown format", whole, "parquet", "", 400, "format"),
        ("an unknown parameter", csv_ok.encode(), "csv", "&colour=red", 400,
         "colour: unknown parameter; known: name, format, label_column, test_fraction, "
         "split_seed, normalize, categorical, number, ignore, missing_values, impute, max_levels, "
         "missing_indicator, hash_buckets"),
        ("a bad test_fraction", csv_ok.encode(), "csv", "&test_fraction=1.5", 400,
         "test_fraction"),
        ("over max_dataset_bytes", b"x" * (MAX_UPLOAD + 1), "npz", "", 413, "max_dataset_bytes"),
    ]


def disconnect_mid_upload(d):
    """A client that sends half its body and goes away."""
    s = socket.create_connection(("127.0.0.1", d.port))
    s.sendall(("POST /api/v1/datasets?name=gone&format=npz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
               "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" %
               (d.port, 6 << 20)).encode())
    s.sendall(b"\0" * (3 << 20))
    time.sleep(0.3)
    s.close()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = os.path.join(tmp, "var")
        datasets_dir = os.path.join(data_dir, "datasets")
        d = Daemon(TRAININGD, data_dir, config={"max_dataset_bytes": MAX_UPLOAD})
        try:
            # --- a good upload, and what it says of itself
            body = npz_bytes(compressed=True, **colour_arrays())
            status, ds = upload(d, "colours", body)
            expect(status == 201, (status, ds))
            expect(ds["sha256"] == hashlib.sha256(body).hexdigest(), ds)
            expect(ds["bytes"] == len(body) and ds["format"] == "npz", ds)
            expect(ds["example_shape"] == [8, 8, 3] and ds["num_classes"] == 3, ds)
            expect(ds["class_names"] == ["0", "1", "2"], ds)
            expect(ds["splits"] == {"train": 270, "validation": 30, "test": 90}, ds)
            expect(ds["preprocessing"]["kind"] == "scale_255", ds)
            expect(ds["created_at"] > 1e9 and not ds["read_only"], ds)
            status, listed = d.call("GET", "/api/v1/datasets")
            names = {x["name"]: x for x in listed["datasets"]}
            expect("colours" in names and names["fashion-mnist"]["read_only"], listed)
            expect(d.call("GET", "/api/v1/datasets/colours") == (200, ds), "GET one")
            expect(d.call("GET", "/api/v1/datasets/nope")[0] == 404, "unknown name")

            # --- immutable: the name is taken, and so are the data root's
            status, err = upload(d, "colours", body)
            expect(status == 409, (status, err))
            status, err = upload(d, "fashion-mnist", body)
            expect(status == 409, (status, err))
            status, err = d.call("DELETE", "/api/v1/datasets/fashion-mnist")
            expect(status == 409, (status, err))

            # --- a CSV table with string labels
            rows = "".join("%.3f,%.3f,%s\n" % (i / 7, (i % 5) / 3, ["cat", "dog", "emu"][i % 3])
                           for i in range(60))
            status, table = upload(d, "animals", ("x,y,kind\n" + rows).encode(), "csv",
                                   "&label_column=kind&test_fraction=0.25&normalize=standard")
            expect(status == 201, (status, table))
            expect(table["class_names"] == ["cat", "dog", "emu"], table)
            expect(table["example_shape"] == [2], table)
            expect(table["splits"]["test"] == 15, table)
            expect(table["preprocessing"]["kind"] == "standard" and
                   len(table["preprocessing"]["mean"]) == 2, table)

            # --- a CSV with its own test file (multipart: test part first), and a job on it
            names = ["cat", "dog", "emu"]
            train_csv = ("x,y,kind\n" + "".join("%.3f,%.3f,%s\n" % (i / 7, (i % 5) / 3, names[i % 3])
                                                for i in range(60))).encode()
            test_csv = ("x,y,kind\n" + "".join("%.3f,%.3f,%s\n" % (i / 5, (i % 5) / 3, names[i % 3])
                                               for i in range(21))).encode()
            body, headers = multipart([("test", test_csv), ("train", train_csv)])
            status, split = upload(d, "animals-split", body, "csv", "&label_column=kind",
                                   headers=headers)
            expect(status == 201, (status, split))
            expect(split["splits"]["test"] == 21 and
                   split["splits"]["train"] + split["splits"]["validation"] == 60, split)
            train_sha = hashlib.sha256(train_csv).hexdigest()
            test_sha = hashlib.sha256(test_csv).hexdigest()
            expect(split["files"] == {"train": {"sha256": train_sha, "bytes": len(train_csv)},
                                      "test": {"sha256": test_sha, "bytes": len(test_csv)}}, split)
            expect(split["sha256"] == hashlib.sha256(
                ("%s\n%s\n" % (train_sha, test_sha)).encode()).hexdigest(), split)
            expect(split["upload"]["test_file"] is True and
                   "test_fraction" not in split["upload"], split)
            status, job = d.call("POST", "/api/v1/jobs", {
                "name": "on-split", "dataset": "animals-split", "model": "softmax",
                "max_steps": 200, "batch_size": 20})
            expect(status == 201 and job["spec"]["dataset"]["test_file"] is True, (status, job))
            done = d.wait_state(job["id"], {"completed", "failed"})
            expect(done["state"] == "completed", done)
            for what, parts, fmt, query, field in [
                    ("a test file for an npz", [("train", b"x"), ("test", b"y")], "npz", "",
                     "test"),
                    ("no train part", [("test", test_csv)], "csv", "&label_column=kind", "train"),
                    ("a test file with other columns", [("train", train_csv),
                                                        ("test", b"x,z,kind\n1,2,cat\n")],
                     "csv", "&label_column=kind", "test"),
                    ("a split asked for too", [("train", train_csv), ("test", test_csv)], "csv",
                     "&label_column=kind&test_fraction=0.3", "test_fraction")]:
                body, headers = multipart(parts)
                status, err = upload(d, "bad", body, fmt, query, headers=headers)
                expect(status == 400 and err["error"].get("field") == field, (what, status, err))
                expect(leftovers(datasets_dir) == [], (what, leftovers(datasets_dir)))

            # --- a job on the upload records its exact data; the dataset cannot go meanwhile
            spec = {"name": "on-colours", "dataset": "colours", "model": "softmax",
                    "max_steps": 3000, "batch_size": 30,
                    "hooks": {"checkpoint": {"every_steps": 1000}}}
            status, job = d.call("POST", "/api/v1/jobs", spec)
            expect(status == 201, (status, job))
            recorded = job["spec"]["dataset"]
            expect(recorded["sha256"] == ds["sha256"] and recorded["format"] == "npz", recorded)
            status, err = d.call("DELETE", "/api/v1/datasets/colours")
            expect(status == 409 and job["id"] in err["error"]["message"], (status, err))
            pinned = dict(spec, dataset={"name": "colours", "sha256": "0" * 64})
            status, err = d.call("POST", "/api/v1/jobs", pinned)
            expect(status == 400 and err["error"]["field"] == "dataset.sha256", (status, err))
            status, err = d.call("POST", "/api/v1/jobs",
                                 dict(spec, dataset={"name": "animals", "label_column": "x"}))
            expect(status == 400 and err["error"]["field"] == "dataset.label_column",
                   (status, err))
            status, err = d.call("POST", "/api/v1/jobs", dict(spec, model="cnn",
                                                              dataset="animals"))
            expect(status == 400 and "model" in err["error"].get("field", ""), (status, err))
            # Augmentation and per-channel normalization are for images: refused on a table.
            status, err = d.call("POST", "/api/v1/jobs", dict(
                spec, dataset="animals", augmentation={"horizontal_flip": True}))
            expect(status == 400 and err["error"].get("field") == "augmentation.horizontal_flip",
                   (status, err))
            status, err = d.call("POST", "/api/v1/jobs", dict(
                spec, dataset={"name": "animals", "normalize": "per_channel"}))
            expect(status == 400 and err["error"].get("field") == "dataset.normalize",
                   (status, err))
            done = d.wait_state(job["id"], {"completed", "failed"})
            expect(done["state"] == "completed", done)
            # The uint8 images uploaded without normalization train normalized per channel,
            # augmented: the job's own options, kept in its canonical spec.
            status, aug = d.call("POST", "/api/v1/jobs", dict(
                spec, name="colours-per-channel", max_steps=20,
                dataset={"name": "colours", "normalize": "per_channel"},
                augmentation={"random_crop": {"padding": 2}, "horizontal_flip": True}))
            expect(status == 201, (status, aug))
            expect(aug["spec"]["dataset"]["normalize"] == "per_channel" and
                   aug["spec"]["augmentation"]["random_crop"]["padding"] == 2, aug["spec"])
            done = d.wait_state(aug["id"], {"completed", "failed"})
            expect(done["state"] == "completed", done)

            # --- bad uploads: a clear 4xx each, nothing left behind
            for what, payload, fmt, query, want, names_it in bad_uploads():
                status, err = upload(d, "bad", payload, fmt, query)
                expect(status == want, (what, status, err))
                message = err["error"]["message"] + " " + err["error"].get("field", "")
                expect(names_it in message, (what, err))
                expect(leftovers(datasets_dir) == [], (what, leftovers(datasets_dir)))
                expect(d.call("GET", "/api/v1/datasets/bad")[0] == 404, what)
            disconnect_mid_upload(d)
            deadline = time.time() + 10
            while leftovers(datasets_dir) and time.time() < deadline:
                time.sleep(0.05)
            expect(leftovers(datasets_dir) == [], leftovers(datasets_dir))
            expect(d.call("GET", "/healthz")[0] == 200, "the daemon is up")

            # --- deleted once no job uses it: files gone, name free
            status, _ = d.call("DELETE", "/api/v1/datasets/colours")
            expect(status == 204, status)
            expect(sorted(os.listdir(datasets_dir)) == ["animals", "animals-split"],
                   os.listdir(datasets_dir))
            expect(d.call("GET", "/api/v1/datasets/colours")[0] == 404, "deleted")
            # Resuming the job now finds its exact data gone, and says so.
            status, err = d.call("POST", "/api/v1/jobs/%s/resume" % job["id"], {"max_steps": 4000})
            if status == 202 or status == 200:
                failed = d.wait_state(job["id"], {"failed"})
                expect("sha256" in (failed.get("error") or ""), failed)
            else:
                expect(status == 400 and "sha256" in err["error"]["message"], (status, err))
        finally:
            code, log = d.stop()
        expect(code == 0, log)
    print("datasets: OK")


if __name__ == "__main__":
    main()
