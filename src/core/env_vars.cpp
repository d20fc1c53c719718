#include "envkit/core/env_vars.hpp"

#include <cstdlib>

namespace envkit::env {

std::optional<std::string> get(const Variable& variable) {
  const std::string name(variable.name);
  if (const char* value = std::getenv(name.c_str())) return std::string(value);
  return std::nullopt;
}

}  // namespace envkit::env
