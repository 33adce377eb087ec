// libproxc_hdf5.so: proxc's only calls into libhdf5, behind the C interface
// of hdf5_abi.h (why a module: that header). Files are read from their bytes
// in memory through the core driver; they are written through a file on
// disk (io/hdf5.cpp passes a private copy of the target), so that libhdf5
// finishes the file itself when it closes it.

#include <hdf5.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "io/hdf5_abi.h"
#include "support/array.h"
#include "support/error.h"

namespace proxc::internal::io {

namespace {

constexpr int kMaxRank = 8;
// A name no file can have: with a file image, the core driver first tries to
// open the name on disk, and fails if that works.
constexpr const char* kImageName = "/dev/null/proxc-image.h5";

// One call at a time (whether libhdf5 was built thread-safe or not), and
// libhdf5's error printing off for the calling thread (per thread where it
// is thread-safe): its error stack becomes proxc's messages instead.
std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

herr_t collect_error(unsigned /*n*/, const H5E_error2_t* e, void* out) {
  auto* msgs = static_cast<std::vector<std::string>*>(out);
  if (e && e->desc && *e->desc) msgs->push_back(e->desc);
  return 0;
}

// The innermost messages of libhdf5's error stack, then the stack cleared.
std::string hdf5_message() {
  std::vector<std::string> msgs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &msgs);
  H5Eclear2(H5E_DEFAULT);
  if (msgs.empty()) return "libhdf5 gave no reason";
  std::string s = msgs.front();
  if (msgs.size() > 1 && msgs.back() != msgs.front()) s = msgs.back() + ": " + s;
  return s;
}

// An HDF5 identifier closed with the function that matches its kind.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// External links are not followed: a file read is all that proxc reads
// (a link to another file would leave the folders a problem may read).
herr_t refuse_external_link(const char*, const char*, const char*, const char*, unsigned*, hid_t, void*) { return -1; }

// A link-access list that refuses external links (for H5Lexists,
// H5Oget_info_by_name2), and the same for datasets (H5Dopen2).
struct AccessLists {
  Handle lapl{H5Pcreate(H5P_LINK_ACCESS), H5Pclose};
  Handle dapl{H5Pcreate(H5P_DATASET_ACCESS), H5Pclose};
  AccessLists() {
    if (lapl.ok()) H5Pset_elink_cb(lapl.get(), refuse_external_link, nullptr);
    if (dapl.ok()) H5Pset_elink_cb(dapl.get(), refuse_external_link, nullptr);
  }
};

// Opens the HDF5 file in `bytes` read-only from memory (the core driver, no
// backing store: nothing on disk is touched).
hid_t open_image(const std::string& bytes, const std::string& path) {
  user_assert(!bytes.empty()) << path << ": the file is empty; not an HDF5 file";
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  hid_t f = -1;
  if (fapl.ok() && H5Pset_fapl_core(fapl.get(), 1 << 20, 0) >= 0 &&
      H5Pset_file_image(fapl.get(), const_cast<char*>(bytes.data()), bytes.size()) >= 0) {
    f = H5Fopen(kImageName, H5F_ACC_RDONLY, fapl.get());
  }
  // Read before the property list closes: any later call clears the stack.
  if (f < 0) user_error << path << ": malformed HDF5 (or not an HDF5 file): " << hdf5_message();
  return f;
}

// Opens the file at `path` on disk (the default driver, no file locking:
// the file is proxc's private copy, or opened read-only to check it).
hid_t open_disk(const std::string& path, bool writable, bool create, const std::string& shown) {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  hid_t f = -1;
  if (fapl.ok() && H5Pset_file_locking(fapl.get(), 0, 1) >= 0) {
    f = create ? H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get())
               : H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get());
  }
  if (f < 0) {
    user_error << shown << (create ? ": cannot create an HDF5 file: " : ": malformed HDF5 (or not an HDF5 file): ")
               << hdf5_message();
  }
  return f;
}

struct Visit {
  std::vector<std::string> names;
  size_t max_count;
  size_t seen = 0;
};

herr_t visit_object(hid_t /*obj*/, const char* name, const H5O_info_t* info, void* op) {
  auto* v = static_cast<Visit*>(op);
  if (++v->seen > 100000) return 1;  // a pathological file: stop looking
  if (info->type == H5O_TYPE_DATASET) {
    v->names.push_back(std::string("/") + name);
    if (v->names.size() >= v->max_count) return 1;
  }
  return 0;
}

std::vector<std::string> list_datasets(hid_t file, size_t max_count) {
  Visit v{{}, max_count};
  if (H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, visit_object, &v, H5O_INFO_BASIC) < 0) H5Eclear2(H5E_DEFAULT);
  return v.names;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

std::string absolute_name(const std::string& dataset) {
  return dataset.empty() || dataset[0] == '/' ? dataset : "/" + dataset;
}

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_TIME: return "time";
    case H5T_STRING: return "string";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_COMPOUND: return "compound";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum (h5py's bool)";
    case H5T_VLEN: return "variable-length";
    case H5T_ARRAY: return "array";
    default: return "unknown";
  }
}

// Along `name` ("/a/b/c"): 1 when every link exists, 0 when one is missing;
// a UserError for a link that is not a hard link (external, soft or a
// user's kind: proxc reads and writes only what the file itself holds).
int walk_links(hid_t file, hid_t lapl, const std::string& name, const std::string& where) {
  size_t pos = 0;
  while (pos < name.size()) {
    size_t next = name.find('/', pos + 1);
    if (next == std::string::npos) next = name.size();
    const std::string prefix = name.substr(0, next);
    pos = next;
    if (prefix.size() <= 1 || prefix.back() == '/') continue;
    const htri_t e = H5Lexists(file, prefix.c_str(), lapl);
    if (e <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return 0;
    }
    H5L_info_t info;
    if (H5Lget_info(file, prefix.c_str(), &info, lapl) < 0) user_error << where << ": malformed HDF5: " << hdf5_message();
    user_assert(info.type == H5L_TYPE_HARD)
        << where << ": '" << prefix << "' is " << (info.type == H5L_TYPE_SOFT ? "a soft" : "an external")
        << " link; proxc reads and writes only the objects the file itself holds";
    if (pos < name.size()) {
      H5O_info_t o;
      if (H5Oget_info_by_name2(file, prefix.c_str(), &o, H5O_INFO_BASIC, lapl) < 0) {
        user_error << where << ": malformed HDF5: " << hdf5_message();
      }
      user_assert(o.type == H5O_TYPE_GROUP) << where << ": '" << prefix << "' is a "
                                            << (o.type == H5O_TYPE_DATASET ? "dataset" : "named datatype")
                                            << ", not a group: it holds no '" << name.substr(prefix.size() + 1) << "'";
    }
  }
  return 1;
}

// The dataset's shape; UserError for a null dataspace or a rank above 8.
Shape dataset_shape(hid_t space, const std::string& where) {
  const H5S_class_t sclass = H5Sget_simple_extent_type(space);
  user_assert(sclass == H5S_SIMPLE || sclass == H5S_SCALAR) << where << ": the dataset has no dataspace (a null dataset)";
  const int rank = H5Sget_simple_extent_ndims(space);
  user_assert(rank >= 0 && rank <= kMaxRank) << where << ": the dataset has rank " << rank << "; at most " << kMaxRank
                                             << " is supported";
  hsize_t dims[kMaxRank] = {};
  if (rank > 0 && H5Sget_simple_extent_dims(space, dims, nullptr) < 0) {
    user_error << where << ": malformed HDF5: " << hdf5_message();
  }
  Shape shape(dims, dims + rank);
  for (int64_t e : shape) user_assert(e >= 0) << where << ": malformed HDF5: extent " << static_cast<hsize_t>(e);
  return shape;  // its size is checked by the caller's allocation
}

// True when the datatype's values fit float32 as they are (read directly);
// a UserError unless it is a float of 2, 4 or 8 bytes or an integer of 1 to 8.
bool check_datatype(hid_t type, const std::string& where) {
  const H5T_class_t tclass = H5Tget_class(type);
  const size_t tsize = H5Tget_size(type);
  const bool is_float = tclass == H5T_FLOAT && (tsize == 2 || tsize == 4 || tsize == 8);
  const bool is_int = tclass == H5T_INTEGER && tsize >= 1 && tsize <= 8;
  if (is_float || is_int) return is_float && tsize <= 4;
  const std::string what = tclass == H5T_FLOAT     ? "float of " + std::to_string(tsize) + " bytes"
                           : tclass == H5T_INTEGER ? "integer of " + std::to_string(tsize) + " bytes"
                                                   : class_name(tclass);
  user_error << where << ": unsupported HDF5 datatype: " << what
             << " (supported: floats of 2, 4 or 8 bytes, integers of 1 to 8 bytes)";
  return false;
}

// Refuses data kept outside the file: external raw-data files and virtual
// datasets (their sources are other files).
void check_storage(hid_t dataset, const std::string& where) {
  Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  if (!dcpl.ok()) user_error << where << ": malformed HDF5: " << hdf5_message();
  user_assert(H5Pget_layout(dcpl.get()) != H5D_VIRTUAL)
      << where << ": a virtual dataset (its data lie in other files); proxc reads only what the file itself holds";
  user_assert(H5Pget_external_count(dcpl.get()) <= 0)
      << where << ": the dataset's data lie in external files; proxc reads only what the file itself holds";
}

// Chunks stored without filters hold exactly a chunk's bytes (libhdf5 1.10
// reads past a shorter one: found by fuzz_hdf5). Checked chunk by chunk up
// to 4096 chunks (libhdf5 1.10 finds a chunk's record by walking its index);
// a filtered chunk is checked by its filter when it is decoded.
void check_chunk_sizes(hid_t dataset, hid_t dcpl, hid_t type, const std::string& where) {
  if (H5Pget_nfilters(dcpl) != 0) return;
  hsize_t chunk[kMaxRank] = {};
  const int rank = H5Pget_chunk(dcpl, kMaxRank, chunk);
  if (rank < 0) user_error << where << ": malformed HDF5: " << hdf5_message();
  double bytes = static_cast<double>(H5Tget_size(type));
  for (int k = 0; k < rank; ++k) bytes *= static_cast<double>(chunk[k]);
  // The chunks of the whole dataspace: libhdf5 1.10 takes no H5S_ALL here
  // (1.12 does), and every unfiltered chunked dataset failed to load.
  Handle space(H5Dget_space(dataset), H5Sclose);
  if (!space.ok()) user_error << where << ": malformed HDF5: " << hdf5_message();
  hsize_t count = 0;
  if (H5Dget_num_chunks(dataset, space.get(), &count) < 0) {
    user_error << where << ": malformed HDF5: " << hdf5_message();
  }
  for (hsize_t i = 0; i < count && i < 4096; ++i) {
    hsize_t offset[kMaxRank] = {}, size = 0;
    haddr_t address = 0;
    unsigned mask = 0;
    if (H5Dget_chunk_info(dataset, space.get(), i, offset, &mask, &address, &size) < 0) {
      user_error << where << ": malformed HDF5: " << hdf5_message();
    }
    user_assert(static_cast<double>(size) == bytes)
        << where << ": malformed HDF5: chunk " << i << " stores " << size << " bytes, a chunk holds " << bytes;
  }
}

// A compact dataset keeps its values in its header: they must fill its
// shape (libhdf5 1.10 reads past a short one: found by fuzz_hdf5). A
// contiguous one stores them whole, or not yet (its fill value).
void check_stored_size(hid_t dataset, hid_t type, const Shape& shape, const std::string& where) {
  Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  if (!dcpl.ok()) user_error << where << ": malformed HDF5: " << hdf5_message();
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  if (layout == H5D_CHUNKED) {
    check_chunk_sizes(dataset, dcpl.get(), type, where);
    return;
  }
  if (layout != H5D_COMPACT && layout != H5D_CONTIGUOUS) return;
  double needed = static_cast<double>(H5Tget_size(type));
  for (int64_t e : shape) needed *= static_cast<double>(e);
  const double stored = static_cast<double>(H5Dget_storage_size(dataset));
  user_assert(stored == needed || (layout == H5D_CONTIGUOUS && stored == 0))
      << where << ": malformed HDF5: the dataset stores " << stored << " bytes, its shape and type need " << needed;
}

// Float64 values to float32 as .npy's are converted: a finite value that
// rounds to infinity is an error naming its index.
void narrow(const std::vector<double>& wide, const Shape& shape, const std::string& where, float* out) {
  const double limit = static_cast<double>(FLT_MAX) + std::ldexp(1.0, 103);  // beyond: infinity in float32
  for (size_t k = 0; k < wide.size(); ++k) {
    const double v = wide[k];
    user_assert(!std::isfinite(v) || std::fabs(v) < limit)
        << where << ": entry " << index_to_string(shape, static_cast<int64_t>(k)) << " = " << v
        << " is outside the float32 range";
    out[k] = std::isfinite(v) && std::fabs(v) > FLT_MAX ? (v > 0 ? FLT_MAX : -FLT_MAX) : static_cast<float>(v);
  }
}

// Thrown when the caller's allocation refused: its own reason stands.
struct Refused {};

void read_dataset(hid_t file, const AccessLists& access, const std::string& name, const std::string& where,
                  proxc_hdf5_alloc_fn alloc, void* ctx) {
  Handle d(H5Dopen2(file, name.c_str(), access.dapl.get()), H5Dclose);
  if (!d.ok()) {
    const std::string why = hdf5_message();
    // A newer file format than this libhdf5's: HDF5 2.0 stores filtered
    // chunks with a layout message that 1.10 to 1.14 do not know, and h5py
    // with HDF5 2.0 writes it for libver="latest". Say so, and how to write
    // a file that reads.
    unsigned major = 0, minor = 0, release = 0;
    H5get_libversion(&major, &minor, &release);
    user_assert(why.find("bad version number for layout message") == std::string::npos)
        << where << ": the dataset is stored in a newer HDF5 file format than the libhdf5 " << major << "." << minor
        << "." << release << " proxc reads with (HDF5 2.0's, as h5py writes for libver=\"latest\" or \"v200\"); "
        << "write it with libver=\"v114\" or earlier (h5py: h5py.File(path, \"w\", libver=(\"earliest\", \"v114\")))";
    user_error << where << ": cannot open the dataset: " << why;
  }
  check_storage(d.get(), where);
  Handle space(H5Dget_space(d.get()), H5Sclose);
  if (!space.ok()) user_error << where << ": malformed HDF5: " << hdf5_message();
  Handle type(H5Dget_type(d.get()), H5Tclose);
  if (!type.ok()) user_error << where << ": malformed HDF5: " << hdf5_message();
  const Shape shape = dataset_shape(space.get(), where);
  const bool direct = check_datatype(type.get(), where);
  check_stored_size(d.get(), type.get(), shape, where);
  float* out = alloc(ctx, shape.data(), static_cast<int>(shape.size()), direct ? 0 : 1);
  if (!out) throw Refused{};
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  if (n == 0) return;
  if (direct) {
    if (H5Dread(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
      user_error << where << ": cannot read the dataset: " << hdf5_message();
    }
    return;
  }
  // Wider values (float64, integers) are read as float64, then narrowed.
  std::vector<double> wide(static_cast<size_t>(n));
  if (H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, wide.data()) < 0) {
    user_error << where << ": cannot read the dataset: " << hdf5_message();
  }
  narrow(wide, shape, where, out);
}

// The object at `name` when the file has one there: none, a dataset (to be
// replaced), or an error for anything else.
bool existing_dataset(hid_t file, hid_t lapl, const std::string& name, const std::string& where) {
  if (walk_links(file, lapl, name, where) == 0) return false;
  H5O_info_t info;
  if (H5Oget_info_by_name2(file, name.c_str(), &info, H5O_INFO_BASIC, lapl) < 0) {
    user_error << where << ": malformed HDF5: " << hdf5_message();
  }
  user_assert(info.type == H5O_TYPE_DATASET)
      << where << ": '" << name << "' is a " << (info.type == H5O_TYPE_GROUP ? "group" : "named datatype")
      << "; refusing to replace it";
  return true;
}

// The dataset creation properties of a chunked layout (filters in the order
// h5py applies them: shuffle, then deflate), or H5P_DEFAULT for contiguous.
Handle creation_list(const int64_t* chunks, int rank, int gzip, int shuffle, const std::string& where) {
  if (!chunks) return Handle(H5Pcopy(H5P_DATASET_CREATE_DEFAULT), H5Pclose);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  std::vector<hsize_t> dims(chunks, chunks + rank);
  if (!dcpl.ok() || H5Pset_chunk(dcpl.get(), rank, dims.data()) < 0) {
    user_error << where << ": cannot chunk the dataset: " << hdf5_message();
  }
  if (shuffle && H5Pset_shuffle(dcpl.get()) < 0) user_error << where << ": cannot shuffle: " << hdf5_message();
  if (gzip > 0) {
    user_assert(H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0)
        << where << ": this libhdf5 has no deflate (gzip) filter; write without gzip";
    if (H5Pset_deflate(dcpl.get(), static_cast<unsigned>(gzip)) < 0) {
      user_error << where << ": cannot compress: " << hdf5_message();
    }
  }
  return dcpl;
}

void write_dataset(hid_t file, const std::string& name, const int64_t* shape, int rank, const float* data,
                   const int64_t* chunks, int gzip, int shuffle, const std::string& where) {
  AccessLists access;
  if (existing_dataset(file, access.lapl.get(), name, where) && H5Ldelete(file, name.c_str(), H5P_DEFAULT) < 0) {
    user_error << where << ": cannot replace the dataset: " << hdf5_message();
  }
  std::vector<hsize_t> dims(shape, shape + rank);
  Handle space(rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims.data(), nullptr), H5Sclose);
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  if (!space.ok() || !lcpl.ok() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0) {
    user_error << where << ": cannot describe the dataset: " << hdf5_message();
  }
  const Handle dcpl = creation_list(chunks, rank, gzip, shuffle, where);
  Handle d(H5Dcreate2(file, name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) user_error << where << ": cannot create the dataset: " << hdf5_message();
  int64_t n = 1;
  for (int k = 0; k < rank; ++k) n *= shape[k];
  if (n > 0 && H5Dwrite(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    user_error << where << ": cannot write the dataset: " << hdf5_message();
  }
}

char* copy_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

// Runs `f` under the lock with libhdf5 quiet; 0, or 1 with *error set.
template <typename F>
int guarded(char** error, F&& f) {
  *error = nullptr;
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  int rc = 0;
  try {
    f();
  } catch (const Refused&) {
    rc = 1;
  } catch (const std::exception& e) {
    *error = copy_string(e.what());
    rc = 1;
  }
  // Every identifier a call that succeeds opens is closed before it returns
  // (a leak of proxc's would otherwise hide among libhdf5's own on corrupt
  // files). After a failure libhdf5 may be unable to close a corrupt file:
  // its error stands (the child that made the call ends with it).
  const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open != 0 && rc == 0) {
    std::free(*error);
    *error = copy_string("internal error: proxc left " + std::to_string(open) + " HDF5 identifiers open");
    rc = 1;
  }
  return rc;
}


}  // namespace
}  // namespace proxc::internal::io

using namespace proxc::internal;
using namespace proxc::internal::io;

extern "C" {

int proxc_hdf5_abi_version(void) { return PROXC_HDF5_ABI_VERSION; }

int proxc_hdf5_list(const char* bytes, size_t size, const char* path, size_t max_count, char** names, char** error) {
  *names = nullptr;
  return guarded(error, [&] {
    const std::string image(bytes, size);
    Handle file(open_image(image, path), H5Fclose);
    std::string joined;
    for (const std::string& n : list_datasets(file.get(), max_count)) joined += (joined.empty() ? "" : "\n") + n;
    *names = copy_string(joined);
  });
}

int proxc_hdf5_read(const char* bytes, size_t size, const char* dataset, const char* path_c,
                    proxc_hdf5_alloc_fn alloc, void* ctx, char** error) {
  return guarded(error, [&] {
    const std::string image(bytes, size), path = path_c;
    Handle file(open_image(image, path), H5Fclose);
    std::string name = absolute_name(dataset);
    if (name.empty()) {
      const std::vector<std::string> all = list_datasets(file.get(), 21);
      user_assert(!all.empty()) << path << ": the HDF5 file holds no datasets";
      user_assert(all.size() == 1) << path << ": the file holds "
                                   << (all.size() > 20 ? "more than 20" : std::to_string(all.size())) << " datasets ("
                                   << join(all) << "); name one, as " << path << ":" << all[0];
      name = all[0];
    }
    const std::string where = path + ":" + name;
    AccessLists access;
    if (name != "/" && walk_links(file.get(), access.lapl.get(), name, where) == 0) {
      const std::vector<std::string> all = list_datasets(file.get(), 20);
      user_error << where << ": the file holds no dataset '" << name << "'"
                 << (all.empty() ? std::string(" (it holds no datasets)") : " (it holds " + join(all) + ")");
    }
    H5O_info_t info;
    if (H5Oget_info_by_name2(file.get(), name.c_str(), &info, H5O_INFO_BASIC, access.lapl.get()) < 0) {
      user_error << where << ": malformed HDF5: " << hdf5_message();
    }
    user_assert(info.type == H5O_TYPE_DATASET)
        << where << ": '" << name << "' is a " << (info.type == H5O_TYPE_GROUP ? "group" : "named datatype")
        << ", not a dataset";
    read_dataset(file.get(), access, name, where, alloc, ctx);
  });
}

int proxc_hdf5_check_write(const char* path, const char* dataset, char** error) {
  return guarded(error, [&] {
    const std::string name = absolute_name(dataset), where = std::string(path) + ":" + name;
    Handle file(open_disk(path, false, false, path), H5Fclose);
    AccessLists access;
    existing_dataset(file.get(), access.lapl.get(), name, where);
  });
}

int proxc_hdf5_write(const char* work_path, int create, const char* dataset, const char* path, const int64_t* shape,
                     int rank, const float* data, const int64_t* chunks, int gzip, int shuffle, char** error) {
  return guarded(error, [&] {
    const std::string name = absolute_name(dataset), where = std::string(path) + ":" + name;
    Handle file(open_disk(work_path, true, create != 0, path), H5Fclose);
    write_dataset(file.get(), name, shape, rank, data, chunks, gzip, shuffle, where);
    if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) user_error << where << ": cannot write the file: " << hdf5_message();
  });
}

void proxc_hdf5_free(void* p) { std::free(p); }

}  // extern "C"
