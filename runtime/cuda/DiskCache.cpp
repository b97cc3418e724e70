#include "runtime/cuda/DiskCache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tiledsl::runtime {

namespace {
constexpr char kMagic[8] = {'T', 'L', 'C', 'A', 'C', 'H', 'E', '2'};
// Part of every key: a new compiler version must not load an old binary.
constexpr const char* kCompilerVersion = "tiledsl 0.3.0 / LLVM 19 NVPTX";

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
uint64_t checksum(const std::string& s) { return fnv1a(s, 1469598103934665603ull); }

bool always_compile() {
  const char* e = std::getenv("TILEDSL_ALWAYS_COMPILE");
  return e && *e && std::strcmp(e, "0") != 0;
}
}  // namespace

std::string cache_dir() {
  if (const char* e = std::getenv("TILEDSL_CACHE_DIR"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tiledsl";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tiledsl";
  return "/tmp/tiledsl-cache";
}

std::string cache_key(const std::string& ir_text, const std::string& target, int num_warps, int num_stages,
                      bool fp_fusion) {
  std::string all = fmt::format("{}\n{}\nwarps={} stages={} fp_fusion={}\n{}", kCompilerVersion, target, num_warps,
                                num_stages, fp_fusion, ir_text);
  // Two independent 64-bit hashes (different offset bases) make an accidental collision negligible.
  return fmt::format("{:016x}{:016x}", fnv1a(all, 1469598103934665603ull), fnv1a(all, 0x84222325cbf29ce4ull));
}

std::optional<CachedBinary> cache_read(const std::string& key) {
  if (always_compile()) return std::nullopt;
  std::ifstream in(std::filesystem::path(cache_dir()) / (key + ".cubin"), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string data = ss.str();
  // Layout: magic, u64 entry size, u64 binary size, u64 shared bytes, u64 checksum of all
  // three and the bytes, entry, binary.
  constexpr size_t header = sizeof kMagic + 4 * sizeof(uint64_t);
  if (data.size() < header || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) return std::nullopt;
  uint64_t sizes[4];
  std::memcpy(sizes, data.data() + sizeof kMagic, sizeof sizes);
  if (data.size() != header + sizes[0] + sizes[1]) return std::nullopt;  // truncated or padded
  CachedBinary b{data.substr(header, sizes[0]), data.substr(header + sizes[0]), static_cast<int>(sizes[2])};
  if (checksum(fmt::format("{}\n{}{}", b.shared_bytes, b.entry, b.binary)) != sizes[3]) return std::nullopt;
  return b;
}

void cache_write(const std::string& key, const CachedBinary& value) {
  std::error_code ec;
  std::filesystem::path dir = cache_dir();
  std::filesystem::create_directories(dir, ec);
  std::filesystem::path tmp =
      dir / fmt::format("{}.tmp.{}.{}", key, getpid(), std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    uint64_t sizes[4] = {value.entry.size(), value.binary.size(), static_cast<uint64_t>(value.shared_bytes),
                         checksum(fmt::format("{}\n{}{}", value.shared_bytes, value.entry, value.binary))};
    out.write(kMagic, sizeof kMagic);
    out.write(reinterpret_cast<const char*>(sizes), sizeof sizes);
    out << value.entry << value.binary;
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, dir / (key + ".cubin"), ec);  // atomic: readers see all or nothing
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace tiledsl::runtime
