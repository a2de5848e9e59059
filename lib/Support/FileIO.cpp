//===- FileIO.cpp - Reading and writing whole files, checked --------------===//
#include "nnc/Support/FileIO.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nnc {

bool readFile(const std::string &Path, std::string &Out, std::string &Err,
              uint64_t MaxBytes) {
  int Fd = Path == "-" ? STDIN_FILENO : ::open(Path.c_str(), O_RDONLY | O_CLOEXEC);
  if (Fd < 0) {
    Err = std::strerror(errno);
    return false;
  }
  auto Fail = [&](std::string Why) {
    if (Fd != STDIN_FILENO)
      ::close(Fd);
    Err = std::move(Why);
    return false;
  };
  struct stat St;
  if (::fstat(Fd, &St) != 0)
    return Fail(std::strerror(errno));
  if (S_ISDIR(St.st_mode))
    return Fail("is a directory");
  if (S_ISREG(St.st_mode) && static_cast<uint64_t>(St.st_size) > MaxBytes)
    return Fail("is larger than " + std::to_string(MaxBytes) + " bytes");
  Out.clear();
  char Buf[1 << 16];
  while (Out.size() <= MaxBytes) {
    size_t Want = static_cast<size_t>(
        std::min<uint64_t>(sizeof(Buf), MaxBytes + 1 - Out.size()));
    ssize_t N = ::read(Fd, Buf, Want);
    if (N < 0) {
      if (errno == EINTR)
        continue;
      return Fail(std::strerror(errno));
    }
    if (N == 0)
      break;
    Out.append(Buf, static_cast<size_t>(N));
  }
  if (Out.size() > MaxBytes)
    return Fail("is larger than " + std::to_string(MaxBytes) + " bytes");
  if (Fd != STDIN_FILENO)
    ::close(Fd);
  return true;
}

bool writeFile(const std::string &Path, std::string_view Data,
               std::string &Err, WriteMode Mode) {
  bool New = Mode == WriteMode::NewPrivate;
  int Fd = ::open(Path.c_str(),
                  O_WRONLY | O_CREAT | O_CLOEXEC |
                      (New ? O_EXCL | O_NOFOLLOW : O_TRUNC),
                  New ? 0600 : 0666);
  if (Fd < 0) {
    Err = std::strerror(errno);
    return false;
  }
  auto Fail = [&](int Errno) {
    Err = std::strerror(Errno);
    if (New) // Only what this call created may be removed.
      ::unlink(Path.c_str());
    return false;
  };
  size_t Done = 0;
  while (Done < Data.size()) {
    ssize_t N = ::write(Fd, Data.data() + Done, Data.size() - Done);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0) {
      int Errno = N < 0 ? errno : EIO;
      ::close(Fd);
      return Fail(Errno);
    }
    Done += static_cast<size_t>(N);
  }
  if (::close(Fd) != 0)
    return Fail(errno);
  return true;
}

} // namespace nnc
