"""check_blob.py IR.mlir NAME MODEL.onnx: the dense_resource blob NAME in the
printed IR holds exactly the bytes of initializer NAME of MODEL (read with
onnx.numpy_helper, i.e. independently of gatec)."""
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ir, name, model = sys.argv[1:4]
text = open(ir).read()
m = re.search(r'^\s*"?%s"?: "0x([0-9A-Fa-f]+)"' % re.escape(name), text, re.M)
if not m:
    sys.exit("blob %s not found in %s" % (name, ir))
raw = bytes.fromhex(m.group(1))[4:]  # first 4 bytes: the blob's alignment
init = {t.name: t for t in onnx.load(model, load_external_data=True).graph.initializer}
ref = numpy_helper.to_array(init[name])
got = np.frombuffer(raw, dtype=ref.dtype).reshape(ref.shape)
if not np.array_equal(got, ref):
    sys.exit("blob %s differs from the initializer" % name)
print("blob %s: %d values equal" % (name, ref.size))
