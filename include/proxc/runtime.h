/// \file
/// Process-wide settings: memory limit, the folders problems may read data
/// from, and plugins of black-box operators.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace proxc {

/// The process's memory budget (the CLI's --max-memory): the arrays of 256
/// KiB or more in use at once (variables, constants, a file's payload, the
/// passes' constants, the emulator's and Halide's buffers, the solver's
/// state) may not exceed this many bytes; a request that would is refused
/// before it is allocated, with a std::bad_alloc that says what it was for,
/// how much it needed and how much is in use (Python: MemoryError). Default:
/// the memory the machine has available when the process starts.
void set_max_array_bytes(int64_t bytes);
int64_t max_array_bytes();

/// Also let problems read data files under `dir` (by default a problem reads
/// only from its own folder and below).
void allow_path(const std::string& dir);

/// Loads a shared library of black-box operators (proxc/black_box.h) and
/// calls its proxc_plugin_init; returns the names it registered. A UserError
/// naming the path when it cannot be loaded or registers a bad operator.
std::vector<std::string> load_plugin(const std::string& path);

/// "4G", "512M", "100000" → bytes; a UserError naming `option` otherwise.
int64_t parse_byte_size(const std::string& text, const std::string& option = "size");

/// Writes `text` to `path` whole or not at all (a temporary file renamed
/// over it): a symbolic link stays a link and the file it names is written,
/// a device or FIFO is written into, an existing file keeps its permissions;
/// a UserError naming the path when it cannot, the target then as it was.
void write_file(const std::string& path, const std::string& text);

/// Throws the UserError write_file would throw for `path` before writing: an
/// empty name, a missing or unwritable folder, a folder or a file that is not
/// writable in its place.
void check_writable(const std::string& path);

/// The file a write to `path` replaces, as an absolute path: its symbolic
/// links followed, a dangling one to the file it would create. Two outputs
/// with one target are one file.
std::string output_target(const std::string& path);

/// Remembers what `path` names now (output_target): a later write_file or
/// save_array to it refuses, naming both files, when a symbolic link made
/// or changed since has it name another. The proxc command keeps every
/// output of a run from its checks to its writes.
void keep_output_target(const std::string& path);

/// Removes the temporary files proxc is writing (beside outputs, HDF5
/// copies). Async-signal-safe: for a signal handler about to end the
/// process, which would otherwise leave them behind.
void remove_temporary_files_now();

/// The version of this proxc ("0.1.0").
const char* version();

}  // namespace proxc
