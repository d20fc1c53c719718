// Fuzz target: config.yaml, which every command reads (config::apply_file).

#include "envkit/config/config.hpp"

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envkit;
  const config::Lookup lookup = [](const env::Variable& variable) -> std::optional<std::string> {
    if (&variable == &env::kHome) return "/home/fuzz";
    return std::nullopt;
  };
  config::Settings settings;
  auto applied = config::apply_file(settings, fuzz::text_of(data, size),
                                    "/project/.envkit/config.yaml", lookup);
  if (!applied) fuzz::check_refusal(applied.error());
  return 0;
}
