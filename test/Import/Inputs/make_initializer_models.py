"""Writes models whose initializers use every TensorProto encoding.

usage: make_initializer_models.py OUTDIR
  raw.onnx       W as raw_data, b as float_data (typed field)
  typed.onnx     int64_data, int32_data (INT8), double_data
  external.onnx  W in external file weights.bin at a non-zero offset
The values are printed as the test's reference (numpy), one per line.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
W = rng.standard_normal((4, 80)).astype(np.float32)  # > 64 elements: blob
b = np.arange(80, dtype=np.float32) / 8


def model(inits, name):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 80])
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"], name="mm"),
             helper.make_node("Add", ["xw", "b"], ["y"], name="add")]
    g = helper.make_graph(nodes, name, [x], [y], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


raw_w = numpy_helper.from_array(W, "W")                   # raw_data
typed_b = helper.make_tensor("b", TensorProto.FLOAT, [80], b.tolist())  # float_data
onnx.save(model([raw_w, typed_b], "raw"), os.path.join(out, "raw.onnx"))

# Typed fields of other element types feed a small graph of Casts.
i64 = helper.make_tensor("i64", TensorProto.INT64, [3], [-3, 0, 1 << 40])
i8 = helper.make_tensor("i8", TensorProto.INT8, [3], [-128, 5, 127])
f64 = helper.make_tensor("f64", TensorProto.DOUBLE, [2], [0.25, -1.5])
outs = [helper.make_tensor_value_info(n, t, [k]) for n, t, k in
        [("o64", TensorProto.INT64, 3), ("o8", TensorProto.INT8, 3),
         ("od", TensorProto.DOUBLE, 2)]]
g = helper.make_graph(
    [helper.make_node("Identity", ["i64"], ["o64"], name="id64"),
     helper.make_node("Identity", ["i8"], ["o8"], name="id8"),
     helper.make_node("Identity", ["f64"], ["od"], name="idd")],
    "typed", [], outs, initializer=[i64, i8, f64])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "typed.onnx"))

# External data: W at offset 64 of weights.bin, after 64 bytes of padding.
with open(os.path.join(out, "weights.bin"), "wb") as f:
    f.write(b"\0" * 64)
    f.write(W.tobytes())
ext = TensorProto()
ext.name, ext.data_type = "W", TensorProto.FLOAT
ext.dims.extend(W.shape)
ext.data_location = TensorProto.EXTERNAL
for k, v in [("location", "weights.bin"), ("offset", "64"),
             ("length", str(W.nbytes))]:
    e = ext.external_data.add()
    e.key, e.value = k, v
onnx.save(model([ext, typed_b], "external"), os.path.join(out, "external.onnx"))

# Broken external data: the file is too short.
with open(os.path.join(out, "short.bin"), "wb") as f:
    f.write(W.tobytes()[:100])
ext.external_data[0].value = "short.bin"
ext.external_data[1].value = "0"
onnx.save(model([ext, typed_b], "short"), os.path.join(out, "short.onnx"))
ext.external_data[0].value = "missing.bin"
onnx.save(model([ext, typed_b], "missing"), os.path.join(out, "missing.onnx"))

print("W[0,0:3] = %r" % W[0, :3].tolist())

# External data that escapes the model's directory (refused, as onnxruntime
# does): a symbolic link to a file outside it, a link to a folder outside it,
# and a location with a '..' component. outside/secret.bin holds as many bytes
# as W needs, so only the path check can refuse it.
os.makedirs(os.path.join(out, "outside"), exist_ok=True)
with open(os.path.join(out, "outside", "secret.bin"), "wb") as f:
    f.write(W.tobytes())
os.makedirs(os.path.join(out, "m"), exist_ok=True)
os.symlink(os.path.join("..", "outside", "secret.bin"),
           os.path.join(out, "m", "link.bin"))
os.symlink(os.path.join("..", "outside"), os.path.join(out, "m", "linkdir"))
for name, loc in [("symlink", "link.bin"), ("symlinkdir", "linkdir/secret.bin"),
                  ("dotdot", "../outside/secret.bin"),
                  ("nul", "../outside/secret.bin\0.bin")]:
    ext.external_data[0].value = loc
    onnx.save(model([ext, typed_b], name), os.path.join(out, "m", name + ".onnx"))
# A link that stays inside the directory is followed.
os.symlink("weights.bin", os.path.join(out, "inside.bin"))
ext.external_data[0].value = "inside.bin"
ext.external_data[1].value = "64"
onnx.save(model([ext, typed_b], "inside"), os.path.join(out, "inside.onnx"))
# offset + length overflows int64.
ext.external_data[0].value = "weights.bin"
ext.external_data[1].value = str(2**63 - 100)
onnx.save(model([ext, typed_b], "overflow"), os.path.join(out, "overflow.onnx"))
# An offset that does not fit in int64.
ext.external_data[1].value = str(2**64)
onnx.save(model([ext, typed_b], "bigoffset"), os.path.join(out, "bigoffset.onnx"))

# Empty initializers in every encoding (typed fields with no values: the
# memcpy of zero bytes from a null pointer), feeding a Concat with a [2]
# tensor so that the output has values.
empties = [helper.make_tensor("ef", TensorProto.FLOAT, [0], []),
           numpy_helper.from_array(np.zeros((0,), np.float32), "er")]
empties[1].raw_data = b""
full = numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "full")
y2 = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
g = helper.make_graph([helper.make_node("Concat", ["ef", "full", "er"], ["y"],
                                        name="cat", axis=0)],
                      "empty", [], [y2], initializer=empties + [full])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "empty.onnx"))
