// Files the runtime keeps between runs (the kernel cache, autotuning records), written and read
// without trusting what is on disk.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace tiledsl::runtime {

// Writes `data` to `path` through a temporary file in the same folder (named with the process
// and thread) renamed over it: readers see the old file or the new one, never part of one. The
// temporary file is removed on any failure. Returns whether the file was written.
bool write_file_atomically(const std::filesystem::path& path, std::string_view data);

// The contents of `path` when it is a regular file of at most `max_bytes` (a FIFO, a device or
// a larger file is refused without reading it); nothing otherwise.
std::optional<std::string> read_regular_file(const std::filesystem::path& path, size_t max_bytes);

// A 128-bit hash (XXH3) of `data` as 32 hex digits.
std::string hash128(std::string_view data);

}  // namespace tiledsl::runtime
