#!/usr/bin/env python3
"""Runs the ONNX backend node tests of the operators gatec claims through its importer.

The node tests come from the installed onnx wheel's test cases, written to
build/onnx-node-data/test_*/model.onnx by onnx_node_data.py. The claimed operator set is the
OPS and EXPANDED lists of dialects/onnx/gen_onnx_ops.py plus Constant. A test is claimed when
every node of its model (main graph and all subgraphs, default domain only) has a
claimed op type; other tests are skipped.

Each claimed test runs `gatec model.onnx --compile-to=onnx -o /dev/null`:
  pass          rc 0
  clean reject  rc 1 and a non-empty stderr that names the model file
  crash         anything else (signal, other rc, timeout, rc 1 with no message)

test/scripts/onnx_node_tests_expected.txt lists the tests that may cleanly
reject, one per line as `test_name  # reason`. A claimed test that is not listed
must pass; a listed test that passes is reported ("unexpectedly passing, remove
from list") and fails the run, so the list stays honest. A listed test that
crashes is a failure too.

    .venv/bin/python test/scripts/onnx_node_tests.py [--gatec PATH] [--filter RE]
        [--list-failures] [--write-expected] [--jobs N] [--timeout S]

--write-expected rewrites the expected file from this run: every clean reject
of the tests run is listed (an entry that is already there keeps its reason,
a new one gets the first line of gatec's error as its reason); entries for
tests this run did not execute (outside --filter) are kept. Review the result.
"""
import argparse
import concurrent.futures
import importlib.util
import os
import re
import subprocess
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXPECTED = os.path.join(HERE, "onnx_node_tests_expected.txt")
DEFAULT_DOMAINS = ("", "ai.onnx")


def claimed_ops():
    path = os.path.join(ROOT, "dialects", "onnx", "gen_onnx_ops.py")
    spec = importlib.util.spec_from_file_location("gen_onnx_ops", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return set(mod.OPS) | set(mod.EXPANDED) | {"Constant"}


def node_test_dir():
    """The node tests of the installed onnx, written on first use (onnx_node_data.py)."""
    sys.path.insert(0, HERE)
    import onnx_node_data

    return onnx_node_data.generate()


def graph_ops(graph, out):
    """Adds (domain, op_type) of every node of graph and its subgraphs to out."""
    for node in graph.node:
        out.add((node.domain, node.op_type))
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                graph_ops(attr.g, out)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    graph_ops(g, out)


def unclaimed_ops(model_path, ops):
    """The op types of the model that gatec does not claim (empty: claimed)."""
    model = onnx.load(model_path, load_external_data=False)
    used = set()
    graph_ops(model.graph, used)
    # Local functions are called by nodes of a non-default domain, which are
    # unclaimed anyway; their bodies are listed for completeness of the report.
    for fn in model.functions:
        for node in fn.node:
            used.add((node.domain, node.op_type))
    bad = set()
    for domain, op in used:
        if domain not in DEFAULT_DOMAINS:
            bad.add("%s.%s" % (domain, op))
        elif op not in ops:
            bad.add(op)
    return bad


def read_expected(path):
    entries = {}
    if not os.path.exists(path):
        return entries
    with open(path) as f:
        for line in f:
            name, _, reason = line.partition("#")
            name = name.strip()
            if name:
                entries[name] = reason.strip()
    return entries


def write_expected(path, entries):
    width = max([len(n) for n in entries] + [0]) + 2
    with open(path, "w") as f:
        for name in sorted(entries):
            f.write("%s# %s\n" % (name.ljust(width), entries[name]))


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def run_one(gatec, name, model_path, timeout):
    """Returns (name, outcome, message): outcome is pass, reject or crash."""
    cmd = [gatec, model_path, "--compile-to=onnx", "-o", os.devnull]
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return name, "crash", "timeout after %d s" % timeout
    except OSError as e:
        return name, "crash", "could not run %s: %s" % (gatec, e)
    err = p.stderr.decode("utf-8", "replace")
    line = first_line(err)
    if p.returncode == 0:
        return name, "pass", ""
    if p.returncode < 0:
        return name, "crash", "killed by signal %d: %s" % (-p.returncode, line or "(no message)")
    if p.returncode != 1:
        return name, "crash", "rc %d: %s" % (p.returncode, line)
    if not line:
        return name, "crash", "rc 1 with an empty message"
    if model_path not in err and "model.onnx" not in err:
        return name, "crash", "rc 1, message does not name the model: %s" % line
    return name, "reject", line.replace(model_path + ": ", "", 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    ap.add_argument("--filter", default=None, help="regex on the test name (re.search)")
    ap.add_argument("--list-failures", action="store_true",
                    help="also list expected clean rejects with their messages")
    ap.add_argument("--write-expected", action="store_true",
                    help="write this run's clean rejects into the expected file")
    ap.add_argument("--expected", default=EXPECTED)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=60)
    args = ap.parse_args()

    gatec = os.path.abspath(args.gatec)
    if not os.access(gatec, os.X_OK):
        print("error: gatec not found at %s (use --gatec)" % gatec, file=sys.stderr)
        return 2
    ops = claimed_ops()
    expected = read_expected(args.expected)
    data = node_test_dir()
    pattern = re.compile(args.filter) if args.filter else None

    tests, skipped = [], {}
    for name in sorted(os.listdir(data)):
        model = os.path.join(data, name, "model.onnx")
        if not name.startswith("test_") or not os.path.exists(model):
            continue
        if pattern and not pattern.search(name):
            continue
        bad = unclaimed_ops(model, ops)
        if bad:
            skipped[name] = bad
        else:
            tests.append((name, model))

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda t: run_one(gatec, t[0], t[1], args.timeout), tests))

    passed, expected_rejects, failures, rejects = [], [], [], {}
    for name, outcome, msg in results:
        if outcome == "reject":
            rejects[name] = msg
        listed = name in expected
        if outcome == "pass" and not listed:
            passed.append(name)
        elif outcome == "pass":
            passed.append(name)
            failures.append((name, "unexpectedly passing, remove from list"))
        elif outcome == "reject" and listed:
            expected_rejects.append((name, msg))
        elif outcome == "reject":
            failures.append((name, "rejected: " + msg))
        else:
            failures.append((name, "CRASH: " + msg))

    print("onnx node tests: %d passed / %d claimed (%d skipped: ops not claimed), "
          "%d expected-unsupported, %d failures"
          % (len(passed), len(tests), len(skipped), len(expected_rejects), len(failures)))
    if failures:
        print("failures:")
        for name, msg in failures:
            print("  %s: %s" % (name, msg))
    if args.list_failures and expected_rejects:
        print("expected-unsupported:")
        for name, msg in expected_rejects:
            print("  %s: %s  [listed: %s]" % (name, msg, expected[name]))

    if args.write_expected:
        ran = {name for name, _ in tests}
        new = {n: r for n, r in expected.items() if n not in ran}
        for name, msg in rejects.items():
            new[name] = expected.get(name) or msg
        write_expected(args.expected, new)
        print("wrote %d entries to %s" % (len(new), args.expected))

    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
