/// \file
/// The C interface of libproxc_hdf5.so, the module that holds proxc's only
/// calls into libhdf5 (hdf5_module.cpp). io/hdf5.cpp loads it on first use
/// with RTLD_LOCAL, so that the libhdf5 it links never enters a process's
/// global symbols: Python loads libproxc with RTLD_GLOBAL, and a libhdf5 of
/// Debian's there would take the place of the HDF5 h5py brings (another
/// version and ABI) and break h5py in the same process.
///
/// Every function that can fail returns 0 on success and otherwise 1 with
/// *error a message naming the file (to free with proxc_hdf5_free), or null
/// when the allocation callback refused (its context holds the reason). A
/// call that leaves an identifier open fails with "internal error: ...".
/// io/hdf5.cpp makes every call in a child process (libhdf5 1.10 can crash
/// on a corrupt file).
#pragma once

#include <stddef.h>
#include <stdint.h>

// The module exports these and nothing else (built with hidden visibility).
#define PROXC_HDF5_EXPORT __attribute__((visibility("default")))

extern "C" {

/// Changes whenever a signature below changes.
#define PROXC_HDF5_ABI_VERSION 3
PROXC_HDF5_EXPORT int proxc_hdf5_abi_version(void);

/// The datasets of the HDF5 file in `bytes` as absolute paths, at most
/// `max_count`, joined by '\n' into *names.
PROXC_HDF5_EXPORT int proxc_hdf5_list(const char* bytes, size_t size, const char* path, size_t max_count, char** names, char** error);

/// Storage for a dataset of `shape`: float32 elements, or null to refuse.
/// `wide` is 1 when the values pass through a float64 buffer of the same
/// count first (the caller's memory limit covers it).
typedef float* (*proxc_hdf5_alloc_fn)(void* ctx, const int64_t* shape, int rank, int wide);

/// Reads the dataset `dataset` ("" when the file holds exactly one) of the
/// HDF5 file in `bytes` into storage from `alloc`.
PROXC_HDF5_EXPORT int proxc_hdf5_read(const char* bytes, size_t size, const char* dataset, const char* path,
                    proxc_hdf5_alloc_fn alloc, void* ctx, char** error);

/// Checks that the float32 dataset `dataset` can be written into the HDF5
/// file at `path` (opened read-only from disk; a missing file is fine): the
/// file is HDF5 and no group or link to elsewhere is in the dataset's place.
PROXC_HDF5_EXPORT int proxc_hdf5_check_write(const char* path, const char* dataset, char** error);

/// Writes `data` of `shape` as the float32 dataset `dataset` into the HDF5
/// file at `work_path` (created when `create`), replacing one of the same
/// name; `path` names the file in messages. `chunks` (`rank` extents) asks
/// for chunked storage with the deflate filter at level `gzip` (0: none) and
/// the shuffle filter when `shuffle`; null for contiguous storage.
PROXC_HDF5_EXPORT int proxc_hdf5_write(const char* work_path, int create, const char* dataset, const char* path, const int64_t* shape,
                     int rank, const float* data, const int64_t* chunks, int gzip, int shuffle, char** error);

PROXC_HDF5_EXPORT void proxc_hdf5_free(void* p);

typedef int (*proxc_hdf5_abi_version_fn)(void);
typedef int (*proxc_hdf5_list_fn)(const char*, size_t, const char*, size_t, char**, char**);
typedef int (*proxc_hdf5_read_fn)(const char*, size_t, const char*, const char*, proxc_hdf5_alloc_fn, void*, char**);
typedef int (*proxc_hdf5_check_write_fn)(const char*, const char*, char**);
typedef int (*proxc_hdf5_write_fn)(const char*, int, const char*, const char*, const int64_t*, int, const float*,
                                   const int64_t*, int, int, char**);
typedef void (*proxc_hdf5_free_fn)(void*);
}
