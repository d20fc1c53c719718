#include "envkit/doctor/finding.hpp"

namespace envkit::doctor {

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::ok:
      return "ok";
    case Severity::warn:
      return "warn";
    case Severity::error:
      return "error";
  }
  return "error";
}

}  // namespace envkit::doctor
