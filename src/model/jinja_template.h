#pragma once
// A chat template in Jinja, parsed once and rendered per request, as Transformers renders
// `chat_template` (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, its tojson filter,
// raise_exception and strftime_now). The interpreter covers the subset Hugging Face chat
// templates use; see docs/chat_template.md for what is in it.
#include <memory>
#include <string>
#include <string_view>

#include "model/jinja_value.h"

namespace paceline::jinja {

struct Template;

class JinjaTemplate {
 public:
  // Parses `source`; throws paceline::Error "chat template line L, column C: ..." on a syntax
  // error.
  explicit JinjaTemplate(std::string_view source);
  ~JinjaTemplate();
  JinjaTemplate(JinjaTemplate&&) noexcept;
  JinjaTemplate& operator=(JinjaTemplate&&) noexcept;

  // Renders with `variables` (messages, tools, add_generation_prompt, bos_token...). Throws
  // paceline::Error naming line and column when rendering fails, including a template's own
  // raise_exception.
  std::string render(const Dict& variables) const;

 private:
  std::unique_ptr<Template> template_;
};

}  // namespace paceline::jinja
