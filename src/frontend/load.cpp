#include "frontend/load.h"

#include <filesystem>

#include "frontend/parser.h"
#include "frontend/json.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal {

namespace {
constexpr int64_t kMaxProblemBytes = int64_t{1} << 30;
}

bool is_json_path(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".json" || ext == ".JSON";
}

Problem load_problem(const std::string& path) {
  // A JSON dump may hold its constants inline (up to 1 GiB); a .prox file is
  // at most 16 MiB (docs/language.md).
  std::string text = read_file(path, kMaxProblemBytes);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  size_t first = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a byte-order mark
  first = text.find_first_not_of(" \t\r\n", first);
  if (is_json_path(path) || (first != std::string::npos && text[first] == '{')) {
    return parse_json(text, path, dir);
  }
  user_assert(static_cast<int64_t>(text.size()) <= kMaxProgramBytes)
      << path << ": the file has " << text.size() << " bytes; a .prox file is at most "
      << kMaxProgramBytes << " bytes (16 MiB)";
  return parse_program(text, path, dir).problem;
}

}  // namespace proxc::internal
