//===- MappedPages.h - resident pages of mapped weight files -----*- C++
//-*-===//
//
// Weights in ONNX external data are read through a read-only mapping of
// their file (the importer's). Every page a pass reads stays resident
// until the whole mapping is unmapped, so a compile that packs each
// weight into a new layout would hold the model twice. A pass that has
// read a weight for the last time (or can read it again from the file)
// drops its pages: the mapping and its contents stay valid, later reads
// fault them back in from the page cache.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_COMMON_MAPPEDPAGES_H
#define GATEC_PASSES_COMMON_MAPPEDPAGES_H

#include "llvm/ADT/ArrayRef.h"
#include <cstddef>

namespace gatec::common {

/// Records [data, data + size) as a read-only mapping of a file.
void registerFileMapping(const char *data, size_t size);

/// Forgets the mapping that starts at `data` (before it is unmapped).
void unregisterFileMapping(const char *data);

/// Drops the resident pages that lie wholly inside `bytes`, where `bytes`
/// lies inside a registered file mapping; elsewhere (heap memory), does
/// nothing.
void dropResidentPages(llvm::ArrayRef<char> bytes);

} // namespace gatec::common

#endif // GATEC_PASSES_COMMON_MAPPEDPAGES_H
