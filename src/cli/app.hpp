#pragma once

namespace envkit::cli {

// Parses the command line and runs the chosen command; returns the exit code.
int run(int argc, char** argv);

}  // namespace envkit::cli
