#include "support/python_index.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <stdexcept>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"

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

// `sha256=<urlsafe base64, no padding>` of `data`, as RECORD writes hashes.
std::string record_hash(std::string_view data) {
  const std::string hex = core::sha256_hex(data);
  std::string bytes;
  for (std::size_t i = 0; i < hex.size(); i += 2)
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out = "sha256=";
  std::uint32_t buffer = 0;
  int bits = 0;
  for (char c : bytes) {
    buffer = (buffer << 8) | static_cast<std::uint8_t>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(buffer >> bits) & 0x3FU];
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (6 - bits)) & 0x3FU];
  return out;
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

PythonIndex::PythonIndex(fs::path root) : root_(std::move(root)) {
  fs::create_directories(root_ / "files");
  fs::create_directories(root_ / "simple");
  write_pages();
}

std::string PythonIndex::filename_of(const FakeWheel& wheel) {
  return escaped(wheel.name) + "-" + wheel.version + "-" + wheel.tag + ".whl";
}

std::string PythonIndex::sha256_of(const fs::path& file) {
  auto digest = core::sha256_file(file);
  if (!digest) throw std::runtime_error("cannot read " + file.string());
  return *digest;
}

fs::path PythonIndex::add(const FakeWheel& wheel) {
  const std::string dist_info = escaped(wheel.name) + "-" + wheel.version + ".dist-info";
  std::vector<std::pair<std::string, std::string>> entries = wheel.files;
  if (entries.empty()) {
    entries.emplace_back(escaped(wheel.name) + "/__init__.py",
                         "__version__ = \"" + wheel.version + "\"\n");
  }
  std::string metadata =
      "Metadata-Version: 2.1\nName: " + wheel.name + "\nVersion: " + wheel.version + "\n";
  for (const auto& line : wheel.requires_dist)
    metadata += "Requires-Dist: " + line + "\n";
  const bool pure = wheel.tag.ends_with("-none-any");
  std::string wheel_file = std::string("Wheel-Version: 1.0\nGenerator: envkit-tests\n") +
                           "Root-Is-Purelib: " + (pure ? "true" : "false") + "\n";
  for (const auto& tag : expanded_tags(wheel.tag))
    wheel_file += "Tag: " + tag + "\n";
  entries.emplace_back(dist_info + "/METADATA", metadata);
  entries.emplace_back(dist_info + "/WHEEL", wheel_file);
  std::string record;
  for (const auto& [path, content] : entries)
    record += path + "," + record_hash(content) + "," + std::to_string(content.size()) + "\n";
  record += dist_info + "/RECORD,,\n";
  entries.emplace_back(dist_info + "/RECORD", record);

  const std::string filename = filename_of(wheel);
  const fs::path path = root_ / "files" / filename;
  write_binary(path, make_zip(entries));
  auto& listed = wheels_[normalized(wheel.name)];
  if (std::find(listed.begin(), listed.end(), filename) == listed.end()) listed.push_back(filename);
  write_pages();
  return path;
}

void PythonIndex::write_pages() const {
  std::string projects = "<!DOCTYPE html>\n<html><body>\n";
  for (const auto& [project, files] : wheels_) {
    projects += "<a href=\"" + project + "/\">" + project + "</a><br>\n";
    std::string page = "<!DOCTYPE html>\n<html><body>\n";
    for (const auto& file : files) {
      page += "<a href=\"../../files/" + file + "#sha256=" + sha256_of(root_ / "files" / file) +
              "\">" + file + "</a><br>\n";
    }
    page += "</body></html>\n";
    write_binary(root_ / "simple" / project / "index.html", page);
  }
  projects += "</body></html>\n";
  write_binary(root_ / "simple" / "index.html", projects);
}

}  // namespace envkit::test
