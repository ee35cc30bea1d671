#!/usr/bin/env python3
"""Helpers of the runtime / gatec-run lit tests: make inputs, compute
references with numpy, check what gatec-run printed. Every reference value is
computed here, independently of the runtime and of gatec-run.

  rt.py rand OUT SHAPE DTYPE SEED...    random tensors (.npy or .pb by name);
                                        SHAPE "2,3,4", "" for a scalar
  rt.py save OUT EXPR                   np.save(OUT, eval(EXPR)) (bad files)
  rt.py eval OUT EXPR NAME=FILE...      OUT = EXPR over the named tensors
  rt.py inline OUT "2x3xf32=1 2 3"      parse an inline tensor spec (an
                                        independent parser) into OUT
  rt.py to-pb IN OUT [--typed]          .npy -> TensorProto (raw_data, or the
                                        typed fields with --typed)
  rt.py truncate FILE N                 drop the last N bytes of FILE
  rt.py compare GOT WANT... [--tol T]   each pair: same dtype, shape and
                                        values (exactly, NaN == NaN; or
                                        within T)
  rt.py check-print LOG NAME WANT [LIMIT]
                                        the line "NAME: dtype [shape] = v ..."
                                        of LOG shows WANT's first LIMIT values
  rt.py check-match LOG NAME GOT WANT ATOL RTOL
                                        the pass line of --expected-output
  rt.py check-mismatch LOG NAME GOT WANT ATOL RTOL
                                        the mismatch line names the worst
                                        element numpy finds
  rt.py check-bench LOG N W             the benchmark line
  rt.py exit CODE CMD...                run CMD, require exit status CODE
  rt.py err CODE CMD...                 run CMD, require exit status CODE and
                                        one line "gatec-run: ..." on stderr,
                                        which it prints (stdout is dropped)
"""
import re
import subprocess
import sys


def fail(msg):
    print("rt.py: " + msg, file=sys.stderr)
    sys.exit(1)


def run_only(argv):
    """The commands that only run a program: handled before importing numpy,
    which takes most of this script's start-up time."""
    cmd, args = argv[1], argv[2:]
    if cmd == "err":
        r = subprocess.run(args[1:], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        # Under ASan (tools/sanitize.sh) a refused huge allocation also
        # prints ASan's own warning line; it is not gatec-run's output.
        lines = [ln for ln in r.stderr.splitlines()
                 if not ("WARNING: AddressSanitizer failed to allocate" in ln)]
        if r.returncode != int(args[0]):
            fail("%s: exit status %d, expected %s; stderr:\n%s" % (
                args[1], r.returncode, args[0], r.stderr))
        if len(lines) != 1 or not lines[0].startswith("gatec-run: "):
            fail("stderr is not one 'gatec-run: ' line:\n" + r.stderr)
        print(lines[0])
    elif cmd == "exit":
        rc = subprocess.call(args[1:])
        if rc != int(args[0]):
            fail("%s: exit status %d, expected %s" % (args[1], rc, args[0]))
    else:
        return False
    return True


if __name__ == "__main__" and run_only(sys.argv):
    sys.exit(0)

import ml_dtypes
import numpy as np

# onnx is imported where needed: it takes longer to import than the rest.

DTYPES = {
    "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
    "f64": np.float64, "i8": np.int8, "i16": np.int16, "i32": np.int32,
    "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
    "u64": np.uint64, "bool": np.bool_,
}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}


def load(path):
    if path.endswith(".pb"):
        import onnx
        from onnx import numpy_helper
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        return numpy_helper.to_array(t)
    return np.load(path)


def store(path, a, name="t"):
    if path.endswith(".pb"):
        from onnx import numpy_helper
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), name).SerializeToString())
    else:
        np.save(path, a)


def parse_shape(s):
    return tuple(int(d) for d in s.split(",")) if s else ()


def rand(out, shape, dtype, seed):
    rng = np.random.default_rng(int(seed))
    shape = parse_shape(shape)
    dt = DTYPES[dtype]
    if dtype == "bool":
        a = rng.integers(0, 2, shape).astype(np.bool_)
    elif dtype.startswith(("i", "u")):
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    else:
        a = (rng.standard_normal(shape) * 4).astype(dt)
    store(out, np.asarray(a, dtype=dt))


def parse_inline(spec):
    """"2x3xf32=1 2 3 4 5 6" -> array; one value fills the tensor."""
    typ, _, values = spec.partition("=")
    parts = typ.split("x")
    dt = DTYPES[parts[-1]]
    shape = tuple(int(p) for p in parts[:-1])
    toks = [t for t in re.split(r"[\s,]+", values) if t]
    if dt is np.bool_:
        vals = [t in ("1", "true") for t in toks]
    elif parts[-1].startswith(("i", "u")):
        vals = [int(t) for t in toks]
    else:
        # Through float32 for the 16-bit floats, as documented by gatec-run.
        vals = [float(t) for t in toks]
        if parts[-1] in ("f16", "bf16"):
            vals = np.array(vals, np.float32)
    n = int(np.prod(shape))
    if parts[-1].startswith(("i", "u")) or dt is np.bool_:
        a = np.array(vals, dtype=dt)
    else:
        a = np.array(vals, dtype=np.float64).astype(dt)
    if a.size == 1 and n != 1:
        a = np.full(n, a[0], dtype=dt)
    return a.reshape(shape)


def to_pb(inp, out, typed=False):
    from onnx import helper
    a = np.load(inp)
    if not typed:
        store(out, a)
        return
    tp = helper.np_dtype_to_tensor_dtype(a.dtype)
    t = helper.make_tensor("t", tp, a.shape, a.flatten())
    assert not t.HasField("raw_data")
    with open(out, "wb") as f:
        f.write(t.SerializeToString())


def same(got, want, tol=None):
    if got.dtype != want.dtype:
        return "dtype %s != %s" % (got.dtype, want.dtype)
    if got.shape != want.shape:
        return "shape %s != %s" % (got.shape, want.shape)
    g = got.astype(np.float64) if got.dtype == ml_dtypes.bfloat16 else got
    w = want.astype(np.float64) if want.dtype == ml_dtypes.bfloat16 else want
    if tol is None:
        if g.dtype.kind == "f":
            ok = np.array_equal(g, w, equal_nan=True)
        else:
            ok = np.array_equal(g, w)
    else:
        ok = np.allclose(g, w, atol=tol, rtol=0, equal_nan=True)
    return None if ok else "values differ:\n got %s\nwant %s" % (got, want)


def find_line(log, prefix):
    with open(log) as f:
        for line in f:
            if line.startswith(prefix):
                return line.rstrip("\n")
    fail("no line starting with %r in %s" % (prefix, log))


def check_print(log, name, want, limit=16):
    want = load(want)
    line = find_line(log, name + ": ")
    m = re.fullmatch(r"(\S+): (\S+) \[([0-9, ]*)\] =(.*)", line)
    if not m:
        fail("malformed line: " + line)
    if m.group(2) != NAMES[want.dtype]:
        fail("dtype %s, want %s" % (m.group(2), NAMES[want.dtype]))
    shape = tuple(int(d) for d in m.group(3).split(",")) if m.group(3) else ()
    if shape != want.shape:
        fail("shape %s, want %s" % (shape, want.shape))
    rest = m.group(4).split()
    flat = want.reshape(-1)
    n = flat.size if limit == 0 else min(flat.size, limit)
    if flat.size == 0:
        if rest != ["(no", "elements)"]:
            fail("empty tensor printed as " + line)
        return
    vals = rest[:n]
    tail = rest[n:]
    if n < flat.size and tail != ["...", "(%d" % flat.size, "elements)"]:
        fail("truncation not shown: " + line)
    if n == flat.size and tail:
        fail("unexpected text after the values: " + line)
    for i, (text, w) in enumerate(zip(vals, flat[:n])):
        if want.dtype == np.bool_:
            ok = text == ("true" if w else "false")
        elif want.dtype.kind in "iu":
            ok = int(text) == int(w)
        else:
            # The printed text must read back as the same value of the dtype.
            ok = np.array(float(text)).astype(want.dtype) == w or (
                np.isnan(float(w)) and text == "nan")
        if not ok:
            fail("value %d printed as %s, want %r" % (i, text, w))


def tol_text(atol, rtol):
    return "atol=%s + rtol=%s*|expected|" % (fmt_g(atol), fmt_g(rtol))


def fmt_g(x):
    return "%g" % x


def errors(got, want, atol, rtol):
    g = got.astype(np.float64).reshape(-1)
    w = want.astype(np.float64).reshape(-1)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - w)
        both_nan = np.isnan(g) & np.isnan(w)
        equal = (g == w) | both_nan
        bad = ~equal & ~(err <= atol + rtol * np.abs(w))
    return g, w, err, equal, bad


def check_match(log, name, got, want, atol, rtol):
    got, want, atol, rtol = load(got), load(want), float(atol), float(rtol)
    g, w, err, equal, bad = errors(got, want, atol, rtol)
    if bad.any():
        fail("the reference says %d elements differ" % bad.sum())
    mx = float(np.max(np.where(equal, 0, err), initial=0))
    expect = "output '%s': %d element%s within %s, max |error| %s" % (
        name, g.size, "" if g.size == 1 else "s", tol_text(atol, rtol), fmt_g(mx))
    line = find_line(log, "output '%s'" % name)
    if line != expect:
        fail("got  %s\nwant %s" % (line, expect))


def check_mismatch(log, name, got, want, atol, rtol):
    got, want, atol, rtol = load(got), load(want), float(atol), float(rtol)
    g, w, err, equal, bad = errors(got, want, atol, rtol)
    if not bad.any():
        fail("the reference says all elements match")
    cls = np.where(np.isnan(err), 2, np.where(np.isinf(err), 1, 0))
    cand = np.flatnonzero(bad)
    best = max(cand, key=lambda i: (cls[i], -1 if np.isnan(err[i]) else err[i], -i))
    idx = "[" + ", ".join(str(int(v)) for v in np.unravel_index(best, got.shape)) + "]"

    def txt(a, i):
        v = a.reshape(-1)[i]
        if a.dtype.kind in "iu":
            return str(int(v))
        if a.dtype == np.bool_:
            return "true" if v else "false"
        return None  # checked numerically below

    m = re.fullmatch(
        r"gatec-run: output '(.*)': (\d+) of (\d+) elements differ by more than "
        r"(.*); worst at (\[[0-9, ]*\]): got (\S+), expected (\S+), \|error\| (\S+)",
        find_line(log, "gatec-run: output '%s'" % name))
    if not m:
        fail("malformed mismatch line")
    checks = [(m.group(1), name), (int(m.group(2)), int(bad.sum())),
              (int(m.group(3)), g.size), (m.group(4), tol_text(atol, rtol)),
              (m.group(5), idx)]
    for have, expect in checks:
        if have != expect:
            fail("mismatch line: %r, want %r" % (have, expect))
    for text, a in ((m.group(6), got), (m.group(7), want)):
        t = txt(a, best)
        if t is not None:
            ok = text == t
        else:
            v = a.reshape(-1)[best]
            ok = (text == "nan" and np.isnan(v)) or np.array(float(text)).astype(a.dtype) == v
        if not ok:
            fail("worst element printed as %s, want %r" % (text, a.reshape(-1)[best]))
    if m.group(8) != fmt_g(float(err[best])):
        fail("|error| %s, want %s" % (m.group(8), fmt_g(float(err[best]))))


def check_bench(log, n, w):
    line = find_line(log, "benchmark: ")
    m = re.fullmatch(
        r"benchmark: (\d+) runs? after (\d+) warm-up runs?: min (\d+\.\d{4}) ms, "
        r"median (\d+\.\d{4}) ms, max (\d+\.\d{4}) ms", line)
    if not m:
        fail("malformed benchmark line: " + line)
    if int(m.group(1)) != int(n) or int(m.group(2)) != int(w):
        fail("counts: " + line)
    lo, med, hi = (float(m.group(i)) for i in (3, 4, 5))
    if not (0 <= lo <= med <= hi):
        fail("not min <= median <= max: " + line)


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "rand":
        for k in range(0, len(args), 4):
            rand(*args[k:k + 4])
    elif cmd == "save":
        np.save(args[0], eval(args[1], {"np": np, "ml_dtypes": ml_dtypes}))
    elif cmd == "eval":
        env = {"np": np, "ml_dtypes": ml_dtypes}
        for a in args[2:]:
            k, _, v = a.partition("=")
            env[k] = load(v)
        store(args[0], np.asarray(eval(args[1], env)))
    elif cmd == "inline":
        store(args[0], parse_inline(args[1]))
    elif cmd == "to-pb":
        to_pb(args[0], args[1], typed="--typed" in args[2:])
    elif cmd == "truncate":
        with open(args[0], "rb") as f:
            data = f.read()
        with open(args[0], "wb") as f:
            f.write(data[: len(data) - int(args[1])])
    elif cmd == "compare":
        tol = None
        if "--tol" in args:
            k = args.index("--tol")
            tol = float(args[k + 1])
            args = args[:k] + args[k + 2:]
        if not args or len(args) % 2:
            fail("compare needs pairs of files")
        for got, want in zip(args[0::2], args[1::2]):
            why = same(load(got), load(want), tol)
            if why:
                fail("%s vs %s: %s" % (got, want, why))
    elif cmd == "check-print":
        check_print(args[0], args[1], args[2], int(args[3]) if len(args) > 3 else 16)
    elif cmd == "check-match":
        check_match(*args)
    elif cmd == "check-mismatch":
        check_mismatch(*args)
    elif cmd == "check-bench":
        check_bench(*args)
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
