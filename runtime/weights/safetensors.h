// The safetensors format: reading (memory-mapped, validated so that no tensor can point
// outside the file) and writing (for tests and for turning random weights into a
// checkpoint). Layout: u64 little-endian header length N, N bytes of JSON
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]}, "__metadata__": {..}},
// then the data; offsets are relative to the first byte after the header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/types.h"

namespace mpk {

struct SafetensorsEntry {
  std::string dtype;              // as written: "BF16", "F32", "I64", ...
  std::optional<DType> mpk_dtype; // set for BF16, F16, F32, I32
  std::vector<int64_t> shape;
  uint64_t offset = 0;            // from the start of the file
  uint64_t size = 0;              // bytes
};

struct SafetensorsHeader {
  std::map<std::string, SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + N
};

// Validates a whole safetensors image of `size` bytes: the header length fits (and is at
// most the format's 100 MB), the header is a JSON object of well-formed entries with known
// dtypes, each entry's byte size equals its shape times its element size (checked
// arithmetic), and the entries' data_offsets tile the data exactly, as the format requires:
// in order of offset, each starts where the previous ends, from 0 to the end of the file
// (no overlap, no alias, no gap, no trailing bytes). Throws mpk::Error("<source>:
// <problem>") otherwise. Reads only bytes [0, size).
SafetensorsHeader parse_safetensors(const uint8_t* bytes, uint64_t size, const std::string& source);

// A read-only memory mapping of one safetensors file with its validated header.
class SafetensorsFile {
 public:
  // Throws mpk::Error naming the file (missing, unreadable, truncated, malformed).
  static std::shared_ptr<const SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  const uint8_t* data(const SafetensorsEntry& e) const { return base_ + e.offset; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  SafetensorsHeader header_;
};

struct SafetensorsTensorOut {
  std::string name;
  DType dtype = DType::kBF16;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // shape's elements of dtype
};

// Writes the tensors in the given order (header keys sorted, header padded with spaces
// to a multiple of 8 bytes so every tensor is 8-byte aligned) through write_file_safely
// (ir/file_io.h): PATH is replaced only once every byte is on disk. Throws mpk::Error on
// I/O failure, a duplicate name, or a size that overflows int64.
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// "BF16", "F16", "F32", "I32".
const char* safetensors_dtype_name(DType d);

}  // namespace mpk
