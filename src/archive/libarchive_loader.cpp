// libarchive, loaded the first time envkit reads a tar (or a zip nested in a
// runfile) rather than when envkit starts: through libxml2 and ICU it brought
// ~10 libraries whose loading was ~2 ms of every envkit process, though only a
// cold install of a tar archive uses it (envkit/sys/lazy_library.hpp). Each
// function envkit calls is defined here, with archive.h's signature, and
// forwards to libarchive's own.
#include <archive.h>
#include <archive_entry.h>

#include <cstdarg>
#include <cstdio>
#include <string>

#include "envkit/sys/lazy_library.hpp"
#include "libarchive.hpp"

namespace envkit::archive::detail {

namespace {
// The soname of libarchive 3. A function's static, made at its first use
// (clang cannot constant-initialize libstdc++ 12's std::string).
sys::LazyLibrary& libarchive() {
  static sys::LazyLibrary library{"libarchive.so.13", "libarchive (Debian, Ubuntu: libarchive13)"};
  return library;
}
}  // namespace

std::optional<std::string> libarchive_load_error() {
  return libarchive().load_error();
}

}  // namespace envkit::archive::detail

#define ENVKIT_ARCHIVE_FORWARD(result, name, params, args, failed) \
  ENVKIT_LAZY_FORWARD(envkit::archive::detail::libarchive(), result, name, params, args, failed)

ENVKIT_ARCHIVE_FORWARD(struct archive*, archive_read_new, (void), (), nullptr)
ENVKIT_ARCHIVE_FORWARD(int, archive_read_free, (struct archive * a), (a), ARCHIVE_FATAL)
ENVKIT_ARCHIVE_FORWARD(int, archive_read_support_format_tar, (struct archive * a), (a),
                       ARCHIVE_FATAL)
ENVKIT_ARCHIVE_FORWARD(int, archive_read_support_format_zip_seekable, (struct archive * a), (a),
                       ARCHIVE_FATAL)
ENVKIT_ARCHIVE_FORWARD(int, archive_read_support_format_zip_streamable, (struct archive * a), (a),
                       ARCHIVE_FATAL)
ENVKIT_ARCHIVE_FORWARD(int, archive_read_open,
                       (struct archive * a, void* data, archive_open_callback* on_open,
                        archive_read_callback* on_read, archive_close_callback* on_close),
                       (a, data, on_open, on_read, on_close), ARCHIVE_FATAL)
ENVKIT_ARCHIVE_FORWARD(int, archive_read_open_filename,
                       (struct archive * a, const char* filename, size_t block_size),
                       (a, filename, block_size), ARCHIVE_FATAL)
ENVKIT_ARCHIVE_FORWARD(int, archive_read_open_memory,
                       (struct archive * a, const void* buffer, size_t size), (a, buffer, size),
                       ARCHIVE_FATAL)
ENVKIT_ARCHIVE_FORWARD(int, archive_read_next_header,
                       (struct archive * a, struct archive_entry** entry), (a, entry),
                       ARCHIVE_FATAL)
ENVKIT_ARCHIVE_FORWARD(la_ssize_t, archive_read_data,
                       (struct archive * a, void* buffer, size_t size), (a, buffer, size),
                       ARCHIVE_FATAL)
ENVKIT_ARCHIVE_FORWARD(const char*, archive_error_string, (struct archive * a), (a),
                       "libarchive could not be loaded")
ENVKIT_ARCHIVE_FORWARD(const char*, archive_entry_pathname, (struct archive_entry * entry), (entry),
                       nullptr)
ENVKIT_ARCHIVE_FORWARD(const char*, archive_entry_pathname_utf8, (struct archive_entry * entry),
                       (entry), nullptr)
ENVKIT_ARCHIVE_FORWARD(const char*, archive_entry_symlink, (struct archive_entry * entry), (entry),
                       nullptr)
ENVKIT_ARCHIVE_FORWARD(const char*, archive_entry_symlink_utf8, (struct archive_entry * entry),
                       (entry), nullptr)
ENVKIT_ARCHIVE_FORWARD(const char*, archive_entry_hardlink, (struct archive_entry * entry), (entry),
                       nullptr)
ENVKIT_ARCHIVE_FORWARD(la_int64_t, archive_entry_size, (struct archive_entry * entry), (entry), 0)
ENVKIT_ARCHIVE_FORWARD(int, archive_entry_size_is_set, (struct archive_entry * entry), (entry), 0)
ENVKIT_ARCHIVE_FORWARD(mode_t, archive_entry_filetype, (struct archive_entry * entry), (entry), 0)
ENVKIT_ARCHIVE_FORWARD(mode_t, archive_entry_perm, (struct archive_entry * entry), (entry), 0)

// Variadic: formatted here, then passed on as one "%s" argument.
extern "C" void archive_set_error(struct archive* a, int code, const char* format, ...) {
  static const auto real = reinterpret_cast<void (*)(struct archive*, int, const char*, ...)>(
      envkit::archive::detail::libarchive().symbol("archive_set_error"));
  if (real == nullptr) return;
  va_list args;
  va_start(args, format);
  va_list size_args;
  va_copy(size_args, args);
  const int size = std::vsnprintf(nullptr, 0, format, size_args);
  va_end(size_args);
  std::string message(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
  std::vsnprintf(message.data(), message.size() + 1, format, args);
  va_end(args);
  real(a, code, "%s", message.c_str());
}
