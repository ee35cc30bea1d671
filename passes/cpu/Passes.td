//===- Passes.td - the CPU target --------------------------*- tablegen -*-===//
//
// Code generation for the host CPU (docs/design.md, 6a): passes on the
// bufferized loops of the tiled phase that run before they are lowered to
// the LLVM dialect.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_CPU_PASSES_TD
#define GATEC_PASSES_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def MatmulMicroKernel : Pass<"matmul-micro-kernel", "mlir::ModuleOp"> {
  let summary = "Contractions on memrefs as register-blocked FMA micro-kernels";
  let description = [{
    Rewrites every `linalg.generic` on memrefs that computes
    `C[b.., m, n] += A[b.., m, k] · B[b.., k, n]` (one m, n and k loop, any
    batch loops, inputs f32/f16/bf16 extended to an f32 accumulator, B and C
    contiguous along n) into loops over register tiles of `mr` rows by
    `nr-vectors` vectors of `vector-bits`:

        for n0 in 0..N step NR            // one NR-column panel of B
         for k0 in 0..K step kc           // a k block of the panel
          for m0 in 0..M step mr          // the rows of the row block
            acc[mr][NR/VL] = C tile       // in registers
            for k in k0..k0+kc:
              b[v] = B[k, n0 + v·VL ..]   // NR/VL vector loads
              acc[i][v] = fma(broadcast A[m0+i, k], b[v], acc[i][v])
            C tile = acc                  // one store

    The k blocks keep one kc × NR slice of a panel in L1 (32 KiB for
    kc = 256, NR = 32) while every row tile of the block reuses it, with
    the mr × kc slice of A beside it; a packed panel is read front to
    back (one stream for the prefetcher); C is read and written once per
    k block. Where C's only initialisation is a zero fill just before (and
    K is static and positive), the fill goes and the first k block, peeled,
    starts its accumulators at zero: C is not read before it is written. Rows past the last full
    tile run a one-row kernel; a panel past N's last multiple of NR uses
    masked loads and stores.

    A's full row tiles are copied once into `[M / mr, K, mr]` (when N is
    dynamic or more than two panels wide), so that a kernel's k step reads
    mr consecutive elements: the rows of A are often a multiple of 4 KiB
    apart (K = 1024 floats), and mr of them read together alias in the
    same L1 sets as the panel.

    When B is a constant (`memref.get_global` of a constant global, the
    weights of a projection), it is packed at compile time into panels
    `[ceil(N/NR), K, NR]` (zero-padded), so that each k step reads NR
    consecutive floats and a panel is one contiguous stream; its dtype is
    kept (bf16/f16 weights stay half the bytes).

    While the row tiles of one k block run, each k step prefetches the
    matching lines of the next block of the packed panel (the next panel
    after the last block) into L2 (`prefetch-panels`): the weights of a
    d=1024 layer do not fit in L2, and without it the first row tile of
    every block waits on memory for each line of its slice.

    A generic with several contraction outputs over one A (GLU's x·W and
    x·V) whose outputs are read only by the next elementwise generic
    (act(x·W)·(x·V)), into a fresh buffer, becomes one kernel: its
    register tile holds every output's accumulators (fewer rows: 6 of
    2 × 2 vectors with AVX-512) over the whole k loop, and applies the
    elementwise body to them in vectors before the single store. Neither
    product is written to memory; when they started as zeros, their
    buffers and fills go. Only where the panels of every output (K × NR
    each) fit in L2, and the body's ops have inline vector forms
    (`--fuse-epilogues=false` keeps the two ops).

    Few rows (a decode step, a short prompt) make few row blocks: the
    `scf.forall` around a GEMM then has fewer iterations than the
    machine has threads, and the idle threads would wait. With
    `split-columns`, such a loop gets one more dimension, over chunks of
    the GEMM's column panels: `ceil(threads / iterations)` chunks at run
    time (`omp_get_max_threads()`; one chunk, the loop as before, when the
    row blocks already cover the threads), each chunk a multiple of NR
    columns, so that each thread reads only its part of the weights. The
    ops of the body that write the loop's result are narrowed to the
    chunk's columns: the zero fill of the GEMM's output, and the
    elementwise ops after the GEMM (a residual add, a bias, a gate);
    producers of the GEMM's rows (a norm) run again per chunk, into the
    iteration's own buffers. A loop whose body holds a second GEMM (a
    fused FFN's down projection reading the gate/up rows), a reduction
    after the GEMM, or other writes of its result is left alone.

    Other contractions (integer, transposed operands with no unit stride
    along n, several reductions) are left to the scalar loops of
    `convert-linalg-to-loops`.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "int64_t", "512",
           "width of one vector register in bits (512: AVX-512, 256: AVX2)">,
    Option<"mr", "mr", "int64_t", "8", "rows of the register tile">,
    Option<"nrVectors", "nr-vectors", "int64_t", "2",
           "vectors per row of the register tile">,
    Option<"kc", "kc", "int64_t", "256",
           "k block: a kc x NR panel slice stays in L1 across the row tiles">,
    Option<"packA", "pack-a", "bool", "true",
           "pack A's row tiles [M/mr, K, mr] once per contraction when more "
           "than two column panels reuse them">,
    Option<"packWeights", "pack-weights", "bool", "true",
           "pack constant B operands into panels at compile time">,
    Option<"prefetchPanels", "prefetch-panels", "bool", "true",
           "prefetch the next k block of each packed panel into L2 while "
           "the current one is in use">,
    Option<"splitColumns", "split-columns", "bool", "true",
           "when a GEMM's scf.forall of row blocks has fewer iterations "
           "than the threads, give it a dimension over chunks of the "
           "column panels as well">,
    Option<"fuseEpilogues", "fuse-epilogues", "bool", "true",
           "compute an elementwise op that reads every output of a "
           "multi-output contraction (GLU's act·mul) in the registers of "
           "one kernel">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::func::FuncDialect"
  ];
}

def OutlineLoopNests : Pass<"outline-loop-nests", "mlir::ModuleOp"> {
  let summary = "Each tiled kernel as a call of a function shared by identical kernels";
  let description = [{
    Moves every `scf.forall` at the top level of a function (a tiled
    kernel, on memrefs) into a private function `<parent>_kernel_<i>` and
    calls it in its place. The function's arguments are the values the
    nest reads from outside: buffers, dynamic sizes, and the
    `memref.get_global` of every global it reads (weights, packed panels),
    hoisted out of the nest; constants are cloned into it, so that its code
    stays specialised on them.

    Nests whose functions are the same code (the same text, apart from the
    name) call one function: the kernels of a model's repeated layers
    differ only in the weights they are given, so a 24-layer model reaches
    LLVM and the C compiler as one layer's kernels, and its compile time
    and library code no longer grow with its depth. The functions have
    internal linkage (`llvm.linkage`): the library does not export them.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect"
  ];
}

def PolynomialMath : Pass<"polynomial-math", "mlir::func::FuncOp"> {
  let summary = "exp, expm1, tanh and erf as polynomial approximations";
  let description = [{
    Rewrites `math.exp`, `math.expm1`, `math.tanh` and `math.erf` (f32,
    and f16/bf16 through f32) into MLIR's polynomial approximations (range reduction,
    a minimax polynomial, exponent reconstruction: a few ulp in f32; inf,
    -inf and NaN handled as libm does), which are plain arith ops: the
    loops that contain them (softmax rows, the online softmax of flash
    attention, sigmoid and SiLU gates, GELU-tanh, exact GELU and GEGLU)
    vectorize, where a libm call per element kept them scalar. erf is a
    rational approximation (degree 4 over degree 4) on three intervals of
    |x|, about 2.5e-7 absolute error.
    log and the rest stay libm calls (the decay gates' log-space sums are
    kept exact).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

#endif
