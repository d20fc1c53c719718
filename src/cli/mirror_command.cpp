// Placeholder: `envkit mirror` commands are being built (issue 6).
#include "command.hpp"

namespace envkit::cli {

void register_mirror(CLI::App&, Commands&) {}

}  // namespace envkit::cli
