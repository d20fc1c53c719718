#pragma once

#include "command.hpp"

namespace envkit::cli {

// `envkit recipes import ...`: the importers, one subcommand per upstream source.
void register_recipes_import(CLI::App& recipes, Commands& out);

}  // namespace envkit::cli
