#!/usr/bin/env python3
"""Runs gatec on every file of the fuzz corpus and checks that it never crashes.

For each file at the top level of the corpus directory (subdirectories hold
auxiliary data such as external weights), runs

    gatec FILE --compile-to=onnx -o /dev/null

and requires: exit code 0 or 1 (no signal, no other code, no timeout); and on
exit code 1, a non-empty stderr that names the model file and contains none of
the crash markers below. Prints

    fuzz corpus: N files, A accepted, R rejected cleanly, F failures

then the details of every failure, and exits 1 if there is any.

--compile-to=PHASE stops at another phase; --full compiles each file to a
model library (the whole pipeline, clang included) and then prints the
outcomes by class as well:

    classes: clean error E, accepted A, crash C, hang H, memory M; full compiles (imported) P

(a file that does not import is not compiled further).

  .venv/bin/python test/scripts/run_fuzz_corpus.py [--gatec build/bin/gatec]
      [--corpus test/Fuzz/Inputs/corpus] [--jobs 2] [--timeout 30]

Each gatec runs with an address-space limit (--mem-limit-mb, default 4096;
0 disables it) so that a memory blow-up fails fast instead of exhausting the
machine; it then shows as a failure (std::bad_alloc, LLVM ERROR, or a signal).
"""
import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CRASH_MARKERS = ["Assertion", "Stack dump", "PLEASE submit a bug report",
                 "terminate called", "LLVM ERROR"]


def signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


MEMORY_MARKERS = ["std::bad_alloc", "out of memory", "unable to grow",
                  "Cannot allocate memory", "RSS limit", "rss_limit",
                  "allocation-size-too-big", "out-of-memory"]


def classify(r):
    """clean / accepted / crash / hang / memory, for the campaign's figures."""
    if not r["problems"]:
        return "accepted" if r["rc"] == 0 else "clean error"
    if r["rc"] is None:
        return "hang"
    if any(m in r["stderr"] for m in MEMORY_MARKERS):
        return "memory"
    return "crash"


def run_one(gatec, path, timeout, mem_mb, phase="onnx", full=False, tmp=None):
    def limits():
        # An address-space limit leaves no room for ASan's shadow memory:
        # under the sanitized build (ASAN_OPTIONS set, tools/sanitize.sh and
        # tools/fuzz.sh) ASan's hard_rss_limit_mb bounds memory instead.
        if mem_mb and "ASAN_OPTIONS" not in os.environ:
            b = mem_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    if full:
        out = Path(tmp) / (path.stem + ".so")
        cmd = [str(gatec), str(path), "-o", str(out)]
    else:
        cmd = [str(gatec), str(path), f"--compile-to={phase}", "-o", "/dev/null"]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=timeout,
                           preexec_fn=limits)
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, err = None, (e.stderr or b"").decode("utf-8", "replace")
    dt = time.monotonic() - t0
    if full:
        out.unlink(missing_ok=True)

    problems = []
    if rc is None:
        problems.append(f"timeout after {timeout} s")
    elif rc < 0:
        problems.append(f"killed by {signal_name(rc)}")
    elif rc not in (0, 1):
        problems.append(f"exit code {rc}")
    if rc is not None and rc != 0:
        if not err.strip():
            problems.append("empty stderr")
        elif path.name not in err:
            problems.append("stderr does not name the model file")
        for m in CRASH_MARKERS:
            if m in err:
                problems.append(f"stderr contains '{m}'")
    return {"path": path, "rc": rc, "stderr": err, "problems": problems,
            "time": dt, "imported": False}


def run_file(gatec, path, timeout, mem_mb, phase, full, tmp):
    """With `full`: the import first; a file that imports is then compiled
    through the whole pipeline (and counts as a full compile)."""
    r = run_one(gatec, path, timeout, mem_mb, phase if not full else "onnx")
    if not full or r["rc"] != 0 or r["problems"]:
        return r
    r = run_one(gatec, path, timeout, mem_mb, full=True, tmp=tmp)
    r["imported"] = True
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gatec", type=Path, default=REPO / "build" / "bin" / "gatec")
    ap.add_argument("--corpus", type=Path, default=REPO / "test" / "Fuzz" / "Inputs" / "corpus")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--mem-limit-mb", type=int, default=4096)
    ap.add_argument("--compile-to", default="onnx",
                    help="the phase each file is compiled to (default onnx)")
    ap.add_argument("--full", action="store_true",
                    help="compile each file to a model library (whole pipeline)")
    ap.add_argument("--progress", type=int, default=0,
                    help="print the running counts every N files")
    ap.add_argument("--stderr-lines", type=int, default=8,
                    help="lines of stderr shown per failure")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="also print the first stderr line of every rejection")
    args = ap.parse_args()

    gatec = args.gatec if args.gatec.is_absolute() else (Path.cwd() / args.gatec)
    if not gatec.exists() and (REPO / args.gatec).exists():
        gatec = REPO / args.gatec
    if not os.access(gatec, os.X_OK):
        print(f"run_fuzz_corpus: no executable gatec at {gatec}", file=sys.stderr)
        return 2
    files = sorted(p for p in args.corpus.iterdir() if p.is_file())
    if not files:
        print(f"run_fuzz_corpus: no files in {args.corpus}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="gatec-fuzz-") as tmp, \
            ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        results = []
        for r in ex.map(
                lambda p: run_file(gatec, p, args.timeout, args.mem_limit_mb,
                                   args.compile_to, args.full, tmp), files):
            results.append(r)
            if args.progress and r["problems"]:
                print(f"problem: {r['path'].name}: " + "; ".join(r["problems"])
                      + " | " + " / ".join(r["stderr"].splitlines()[:3])[:600],
                      flush=True)
            if args.progress and len(results) % args.progress == 0:
                by = {}
                for q in results:
                    by[classify(q)] = by.get(classify(q), 0) + 1
                print(f"progress: {len(results)} files, "
                      f"{sum(1 for q in results if q['imported'])} full "
                      f"compiles, {by}", flush=True)

    failures = [r for r in results if r["problems"]]
    accepted = sum(1 for r in results if not r["problems"] and r["rc"] == 0)
    rejected = sum(1 for r in results if not r["problems"] and r["rc"] == 1)
    if args.verbose:
        for r in results:
            if not r["problems"]:
                first = r["stderr"].strip().splitlines()[:1]
                print(f"  {'ok ' if r['rc'] == 0 else 'rej'} {r['path'].name}: "
                      f"{first[0][:200] if first else ''}")
    for r in failures:
        rc = r["rc"]
        what = "timeout" if rc is None else (signal_name(rc) if rc < 0 else f"rc={rc}")
        print(f"FAIL {r['path'].name} ({what}, {r['time']:.1f} s): "
              + "; ".join(r["problems"]))
        for line in r["stderr"].splitlines()[:args.stderr_lines]:
            print(f"    | {line[:300]}")
    print(f"fuzz corpus: {len(results)} files, {accepted} accepted, "
          f"{rejected} rejected cleanly, {len(failures)} failures")
    if args.full:
        by = {}
        for r in results:
            by[classify(r)] = by.get(classify(r), 0) + 1
        past = sum(1 for r in results if r["imported"])
        print(f"classes: clean error {by.get('clean error', 0)}, accepted "
              f"{by.get('accepted', 0)}, crash "
              f"{by.get('crash', 0)}, hang {by.get('hang', 0)}, memory "
              f"{by.get('memory', 0)}; full compiles (imported) {past}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
