// The on-disk kernel cache: round trip, corruption and truncation detected, concurrent writers.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "runtime/cuda/DiskCache.h"

using namespace tiledsl::runtime;

namespace {
struct TempCacheDir {
  std::filesystem::path dir;
  TempCacheDir() {
    dir = std::filesystem::temp_directory_path() / ("tiledsl-cache-test-" + std::to_string(std::random_device{}()));
    setenv("TILEDSL_CACHE_DIR", dir.c_str(), 1);
    unsetenv("TILEDSL_ALWAYS_COMPILE");
  }
  ~TempCacheDir() {
    std::filesystem::remove_all(dir);
    unsetenv("TILEDSL_CACHE_DIR");
  }
};

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(g());
  return s;
}
}  // namespace

TEST_CASE("cache keys depend on the IR, target and options", "[unit]") {
  auto k = cache_key("kernel @a() {}", "sm_90", 4, 3);
  CHECK(k.size() == 32);
  CHECK(k == cache_key("kernel @a() {}", "sm_90", 4, 3));
  CHECK(k != cache_key("kernel @b() {}", "sm_90", 4, 3));
  CHECK(k != cache_key("kernel @a() {}", "sm_80", 4, 3));
  CHECK(k != cache_key("kernel @a() {}", "sm_90", 8, 3));
  CHECK(k != cache_key("kernel @a() {}", "sm_90", 4, 2));
  CHECK(k != cache_key("kernel @a() {}", "sm_90", 4, 3, /*fp_fusion=*/false));
}

TEST_CASE("cache entries round-trip and bad entries are rejected", "[unit]") {
  TempCacheDir tmp;
  std::string key = cache_key("ir", "sm_90", 4, 3);
  CHECK(!cache_read(key));
  CachedBinary b{"my_kernel", random_bytes(4099, 1), 73728};
  cache_write(key, b);
  auto r = cache_read(key);
  REQUIRE(r);
  CHECK(r->entry == "my_kernel");
  CHECK(r->binary == b.binary);
  CHECK(r->shared_bytes == 73728);  // the launch needs it: part of the entry and its checksum

  setenv("TILEDSL_ALWAYS_COMPILE", "1", 1);
  CHECK(!cache_read(key));
  unsetenv("TILEDSL_ALWAYS_COMPILE");

  auto file = tmp.dir / (key + ".cubin");
  auto size = std::filesystem::file_size(file);
  {  // flip one byte of the payload: the checksum catches it
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 100));
    char c;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(size - 100));
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  CHECK(!cache_read(key));
  cache_write(key, b);
  REQUIRE(cache_read(key));
  {  // change the shared-memory size in the header (after the magic and two sizes)
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8 + 2 * 8);
    uint64_t other = 1024;
    f.write(reinterpret_cast<const char*>(&other), sizeof other);
  }
  CHECK(!cache_read(key));
  cache_write(key, b);
  REQUIRE(cache_read(key));
  std::filesystem::resize_file(file, size - 7);  // truncated, as by a crash mid-write without rename
  CHECK(!cache_read(key));
}

TEST_CASE("concurrent writers and readers never see a partial entry", "[unit]") {
  TempCacheDir tmp;
  std::string key = cache_key("shared", "sm_90", 4, 3);
  std::vector<CachedBinary> versions;
  for (unsigned i = 0; i < 4; ++i) versions.push_back({"k" + std::to_string(i), random_bytes(200000 + i * 17, i)});
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (unsigned t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        cache_write(key, versions[(t + static_cast<unsigned>(i)) % versions.size()]);
        if (auto r = cache_read(key)) {
          bool known = false;
          for (const auto& v : versions) known |= r->entry == v.entry && r->binary == v.binary;
          if (!known) ++bad;
        }
      }
    });
  for (auto& t : threads) t.join();
  CHECK(bad == 0);
  CHECK(cache_read(key));
}

TEST_CASE("cache entries that are not small regular files are misses, never blocks or floods", "[unit]") {
  TempCacheDir tmp;
  std::filesystem::create_directories(tmp.dir);
  std::string key = cache_key("fifo", "sm_90", 4, 3);
  auto file = tmp.dir / (key + ".cubin");
  // A FIFO with no writer: opening it for reading would wait forever.
  REQUIRE(mkfifo(file.c_str(), 0644) == 0);
  CHECK(!cache_read(key));
  std::filesystem::remove(file);
  // A device that never ends: reading it whole would grow forever.
  std::filesystem::create_symlink("/dev/zero", file);
  CHECK(!cache_read(key));
  std::filesystem::remove(file);
  // A file over the size limit is not read (a sparse file: no disk used).
  { std::ofstream(file) << "x"; }
  std::filesystem::resize_file(file, (uint64_t{1} << 30) + 5);
  CHECK(!cache_read(key));
  std::filesystem::remove(file);
  // After any of these, a write replaces the entry and reads work again.
  cache_write(key, {"k", random_bytes(333, 9), 0});
  CHECK(cache_read(key));
}

TEST_CASE("a crafted size header or a shifted name boundary is a miss, not a throw or a wrong hit", "[unit]") {
  TempCacheDir tmp;
  std::string key = cache_key("crafted", "sm_90", 4, 3);
  auto file = tmp.dir / (key + ".cubin");
  cache_write(key, {"kernel_a", random_bytes(1001, 3), 128});
  REQUIRE(cache_read(key));
  auto header_u64 = [&](int index, uint64_t v) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8 + index * 8);
    f.write(reinterpret_cast<const char*>(&v), sizeof v);
  };
  // Entry and binary sizes that wrap around when added: must not pass the size check.
  header_u64(0, ~uint64_t{0} - 10);
  header_u64(1, 1001 + 8 + 11);
  CHECK_NOTHROW(cache_read(key));
  CHECK(!cache_read(key));
  // The name ends one byte later (and the binary starts one later): same bytes, other split.
  cache_write(key, {"kernel_a", random_bytes(1001, 3), 128});
  header_u64(0, 9);
  header_u64(1, 1000);
  CHECK(!cache_read(key));
  // An absurd shared-memory size.
  cache_write(key, {"kernel_a", random_bytes(1001, 3), 128});
  header_u64(2, uint64_t{1} << 40);
  CHECK(!cache_read(key));
}

TEST_CASE("a write that cannot be renamed leaves no temporary file", "[unit]") {
  TempCacheDir tmp;
  std::string key = cache_key("blocked", "sm_90", 4, 3);
  // A folder where the entry should go: the rename fails.
  std::filesystem::create_directories(tmp.dir / (key + ".cubin") / "x");
  cache_write(key, {"k", random_bytes(100, 4), 0});
  CHECK(!cache_read(key));
  for (const auto& e : std::filesystem::directory_iterator(tmp.dir))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
}
