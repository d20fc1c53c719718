#include "envkit/recipes/recipe_cache.hpp"

#include <fmt/format.h>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::recipes {

namespace fs = std::filesystem;

namespace {

// A field added to one of these types must be encoded below (and kRecipeCacheFormat
// bumped); their sizes on the one ABI CI builds with catch the addition.
#if defined(__GLIBCXX__) && defined(__x86_64__)
static_assert(sizeof(Recipe) == 128, "Recipe changed: encode the new field, bump the format");
static_assert(sizeof(RecipeVersion) == 232, "RecipeVersion changed: encode it, bump the format");
static_assert(sizeof(Build) == 472, "Build changed: encode the new field, bump the format");
static_assert(sizeof(Artifact) == 280, "Artifact changed: encode the new field, bump the format");
static_assert(sizeof(RunfilePatch) == 80, "RunfilePatch changed: encode it, bump the format");
static_assert(sizeof(Component) == 64, "Component changed: encode it, bump the format");
#endif

constexpr std::string_view kMagic = "envkit-recipe\n";
constexpr std::size_t kDigestSize = 64;  // the payload's sha256, hex

class Writer {
 public:
  void u64(std::uint64_t value) {
    for (int i = 0; i < 8; ++i)
      out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  void u8(std::uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void text(std::string_view value) {
    u64(value.size());
    out_.append(value);
  }
  void texts(const std::vector<std::string>& values) {
    u64(values.size());
    for (const auto& value : values)
      text(value);
  }
  void optional_u64(const std::optional<std::uint64_t>& value) {
    u8(value ? 1 : 0);
    if (value) u64(*value);
  }
  void platforms(const std::vector<specs::Platform>& values) {
    u64(values.size());
    for (const auto value : values)
      u8(static_cast<std::uint8_t>(value));
  }
  void platform_versions(const std::map<specs::Platform, specs::Version>& values) {
    u64(values.size());
    for (const auto& [platform, version] : values) {
      u8(static_cast<std::uint8_t>(platform));
      text(version.original());
    }
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what Writer wrote; any overrun or value out of range makes it fail for good.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] bool at_end() const { return ok_ && in_.empty(); }
  void fail() { ok_ = false; }

  std::uint64_t u64() {
    if (!take(8)) return 0;
    std::uint64_t value = 0;
    for (int i = 0; i < 8; ++i)
      value |= std::uint64_t{static_cast<unsigned char>(taken_[i])} << (8 * i);
    return value;
  }
  std::uint8_t u8() { return take(1) ? static_cast<std::uint8_t>(taken_[0]) : 0; }
  std::string text() {
    const auto size = u64();
    return take(size) ? std::string(taken_) : std::string();
  }
  // A count of items, each at least `min_bytes` long: a corrupt count fails
  // here instead of reserving memory for it.
  std::size_t count(std::size_t min_bytes = 1) {
    const auto n = u64();
    if (n > in_.size() / min_bytes) fail();
    return ok_ ? static_cast<std::size_t>(n) : 0;
  }
  std::vector<std::string> texts() {
    std::vector<std::string> values(count(8));
    for (auto& value : values)
      value = text();
    return values;
  }
  std::optional<std::uint64_t> optional_u64() {
    if (const auto present = u8(); present > 1)
      fail();
    else if (present == 1)
      return u64();
    return std::nullopt;
  }
  template <class Enum>
  Enum enumerator(Enum last) {
    const auto value = u8();
    if (value > static_cast<std::uint8_t>(last)) fail();
    return static_cast<Enum>(value);
  }
  specs::Platform platform() { return enumerator(specs::Platform::windows_x86_64); }
  std::vector<specs::Platform> platforms() {
    std::vector<specs::Platform> values(count());
    for (auto& value : values)
      value = platform();
    return values;
  }
  specs::Version version() {
    auto parsed = specs::Version::parse(text());
    if (!parsed) {
      fail();
      return specs::Version::from_release({0});
    }
    return *std::move(parsed);
  }
  std::map<specs::Platform, specs::Version> platform_versions() {
    std::map<specs::Platform, specs::Version> values;
    for (auto n = count(9); n > 0 && ok_; --n) {
      const auto platform = this->platform();
      values.insert_or_assign(platform, version());
    }
    return values;
  }

 private:
  bool take(std::uint64_t size) {
    if (!ok_ || size > in_.size()) {
      ok_ = false;
      return false;
    }
    taken_ = in_.substr(0, size);
    in_.remove_prefix(size);
    return true;
  }
  std::string_view in_;
  std::string_view taken_;
  bool ok_ = true;
};

void write_artifact(Writer& out, const Artifact& a) {
  out.u8(static_cast<std::uint8_t>(a.platform));
  out.text(a.component);
  out.u8(static_cast<std::uint8_t>(a.kind));
  out.text(a.url);
  out.text(a.sha256);
  out.optional_u64(a.size);
  out.text(a.format);
  out.u8(static_cast<std::uint8_t>(a.layout));
  out.text(a.wheel_root);
  out.u8(a.build_system ? static_cast<std::uint8_t>(*a.build_system) + 1 : 0);
  out.texts(a.components);
  out.u64(a.patches.size());
  for (const auto& patch : a.patches) {
    out.text(patch.url);
    out.text(patch.sha256);
    out.optional_u64(patch.size);
  }
  out.texts(a.also_at);
}

Artifact read_artifact(Reader& in) {
  Artifact a;
  a.platform = in.platform();
  a.component = in.text();
  a.kind = in.enumerator(ArtifactKind::source);
  a.url = in.text();
  a.sha256 = in.text();
  a.size = in.optional_u64();
  a.format = in.text();
  a.layout = in.enumerator(Layout::none);
  a.wheel_root = in.text();
  if (const auto build_system = in.u8(); build_system > 0) {
    if (build_system - 1 > static_cast<std::uint8_t>(BuildSystem::cpython)) in.fail();
    a.build_system = static_cast<BuildSystem>(build_system - 1);
  }
  a.components = in.texts();
  a.patches.resize(in.count(25));
  for (auto& patch : a.patches) {
    patch.url = in.text();
    patch.sha256 = in.text();
    patch.size = in.optional_u64();
  }
  a.also_at = in.texts();
  return a;
}

void write_build(Writer& out, const Build& build) {
  out.text(build.id);
  out.u64(build.requires_.size());
  for (const auto& [name, spec] : build.requires_) {
    out.text(name);
    out.text(spec.original());
  }
  out.u64(build.requires_only_on.size());
  for (const auto& [name, platforms] : build.requires_only_on) {
    out.text(name);
    out.platforms(platforms);
  }
  out.platform_versions(build.min_driver);
  out.platform_versions(build.min_driver_compat);
  out.platform_versions(build.min_glibc);
  out.u64(build.tested.size());
  for (const auto& [name, version] : build.tested) {
    out.text(name);
    out.text(version);
  }
  out.u64(build.cuda_arch.size());
  for (const auto& cc : build.cuda_arch) {
    out.u64(cc.major);
    out.u64(cc.minor);
  }
  out.u64(build.cuda_ptx.size());
  for (const auto& cc : build.cuda_ptx) {
    out.u64(cc.major);
    out.u64(cc.minor);
  }
  out.platforms(build.platforms);
  out.u64(build.artifacts.size());
  for (const auto& artifact : build.artifacts)
    write_artifact(out, artifact);
  out.platforms(build.runfile_only);
  out.text(build.wheel_index);
}

Build read_build(Reader& in) {
  Build build;
  build.id = in.text();
  for (auto n = in.count(16); n > 0 && in.ok(); --n) {
    auto name = in.text();
    auto spec = specs::VersionSpec::parse(in.text());
    if (!spec) {
      in.fail();
      break;
    }
    build.requires_.insert_or_assign(std::move(name), *std::move(spec));
  }
  for (auto n = in.count(16); n > 0 && in.ok(); --n) {
    auto name = in.text();
    build.requires_only_on.insert_or_assign(std::move(name), in.platforms());
  }
  build.min_driver = in.platform_versions();
  build.min_driver_compat = in.platform_versions();
  build.min_glibc = in.platform_versions();
  for (auto n = in.count(16); n > 0 && in.ok(); --n) {
    auto name = in.text();
    build.tested.insert_or_assign(std::move(name), in.text());
  }
  build.cuda_arch.resize(in.count(16));
  for (auto& cc : build.cuda_arch) {
    const auto major = in.u64();
    const auto minor = in.u64();
    if (major > 0xffffffffU || minor > 0xffffffffU) in.fail();
    cc = {.major = static_cast<unsigned>(major), .minor = static_cast<unsigned>(minor)};
  }
  build.cuda_ptx.resize(in.count(16));
  for (auto& cc : build.cuda_ptx) {
    const auto major = in.u64();
    const auto minor = in.u64();
    if (major > 0xffffffffU || minor > 0xffffffffU) in.fail();
    cc = {.major = static_cast<unsigned>(major), .minor = static_cast<unsigned>(minor)};
  }
  build.platforms = in.platforms();
  build.artifacts.resize(in.count(64));
  for (auto& artifact : build.artifacts)
    artifact = read_artifact(in);
  build.runfile_only = in.platforms();
  build.wheel_index = in.text();
  return build;
}

std::string encode_payload(const Recipe& recipe) {
  Writer out;
  out.text(recipe.name);
  out.texts(recipe.sources);
  out.texts(recipe.default_components);
  out.texts(recipe.replaces);
  out.u64(recipe.versions.size());
  for (const auto& version : recipe.versions) {
    out.text(version.version.original());
    out.u8(version.release_date ? 1 : 0);
    if (version.release_date) out.text(*version.release_date);
    out.u64(version.components.size());
    for (const auto& component : version.components) {
      out.text(component.name);
      out.text(component.version);
    }
    out.u64(version.builds.size());
    for (const auto& build : version.builds)
      write_build(out, build);
  }
  return out.take();
}

std::optional<Recipe> decode_payload(std::string_view payload) {
  Reader in(payload);
  Recipe recipe;
  recipe.name = in.text();
  recipe.sources = in.texts();
  recipe.default_components = in.texts();
  recipe.replaces = in.texts();
  for (auto n = in.count(32); n > 0 && in.ok(); --n) {
    RecipeVersion version{.version = in.version()};
    if (const auto dated = in.u8(); dated > 1)
      in.fail();
    else if (dated == 1)
      version.release_date = in.text();
    version.components.resize(in.count(16));
    for (auto& component : version.components) {
      component.name = in.text();
      component.version = in.text();
    }
    version.builds.resize(in.count(64));
    for (auto& build : version.builds)
      build = read_build(in);
    recipe.versions.push_back(std::move(version));
  }
  if (!in.at_end()) return std::nullopt;
  return recipe;
}

}  // namespace

std::string encode_recipe(const Recipe& recipe) {
  const auto payload = encode_payload(recipe);
  std::string out(kMagic);
  Writer format;
  format.u64(kRecipeCacheFormat);
  out += format.take();
  out += core::sha256_hex(payload);
  out += payload;
  return out;
}

std::optional<Recipe> decode_recipe(std::string_view bytes) {
  if (!bytes.starts_with(kMagic)) return std::nullopt;
  bytes.remove_prefix(kMagic.size());
  Reader header(bytes);
  if (header.u64() != kRecipeCacheFormat || !header.ok()) return std::nullopt;
  bytes.remove_prefix(8);
  if (bytes.size() < kDigestSize) return std::nullopt;
  const auto digest = bytes.substr(0, kDigestSize);
  const auto payload = bytes.substr(kDigestSize);
  if (core::sha256_hex(payload) != digest) return std::nullopt;
  return decode_payload(payload);
}

RecipeCache::RecipeCache(fs::path cache_root)
    : dir_(std::move(cache_root) / "recipes" / fmt::format("v{}", kRecipeCacheFormat)) {}

fs::path RecipeCache::file_of(std::string_view key) const {
  return dir_ / (std::string(key) + ".bin");
}

std::optional<Recipe> RecipeCache::load(std::string_view key) const {
  auto bytes = sys::read_file(file_of(key));
  if (!bytes) return std::nullopt;
  return decode_recipe(*bytes);
}

void RecipeCache::store(std::string_view key, const Recipe& recipe) const {
  const auto bytes = encode_recipe(recipe);
  // What would not read back as itself is not kept (a spec or version whose
  // text parses differently): the files are parsed again next time instead.
  const auto decoded = decode_recipe(bytes);
  if (!decoded || encode_recipe(*decoded) != bytes) return;
  std::error_code ignored;
  fs::create_directories(dir_, ignored);
  // Not synced: an entry torn by a crash fails its checksum and is parsed again.
  (void)sys::write_file_atomic(file_of(key), bytes, sys::Durability::unsynced);
}

}  // namespace envkit::recipes
