#include "prefix_option.hpp"

#include <fmt/format.h>

#include "envkit/core/text.hpp"
#include "envkit/store/prefix.hpp"

namespace envkit::cli {

namespace fs = std::filesystem;

fs::path prefix_path(const Context& context, const std::optional<fs::path>& flag) {
  if (flag) return flag->is_absolute() ? *flag : context.options.directory / *flag;
  return context.options.directory / ".envkit" / "env";
}

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

}  // namespace envkit::cli
