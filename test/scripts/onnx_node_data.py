#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed onnx wheel to a folder.

onnx 1.23 no longer ships onnx/backend/test/data/node; it ships the test cases
(onnx.backend.test.case.node) that generate it. This writes every case in the
layout the wheels up to 1.22 shipped and onnxruntime's test runner reads:
DIR/test_NAME/model.onnx and DIR/test_NAME/test_data_set_K/{input,output}_J.pb.
The folder is written once per onnx version (DIR/.onnx-version records it).

    .venv/bin/python test/scripts/onnx_node_data.py [DIR]

DIR defaults to build/onnx-node-data in the repository.
"""
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_DIR = os.path.join(ROOT, "build", "onnx-node-data")


def _write_value(path, value, vinfo):
    t = vinfo.type
    if t.HasField("sequence_type"):
        proto = numpy_helper.from_list(value, vinfo.name)
    elif t.HasField("optional_type"):
        proto = numpy_helper.from_optional(value, vinfo.name)
    elif t.HasField("map_type"):
        proto = numpy_helper.from_dict(value, vinfo.name)
    elif isinstance(value, onnx.TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(np.asarray(value), vinfo.name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def generate(out_dir=DEFAULT_DIR):
    """Writes the node tests to out_dir unless they are there for this onnx."""
    stamp = os.path.join(out_dir, ".onnx-version")
    if os.path.exists(stamp) and open(stamp).read().strip() == onnx.__version__:
        return out_dir
    from onnx.backend.test.case import node

    tmp = out_dir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    for case in cases:
        d = os.path.join(tmp, case.name)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, "test_data_set_%d" % i)
            os.makedirs(ds)
            for j, v in enumerate(inputs):
                _write_value(os.path.join(ds, "input_%d.pb" % j), v, case.model.graph.input[j])
            for j, v in enumerate(outputs):
                _write_value(os.path.join(ds, "output_%d.pb" % j), v, case.model.graph.output[j])
    with open(os.path.join(tmp, ".onnx-version"), "w") as f:
        f.write(onnx.__version__ + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.rename(tmp, out_dir)
    return out_dir


if __name__ == "__main__":
    print(generate(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DIR))
