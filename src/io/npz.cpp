#include "io/npz.h"

#include <zip.h>

#include <memory>

#include "io/npy.h"
#include "support/error.h"

namespace proxc::internal::io {

namespace {

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

std::string strip_npy(const std::string& name) {
  const std::string ext = ".npy";
  if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
    return name.substr(0, name.size() - ext.size());
  }
  return name;
}

ZipPtr open_zip(const std::string& bytes, const std::string& path) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!src) {
    std::string msg = zip_error_strerror(&error);
    zip_error_fini(&error);
    user_error << path << ": cannot read the archive: " << msg;
  }
  zip_t* z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (!z) {
    zip_source_free(src);
    std::string msg = zip_error_strerror(&error);
    zip_error_fini(&error);
    user_error << path << ": malformed .npz (a zip archive): " << msg;
  }
  zip_error_fini(&error);
  return ZipPtr(z);
}

std::string join_members(const std::vector<std::string>& names) {
  std::string s;
  const size_t shown = std::min<size_t>(names.size(), 20);
  for (size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + names[i];
  if (shown < names.size()) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

std::vector<std::string> member_names(zip_t* z) {
  std::vector<std::string> names;
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(z, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_GUESS);
    names.push_back(strip_npy(name ? name : ""));
  }
  return names;
}

}  // namespace

std::vector<std::string> npz_members(const std::string& bytes, const std::string& path) {
  ZipPtr z = open_zip(bytes, path);
  return member_names(z.get());
}

Array decode_npz(const std::string& bytes, const std::string& member, const std::string& path) {
  ZipPtr z = open_zip(bytes, path);
  const std::vector<std::string> names = member_names(z.get());
  user_assert(!names.empty()) << path << ": the .npz archive holds no arrays";
  size_t index = 0;
  if (member.empty()) {
    user_assert(names.size() == 1) << path << ": the archive holds " << names.size() << " arrays ("
                                   << join_members(names) << "); name one, as " << path << ":" << names[0];
  } else {
    const std::string wanted = strip_npy(member);
    index = names.size();
    for (size_t i = 0; i < names.size() && index == names.size(); ++i) {
      if (names[i] == wanted) index = i;
    }
    user_assert(index < names.size()) << path << ": the archive holds no array '" << member << "' (it holds "
                                      << join_members(names) << ")";
  }
  const std::string where = path + ":" + names[index];
  zip_stat_t st;
  zip_stat_init(&st);
  user_assert(zip_stat_index(z.get(), index, 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE))
      << where << ": malformed .npz: " << zip_strerror(z.get());
  // The member holds an .npy file: its header and its data. The data is
  // checked against the limit by parse_npy; the bytes to inflate are checked
  // here, before anything is allocated (a few kilobytes allowed for the header).
  const double limit = static_cast<double>(Limits::max_array_bytes()) + 65536.0 * 64;
  user_assert(static_cast<double>(st.size) <= limit)
      << where << ": the member is " << format_bytes(static_cast<double>(st.size)) << " uncompressed, more than "
      << memory_budget_text();
  std::unique_ptr<zip_file_t, ZipFileCloser> f(zip_fopen_index(z.get(), index, 0));
  user_assert(f != nullptr) << where << ": cannot read the member: " << zip_strerror(z.get());
  std::string data(static_cast<size_t>(st.size), '\0');
  zip_int64_t got = data.empty() ? 0 : zip_fread(f.get(), data.data(), st.size);
  user_assert(got >= 0) << where << ": malformed .npz: " << zip_file_strerror(f.get());
  user_assert(static_cast<zip_uint64_t>(got) == st.size)
      << where << ": malformed .npz: the member holds " << got << " bytes, its directory entry says " << st.size;
  // One more read reaches the end, where libzip checks the CRC.
  char extra = 0;
  zip_int64_t more = zip_fread(f.get(), &extra, 1);
  user_assert(more == 0) << where << ": malformed .npz: "
                         << (more < 0 ? zip_file_strerror(f.get()) : "the member is longer than its directory entry says");
  return parse_npy(data, where);
}

}  // namespace proxc::internal::io
