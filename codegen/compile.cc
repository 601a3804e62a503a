// nvcc invocation and the cubin cache. See codegen/compile.h.
#include "codegen/compile.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/device_sources.h"
#include "ir/error.h"
#include "ir/fnv1a.h"

namespace mpk {
namespace fs = std::filesystem;
namespace {

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::vector<char> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error("cannot read '" + p.string() + "'");
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw Error("cannot write '" + p.string() + "'");
}

std::string tail_lines(const std::string& text, int n) {
  size_t pos = text.size();
  for (int i = 0; i < n && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos + 1);
}

}  // namespace

std::vector<std::string> megakernel_nvcc_flags() {
  return {"-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-lineinfo"};
}

std::string find_nvcc(const std::string& preferred) {
  std::vector<fs::path> tried;
  auto ok = [&](const fs::path& p) {
    tried.push_back(p);
    return executable(p);
  };
  if (!preferred.empty()) {
    if (ok(preferred)) return preferred;
    throw Error("nvcc not found at '" + preferred + "'");
  }
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    if (ok(fs::path(home) / "bin" / "nvcc")) return (fs::path(home) / "bin" / "nvcc").string();
  if (ok("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty() && ok(fs::path(dir) / "nvcc")) return (fs::path(dir) / "nvcc").string();
  }
#ifdef MPK_NVCC_HINT
  if (std::string hint = MPK_NVCC_HINT; !hint.empty() && ok(hint)) return hint;
#endif
  throw Error("nvcc not found (looked in $CUDA_HOME/bin, /usr/local/cuda/bin and PATH); set CUDA_HOME");
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("MPK_CACHE_DIR"); d && *d) return d;
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "mpk").string();
  return (fs::temp_directory_path() / "mpk-cache").string();
}

std::string megakernel_hash(const std::string& source) {
  Fnv1a h;  // each field with its length, so that ("ab","c") and ("a","bc") differ
  h.sized(source);
  for (const DeviceSource& s : device_sources()) h.sized(s.path).sized(s.text);
  for (const std::string& f : megakernel_nvcc_flags()) h.sized(f);
  return h.hex();
}

CompiledKernel compile_megakernel(const std::string& source, const CompileOptions& o) {
  CompiledKernel k;
  k.hash = megakernel_hash(source);
  const fs::path cache = o.cache_dir.empty() ? default_cache_dir() : o.cache_dir;
  const fs::path cubin = cache / (k.hash + ".cubin");
  k.cubin_path = cubin.string();
  std::error_code ec;
  if (!o.force && fs::is_regular_file(cubin, ec)) {
    k.cubin = read_file(cubin);
    k.from_cache = true;
    if (o.progress) std::fprintf(stderr, "megakernel %s loaded from cache\n", k.hash.c_str());
    return k;
  }

  const std::string nvcc = find_nvcc(o.nvcc);
  const fs::path work = cache / ("build-" + k.hash + "-" + std::to_string(::getpid()));
  fs::remove_all(work, ec);
  for (const DeviceSource& s : device_sources()) write_file(work / s.path, s.text);
  write_file(work / "megakernel.cu", source);
  const fs::path tmp_cubin = work / "megakernel.cubin";
  std::string cmd = shell_quote(nvcc);
  for (const std::string& f : megakernel_nvcc_flags()) cmd += " " + f;
  cmd += " -I" + shell_quote(work.string()) + " -o " + shell_quote(tmp_cubin.string()) + " " +
         shell_quote((work / "megakernel.cu").string()) + " 2>&1";

  if (o.progress) {
    std::fprintf(stderr, "compiling megakernel %s ... ", k.hash.c_str());
    std::fflush(stderr);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::string log;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) throw Error("cannot run nvcc ('" + nvcc + "')");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) log.append(buf, n);
  const int status = ::pclose(pipe);
  k.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (status != 0 || !fs::is_regular_file(tmp_cubin, ec)) {
    if (o.progress) std::fprintf(stderr, "failed\n");
    write_file(work / "nvcc.log", log);
    throw Error("nvcc failed compiling the megakernel (sources kept in '" + work.string() +
                "'):\n" + tail_lines(log, 30));
  }
  if (o.progress) std::fprintf(stderr, "%.1f s\n", k.compile_seconds);
  k.cubin = read_file(tmp_cubin);
  // Publish atomically: rename within the cache directory.
  const fs::path staged = cache / (k.hash + ".cubin.tmp" + std::to_string(::getpid()));
  fs::rename(tmp_cubin, staged);
  fs::rename(staged, cubin);
  fs::remove_all(work, ec);
  return k;
}

}  // namespace mpk
