#include <catch2/catch.hpp>

#include "envkit/net/transport.hpp"

using envkit::net::mirror_url;

TEST_CASE("mirror_url puts HOST/PATH under the mirror", "[net][mirror]") {
  const std::string url = "https://developer.download.nvidia.com/compute/cuda/redist/x.tar.xz";
  const std::string expected =
      "http://127.0.0.1:8080/m/developer.download.nvidia.com/compute/cuda/redist/x.tar.xz";
  CHECK(mirror_url("http://127.0.0.1:8080/m", url) == expected);
  CHECK(mirror_url("http://127.0.0.1:8080/m/", url) == expected);
  CHECK(mirror_url("file:///srv/m", "https://pypi.org/p/a.whl") ==
        "file:///srv/m/pypi.org/p/a.whl");
  CHECK(mirror_url("file:///srv/m/", "https://pypi.org/p/a.whl") ==
        "file:///srv/m/pypi.org/p/a.whl");
  CHECK(mirror_url("http://h:1/", "https://pypi.org/p/a.whl") == "http://h:1/pypi.org/p/a.whl");
}

TEST_CASE("mirror_url keeps the port and percent escapes, drops query and fragment",
          "[net][mirror]") {
  CHECK(mirror_url("http://m", "https://host:8443/a%2Bb/c+d.whl?token=1#sha256=ab") ==
        "http://m/host:8443/a%2Bb/c+d.whl");
  CHECK(mirror_url("http://m", "https://host/a.whl#frag") == "http://m/host/a.whl");
  CHECK(mirror_url("http://m", "https://host") == "http://m/host");
}

TEST_CASE("mirror_url never carries the original's credentials over", "[net][mirror]") {
  CHECK(mirror_url("http://m", "https://user:secret@host/p/a.whl") == "http://m/host/p/a.whl");
  // The mirror's own credentials are the user's to give.
  CHECK(mirror_url("https://me:pw@m.example/base", "https://user:secret@host/a") ==
        "https://me:pw@m.example/base/host/a");
}

TEST_CASE("mirror_file is mirror_path on disk, as a static server decodes it", "[net][mirror]") {
  using envkit::net::mirror_file;
  using envkit::net::mirror_path;
  const std::string url = "https://download.pytorch.org/whl/cu121/torch-2.1.2%2Bcu121.whl?x=1";
  CHECK(mirror_path(url) == "download.pytorch.org/whl/cu121/torch-2.1.2%2Bcu121.whl");
  // The two layouts agree: mirror_url is the mirror's root plus mirror_path.
  CHECK(mirror_url("http://m", url) == "http://m/" + mirror_path(url));
  CHECK(mirror_file(url).value() == "download.pytorch.org/whl/cu121/torch-2.1.2+cu121.whl");
  CHECK(mirror_file("http://127.0.0.1:8080/a//b.tar.xz").value() == "127.0.0.1:8080/a/b.tar.xz");
  CHECK(mirror_file("https://u:pw@host/a%20b.whl").value() == "host/a b.whl");
}

TEST_CASE("mirror_file refuses paths that would leave the mirror folder", "[net][mirror]") {
  using envkit::net::mirror_file;
  for (const char* url :
       {"https://host/../etc/passwd", "https://host/a/%2e%2e/%2E%2E/b", "https://host/a%2Fb",
        "https://host/a%00b", "https://host/a%zz", "https://host/a%2", "https://host/",
        "https://host", "https://host/dir/", "https://"}) {
    INFO(url);
    CHECK_FALSE(mirror_file(url).ok());
  }
}
