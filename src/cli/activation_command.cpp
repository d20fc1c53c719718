// Placeholder: `envkit activation` commands are being built (issue 6).
#include "command.hpp"

namespace envkit::cli {

void register_activation(CLI::App&, Commands&) {}

}  // namespace envkit::cli
