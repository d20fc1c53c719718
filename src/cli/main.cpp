#include <fmt/format.h>

#include <csignal>
#include <exception>

#include "app.hpp"

int main(int argc, char** argv) {
  // A child that exits before reading its stdin must not kill us.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return envkit::cli::run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr,
               "error: internal error: {}\nhint: this is a bug in envkit; please report it\n",
               e.what());
    return 3;
  }
}
