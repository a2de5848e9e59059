"""Fuzzes nnc-torch-run's inputs: mutated .npy headers and data, and arguments.

Each seed gives one run of nnc-torch-run on a model saved once (a small
convolution block, optimized and saved by nncjit.torch) with an input file
made from a valid .npy by one or more mutations (issue 62):

  header   the shape (huge, negative, empty, of other rank, not a tuple),
           the dtype (other kinds and sizes, big-endian, unknown), the
           Fortran flag, the header length field, the magic and the version;
  data     cut short, extended, or replaced with garbage;
  file     empty, /dev/zero, a directory, missing;
  args     --threads (0, 1, huge, negative, not a number), --bench values,
           outputs to /dev/full, to a directory, more outputs than tensors,
           unknown flags, a missing model.

Every run must end in one of two ways: exit 0 with the model's output for
that input (the input as numpy reads it, through eager PyTorch: NaN and
infinities where eager has them, finite values within 1e-4 of the
largest magnitudes of the input and the result), or exit 1 with exactly one
line on stderr, `nnc-torch-run: error:
...` (after any warning lines). A signal, another exit status, a hang (the
timeout), a second error line, or exit 0 with a wrong or missing output is
a failure, written out as OUT/torch-run-fuzz-SEED.npy with its command.

    PYTHONPATH=build/python /usr/bin/python3 fuzz/torch_run_fuzz.py \\
        --tool build/bin/nnc-torch-run --seed=1 --count=0 --time=900
"""
import argparse
import ast
import io
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import nncjit.torch as nt

SHAPE = (1, 3, 16, 16)


def make_model(directory):
    """A saved model (conv, relu) and its eager module."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU()).eval()
    path = os.path.join(directory, "model.pt")
    nt.optimize(m, [torch.randn(*SHAPE)], threads=1, cache_dir="").save(path)
    return m, path


def npy_bytes(array):
    f = io.BytesIO()
    np.save(f, array)
    return f.getvalue()


def _header_dict(data):
    """The header's dict text and where it starts and ends (version 1)."""
    n = int.from_bytes(data[8:10], "little")
    return data[10:10 + n].decode("latin1"), 10, 10 + n


def _with_header(data, text):
    """data with its version-1 header's dict replaced by text, padded to 64."""
    _, start, end = _header_dict(data)
    body = data[end:]
    h = text.rstrip("\n")
    pad = (-(10 + len(h) + 1)) % 64
    h = (h + " " * pad + "\n").encode("latin1")
    return data[:8] + len(h).to_bytes(2, "little") + h + body


def mutate(rng, data):
    """One mutation of a valid .npy's bytes."""
    kind = rng.randrange(14)
    try:
        d = ast.literal_eval(_header_dict(data)[0])
        if not isinstance(d, dict):
            raise ValueError
    except Exception:  # noqa: BLE001 (mutated already: mutate its bytes)
        d, kind = None, rng.choice([6, 7, 9])
    if len(data) < 10 and kind not in (7, 10):
        return data + bytes(rng.randrange(1, 100))
    if kind == 0:   # A huge or odd shape.
        d["shape"] = rng.choice([(2**62, 4), (2**31, 2**31, 8), (-1, 3, 16, 16), (),
                                 (0, 3, 16, 16), (1, 3, 16), (1, 3, 16, 16, 1),
                                 (2**63 - 1,), (1, 3, 16, 17)])
    elif kind == 1:  # Another dtype.
        d["descr"] = rng.choice(["<f8", "<f2", "<i8", "<i4", "|u1", "|b1", ">f4",
                                 "<c8", "|V4", "<U3", "xyz", "<f4"])
    elif kind == 2:
        d["fortran_order"] = True
    elif kind == 3:  # Keys missing, or not a dict at all.
        return _with_header(data, rng.choice(["{}", "{'descr': '<f4'}", "[1, 2]", "hello",
                                              "{'descr': '<f4', 'fortran_order': False, "
                                              "'shape': 'x'}"]))
    elif kind == 4:  # The header length field.
        n = rng.choice([0, 1, 9, 65535, len(data) + 100])
        return data[:8] + n.to_bytes(2, "little") + data[10:]
    elif kind == 5:  # The magic or the version.
        i = rng.randrange(min(8, len(data)))
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
    elif kind == 6:  # Data cut short.
        return data[:rng.randrange(max(len(data), 1))]
    elif kind == 7:  # Data extended.
        return data + bytes(rng.randrange(1, 5000))
    elif kind == 8:  # Garbage data of the right length.
        _, _, end = _header_dict(data)
        return data[:end] + bytes(rng.randrange(256) for _ in range(len(data) - end))
    elif kind == 9:  # A random byte flipped anywhere.
        if not data:
            return data
        i = rng.randrange(len(data))
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
    elif kind == 10:
        return b""
    elif kind == 11:  # Special values in the data.
        a = np.full(SHAPE, rng.choice([np.inf, -np.inf, np.nan, 1e30, -0.0, 1e-40]),
                    np.float32)
        return npy_bytes(a)
    elif kind == 12:  # A version 2 header.
        return data[:6] + b"\x02\x00" + len(data[10:]).to_bytes(4, "little")[:2] + \
            b"\x00\x00" + data[10:]
    else:
        return data
    return _with_header(data, repr(d))


def arguments(rng, model, inp, out, directory):
    """A command line: mostly well formed, sometimes not."""
    args = [model, "--input", inp, "--output", out]
    r = rng.randrange(12)
    if r == 0:
        args += ["--threads", rng.choice(["0", "1", "2", "1024", "1025", "2147483648",
                                          "-1", "x", "99999999999999999999"])]
    elif r == 1:
        args += [rng.choice(["--bench=0", "--bench=x", "--bench=-3", "--bench=2"])]
    elif r == 2:
        args[4] = rng.choice(["/dev/full", directory, os.path.join(directory, "no", "y.npy")])
    elif r == 3:
        args += ["--output", os.path.join(directory, "extra.npy")]
    elif r == 4:
        args += [rng.choice(["--nope", "-x", "--cache-dir"])]
    elif r == 5:
        args[0] = rng.choice([os.path.join(directory, "none.pt"), directory, "/dev/zero"])
    elif r == 6:
        args[2] = rng.choice(["/dev/zero", directory, os.path.join(directory, "none.npy")])
    elif r == 7:
        args = args[:1]
    return args


def expected(module, data):
    """The model's output for the input as numpy reads it, or None where
    numpy or the model refuses it (then nnc-torch-run must refuse it too,
    or may give what the model gives)."""
    try:
        a = np.load(io.BytesIO(data), allow_pickle=False)
        x = torch.from_numpy(np.ascontiguousarray(a))
        with torch.no_grad():
            return module(x).numpy()
    except Exception:  # noqa: BLE001 (anything numpy or the model refuses)
        return None


def check_one(tool, seed, model, module, directory, timeout=120, mutations=True):
    """None, or the failure of seed's run (without mutations: a valid input
    and command line, for testing the oracle)."""
    rng = random.Random(seed)
    data = npy_bytes(np.random.RandomState(seed).randn(*SHAPE).astype(np.float32))
    for _ in range(rng.choice([1, 1, 1, 2, 3]) if mutations else 0):
        data = mutate(rng, data)
    inp = os.path.join(directory, "x.npy")
    out = os.path.join(directory, "y.npy")
    for p in (inp, out):
        if os.path.exists(p):
            os.remove(p)
    with open(inp, "wb") as f:
        f.write(data)
    args = arguments(rng, model, inp, out, directory) if mutations else \
        [model, "--input", inp, "--output", out]
    try:
        r = subprocess.run([tool] + args, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "hung (%d s)" % timeout, args, data
    lines = r.stderr.splitlines()
    errors = [l for l in lines if not l.startswith("nnc-torch-run: warning: ")]
    if r.returncode == 1:
        if len(errors) != 1 or not errors[0].startswith("nnc-torch-run: error: "):
            return "exit 1 without one error line: %r" % r.stderr, args, data
        return None
    if r.returncode != 0:
        return "exit status %d: %r" % (r.returncode, r.stderr[-2000:]), args, data
    if errors:
        return "exit 0 with %r" % r.stderr, args, data
    if args[4:5] not in ([out], [os.path.join(directory, "extra.npy")]) and len(args) > 4:
        return "exit 0 though its output %s cannot be written" % args[4], args, data
    if args[2:3] != [inp] or len(args) < 5:
        return None  # Exit 0 on another input: nothing to compare.
    want = expected(module, data)
    if not os.path.exists(out):
        return "exit 0 and no output", args, data
    got = np.load(out)
    if want is None:
        return "exit 0 where numpy or the model refuses the input", args, data
    if got.shape != want.shape:
        return "exit 0 with an output of shape %s" % (got.shape,), args, data
    if not close(got, want, np.load(io.BytesIO(data))):
        return "exit 0 with another output (max diff %s)" % np.nanmax(
            np.abs(got.astype(np.float64) - want)), args, data
    return None


def close(got, want, x):
    """NaN and the infinities where eager has them, and finite values within
    1e-4 of the magnitudes the sums take in (the input's and the result's
    largest): a convolution of values near 1e38 cancels terms whose
    rounding alone is 1e30."""
    def largest(a):
        a = np.abs(a[np.isfinite(a)].astype(np.float64))
        return a.max() if a.size else 0.0
    if not (np.array_equal(np.isnan(got), np.isnan(want)) and
            np.array_equal(np.isposinf(got), np.isposinf(want)) and
            np.array_equal(np.isneginf(got), np.isneginf(want))):
        return False
    finite = np.isfinite(want)
    tol = 1e-4 * (largest(x) + largest(want)) + 1e-4
    return bool(np.all(np.abs(got[finite].astype(np.float64) - want[finite]) <= tol))


def run(tool, seed, count, seconds, out_dir, log=print):
    """Checks seeds from seed on; returns the failures as (seed, why)."""
    failures = []
    start = time.time()
    with tempfile.TemporaryDirectory() as d:
        module, model = make_model(d)
        n = 0
        while (not count or n < count) and (not seconds or time.time() - start < seconds):
            s = seed + n
            f = check_one(tool, s, model, module, d)
            if f:
                why, args, data = f
                failures.append((s, why))
                os.makedirs(out_dir, exist_ok=True)
                with open(os.path.join(out_dir, "torch-run-fuzz-%d.npy" % s), "wb") as o:
                    o.write(data)
                log("seed %d: %s\n  nnc-torch-run %s" % (s, why, shlex.join(args)))
            n += 1
    log("torch_run_fuzz: %d runs, %d failures" % (n, len(failures)))
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tool", default="nnc-torch-run", help="the nnc-torch-run to fuzz")
    p.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    p.add_argument("--count", type=int, default=100, help="runs (0: until --time)")
    p.add_argument("--time", type=float, default=0, help="stop after this many seconds")
    p.add_argument("--out", default="torch-run-fuzz-failures",
                   help="where failing inputs are written")
    a = p.parse_args()
    failures = run(a.tool, a.seed, a.count, a.time, a.out)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
