#!/usr/bin/python3
"""Writes the npz reader's test cases with real NumPy (npz_dataset_test.cpp reads them), and the
learning tests' colour images (npz) and table (CSV) (model_input_shapes_test.cpp).

    /usr/bin/python3 write_npz_files.py OUT_DIR

Every file is small and deterministic: its values are functions of the index, so the C++ test
can assert them (x value of element i: i % 251 for integer types, i * 0.5 - 3 for floats; the
label of example n: n % 7, the test split's (n + 3) % 7).
"""
import io
import os
import struct
import sys
import zipfile
import zlib

import numpy as np

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)

X_DTYPES = ["u1", "i1", "i2", "u2", "f4", "f8"]
Y_DTYPES = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"]


def xs(n, example, dtype):
    count = n * int(np.prod(example))
    i = np.arange(count, dtype=np.float64)
    if np.dtype(dtype).kind == "f":
        v = i * 0.5 - 3
    else:
        v = i % 251
        if np.dtype(dtype).kind == "i" and np.dtype(dtype).itemsize == 1:
            v = v % 128
    return v.astype(dtype).reshape((n,) + tuple(example))


def ys(n, dtype, shift=0):
    return ((np.arange(n) + shift) % 7).astype(dtype)


def dataset(n_train, n_test, example, xdt="u1", ydt="u1", n_val=0):
    d = {"x_train": xs(n_train, example, xdt), "y_train": ys(n_train, ydt),
         "x_test": xs(n_test, example, xdt), "y_test": ys(n_test, ydt, 3)}
    if n_val:
        d["x_val"] = xs(n_val, example, xdt)
        d["y_val"] = ys(n_val, ydt, 5)
    return d


def save(name, arrays, compressed=False):
    (np.savez_compressed if compressed else np.savez)(os.path.join(OUT, name), **arrays)


def save_versions(name, arrays, version, compressed):
    """Each array with np.lib.format.write_array(version=...) into a zipfile."""
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(os.path.join(OUT, name), "w", compression=method) as z:
        for key, a in arrays.items():
            with z.open(key + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, a, version=version)


def npy_bytes(a, version=(1, 0)):
    b = io.BytesIO()
    np.lib.format.write_array(b, a, version=version)
    return b.getvalue()


def write_zip(name, members, compressed=False):
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(os.path.join(OUT, name), "w", compression=method) as z:
        for key, data in members.items():
            z.writestr(key, data)


# --- valid files: every x dtype, each shape kind, stored and deflated.
for xdt in X_DTYPES:
    for comp in (False, True):
        tag = "z" if comp else "s"
        save(f"img_{xdt}_{tag}.npz", dataset(20, 6, (4, 5), xdt), comp)
for c in (1, 3, 4):
    save(f"chw{c}.npz", dataset(20, 6, (4, 5, c)), True)
save("table_f4.npz", dataset(30, 8, (3,), "f4"))
save("table_u1.npz", dataset(30, 8, (3,), "u1"))
save("table_f8_z.npz", dataset(30, 8, (3,), "f8"), True)
save("with_val.npz", dataset(20, 6, (4, 5), n_val=4))
save("with_val_table.npz", dataset(30, 8, (3,), "f4", n_val=5), True)
for ydt in Y_DTYPES:
    save(f"labels_{ydt}.npz", dataset(20, 6, (2,), "f4", ydt))
for v in ((1, 0), (2, 0), (3, 0)):
    for comp in (False, True):
        save_versions(f"version_{v[0]}_{'z' if comp else 's'}.npz", dataset(20, 6, (4, 5)), v, comp)
# Extremes of the conversions.
d = dataset(10, 2, (2,), "u2")
d["x_train"][0] = [65535, 0]
save("u2_max.npz", d)
d = dataset(10, 2, (2, 2), "u1")
d["x_train"][0] = 255
save("u1_max.npz", d)
d = dataset(10, 2, (2,), "f4", "u1")
d["y_train"][3] = 255
save("label_255.npz", d)
# Big-endian arrays (NumPy writes them when asked).
d = dataset(10, 2, (3,), ">f4", ">i4")
save("big_endian.npz", d)
# A table for standardization: feature 0 varies, feature 1 is constant.
tr = np.array([[1, 5], [2, 5], [3, 5], [4, 5], [10, 5], [20, 5], [30, 5], [40, 5],
               [50, 5], [60, 5]], np.float32)
save("standard.npz", {"x_train": tr, "y_train": np.arange(10) % 2,
                      "x_test": np.array([[1, 5], [2, 6]], np.float32), "y_test": np.array([0, 1])})
# Larger, to stream over several chunks: 600 examples of 32x32x3 (1.8 MB) uint8 and a float table.
r = np.random.default_rng(0)
big = {"x_train": r.integers(0, 256, (500, 32, 32, 3), np.uint8),
       "y_train": r.integers(0, 10, 500).astype(np.int64),
       "x_test": r.integers(0, 256, (100, 32, 32, 3), np.uint8),
       "y_test": r.integers(0, 10, 100).astype(np.int64)}
save("big_z.npz", big, True)
save("big_s.npz", big)
np.save(os.path.join(OUT, "big_x_train.npy"), big["x_train"])  # for the values' check
tbig = {"x_train": r.standard_normal((40000, 30)).astype(np.float32) * 3 + 1,
        "y_train": r.integers(0, 3, 40000), "x_test": r.standard_normal((100, 30)).astype(np.float32),
        "y_test": r.integers(0, 3, 100)}
save("table_big_z.npz", tbig, True)
xtr = tbig["x_train"][4000:].astype(np.float64)
with open(os.path.join(OUT, "table_big_stats.txt"), "w") as f:
    for m, s in zip(xtr.mean(0), xtr.std(0)):
        f.write(f"{m!r} {s!r}\n")

# The end records of a zip64 archive (Python writes them only past 65535 members or 4 GiB):
# img_u1_s.npz's central directory, then a zip64 end record and locator, then an end record
# whose fields all say "see zip64".
with open(os.path.join(OUT, "img_u1_s.npz"), "rb") as f:
    b = f.read()
eocd = b.rfind(b"PK\x05\x06")
n, cd_size, cd_off = struct.unpack("<HII", b[eocd + 10:eocd + 20])
z64 = struct.pack("<IQHHIIQQQQ", 0x06064b50, 44, 45, 45, 0, 0, n, n, cd_size, cd_off)
loc = struct.pack("<IIQI", 0x07064b50, 0, eocd, 1)
end = struct.pack("<IHHHHIIH", 0x06054b50, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFFFFFF,
                  0xFFFFFFFF, 0)
with open(os.path.join(OUT, "zip64_end.npz"), "wb") as f:
    f.write(b[:eocd] + z64 + loc + end)

# --- bad files.
d = dataset(20, 6, (4, 5))
d["x_train"] = np.asfortranarray(d["x_train"])
save("bad_fortran.npz", d)
d = dataset(20, 6, (2,))
d["x_train"] = np.array([object()] * 20 * 2, dtype=object).reshape(20, 2)
d["x_train"][:] = 1
save("bad_object.npz", d)
d = dataset(20, 6, (4, 5))
d["y_train"] = d["y_train"][:19]
save("bad_counts.npz", d)
d = dataset(20, 6, (3,), "f4")
d["y_test"] = d["y_test"][:5]
save("bad_counts_table.npz", d)
d = dataset(20, 6, (3,), "f4")
d["x_train"][7, 2] = np.nan
save("bad_nan.npz", d, True)
d = dataset(20, 6, (3,), "f8")
d["x_test"][1, 1] = -np.inf
save("bad_inf.npz", d)
d = dataset(20, 6, (3,), "f8")
d["x_train"][2, 0] = 1e300
save("bad_f8_range.npz", d)
d = dataset(20, 6, (3,), "f4", "i2")
d["y_train"][4] = -1
save("bad_negative_label.npz", d)
d = dataset(20, 6, (3,), "f4", "i4")
d["y_test"][2] = 256
save("bad_huge_label.npz", d)
d = dataset(20, 6, (3,), "f4", "u8")
d["y_train"][0] = 2**64 - 1
save("bad_u8_label.npz", d)
d = dataset(20, 6, (4, 5))
del d["y_test"]
save("bad_missing.npz", d)
d = dataset(20, 6, (4, 5))
d["extra"] = np.zeros(3)
save("bad_extra.npz", d)
d = dataset(20, 6, (4, 5), n_val=3)
del d["y_val"]
save("bad_half_val.npz", d)
d = dataset(20, 6, (4, 5))
d["x_test"] = xs(6, (5, 4), "u1")
save("bad_shapes.npz", d)
d = dataset(20, 6, (4, 5))
d["x_test"] = xs(6, (4, 5), "f4")
save("bad_mixed_dtypes.npz", d)
d = dataset(20, 6, (4, 5, 5))
save("bad_channels.npz", d)
d = dataset(20, 6, (3,), "i4")
save("bad_x_int32.npz", d)
d = dataset(20, 6, (3,), "f4", "f4")
save("bad_float_labels.npz", d)
save("bad_image_standardize.npz", dataset(20, 6, (4, 5)))  # valid; standardize makes it bad

# A header that lies: x_train's header says 20 examples, the data has 19 (stored and deflated).
good = dataset(20, 6, (4, 5))
for comp in (False, True):
    members = {k + ".npy": npy_bytes(v) for k, v in good.items()}
    lie = npy_bytes(good["x_train"])
    members["x_train.npy"] = lie[:len(lie) - 20]
    write_zip(f"bad_lying_short_{'z' if comp else 's'}.npz", members, comp)
    members["x_train.npy"] = lie + b"\0" * 20
    write_zip(f"bad_lying_long_{'z' if comp else 's'}.npz", members, comp)

# Truncated archives.
with open(os.path.join(OUT, "big_z.npz"), "rb") as f:
    whole = f.read()
for frac, name in ((0.5, "bad_truncated_half.npz"), (0.999, "bad_truncated_end.npz")):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(whole[:int(len(whole) * frac)])
with open(os.path.join(OUT, "bad_not_zip.npz"), "wb") as f:
    f.write(b"x_train,y_train\n1,2\n")
# A corrupt CRC: flip one data byte of a stored member.
with open(os.path.join(OUT, "big_s.npz"), "rb") as f:
    b = bytearray(f.read())
b[len(b) // 3] ^= 0xFF
with open(os.path.join(OUT, "bad_crc.npz"), "wb") as f:
    f.write(b)


# Zip bombs. (1) x_train declares a 1 GB array (shape (1000000, 1000) uint8) and the zip entry
# declares it too, from a small deflate stream: more than deflate can hold.
def raw_deflate(data):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def crafted_zip(name, members):
    """members: list of (name, method, payload, declared_uncompressed, crc)."""
    out = bytearray()
    central = bytearray()
    for mname, method, payload, usize, crc in members:
        nb = mname.encode()
        off = len(out)
        extra = struct.pack("<HHQQ", 1, 16, usize, len(payload))
        out += struct.pack("<IHHHHHIIIHH", 0x04034b50, 45, 0, method, 0, 0x21, crc,
                           0xFFFFFFFF, 0xFFFFFFFF, len(nb), len(extra)) + nb + extra + payload
        cextra = b""
        cu, cc = usize, len(payload)
        if usize >= 0xFFFFFFFF:
            cextra = struct.pack("<HHQ", 1, 8, usize)
            cu = 0xFFFFFFFF
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 45, 45, 0, method, 0, 0x21,
                               crc, cc, cu, len(nb), len(cextra), 0, 0, 0, 0, off) + nb + cextra
    cd_off = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, len(members), len(members), len(central),
                       cd_off, 0)
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(out)


small = dataset(20, 6, (4, 5))
rest = [(k + ".npy", 0, npy_bytes(v), len(npy_bytes(v)), zlib.crc32(npy_bytes(v)))
        for k, v in small.items() if k != "x_train"]
hdr = npy_bytes(np.zeros((1000000, 1000), np.uint8)[:0])  # header text of an empty array
hdr = hdr.replace(b"(0, 1000)", b"(1000000, 1000)")
assert b"(1000000, 1000)" in hdr
payload = raw_deflate(hdr + b"\0" * (1 << 20))
crafted_zip("bomb_declared.npz",
            [("x_train.npy", 8, payload, len(hdr) + 10**9, 0)] + rest)
# (2) The zip entry is honest about a 32 MB stream of zeros, the npy header says 20 examples.
zeros = raw_deflate(npy_bytes(small["x_train"]) + b"\0" * (32 << 20))
real = npy_bytes(small["x_train"])
crafted_zip("bomb_mismatch.npz",
            [("x_train.npy", 8, zeros, len(real) + (32 << 20), 0)] + rest)
# (3) The zip entry and header agree (20 examples), but the stream inflates to 32 MB.
crafted_zip("bomb_stream.npz",
            [("x_train.npy", 8, zeros, len(real), zlib.crc32(real))] + rest)
# (4) Plausible declared sizes, a 1000:1 ratio: x_train of 20 MB of zeros, honest and valid.
zx = np.zeros((20000, 1000), np.uint8)
zx_npy = npy_bytes(zx)
zx_deflated = raw_deflate(zx_npy)


def stored(key, a):
    data = npy_bytes(a)
    return (key + ".npy", 0, data, len(data), zlib.crc32(data))


zrest = [stored("y_train", np.zeros(20000, np.uint8)), stored("x_test", zx[:2]),
         stored("y_test", np.zeros(2, np.uint8))]
crafted_zip("bomb_valid_ratio.npz",
            [("x_train.npy", 8, zx_deflated, len(zx_npy), zlib.crc32(zx_npy))] + zrest)
# (5) The same with a wrong CRC: LoadNpz must find it before allocating 80 MB of floats.
crafted_zip("bomb_bad_crc.npz", [("x_train.npy", 8, zx_deflated, len(zx_npy), 12345)] + zrest)

# --- the learning tests' data (model_input_shapes_test.cpp), seeded.
# Colour images whose class only colour tells: class k has more of channel k, while every pixel's
# grey level (the mean of its channels) is uniform on [0.2, 0.7] whatever the class. uint8
# [N, 12, 12, 3], values round(255 * v); the rounded channels' sum is symmetric in the channels,
# so the grey versions of the three classes stay identically distributed.
r = np.random.default_rng(11)


def colour_split(n):
    y = r.integers(0, 3, n)
    grey = r.uniform(0.2, 0.7, (n, 12 * 12))
    tint = r.uniform(-0.05, 0.15, (n, 12 * 12))  # noisy per pixel, positive on average
    x = np.repeat((grey - tint)[:, :, None], 3, axis=2)
    x[np.arange(n), :, y] += 3 * tint  # the class's channel: grey + 2 * tint
    return np.rint(x * 255).astype(np.uint8).reshape(n, 12, 12, 3), y.astype(np.uint8)


x_train, y_train = colour_split(1500)
x_test, y_test = colour_split(600)
save("learn_colour.npz", {"x_train": x_train, "y_train": y_train, "x_test": x_test,
                          "y_test": y_test}, True)
# A table with string labels: three Gaussian blobs in 8 features (unit variance), 3.5 standard
# deviations apart along their own axes around a random common point (about 98% separable),
# 3000 rows; the label column "species" holds the class names.
r = np.random.default_rng(21)
names = ["setosa", "versicolor", "virginica"]
centre = r.standard_normal(8) + 3.5 * np.eye(3, 8)
y = r.integers(0, 3, 3000)
x = centre[y] + r.standard_normal((3000, 8))
with open(os.path.join(OUT, "learn_table.csv"), "w") as f:
    f.write(",".join(["f%d" % i for i in range(8)] + ["species"]) + "\n")
    for row, label in zip(x, y):
        f.write(",".join("%.5f" % v for v in row) + "," + names[label] + "\n")

with open(os.path.join(OUT, ".complete"), "w") as f:
    f.write("ok\n")
print("wrote", len(os.listdir(OUT)), "files to", OUT)
