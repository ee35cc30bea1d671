//===- Targets.h - the phases of each target --------------------*- C++ -*-===//
//
// Phases 1-5 are shared (compiler/Pipeline.cpp); each target adds its own,
// from its folder: compiler/target/cpu (phase `cpu`) and
// compiler/target/cuda (phases `gpu`, `nvvm`, `ptx`, and --dump-kernels).
// Both emit their library through compiler/target/LibraryEmitter.h, whose
// ABI wrapper starts with compiler/target/abi/model_support.c.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_COMPILER_TARGET_TARGETS_H
#define GATEC_COMPILER_TARGET_TARGETS_H

#include "compiler/Pipeline.h"

namespace gatec {

/// The host-side lowering of loops and memrefs to the LLVM dialect that
/// both targets' host code starts with (a textual pipeline prefix).
extern const char *const kHostToLLVM;

/// Phase 6a: `cpu`.
Phase cpuPhase(const PipelineOptions &o);
/// The widest vector registers of `cpu` (a -march name; empty: the host):
/// 512 bits with AVX-512F, 256 with AVX2 + FMA, else 128; 0 for a name
/// that is not an x86-64 CPU.
int64_t cpuVectorBitsOf(llvm::StringRef cpu);

/// Phases 6b-8b: `gpu`, `nvvm`, `ptx`.
std::vector<Phase> cudaPhases(const PipelineOptions &o);

} // namespace gatec

#endif
