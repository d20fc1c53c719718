// One-off comparison behind issue 19's choice of libyaml (docs/benchmarks.md, "YAML parser"):
// each parser builds the same small tree. Not part of the build; it needs libyaml-cpp-dev and
// libfyaml-dev, which scripts/setup does not install:
//   g++ -O2 -std=c++20 bench/yaml_parsers.cpp -o /tmp/yaml_parsers -lyaml -lfyaml -lyaml-cpp
//   /tmp/yaml_parsers libyaml|libfyaml|yaml-cpp REPEATS FILE...
#include <libfyaml.h>
#include <yaml-cpp/yaml.h>
#include <yaml.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

struct N {
  int kind = 0;
  std::string text;
  int line = 0, col = 0;
  bool quoted = false;
  std::vector<N> kids;
};

struct Builder {
  std::vector<N> stack;
  std::vector<N> docs;
  int depth = 0;
  long nodes = 0;
  void add(N n) {
    if (stack.empty())
      docs.push_back(std::move(n));
    else
      stack.back().kids.push_back(std::move(n));
  }
  bool open(N n) {
    if (++depth > 64) return false;
    stack.push_back(std::move(n));
    return true;
  }
  void close() {
    --depth;
    N n = std::move(stack.back());
    stack.pop_back();
    add(std::move(n));
  }
};

std::string err;
long libyaml(const std::string& text) {
  yaml_parser_t p;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, (const unsigned char*)text.data(), text.size());
  Builder b;
  bool done = false;
  while (!done) {
    yaml_event_t e;
    if (!yaml_parser_parse(&p, &e)) {
      err = std::string(p.problem ? p.problem : "?") + " at " +
            std::to_string(p.problem_mark.line + 1) + ":" +
            std::to_string(p.problem_mark.column + 1);
      yaml_parser_delete(&p);
      return -1;
    }
    switch (e.type) {
      case YAML_STREAM_END_EVENT:
        done = true;
        break;
      case YAML_MAPPING_START_EVENT:
      case YAML_SEQUENCE_START_EVENT: {
        N n;
        n.kind = e.type == YAML_MAPPING_START_EVENT ? 3 : 2;
        n.line = e.start_mark.line;
        n.col = e.start_mark.column;
        if (!b.open(std::move(n))) {
          err = "too deep";
          yaml_event_delete(&e);
          yaml_parser_delete(&p);
          return -1;
        }
        break;
      }
      case YAML_MAPPING_END_EVENT:
      case YAML_SEQUENCE_END_EVENT:
        b.close();
        break;
      case YAML_SCALAR_EVENT: {
        N n;
        n.kind = 1;
        n.text.assign((const char*)e.data.scalar.value, e.data.scalar.length);
        n.line = e.start_mark.line;
        n.col = e.start_mark.column;
        n.quoted = e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        b.add(std::move(n));
        ++b.nodes;
        break;
      }
      case YAML_ALIAS_EVENT:
        err = "alias";
        yaml_event_delete(&e);
        yaml_parser_delete(&p);
        return -1;
      default:
        break;
    }
    yaml_event_delete(&e);
  }
  yaml_parser_delete(&p);
  return b.nodes;
}

long fyaml(const std::string& text) {
  fy_parse_cfg cfg{};
  cfg.flags = (fy_parse_cfg_flags)(FYPCF_QUIET);
  fy_parser* p = fy_parser_create(&cfg);
  fy_parser_set_string(p, text.data(), text.size());
  Builder b;
  fy_event* e;
  while ((e = fy_parser_parse(p))) {
    switch (e->type) {
      case FYET_MAPPING_START:
      case FYET_SEQUENCE_START: {
        N n;
        n.kind = e->type == FYET_MAPPING_START ? 3 : 2;
        auto m = fy_event_start_mark(e);
        if (m) {
          n.line = m->line;
          n.col = m->column;
        }
        if (!b.open(std::move(n))) {
          err = "too deep";
          fy_parser_event_free(p, e);
          fy_parser_destroy(p);
          return -1;
        }
        break;
      }
      case FYET_MAPPING_END:
      case FYET_SEQUENCE_END:
        b.close();
        break;
      case FYET_SCALAR: {
        N n;
        n.kind = 1;
        size_t len = 0;
        const char* t = fy_token_get_text(e->scalar.value, &len);
        if (t) n.text.assign(t, len);
        auto m = fy_event_start_mark(e);
        if (m) {
          n.line = m->line;
          n.col = m->column;
        }
        n.quoted = fy_token_scalar_style(e->scalar.value) != FYSS_PLAIN;
        b.add(std::move(n));
        ++b.nodes;
        break;
      }
      case FYET_ALIAS:
        err = "alias";
        fy_parser_event_free(p, e);
        fy_parser_destroy(p);
        return -1;
      default:
        break;
    }
    fy_parser_event_free(p, e);
  }
  bool bad = fy_parser_get_stream_error(p);
  fy_parser_destroy(p);
  if (bad) {
    err = "fy error";
    return -1;
  }
  return b.nodes;
}

long yamlcpp(const std::string& text) {
  try {
    auto docs = YAML::LoadAll(text);
    return (long)docs.size();
  } catch (const YAML::Exception& e) {
    err = e.what();
    return -1;
  }
}

int main(int argc, char** argv) {
  std::string which = argv[1];
  int reps = std::atoi(argv[2]);
  std::vector<std::string> texts;
  for (int i = 3; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    texts.push_back(s.str());
  }
  size_t bytes = 0;
  for (auto& t : texts)
    bytes += t.size();
  auto fn = which == "libyaml" ? libyaml : which == "libfyaml" ? fyaml : yamlcpp;
  auto start = std::chrono::steady_clock::now();
  long total = 0;
  int failed = 0;
  for (int r = 0; r < reps; ++r)
    for (auto& t : texts) {
      long n = fn(t);
      if (n < 0) {
        ++failed;
      } else
        total += n;
    }
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      reps;
  std::printf("%-9s %zu files %8zu bytes: %8.2f ms per pass (%.1f MB/s) failed=%d %s\n",
              which.c_str(), texts.size(), bytes, ms, bytes / ms / 1000.0, failed / reps,
              failed ? err.c_str() : "");
}
