#include "sim/sim_profile.h"

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/resources.h"
#include "model/tensor_parallel_shape.h"
#include "sim/profile_table.h"

namespace paceline::sim {

namespace fs = std::filesystem;

namespace {

fs::path resolve_profile_file(const std::string& name_or_path) {
  if (fs::exists(name_or_path)) return name_or_path;
  if (name_or_path.find('/') == std::string::npos && !name_or_path.ends_with(".json")) {
    if (auto p = find_resource(fs::path("configs/profiles") / (name_or_path + ".json"))) return *p;
  }
  fail("--profile {}: no such GPU (known: h200), file, or configs/profiles/{}.json", name_or_path,
       name_or_path);
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot read", path.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON: {}", path.string(), e.what());
  }
}

SimProfile roofline(const std::string& name, const GpuSpec& gpu, const ModelConfig& model,
                    double gpu_memory_utilization, int tp) {
  SimProfile p;
  p.name = name;
  p.type = "roofline";
  p.cost = std::make_unique<RooflineCostModel>(gpu, model, tp);
  p.kv_cache_bytes = roofline_kv_cache_bytes(gpu, model, gpu_memory_utilization, tp);
  p.kv_element_bytes = gpu.kv_element_bytes;
  p.tensor_parallel_size = tp;
  p.json = roofline_profile_json(gpu);
  p.json["tensor_parallel_size"] = tp;
  return p;
}

}  // namespace

nlohmann::json roofline_profile_json(const GpuSpec& gpu) {
  return {{"type", "roofline"}, {"gpu", gpu_spec_to_json(gpu)}};
}

SimProfile load_sim_profile(const std::string& name_or_path, const ModelConfig& model,
                            double gpu_memory_utilization, int64_t kv_element_bytes,
                            int tensor_parallel_size) {
  const int tp = tensor_parallel_size;
  tensor_parallel_shape(model, tp);  // refuses a size that does not split the model
  auto with_kv = [&](GpuSpec g) {
    if (kv_element_bytes > 0) g.kv_element_bytes = kv_element_bytes;
    return g;
  };
  if (is_named_gpu(name_or_path)) {
    return roofline(name_or_path, with_kv(gpu_spec_named(name_or_path)), model,
                    gpu_memory_utilization, tp);
  }
  const fs::path path = resolve_profile_file(name_or_path);
  const nlohmann::json j = read_json(path);
  const std::string where = path.string();
  const std::string type = j.is_object() ? j.value("type", "") : "";
  if (type == "roofline") {
    if (!j.contains("gpu")) fail("{}: a roofline profile needs 'gpu'", where);
    return roofline(name_or_path, with_kv(gpu_spec_from_json(j["gpu"], where)), model,
                    gpu_memory_utilization, tp);
  }
  if (type != "measured") fail("{}: 'type' must be \"roofline\" or \"measured\"", where);
  ProfileTable table = profile_table_from_json(j, where);
  if (table.model != model.name) {
    fail("{}: measured on model '{}', but the simulated model is '{}' (pass --model {})", where,
         table.model, model.name, table.model);
  }
  if (kv_element_bytes > 0 && kv_element_bytes != table.kv_element_bytes) {
    fail("{}: measured with {}-byte KV elements; --kv-cache-dtype asks for {} (measure a profile "
         "with that KV cache)", where, table.kv_element_bytes, kv_element_bytes);
  }
  if (table.tensor_parallel_size != tp) {
    fail("{}: measured at --tensor-parallel-size {}, but the simulation asks for "
         "--tensor-parallel-size {} (a measured table holds one replica's step times; measure "
         "or fit one at that size, or simulate with a roofline profile such as h200)",
         where, table.tensor_parallel_size, tp);
  }
  SimProfile p;
  p.name = name_or_path;
  p.type = "measured";
  p.tensor_parallel_size = tp;
  p.kv_cache_bytes = table.kv_cache_bytes;
  p.kv_element_bytes = table.kv_element_bytes;
  p.json = j;
  p.json.erase("points");  // the summary names the table, it does not copy it
  p.json["num_points"] = table.points.size();
  p.json["file"] = where;
  p.cost = std::make_unique<TableCostModel>(std::move(table));
  return p;
}

}  // namespace paceline::sim
