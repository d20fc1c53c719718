#include "recipes_import.hpp"

namespace envkit::cli {
void register_recipes_import(CLI::App&, Commands&) {}
}  // namespace envkit::cli
