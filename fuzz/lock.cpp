// Fuzz target: envkit.lock (lock::parse). A lock that reads must write a text
// that reads again, to the same text: `lock` writes what `install` reads.

#include "envkit/lock/lockfile.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envkit;
  auto lockfile = lock::parse(fuzz::text_of(data, size), "envkit.lock");
  if (!lockfile) {
    fuzz::check_refusal(lockfile.error());
    return 0;
  }
  const std::string written = lock::write(*lockfile);
  auto again = lock::parse(written, "envkit.lock (written)");
  if (!again) fuzz::finding("a lock that was read writes a lock that is refused", written);
  if (const std::string rewritten = lock::write(*again); rewritten != written) {
    fuzz::finding("writing a lock is not a fixpoint", fuzz::first_difference(written, rewritten));
  }
  return 0;
}
