// The one bridge between the in-memory IR and ir/mpk.proto (binary .mpk files).
// Loading always runs the verifier. The text form lives in ir/text.h.
#pragma once

#include <cstdint>
#include <string>

#include "ir/module.h"

namespace mpk {

// The newest IR version (mpk.proto enum IrVersion) this build reads, and the one it
// writes, in binary and in the text header `mpk.module "<name>" ir_version=N`.
inline constexpr int kIrVersion = 1;

std::string module_to_binary(const Module& m);
// Throws mpk::Error naming `source` for a malformed or unsupported proto, or a module
// the verifier rejects.
Module module_from_binary(const std::string& bytes, const std::string& source);

enum class Format { kBinary, kText };

// The largest module file load_module reads (a scheduled Qwen3-8B module is a few MiB).
inline constexpr int64_t kMaxModuleBytes = int64_t{256} << 20;

// Writes with write_file_safely (ir/file_io.h). Throws mpk::Error on I/O failure.
void save_module(const Module& m, const std::string& path, Format format);
// Reads a binary or text module (detected from the content), verifies it.
Module load_module(const std::string& path);

}  // namespace mpk
