// Placeholder: `envkit config` commands are being built (issue 6).
#include "command.hpp"

namespace envkit::cli {

void register_config(CLI::App&, Commands&) {}

}  // namespace envkit::cli
