/// \file
/// Reading and writing one dataset of an HDF5 file, through libhdf5 in the
/// module libproxc_hdf5.so (hdf5_abi.h says why a module).
#pragma once

#include <string>
#include <vector>

#include "io/hdf5_layout.h"
#include "support/array.h"

namespace proxc::internal::io {

/// The datasets of the HDF5 file in `bytes`, as absolute paths ("/entry/data"),
/// at most `max_count` of them. Throws UserError naming `path_for_messages`
/// when the bytes are not a readable HDF5 file.
std::vector<std::string> hdf5_datasets(const std::string& bytes, const std::string& path_for_messages,
                                       size_t max_count = 100);

/// Decodes the dataset `dataset` ("/entry/data"; "" when the file holds
/// exactly one) of the HDF5 file in `bytes`, opened from memory. Datasets of
/// floats (16, 32, 64 bits) and integers (8 to 64 bits, either sign, either
/// byte order) convert to float32 by value, as .npy files do; rank 0 to 8.
/// The size is checked against Limits::max_array_bytes() before anything is
/// allocated. Throws UserError for a malformed file ("malformed HDF5: " and
/// libhdf5's message), a missing dataset (listing those there are), a group
/// in its place, an unsupported datatype or a float64 value beyond float32.
Array decode_hdf5(const std::string& bytes, const std::string& dataset, const std::string& path_for_messages);

/// The bytes of an HDF5 file that holds `a` as the float32 dataset `dataset`
/// (its groups created as needed): `existing` (an HDF5 file's bytes) with the
/// dataset added or replaced, or a new file when `existing` is null. Works
/// on a private file in the temporary folder.
std::string encode_hdf5(const std::string* existing, const std::string& dataset, const Array& a,
                        const std::string& path_for_messages, const Hdf5Layout& layout = {});

/// Reads the dataset `dataset` of the HDF5 file at `path` (see decode_hdf5).
Array read_hdf5(const std::string& path, const std::string& dataset);

/// Writes `a` as the dataset `dataset` of the HDF5 file at `path`: into a
/// copy of the file when it exists (its other objects kept), a new file
/// otherwise; written whole or not at all (write_file_atomic). Checks what
/// check_hdf5_output checks first. Stored as `layout` says (contiguous by
/// default).
void write_hdf5(const std::string& path, const std::string& dataset, const Array& a, const Hdf5Layout& layout = {});

/// Throws the UserError writing `dataset` to `path` would throw, before any
/// array exists: a bad dataset name (empty, empty parts, '.' or '..',
/// control characters), an unwritable place (check_output_path), an existing
/// file that is not HDF5, a group or a link to elsewhere in the dataset's place.
void check_hdf5_output(const std::string& path, const std::string& dataset);

/// The dataset name rules of check_hdf5_output alone.
void check_hdf5_dataset_name(const std::string& dataset, const std::string& path);


}  // namespace proxc::internal::io
