#include "step/backend.h"

#include "support/error.h"

namespace proxc {

void check_step_inputs(const StepProgram& program, const StepInputs& inputs) {
  for (const Step& in : program.inputs()) {
    auto it = inputs.buffers.find(in->name);
    user_assert(it != inputs.buffers.end() && it->second) << "step program '" << program.name
                                                          << "': missing input buffer '" << in->name << "'";
    user_assert(it->second->shape == in->shape)
        << "step program '" << program.name << "': input '" << in->name << "' has shape "
        << shape_to_string(it->second->shape) << ", expected " << shape_to_string(in->shape);
  }
  for (const std::string& p : program.params()) {
    if (p == kCheckParam) continue;  // optional: a run that does not give it checks
    user_assert(inputs.params.count(p)) << "step program '" << program.name << "': missing parameter '" << p << "'";
  }
  for (const auto& [node, array] : inputs.data) {
    user_assert(array && array->shape == node->shape)
        << "replacement data for constant '" << node->name_hint << "' has shape "
        << (array ? shape_to_string(array->shape) : "none") << ", expected " << shape_to_string(node->shape);
  }
}

}  // namespace proxc
