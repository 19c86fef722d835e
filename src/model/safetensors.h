#pragma once
// The safetensors format: an 8-byte little-endian header length, a JSON header mapping each
// tensor name to {dtype, shape, data_offsets}, then the data section the offsets point into.
// Everything in the header is checked before a view is made, so a truncated or hostile file
// gives one paceline::Error naming the file and the tensor, never a read out of bounds.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "model/weights.h"

namespace paceline {

// "F32", "F16", "BF16"; nullopt for every other safetensors dtype ("I8", "F64", ...).
std::optional<DType> dtype_from_safetensors_name(const std::string& name);

// Parses and validates a whole safetensors image held in memory; the views point into `bytes`.
// `where` names the file in error messages. __metadata__ is ignored.
std::map<std::string, TensorView> safetensors_parse(const unsigned char* bytes, size_t size,
                                                    const std::string& where);

// A safetensors file mapped read-only; its views stay valid while the object lives.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const TensorView* find(const std::string& name) const;

 private:
  std::string path_;
  void* mapping_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, TensorView> tensors_;
};

}  // namespace paceline
