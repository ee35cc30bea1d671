//===- KernelDump.cpp - --dump-kernels: PTX and ptxas resource usage ------===//
#include "compiler/target/LibraryEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace gatec {

LogicalResult dumpKernels(ModuleOp module, StringRef dir, StringRef gpuArch) {
  Location loc = module.getLoc();
  if (auto ec = llvm::sys::fs::create_directories(dir))
    return emitError(loc) << "cannot create '" << dir << "': " << ec.message();
  // PTX of every kernel module, whatever --gpu-format the library uses.
  OwningOpRef<ModuleOp> copy = module.clone();
  bool hasModules = false;
  copy->walk([&](mlir::gpu::GPUModuleOp) { hasModules = true; });
  if (hasModules) {
    PassManager pm(module.getContext());
    if (failed(parsePassPipeline("gpu-module-to-binary{format=isa}", pm)) ||
        failed(pm.run(*copy)))
      return emitError(loc) << "--dump-kernels: cannot produce PTX";
  }
  std::optional<std::string> ptxas;
  for (StringRef home : {"CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"})
    if (const char *v = getenv(home.data())) {
      SmallString<128> p(v);
      llvm::sys::path::append(p, "bin");
      if (auto found = llvm::sys::findProgramByName("ptxas", {p}))
        ptxas = *found;
      if (ptxas)
        break;
    }
  if (!ptxas)
    if (auto found =
            llvm::sys::findProgramByName("ptxas", {"/usr/local/cuda/bin"}))
      ptxas = *found;
  if (!ptxas)
    if (auto found = llvm::sys::findProgramByName("ptxas"))
      ptxas = *found;

  std::error_code ec;
  SmallString<128> resPath(dir);
  llvm::sys::path::append(resPath, "resources.txt");
  llvm::raw_fd_ostream res(resPath, ec);
  if (ec)
    return emitError(loc) << "cannot write " << resPath << ": " << ec.message();
  if (!ptxas)
    res << "# ptxas not found (set CUDA_HOME): PTX only\n";
  LogicalResult result = success();
  copy->walk([&](mlir::gpu::BinaryOp bin) {
    for (Attribute a : bin.getObjects()) {
      auto obj = dyn_cast<mlir::gpu::ObjectAttr>(a);
      if (!obj || obj.getFormat() != mlir::gpu::CompilationTarget::Assembly)
        continue;
      SmallString<128> ptx(dir);
      llvm::sys::path::append(ptx, (bin.getName() + ".ptx").str());
      {
        llvm::raw_fd_ostream os(ptx, ec);
        if (ec) {
          result = emitError(loc) << "cannot write " << ptx;
          return;
        }
        os << obj.getObject().getValue();
      }
      if (!ptxas)
        continue;
      SmallString<128> log(dir), cubin(dir);
      llvm::sys::path::append(log, (bin.getName() + ".ptxas.txt").str());
      llvm::sys::path::append(cubin, (bin.getName() + ".cubin").str());
      std::string arch = ("-arch=" + gpuArch).str();
      SmallVector<StringRef> args = {*ptxas,    "-v", arch,
                                     ptx.str(), "-o", cubin.str()};
      std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                              StringRef(log)};
      int rc = llvm::sys::ExecuteAndWait(*ptxas, args, std::nullopt, redirects);
      auto text = llvm::MemoryBuffer::getFile(log);
      res << "== " << bin.getName() << " (" << gpuArch << ", ptxas exit " << rc
          << ")\n";
      if (text)
        res << (*text)->getBuffer();
      if (rc != 0)
        result = emitError(loc)
                 << "ptxas rejected kernel module " << bin.getName() << " for "
                 << gpuArch << " (see " << log << ")";
    }
  });
  return result;
}

} // namespace gatec
