// safetensors reading (mmap + validation) and writing.
#include "runtime/weights/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "ir/checked.h"
#include "ir/error.h"
#include "ir/file_io.h"
#include "ir/json_brief.h"

namespace mpk {
namespace {

using nlohmann::json;

struct DTypeInfo {
  const char* name;
  uint64_t size;
  std::optional<DType> mpk;
};

constexpr DTypeInfo kDTypes[] = {
    {"BOOL", 1, std::nullopt},    {"U8", 1, std::nullopt},      {"I8", 1, std::nullopt},
    {"F8_E5M2", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt},     {"F16", 2, DType::kF16},       {"BF16", 2, DType::kBF16},
    {"I32", 4, DType::kI32},      {"U32", 4, std::nullopt},     {"F32", 4, DType::kF32},
    {"F64", 8, std::nullopt},     {"I64", 8, std::nullopt},     {"U64", 8, std::nullopt},
};

const DTypeInfo* find_dtype(const std::string& s) {
  for (const DTypeInfo& d : kDTypes)
    if (s == d.name) return &d;
  return nullptr;
}

// Deepest legitimate nesting: top object (0) -> entry (1) -> field (2) -> array item (3).
constexpr int kMaxHeaderDepth = 3;
// The format caps the JSON header at 100 MB (the reference implementation's
// MAX_HEADER_SIZE); real headers are a few KiB to a few hundred KiB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Entries of one shape or data_offsets list: checkpoints hold tensors of rank <= 5.
constexpr size_t kMaxListItems = 16;

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t unsigned_field(const json& v, const std::string& fail_prefix) {
  if (!v.is_number_unsigned()) throw Error(fail_prefix + " must be a non-negative integer, got " + json_brief(v));
  return v.get<uint64_t>();
}

SafetensorsEntry parse_entry(const std::string& source, const std::string& name, const json& v,
                             uint64_t data_start, uint64_t data_size) {
  const std::string where = source + ": tensor '" + text_brief(name) + "'";
  if (!v.is_object()) throw Error(where + ": header entry must be an object, got " + json_brief(v));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) throw Error(where + ": header entry lacks '" + key + "'");
  const json& dt = v.at("dtype");
  if (!dt.is_string()) throw Error(where + ": dtype must be a string, got " + json_brief(dt));
  SafetensorsEntry e;
  e.dtype = dt.get<std::string>();
  const DTypeInfo* info = find_dtype(e.dtype);
  if (!info) throw Error(where + ": unknown dtype " + json_brief(dt));
  e.mpk_dtype = info->mpk;

  const json& shape = v.at("shape");
  if (!shape.is_array()) throw Error(where + ": shape must be a list, got " + json_brief(shape));
  for (const json& d : shape) {
    const uint64_t n = unsigned_field(d, where + ": shape entry");
    if (n > static_cast<uint64_t>(INT64_MAX))
      throw Error(where + ": shape entry " + json_brief(d) + " is beyond int64");
    e.shape.push_back(static_cast<int64_t>(n));
  }
  const std::string size_of_shape = where + ": the byte size of dtype " + e.dtype + " shape " + json_brief(shape);
  const auto bytes = static_cast<uint64_t>(checked_mul(checked_product(e.shape, size_of_shape),
                                                       static_cast<int64_t>(info->size), size_of_shape));

  const json& off = v.at("data_offsets");
  if (!off.is_array() || off.size() != 2)
    throw Error(where + ": data_offsets must be a list [begin, end], got " + json_brief(off));
  const uint64_t begin = unsigned_field(off[0], where + ": data_offsets begin");
  const uint64_t end = unsigned_field(off[1], where + ": data_offsets end");
  if (end < begin) throw Error(where + ": data_offsets " + json_brief(off) + " end before they begin");
  if (end > data_size)
    throw Error(where + ": data_offsets " + json_brief(off) + " run past the end of the data (" +
                std::to_string(data_size) + " bytes): truncated file or corrupt header");
  if (end - begin != bytes)
    throw Error(where + ": data_offsets " + json_brief(off) + " hold " + std::to_string(end - begin) +
                " bytes, but dtype " + e.dtype + " and shape " + json_brief(shape) + " need " +
                std::to_string(bytes));
  e.offset = data_start + begin;
  e.size = bytes;
  return e;
}

// The format requires the data_offsets to tile the data area: in order of offset, every
// tensor starts where the previous one ends, the first at 0 and the last at the end of the
// file; so no two tensors share a byte and no byte is outside a tensor.
void check_tiling(const SafetensorsHeader& h, uint64_t data_size, const std::string& source) {
  std::vector<std::pair<const std::string*, const SafetensorsEntry*>> order;
  for (const auto& [name, e] : h.tensors) order.emplace_back(&name, &e);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.second->offset, a.second->size) < std::make_pair(b.second->offset, b.second->size);
  });
  auto offsets = [&](const SafetensorsEntry& e) {
    return "[" + std::to_string(e.offset - h.data_start) + ", " + std::to_string(e.offset - h.data_start + e.size) + "]";
  };
  uint64_t at = h.data_start;
  const std::pair<const std::string*, const SafetensorsEntry*>* prev = nullptr;
  for (const auto& cur : order) {
    const std::string where =
        source + ": tensor '" + text_brief(*cur.first) + "' (data_offsets " + offsets(*cur.second) + ")";
    if (cur.second->offset < at)
      throw Error(where + " overlaps tensor '" + text_brief(*prev->first) + "' (data_offsets " +
                  offsets(*prev->second) + ")");
    if (cur.second->offset > at)
      throw Error(where + " leaves " + std::to_string(cur.second->offset - at) +
                  " bytes unused before it: tensors must tile the data without gaps");
    at = cur.second->offset + cur.second->size;
    prev = &cur;
  }
  if (at != h.data_start + data_size)
    throw Error(source + ": " + std::to_string(h.data_start + data_size - at) +
                " trailing bytes after the last tensor: tensors must end at the end of the file");
}

}  // namespace

SafetensorsHeader parse_safetensors(const uint8_t* bytes, uint64_t size, const std::string& source) {
  if (size < 8)
    throw Error(source + ": truncated file: " + std::to_string(size) +
                " bytes, a safetensors file starts with an 8-byte header length");
  const uint64_t n = read_u64_le(bytes);
  if (n > kMaxHeaderBytes)
    throw Error(source + ": header length " + std::to_string(n) + " exceeds the format's limit of " +
                std::to_string(kMaxHeaderBytes) + " bytes");
  if (n > size - 8)
    throw Error(source + ": truncated file or bad header length: the header claims " +
                std::to_string(n) + " bytes but only " + std::to_string(size - 8) + " follow");
  if (n < 2) throw Error(source + ": malformed header: " + std::to_string(n) + " bytes of JSON");

  const char* text = reinterpret_cast<const char*>(bytes + 8);
  json header;
  try {
    size_t list_items = 0;
    auto depth_guard = [&](int depth, json::parse_event_t event, json&) {
      if (depth > kMaxHeaderDepth) throw Error(source + ": malformed header: nested too deeply");
      if (event == json::parse_event_t::array_start) list_items = 0;
      if (depth == kMaxHeaderDepth && event == json::parse_event_t::value && ++list_items > kMaxListItems)
        throw Error(source + ": malformed header: a list of more than " + std::to_string(kMaxListItems) +
                    " entries (shapes and data_offsets are short)");
      return true;
    };
    header = json::parse(text, text + n, depth_guard);
  } catch (const json::exception& e) {
    throw Error(source + ": malformed header JSON: " + text_brief(e.what(), kMaxParserMessage));
  }
  if (!header.is_object()) throw Error(source + ": malformed header: not a JSON object");

  SafetensorsHeader h;
  h.data_start = 8 + n;
  const uint64_t data_size = size - h.data_start;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) throw Error(source + ": __metadata__ must be an object");
      for (const auto& [k, mv] : value.items()) {
        if (!mv.is_string()) throw Error(source + ": __metadata__ '" + text_brief(k) + "' must be a string");
        h.metadata[k] = mv.get<std::string>();
      }
      continue;
    }
    h.tensors.emplace(name, parse_entry(source, name, value, h.data_start, data_size));
  }
  check_tiling(h, data_size, source);
  return h;
}

std::shared_ptr<const SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->size_ = static_cast<uint64_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw Error(path + ": cannot map: " + std::strerror(err));
    }
    f->base_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  static const uint8_t kEmpty[1] = {0};
  f->header_ = parse_safetensors(f->base_ ? f->base_ : kEmpty, f->size_, path);
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (base_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

const char* safetensors_dtype_name(DType d) {
  switch (d) {
    case DType::kBF16: return "BF16";
    case DType::kF16: return "F16";
    case DType::kF32: return "F32";
    case DType::kI32: return "I32";
  }
  return "?";
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Larger elements first so that every tensor is aligned to its element size.
  std::vector<const SafetensorsTensorOut*> order;
  std::set<std::string> names;
  for (const SafetensorsTensorOut& t : tensors) {
    if (!names.insert(t.name).second) throw Error(path + ": tensor '" + t.name + "' written twice");
    order.push_back(&t);
  }
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return size_of(a->dtype) > size_of(b->dtype);
  });
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<int64_t> sizes;
  int64_t offset = 0;
  for (const SafetensorsTensorOut* t : order) {
    const std::string what = path + ": the byte size of tensor '" + t->name + "'";
    sizes.push_back(checked_mul(checked_product(t->shape, what), size_of(t->dtype), what));
    const int64_t end = checked_add(offset, sizes.back(), path + ": the data size");
    header[t->name] = {{"dtype", safetensors_dtype_name(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';

  write_file_safely(path, [&](std::ostream& out) {
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (size_t i = 0; i < order.size(); ++i)
      out.write(static_cast<const char*>(order[i]->data), static_cast<std::streamsize>(sizes[i]));
  });
}

}  // namespace mpk
