// Compiling a generated megakernel with nvcc for sm_90a, cached by a hash of the
// generated source, the embedded device sources and the flags: a second run of the
// same model loads the cached cubin without compiling. No GPU is needed to compile.
#pragma once

#include <string>
#include <vector>

namespace mpk {

struct CompileOptions {
  std::string cache_dir;  // "": $MPK_CACHE_DIR, else ~/.cache/mpk
  std::string nvcc;       // "": $CUDA_HOME/bin/nvcc, /usr/local/cuda/bin/nvcc, PATH
  bool progress = true;   // print "compiling megakernel ... 23.4 s" to stderr
  bool force = false;     // compile even when the cache holds the result
};

struct CompiledKernel {
  std::vector<char> cubin;
  std::string cubin_path;  // in the cache
  std::string hash;        // 16 hex digits
  bool from_cache = false;
  double compile_seconds = 0;  // 0 when loaded from the cache
};

// The nvcc flags the megakernel is built with (part of the cache key).
std::vector<std::string> megakernel_nvcc_flags();

// Throws mpk::Error naming the places searched when nvcc is not found.
std::string find_nvcc(const std::string& preferred = "");
std::string default_cache_dir();

// The cache key of `source` with the embedded device sources and the flags.
std::string megakernel_hash(const std::string& source);

// Throws mpk::Error with nvcc's diagnostics (and the path of the kept sources) when the
// compile fails.
CompiledKernel compile_megakernel(const std::string& source, const CompileOptions& options = {});

}  // namespace mpk
