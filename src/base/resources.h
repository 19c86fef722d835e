#pragma once
// Finding the files paceline ships or fetches (configs/models, third_party/qwen3-tokenizer) when
// the binary runs from anywhere: $PACELINE_HOME, the current folder, the executable's folder,
// the installed data folder beside it (../share/paceline, where `cmake --install` puts them),
// then each folder above the executable's.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace paceline {

std::vector<std::filesystem::path> resource_roots();
// The first root holding `relative` (a file or folder), if any.
std::optional<std::filesystem::path> find_resource(const std::filesystem::path& relative);

}  // namespace paceline
