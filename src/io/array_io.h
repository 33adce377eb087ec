/// \file
/// Loading and saving float32 arrays by file extension (.npy, .png, .tif,
/// .tiff), with the finiteness check that all data entering proxc passes.
#pragma once

#include <cstdint>
#include <string>

#include "io/hdf5_layout.h"
#include "proxc/save_options.h"
#include "support/array.h"

namespace proxc::internal::io {

/// True when `path` ends in an extension load_array and save_array handle:
/// .npy, .png, .tif or .tiff, in any letter case.
bool has_array_extension(const std::string& path);

/// True when `path` (a container's member path too) names an .h5 or .hdf5 file.
bool is_hdf5_path(const std::string& path);

/// Reads the array at `path`, choosing the format by its extension
/// (case-insensitive), then checks that every entry is finite. The file is
/// read once; with `hash`, *hash is data_hash of what was read. Throws
/// UserError for an unknown extension (listing the supported ones), a file
/// that cannot be read or decoded, or a NaN/Inf entry ("PATH: entry (1, 2) is
/// NaN; data must be finite").
Array load_array(const std::string& path, std::string* hash = nullptr);

/// The same from the bytes of the file `path` names (a container's member
/// path: the container's bytes).
Array decode_array(const std::string& path, const std::string& bytes);

/// Writes `a` to `path` in the format its extension names (PNG at 8 bits).
/// Throws UserError for an unknown extension or a shape the format cannot hold.
void save_array(const std::string& path, const Array& a);

/// The same, an HDF5 dataset stored as `options` say (resolve_hdf5_layout
/// checks them against the array); any other format refuses options but the
/// default, naming the path.
void save_array(const std::string& path, const Array& a, const SaveOptions& options);

/// The HDF5 layout save_array(path, an array of `shape`, options) writes
/// (contiguous for other formats), or the UserError it would throw for the
/// options: checks them before a solve.
Hdf5Layout check_save_options(const std::string& path, const Shape& shape, const SaveOptions& options);

/// Throws the UserError save_array would throw for `path` alone (an unknown
/// extension; see check_output_path), before any array exists.
void check_array_output(const std::string& path);

/// The content hash that pins the data `path` holds (a dump's
/// load("...", hash=...)): of the file's bytes `file_bytes`, or for a
/// container's member ("scan.h5:/entry/data") of the array read from it, `a`
/// (its shape and float32 values), so that writing other members into the
/// same file (-o scan.h5:/recon) leaves the pin valid.
std::string data_hash(const std::string& path, const std::string& file_bytes, const Array& a);

/// Throws UserError "PATH: entry (i, j, ...) is NaN; data must be finite"
/// (or Inf, -Inf) for the first entry of `a` in C order that is not finite.
void check_finite(const Array& a, const std::string& path);

/// The multi-index of an element (support/array.h), under its io name too.
using internal::index_to_string;

}  // namespace proxc::internal::io
