#include "envkit/gpu/host_facts.hpp"

namespace envkit::gpu {

std::string Provenance::to_string() const {
  return kind == Kind::nothing_found ? "checked " + where : where;
}

}  // namespace envkit::gpu
