#include "frontend/constant_io.h"

#include <filesystem>

#include "io/array_io.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal {

std::shared_ptr<const ConstantData> load_constant_file(const std::string& written_path, const std::string& base_dir,
                                                       const std::string& expected_hash,
                                                       std::optional<bool> pinned_in_print) {
  // "frames.npz:noisy", "scan.h5:/entry/data": the file is resolved and checked, the member kept as written.
  const MemberPath written = split_member_path(written_path);
  std::filesystem::path p(written.file);
  const std::string resolved_file = (p.is_absolute() ? p : std::filesystem::path(base_dir) / p).lexically_normal().string();
  const std::string resolved_path = MemberPath{resolved_file, written.member}.joined();
  // A reference pinned by its content hash (a dump's) may point anywhere: it
  // reads only a file that holds exactly the data the problem recorded, and
  // says nothing of another file's content.
  const bool pinned = !expected_hash.empty();
  if (!pinned || written_path.find('\0') != std::string::npos) PathPolicy::check(resolved_file, base_dir, written_path);
  const bool allowed = !pinned || PathPolicy::allows(resolved_file, base_dir);
  auto data = std::make_shared<ConstantData>();
  data->source.type = ConstantSource::Type::File;
  data->source.path = written_path;
  data->source.resolved_path = resolved_path;
  data->source.pinned = pinned_in_print.value_or(pinned);
  auto check_pin = [&] {
    if (!pinned || expected_hash == data->source.hash) return;
    const std::string& where = written.has_member() ? resolved_path : resolved_file;
    user_assert(allowed) << resolved_file << ": the file does not hold the data the problem pinned by its content hash ("
                         << expected_hash << "), and it lies outside the problem's folder";
    user_error << where << (written.has_member() ? ": the data" : ": the file")
               << " changed since the problem was saved: its content hash is "
               << data->source.hash << ", the problem expects " << expected_hash;
  };
  if (!written.has_member()) {
    // A file's bytes are hashed before they are parsed (read once). Its
    // decoded array counts against the memory budget (the decoders check
    // the size their header declares first, with the shape in the message).
    const MemoryUse use("reading " + resolved_path);
    const std::string bytes = read_file(resolved_file);
    data->source.hash = content_hash(bytes);
    check_pin();
    data->array = io::decode_array(resolved_path, bytes);
    return data;
  }
  // A container's member is pinned by its array (other members may change):
  // read first, and outside the problem's folder a failure says no more than
  // a hash that differs.
  try {
    data->array = io::load_array(resolved_path, &data->source.hash);
  } catch (const UserError&) {
    if (allowed) throw;
    user_error << resolved_file << ": the file does not hold the data the problem pinned by its content hash ("
               << expected_hash << "), and it lies outside the problem's folder";
  }
  check_pin();
  return data;
}

}  // namespace proxc::internal
