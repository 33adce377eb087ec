#include "step/backend.h"

#include "support/error.h"

namespace proxc::internal {

StepInputCheck::StepInputCheck(const StepProgram& program) : name_(program.name) {
  for (const Step& in : program.inputs()) inputs_.push_back({in->name, in->shape});
  for (const std::string& p : program.params()) {
    if (p != kCheckParam) params_.push_back(p);  // optional: a run that does not give it checks
  }
}

void StepInputCheck::operator()(const StepInputs& inputs) const {
  for (const auto& [name, shape] : inputs_) {
    auto it = inputs.buffers.find(name);
    user_assert(it != inputs.buffers.end() && it->second) << "step program '" << name_
                                                          << "': missing input buffer '" << name << "'";
    user_assert(it->second->shape == shape)
        << "step program '" << name_ << "': input '" << name << "' has shape "
        << shape_to_string(it->second->shape) << ", expected " << shape_to_string(shape);
  }
  for (const std::string& p : params_) {
    user_assert(inputs.params.count(p)) << "step program '" << name_ << "': missing parameter '" << p << "'";
  }
  for (const auto& [node, array] : inputs.data) {
    user_assert(array && array->shape == node->shape)
        << "replacement data for constant '" << node->name_hint << "' has shape "
        << (array ? shape_to_string(array->shape) : "none") << ", expected " << shape_to_string(node->shape);
  }
}

}  // namespace proxc::internal
