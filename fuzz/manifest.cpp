// Fuzz target: envkit.yaml, as every command reads it (manifest::parse), then
// the content hash the lock records.

#include "envkit/manifest/manifest.hpp"

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto manifest = envkit::manifest::parse(envkit::fuzz::text_of(data, size), "envkit.yaml");
  if (!manifest) {
    envkit::fuzz::check_refusal(manifest.error());
    return 0;
  }
  (void)envkit::manifest::content_hash(*manifest);
  return 0;
}
