#include "support/python_index.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/net/transport.hpp"
#include "support/record_hash.hpp"

namespace envkit::test {

namespace fs = std::filesystem;

namespace {

// PEP 503 normalization: lowercase, runs of `-`, `_`, `.` as one `-`.
std::string normalized(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
  }
  return out;
}

// The distribution as a wheel file name writes it: normalized, `-` as `_`.
std::string escaped(std::string_view name) {
  std::string out = normalized(name);
  for (char& c : out) {
    if (c == '-') c = '_';
  }
  return out;
}

std::uint32_t crc32(std::string_view data) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1U) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFU;
  for (char ch : data)
    crc = table[(crc ^ static_cast<std::uint8_t>(ch)) & 0xFFU] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFU;
}

void put16(std::string& out, std::uint32_t value) {
  out += static_cast<char>(value & 0xFFU);
  out += static_cast<char>((value >> 8) & 0xFFU);
}

void put32(std::string& out, std::uint32_t value) {
  put16(out, value & 0xFFFFU);
  put16(out, value >> 16);
}

std::uint32_t u32(std::size_t n) {
  if (n > 0xFFFFFFFFU) throw std::runtime_error("make_zip: too large for a zip without zip64");
  return static_cast<std::uint32_t>(n);
}

// `py2.py3-none-any` -> the Tag lines of a WHEEL file, one per combination.
std::vector<std::string> expanded_tags(std::string_view tag) {
  const auto parts = text::split(tag, '-');
  if (parts.size() != 3) throw std::invalid_argument("FakeWheel::tag: " + std::string(tag));
  std::vector<std::string> out;
  for (auto python : text::split(parts[0], '.')) {
    for (auto abi : text::split(parts[1], '.')) {
      for (auto platform : text::split(parts[2], '.'))
        out.push_back(std::string(python) + "-" + std::string(abi) + "-" + std::string(platform));
    }
  }
  return out;
}

// The metadata file of a distribution: a wheel's METADATA, an sdist's PKG-INFO
// (2.2: its fields are static, so a resolver need not build it, PEP 643).
std::string metadata_of(const FakeWheel& wheel, std::string_view metadata_version) {
  std::string out = "Metadata-Version: " + std::string(metadata_version) + "\nName: " + wheel.name +
                    "\nVersion: " + wheel.version + "\n";
  if (!wheel.requires_python.empty()) out += "Requires-Python: " + wheel.requires_python + "\n";
  for (const auto& extra : wheel.provides_extra)
    out += "Provides-Extra: " + extra + "\n";
  for (const auto& line : wheel.requires_dist)
    out += "Requires-Dist: " + line + "\n";
  return out;
}

// A TOML basic string: `"..."` with `"` and `\` escaped.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string wheel_bytes(const FakeWheel& wheel) {
  const std::string dist_info = escaped(wheel.name) + "-" + wheel.version + ".dist-info";
  std::vector<std::pair<std::string, std::string>> entries = wheel.files;
  if (entries.empty()) {
    entries.emplace_back(escaped(wheel.name) + "/__init__.py",
                         "__version__ = \"" + wheel.version + "\"\n");
  }
  const bool pure = wheel.tag.ends_with("-none-any");
  std::string wheel_file = std::string("Wheel-Version: 1.0\nGenerator: envkit-tests\n") +
                           "Root-Is-Purelib: " + (pure ? "true" : "false") + "\n";
  for (const auto& tag : expanded_tags(wheel.tag))
    wheel_file += "Tag: " + tag + "\n";
  entries.emplace_back(dist_info + "/METADATA", metadata_of(wheel, "2.1"));
  entries.emplace_back(dist_info + "/WHEEL", wheel_file);
  std::string record;
  for (const auto& [path, content] : entries)
    record += record_row(path, content);
  record += dist_info + "/RECORD,,\n";
  entries.emplace_back(dist_info + "/RECORD", record);
  return make_zip(entries);
}

// `<top>/PKG-INFO`, a pyproject.toml stating the same metadata, a setup.py and
// the package, in the folder the file is named after.
std::string sdist_bytes(const FakeWheel& sdist, std::string_view filename) {
  constexpr std::string_view kSuffix = ".tar.gz";
  if (!filename.ends_with(kSuffix))
    throw std::invalid_argument("an sdist is made as .tar.gz: " + std::string(filename));
  const std::string top(filename.substr(0, filename.size() - kSuffix.size()));
  std::string pyproject =
      "[build-system]\nrequires = [\"setuptools>=40.8.0\"]\n"
      "build-backend = \"setuptools.build_meta\"\n\n[project]\nname = " +
      toml_string(sdist.name) + "\nversion = " + toml_string(sdist.version) + "\n";
  if (!sdist.requires_python.empty())
    pyproject += "requires-python = " + toml_string(sdist.requires_python) + "\n";
  pyproject += "dependencies = [";
  for (const auto& line : sdist.requires_dist)
    pyproject += (&line == sdist.requires_dist.data() ? "" : ", ") + toml_string(line);
  pyproject += "]\n";
  return make_tar_gz({{top + "/PKG-INFO", metadata_of(sdist, "2.2")},
                      {top + "/pyproject.toml", pyproject},
                      {top + "/setup.py", "from setuptools import setup\n\nsetup()\n"},
                      {top + "/" + escaped(sdist.name) + "/__init__.py",
                       "__version__ = \"" + sdist.version + "\"\n"}});
}

// `+`, spaces and other reserved characters of a relative URL path as %XX.
std::string href_escaped(std::string_view path) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  for (char c : path) {
    const auto byte = static_cast<std::uint8_t>(c);
    if (std::isalnum(byte) != 0 || std::string_view("-._~/").find(c) != std::string_view::npos) {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4U];
      out += kHex[byte & 0xFU];
    }
  }
  return out;
}

std::string html_escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void write_binary(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  constexpr std::uint32_t kDosDate = (0U << 9) | (1U << 5) | 1U;  // 1980-01-01
  constexpr std::uint32_t kUtf8Names = 1U << 11;
  std::string out, directory;
  for (const auto& [name, content] : entries) {
    const std::uint32_t offset = u32(out.size());
    const std::uint32_t crc = crc32(content);
    put32(out, 0x04034b50U);  // local file header
    put16(out, 20);           // version needed: 2.0
    put16(out, kUtf8Names);
    put16(out, 0);  // stored
    put16(out, 0);  // time 00:00
    put16(out, kDosDate);
    put32(out, crc);
    put32(out, u32(content.size()));
    put32(out, u32(content.size()));
    put16(out, u32(name.size()));
    put16(out, 0);  // no extra field
    out += name;
    out += content;

    put32(directory, 0x02014b50U);  // central directory header
    put16(directory, 0x0314);       // made by: Unix, 2.0 (external attributes hold the mode)
    put16(directory, 20);
    put16(directory, kUtf8Names);
    put16(directory, 0);
    put16(directory, 0);
    put16(directory, kDosDate);
    put32(directory, crc);
    put32(directory, u32(content.size()));
    put32(directory, u32(content.size()));
    put16(directory, u32(name.size()));
    put16(directory, 0);  // extra
    put16(directory, 0);  // comment
    put16(directory, 0);  // disk
    put16(directory, 0);  // internal attributes
    put32(directory, (0100644U) << 16);
    put32(directory, offset);
    directory += name;
  }
  const std::uint32_t directory_offset = u32(out.size());
  out += directory;
  put32(out, 0x06054b50U);  // end of central directory
  put16(out, 0);
  put16(out, 0);
  put16(out, u32(entries.size()));
  put16(out, u32(entries.size()));
  put32(out, u32(directory.size()));
  put32(out, directory_offset);
  put16(out, 0);
  return out;
}

std::string make_tar_gz(const std::vector<std::pair<std::string, std::string>>& entries) {
  constexpr std::size_t kBlock = 512;
  const auto octal = [](std::string& header, std::size_t at, std::size_t width, std::size_t value) {
    std::string digits(width - 1, '0');
    for (std::size_t i = width - 1; i-- > 0; value >>= 3U)
      digits[i] = static_cast<char>('0' + (value & 7U));
    header.replace(at, width - 1, digits);
  };
  std::string tar;
  for (const auto& [name, content] : entries) {
    if (name.size() > 100) throw std::invalid_argument("make_tar_gz: name too long: " + name);
    std::string header(kBlock, '\0');
    header.replace(0, name.size(), name);
    octal(header, 100, 8, 0644);  // mode
    octal(header, 108, 8, 0);     // uid
    octal(header, 116, 8, 0);     // gid
    octal(header, 124, 12, content.size());
    octal(header, 136, 12, 0);        // mtime
    header[156] = '0';                // a regular file
    header.replace(257, 5, "ustar");  // magic "ustar\0", then version "00"
    header.replace(263, 2, "00");
    header.replace(148, 8, 8, ' ');  // the checksum counts its own field as spaces
    std::size_t sum = 0;
    for (char c : header)
      sum += static_cast<std::uint8_t>(c);
    octal(header, 148, 7, sum);
    tar += header;
    tar += content;
    tar.append((kBlock - content.size() % kBlock) % kBlock, '\0');
  }
  tar.append(2 * kBlock, '\0');

  // gzip (RFC 1952) around deflate's stored blocks (RFC 1951, BTYPE 00).
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
  constexpr std::size_t kStored = 65535;
  for (std::size_t at = 0; at < tar.size(); at += kStored) {
    const std::size_t length = std::min(kStored, tar.size() - at);
    out += static_cast<char>(at + length == tar.size() ? 1 : 0);
    put16(out, u32(length));
    put16(out, u32(~length & 0xFFFFU));
    out.append(tar, at, length);
  }
  put32(out, crc32(tar));
  put32(out, u32(tar.size()));
  return out;
}

PythonIndex::PythonIndex(fs::path root, std::string pages)
    : root_(std::move(root)), pages_(std::move(pages)) {
  fs::create_directories(root_ / pages_);
  write_pages();
}

std::string PythonIndex::filename_of(const FakeWheel& wheel) {
  if (wheel.sdist) return escaped(wheel.name) + "-" + wheel.version + ".tar.gz";
  return escaped(wheel.name) + "-" + wheel.version + "-" + wheel.tag + ".whl";
}

std::string PythonIndex::sha256_of(const fs::path& file) {
  auto digest = core::sha256_file(file);
  if (!digest) throw std::runtime_error("cannot read " + file.string());
  return *digest;
}

fs::path PythonIndex::add(const FakeWheel& wheel, const fs::path& path) {
  const fs::path relative = path.empty() ? fs::path("files") / filename_of(wheel) : path;
  const std::string bytes =
      wheel.sdist ? sdist_bytes(wheel, relative.filename().string()) : wheel_bytes(wheel);
  write_binary(root_ / relative, bytes);
  Link link{.path = relative,
            .sha256 = core::sha256_hex(bytes),
            .requires_python = wheel.requires_python,
            .metadata_sha256 = {},
            .upload_time = wheel.upload_time};
  if (!wheel.sdist) {
    const std::string metadata = metadata_of(wheel, "2.1");
    write_binary(root_ / (relative.string() + ".metadata"), metadata);
    link.metadata_sha256 = core::sha256_hex(metadata);
  }
  auto& links = links_[normalized(wheel.name)];
  std::erase_if(links, [&](const Link& listed) { return listed.path == relative; });
  links.push_back(std::move(link));
  write_pages();
  return root_ / relative;
}

fs::path PythonIndex::add_file(const fs::path& wheel, const std::string& upload_time) {
  const fs::path relative = fs::path("files") / wheel.filename();
  fs::create_directories(root_ / "files");
  fs::copy_file(wheel, root_ / relative, fs::copy_options::overwrite_existing);
  const auto name = wheel.filename().string();
  auto& links = links_[normalized(name.substr(0, name.find('-')))];
  std::erase_if(links, [&](const Link& listed) { return listed.path == relative; });
  links.push_back({.path = relative,
                   .sha256 = sha256_of(root_ / relative),
                   .requires_python = {},
                   .metadata_sha256 = {},
                   .upload_time = upload_time});
  write_pages();
  return root_ / relative;
}

// A project page as PEP 691 JSON (api-version 1.1: PEP 700's `upload-time` and `versions`).
std::string PythonIndex::json_page(const std::string& project, const std::vector<Link>& links,
                                   const fs::path& page_dir) const {
  nlohmann::json files = nlohmann::json::array();
  std::vector<std::string> versions;
  for (const auto& link : links) {
    nlohmann::json file = {{"filename", link.path.filename().string()},
                           {"url", href_escaped(link.path.lexically_relative(page_dir).string())},
                           {"hashes", {{"sha256", link.sha256}}},
                           {"size", fs::file_size(root_ / link.path)}};
    if (!link.requires_python.empty()) file["requires-python"] = link.requires_python;
    if (!link.metadata_sha256.empty()) file["core-metadata"] = {{"sha256", link.metadata_sha256}};
    if (!link.upload_time.empty()) file["upload-time"] = link.upload_time;
    files.push_back(std::move(file));
    const auto name = link.path.filename().string();
    const auto stem = name.ends_with(".tar.gz") ? name.substr(0, name.size() - 7) : name;
    const auto parts = text::split(stem, '-');
    if (parts.size() >= 2) {
      const std::string version(name.ends_with(".whl") ? parts[1] : parts.back());
      if (std::find(versions.begin(), versions.end(), version) == versions.end())
        versions.push_back(version);
    }
  }
  return nlohmann::json{{"meta", {{"api-version", "1.1"}}},
                        {"name", project},
                        {"versions", versions},
                        {"files", files}}
             .dump(1) +
         "\n";
}

void PythonIndex::write_pages() const {
  std::string projects = "<!DOCTYPE html>\n<html><body>\n";
  for (const auto& [project, links] : links_) {
    projects += "<a href=\"" + project + "/\">" + project + "</a><br>\n";
    const fs::path page_dir = fs::path(pages_) / project;
    std::string page = "<!DOCTYPE html>\n<html><body>\n";
    for (const auto& link : links) {
      page += "<a href=\"" + href_escaped(link.path.lexically_relative(page_dir).string()) +
              "#sha256=" + link.sha256 + "\"";
      if (!link.requires_python.empty())
        page += " data-requires-python=\"" + html_escaped(link.requires_python) + "\"";
      if (!link.metadata_sha256.empty()) {
        page += " data-dist-info-metadata=\"sha256=" + link.metadata_sha256 +
                "\" data-core-metadata=\"sha256=" + link.metadata_sha256 + "\"";
      }
      page += ">" + link.path.filename().string() + "</a><br>\n";
    }
    page += "</body></html>\n";
    write_binary(root_ / page_dir / "index.html", page);
    if (std::any_of(links.begin(), links.end(),
                    [](const Link& link) { return !link.upload_time.empty(); })) {
      write_binary(root_ / page_dir / "index.pyjson", json_page(project, links, page_dir));
    }
  }
  projects += "</body></html>\n";
  write_binary(root_ / pages_ / "index.html", projects);
}

std::vector<MirroredFile> build_mirror(const fs::path& root,
                                       const std::vector<fs::path>& descriptions) {
  std::vector<MirroredFile> made;
  for (const auto& description : descriptions) {
    std::ifstream in(description);
    const auto document = nlohmann::json::parse(in);
    PythonIndex index(root, net::mirror_path(document.at("index").get<std::string>()));
    for (const auto& [project, releases] : document.at("projects").items()) {
      for (const auto& release : releases) {
        for (const auto& file : release.at("files")) {
          // A file's own metadata where it differs from the release's (torch's cp312 wheels).
          const auto field = [&](const char* key) {
            return file.contains(key) ? file.at(key) : release.at(key);
          };
          using Lines = std::vector<std::string>;
          FakeWheel wheel{.name = field("name").get<std::string>(),
                          .version = release.at("version").get<std::string>(),
                          .requires_dist = field("requires-dist").get<Lines>(),
                          .files = {},
                          .requires_python = field("requires-python").get<std::string>(),
                          .provides_extra = field("provides-extra").get<Lines>()};
          const auto url = file.at("url").get<std::string>();
          const auto path = net::mirror_file(url);
          if (!path)
            throw std::runtime_error(description.string() + ": " + path.error().to_string());
          const std::string name = path->filename().string();
          wheel.sdist = !name.ends_with(".whl");
          if (!wheel.sdist) {
            // {name}-{version}[-{build}]-{python}-{abi}-{platform}.whl
            const std::string stem = name.substr(0, name.size() - 4);  // split() views into it
            const auto parts = text::split(stem, '-');
            if (parts.size() < 5) throw std::runtime_error("not a wheel file name: " + name);
            wheel.tag = std::string(parts[parts.size() - 3]) + "-" +
                        std::string(parts[parts.size() - 2]) + "-" + std::string(parts.back());
          }
          const auto written = index.add(wheel, *path);
          made.push_back({.url = url,
                          .sha256 = PythonIndex::sha256_of(written),
                          .upstream_sha256 = file.value("sha256", std::string())});
        }
      }
    }
  }
  return made;
}

std::vector<fs::path> pyindex_descriptions(const fs::path& data_dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(data_dir / "pyindex")) {
    if (entry.path().extension() == ".json" && entry.path().filename() != "seeds.json")
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace envkit::test
