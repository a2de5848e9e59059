//===- FileIO.h - Reading and writing whole files, checked -----*- C++ -*-===//
//
// The tool reads kernels and argument files and writes outputs, assembly,
// objects and traces. These helpers make every failure an error message
// instead of an exception or silently lost data: a directory, a file larger
// than the caller allows (read no further than that: `/dev/zero` ends), and a
// write or close that fails (a full disk, `/dev/full`).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_SUPPORT_FILEIO_H
#define NNC_SUPPORT_FILEIO_H

#include <cstdint>
#include <string>
#include <string_view>

namespace nnc {

/// Reads Path ("-" for standard input) into Out. Reads at most MaxBytes + 1
/// bytes: a longer file fails with "is larger than MaxBytes bytes". False
/// with Err set ("is a directory", strerror) on failure.
bool readFile(const std::string &Path, std::string &Out, std::string &Err,
              uint64_t MaxBytes);

/// How writeFile opens its file.
enum class WriteMode {
  Replace,   ///< Created or truncated (0666 before the umask).
  NewPrivate ///< Created for this user alone (0600); fails if anything,
             ///< a planted link included, is already there.
};

/// Writes Data to Path, checking every write and the close. False with Err
/// set (strerror) on failure; a NewPrivate file is removed again.
bool writeFile(const std::string &Path, std::string_view Data,
               std::string &Err, WriteMode Mode = WriteMode::Replace);

} // namespace nnc

#endif // NNC_SUPPORT_FILEIO_H
