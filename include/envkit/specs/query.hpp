#pragma once

#include <string>
#include <string_view>

namespace envkit::specs {

// Answers one `envkit debug specs` request (a JSON object on one line) with
// one JSON line, without the newline. Requests (CLI.md):
//   {"op":"normalize","version":V}            -> {"ok":true,"value":N}
//   {"op":"compare","a":A,"b":B}              -> {"ok":true,"value":-1|0|1}
//   {"op":"contains","spec":S,"version":V,"prereleases":null|true|false}
//   {"op":"parse_spec","spec":S}              -> {"ok":true,"value":normalized}
//   {"op":"filter","spec":S,"versions":[...]} -> {"ok":true,"value":[...]}
// Failures are {"ok":false,"error":"..."}. An "id" in the request is echoed;
// "syntax":"envkit" reads bare versions as envkit files do.
[[nodiscard]] std::string answer_query(std::string_view line);

}  // namespace envkit::specs
