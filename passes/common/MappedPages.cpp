//===- MappedPages.cpp - resident pages of mapped weight files ------------===//
#include "passes/common/MappedPages.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace gatec::common {
namespace {
std::mutex &registryMutex() {
  static std::mutex m;
  return m;
}
/// Start address -> size of each registered mapping.
std::map<uintptr_t, size_t> &registry() {
  static std::map<uintptr_t, size_t> r;
  return r;
}
} // namespace

void registerFileMapping(const char *data, size_t size) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry()[reinterpret_cast<uintptr_t>(data)] = size;
}

void unregisterFileMapping(const char *data) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().erase(reinterpret_cast<uintptr_t>(data));
}

void dropResidentPages(llvm::ArrayRef<char> bytes) {
  if (bytes.empty())
    return;
  auto begin = reinterpret_cast<uintptr_t>(bytes.data());
  uintptr_t end = begin + bytes.size();
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    auto it = registry().upper_bound(begin);
    if (it == registry().begin())
      return;
    --it;
    if (end > it->first + it->second)
      return;
  }
  auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first < last)
    (void)madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
}

} // namespace gatec::common
