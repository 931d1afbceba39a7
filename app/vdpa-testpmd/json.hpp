// vdpa-testpmd: the JSON documents it writes (results, trace), built with
// nlohmann::json (Debian's nlohmann-json3-dev). ordered_json keeps the keys
// in the order they are set, so the files read in the order the code says.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vdpa_testpmd {

using Json = nlohmann::ordered_json;

// Writes `doc` to `file` (one line, then a newline). 0, or a negative errno
// after printing "error: ..." naming `what` and the file.
int write_json_file(const Json& doc, const std::string& file, const char* what);

}  // namespace vdpa_testpmd
