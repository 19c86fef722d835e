#pragma once
// What a user adds to every request the benchmark sends, as with `vllm bench serve`: extra HTTP
// headers (-H/--header 'Name: value', repeatable) and extra body fields (--extra-body JSON).
//
// Extra body fields are merged into the body the client builds: a field the client does not set
// is added; one it sets is replaced, except that a JSON object is merged key by key (so
// {"stream_options": {"continuous_usage_stats": true}} keeps include_usage).
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline::bench {

struct HttpHeader {
  std::string name;
  std::string value;
};

// "Name: value" (spaces around the value are dropped). Fails naming the flag and the text on a
// missing colon, a name that is not an HTTP token, a value with a line break, or a header the
// client must set itself (Content-Length, Transfer-Encoding, Host).
HttpHeader parse_header_flag(std::string_view text);

class ExtraBody {
 public:
  ExtraBody() = default;
  // Fails naming --extra-body unless `json_text` is one JSON object.
  explicit ExtraBody(std::string_view json_text);

  bool empty() const { return fields_.empty(); }
  const nlohmann::json& fields() const { return fields_; }

  // Merges the fields into `body`, one JSON object as the client built it.
  void apply(std::string& body) const;

 private:
  nlohmann::json fields_ = nlohmann::json::object();
  bool overrides_ = false;  // some field is one the client sets: parse and merge
  std::string tail_;        // otherwise: ",<fields>}" replaces the body's closing brace
};

}  // namespace paceline::bench
