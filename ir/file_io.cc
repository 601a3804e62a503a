// Bounded whole-file reads and crash-safe writes (see file_io.h).
#include "ir/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace mpk {
namespace {

std::string why() { return std::strerror(errno); }

std::string mib(int64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error("cannot write '" + path + "': " + why());
  const int rc = ::fsync(fd);
  const std::string err = rc != 0 ? why() : "";
  ::close(fd);
  if (rc != 0) throw Error("cannot write '" + path + "': " + err);
}

std::string parent_folder(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::string read_file_bounded(const std::string& path, int64_t max_bytes, const std::string& what) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw Error("cannot open " + what + " '" + path + "': " + why());
  if (S_ISDIR(st.st_mode)) throw Error("cannot read " + what + " '" + path + "': it is a directory");
  if (S_ISREG(st.st_mode) && st.st_size > max_bytes)
    throw Error(what + " '" + path + "' is larger than " + mib(max_bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + what + " '" + path + "': " + why());
  std::string data;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    data.append(buf, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(data.size()) > max_bytes)
      throw Error(what + " '" + path + "' is larger than " + mib(max_bytes));
  }
  if (in.bad()) throw Error("cannot read " + what + " '" + path + "': " + why());
  return data;
}

void write_file_safely(const std::string& path, const std::function<void(std::ostream&)>& write) {
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw Error("cannot write '" + path + "': it is a directory");
    std::ofstream out(path, std::ios::binary);  // a device or a pipe: write in place, never replace
    if (!out) throw Error("cannot write '" + path + "': " + why());
    write(out);
    out.flush();
    if (!out) throw Error("cannot write '" + path + "': " + why());
    return;
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw Error("cannot write '" + path + "': cannot create '" + tmp + "': " + why());
      write(out);
      out.flush();
      if (!out) throw Error("cannot write '" + path + "': " + why());
    }
    fsync_path(tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error("cannot write '" + path + "': cannot rename '" + tmp + "': " + why());
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  const int dir = ::open(parent_folder(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {  // make the rename itself durable; a folder that cannot be opened is no error
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_safely(const std::string& path, const std::string& content) {
  write_file_safely(path, [&](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  });
}

}  // namespace mpk
