#include "server/request_json.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "server/openai_error.h"

namespace paceline {

namespace {

using Json = nlohmann::ordered_json;

// Members up to this many are checked for duplicates pairwise; more, with a hash map.
constexpr size_t kPairwiseDuplicateCheck = 8;

[[noreturn]] void reject_body(std::string message) {
  throw_api_error(invalid_request_error(std::move(message)));
}

// Keeps one member per key: the last value, at the place of the first.
void merge_duplicate_keys(Json::object_t& map) {
  // The members as the vector they are (ordered_map hides its operator[] by index).
  Json::object_t::Container& object = map;
  bool duplicates = false;
  if (object.size() <= kPairwiseDuplicateCheck) {
    for (size_t i = 0; i < object.size() && !duplicates; ++i) {
      for (size_t j = i + 1; j < object.size() && !duplicates; ++j) {
        duplicates = object[i].first == object[j].first;
      }
    }
    if (!duplicates) return;
  }
  std::unordered_map<std::string_view, size_t> first_at;
  first_at.reserve(object.size());
  std::vector<size_t> last_value(object.size());
  for (size_t i = 0; i < object.size(); ++i) {
    auto [it, inserted] = first_at.emplace(object[i].first, i);
    last_value[it->second] = i;
    duplicates |= !inserted;
  }
  if (!duplicates) return;
  Json::object_t::Container merged;
  merged.reserve(first_at.size());
  for (size_t i = 0; i < object.size(); ++i) {
    auto it = first_at.find(object[i].first);
    if (it->second != i) continue;
    merged.emplace_back(object[i].first, std::move(object[last_value[i]].second));
  }
  object = std::move(merged);
}

// The SAX events → an ordered_json tree. `open_` holds the containers being filled; each points
// into its parent, which is not appended to while a child is open, so the pointers stay valid.
class RequestJsonBuilder {
 public:
  explicit RequestJsonBuilder(Json& root) : root_(root) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(Json::number_integer_t v) { return put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(v); }
  bool number_float(Json::number_float_t v, const std::string&) { return put(v); }
  bool string(std::string& v) { return put(std::move(v)); }
  bool binary(Json::binary_t& v) { return put(Json::binary(std::move(v))); }

  bool start_object(size_t) { return open(Json::value_t::object); }
  bool key(std::string& k) {
    Json::object_t& object = *open_.back()->get_ptr<Json::object_t*>();
    object.emplace_back(std::move(k), nullptr);
    member_ = &object.back().second;
    return true;
  }
  bool end_object() {
    merge_duplicate_keys(*open_.back()->get_ptr<Json::object_t*>());
    open_.pop_back();
    return true;
  }
  bool start_array(size_t) { return open(Json::value_t::array); }
  bool end_array() {
    open_.pop_back();
    return true;
  }

  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& error) {
    std::string what = error.what();
    if (error.id == 406) {  // a number too large for a double ("1e999")
      reject_body(
          fmt::format("Invalid JSON in the request body: {}.", what.substr(what.find(']') + 2)));
    }
    if (what.find("UTF-8") != std::string::npos) {
      reject_body(fmt::format("The request body is not valid UTF-8 (at byte {}).", position));
    }
    // "[json.exception.parse_error.101] parse error at line 1, column 9: <reason>; last read: ..."
    size_t colon = what.find(": ");
    std::string reason = colon == std::string::npos ? what : what.substr(colon + 2);
    reason = reason.substr(0, reason.find("; last read"));
    reject_body(
        fmt::format("Malformed JSON in the request body at byte {}: {}.", position, reason));
  }

 private:
  template <typename V>
  bool put(V&& value) {
    place(Json(std::forward<V>(value)));
    return true;
  }
  Json* place(Json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *open_.back();
    if (parent.is_array()) {
      Json::array_t& array = *parent.get_ptr<Json::array_t*>();
      array.push_back(std::move(value));
      return &array.back();
    }
    *member_ = std::move(value);
    return member_;
  }
  bool open(Json::value_t type) {
    if (static_cast<int>(open_.size()) >= kMaxRequestJsonDepth) {
      reject_body(
          fmt::format("The request body nests deeper than {} levels.", kMaxRequestJsonDepth));
    }
    open_.push_back(place(Json(type)));
    return true;
  }

  Json& root_;
  std::vector<Json*> open_;
  Json* member_ = nullptr;
};

}  // namespace

Json read_request_json(std::string_view body) {
  Json root;
  RequestJsonBuilder builder(root);
  Json::sax_parse(body, &builder, Json::input_format_t::json, /*strict=*/true);
  return root;
}

}  // namespace paceline
