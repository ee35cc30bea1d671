//===- MmaSync.h - tensor-core contractions for the thread mapping -*- C++ -*-//
//
// fp16/bf16 GEMMs of a block as warp-level mma.sync.m16n8k16 (fp32
// accumulation), for --distribute-to-threads{mma=...}.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_GPU_MMASYNC_H
#define GATEC_PASSES_GPU_MMASYNC_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace gatec::gpu {

/// A linalg op on buffers that --distribute-to-threads{mma=...} runs on the
/// tensor cores: one reduction dim k; outputs j (f32) indexed by every
/// parallel dim with n last, each accumulating extf(A) * extf(B_j) with A
/// (bf16 or f16) indexed by (rows..., k) and B_j (same type) by (k, n), each
/// in any order;
/// static n % 8 == 0 and k % 16 == 0; any number of rows, static or not
/// (the last 16-row tile is masked).
struct MmaContraction {
  /// fp32 operands on the tf32 tensor cores (mma.sync.m16n8k8, operands
  /// rounded to tf32 with cvt.rna; k % 8 == 0) instead of fp16/bf16.
  bool tf32 = false;
  unsigned kDim = 0, nDim = 0;
  llvm::SmallVector<unsigned> rowDims;    // parallel dims but n, outer first
  int64_t rows = 0, n = 0, k = 0;         // rows: kDynamic if not static
  mlir::Type elem;                        // bf16 or f16
  mlir::OpOperand *a = nullptr;           // (rows..., k)
  llvm::SmallVector<mlir::OpOperand *> b; // per output: (k, n)
};

/// `op` as an MmaContraction, or failure. With `tf32`, an fp32 GEMM
/// (`out += A * B_j`, all f32, no extension) matches too, as a tf32 one.
mlir::FailureOr<MmaContraction> matchMmaContraction(mlir::linalg::LinalgOp op,
                                                    bool tf32 = false);

/// Emits, at the builder's insertion point inside a thread-level loop of
/// `threads` threads (a multiple of 32) whose thread index is `tid`, the
/// computation of `c`: each warp takes tiles of 16 rows x 8*nt columns
/// cyclically, keeps their fp32 accumulators in registers across k and
/// stores them once. The fragments' lane layout is MLIR's own
/// (nvgpu::getLaneIdAndValueIdToOperandCoord, after the PTX ISA's figures
/// for mma.m16n8k16 with .f16/.bf16 operands, which share one layout).
/// `emulate`: instead of nvvm.mma.sync, each lane computes its own
/// accumulator elements from memory (the CPU check of the mapping:
/// --cpu-thread-mapping runs the same tiles, masks and stores).
void emitMmaContraction(mlir::OpBuilder &b, mlir::linalg::LinalgOp op,
                        const MmaContraction &c, mlir::Value tid,
                        int64_t threads, bool emulate);

} // namespace gatec::gpu

#endif
