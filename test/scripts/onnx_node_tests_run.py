#!/usr/bin/env python3
"""Runs the ONNX backend node tests (onnx 1.23 wheel, written by onnx_node_data.py) of every operator gatec
claims on the CPU: `gatec-run --onnx-test-dir DIR` compiles DIR/model.onnx
into a library and compares each test_data_set_* with its expected outputs
(atol = rtol = 1e-4; for a model with a float16 output 1e-3 and with a
bfloat16 one 1e-2, about one unit in the last place of those types: gatec
computes in f32 and rounds once where the reference rounds between steps).

Tests the importer already rejects on purpose (onnx_node_tests_expected.txt)
are skipped. Tests listed in onnx_node_tests_run_expected.txt with a reason
(a construct the CPU backend does not lower yet) may fail; one of them that
passes is reported so the list stays honest. Any other failure fails.

usage: onnx_node_tests_run.py [--gatec-run PATH] [--filter REGEX]
       [--write-expected] [--jobs N]
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import onnx_node_tests as nt  # noqa: E402

RUN_EXPECTED = os.path.join(HERE, "onnx_node_tests_run_expected.txt")


def tolerance(model):
    """atol = rtol for the model's narrowest float output type."""
    import onnx
    types = {o.type.tensor_type.elem_type
             for o in onnx.load(model, load_external_data=False).graph.output}
    if onnx.TensorProto.BFLOAT16 in types:
        return 1e-2
    if onnx.TensorProto.FLOAT16 in types:
        return 1e-3
    return 1e-4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec-run", default=os.path.join(nt.ROOT, "build", "bin", "gatec-run"))
    ap.add_argument("--filter", default=".*")
    ap.add_argument("--write-expected", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    ops = nt.claimed_ops()
    base = nt.node_test_dir()
    import_expected = nt.read_expected(nt.EXPECTED)
    run_expected = nt.read_expected(RUN_EXPECTED) if os.path.exists(RUN_EXPECTED) else {}
    tests = []
    for name in sorted(os.listdir(base)):
        model = os.path.join(base, name, "model.onnx")
        if not re.search(args.filter, name) or not os.path.exists(model):
            continue
        if nt.unclaimed_ops(model, ops) or name in import_expected:
            continue
        tests.append(name)

    def run(name):
        tol = tolerance(os.path.join(base, name, "model.onnx"))
        r = subprocess.run([args.gatec_run, "--onnx-test-dir=" + os.path.join(base, name),
                            "--atol=%g" % tol, "--rtol=%g" % tol],
                           capture_output=True, text=True, timeout=300)
        lines = r.stderr.strip().splitlines() or [""]
        # gatec's own message (why it could not compile) comes first.
        err = next((l for l in lines if "error:" in l), lines[-1])
        err = re.sub(r"^\S*/model\.onnx: ", "", err)
        err = re.sub(r"/tmp/gatec-run-\w+/", "", err)
        return name, r.returncode, err

    passed, failures, expected_fail, unexpected_pass, new_expected = 0, [], 0, [], {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for name, rc, err in pool.map(run, tests):
            if rc == 0:
                passed += 1
                if name in run_expected:
                    unexpected_pass.append(name)
            elif name in run_expected:
                expected_fail += 1
                new_expected[name] = run_expected[name]
            else:
                failures.append((name, err))
                new_expected[name] = err.replace("gatec-run: ", "")[:200]
    for name, err in failures:
        print("FAIL %s: %s" % (name, err))
    for name in unexpected_pass:
        print("UNEXPECTED PASS %s (remove it from onnx_node_tests_run_expected.txt)" % name)
    if args.write_expected:
        with open(RUN_EXPECTED, "w") as f:
            f.write("# ONNX node tests that import but do not yet run on the CPU backend,\n"
                    "# with the first line of the error. Written by onnx_node_tests_run.py\n"
                    "# --write-expected; review before committing.\n")
            for name in sorted(new_expected):
                f.write("%s  # %s\n" % (name, new_expected[name]))
    print("onnx node tests on the CPU: %d passed / %d run, %d expected failures, "
          "%d failures, %d unexpected passes"
          % (passed, len(tests), expected_fail, len(failures), len(unexpected_pass)))
    return 1 if failures or unexpected_pass else 0


if __name__ == "__main__":
    sys.exit(main())
