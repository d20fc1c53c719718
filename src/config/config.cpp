#include "envkit/config/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <span>

#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"
#include "yaml_source.hpp"

namespace envkit::config {

namespace {

namespace fs = std::filesystem;

// ------------------------------------------------------------ values

// A variable's value when it is set and not empty.
std::optional<std::string> non_empty(const Lookup& lookup, const env::Variable& variable) {
  auto value = lookup(variable);
  if (value && value->empty()) return std::nullopt;
  return value;
}

// How relative paths and `~/` in a value are resolved.
struct PathBase {
  std::optional<fs::path> dir;  // the config file's folder; nullopt: as given
  std::optional<std::string> home;
};

bool is_url(std::string_view text) {
  const auto scheme_end = text.find("://");
  return scheme_end != std::string_view::npos && scheme_end > 0 && scheme_end + 3 < text.size() &&
         text.find_first_of(" \t") == std::string_view::npos;
}

std::optional<int> whole_number(std::string_view text) {
  int value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

static_assert(kMaxJobs == 64, "the message for `jobs` says 64");
bool is_jobs(std::string_view text) {
  const auto value = whole_number(text);
  return value && *value >= 1 && *value <= kMaxJobs;
}

bool is_seconds(std::string_view text) {
  const auto value = whole_number(text);
  return value && *value >= 0;
}

fs::path resolve_path(std::string_view text, const PathBase& base) {
  if (base.home && (text == "~" || text.starts_with("~/")))
    return fs::path(*base.home) / std::string(text.substr(std::min<std::size_t>(2, text.size())));
  fs::path path{std::string(text)};
  if (path.is_relative() && base.dir) return (*base.dir / path).lexically_normal();
  return path;
}

// ------------------------------------------------------------ the table

// One setting: what a value must look like, and where it goes.
struct Field {
  const Key* key;
  bool list = false;
  // What a value must be, for messages ("a whole number from 1 to 64");
  // empty when `choices` says it.
  std::string_view expected;
  std::span<const std::string_view> choices;
  bool (*valid)(std::string_view item) = nullptr;
  void (*assign)(Settings& settings, std::vector<std::string> items, std::string source,
                 const PathBase& base) = nullptr;
};

template <class T>
void put(Sourced<T>& setting, T value, std::string source) {
  setting = {.value = std::move(value), .source = std::move(source)};
}

const Field kFields[] = {
    {.key = &kMirrors,
     .list = true,
     .expected = "a URL such as `http://mirror.lan/envkit`",
     .valid = is_url,
     .assign = [](Settings& s, std::vector<std::string> items, std::string source,
                  const PathBase&) { put(s.mirrors, std::move(items), std::move(source)); }},
    {.key = &kJobs,
     .expected = "a whole number from 1 to 64",
     .valid = is_jobs,
     .assign = [](Settings& s, std::vector<std::string> items, std::string source,
                  const PathBase&) { put(s.jobs, *whole_number(items[0]), std::move(source)); }},
    {.key = &kCacheDir,
     .expected = "a folder",
     .valid = [](std::string_view item) { return !item.empty(); },
     .assign =
         [](Settings& s, std::vector<std::string> items, std::string source, const PathBase& base) {
           put(s.cache_dir, std::optional(resolve_path(items[0], base)), std::move(source));
         }},
    {.key = &kIndexUrl,
     .expected = "a URL such as `https://pypi.org/simple`",
     .valid = is_url,
     .assign =
         [](Settings& s, std::vector<std::string> items, std::string source, const PathBase&) {
           put(s.index_url, std::optional(items[0]), std::move(source));
         }},
    {.key = &kLinkMode,
     .choices = kLinkModes,
     .assign = [](Settings& s, std::vector<std::string> items, std::string source,
                  const PathBase&) { put(s.link_mode, items[0], std::move(source)); }},
    {.key = &kPackaging,
     .choices = kPackagings,
     .assign = [](Settings& s, std::vector<std::string> items, std::string source,
                  const PathBase&) { put(s.packaging, items[0], std::move(source)); }},
    {.key = &kCompileBytecode,
     .choices = kBooleans,
     .assign =
         [](Settings& s, std::vector<std::string> items, std::string source, const PathBase&) {
           put(s.compile_bytecode, items[0] == "true" || items[0] == "1", std::move(source));
         }},
    {.key = &kIndexTtl,
     .expected = "a whole number of seconds (0: read the index on every lock)",
     .valid = is_seconds,
     .assign =
         [](Settings& s, std::vector<std::string> items, std::string source, const PathBase&) {
           put(s.index_ttl, *whole_number(items[0]), std::move(source));
         }},
};

bool accepts(const Field& field, std::string_view item) {
  if (!field.choices.empty())
    return std::find(field.choices.begin(), field.choices.end(), item) != field.choices.end();
  return field.valid(item);
}

// "`archive` or `wheel`".
std::string expected_of(const Field& field) {
  if (field.choices.empty()) return std::string(field.expected);
  std::string out;
  for (std::size_t i = 0; i < field.choices.size(); ++i) {
    if (i > 0) out += i + 1 == field.choices.size() ? " or " : ", ";
    out += text::quoted(field.choices[i]);
  }
  return out;
}

// "`jobs`: expected a whole number from 1 to 64, found `many`", with a
// did-you-mean among the choices.
Error bad_value(const Field& field, std::string_view who, std::string_view found,
                std::string_view item) {
  Error error =
      Error::input(fmt::format("{}: expected {}, found {}", who, expected_of(field), found));
  if (auto guess = text::did_you_mean(item, field.choices))
    error.hint(fmt::format("did you mean {}?", text::quoted(*guess)));
  return error;
}

// ------------------------------------------------------------ files

std::vector<std::string_view> key_names() {
  std::vector<std::string_view> names;
  for (const auto& key : kKeys)
    names.push_back(key.name);
  return names;
}

Error unknown_key(const yaml::Source& source, const yaml::Entry& entry) {
  const auto names = key_names();
  Error error = Error::input(fmt::format("unknown key {}", text::quoted(entry.key)));
  error.at(source.at(entry.key_node));
  if (auto guess = text::did_you_mean(entry.key, names))
    error.hint(fmt::format("did you mean {}?", text::quoted(*guess)));
  return error.hint(fmt::format("the keys are {}", yaml::quoted_list(names)));
}

// The items of a value: a scalar is one, a list's scalars are each one, and
// an empty list setting (`mirrors:` or `mirrors: []`) has none.
Result<std::vector<std::string>> items_of(const Field& field, const yaml::Source& source,
                                          const yaml::Entry& entry) {
  const auto who = text::quoted(entry.key);
  const auto wrong = [&](const yaml::Node& node, const yaml::Node& owner) {
    const auto& at = node.is_null() ? owner : node;
    auto error =
        bad_value(field, who, yaml::describe(node), node.is_scalar() ? node.text() : std::string());
    return error.at(source.at(at));
  };
  const yaml::Node& value = entry.value;
  std::vector<std::string> items;
  if (field.list && (value.is_null() || value.is_sequence())) {
    for (const auto& item : value) {
      if (!item.is_scalar() || !accepts(field, item.text())) return wrong(item, value);
      items.push_back(item.text());
    }
    return items;
  }
  if (!value.is_scalar() || !accepts(field, value.text())) return wrong(value, entry.key_node);
  items.push_back(value.text());
  return items;
}

const Field* field_named(std::string_view name) {
  const auto* it = std::find_if(std::begin(kFields), std::end(kFields),
                                [&](const Field& field) { return field.key->name == name; });
  return it == std::end(kFields) ? nullptr : it;
}

// ------------------------------------------------------------ environment

// ENVKIT_MIRRORS: URLs separated by spaces, commas or both.
std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  std::string current;
  for (const char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n') {
      if (!current.empty()) items.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) items.push_back(std::move(current));
  return items;
}

Result<void> apply_variable(Settings& settings, const Field& field, const Lookup& lookup) {
  const auto& variable = *field.key->variable;
  const auto value = lookup(variable);
  // An empty variable is unset, but an empty list is a value: no mirrors.
  if (!value || (value->empty() && !field.list)) return {};
  auto items = field.list ? split_list(*value) : std::vector<std::string>{*value};
  for (const auto& item : items) {
    if (!accepts(field, item)) {
      return bad_value(field, variable.name, text::quoted(item), item)
          .hint(fmt::format("set {} to {}, or unset it", variable.name, expected_of(field)));
    }
  }
  field.assign(settings, std::move(items), fmt::format("env {}", variable.name),
               {.home = non_empty(lookup, env::kHome)});
  return {};
}

}  // namespace

Files Files::of(const fs::path& project_dir, const Lookup& lookup) {
  Files files{.project = project_dir / ".envkit" / kFileName};
  if (auto xdg = non_empty(lookup, env::kXdgConfigHome)) {
    files.user = fs::path(*xdg) / "envkit" / kFileName;
  } else if (auto home = non_empty(lookup, env::kHome)) {
    files.user = fs::path(*home) / ".config" / "envkit" / kFileName;
  }
  return files;
}

Result<void> apply_file(Settings& settings, std::string_view text, const fs::path& file,
                        const Lookup& lookup) {
  const yaml::Source source(text, file.string());
  auto document = yaml::load_document(source);
  if (!document) return std::move(document).error();
  if (document->is_null()) return {};  // empty, or only comments
  if (!document->is_mapping()) {
    return Error::input(fmt::format("expected a mapping of settings such as `jobs: 8`, found {}",
                                    yaml::describe(*document)))
        .at(source.at(*document));
  }
  auto entries = yaml::entries_of(*document, source, "");
  if (!entries) return std::move(entries).error();
  const PathBase base{.dir = file.parent_path(), .home = non_empty(lookup, env::kHome)};
  for (const auto& entry : *entries) {
    const Field* field = field_named(entry.key);
    if (!field) return unknown_key(source, entry);
    auto items = items_of(*field, source, entry);
    if (!items) return std::move(items).error();
    const auto line = source.at(entry.key_node).line;
    field->assign(settings, *std::move(items), fmt::format("{}:{}", file.string(), line), base);
  }
  return {};
}

Result<void> apply_environment(Settings& settings, const Lookup& lookup) {
  for (const auto& field : kFields) {
    if (auto applied = apply_variable(settings, field, lookup); !applied) return applied;
  }
  return {};
}

Result<void> apply_flag(Settings& settings, const Key& key, std::string_view flag,
                        std::vector<std::string> items) {
  const Field* field = field_named(key.name);
  if (!field) return Error::internal(fmt::format("no setting {}", key.name));
  for (const auto& item : items) {
    if (!accepts(*field, item))
      return bad_value(*field, text::quoted(flag), text::quoted(item), item);
  }
  field->assign(settings, std::move(items), std::string(kFlagSource), PathBase{});
  return {};
}

Result<Settings> load(const Files& files, const Lookup& lookup) {
  Settings settings;
  for (const auto& file : {files.user, std::optional(files.project)}) {
    std::error_code error;
    if (!file || !fs::exists(*file, error)) continue;
    auto text = yaml::read_file(*file);
    if (!text) return std::move(text).error();
    if (auto applied = apply_file(settings, *text, *file, lookup); !applied)
      return std::move(applied).error();
  }
  if (auto applied = apply_environment(settings, lookup); !applied)
    return std::move(applied).error();
  return settings;
}

}  // namespace envkit::config
