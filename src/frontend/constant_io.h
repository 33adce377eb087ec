/// \file
/// Loading file constants: the one place where a problem's data files are
/// read, hashed and checked (used by the .prox parser and the JSON loader).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "ir/expr.h"

namespace proxc::internal {

/// Reads the file `written_path` (.npy, .png, .tif/.tiff; relative paths
/// resolve against `base_dir`, the problem's folder) into a constant whose
/// source records the path as written, the resolved path and the content
/// hash. The file must lie under `base_dir` or a folder allowed by
/// PathPolicy. When `expected_hash` is not empty the file's hash must equal it
/// (and the file may lie anywhere). `pinned` is whether printers keep that
/// pin (ConstantSource::pinned): by default, when there is one; a JSON
/// problem always verifies its hashes and says by its "pinned" field.
std::shared_ptr<const ConstantData> load_constant_file(const std::string& written_path, const std::string& base_dir,
                                                       const std::string& expected_hash = "",
                                                       std::optional<bool> pinned_in_print = std::nullopt);

}  // namespace proxc::internal
