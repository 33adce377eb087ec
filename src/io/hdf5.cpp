#include "io/hdf5.h"

#include <hdf5.h>

#include <cfloat>
#include <cmath>
#include <filesystem>
#include <mutex>

#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal::io {

namespace {

constexpr int kMaxRank = 8;

// The serial libhdf5 Debian ships is not thread-safe: one call at a time.
std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

// libhdf5 prints its error stack to stderr unless told not to; proxc reads it
// into messages instead.
void quiet_hdf5() {
  static const bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
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
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// Opens an HDF5 file image from memory through the core driver (no file on
// disk is touched); read-write opens work on a private copy.
// On failure, libhdf5's reason goes to `why` (read before the property list
// closes: any later call clears the error stack).
hid_t open_image(const std::string& bytes, bool writable, std::string* why) {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  hid_t f = -1;
  if (fapl.ok() && H5Pset_fapl_core(fapl.get(), 1 << 20, 0) >= 0 &&
      H5Pset_file_image(fapl.get(), const_cast<char*>(bytes.data()), bytes.size()) >= 0) {
    f = H5Fopen("proxc-image.h5", writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get());
  }
  if (f < 0) *why = hdf5_message();
  return f;
}

hid_t open_or_fail(const std::string& bytes, bool writable, const std::string& path) {
  user_assert(!bytes.empty()) << path << ": the file is empty; not an HDF5 file";
  std::string why;
  hid_t f = open_image(bytes, writable, &why);
  if (f < 0) user_error << path << ": malformed HDF5 (or not an HDF5 file): " << why;
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

std::string absolute_name(const std::string& dataset) { return dataset.empty() || dataset[0] == '/' ? dataset : "/" + dataset; }

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

// The dataset's shape; UserError for a null dataspace, a rank above 8 or an
// array too large for the memory limit.
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
  check_allocation(shape, where);
  return shape;
}

// UserError unless the datatype is a float of 2, 4 or 8 bytes or an integer
// of 1 to 8; true when its values fit float32 as they are (read directly).
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

// Float64 values to float32 as .npy's float64 are converted: a finite value
// that rounds to infinity is an error naming its index.
void narrow(const std::vector<double>& wide, const std::string& where, Array* a) {
  const double limit = static_cast<double>(FLT_MAX) + std::ldexp(1.0, 103);  // beyond: infinity in float32
  for (size_t k = 0; k < wide.size(); ++k) {
    const double v = wide[k];
    user_assert(!std::isfinite(v) || std::fabs(v) < limit)
        << where << ": entry " << index_to_string(a->shape, static_cast<int64_t>(k)) << " = " << v
        << " is outside the float32 range";
    a->data[k] = std::isfinite(v) && std::fabs(v) > FLT_MAX ? (v > 0 ? FLT_MAX : -FLT_MAX) : static_cast<float>(v);
  }
}

Array read_dataset(hid_t file, const std::string& name, const std::string& where) {
  Handle d(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) user_error << where << ": cannot open the dataset: " << hdf5_message();
  Handle space(H5Dget_space(d.get()), H5Sclose);
  if (!space.ok()) user_error << where << ": malformed HDF5: " << hdf5_message();
  Handle type(H5Dget_type(d.get()), H5Tclose);
  if (!type.ok()) user_error << where << ": malformed HDF5: " << hdf5_message();
  const Shape shape = dataset_shape(space.get(), where);
  const bool direct = check_datatype(type.get(), where);
  Array a(shape);
  if (a.data.empty()) return a;
  if (direct) {
    if (H5Dread(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data.data()) < 0) {
      user_error << where << ": cannot read the dataset: " << hdf5_message();
    }
    return a;
  }
  // Wider values (float64, integers) are read as float64, then narrowed.
  Shape doubled = shape;
  doubled.push_back(2);
  check_allocation(doubled, where + " (read as float64)");
  std::vector<double> wide(a.data.size());
  if (H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, wide.data()) < 0) {
    user_error << where << ": cannot read the dataset: " << hdf5_message();
  }
  narrow(wide, where, &a);
  return a;
}

// True when every link along `name` ("/a/b/c") exists.
htri_t path_exists(hid_t file, const std::string& name) {
  size_t pos = 0;
  while (pos < name.size()) {
    size_t next = name.find('/', pos + 1);
    if (next == std::string::npos) next = name.size();
    const std::string prefix = name.substr(0, next);
    if (prefix.size() > 1 && prefix.back() != '/') {
      const htri_t e = H5Lexists(file, prefix.c_str(), H5P_DEFAULT);
      if (e <= 0) return e;
    }
    pos = next;
  }
  return 1;
}

void check_dataset_name(const std::string& name, const std::string& path) {
  user_assert(!name.empty() && name != "/") << path << ": name the dataset to write, as " << path << ":/recon";
  user_assert(name.find("//") == std::string::npos && name.back() != '/')
      << path << ":" << name << ": a dataset name has no empty parts";
  for (char c : name) {
    user_assert(static_cast<unsigned char>(c) >= 0x20) << path << ":" << name << ": a dataset name has no control characters";
  }
  user_assert((name + "/").find("/./") == std::string::npos && (name + "/").find("/../") == std::string::npos)
      << path << ":" << name << ": a dataset name has no '.' or '..' parts";
}

// Writes `a` as a float32 dataset `name` of the open file, replacing one of
// the same name; groups on the way are created.
void write_dataset(hid_t file, const std::string& name, const Array& a, const std::string& where) {
  if (path_exists(file, name) > 0) {
    H5O_info_t info;
    if (H5Oget_info_by_name2(file, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
      user_error << where << ": malformed HDF5: " << hdf5_message();
    }
    user_assert(info.type == H5O_TYPE_DATASET) << where << ": '" << name << "' is a group; refusing to replace it";
    if (H5Ldelete(file, name.c_str(), H5P_DEFAULT) < 0) user_error << where << ": cannot replace the dataset: " << hdf5_message();
  }
  H5Eclear2(H5E_DEFAULT);
  std::vector<hsize_t> dims(a.shape.begin(), a.shape.end());
  Handle space(a.shape.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
               H5Sclose);
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  if (!space.ok() || !lcpl.ok() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0) {
    user_error << where << ": cannot describe the dataset: " << hdf5_message();
  }
  Handle d(H5Dcreate2(file, name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!d.ok()) user_error << where << ": cannot create the dataset: " << hdf5_message();
  if (!a.data.empty() && H5Dwrite(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data.data()) < 0) {
    user_error << where << ": cannot write the dataset: " << hdf5_message();
  }
}

}  // namespace

std::vector<std::string> hdf5_datasets(const std::string& bytes, const std::string& path, size_t max_count) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  quiet_hdf5();
  Handle file(open_or_fail(bytes, false, path), H5Fclose);
  return list_datasets(file.get(), max_count);
}

Array decode_hdf5(const std::string& bytes, const std::string& dataset, const std::string& path) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  quiet_hdf5();
  Handle file(open_or_fail(bytes, false, path), H5Fclose);
  std::string name = absolute_name(dataset);
  if (name.empty()) {
    std::vector<std::string> all = list_datasets(file.get(), 21);
    user_assert(!all.empty()) << path << ": the HDF5 file holds no datasets";
    user_assert(all.size() == 1) << path << ": the file holds " << (all.size() > 20 ? "more than 20" : std::to_string(all.size()))
                                 << " datasets (" << join(all) << "); name one, as " << path << ":" << all[0];
    name = all[0];
  }
  const std::string where = path + ":" + name;
  const htri_t exists = name == "/" ? 1 : path_exists(file.get(), name);
  if (exists <= 0) {
    H5Eclear2(H5E_DEFAULT);
    std::vector<std::string> all = list_datasets(file.get(), 20);
    user_error << where << ": the file holds no dataset '" << name << "'"
               << (all.empty() ? std::string(" (it holds no datasets)") : " (it holds " + join(all) + ")");
  }
  H5O_info_t info;
  if (H5Oget_info_by_name2(file.get(), name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    user_error << where << ": malformed HDF5: " << hdf5_message();
  }
  user_assert(info.type == H5O_TYPE_DATASET) << where << ": '" << name << "' is a "
                                             << (info.type == H5O_TYPE_GROUP ? "group" : "named datatype")
                                             << ", not a dataset";
  return read_dataset(file.get(), name, where);
}

std::string encode_hdf5(const std::string* existing, const std::string& dataset, const Array& a, const std::string& path) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  quiet_hdf5();
  const std::string name = absolute_name(dataset);
  check_dataset_name(name, path);
  const std::string where = path + ":" + name;
  hid_t id = -1;
  if (existing) {
    id = open_or_fail(*existing, true, path);
  } else {
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    std::string why;
    if (fapl.ok() && H5Pset_fapl_core(fapl.get(), 1 << 20, 0) >= 0) {
      id = H5Fcreate("proxc-image.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
    }
    if (id < 0) why = hdf5_message();
    if (id < 0) user_error << path << ": cannot create an HDF5 file: " << why;
  }
  Handle file(id, H5Fclose);
  write_dataset(file.get(), name, a, where);
  if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) user_error << where << ": cannot write the file: " << hdf5_message();
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  if (size < 0) user_error << where << ": cannot write the file: " << hdf5_message();
  std::string out(static_cast<size_t>(size), '\0');
  if (H5Fget_file_image(file.get(), out.data(), out.size()) != size) {
    user_error << where << ": cannot write the file: " << hdf5_message();
  }
  return out;
}

Array read_hdf5(const std::string& path, const std::string& dataset) {
  return decode_hdf5(read_file(path), dataset, path);
}

void write_hdf5(const std::string& path, const std::string& dataset, const Array& a) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    const std::string bytes = read_file(path);
    write_file_atomic(path, encode_hdf5(&bytes, dataset, a, path));
  } else {
    write_file_atomic(path, encode_hdf5(nullptr, dataset, a, path));
  }
}

}  // namespace proxc::internal::io
