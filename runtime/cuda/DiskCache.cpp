#include "runtime/cuda/DiskCache.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "support/Env.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "runtime/Files.h"
#include "runtime/cuda/Launcher.h"
#include "tiledsl/version.h"

namespace tiledsl::runtime {

namespace {
constexpr char kMagic[8] = {'T', 'L', 'C', 'A', 'C', 'H', 'E', '3'};
// No cubin of ours comes near this; a larger file is not read (and is replaced on the next write).
constexpr uint64_t kMaxEntryBytes = uint64_t{256} << 20;
constexpr uint64_t kMaxSharedBytes = uint64_t{1} << 20;
constexpr size_t kHeaderBytes = sizeof kMagic + 4 * sizeof(uint64_t);

// Covers the sizes as well as the bytes, so that a shifted boundary between the entry name and
// the binary is a miss, not a wrong hit.
uint64_t checksum(const uint64_t sizes[3], const std::string& entry, const std::string& binary) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, sizes, 3 * sizeof(uint64_t));
  XXH3_64bits_update(st, entry.data(), entry.size());
  XXH3_64bits_update(st, binary.data(), binary.size());
  uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

bool always_compile() { return env::flag(env::Var::TILEDSL_ALWAYS_COMPILE, false); }
}  // namespace

std::string cache_dir() {
  if (std::string e = env::value(env::Var::TILEDSL_CACHE_DIR); !e.empty()) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tiledsl";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tiledsl";
  return "/tmp/tiledsl-cache";
}

std::string cache_key(const std::string& ir_text, const std::string& target, int num_warps, int num_stages,
                      bool fp_fusion) {
  // Everything that decides the binary: our version, the compiler (LLVM, libdevice), the target,
  // the options and the IR.
  return hash128(fmt::format("tiledsl {}\n{}\n{}\nwarps={} stages={} fp_fusion={}\n{}", TILEDSL_VERSION,
                             compiler_identity(), target, num_warps, num_stages, fp_fusion, ir_text));
}

std::optional<CachedBinary> cache_read(const std::string& key) {
  if (always_compile()) return std::nullopt;
  // Layout: magic, u64 entry size, u64 binary size, u64 shared bytes, u64 checksum of the three
  // sizes and the bytes, entry, binary. Anything else is a miss.
  auto data = read_regular_file(std::filesystem::path(cache_dir()) / (key + ".cubin"), kMaxEntryBytes);
  if (!data || data->size() < kHeaderBytes || std::memcmp(data->data(), kMagic, sizeof kMagic) != 0)
    return std::nullopt;
  uint64_t sizes[4];
  std::memcpy(sizes, data->data() + sizeof kMagic, sizeof sizes);
  uint64_t body = data->size() - kHeaderBytes;
  if (sizes[0] > body || sizes[1] != body - sizes[0] || sizes[2] > kMaxSharedBytes) return std::nullopt;
  CachedBinary b{data->substr(kHeaderBytes, sizes[0]), data->substr(kHeaderBytes + sizes[0]),
                 static_cast<int>(sizes[2])};
  if (b.entry.empty() || checksum(sizes, b.entry, b.binary) != sizes[3]) return std::nullopt;
  return b;
}

void cache_write(const std::string& key, const CachedBinary& value) {
  std::error_code ec;
  std::filesystem::path dir = cache_dir();
  std::filesystem::create_directories(dir, ec);
  uint64_t sizes[4] = {value.entry.size(), value.binary.size(), static_cast<uint64_t>(value.shared_bytes), 0};
  sizes[3] = checksum(sizes, value.entry, value.binary);
  std::string data(kMagic, sizeof kMagic);
  data.append(reinterpret_cast<const char*>(sizes), sizeof sizes);
  data += value.entry;
  data += value.binary;
  write_file_atomically(dir / (key + ".cubin"), data);  // a failure leaves no file behind
}

}  // namespace tiledsl::runtime
