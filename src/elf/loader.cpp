#include "envkit/elf/loader.hpp"

#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <cctype>

#include "envkit/core/text.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::elf {

namespace fs = std::filesystem;

namespace {

// ld.so drops trailing slashes from search directories (except "/").
fs::path directory(std::string_view text) {
  while (text.size() > 1 && text.back() == '/')
    text.remove_suffix(1);
  // An empty element is the current directory, to ld.so as to the shell.
  return text.empty() ? fs::path(".") : fs::path(text);
}

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// `reading` holds the files being read, so that an include loop ends.
void read_ld_so_conf_into(const fs::path& conf, std::vector<fs::path>& reading,
                          std::vector<fs::path>& dirs) {
  std::error_code ignored;
  const fs::path real = fs::weakly_canonical(conf, ignored);
  if (std::find(reading.begin(), reading.end(), real) != reading.end()) return;
  auto content = sys::read_file(conf);
  if (!content) return;
  reading.push_back(real);
  for (std::string_view line : text::split(*content, '\n')) {
    line = line.substr(0, line.find('#'));
    line = text::trim(line);
    if (line.empty()) continue;
    const bool is_include =
        line.starts_with("include") && line.size() > 7 && (line[7] == ' ' || line[7] == '\t');
    if (is_include) {
      // ldconfig: `include` takes whitespace-separated glob patterns.
      for (std::string_view pattern : text::split(line.substr(8), ' ')) {
        pattern = text::trim(pattern);
        if (pattern.empty()) continue;
        const fs::path full = fs::path(pattern).is_absolute()
                                  ? fs::path(pattern)
                                  : conf.parent_path() / fs::path(pattern);
        glob_t matches{};
        if (::glob(full.c_str(), 0, nullptr, &matches) == 0) {
          for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
            read_ld_so_conf_into(matches.gl_pathv[i], reading, dirs);
          }
        }
        ::globfree(&matches);
      }
      continue;
    }
    if (line.starts_with("hwcap") && line.size() > 5 && (line[5] == ' ' || line[5] == '\t')) {
      continue;  // obsolete hardware-capability lines name no directory
    }
    // "dir=libc5" is an old form that gives the directory a library type.
    const std::string_view dir = text::trim(line.substr(0, line.find('=')));
    if (!dir.empty()) dirs.push_back(directory(dir));
  }
  reading.pop_back();
}

// `origin` is null where $ORIGIN has no meaning we know (LD_LIBRARY_PATH: the program's).
void append_dirs(std::vector<SearchDir>& out, std::string_view list, std::string_view separators,
                 const fs::path* origin, SearchRule rule) {
  if (list.empty()) return;  // an empty DT_RPATH or LD_LIBRARY_PATH names nothing
  std::size_t start = 0;
  while (true) {
    const std::size_t end = list.find_first_of(separators, start);
    const std::string_view element =
        list.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out.push_back(
        {origin != nullptr ? directory(expand_origin(element, *origin)) : directory(element),
         rule});
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

std::string cache_key(const ElfIdentity& identity, std::string_view name,
                      const std::vector<SearchDir>& dirs) {
  std::string key = fmt::format("{}/{}/{}\n{}\n", static_cast<int>(identity.elf_class),
                                static_cast<int>(identity.byte_order), identity.machine, name);
  for (const SearchDir& dir : dirs) {
    key += fmt::format("{}:{}\n", static_cast<int>(dir.rule), dir.dir.string());
  }
  return key;
}

fs::path origin_of(const ElfFile& object) {
  std::error_code ignored;
  const fs::path absolute = fs::absolute(object.path, ignored);
  return (absolute.empty() ? object.path : absolute).parent_path();
}

}  // namespace

std::string_view to_string(SearchRule rule) {
  switch (rule) {
    case SearchRule::path:
      return "path";
    case SearchRule::rpath:
      return "DT_RPATH";
    case SearchRule::ld_library_path:
      return "LD_LIBRARY_PATH";
    case SearchRule::runpath:
      return "DT_RUNPATH";
    case SearchRule::system:
      return "system";
  }
  return "unknown";
}

std::vector<fs::path> split_ld_library_path(std::string_view value) {
  std::vector<SearchDir> dirs;
  append_dirs(dirs, value, ":;", nullptr, SearchRule::ld_library_path);
  std::vector<fs::path> out;
  for (SearchDir& dir : dirs)
    out.push_back(std::move(dir.dir));
  return out;
}

std::vector<fs::path> read_ld_so_conf(const fs::path& conf) {
  std::vector<fs::path> reading, dirs;
  read_ld_so_conf_into(conf, reading, dirs);
  return dirs;
}

std::vector<fs::path> default_system_dirs() {
  // glibc's SYSTEM_DIRS: Debian-style multiarch folders, Red Hat-style lib64, then lib.
#if defined(__x86_64__)
  const std::string triplet = "x86_64-linux-gnu";
#elif defined(__aarch64__)
  const std::string triplet = "aarch64-linux-gnu";
#else
  const std::string triplet;
#endif
  std::vector<fs::path> dirs;
  if (!triplet.empty()) dirs = {"/lib/" + triplet, "/usr/lib/" + triplet};
  if constexpr (sizeof(void*) == 8) dirs.insert(dirs.end(), {"/lib64", "/usr/lib64"});
  dirs.insert(dirs.end(), {"/lib", "/usr/lib"});
  return dirs;
}

SearchContext system_search_context(std::string_view ld_library_path, const fs::path& ld_so_conf) {
  SearchContext context;
  context.ld_library_path = split_ld_library_path(ld_library_path);
  std::vector<fs::path> all = read_ld_so_conf(ld_so_conf);
  for (fs::path& dir : default_system_dirs())
    all.push_back(std::move(dir));
  for (fs::path& dir : all) {
    if (std::find(context.system_dirs.begin(), context.system_dirs.end(), dir) ==
        context.system_dirs.end()) {
      context.system_dirs.push_back(std::move(dir));
    }
  }
  return context;
}

std::string expand_origin(std::string_view text, const fs::path& origin) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::string_view rest = text.substr(i);
    if (rest.starts_with("${ORIGIN}")) {
      out += origin.string();
      i += 8;
    } else if (rest.starts_with("$ORIGIN") && (rest.size() == 7 || !is_token_char(rest[7]))) {
      out += origin.string();
      i += 6;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::vector<SearchDir> search_dirs(const ElfFile& object, const SearchContext& context) {
  const fs::path origin = origin_of(object);
  std::vector<SearchDir> dirs;
  if (object.rpath && !object.runpath) {
    append_dirs(dirs, *object.rpath, ":", &origin, SearchRule::rpath);
  }
  for (const fs::path& dir : context.ld_library_path) {
    dirs.push_back({dir, SearchRule::ld_library_path});
  }
  if (object.runpath) append_dirs(dirs, *object.runpath, ":", &origin, SearchRule::runpath);
  if (!object.nodeflib) {
    for (const fs::path& dir : context.system_dirs)
      dirs.push_back({dir, SearchRule::system});
  }
  return dirs;
}

Resolution resolve_needed(const ElfFile& object, std::string_view name,
                          const SearchContext& context) {
  Resolver resolver(context);
  return resolver.resolve(object, name);
}

const Resolver::Candidate& Resolver::examine(const fs::path& path) {
  const auto known = candidates_.find(path.string());
  if (known != candidates_.end()) return known->second;
  Candidate candidate;
  std::error_code ignored;
  if (fs::exists(path, ignored)) {
    auto identity = read_elf_identity(path);
    if (identity) {
      candidate.exists = true;
      candidate.identity = *identity;
    } else if (identity.error().code() != ErrorCode::failed) {
      // Not an ELF file, or a cut one: ld.so reports it and stops searching.
      candidate.exists = true;
      const Error& error = identity.error();
      candidate.problem =
          error.causes().empty() ? error.message() : error.message() + ": " + error.causes()[0];
    }
    // A file that cannot be opened (permissions) is passed over, as ld.so does.
  }
  return candidates_.emplace(path.string(), std::move(candidate)).first->second;
}

Resolution Resolver::resolve(const ElfFile& object, std::string_view name) {
  std::vector<SearchDir> dirs;
  const bool is_path = name.find('/') != std::string_view::npos;
  if (is_path) {
    // ld.so opens such a name as it is, after expanding $ORIGIN in it.
    dirs.push_back({fs::path(expand_origin(name, origin_of(object))), SearchRule::path});
  } else {
    dirs = search_dirs(object, context_);
  }
  const std::string key = cache_key(object.identity, name, dirs);
  if (const auto known = resolutions_.find(key); known != resolutions_.end()) {
    ++cache_hits_;
    return known->second;
  }

  Resolution resolution;
  resolution.name = std::string(name);
  const ElfIdentity& wanted = object.identity;
  for (const SearchDir& dir : dirs) {
    const fs::path path = is_path ? dir.dir : dir.dir / std::string(name);
    const Candidate& candidate = examine(path);
    if (!candidate.exists) continue;
    const auto stop = [&](std::string problem) {
      resolution.path = path;
      resolution.rule = dir.rule;
      if (!problem.empty()) resolution.problem = std::move(problem);
    };
    if (!candidate.identity) {
      stop(candidate.problem);
      break;
    }
    const ElfIdentity& found = *candidate.identity;
    // In ld.so's order (open_verify): another class is skipped; the right class
    // in the wrong byte order is an error; another machine is skipped.
    if (found.elf_class != wanted.elf_class ||
        (found.byte_order == wanted.byte_order && found.machine != wanted.machine)) {
      resolution.skipped.push_back(
          {path, fmt::format("{}, not {}", describe(found), describe(wanted))});
      continue;
    }
    stop(found.byte_order == wanted.byte_order
             ? std::string()
             : fmt::format("{} is {}, not {}", path.string(), describe(found), describe(wanted)));
    break;
  }
  return resolutions_.emplace(key, std::move(resolution)).first->second;
}

}  // namespace envkit::elf
