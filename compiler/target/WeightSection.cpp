//===- WeightSection.cpp - weights as raw bytes in their own object -------===//
//
// Translated to LLVM IR, every weight would be copied into an LLVM constant,
// serialized into the module and parsed back by clang: several copies of
// the weights in memory and minutes for a large model. Assembled from an
// .incbin, they would be held in the assembler's memory twice (2.5 GB for
// 1.2 GB of weights). Instead the bytes are streamed from their blobs into
// an ELF relocatable object written here: one .rodata section, a symbol
// per weight at its offset.
//
//===----------------------------------------------------------------------===//
#include "compiler/target/WeightSection.h"

#include "passes/common/ConstantBytes.h"
#include "passes/common/MappedPages.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>

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

template <typename T> void writePod(llvm::raw_ostream &os, const T &v) {
  os.write(reinterpret_cast<const char *>(&v), sizeof(T));
}

void pad(llvm::raw_ostream &os, uint64_t &offset, uint64_t align) {
  static const char zeros[64] = {};
  uint64_t n = (align - offset % align) % align;
  os.write(zeros, n);
  offset += n;
}

/// A string table: "\0name\0name\0...".
struct StringTable {
  std::string data = std::string(1, '\0');
  uint32_t add(StringRef s) {
    uint32_t at = data.size();
    data += s.str();
    data += '\0';
    return at;
  }
};
} // namespace

FailureOr<std::string> moveWeightsToObject(ModuleOp module, StringRef dir,
                                           int64_t minBytes) {
  namespace E = llvm::ELF;
  static_assert(llvm::endianness::native == llvm::endianness::little,
                "weights.o is written as the x86-64 host's structs");
  std::string path = (dir + "/weights.o").str();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return module.emitError()
               << "cannot write " << path << ": " << ec.message(),
           failure();
  // x86-64 little-endian ELF64: the header, the section's bytes, then the
  // symbol and string tables and the section headers.
  E::Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, E::ElfMagic, 4);
  eh.e_ident[E::EI_CLASS] = E::ELFCLASS64;
  eh.e_ident[E::EI_DATA] = E::ELFDATA2LSB;
  eh.e_ident[E::EI_VERSION] = E::EV_CURRENT;
  eh.e_ident[E::EI_OSABI] = E::ELFOSABI_NONE;
  eh.e_type = E::ET_REL;
  eh.e_machine = E::EM_X86_64;
  eh.e_version = E::EV_CURRENT;
  eh.e_ehsize = sizeof(E::Elf64_Ehdr);
  eh.e_shentsize = sizeof(E::Elf64_Shdr);
  writePod(os, eh); // rewritten below, once the offsets are known
  uint64_t fileOffset = sizeof(E::Elf64_Ehdr);
  pad(os, fileOffset, 64);
  uint64_t dataStart = fileOffset, offset = 0;

  StringTable strtab;
  std::vector<E::Elf64_Sym> symbols(1); // the null symbol
  SmallVector<DenseResourceElementsAttr> released;
  for (auto g : module.getOps<LLVM::GlobalOp>()) {
    if (!g.getConstant() || !g.getValueAttr())
      continue;
    auto bytes = rawBytes(g.getValueAttr());
    if (!bytes || (int64_t)bytes->size() < minBytes)
      continue;
    pad(os, offset, 64);
    os.write(bytes->data(), bytes->size());
    common::dropResidentPages(*bytes); // a weight read in place from its file
    E::Elf64_Sym sym{};
    sym.st_name = strtab.add(g.getSymName());
    sym.setBindingAndType(E::STB_GLOBAL, E::STT_OBJECT);
    sym.st_other = E::STV_HIDDEN;
    sym.st_shndx = 1;
    sym.st_value = offset;
    sym.st_size = bytes->size();
    symbols.push_back(sym);
    offset += bytes->size();
    if (auto res = dyn_cast<DenseResourceElementsAttr>(g.getValueAttr()))
      released.push_back(res);
    g.setValueAttr(Attribute());
    g.setLinkage(LLVM::Linkage::External);
    g.setVisibility_(LLVM::Visibility::Hidden);
    g.setDsoLocal(true);
  }
  if (symbols.size() == 1) {
    os.close();
    llvm::sys::fs::remove(path);
    return std::string();
  }
  uint64_t dataSize = offset;
  fileOffset = dataStart + dataSize;

  // Sections: 1 the weights, 2 .note.GNU-stack (no executable stack), 3
  // .symtab, 4 .strtab, 5 .shstrtab.
  StringTable shstrtab;
  uint32_t nWeights = shstrtab.add(".rodata.gatec_weights"),
           nStack = shstrtab.add(".note.GNU-stack"),
           nSymtab = shstrtab.add(".symtab"), nStrtab = shstrtab.add(".strtab"),
           nShstrtab = shstrtab.add(".shstrtab");
  pad(os, fileOffset, 8);
  uint64_t symtabOffset = fileOffset;
  for (const E::Elf64_Sym &sym : symbols)
    writePod(os, sym);
  fileOffset += symbols.size() * sizeof(E::Elf64_Sym);
  uint64_t strtabOffset = fileOffset;
  os << strtab.data;
  fileOffset += strtab.data.size();
  uint64_t shstrtabOffset = fileOffset;
  os << shstrtab.data;
  fileOffset += shstrtab.data.size();
  pad(os, fileOffset, 8);
  uint64_t shoff = fileOffset;

  auto section = [&](uint32_t name, uint32_t type, uint64_t flags, uint64_t off,
                     uint64_t size, uint32_t link, uint32_t info,
                     uint64_t align, uint64_t entsize) {
    E::Elf64_Shdr sh{};
    sh.sh_name = name;
    sh.sh_type = type;
    sh.sh_flags = flags;
    sh.sh_offset = off;
    sh.sh_size = size;
    sh.sh_link = link;
    sh.sh_info = info;
    sh.sh_addralign = align;
    sh.sh_entsize = entsize;
    writePod(os, sh);
  };
  section(0, E::SHT_NULL, 0, 0, 0, 0, 0, 0, 0);
  section(nWeights, E::SHT_PROGBITS, E::SHF_ALLOC, dataStart, dataSize, 0, 0,
          64, 0);
  section(nStack, E::SHT_PROGBITS, 0, dataStart, 0, 0, 0, 1, 0);
  // sh_info: the index of the first non-local symbol (all but the null).
  section(nSymtab, E::SHT_SYMTAB, 0, symtabOffset,
          symbols.size() * sizeof(E::Elf64_Sym), 4, 1, 8, sizeof(E::Elf64_Sym));
  section(nStrtab, E::SHT_STRTAB, 0, strtabOffset, strtab.data.size(), 0, 0, 1,
          0);
  section(nShstrtab, E::SHT_STRTAB, 0, shstrtabOffset, shstrtab.data.size(), 0,
          0, 1, 0);
  eh.e_shoff = shoff;
  eh.e_shnum = 6;
  eh.e_shstrndx = 5;
  os.seek(0);
  writePod(os, eh);
  os.close();
  if (os.has_error())
    return module.emitError()
               << "cannot write " << path << ": " << os.error().message(),
           failure();
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
  return path;
}

} // namespace gatec
