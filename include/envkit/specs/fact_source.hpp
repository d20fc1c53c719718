#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace envkit::specs {

// Where the facts about the machines a lock serves (driver, GPUs, glibc) come
// from. Sentences about them are made where they are printed.
enum class FactSource : std::uint8_t {
  manifest,           // envkit.yaml `system:`: every machine the lock serves
  override_variable,  // ENVKIT_OVERRIDE_DRIVER / _GPUS / _GLIBC on this machine
  host,               // probed on this machine
  none,               // nothing known
};

// As envkit.lock writes it: `manifest`, `override`, `host`, `none`.
[[nodiscard]] std::string_view to_string(FactSource source);
[[nodiscard]] std::optional<FactSource> parse_fact_source(std::string_view text);

}  // namespace envkit::specs
