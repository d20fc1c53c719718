// Fuzz target: the makeself header of NVIDIA's runfiles (archive's header
// reader: looks_like_makeself, makeself_line_count, parse_makeself_header).

#include "envkit/archive/runfile.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envkit;
  const std::string_view text = fuzz::text_of(data, size);
  (void)archive::looks_like_makeself(text);
  if (auto lines = archive::makeself_line_count(text, "fuzz.run"); !lines) {
    fuzz::check_refusal(lines.error());
  }
  auto header = archive::parse_makeself_header(text, "fuzz.run");
  if (!header) {
    fuzz::check_refusal(header.error());
    return 0;
  }
  // The payload starts after the header's lines, which the text holds.
  if (header->header_bytes > text.size()) fuzz::finding("the header ends past its text");
  (void)header->payload_bytes();
  return 0;
}
