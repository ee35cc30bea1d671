//===- WeightSection.cpp - weights as raw bytes in their own object -------===//
//
// Translated to LLVM IR, every weight would be copied into an LLVM constant,
// serialized into the module and parsed back by clang: several copies of
// the weights in memory and minutes for a large model. Instead the bytes go
// to a binary file that the assembler includes verbatim (.incbin).
//
//===----------------------------------------------------------------------===//
#include "compiler/target/WeightSection.h"

#include "passes/common/ConstantBytes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace gatec {
namespace {
/// The bytes of a non-splat constant whose memory layout is its row-major
/// raw data (no i1 packing, no sub-byte or complex elements).
std::optional<ArrayRef<char>> rawBytes(Attribute attr) {
  auto shaped = dyn_cast<ElementsAttr>(attr);
  if (!shaped)
    return std::nullopt;
  Type e = shaped.getElementType();
  if (!e.isIntOrFloat() || e.getIntOrFloatBitWidth() % 8)
    return std::nullopt;
  return common::constantBytes(attr);
}
} // namespace

FailureOr<std::string> moveWeightsToAssembly(ModuleOp module, StringRef dir,
                                             int64_t minBytes) {
  std::string bin = (dir + "/weights.bin").str(),
              asmPath = (dir + "/weights.s").str();
  std::error_code ec;
  llvm::raw_fd_ostream binOs(bin, ec);
  if (ec)
    return module.emitError() << "cannot write " << bin << ": " << ec.message(),
           failure();
  std::string asmText;
  llvm::raw_string_ostream as(asmText);
  // No executable stack: the section note every object of the library has.
  as << "\t.section\t.note.GNU-stack,\"\",@progbits\n"
     << "\t.section\t.rodata.gatec_weights,\"a\",@progbits\n";
  uint64_t offset = 0;
  SmallVector<DenseResourceElementsAttr> released;
  for (auto g : module.getOps<LLVM::GlobalOp>()) {
    if (!g.getConstant() || !g.getValueAttr())
      continue;
    auto bytes = rawBytes(g.getValueAttr());
    if (!bytes || (int64_t)bytes->size() < minBytes)
      continue;
    uint64_t pad = (64 - offset % 64) % 64;
    static const char zeros[64] = {};
    binOs.write(zeros, pad);
    offset += pad;
    binOs.write(bytes->data(), bytes->size());
    StringRef name = g.getSymName();
    // A symbol at its offset in the one .incbin of the file (an .incbin per
    // weight would make the assembler read the whole file each time).
    as << "\t.globl\t" << name << "\n\t.hidden\t" << name << "\n\t.type\t"
       << name << ",@object\n\t.size\t" << name << ", " << bytes->size()
       << "\n\t.set\t" << name << ", .Lgatec_weights + " << offset << "\n";
    offset += bytes->size();
    if (auto res = dyn_cast<DenseResourceElementsAttr>(g.getValueAttr()))
      released.push_back(res);
    g.setValueAttr(Attribute());
    g.setLinkage(LLVM::Linkage::External);
    g.setVisibility_(LLVM::Visibility::Hidden);
    g.setDsoLocal(true);
  }
  binOs.close();
  if (binOs.has_error())
    return module.emitError()
               << "cannot write " << bin << ": " << binOs.error().message(),
           failure();
  if (offset == 0)
    return std::string();
  as << "\t.p2align\t6\n.Lgatec_weights:\n\t.incbin\t\"" << bin << "\"\n";
  // The bytes are on disk: the in-memory copies go (a blob shared with a
  // global that keeps its initializer is kept).
  llvm::DenseSet<void *> kept;
  for (auto g : module.getOps<LLVM::GlobalOp>())
    if (auto res =
            dyn_cast_or_null<DenseResourceElementsAttr>(g.getValueAttr()))
      kept.insert(res.getRawHandle().getResource());
  for (DenseResourceElementsAttr res : released)
    if (!kept.contains(res.getRawHandle().getResource()))
      res.getRawHandle().getResource()->setBlob(AsmResourceBlob());
  llvm::raw_fd_ostream asmOs(asmPath, ec);
  if (ec)
    return module.emitError()
               << "cannot write " << asmPath << ": " << ec.message(),
           failure();
  asmOs << asmText;
  return asmPath;
}

} // namespace gatec
