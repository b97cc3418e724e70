// The on-disk kernel cache: compiled GPU binaries (cubins) under TILEDSL_CACHE_DIR (default
// $XDG_CACHE_HOME/tiledsl or ~/.cache/tiledsl), one file per key. Entries are written atomically
// (temporary file + rename) and carry a checksum, so a corrupt or truncated entry is detected and
// recompiled rather than loaded.
#pragma once

#include <optional>
#include <string>

namespace tiledsl::runtime {

struct CachedBinary {
  std::string entry;     // kernel symbol
  std::string binary;    // cubin bytes
  int shared_bytes = 0;  // dynamic shared memory it launches with
};

// A 128-bit hash (XXH3) of everything that decides the binary, as 32 hex digits: the IR, the
// target, the options, tiledsl's version and the compiler's identity (LLVM, libdevice).
std::string cache_key(const std::string& ir_text, const std::string& target, int num_warps, int num_stages,
                      bool fp_fusion = true);

// The entry for `key`, or nothing when it is absent, corrupt, or TILEDSL_ALWAYS_COMPILE is set.
std::optional<CachedBinary> cache_read(const std::string& key);
// Stores an entry; failures to write (read-only disk, ...) are ignored: the cache is an optimisation.
void cache_write(const std::string& key, const CachedBinary& value);
// The cache folder in use.
std::string cache_dir();

}  // namespace tiledsl::runtime
