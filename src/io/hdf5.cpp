#include "io/hdf5.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <sstream>

#include "io/hdf5_abi.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/temporaries.h"

namespace proxc::internal::io {

namespace {

// The module's functions (hdf5_abi.h), loaded once.
struct Module {
  proxc_hdf5_list_fn list = nullptr;
  proxc_hdf5_read_fn read = nullptr;
  proxc_hdf5_check_write_fn check_write = nullptr;
  proxc_hdf5_write_fn write = nullptr;
  proxc_hdf5_free_fn free = nullptr;
  std::string failure;  // why it did not load
};

// libproxc_hdf5.so beside the library or program this code is part of
// (libproxc.so, installed or in the build tree, or the Python package), or
// where proxc's own build put it (its tests and tools); loaded with
// RTLD_LOCAL, so that its libhdf5 stays out of the global symbols.
const Module& module() {
  static Module m;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    auto attempt = [&](const std::string& path) {
      if (m.free || path.empty()) return;
      void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        tried += "\n  " + std::string(::dlerror());
        return;
      }
      auto version = reinterpret_cast<proxc_hdf5_abi_version_fn>(::dlsym(h, "proxc_hdf5_abi_version"));
      if (!version || version() != PROXC_HDF5_ABI_VERSION) {
        tried += "\n  " + path + ": another version of the module";
        return;
      }
      m.list = reinterpret_cast<proxc_hdf5_list_fn>(::dlsym(h, "proxc_hdf5_list"));
      m.read = reinterpret_cast<proxc_hdf5_read_fn>(::dlsym(h, "proxc_hdf5_read"));
      m.check_write = reinterpret_cast<proxc_hdf5_check_write_fn>(::dlsym(h, "proxc_hdf5_check_write"));
      m.write = reinterpret_cast<proxc_hdf5_write_fn>(::dlsym(h, "proxc_hdf5_write"));
      m.free = reinterpret_cast<proxc_hdf5_free_fn>(::dlsym(h, "proxc_hdf5_free"));
    };
    Dl_info info;
    if (::dladdr(reinterpret_cast<void*>(&module), &info) && info.dli_fname) {
      const std::string self = info.dli_fname;
      attempt(self.substr(0, self.find_last_of('/') + 1) + "libproxc_hdf5.so");
    }
#ifdef PROXC_HDF5_BUILD_MODULE
    attempt(PROXC_HDF5_BUILD_MODULE);
#endif
    if (!m.free) m.failure = "HDF5 files need proxc's module libproxc_hdf5.so (libhdf5), which did not load:" + tried;
  });
  user_assert(m.free != nullptr) << m.failure;
  return m;
}

// A message from the module, freed.
[[noreturn]] void fail(const Module& m, char* error, const std::string& fallback) {
  const std::string msg = error ? error : fallback;
  m.free(error);
  throw UserError(msg);
}

// The allocation callback's state: the array, or the reason it was refused.
struct Allocation {
  std::string where;
  Array array;
  std::string refused;
};

float* allocate(void* ctx, const int64_t* shape, int rank, int wide) {
  auto* a = static_cast<Allocation*>(ctx);
  try {
    Shape s(shape, shape + rank);
    check_allocation(s, a->where);
    if (wide) {
      Shape doubled = s;
      doubled.push_back(2);  // a float64 buffer of as many values
      check_allocation(doubled, a->where + " (read as float64)");
    }
    a->array = Array(s);
    return a->array.data.data() ? a->array.data.data() : reinterpret_cast<float*>(a);  // non-null for 0 elements
  } catch (const UserError& e) {
    a->refused = e.what();
    return nullptr;
  }
}

std::string absolute_name(const std::string& dataset) {
  return dataset.empty() || dataset[0] == '/' ? dataset : "/" + dataset;
}

// A name for a private file beside `path`, unique to this process and call.
std::string work_file(const std::string& path) {
  static std::atomic<int> counter{0};
  const std::filesystem::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".proxc-h5-" + std::to_string(::getpid()) + "-" +
                             std::to_string(counter++)))
      .string();
}

// Removes the file when it goes out of scope.
struct Remove {
  std::string path;
  ~Remove() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

// Runs `fn` (calls into libhdf5) in a child process and returns what it
// returns. libhdf5 1.10 can crash on a corrupt file (a pointer from a failed
// allocation it does not check: found by fuzz_hdf5); a crash there must end
// the child, not proxc. The child sends 'O' and the result, or 'E' and a
// UserError's message; a child that dies is a malformed file.
std::string isolated(const std::string& path, const std::function<std::string()>& fn) {
  module();  // loaded before the fork, never in the child
  static std::mutex fork_mutex;
  std::lock_guard<std::mutex> lock(fork_mutex);
  int fds[2];
  if (::pipe(fds) != 0) user_error << path << ": cannot start a process to read the file: " << std::strerror(errno);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    user_error << path << ": cannot start a process to read the file: " << std::strerror(err);
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = "O" + fn();
    } catch (const UserError& e) {
      out = std::string("E") + e.what();
    } catch (const std::exception& e) {
      out = "E" + path + ": " + e.what();
    }
    for (size_t done = 0; done < out.size();) {
      const ssize_t w = ::write(fds[1], out.data() + done, out.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) ::_exit(1);
      done += static_cast<size_t>(w);
    }
    ::_exit(0);  // no atexit handlers, no buffers flushed twice
  }
  ::close(fds[1]);
  std::string got;
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got.append(buf, static_cast<size_t>(r));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    user_error << path << ": malformed HDF5: libhdf5 crashed reading it (signal " << WTERMSIG(status) << ")";
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got.empty()) {
    user_error << path << ": malformed HDF5: libhdf5 failed reading it";
  }
  if (got.compare(0, 16, "Einternal error:") == 0) internal_error << got.substr(17);
  if (got[0] == 'E') throw UserError(got.substr(1));
  return got.substr(1);
}

}  // namespace

void check_hdf5_dataset_name(const std::string& dataset, const std::string& path) {
  const std::string name = absolute_name(dataset);
  user_assert(!name.empty() && name != "/") << path << ": name the dataset to write, as " << path << ":/recon";
  user_assert(name.find("//") == std::string::npos && name.back() != '/')
      << path << ":" << name << ": a dataset name has no empty parts";
  for (char c : name) {
    user_assert(static_cast<unsigned char>(c) >= 0x20) << path << ":" << name << ": a dataset name has no control characters";
  }
  user_assert((name + "/").find("/./") == std::string::npos && (name + "/").find("/../") == std::string::npos)
      << path << ":" << name << ": a dataset name has no '.' or '..' parts";
}

std::vector<std::string> hdf5_datasets(const std::string& bytes, const std::string& path, size_t max_count) {
  const std::string joined = isolated(path, [&] {
    const Module& m = module();
    char* names = nullptr;
    char* error = nullptr;
    if (m.list(bytes.data(), bytes.size(), path.c_str(), max_count, &names, &error) != 0) fail(m, error, path);
    const std::string out = names ? names : "";
    m.free(names);
    return out;
  });
  std::vector<std::string> out;
  for (size_t start = 0; start < joined.size();) {
    size_t end = joined.find('\n', start);
    if (end == std::string::npos) end = joined.size();
    out.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Array decode_hdf5(const std::string& bytes, const std::string& dataset, const std::string& path) {
  // The child reads into an array of its own (the memory limit checked
  // there) and sends its shape ("rank d0 d1 ...\n") and values.
  const std::string got = isolated(path, [&] {
    const Module& m = module();
    Allocation a;
    a.where = path + ":" + (dataset.empty() ? std::string("(its dataset)") : absolute_name(dataset));
    char* error = nullptr;
    if (m.read(bytes.data(), bytes.size(), dataset.c_str(), path.c_str(), allocate, &a, &error) != 0) {
      if (!error && !a.refused.empty()) throw UserError(a.refused);
      fail(m, error, path + ": cannot read the HDF5 file");
    }
    std::string out = std::to_string(a.array.shape.size());
    for (int64_t e : a.array.shape) out += " " + std::to_string(e);
    out += "\n";
    out.append(reinterpret_cast<const char*>(a.array.data.data()), a.array.data.size() * sizeof(float));
    return out;
  });
  const size_t nl = got.find('\n');
  std::istringstream header(got.substr(0, nl));
  size_t rank = 0;
  header >> rank;
  Shape shape(rank);
  for (int64_t& e : shape) header >> e;
  check_allocation(shape, path);
  Array a(shape);
  internal_assert(got.size() - nl - 1 == a.data.size() * sizeof(float)) << path << ": the reading process sent "
                                                                         << got.size() << " bytes";
  std::memcpy(a.data.data(), got.data() + nl + 1, a.data.size() * sizeof(float));
  return a;
}

void check_hdf5_output(const std::string& path, const std::string& dataset) {
  check_hdf5_dataset_name(dataset, path);
  check_output_path(path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  isolated(path, [&] {
    const Module& m = module();
    char* error = nullptr;
    if (m.check_write(path.c_str(), absolute_name(dataset).c_str(), &error) != 0) fail(m, error, path);
    return std::string();
  });
}

std::string encode_hdf5(const std::string* existing, const std::string& dataset, const Array& a,
                        const std::string& path, const Hdf5Layout& layout) {
  check_hdf5_dataset_name(dataset, path);
  const Module& m = module();
  // Through a private file: libhdf5 finishes a file itself when it closes it.
  const Remove work{work_file((std::filesystem::temp_directory_path() / "proxc.h5").string())};
  const TemporaryFile registered(work.path);
  if (existing) write_file_atomic(work.path, *existing);
  isolated(path, [&] {
    char* error = nullptr;
    if (m.write(work.path.c_str(), existing ? 0 : 1, absolute_name(dataset).c_str(), path.c_str(), a.shape.data(),
                a.rank(), a.data.data(), layout.chunks.empty() ? nullptr : layout.chunks.data(), layout.gzip,
                layout.shuffle ? 1 : 0, &error) != 0) {
      fail(m, error, path + ": cannot write the HDF5 file");
    }
    return std::string();
  });
  return read_file(work.path);
}

Array read_hdf5(const std::string& path, const std::string& dataset) {
  return decode_hdf5(read_file(path), dataset, path);
}

void write_hdf5(const std::string& path, const std::string& dataset, const Array& a, const Hdf5Layout& layout) {
  check_hdf5_output(path, dataset);
  const Module& m = module();
  // A private copy beside the file gets the dataset; the result then
  // replaces the file whole (write_file_atomic: its permissions, a link
  // kept), or nothing changes.
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  const std::filesystem::path target(path);
  remove_orphaned_temporaries(target.parent_path().string(), "." + target.filename().string() + ".proxc-h5-", "");
  const Remove work{work_file(path)};
  const TemporaryFile registered(work.path);  // removed if a signal ends the process
  if (exists) {
    std::filesystem::copy_file(path, work.path, ec);
    if (ec) user_error << path << ": cannot copy the file to add the dataset: " << ec.message();
  }
  isolated(path, [&] {
    char* error = nullptr;
    if (m.write(work.path.c_str(), exists ? 0 : 1, absolute_name(dataset).c_str(), path.c_str(), a.shape.data(),
                a.rank(), a.data.data(), layout.chunks.empty() ? nullptr : layout.chunks.data(), layout.gzip,
                layout.shuffle ? 1 : 0, &error) != 0) {
      fail(m, error, path + ": cannot write the HDF5 file");
    }
    return std::string();
  });
  write_file_atomic(path, read_file(work.path));
}

}  // namespace proxc::internal::io
