#include "envkit/archive/wheel_record.hpp"

#include <fmt/format.h>

#include "entry_path.hpp"

namespace envkit::archive {

std::optional<std::string> record_hash_hex(std::string_view field) {
  constexpr std::string_view prefix = "sha256=";
  if (!field.starts_with(prefix)) return std::nullopt;
  field.remove_prefix(prefix.size());
  std::vector<unsigned char> bytes;
  unsigned buffer = 0;
  int bits = 0;
  for (const char c : field) {
    int value = -1;
    if (c >= 'A' && c <= 'Z') value = c - 'A';
    if (c >= 'a' && c <= 'z') value = c - 'a' + 26;
    if (c >= '0' && c <= '9') value = c - '0' + 52;
    if (c == '-' || c == '+') value = 62;
    if (c == '_' || c == '/') value = 63;
    if (c == '=') break;
    if (value < 0) return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<unsigned char>((buffer >> bits) & 0xFF));
    }
  }
  if (bytes.size() != 32) return std::nullopt;
  std::string hex;
  for (const auto byte : bytes)
    hex += fmt::format("{:02x}", byte);
  return hex;
}

std::string record_hash_field(std::string_view hex) {
  constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::vector<unsigned char> bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(
        static_cast<unsigned char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  std::string out = "sha256=";
  unsigned buffer = 0;
  int bits = 0;
  for (const auto byte : bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(buffer >> bits) & 0x3F];
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (6 - bits)) & 0x3F];
  return out;
}

std::string csv_field(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string quoted = "\"";
  for (const char c : field) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

Result<std::unordered_map<std::string, RecordedFile>> parse_wheel_record(std::string_view record,
                                                                         std::string_view wheel) {
  std::unordered_map<std::string, RecordedFile> rows;
  const auto refused = [&](std::size_t line, std::string_view path, std::string why) {
    return Error::failed(fmt::format("refused to unpack `{}`", wheel))
        .because(fmt::format("entry `{}` (line {} of its RECORD): {}", path, line, why))
        .hint("the wheel is damaged or was made to escape its package; do not install it");
  };
  std::size_t line_number = 0;
  while (!record.empty()) {
    const auto end = std::min(record.find('\n'), record.size());
    const auto line = record.substr(0, end);
    record.remove_prefix(std::min(end + 1, record.size()));
    ++line_number;
    if (line.empty() || line == "\r") continue;
    const auto fields = csv_fields(line);
    const auto& path = fields[0];
    auto parts = detail::split_entry_path(path);
    if (!parts) return refused(line_number, path, "RECORD lists it: " + parts.error().message());
    RecordedFile file;
    if (fields.size() > 1) file.sha256 = record_hash_hex(fields[1]);
    if (fields.size() > 2 && !fields[2].empty()) {
      std::uint64_t size = 0;
      for (const char c : fields[2]) {
        if (c < '0' || c > '9' || size > (UINT64_MAX - 9) / 10) {
          return refused(line_number, path,
                         fmt::format("its size `{}` is not a number", fields[2]));
        }
        size = size * 10 + static_cast<std::uint64_t>(c - '0');
      }
      file.size = size;
    }
    if (!rows.emplace(detail::join_path(*parts), std::move(file)).second) {
      return refused(line_number, path, "RECORD lists it twice");
    }
  }
  return rows;
}

bool is_wheel_record(std::string_view path) {
  const auto slash = path.find('/');
  return slash != std::string_view::npos && path.substr(slash) == "/RECORD" &&
         path.substr(0, slash).ends_with(".dist-info");
}

}  // namespace envkit::archive
