//===- Passes.td - lowering out of gated and onnx ----------*- tablegen -*-===//
#ifndef GATEC_PASSES_CONVERSION_PASSES_TD
#define GATEC_PASSES_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGatedToLinalg : Pass<"convert-gated-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Lower gated ops to linalg on tensors (the reference form)";
  let description = [{
    Rewrites every gated op into linalg.generic / linalg.fill on tensors
    with arith and math bodies, computing in f32 whatever the element type
    (inputs extended, results truncated). This is the target-independent,
    untiled form of each op's documented maths: attention materialises the
    [B, H, T, S] scores (with the query head h reading KV head h / (Hq/Hkv)
    through the indexing map, the causal mask from linalg.index, a fully
    masked row giving zeros) and applies its gate in the epilogue; the GLU
    computes x·W and x·V in one contraction with two outputs, then
    act(a)·b; the norms reduce over the last dimension in f32; the MoE
    router is one scf.forall over the tokens whose iteration runs scalar
    loops over its row of experts (the maximum, the softmax's sum, k
    selection scans in TopK's order, the weights) and writes its k weights
    and indices (on the GPU: one block per token, the writing loops on one
    thread; a dynamic expert count is checked against k). The fused,
    tiled algorithms (online softmax, GEMM epilogues) are later phases and
    are checked against this form.

    Dynamic dimensions are taken with tensor.dim. A gate, mask or weight
    whose dynamic dim may be 1 at run time while the result's is not is
    checked and broadcast at run time as in --convert-onnx-to-linalg
    (which removes the checks that its lowering makes provable); a size
    neither 1 nor the result's fails a cf.assert. gated.attention needs
    static head counts (the KV head of a query head is an affine floordiv by
    Hq/Hkv) and reports an error otherwise.

    Option `keep-attention`: leave gated.attention for --tile-attention
    (the compiler's pipeline does; the reference form is for checks and
    ablations, `gatec --flash-attention=false`).
  }];
  let options = [
    Option<"keepAttention", "keep-attention", "bool", "false",
           "leave gated.attention ops for --tile-attention">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"
  ];
}

def ConvertOnnxToLinalg : Pass<"convert-onnx-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Lower the remaining onnx ops to linalg/tensor/arith/math on tensors";
  let description = [{
    Rewrites every onnx op that raising leaves in the `gated` phase into
    linalg.generic / linalg.transpose / linalg.fill and tensor ops on
    tensors, with the semantics of the ONNX operator specification
    (https://onnx.ai/onnx/operators/, onnx 1.22, the newest opset of each
    op) and of ONNX Broadcasting.md (numpy multidirectional broadcasting):

    - onnx.Constant becomes arith.constant (dense or dense_resource; the
      bufferization makes weights memref.globals); onnx.NoValue disappears.
    - Element-wise ops (Add/Sub/Mul/Div/Pow/Max/Min/Sum, Sqrt, Reciprocal,
      Neg, Abs, Exp, Log, Sigmoid, Tanh, Relu, Erf, Cos, Sin, Floor, Ceil,
      Softplus, Gelu, LeakyRelu, HardSigmoid, Clip, Where, Equal/Less/
      Greater(OrEqual)/And/Or/Not, Cast, CastLike, Sign, IsInf, IsNaN) are
      one broadcasting generic each. A dynamic dim that ONNX lets be 1 at
      run time while the output's is N (it is not provably the output's
      size: static, derived from the same sizes, or an argument dim with the
      same dim_param) is broadcast at run time: an scf.if yields the operand
      itself or a copy broadcast along that dim; the output's size is
      (a == 1 ? b : a). Sizes neither equal nor 1 fail a cf.assert naming
      the node (--lower-run-time-checks makes it the run's error). MatMul
      batch dims, Expand and
      the norms' scale/bias do the same. Checks built while an operand was
      still unlowered (gated ops lower first) and that have become provable
      are removed at the end, so they never keep generics from fusing.
      Integer Div truncates toward zero and wraps INT_MIN / -1 to INT_MIN
      (numpy's answer; no trap); a divisor read at run time is checked
      (any 0 fails a cf.assert naming the node: ONNX leaves it undefined)
      and divided through a copy with 0 and -1 replaced by 1; a constant
      divisor holding 0 is an error, one without 0 or -1 no check; integer
      Mod is checked the same way (x % -1 = 0; fmod 0 takes the divisor's
      sign, fmod 1 the dividend's), float Mod is fmod (fmod 1) or numpy's
      mod (fmod 0, Mod-28) in f32 or f64. Cast
      from float to integer truncates toward zero, to bool is `x != 0`, to bf16 rounds to nearest
      even in integer arithmetic. Transcendental maths of f16/bf16 is
      computed in f32. Unsigned integers keep their tensor types; their
      scalars cross to signless with unrealized casts (no-ops in LLVM) and
      divide, compare, take max/min and widen unsigned. Dropout in inference
      is the identity (mask all true).
    - MatMul (numpy batch broadcasting, 1-D operands), Gemm and Einsum
      (explicit or implicit output, ellipsis, diagonals) are contractions
      accumulating in f32 for narrower floats; Reduce{Sum,Mean,Max,Min,Prod,
      L2}, Softmax, LogSoftmax, LayerNormalization and RMSNormalization
      reduce the same way (ReduceMean over no elements is 0, as in
      onnxruntime: ONNX leaves it undefined). Reduce* whose axes are a
      run-time input compute a reduced-or-not flag per dim and loop over
      the reduced elements of each output element; CumSum (run-time axis)
      sums each element's run. Run-time axes (these, Squeeze, Unsqueeze)
      outside [-r, r-1] fail a cf.assert naming the node.
    - Attention in the forms raising leaves (KV cache, softcap,
      qk_matmul_output, nonpad_kv_seqlen) is scores, bias, softmax and P V
      as the ONNX reference computes them (a fully masked row gives zeros);
      RotaryEmbedding is one generic (position ids outside the caches,
      position_ids or caches of another [batch, sequence] than x, and
      caches narrower than rotary_dim / 2 fail a cf.assert).
    - Shape, Size, Gather, Concat, Unsqueeze, Range, ConstantOfShape and
      Reshape also work on the i64 shape tensors that feed dynamic Reshapes.
      Range counts in f64 (floats) or i128 (integers, exact); a run-time
      delta of 0, or a count that is not finite or needs more than 2^47
      bytes, fails a cf.assert (a constant delta of 0 is an error).
    - Reshape is a tensor.collapse_shape / expand_shape when its dims
      provably regroup (static shapes, or a shape operand whose dynamic
      elements are Shape/Gather chains of the same input dims), otherwise a
      tensor.reshape whose target shape is computed at run time (0 copies
      the input dim unless allowzero, -1 takes the remaining elements; a
      -1 there while the other sizes' product is 0, a negative size or
      another number of elements fails a cf.assert).
      Flatten/Squeeze/Unsqueeze are collapses/expands (a reshape to sizes
      computed at run time when the axes are a run-time input; a squeezed
      dim that is not 1 at run time fails a cf.assert); Slice and
      Split are tensor.extract_slice (Slice with run-time starts/ends/axes/
      steps or negative steps is a generic reading x[start + i * step];
      a run-time step of 0 or axis out of range fails a cf.assert, as do
      Split sizes that are negative or do not sum to the dim, and an equal
      split whose last part would be negative);
      Transpose is linalg.transpose; Concat is tensor.concat (operand dims
      other than the axis that may differ at run time fail a cf.assert, as
      do MatMul and Gemm contraction dims); Expand, Gather, Tile and Trilu
      are generics (negative run-time sizes of ConstantOfShape, Expand and
      Tile fail a cf.assert). Gather indices outside [-n, n-1] fail a
      cf.assert naming the node (indices read at run time: one AND
      reduction over them; constant ones against a dynamic dim: their
      extremes; against a static dim: a compile error).
    - Pad (constant, reflect, edge, wrap; pads, constant_value and axes
      constant or read at run time; negative pads crop first, as in
      onnxruntime) is one generic reading the source element of each
      output element (constant mode under an scf.if: the cropped input may
      be empty). A result dim < 0, edge/reflect/wrap padding of a dim the
      crop leaves empty, a reflect pad not smaller than the dim, axes out
      of range, pads of another length than 2 * axes or a result over 2^47
      bytes fail a cf.assert naming the node (constant ones are errors).
    - OneHot is one generic (indices and depth of any numeric type,
      truncated; out-of-range indices give a row of off_value; a depth
      below 1 fails a cf.assert). TopK is a generic whose element k finds
      its index by k + 1 selection passes over the row (ties by lower
      index, NaN above every number, as onnxruntime), then one gathering
      the values; K outside [0, n] fails a cf.assert.

    Dynamic dimensions are taken with tensor.dim (or read from the shape
    operand); a dynamic dimension that broadcasts is taken to have the
    broadcast size (it is not 1 at run time). Ops are lowered against the
    original IR, so constant operands (axes, starts, split sizes, shapes) are
    still readable when their users are lowered.

    Unsupported forms report a located error `cannot be lowered: ...` and
    fail the pass: random (training-mode) Dropout, Einsum operands that
    broadcast a label, unranked tensors, ops with regions (Scan), and ops
    without a lowering.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"
  ];
}

def ConvertLinearAttentionToLoops : Pass<"convert-linear-attention-to-loops",
                                         "mlir::func::FuncOp"> {
  let summary = "Lower gated.linear_attention to scf.for loops over linalg on tensors";
  let description = [{
    Lowers each gated.linear_attention, in f32 (inputs extended, results
    truncated), to an scf.forall over (batch, key/value head), one task per
    head (it writes the output rows of the head's query heads and its final
    state with tensor.parallel_insert_slice), whose body is a sequential
    scf.for carrying the [Dk, Dv] state, with linalg ops on tensor slices
    inside (contractions ordered with the reduction outside the innermost,
    contiguous loop; the exponentials in linalg.map ops, so that elementwise
    fusion does not recompute them inside a contraction):

    - form = recurrent: one iteration per token (decay the state by
      exp(g_t), delta correction, rank-1 write, read by the query heads of
      the group). The reference form.
    - form = chunked: one iteration per whole chunk of chunk_size C tokens
      (read in place), then, when C does not divide T, one step on the last
      T mod C tokens copied into a chunk padded with tokens that have
      k = v = 0, log-decay 0 and β = 0 (they leave the state alone; their
      output rows are dropped). Each chunk step computes: G, the
      inclusive cumulative sum of the chunk's log-decays (f32), each
      floored at -30 so that a log-decay of -inf (a full reset) never makes
      -inf − (-inf) = NaN: exp(-30) ≈ 9e-14 forgets the earlier state to
      f32 precision (relative RMS ≤ 1e-5 against the exact reset at C = 16
      and 64, test/Execution/linear-attention.test; a lower floor makes G
      larger and its differences less precise); the
      intra-chunk scores A_ij = Σ_d q_id k_jd exp(G_id − G_jd) for j ≤ i
      (for a scalar decay, (q_i·k_j)·exp(G_i − G_j)); for the delta rules,
      U from the UT system (I + M) U = diag(β)(V − (K ⊙ exp(G)) S) with
      M_ij = β_i Σ_d k_id k_jd exp(G_id − G_jd) (j < i), solved by forward
      substitution (else U = V); the output scale·((Q ⊙ exp(G)) S + A U);
      the new state exp(G_C) ⊙ S + (K ⊙ exp(G_C − G))ᵀ U. The exponents are
      differences G_i − G_j with i ≥ j, or G itself (a sum from the chunk's
      start): never −G. The matrix products (Q Kᵀ and K Kᵀ without a
      per-channel decay, (Q ⊙ exp(G)) S, A U over j ≤ i only, (K ⊙ exp(G)) S,
      the state update) are register-blocked loops of vector FMAs on tensors
      (vector.transfer_read/write; 4 rows × 2 vectors of 8 lanes in
      accumulators through the reduction loop), Kᵀ is transposed by 8 × 8
      blocks of vector shuffles. With a per-channel decay the scores are
      built by blocks of 4 tokens: one exp per term on the diagonal blocks,
      and below them a reference-point split exp(G_i − G_j) =
      exp(G_i − G_r) · exp(G_r − G_j) (r the block's last token, both
      exponents ≤ 0) that makes each column of blocks a plain product
      (for C = 16: 100·Dk exps per score matrix instead of 256·Dk).

    Inputs held in [B, T, H, D] order (named in the op's `bshd` layout, set
    by --absorb-head-layout) are read in place (strided along T), and a
    `bshd` output is written in [B, T, Hq, Dv] order: no transposed copies
    of the sequence.

    With `products=linalg` (the CUDA target and --cpu-thread-mapping) the
    matrix products are `linalg.generic` contractions instead (the causal
    ones masking k > m, the row scales a map before them) and Kᵀ a
    `linalg.transpose`: --distribute-to-threads spreads those over a
    block's threads, where the vector loops would run on one thread.

    Dynamic batch and sequence sizes are supported; head counts and head
    dims must be static (an error otherwise). Run before
    --convert-gated-to-linalg.
  }];
  let options = [
    Option<"products", "products", "std::string", "\"vector\"",
           "the chunked form's matrix products: vector (register-blocked "
           "vector FMAs, for the CPU) or linalg (linalg contractions, for "
           "targets that spread linalg ops over threads)">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def Bf16ArithToF32 : Pass<"bf16-arith-to-f32"> {
  let summary = "bf16 arithmetic in f32, rounded to bf16 after every op";
  let description = [{
    Rewrites every arith/math op with bf16 operands or results (other than
    extf, truncf, bitcast, constant, select) into the same op on f32
    (operands extended with arith.extf) followed by arith.truncf back to
    bf16, so each op's result is rounded to bf16 as the ONNX op's output
    type says (round to nearest even). `arith-expand{include-bf16=true}`
    then spells the truncation out in integer arithmetic, so the model
    library needs no __truncsfbf2 (libgcc 12 has none). Upstream
    `arith-emulate-unsupported-floats` is not used: it keeps consecutive
    emulated ops in f32, skipping the rounding between them.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def DeferDataChecks : Pass<"defer-data-checks", "mlir::func::FuncOp"> {
  let summary = "Run-time checks of the data as one error word, read once";
  let description = [{
    Runs on tensors, after the lowering to linalg. The lowering marks with
    `gatec.data_check` the run-time checks of values read from tensors
    whose failure changes only what the kernels compute, never where they
    read or write: Gather/GatherElements/GatherND/ScatterND/ScatterElements
    indices in range, integer Div/Mod divisors nonzero, RotaryEmbedding
    position ids in range, Attention's `nonpad_kv_seqlen` in
    [0, the number of keys]. Those ops clamp their indices (and divide by 1
    where the divisor is 0), so a failed check leaves every access in
    bounds.

    Each marked `cf.assert` at the top level of the function, of the form
    `cf.assert (tensor.extract %flag[])` with `%flag` a rank-0 i1 tensor
    (checkAll's AND reduction), becomes a one-element `linalg.generic`
    that folds the flag into an error word: a rank-0 i32 tensor, 0 at
    entry, set to the check's 1-based number if it failed and no earlier
    check did. Before the return, the word is read once (one
    `tensor.extract`) and compared with each number, one `cf.assert` with
    the original message and location each, so the run fails with the
    message of the first failed check in program order, as without the
    pass. Checks of other forms (sizes, shapes: the host needs those
    values anyway) stay where they are.

    On the CUDA target (on by default there, `--defer-data-checks`) the
    folds are device work, one-thread kernels queued on the stream, so no
    data check makes the host wait for the GPU: the word is copied to the
    host once, after the run. On the CPU it is off by default (a check
    there is already a compare and a branch); turned on, it runs the same
    folds on the CPU, which is how the tests check the clamping.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::cf::ControlFlowDialect"];
}

def StripRunTimeChecks : Pass<"strip-run-time-checks", "mlir::func::FuncOp"> {
  let summary = "Erase the run-time checks (the unchecked build)";
  let description = [{
    Runs on tensors, after the lowering to linalg: erases every `cf.assert`
    (checks of run-time sizes, axes and data), so that the canonicalizer
    then removes the reductions and compares that computed their
    conditions. The kernels are unchanged: indices are still clamped into
    their dims, divisors of 0 still replaced by 1. It exists to measure
    what the checks cost (`gatec --run-time-checks=false`,
    `tools/bench/check_cost.py`); a library built so is not safe on bad
    input (sizes that do not broadcast, splits that do not add up, ... are
    no longer caught), and the allocation checks of
    `--lower-run-time-checks` stay.
  }];
  let dependentDialects = ["mlir::cf::ControlFlowDialect"];
}

def CheckBufferSizes : Pass<"check-buffer-sizes", "mlir::func::FuncOp"> {
  let summary = "Check that run-time-sized host buffers fit in 2^47 bytes";
  let description = [{
    Runs on bufferized host code (the end of the `tiled` phase). Before
    every `memref.alloc`/`alloca` with dynamic sizes outside parallel loops
    (scf.forall / scf.parallel / omp / gpu regions, whose scratch is sized
    by tiles of checked buffers), a `cf.assert` that its byte count is at
    most 2^47 (what x86-64 can address), with a message naming the node.
    The count is computed in i128, saturated at 2^64 after each factor, a
    size that reads as negative counting as huge. Without it the byte count
    that `finalize-memref-to-llvm` computes in 64 bits wraps for sizes read
    from the data (ConstantOfShape, Expand, Tile of 2^62 elements) or from
    a huge dim of an empty input ([2^62, 0] reduced over its empty axis),
    and the model writes past a small buffer. `--lower-run-time-checks`
    makes a failed check the run's error.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::cf::ControlFlowDialect"];
}

def LowerRunTimeChecks : Pass<"lower-run-time-checks", "mlir::ModuleOp"> {
  let summary = "Failed run-time checks as the run's error, not abort()";
  let description = [{
    Runs on host code in CFG form. Every `cf.assert` at the top level of a
    function (the run-time size checks of the lowering, e.g. sizes that do
    not broadcast) becomes a branch to a call of
    `gatec_check_failed(message)`, declared here and defined by the model
    library's ABI wrapper: it ends the run (longjmp back into the wrapper),
    which returns a failed status with the check's message (node name
    included) to the caller, e.g. `gatec-run` prints it and exits 1. Buffers
    the run had allocated are not freed on that path. A `cf.assert` inside
    a region (an OpenMP parallel loop) stays as it is (message, abort()):
    unwinding a worker thread is not possible.

    Likewise every `malloc` / `aligned_alloc` call at the top level (the
    buffers of the host code, after `finalize-memref-to-llvm`) is followed
    by a check that it returned non-NULL or was asked for 0 bytes; else a
    call of `gatec_alloc_failed(message)` (naming the node the buffer is
    for) ends the run the same way, and the wrapper's `run` returns 2,
    which the runtime reports as GATEC_STATUS_OUT_OF_MEMORY.

    A worker thread cannot end the run that way, so an allocation in the
    body of an OpenMP worksharing loop (`omp.loop_nest`: a row block's
    scratch) that returns NULL stores its message in a slot of the
    function's frame (atomically; the slot is shared with the region) and
    skips the rest of that iteration (a branch to a new `omp.yield` block).
    After each top-level `omp.parallel` of the function the slot is read;
    a message there ends the run through `gatec_alloc_failed` as above,
    before any later code reads what the skipped iterations did not write.
    Allocations in other regions are not checked.

    Last, every `malloc`, `aligned_alloc` and `free` call of the module's
    functions (not of a `gpu.module`) is renamed to `gatec_malloc`,
    `gatec_aligned_alloc` and `gatec_free`, which the model library's
    wrapper defines: they keep the blocks the running thread allocates on a
    list, and a run that a failed check ends (past the model's own frees)
    frees what is left on it, so that a failed run leaks nothing.
  }];
  let dependentDialects = [
    "::mlir::cf::ControlFlowDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

#endif
