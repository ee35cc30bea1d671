#!/usr/bin/env python3
"""Generates the malformed / adversarial ONNX corpus of test/Fuzz/Inputs/corpus/.

Every file must make `gatec FILE --compile-to=onnx` either succeed or print a
clear error naming the file and exit with 1 (checked by run_fuzz_corpus.py).
The corpus is deterministic (fixed seed) and commit-sized (~150 small files):

  (a) byte-level mutations of tiny valid models (truncations, bit flips, byte
      overwrites, inserted garbage, empty file, random bytes),
  (b) structure-aware mutations built with onnx.helper / protobuf (bad
      initializers, external data, opsets, undefined values, bad attributes,
      shape errors, subgraphs, local functions, ...),
  (c) ONNX text-format (.onnxtxt) files with syntax errors.

Auxiliary files (external data) go to the `external/` subdirectory; the
runner only runs the files at the top level.

  .venv/bin/python test/scripts/make_fuzz_corpus.py            # the corpus
  .venv/bin/python test/scripts/make_fuzz_corpus.py \\
      --out /tmp/gatec_fuzz --campaign 2000 --seed 7            # big random run

--campaign N writes N random mutants (byte-level and random structural edits
of the seeds and of test/models/*.onnx) instead of the committed corpus;
--gentle F makes a fraction F of them by edits that mostly keep the model
importable (input dims, edge float values, opsets, input dtypes), so that
run_fuzz_corpus.py --full compiles them through the whole pipeline.
"""
import argparse
import os
import random
import struct
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "test" / "models"
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

# ---------------------------------------------------------------------------
# Small builders
# ---------------------------------------------------------------------------


def vi(name, shape, elem=TP.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def node(op, ins, outs, name=None, domain=None, **attrs):
    return helper.make_node(op, ins, outs, name=name, domain=domain, **attrs)


def const_i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def const_f32(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def model(nodes, inputs, outputs, inits=(), opset=17, value_info=(),
          functions=(), ir=8, sparse=(), extra_opsets=()):
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs),
                          initializer=list(inits), value_info=list(value_info),
                          sparse_initializer=list(sparse))
    opsets = [] if opset is None else [helper.make_opsetid("", opset)]
    opsets += [helper.make_opsetid(d, v) for d, v in extra_opsets]
    return helper.make_model(g, opset_imports=opsets, ir_version=ir,
                             functions=list(functions))


def tiny_mlp():
    """x[2,4] -> MatMul(W) -> Add(b) -> Relu -> Reshape -> Transpose -> Softmax."""
    w = const_f32("w", np.arange(16, dtype=np.float32).reshape(4, 4) / 16)
    b = helper.make_tensor("b", TP.FLOAT, [4], [0.5, -0.5, 0.25, -0.25])
    nodes = [
        node("MatMul", ["x", "w"], ["m"], name="mm"),
        node("Add", ["m", "b"], ["a"], name="add"),
        node("Relu", ["a"], ["r"], name="relu"),
        node("Constant", [], ["shape"], name="shape_c",
             value=helper.make_tensor("sv", TP.INT64, [2], [4, 2])),
        node("Reshape", ["r", "shape"], ["rs"], name="reshape"),
        node("Transpose", ["rs"], ["t"], name="tr", perm=[1, 0]),
        node("Softmax", ["t"], ["y"], name="sm", axis=-1),
    ]
    return model(nodes, [vi("x", [2, 4])], [vi("y", [2, 4])], [w, b])


def tiny_shape_chain():
    """Dynamic x[N,4]: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    nodes = [
        node("Shape", ["x"], ["s"]),
        node("Gather", ["s", "i0"], ["n"], axis=0),
        node("Unsqueeze", ["n", "ax0"], ["n1"]),
        node("Concat", ["n1", "c22"], ["ns"], axis=0),
        node("Reshape", ["x", "ns"], ["r"]),
        node("Mul", ["r", "two"], ["y"]),
    ]
    inits = [const_i64("i0", 0), const_i64("ax0", [0]), const_i64("c22", [2, 2]),
             const_f32("two", 2.0)]
    return model(nodes, [vi("x", ["N", 4])], [vi("y", ["N", 2, 2])], inits)


def scan_body(nin=2, nout=2):
    body = helper.make_graph(
        [node("Add", ["s_in", "x_t"], ["s_out"]),
         node("Identity", ["s_out"], ["y_t"])],
        "body", [vi("s_in", [2]), vi("x_t", [2])][:nin],
        [vi("s_out", [2]), vi("y_t", [2])][:nout])
    return body


def tiny_scan():
    nodes = [node("Scan", ["s0", "xs"], ["s", "ys"], body=scan_body(),
                  num_scan_inputs=1)]
    return model(nodes, [vi("s0", [2]), vi("xs", [3, 2])],
                 [vi("s", [2]), vi("ys", [3, 2])])


def tiny_function():
    f = helper.make_function(
        "local", "AddRelu", ["a", "b"], ["c"],
        [node("Add", ["a", "b"], ["t"]), node("Relu", ["t"], ["c"])],
        [helper.make_opsetid("", 17)])
    nodes = [node("AddRelu", ["x", "x"], ["y"], domain="local")]
    return model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], functions=[f],
                 extra_opsets=[("local", 1)])


def shape_chain(n):
    """Reshape(x, Identity^n(shape)): a long chain that shape inference
    follows back to the constant."""
    nodes = [node("Identity", ["s"], ["v0"])]
    nodes += [node("Identity", [f"v{i}"], [f"v{i+1}"]) for i in range(n)]
    nodes += [node("Reshape", ["x", f"v{n}"], ["y"])]
    return model(nodes, [vi("x", [2, 4])], [vi("y", [4, 2])], [const_i64("s", [4, 2])])


TEXT_SEED = """<
  ir_version: 8,
  opset_import: ["" : 17]
>
tiny (float[2,4] x) => (float[2,4] y)
<float[4,4] w = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}, float[4] b = {0.5, 0.5, 0.5, 0.5}>
{
  m = MatMul(x, w)
  a = Add(m, b)
  r = Relu(a)
  y = Softmax <axis = -1> (r)
}
"""

def _varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


class Corpus:
    def __init__(self, out: Path):
        self.out = out
        self.names = set()

    def save(self, name, data):
        assert name not in self.names, name
        assert "/" not in name or name.startswith("external/"), name
        self.names.add(name)
        if isinstance(data, onnx.ModelProto):
            data = data.SerializeToString()
        elif isinstance(data, str):
            data = data.encode()
        p = self.out / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


# ---------------------------------------------------------------------------
# (a) byte-level mutations
# ---------------------------------------------------------------------------


def byte_mutants(c: Corpus, rng: random.Random):
    tiny = tiny_mlp().SerializeToString()
    headwise = (MODELS / "gated_attn_headwise.onnx").read_bytes()

    c.save("empty_file.onnx", b"")
    for i, size in enumerate([7, 3000]):
        c.save(f"random_bytes_{i}.onnx", bytes(rng.getrandbits(8) for _ in range(size)))
    c.save("text_in_binary_file.onnx", TEXT_SEED)
    # A length prefix claiming ~2 GiB for ModelProto.graph (field 7).
    c.save("huge_length_prefix.onnx", b"\x08\x08\x3a\xff\xff\xff\xff\x07" + tiny[:64])
    c.save("tiny_mlp_valid.onnx", tiny)  # control: must be accepted

    n = len(tiny)
    for off in sorted(set([1, 9, n // 4, n // 2, 3 * n // 4, n - 1])):
        c.save(f"trunc_{off}_tiny_mlp.onnx", tiny[:off])
    h = len(headwise)
    for off in [3, 1000, h // 2, h - 3]:
        c.save(f"trunc_{off}_gated_attn_headwise.onnx", headwise[:off])

    for i in range(6):
        b = bytearray(tiny)
        k = rng.choice([1, 1, 2, 4, 8])
        for _ in range(k):
            p = rng.randrange(len(b))
            b[p] ^= 1 << rng.randrange(8)
        c.save(f"bitflip{k}_{i}_tiny_mlp.onnx", bytes(b))
    for i in range(1):
        b = bytearray(headwise)
        for _ in range(8):
            p = rng.randrange(len(b))
            b[p] ^= 1 << rng.randrange(8)
        c.save(f"bitflip8_{i}_gated_attn_headwise.onnx", bytes(b))

    interesting = [0x00, 0xff, 0x7f, 0x80, 0x01]
    for i in range(4):
        b = bytearray(tiny)
        for _ in range(rng.choice([1, 3, 6])):
            p = rng.randrange(len(b))
            b[p] = rng.choice(interesting + [rng.getrandbits(8)])
        c.save(f"overwrite_{i}_tiny_mlp.onnx", bytes(b))
    for i in range(2):
        p = rng.randrange(len(tiny))
        junk = bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 4, 33])))
        c.save(f"insert_{p}_tiny_mlp.onnx", tiny[:p] + junk + tiny[p:])
    # Trailing garbage after a complete message.
    c.save("trailing_garbage_tiny_mlp.onnx", tiny + b"\xff\xff\xff")


# ---------------------------------------------------------------------------
# (b) structure-aware mutations
# ---------------------------------------------------------------------------


def structural(c: Corpus):
    x24 = vi("x", [2, 4])
    y24 = vi("y", [2, 4])
    yany = onnx.ValueInfoProto(name="y")  # no type: nothing to conflict with

    def relu_model(extra_inits=(), inp="x", opset=17):
        return model([node("Add", ["x", inp], ["y"])], [x24], [y24],
                     list(extra_inits), opset=opset)

    # --- graph structure -------------------------------------------------
    c.save("missing_initializer.onnx",
           model([node("MatMul", ["x", "w"], ["y"])], [x24], [y24]))
    c.save("undefined_node_input.onnx",
           model([node("Relu", ["nope"], ["y"])], [x24], [y24]))
    c.save("duplicate_output_names.onnx",
           model([node("Relu", ["x"], ["y"]), node("Neg", ["x"], ["y"])], [x24], [y24]))
    c.save("node_outputs_same_name_twice.onnx",
           model([node("Split", ["x"], ["y", "y"], axis=1, num_outputs=2)],
                 [x24], [vi("y", [2, 2])]))
    c.save("duplicate_initializers.onnx",
           model([node("Add", ["x", "c"], ["y"])], [x24], [y24],
                 [const_f32("c", [1, 2, 3, 4]), const_f32("c", [1, 2])]))
    c.save("cycle_two_nodes.onnx",
           model([node("Add", ["x", "b"], ["a"]), node("Relu", ["a"], ["b"]),
                  node("Identity", ["a"], ["y"])], [x24], [y24]))
    c.save("not_topological_order.onnx",
           model([node("Neg", ["r"], ["y"]), node("Relu", ["x"], ["r"])], [x24], [y24]))
    c.save("empty_graph.onnx", model([], [], []))
    c.save("graph_output_not_produced.onnx",
           model([node("Relu", ["x"], ["r"])], [x24], [y24]))
    c.save("identity_absent_input_typed_output.onnx",
           model([node("Identity", [""], ["y"])], [x24], [vi("y", [2])]))
    c.save("no_graph.onnx", onnx.ModelProto(
        ir_version=8, opset_import=[helper.make_opsetid("", 17)]))
    c.save("declared_type_mismatch.onnx",
           model([node("Relu", ["x"], ["y"])], [x24], [vi("y", [2, 4], TP.INT64)]))
    c.save("shape_chain_1000_identity.onnx", shape_chain(1000))

    # --- opsets / domains / op types -----------------------------------
    c.save("opset_5.onnx", relu_model(opset=5))
    c.save("opset_99.onnx", relu_model(opset=99))
    c.save("no_default_opset.onnx",
           model([node("Relu", ["x"], ["y"])], [x24], [y24], opset=None,
                 extra_opsets=[("com.microsoft", 1)]))
    c.save("unknown_op_type.onnx",
           model([node("FrobnicateTensor", ["x"], ["y"])], [x24], [y24]))
    c.save("unknown_domain.onnx",
           model([node("Relu", ["x"], ["y"], domain="com.example.nope")], [x24], [y24]))
    c.save("op_newer_than_opset_trilu.onnx",
           model([node("Trilu", ["x"], ["y"])], [x24], [y24], opset=11))

    # --- wrong number of inputs / outputs --------------------------------
    c.save("relu_three_inputs.onnx",
           model([node("Relu", ["x", "x", "x"], ["y"])], [x24], [y24]))
    c.save("matmul_one_input.onnx", model([node("MatMul", ["x"], ["y"])], [x24], [yany]))
    c.save("add_no_inputs.onnx", model([node("Add", [], ["y"])], [x24], [yany]))
    c.save("sum_no_inputs.onnx", model([node("Sum", [], ["y"])], [x24], [yany]))
    c.save("einsum_no_inputs.onnx",
           model([node("Einsum", [], ["y"], equation="->")], [x24], [yany]))
    c.save("split_zero_outputs.onnx",
           model([node("Split", ["x"], [], axis=0), node("Relu", ["x"], ["y"])],
                 [x24], [y24], opset=18))

    # --- shape errors ----------------------------------------------------
    c.save("matmul_dim_mismatch.onnx",
           model([node("MatMul", ["x", "w"], ["y"])], [x24], [yany],
                 [const_f32("w", np.ones((5, 3)))]))
    c.save("matmul_batch_mismatch.onnx",
           model([node("MatMul", ["a", "b"], ["y"])], [vi("a", [3, 2, 4]), vi("b", [5, 4, 2])],
                 [yany]))
    c.save("add_not_broadcastable.onnx",
           model([node("Add", ["x", "z"], ["y"])], [x24, vi("z", [3])], [yany]))
    c.save("reshape_bad_shape_const.onnx",
           model([node("Reshape", ["x", "s"], ["y"])], [x24], [yany], [const_i64("s", [-2, 4])]))
    c.save("reshape_shape_is_float.onnx",
           model([node("Reshape", ["x", "s"], ["y"])], [x24], [yany], [const_f32("s", [8])]))
    c.save("reshape_shape_2d.onnx",
           model([node("Reshape", ["x", "s"], ["y"])], [x24], [yany], [const_i64("s", [[2, 4]])]))
    # 2^32 * 2^31 wraps to INT64_MIN; the product of the target dims
    # (the factors of 2^64 - 1) wraps to -1: INT64_MIN % -1 traps on x86.
    c.save("reshape_int64_wrap_mod_minus1.onnx",
           model([node("Reshape", ["x", "s"], ["y"])], [vi("x", [2**32, 2**31])], [yany],
                 [const_i64("s", [3, 5, 17, 257, 641, 65537, 6700417, -1])]))
    # The shape operand is a graph input with a huge static length.
    c.save("reshape_shape_input_huge_length.onnx",
           model([node("Reshape", ["x", "s"], ["y"])],
                 [x24, vi("s", [2**40], TP.INT64)], [yany]))
    c.save("concat_rank_mismatch.onnx",
           model([node("Concat", ["x", "z"], ["y"], axis=0)], [x24, vi("z", [4])], [yany]))
    c.save("transpose_bad_perm_duplicate.onnx",
           model([node("Transpose", ["x"], ["y"], perm=[0, 0])], [x24], [yany]))
    c.save("gather_axis_out_of_range.onnx",
           model([node("Gather", ["x", "i"], ["y"], axis=3)], [x24], [yany], [const_i64("i", [0])]))
    c.save("slice_zero_step.onnx",
           model([node("Slice", ["x", "s", "e", "a", "st"], ["y"])], [x24], [yany],
                 [const_i64("s", [0]), const_i64("e", [2]), const_i64("a", [0]),
                  const_i64("st", [0])]))
    # More starts than axes / steps, on a constant (folded) input.
    c.save("slice_starts_longer_than_axes.onnx",
           model([node("Slice", ["d", "s", "e", "a"], ["y"])], [x24], [yany],
                 [const_i64("d", [1, 2, 3, 4, 5, 6]), const_i64("s", [1, 2]),
                  const_i64("e", [4]), const_i64("a", [0])]))
    c.save("slice_steps_shorter_than_starts.onnx",
           model([node("Slice", ["d", "s", "e", "a", "st"], ["y"])], [x24], [yany],
                 [const_i64("d", np.arange(12).reshape(3, 4)), const_i64("s", [0, 0]),
                  const_i64("e", [2, 2]), const_i64("a", [0, 1]), const_i64("st", [1])]))
    c.save("slice_int64_extreme_bounds.onnx",
           model([node("Slice", ["x", "s", "e", "a", "st"], ["y"])], [x24], [yany],
                 [const_i64("s", [INT64_MAX]), const_i64("e", [INT64_MIN]),
                  const_i64("a", [1]), const_i64("st", [INT64_MIN])]))
    c.save("div_int64_min_by_minus1.onnx",
           model([node("Div", ["a", "b"], ["y"])], [], [vi("y", [1], TP.INT64)],
                 [const_i64("a", [INT64_MIN]), const_i64("b", [-1])]))
    c.save("tile_negative_repeats.onnx",
           model([node("Tile", ["x", "r"], ["y"])], [x24], [yany], [const_i64("r", [-3, 1])]))
    c.save("expand_negative_shape.onnx",
           model([node("Expand", ["x", "s"], ["y"])], [x24], [yany], [const_i64("s", [-5, 2, 4])]))
    c.save("constant_of_shape_negative.onnx",
           model([node("ConstantOfShape", ["s"], ["y"])], [], [yany], [const_i64("s", [-2, 3])]))
    c.save("constant_of_shape_huge_splat.onnx",
           model([node("ConstantOfShape", ["s"], ["y"])], [], [yany],
                 [const_i64("s", [2**40, 2**40, 2**40])]))
    c.save("range_huge_length.onnx",
           model([node("Range", ["a", "b", "c"], ["y"])], [], [yany],
                 [const_i64("a", 0), const_i64("b", 2**62), const_i64("c", 1)]))
    c.save("range_nan_inf.onnx",
           model([node("Range", ["a", "b", "c"], ["y"])], [], [yany],
                 [const_f32("a", 0), const_f32("b", np.inf), const_f32("c", np.nan)]))
    c.save("flatten_dims_overflow.onnx",
           model([node("Flatten", ["x"], ["y"], axis=2)], [vi("x", [2**32, 2**31, 3])], [yany]))
    c.save("input_dims_product_overflow.onnx",
           model([node("Relu", ["x"], ["y"])], [vi("x", [2**62, 2**62, 16])], [yany]))
    c.save("input_negative_dim.onnx",
           model([node("Relu", ["x"], ["y"])], [vi("x", [-7, 4])], [yany]))
    c.save("einsum_missing_equation.onnx",
           model([node("Einsum", ["x"], ["y"])], [x24], [yany]))
    c.save("softmax_axis_out_of_range_opset11.onnx",
           model([node("Softmax", ["x"], ["y"], axis=9)], [x24], [yany], opset=11))

    # --- attributes ------------------------------------------------------
    c.save("attr_axis_float.onnx",
           model([node("Softmax", ["x"], ["y"], axis=1.5)], [x24], [yany]))
    c.save("attr_axis_string.onnx",
           model([node("Gather", ["x", "i"], ["y"], axis="one")], [x24], [yany],
                 [const_i64("i", [0])]))
    c.save("attr_perm_as_int.onnx",
           model([node("Transpose", ["x"], ["y"], perm=1)], [x24], [yany]))
    a = onnx.AttributeProto()
    a.name = "axis"  # type UNDEFINED, no value
    n = node("Softmax", ["x"], ["y"])
    n.attribute.append(a)
    c.save("attr_undefined_empty.onnx", model([n], [x24], [yany]))
    c.save("attr_graph_on_relu.onnx",
           model([node("Relu", ["x"], ["y"], body=scan_body())], [x24], [y24]))
    c.save("attr_axis_int64_min.onnx",
           model([node("Softmax", ["x"], ["y"], axis=INT64_MIN)], [x24], [yany]))
    c.save("cast_missing_to.onnx", model([node("Cast", ["x"], ["y"])], [x24], [yany]))
    c.save("cast_to_float_attr.onnx",
           model([node("Cast", ["x"], ["y"], to=1.0)], [x24], [yany]))
    c.save("cast_to_string_type.onnx",
           model([node("Cast", ["x"], ["y"], to=TP.STRING)], [x24], [yany]))
    c.save("cast_to_invalid_type_999.onnx",
           model([node("Cast", ["x"], ["y"], to=999)], [x24], [yany]))
    c.save("scan_missing_num_scan_inputs.onnx",
           model([node("Scan", ["s0", "xs"], ["s", "ys"], body=scan_body())],
                 [vi("s0", [2]), vi("xs", [3, 2])], [vi("s", [2]), vi("ys", [3, 2])]))

    # --- Constant --------------------------------------------------------
    c.save("constant_no_value.onnx",
           model([node("Constant", [], ["y"])], [], [yany]))
    c.save("constant_sparse_value.onnx",
           model([node("Constant", [], ["y"], sparse_value=helper.make_sparse_tensor(
               helper.make_tensor("v", TP.FLOAT, [1], [1.0]),
               helper.make_tensor("i", TP.INT64, [1], [0]), [4]))], [], [yany]))

    # --- tensors / initializers -----------------------------------------
    def add_init(t, name):
        c.save(name, model([node("Add", ["x", t.name], ["y"])], [x24], [yany], [t]))

    t = const_f32("c", [1, 2, 3, 4])
    t.raw_data = t.raw_data[:-3]
    add_init(t, "raw_data_wrong_size.onnx")
    t = helper.make_tensor("c", TP.FLOAT, [4], [1, 2, 3, 4])
    del t.float_data[-1]
    add_init(t, "float_data_count_mismatch.onnx")
    t = onnx.TensorProto(name="c", data_type=TP.FLOAT, dims=[-1])
    add_init(t, "initializer_negative_dim.onnx")
    t = onnx.TensorProto(name="c", data_type=TP.FLOAT, dims=[2**40, 2**40])
    add_init(t, "initializer_huge_dims_overflow.onnx")
    t = onnx.TensorProto(name="c", data_type=TP.FLOAT, dims=[2**20, 2**19])
    add_init(t, "initializer_huge_dims_no_data.onnx")
    t = onnx.TensorProto(name="c", data_type=TP.FLOAT, dims=[0, 2**62, 2**62])
    add_init(t, "initializer_zero_then_overflowing_dims.onnx")
    add_init(helper.make_tensor("c", TP.STRING, [1], [b"abc"]), "initializer_string.onnx")
    t = onnx.TensorProto(name="c", data_type=0, dims=[1], raw_data=b"\0\0\0\0")
    add_init(t, "initializer_data_type_0.onnx")
    # data_type 999 is not a DataType enum value: appended as raw field 2.
    t = onnx.TensorProto(name="c", dims=[1], raw_data=b"\0\0\0\0")
    raw = t.SerializeToString() + b"\x10\xe7\x07"
    g = model([node("Add", ["x", "c"], ["y"])], [x24], [yany])
    g.graph.initializer.add().ParseFromString(raw)
    c.save("initializer_data_type_999.onnx", g)
    sp = helper.make_sparse_tensor(helper.make_tensor("sv", TP.FLOAT, [1], [1.0]),
                                   helper.make_tensor("si", TP.INT64, [1], [0]), [4])
    c.save("sparse_initializer.onnx",
           model([node("Add", ["x", "sv"], ["y"])], [x24], [yany], sparse=[sp]))
    t = numpy_helper.from_array(np.array([True, False, True, True]), "c")
    t.raw_data = b"\x02\xff\x00\x01"
    c.save("bool_raw_data_not_0_1.onnx",
           model([node("Where", ["c", "x", "x"], ["y"])], [x24], [yany], [t]))

    # --- external data ---------------------------------------------------
    c.save("external/short.bin", np.arange(4, dtype=np.float32).tobytes())  # 16 bytes
    c.save("external/w16.bin", np.arange(16, dtype=np.float32).tobytes())   # 64 bytes

    def ext(name, location, dims=(4,), **kv):
        t = onnx.TensorProto(name="c", data_type=TP.FLOAT, dims=list(dims))
        t.data_location = TP.EXTERNAL
        for k, v in [("location", location)] + list(kv.items()):
            if v is None:
                continue
            e = t.external_data.add()
            e.key, e.value = k, str(v)
        add_init(t, name)

    ext("external_data_valid.onnx", "external/short.bin")  # control: accepted
    ext("external_data_missing_file.onnx", "external/does_not_exist.bin")
    ext("external_data_beyond_eof.onnx", "external/short.bin", dims=(64,))
    ext("external_data_offset_beyond_eof.onnx", "external/short.bin", offset=8)
    ext("external_data_length_mismatch.onnx", "external/w16.bin", length=12)
    ext("external_data_dotdot_path.onnx", "../corpus/external/short.bin")
    ext("external_data_absolute_path.onnx", "/etc/passwd")
    ext("external_data_location_is_directory.onnx", "external")
    ext("external_data_offset_int64_max.onnx", "external/w16.bin", offset=INT64_MAX, length=16)
    ext("external_data_negative_offset.onnx", "external/w16.bin", offset=-16)
    ext("external_data_no_location.onnx", None)
    ext("external_data_huge_dims.onnx", "external/w16.bin", dims=(2**40,))

    # --- types -----------------------------------------------------------
    seq = helper.make_tensor_sequence_value_info("x", TP.FLOAT, [2, 4])
    c.save("sequence_typed_input.onnx", model([node("Identity", ["x"], ["y"])], [seq], [yany]))
    mp = helper.make_value_info("x", helper.make_map_type_proto(
        TP.INT64, helper.make_tensor_type_proto(TP.FLOAT, [2])))
    opt = helper.make_value_info("x", helper.make_optional_type_proto(
        helper.make_tensor_type_proto(TP.FLOAT, [2])))
    c.save("input_without_type.onnx",
           model([node("Relu", ["x"], ["y"])], [onnx.ValueInfoProto(name="x")], [yany]))
    c.save("input_string_elem_type.onnx",
           model([node("Identity", ["x"], ["y"])], [vi("x", [2], TP.STRING)], [yany]))
    c.save("output_sequence_type.onnx",
           model([node("Relu", ["x"], ["y"])], [x24],
                 [helper.make_tensor_sequence_value_info("y", TP.FLOAT, [2, 4])]))

    # --- Scan / subgraphs ------------------------------------------------
    empty = helper.make_graph([], "body", [], [])
    c.save("scan_empty_body.onnx",
           model([node("Scan", ["s0", "xs"], ["s", "ys"], body=empty, num_scan_inputs=1)],
                 [vi("s0", [2]), vi("xs", [3, 2])], [vi("s", [2]), vi("ys", [3, 2])]))
    c.save("scan_no_body.onnx",
           model([node("Scan", ["s0", "xs"], ["s", "ys"], num_scan_inputs=1)],
                 [vi("s0", [2]), vi("xs", [3, 2])], [vi("s", [2]), vi("ys", [3, 2])]))
    c.save("scan_no_inputs_no_outputs.onnx",
           model([node("Scan", [], [], body=empty, num_scan_inputs=0),
                  node("Relu", ["x"], ["y"])], [x24], [y24]))
    c.save("scan_body_arity_mismatch.onnx",
           model([node("Scan", ["s0", "xs"], ["s", "ys"], body=scan_body(1, 1),
                       num_scan_inputs=1)],
                 [vi("s0", [2]), vi("xs", [3, 2])], [vi("s", [2]), vi("ys", [3, 2])]))
    c.save("scan_num_scan_inputs_too_large.onnx",
           model([node("Scan", ["s0", "xs"], ["s", "ys"], body=scan_body(),
                       num_scan_inputs=5)],
                 [vi("s0", [2]), vi("xs", [3, 2])], [vi("s", [2]), vi("ys", [3, 2])]))
    bad_body = helper.make_graph([node("Relu", ["nope"], ["y_t"])], "body",
                                 [vi("s_in", [2]), vi("x_t", [2])],
                                 [vi("s_in", [2]), vi("y_t", [2])])
    # Scan bodies nested 150 deep (beyond protobuf's default recursion limit
    # of 100), encoded by hand: the Python protobuf refuses such depths.
    def ld(field, payload):  # a length-delimited field
        return _varint(field << 3 | 2) + _varint(len(payload)) + payload

    def wrap(graph_bytes):
        attr = ld(1, b"body") + ld(6, graph_bytes) + _varint(20 << 3) + _varint(5) \
            + _varint(2 << 3) + _varint(1)  # type GRAPH, i = 1 (ignored)
        scan = ld(1, b"s_in") + ld(1, b"x_t") + ld(2, b"s_out") + ld(2, b"y_t") \
            + ld(4, b"Scan") + ld(5, attr) \
            + ld(5, helper.make_attribute("num_scan_inputs", 1).SerializeToString())
        return (ld(1, scan) + ld(2, b"body")
                + ld(11, vi("s_in", [2]).SerializeToString())
                + ld(11, vi("x_t", [3, 2]).SerializeToString())
                + ld(12, vi("s_out", [2]).SerializeToString())
                + ld(12, vi("y_t", [3, 2]).SerializeToString()))

    g = scan_body().SerializeToString()
    for _ in range(150):
        g = wrap(g)
    top = model([], [vi("s0", [2]), vi("xs", [3, 2])], [vi("s", [2]), vi("ys", [3, 2])])
    top_bytes = top.SerializeToString()
    # Re-encode ModelProto.graph (field 7) with the nested node appended.
    graph = top.graph.SerializeToString()
    scan = ld(1, b"s0") + ld(1, b"xs") + ld(2, b"s") + ld(2, b"ys") + ld(4, b"Scan") \
        + ld(5, _varint(1 << 3 | 2) + _varint(4) + b"body" + ld(6, g)
             + _varint(20 << 3) + _varint(5)) \
        + ld(5, helper.make_attribute("num_scan_inputs", 1).SerializeToString())
    top.ClearField("graph")
    c.save("scan_nested_150_deep.onnx",
           top.SerializeToString() + ld(7, ld(1, scan) + graph))
    assert top_bytes

    # --- model-local functions ------------------------------------------
    op = [helper.make_opsetid("", 17)]
    rec = helper.make_function("local", "F", ["a"], ["b"],
                               [node("F", ["a"], ["b"], domain="local")], op)
    c.save("function_recursive.onnx",
           model([node("F", ["x"], ["y"], domain="local")], [x24], [yany],
                 functions=[rec], extra_opsets=[("local", 1)]))
    fs = [helper.make_function("local", "F0", ["a"], ["b"],
                               [node("Identity", ["a"], ["b"])], op)]
    for k in range(1, 41):
        fs.append(helper.make_function(
            "local", f"F{k}", ["a"], ["b"],
            [node(f"F{k-1}", ["a"], ["t"], domain="local"),
             node(f"F{k-1}", ["t"], ["b"], domain="local")], op))
    c.save("function_exponential_expansion.onnx",
           model([node("F40", ["x"], ["y"], domain="local")], [x24], [yany],
                 functions=fs, extra_opsets=[("local", 1)]))
    f = helper.make_function("local", "G", ["a", "b"], ["c"],
                             [node("Add", ["a", "b"], ["c"])], op)
    c.save("function_call_missing_inputs.onnx",
           model([node("G", ["x"], ["y"], domain="local")], [x24], [yany],
                 functions=[f], extra_opsets=[("local", 1)]))
    f = helper.make_function("local", "H", ["a"], ["b"],
                             [node("Softmax", ["a"], ["b"])], op, attributes=["ax"])
    f.node[0].attribute.append(onnx.AttributeProto(name="axis", ref_attr_name="ax",
                                                   type=onnx.AttributeProto.INT))
    c.save("function_attr_ref_wrong_type.onnx",
           model([node("H", ["x"], ["y"], domain="local", ax="not an int")], [x24], [yany],
                 functions=[f], extra_opsets=[("local", 1)]))


# ---------------------------------------------------------------------------
# (c) text format
# ---------------------------------------------------------------------------


def text_cases(c: Corpus):
    T = TEXT_SEED
    c.save("text_valid.onnxtxt", T)  # control: accepted
    c.save("text_empty.onnxtxt", "")
    c.save("text_missing_closing_brace.onnxtxt", T.rstrip()[:-1])
    c.save("text_unterminated_string.onnxtxt", T.replace('["" : 17]', '["ai.onnx : 17]'))
    c.save("text_bad_type.onnxtxt", T.replace("float[2,4] x", "flaot[2,4] x"))
    c.save("text_garbage_node.onnxtxt", T.replace("r = Relu(a)", "r = Relu(a,,) ]]"))
    c.save("text_tensor_literal_count_mismatch.onnxtxt",
           T.replace("{0.5, 0.5, 0.5, 0.5}", "{0.5, 0.5}"))
    c.save("text_huge_int_literal.onnxtxt",
           T.replace("ir_version: 8", "ir_version: 99999999999999999999999"))
    c.save("text_huge_float_literal.onnxtxt", T.replace("{0.5, 0.5,", "{1e999999, 0.5,"))
    c.save("text_huge_attr_int.onnxtxt", T.replace("axis = -1", "axis = -99999999999999999999"))
    c.save("text_huge_dim.onnxtxt", T.replace("float[4,4] w", "float[99999999999999999999,4] w"))
    c.save("text_binary_garbage.onnxtxt", bytes(range(256)))
    c.save("text_lone_minus_attr.onnxtxt", T.replace("axis = -1", "axis = -"))
    c.save("text_lone_dot_float.onnxtxt", T.replace("0.5, 0.5}", "0.5, .}"))
    c.save("text_non_ascii_in_number.onnxtxt",
           T.encode().replace(b"0,0,0,1}", b"0,0,0,\xb4}"))
    # Graph-valued attributes nested 8000 deep (the parser recurses).
    inner = "b=Identity(a)"
    for _ in range(8000):
        inner = "b=Identity<body=g(float a)=>(float b){%s}>(a)" % inner
    c.save("text_nested_graph_attr_8000_deep.onnxtxt",
           '<ir_version:8,opset_import:["":17]>\ng(float a)=>(float b){%s}\n' % inner)


# ---------------------------------------------------------------------------
# Random campaign (not committed)
# ---------------------------------------------------------------------------


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 3, 5, 10])):
        if not b:
            b = bytearray(rng.getrandbits(8) for _ in range(8))
        op = rng.randrange(8)
        p = rng.randrange(len(b))
        if op == 0:
            b[p] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[p] = rng.choice([0, 0xff, 0x7f, 0x80, 1, rng.getrandbits(8)])
        elif op == 2:
            b[p:p] = bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 2, 4, 16])))
        elif op == 3:
            del b[p:p + rng.choice([1, 2, 4, 16, 64])]
        elif op == 4:
            del b[p:]
        elif op == 5:
            q = rng.randrange(len(b))
            n = rng.choice([1, 4, 16, 64])
            b[q:q] = b[p:p + n]
        elif op == 6:  # maximal varint
            b[p:p + 1] = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
        else:
            v = rng.choice([0, 1, 0x7f, 0x80, 0xffff, 0x7fffffff])
            b[p:p + 4] = struct.pack("<I", v)
    return bytes(b)


INTERESTING_INTS = [0, 1, -1, 2, -2, 3, 7, 1024, 2**31 - 1, -2**31, 2**32, 2**40,
                    2**62, INT64_MAX, INT64_MIN]


def mutate_struct(m: onnx.ModelProto, rng: random.Random) -> onnx.ModelProto:
    m = onnx.ModelProto.FromString(m.SerializeToString())
    g = m.graph
    names = [v.name for v in list(g.input) + list(g.initializer)]
    names += [o for n in g.node for o in n.output]
    for _ in range(rng.choice([1, 1, 2, 3])):
        op = rng.randrange(12)
        if op == 0 and g.node:  # change an int / ints attribute
            n = rng.choice(g.node)
            ints = [a for a in n.attribute if a.type in (1, 2, 6, 7)]
            if ints:
                a = rng.choice(ints)
                if a.type == onnx.AttributeProto.INT:
                    a.i = rng.choice(INTERESTING_INTS)
                elif a.type == onnx.AttributeProto.INTS and len(a.ints):
                    a.ints[rng.randrange(len(a.ints))] = rng.choice(INTERESTING_INTS)
                elif a.type == onnx.AttributeProto.FLOAT:
                    a.f = rng.choice([0.0, -1.0, float("nan"), float("inf"), 1e30])
        elif op == 1 and g.node:  # rewire an input
            n = rng.choice(g.node)
            if n.input and names:
                n.input[rng.randrange(len(n.input))] = rng.choice(names + ["", "nope"])
        elif op == 2 and g.node:  # delete a node
            del g.node[rng.randrange(len(g.node))]
        elif op == 3 and len(g.node) > 1:  # swap two nodes
            i, j = rng.randrange(len(g.node)), rng.randrange(len(g.node))
            a, b = onnx.NodeProto(), onnx.NodeProto()
            a.CopyFrom(g.node[i]); b.CopyFrom(g.node[j])
            g.node[i].CopyFrom(b); g.node[j].CopyFrom(a)
        elif op == 4:  # change a graph input dim
            vs = [v for v in g.input if v.type.tensor_type.shape.dim]
            if vs:
                d = rng.choice(rng.choice(vs).type.tensor_type.shape.dim)
                d.dim_value = rng.choice([0, 1, 3, 2**31, 2**40, 2**62, INT64_MAX])
        elif op == 5 and g.initializer:  # change initializer dims / data
            t = rng.choice(g.initializer)
            if t.dims and rng.random() < 0.5:
                t.dims[rng.randrange(len(t.dims))] = rng.choice(INTERESTING_INTS)
            elif t.data_type == TP.INT64 and t.raw_data:
                vals = np.frombuffer(t.raw_data, np.int64).copy()
                vals[rng.randrange(len(vals))] = rng.choice(INTERESTING_INTS)
                t.raw_data = vals.tobytes()
            else:
                t.data_type = rng.choice([0, 1, 6, 7, 8, 9, 10, 16, 17])
        elif op == 6 and g.node:  # change op type
            n = rng.choice(g.node)
            n.op_type = rng.choice(["Split", "Concat", "Einsum", "Scan", "Cast",
                                    "Reshape", "Slice", "Gather", "Range", "Tile",
                                    "Expand", "Attention", "LayerNormalization",
                                    "ConstantOfShape", "Div", "Squeeze", "Unsqueeze",
                                    "Transpose", "Softmax", "Where", "Identity"])
        elif op == 7 and g.node:  # drop attributes
            n = rng.choice(g.node)
            del n.attribute[:]
        elif op == 8 and g.node:  # drop or add outputs
            n = rng.choice(g.node)
            if n.output and rng.random() < 0.5:
                del n.output[-1]
            else:
                n.output.append(f"extra{rng.randrange(100)}")
        elif op == 9 and g.node:  # retype an attribute
            n = rng.choice(g.node)
            if n.attribute:
                a = rng.choice(n.attribute)
                a.type = rng.choice([1, 2, 3, 4, 5, 6, 7, 8])
        elif op == 10:  # opset
            if m.opset_import:
                m.opset_import[0].version = rng.choice([1, 10, 11, 12, 13, 18, 23, 27, 28])
        elif op == 11 and g.node:  # Constant / Constant-like value edit
            consts = [n for n in g.node if n.op_type == "Constant"]
            if consts:
                n = rng.choice(consts)
                for a in n.attribute:
                    if a.t.data_type == TP.INT64:
                        vals = list(numpy_helper.to_array(a.t).reshape(-1))
                        if vals:
                            vals[rng.randrange(len(vals))] = rng.choice(INTERESTING_INTS)
                            a.t.CopyFrom(numpy_helper.from_array(
                                np.array(vals, np.int64).reshape(
                                    numpy_helper.to_array(a.t).shape), a.t.name))
    return m


def mutate_gentle(m: onnx.ModelProto, rng: random.Random) -> onnx.ModelProto:
    """Edits that mostly keep the model importable, so that the mutant goes
    on through the whole pipeline: graph input dims to small or symbolic
    values (0 and 1 included), float constants to NaN / inf / huge / tiny,
    float attributes (epsilon, alpha, scale) to edge values, the opset
    within gatec's range, an input's element type to f16/bf16/f64."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    g = m.graph
    for _ in range(rng.choice([1, 1, 2])):
        op = rng.randrange(6)
        ins = [v for v in g.input if v.type.tensor_type.shape.dim]
        if op <= 1 and ins:  # an input dim: small, 0, 1, or symbolic
            d = rng.choice(rng.choice(ins).type.tensor_type.shape.dim)
            if rng.random() < 0.3:
                d.dim_param = rng.choice(["T", "B", "S", "n"])
            else:
                d.dim_value = rng.choice([0, 1, 1, 2, 3, 5, 8, 17, 64])
        elif op == 2 and g.initializer:  # float data to edge values
            t = rng.choice(g.initializer)
            if t.data_type == TP.FLOAT and t.raw_data:
                vals = np.frombuffer(t.raw_data, np.float32).copy()
                if len(vals):
                    i = rng.randrange(len(vals))
                    vals[i] = rng.choice([np.nan, np.inf, -np.inf, 1e30, -1e30,
                                          1e-30, 0.0, -0.0])
                    t.raw_data = vals.tobytes()
        elif op == 3 and g.node:  # float attribute to an edge value
            fl = [(n, a) for n in g.node for a in n.attribute
                  if a.type == onnx.AttributeProto.FLOAT]
            if fl:
                _, a = rng.choice(fl)
                a.f = rng.choice([0.0, 1e-30, 1e30, -1.0, float("nan"),
                                  float("inf")])
        elif op == 4 and m.opset_import:  # the opset, within gatec's range
            for o in m.opset_import:
                if o.domain in ("", "ai.onnx"):
                    o.version = max(o.version, rng.choice([17, 18, 21, 23, 25, 28]))
        elif op == 5 and ins:  # an input's element type
            v = rng.choice(ins)
            if v.type.tensor_type.elem_type == TP.FLOAT:
                v.type.tensor_type.elem_type = rng.choice([TP.FLOAT16, TP.BFLOAT16,
                                                           TP.DOUBLE])
    return m


def campaign(out: Path, n: int, rng: random.Random, gentle: float = 0.0):
    seeds = {
        "tiny_mlp": tiny_mlp(), "tiny_shape_chain": tiny_shape_chain(),
        "tiny_scan": tiny_scan(), "tiny_function": tiny_function(),
    }
    for p in sorted(MODELS.glob("*.onnx")):
        seeds[p.stem] = onnx.load(str(p), load_external_data=False)
    seed_bytes = {k: v.SerializeToString() for k, v in seeds.items()}
    small = [k for k in seeds if len(seed_bytes[k]) < 40000]
    c = Corpus(out)
    for i in range(n):
        if rng.random() < gentle:
            k = rng.choice(list(seeds))
            c.save(f"c{i:05d}_gentle_{k}.onnx", mutate_gentle(seeds[k], rng))
            continue
        kind = rng.random()
        if kind < 0.55:  # byte-level
            k = rng.choice(small + list(seeds))
            c.save(f"c{i:05d}_bytes_{k}.onnx", mutate_bytes(seed_bytes[k], rng))
        elif kind < 0.60:
            c.save(f"c{i:05d}_bytes_text.onnxtxt", mutate_bytes(TEXT_SEED.encode(), rng))
        else:  # structure-aware
            k = rng.choice(small + list(seeds))
            c.save(f"c{i:05d}_struct_{k}.onnx", mutate_struct(seeds[k], rng))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "test" / "Fuzz" / "Inputs" / "corpus")
    ap.add_argument("--seed", type=int, default=20240607)
    ap.add_argument("--campaign", type=int, default=0,
                    help="write N random mutants instead of the committed corpus")
    ap.add_argument("--gentle", type=float, default=0.0,
                    help="with --campaign: the fraction of mutants made by the "
                         "edits that mostly keep a model importable (they go "
                         "on through full compiles)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    # Remove what an earlier run wrote (only files of the kinds written here).
    for p in list(out.glob("*")) + list(out.glob("external/*")):
        if p.is_file() and p.suffix in (".onnx", ".onnxtxt", ".bin"):
            p.unlink()
    if args.campaign:
        campaign(out, args.campaign, rng, args.gentle)
    else:
        c = Corpus(out)
        byte_mutants(c, rng)
        structural(c)
        text_cases(c)
    files = [p for p in out.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    print(f"wrote {len(files)} files ({total} bytes) to {out}")


if __name__ == "__main__":
    sys.exit(main())
