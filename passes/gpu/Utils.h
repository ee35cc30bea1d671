//===- Utils.h - helpers shared by the GPU mapping passes -------*- C++ -*-===//
#ifndef GATEC_PASSES_GPU_UTILS_H
#define GATEC_PASSES_GPU_UTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace gatec::gpu {

/// On the scratch buffer --distribute-to-threads allocates for workgroup
/// (shared) memory: the bytes of one block's slice (i64).
constexpr llvm::StringLiteral kWorkgroupScratchAttr = "gatec.workgroup_scratch";
/// On each view of that buffer: its offset in the block's slice (i64).
constexpr llvm::StringLiteral kWorkgroupOffsetAttr = "gatec.workgroup_offset";

/// The buffer a memref value views: follows subview, expand/collapse_shape,
/// cast, view and reinterpret_cast back to an allocation, a global or a
/// block argument.
mlir::Value bufferRoot(mlir::Value v);

/// The buffers `v` may view at run time: bufferRoot, and through the
/// results of scf.if and arith.select, the roots of every value that may
/// flow into them.
void possibleRoots(mlir::Value v, llvm::SmallVectorImpl<mlir::Value> &roots);

/// The outermost scf.forall loops of `f` that are not thread-level loops:
/// the kernels (one block per iteration).
llvm::SmallVector<mlir::scf::ForallOp> blockLoops(mlir::func::FuncOp f);

/// The trip count of each dimension of `forall` and their product (built
/// at the builder's insertion point, which must dominate the loop).
std::pair<llvm::SmallVector<mlir::OpFoldResult>, mlir::OpFoldResult>
iterationCounts(mlir::OpBuilder &b, mlir::scf::ForallOp forall);

/// Is `forall` a thread-level loop (mapping #gpu.thread)?
bool isThreadLoop(mlir::scf::ForallOp forall);

/// On a block-level scf.forall made by wrapHostOpsOnDeviceBuffers around a
/// lone linalg op or memref.copy: its blocks cover the op's parallel
/// iteration space together, block b's thread t taking the elements
/// b * threads + t, then every (blocks * threads)-th (a grid-stride loop).
constexpr llvm::StringLiteral kGridStrideAttr = "gatec.grid_stride";

/// Wraps every op outside an scf.forall that computes on device buffers
/// (the function's arguments and results and every buffer a kernel uses; a
/// linalg op, memref.copy or memref.store) in an scf.forall, so that it
/// becomes a kernel too; repeats until no host op touches a device buffer
/// that way. A linalg op or copy gets ceil(elements / (4 * threads)) blocks
/// (at most 65536), marked kGridStrideAttr: no one-block kernel over data
/// whose size is known only at run time. Other ops (a scalar store) get one
/// iteration.
void wrapHostOpsOnDeviceBuffers(mlir::func::FuncOp f, int64_t threads);

} // namespace gatec::gpu

#endif
