#include "envkit/store/prefix.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>

#include "envkit/core/text.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

namespace {

std::optional<int> parse_generation(std::string_view name) {
  int value = 0;
  const auto* end = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(name.data(), end, value);
  if (ec != std::errc() || ptr != end || value <= 0) return std::nullopt;
  return value;
}

bool is_empty_directory(const fs::path& path) {
  std::error_code ignored;
  return fs::is_directory(path, ignored) && fs::is_empty(path, ignored);
}

}  // namespace

Result<Prefix> Prefix::open(const fs::path& path) {
  const auto absolute = fs::absolute(path).lexically_normal();
  fs::path normal = absolute.has_filename() ? absolute : absolute.parent_path();
  Prefix prefix(normal);
  std::error_code ignored;
  const auto status = fs::symlink_status(normal, ignored);
  if (!fs::exists(status) || is_empty_directory(normal)) return prefix;
  // A symlink is ours only when it points into our generations: never
  // repoint a link the user made (`--prefix /usr/local/cuda`).
  if (fs::is_symlink(status)) {
    const auto target = fs::read_symlink(normal, ignored);
    if (target.parent_path() == fs::path(prefix.generations_dir().filename())) return prefix;
    return Error::input(fmt::format("{} is a symlink envkit did not make (to {})",
                                    text::quoted(normal.string()), text::quoted(target.string())))
        .hint("choose another --prefix; envkit never repoints a link it did not make");
  }
  if (fs::exists(normal / ".envkit" / "state.json", ignored)) {
    // An environment unpacked from an image `envkit export` wrote: read where it is.
    auto state = read_state(normal);
    if (state && *state && (*state)->link_mode == kImageLinkMode) {
      prefix.image_ = true;
      return prefix;
    }
    return Error::failed(
               fmt::format("{} was made by another envkit version", text::quoted(normal.string())))
        .hint("remove it and run `envkit install` again");
  }
  return Error::input(
             fmt::format("{} exists and was not made by envkit", text::quoted(normal.string())))
      .hint("choose another --prefix, or remove it first");
}

fs::path Prefix::generations_dir() const {
  return path_.parent_path() / ("." + path_.filename().string() + ".generations");
}

fs::path Prefix::lock_path() const {
  return path_.parent_path() / ("." + path_.filename().string() + ".lock");
}

fs::path Prefix::generation_root(int generation) const {
  if (image_) return path_;
  return generations_dir() / std::to_string(generation);
}

std::optional<int> Prefix::current_generation() const {
  if (image_) return 1;
  std::error_code error;
  const auto target = fs::read_symlink(path_, error);
  if (error) return std::nullopt;
  if (target.parent_path().filename() != generations_dir().filename()) return std::nullopt;
  auto generation = parse_generation(target.filename().string());
  if (!generation || !fs::is_directory(generation_root(*generation), error)) return std::nullopt;
  return generation;
}

Result<std::optional<PrefixState>> Prefix::state() const {
  const auto generation = current_generation();
  if (!generation) return std::optional<PrefixState>{};
  return read_state(generation_root(*generation));
}

Result<fs::path> Prefix::begin(int generation) const {
  if (image_) {
    return Error::input(fmt::format("{} holds an environment unpacked from an image (`envkit "
                                    "export`): envkit reads it but does not change it",
                                    text::quoted(path_.string())))
        .hint("install into another --prefix, or export a new image");
  }
  const auto root = generation_root(generation);
  std::error_code error;
  fs::remove_all(root, error);
  fs::create_directories(root, error);
  if (error) {
    return Error::failed(fmt::format("cannot create {}", text::quoted(root.string())))
        .because(error.message());
  }
  return root;
}

Result<void> Prefix::commit(int generation) const {
  const auto relative = fs::path(generations_dir().filename()) / std::to_string(generation);
  const auto temporary =
      path_.parent_path() / fmt::format(".{}.new-{}", path_.filename().string(), ::getpid());
  std::error_code error;
  fs::remove(temporary, error);
  fs::create_directory_symlink(relative, temporary, error);
  if (!error && is_empty_directory(path_))
    fs::remove(path_, error);  // first install over an empty dir
  // rename(2) replaces the old symlink in one step: readers see old or new.
  if (!error) fs::rename(temporary, path_, error);
  if (error) {
    fs::remove(temporary, error);
    return Error::failed(
               fmt::format("cannot point {} at its new generation", text::quoted(path_.string())))
        .because(error.message());
  }
  remove_stale_generations();
  return {};
}

void Prefix::remove_stale_generations() const {
  const auto current = current_generation();
  std::error_code error;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(generations_dir(), error), end; !error && it != end;
       it.increment(error)) {
    if (parse_generation(it->path().filename().string()) != current) stale.push_back(it->path());
  }
  for (const auto& path : stale) {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
}

}  // namespace envkit::store
