#include "prefix_option.hpp"

#include <fmt/format.h>

#include "envkit/core/text.hpp"
#include "envkit/store/prefix.hpp"

namespace envkit::cli {

namespace fs = std::filesystem;

namespace {

// The installed prefix's path: absolute, but still the symlink, never the
// generation it points at, so a later install's switch reaches what was
// activated. Fails when nothing is installed there, or when the path holds a
// `:` (PATH and LD_LIBRARY_PATH would cut it in two).
Result<fs::path> installed_prefix(const Context& context, const std::optional<fs::path>& flag) {
  auto prefix = store::Prefix::open(prefix_path(context, flag));
  if (!prefix) return std::move(prefix).error();
  const auto& path = prefix->path();
  if (!prefix->current_generation()) {
    return Error::failed(fmt::format("nothing is installed in {}", text::quoted(path.string())))
        .hint("run `envkit install` first")
        .hint("or name another prefix with --prefix DIR");
  }
  // PATH and the other lists are split on `:`: such a prefix would be cut in two.
  if (path.string().find(':') != std::string::npos) {
    return Error::input(fmt::format("the prefix path {} contains `:`, which PATH and "
                                    "LD_LIBRARY_PATH cannot hold",
                                    text::quoted(path.string())))
        .hint("install into a path without `:` (--prefix DIR)");
  }
  return path;
}

}  // namespace

fs::path prefix_path(const Context& context, const std::optional<fs::path>& flag) {
  if (flag) return flag->is_absolute() ? *flag : context.options.directory / *flag;
  return context.options.directory / ".envkit" / "env";
}

Result<Activated> activate_prefix(const Context& context, const std::optional<fs::path>& flag) {
  auto prefix = installed_prefix(context, flag);
  if (!prefix) return std::move(prefix).error();
  const auto inherited = activation::current_environment();
  auto changes = activation::assignments(*prefix, activation::probe(*prefix), inherited);
  auto environment = activation::with_changes(inherited, changes);
  for (const auto& note : activation::replaced_values(changes, inherited))
    context.console.detail(note);
  for (const auto& warning : activation::shadowing_warnings(*prefix, environment))
    context.console.warn(warning);
  return Activated{.prefix = *std::move(prefix),
                   .changes = std::move(changes),
                   .environment = std::move(environment)};
}

void add_prefix_option(CLI::App& command, std::optional<fs::path>& prefix,
                       const std::string& help) {
  command.add_option("--prefix", prefix, help)->option_text("DIR");
}

}  // namespace envkit::cli
