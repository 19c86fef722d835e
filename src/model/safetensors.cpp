#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/json_brief.h"

namespace paceline {
namespace {

using nlohmann::json;

// The format caps the header at 100 MB; real headers are well under 1 MB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// A tensor header nests three deep; refuse deeper JSON before parsing it.
constexpr int kMaxNesting = 16;

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

// The deepest [ or { nesting outside strings, stopping early past `limit`.
int json_nesting(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size() && deepest <= limit; ++i) {
    char ch = text[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;
      } else if (ch == '"') {
        in_string = false;
      }
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return deepest;
}

// A JSON non-negative integer, or nullopt for anything else (negative, float, string...).
std::optional<uint64_t> as_count(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value.get<int64_t>());
  }
  return std::nullopt;
}

struct Span {
  uint64_t begin;
  uint64_t end;
  const std::string* name;
};

// One header entry checked against the data section; returns its view and byte span.
TensorView parse_entry(const std::string& name, const json& entry, const unsigned char* data,
                       uint64_t data_size, const std::string& where, Span* span) {
  if (!entry.is_object()) {
    fail("{}: tensor '{}': header entry must be an object, got {}", where, name, json_brief(entry));
  }
  auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    fail("{}: tensor '{}': missing or non-string dtype", where, name);
  }
  std::optional<DType> dtype = dtype_from_safetensors_name(dtype_it->get<std::string>());
  if (!dtype) {
    fail("{}: tensor '{}': dtype {} is not supported (supported: F32, F16, BF16)", where, name,
         dtype_it->get<std::string>());
  }

  auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    fail("{}: tensor '{}': missing shape (a list of dimensions)", where, name);
  }
  TensorView view;
  view.dtype = *dtype;
  uint64_t bytes = static_cast<uint64_t>(dtype_size(*dtype));
  for (const json& dim : *shape_it) {
    std::optional<uint64_t> d = as_count(dim);
    if (!d || *d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail("{}: tensor '{}': shape {} must hold non-negative integers", where, name,
           json_brief(*shape_it));
    }
    if (__builtin_mul_overflow(bytes, *d, &bytes) ||
        bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail("{}: tensor '{}': shape {} is too large", where, name, json_brief(*shape_it));
    }
    view.shape.push_back(static_cast<int64_t>(*d));
  }

  auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !as_count((*offsets_it)[0]) || !as_count((*offsets_it)[1])) {
    fail("{}: tensor '{}': data_offsets must be [begin, end] byte offsets", where, name);
  }
  uint64_t begin = *as_count((*offsets_it)[0]);
  uint64_t end = *as_count((*offsets_it)[1]);
  if (begin > end || end > data_size) {
    fail("{}: tensor '{}': data_offsets [{}, {}] lie outside the data section ({} bytes)", where,
         name, begin, end, data_size);
  }
  if (end - begin != bytes) {
    fail("{}: tensor '{}': {} of shape [{}] needs {} bytes, but data_offsets [{}, {}] span {}",
         where, name, dtype_name(*dtype), fmt::join(view.shape, ", "), bytes, begin, end,
         end - begin);
  }
  view.data = data + begin;
  *span = Span{begin, end, &name};
  return view;
}

}  // namespace

std::optional<DType> dtype_from_safetensors_name(const std::string& name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  return std::nullopt;
}

std::map<std::string, TensorView> safetensors_parse(const unsigned char* bytes, size_t size,
                                                    const std::string& where) {
  if (size < 8) {
    fail("{}: truncated: {} bytes, too short for the 8-byte header length", where, size);
  }
  uint64_t header_size = read_u64_le(bytes);
  if (header_size > size - 8) {
    fail(
        "{}: header length {} runs past the end of the file ({} bytes): truncated or not "
        "safetensors",
        where, header_size, size);
  }
  if (header_size > kMaxHeaderBytes) {
    fail("{}: header length {} exceeds the format's {} byte limit", where, header_size,
         kMaxHeaderBytes);
  }
  std::string_view header_text(reinterpret_cast<const char*>(bytes + 8), header_size);
  if (json_nesting(header_text, kMaxNesting) > kMaxNesting) {
    fail("{}: header JSON nests deeper than {} levels: not safetensors", where, kMaxNesting);
  }
  json header;
  try {
    header = json::parse(header_text.begin(), header_text.end());
  } catch (const json::exception& e) {
    fail("{}: header is not valid JSON: {}", where, e.what());
  }
  if (!header.is_object())
    fail("{}: header must be a JSON object, got {}", where, json_brief(header));

  const unsigned char* data = bytes + 8 + header_size;
  const uint64_t data_size = size - 8 - header_size;
  std::map<std::string, TensorView> tensors;
  std::vector<Span> spans;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    Span span{};
    TensorView view = parse_entry(name, entry, data, data_size, where, &span);
    if (span.end > span.begin) spans.push_back(span);
    tensors.emplace(name, std::move(view));
  }
  // Overlapping tensors would alias each other's bytes: the file is corrupt or crafted.
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].begin < spans[i - 1].end) {
      fail("{}: tensor '{}': data_offsets [{}, {}] overlap tensor '{}' [{}, {}]", where,
           *spans[i].name, spans[i].begin, spans[i].end, *spans[i - 1].name, spans[i - 1].begin,
           spans[i - 1].end);
    }
  }
  return tensors;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{}: not a regular file", path);
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    mapping_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping_ == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      mapping_ = nullptr;
      fail("{}: cannot map {} bytes: {}", path, size_, std::strerror(err));
    }
  }
  ::close(fd);
  try {
    tensors_ = safetensors_parse(static_cast<const unsigned char*>(mapping_), size_, path);
  } catch (...) {
    if (mapping_) ::munmap(mapping_, size_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_) ::munmap(mapping_, size_);
}

const TensorView* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace paceline
