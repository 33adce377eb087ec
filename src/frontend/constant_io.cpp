#include "frontend/constant_io.h"

#include <filesystem>

#include "io/array_io.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal {

std::shared_ptr<const ConstantData> load_constant_file(const std::string& written_path, const std::string& base_dir,
                                                       const std::string& expected_hash) {
  std::filesystem::path p(written_path);
  const std::string resolved_path = (p.is_absolute() ? p : std::filesystem::path(base_dir) / p).lexically_normal().string();
  PathPolicy::check(resolved_path, base_dir, written_path);
  auto data = std::make_shared<ConstantData>();
  data->source.type = ConstantSource::Type::File;
  data->source.path = written_path;
  data->source.resolved_path = resolved_path;
  data->source.hash = content_hash(read_file(resolved_path));
  user_assert(expected_hash.empty() || expected_hash == data->source.hash)
      << resolved_path << ": the file changed since the problem was saved: its content hash is "
      << data->source.hash << ", the problem expects " << expected_hash;
  data->array = io::load_array(resolved_path);
  return data;
}

}  // namespace proxc::internal
