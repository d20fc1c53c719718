#include "envkit/store/relocation.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include "envkit/core/text.hpp"

namespace envkit::store {

namespace fs = std::filesystem;

bool names_its_prefix(std::string_view relative) {
  return relative.starts_with("bin/activate") || relative.starts_with("bin/Activate") ||
         relative == "pyvenv.cfg";
}

std::string replace_path(std::string_view content, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(content);
  std::string out;
  for (std::size_t at = 0;;) {
    const auto next = content.find(from, at);
    out += content.substr(at, next == std::string_view::npos ? next : next - at);
    if (next == std::string_view::npos) break;
    out += to;
    at = next + from.size();
  }
  return out;
}

std::string relocatable_shebang(std::string_view interpreter_name) {
  return fmt::format(
      "#!/bin/sh\n'''exec' \"$(dirname -- \"$(realpath -- \"$0\")\")/{}\" \"$0\" \"$@\"\n' '''",
      interpreter_name);
}

// A script pip wrote names the interpreter by the generation's absolute path,
// which changes with every install. The `/bin/sh` trampoline (as pip's own
// launcher writes for long paths) finds the interpreter beside the script.
Result<bool> relocate_script(const fs::path& root, const fs::path& script) {
  std::ifstream in(script, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!content.starts_with("#!")) return false;
  const std::string bin_dir = (root / "bin").string() + "/";
  // pip writes `#!<python>` or, for long paths, `#!/bin/sh` + `'''exec' "<python>" ...`.
  std::size_t head_end = content.find('\n');
  if (head_end == std::string::npos) return false;
  std::string head = content.substr(0, head_end);
  if (head == "#!/bin/sh") {
    const auto second = content.find('\n', head_end + 1);
    const auto third = second == std::string::npos ? second : content.find('\n', second + 1);
    if (third == std::string::npos) return false;
    head = content.substr(0, third);
    head_end = third;
  }
  const auto at = head.find(bin_dir);
  if (at == std::string::npos) return false;
  const auto name_end = head.find_first_of("\" \n", at + bin_dir.size());
  const auto interpreter_name = head.substr(at + bin_dir.size(), name_end - at - bin_dir.size());
  const std::string relocated = relocatable_shebang(interpreter_name) + content.substr(head_end);
  const fs::path temporary = script.string() + ".envkit-tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << relocated;
    if (!out) {
      return Error::failed(fmt::format("cannot write {}", text::quoted(temporary.string())));
    }
  }
  std::error_code error;
  fs::permissions(temporary, fs::status(script).permissions(), error);
  fs::rename(temporary, script, error);
  if (error) {
    return Error::failed(fmt::format("cannot rewrite {}", text::quoted(script.string())))
        .because(error.message());
  }
  return true;
}

}  // namespace envkit::store
