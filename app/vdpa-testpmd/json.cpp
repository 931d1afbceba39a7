// vdpa-testpmd: writing a JSON document to a file (json.hpp).
#include "json.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace vdpa_testpmd {

int write_json_file(const Json& doc, const std::string& file, const char* what) {
    FILE* f = fopen(file.c_str(), "w");
    if (f == nullptr) {
        int err = errno;
        printf("error: cannot write %s %s: %s\n", what, file.c_str(), strerror(err));
        return -err;
    }
    // Non-finite doubles are written as null; invalid UTF-8 is replaced.
    std::string text = doc.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
    if (fclose(f) != 0 || !ok) {
        printf("error: writing %s %s failed\n", what, file.c_str());
        return -EIO;
    }
    return 0;
}

}  // namespace vdpa_testpmd
