#!/usr/bin/env python3
"""Models whose graph (or Scan body) repeats an input or output name, or
leaves one unnamed (test/Import/graph-names.test).

usage: make_name_models.py OUTDIR
"""
import os
import sys

import onnx
from onnx import TensorProto as TP
from onnx import helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def vi(name, shape=(2,)):
    return helper.make_tensor_value_info(name, TP.FLOAT, list(shape))


def save(name, inputs, outputs, nodes):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, os.path.join(out, name + ".onnx"))


relu = helper.make_node("Relu", ["x"], ["y"], name="relu")
save("dup_input", [vi("x"), vi("x")], [vi("y")], [relu])
save("dup_output", [vi("x")], [vi("y"), vi("y")], [relu])
save("unnamed_input", [vi("")], [vi("y")],
     [helper.make_node("Relu", [""], ["y"], name="relu")])
# An output that is also an input keeps its name on both sides: accepted.
save("input_is_output", [vi("x")], [vi("x"), vi("y")], [relu])

# A Scan body whose two inputs (state, scan element) have the same name.
body = helper.make_graph(
    [helper.make_node("Add", ["s", "s"], ["s_out"], name="body_add"),
     helper.make_node("Identity", ["s"], ["e_out"], name="body_id")],
    "body", [vi("s"), vi("s")], [vi("s_out"), vi("e_out")])
scan = helper.make_node("Scan", ["init", "seq"], ["final", "scanned"],
                        name="scan", num_scan_inputs=1, body=body)
save("dup_scan_input", [vi("init"), vi("seq", (3, 2))],
     [vi("final"), vi("scanned", (3, 2))], [scan])
