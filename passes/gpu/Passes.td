//===- Passes.td - the GPU target --------------------------*- tablegen -*-===//
//
// The CUDA target maps the `tiled` phase onto the GPU (docs/design.md, 6b):
// every outermost scf.forall is a kernel with one block per iteration, the
// work inside it is spread over the block's threads, and buffers move to
// device memory. --distribute-to-threads is target independent (the CPU
// path can run its output, which is how the mapping is checked without a
// GPU); the passes after it produce gpu dialect IR.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_GPU_PASSES_TD
#define GATEC_PASSES_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistributeToThreads : Pass<"distribute-to-threads", "mlir::func::FuncOp"> {
  let summary = "Spread the work of each block-level scf.forall over threads";
  let description = [{
    Every outermost `scf.forall` of the tiled phase (a row block of a fused
    GEMM, a (batch, head, query block) tile of flash attention, a (batch,
    head) chunked recurrence) becomes the body of one GPU block. Inside it:

    * each linalg op and `memref.copy` becomes a thread-level `scf.forall
      (%t) in (threads)` with mapping `#gpu.thread<x>`, whose thread `t`
      computes the elements `t, t + threads, ...` of the op's flattened
      parallel iteration space (consecutive threads take consecutive
      elements of the innermost dimension, so global accesses coalesce);
      reductions run sequentially per output element, accumulated in
      registers (fp32 where the op computes in fp32), and the output is
      written once;
    * any other op that writes memory (scalar stores of a recurrence) runs on
      one thread (`scf.forall in (1)`);
    * scratch buffers allocated inside the block (`memref.alloc`, dynamic
      sizes bounded by value-bounds analysis) become per-block slices
      (`memref.view`) of a buffer allocated before the loop, so the block's
      threads share them. The first ones in program order that fit in
      `shared-memory` bytes per block take their slices of a second buffer
      marked `gatec.workgroup_scratch` (its views carry
      `gatec.workgroup_offset`): --map-forall-to-gpu puts those in the
      block's shared memory, so a fused producer's tile never leaves the
      chip. Here both are plain buffers, which the CPU path runs.

    The end of each thread-level `scf.forall` is a join of the block's
    threads: a barrier on the GPU, nothing on the CPU, where the output of
    this pass runs sequentially with the same results. Ops on device
    buffers outside any `scf.forall` (a concat's copies, a whole-buffer
    fill) are wrapped in an `scf.forall` first: a linalg op or copy gets
    ceil(elements / (4 * threads)) blocks (at most 65536, marked
    `gatec.grid_stride`), whose threads share its elements in a grid-stride
    loop (block b's thread t starts at b * threads + t, steps by
    blocks * threads), so no one-block kernel walks data sized at run
    time; a scalar store gets one block.

    With `mma=sync`, a GEMM whose operands are fp16 or bf16 and whose
    accumulators are fp32 (`out_j += extf(A) * extf(B_j)`, A indexed (rows,
    k), B_j (k, n), static sizes, n % 8 == 0, k % 16 == 0; the widened
    projections' several outputs share A) runs on the tensor cores instead:
    each warp takes tiles of 16 rows x 8-32 columns in turn, loads its lanes'
    fragments of A and B_j (lane layout: MLIR's
    `nvgpu::getLaneIdAndValueIdToOperandCoord`, the PTX ISA's figures for
    mma.m16n8k16), runs `nvvm.mma.sync` per 16-deep k step with the fp32
    accumulators in registers, and stores them once; rows past the last
    full 16-row tile are masked. `mma=emulate` emits the same tiles, masks
    and stores with each lane computing its own accumulators from memory
    instead of the warp-level instruction, so that the CPU runs it.

    Errors: a scratch buffer whose size has no constant upper bound, or
    that escapes its block, is reported at its location.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "128",
           "threads per block (multiple of 32, at most 1024)">,
    Option<"sharedMemory", "shared-memory", "int64_t", "49152",
           "bytes of scratch per block placed in workgroup (shared) memory "
           "(0: none; 48 KiB is what every CUDA GPU gives a block without "
           "opting in)">,
    Option<"tf32", "tf32", "bool", "false",
           "with mma: fp32 GEMMs (out += A * B_j, all f32) on the tensor "
           "cores too, as mma.m16n8k8 with tf32 operands (rounded with "
           "cvt.rna.tf32.f32; the emulation rounds the same way) and fp32 "
           "accumulators">,
    Option<"mma", "mma", "std::string", "\"none\"",
           "fp16/bf16 GEMMs on the tensor cores: none, sync "
           "(nvvm.mma.sync.m16n8k16, fp32 accumulators), emulate (the same "
           "tiles with each lane's accumulators computed from memory: the "
           "CPU check)">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::gpu::GPUDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::ub::UBDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::vector::VectorDialect"
  ];
}

def MapForallToGpu : Pass<"map-forall-to-gpu", "mlir::ModuleOp"> {
  let summary = "Block-level scf.forall to gpu.launch, thread-level to thread ids";
  let description = [{
    Runs after --distribute-to-threads. Each outermost `scf.forall` becomes a
    `gpu.launch` with a one-dimensional grid (its iteration space
    linearised, so grids of any rank and size up to 2^31 - 1 blocks fit)
    and `threads` threads per block; the thread-level `scf.forall`s inside
    are mapped onto `threadIdx.x` by upstream's forall-to-threads mapping,
    predicated when smaller than the block and each followed by
    `gpu.barrier`. Launches are not guarded against an empty grid (a
    dynamic size of 0): the runtime skips those, so consecutive launches
    stay in one region and run asynchronously on one stream.
    Weights (`memref.get_global` of constants) and the views over them are
    recreated inside the kernel; --device-constants then turns the large
    ones into device buffers passed to the kernel (the small ones are
    copied into the kernel's module by kernel outlining).
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "128",
           "threads per block (as given to --distribute-to-threads)">,
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def DeviceMemory : Pass<"device-memory", "mlir::func::FuncOp"> {
  let summary = "Buffers touched by kernels in device memory";
  let description = [{
    Runs after --map-forall-to-gpu. Every host `memref.alloc` whose buffer
    (or a view of it) a `gpu.launch` uses becomes `gpu.alloc`, its
    `memref.dealloc` `gpu.dealloc`. The function's arguments and results
    are device buffers (the model ABI wrapper copies inputs to the device
    and outputs back). Buffers only the host touches (shape arithmetic,
    deallocation bookkeeping) stay in host memory.

    Errors: host code that reads or writes a device buffer (it would
    dereference a device pointer on the CPU) is reported at the op.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def DeviceConstants : Pass<"device-constants", "mlir::ModuleOp"> {
  let summary = "Weights read by kernels as device buffers uploaded once";
  let description = [{
    Runs after --map-forall-to-gpu and --device-memory, before kernel
    outlining. A constant `memref.global` of `min-bytes` bytes or more that
    a `gpu.launch` reads (`memref.get_global` inside the kernel) is not
    copied into the kernel's module, where it would be a PTX initialiser
    (about 4.5 bytes of PTX text per weight byte, assembled by ptxas at
    every compile and every module load). Instead the host function, at its
    entry, asks the runtime for the constant's device copy:

      `gatec_cuda_constant(&slot, host_address, bytes)`

    where `slot` is a pointer-sized mutable global of the library made for
    that constant (`<name>__device`). The first call uploads the bytes into
    device memory and records the address in the slot; every later call
    (and run) returns it. The kernels take the device copy as an argument
    like any other device buffer. The host keeps the constant, which the
    library emitter writes as raw bytes (weights.o): compile time and
    library size grow with the weights at copy speed, and the kernels'
    PTX no longer depends on the model's size.

    The device copy is built as an LLVM memref descriptor (static shape,
    identity layout) cast to the global's memref type; the casts cancel
    when the host is lowered to LLVM.
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", "256",
           "smallest constant moved out of the kernels' modules (smaller "
           "ones, such as a few scalars, stay kernel initialisers)">,
  ];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect"
  ];
}

def FpContract : Pass<"fp-contract"> {
  let summary = "Mark kernel floating-point multiplies and adds contractible";
  let description = [{
    Every `arith.mulf`, `arith.addf` and `arith.subf` inside the op gets
    the `contract` fast-math flag (the CUDA target runs the pass on each
    `gpu.module` for sm_90 and newer; for sm_80, ptxas then spills in the
    flash-attention and chunked linear-attention kernels), which the LLVM
    lowering keeps: the NVPTX backend then fuses a multiply and the add of
    its result into one `fma.rn` (one rounding
    instead of two). Without it LLVM writes `mul.rn` and `add.rn`, which
    ptxas may not fuse either, and an fp32 GEMM's inner loop issues two
    instructions per multiply-add. No other flag is set: NaN, infinity and
    signed-zero semantics are unchanged.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ElideHostWaits : Pass<"elide-host-waits", "mlir::func::FuncOp"> {
  let summary = "Drop host waits before host ops that do not touch GPU buffers";
  let description = [{
    Runs right after `gpu-async-region`, on host code in CFG form with
    memrefs (before the host lowering to LLVM). `gpu-async-region` puts a
    blocking `gpu.wait [%t]` before every host op with a memory effect and
    starts the next GPU op on a fresh chain (`gpu.wait async`). When every
    op between the two only allocates, reads or writes host buffers that no
    gpu op uses (the shape arithmetic of a dynamic model: small buffers
    allocated in the function, never copied to or from the device), the
    wait is removed and the next chain continues from `%t`: the host goes on
    computing shapes while the GPU runs, and GPU ops stay ordered by their
    tokens. A wait before a call, control flow, a read of a buffer a
    `gpu.memcpy` fills or any other effect is kept.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def AlignWorkgroupMemory
    : Pass<"align-workgroup-memory", "mlir::gpu::GPUModuleOp"> {
  let summary = "Align the workgroup (shared) memory of outlined kernels";
  let description = [{
    Runs after `gpu-kernel-outlining`. Every workgroup attribution of a
    `gpu.func` gets the `llvm.align` attribute `alignment` (bytes) unless
    it already has at least that. --map-forall-to-gpu gives a block its
    shared scratch as one i8 buffer with typed views at 64-byte offsets;
    the NVVM lowering would declare it `.shared .align 1`, and an f32 or
    vector access through a view is then misaligned.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "16",
           "bytes (16: the widest vector access)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif
