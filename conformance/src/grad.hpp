// grad.hpp — the gradient-check mode (`wick conformance --mode grad`, docs/conformance.md).
//
// A grad case builds one op of the op table through the public Tensor API, in f64, on the backend
// under test, and compares autograd's gradient of every input with central differences
// (wick::autograd::check_gradients). Inputs are drawn from the case seed in domains that keep
// them away from the op's kinks (0 for relu/abs, ties for max/min/sort, integers for floor, ...)
// by far more than the step h. Cases whose backward deliberately throws (cummax, window "prod",
// ...: autograd.hpp) are XFAIL with that reason, never PASS.
#pragma once

#include "case.hpp"
#include "execute.hpp"
#include "result.hpp"

#include <wick/sdk/op_table.hpp>

#include <string>
#include <vector>

namespace wick::conformance {

// Default step and bound: |autograd - numeric| / (1 + |numeric|) <= kGradTolerance for every
// input element. Central differences with h = 1e-6 in f64 are accurate to about 1e-9 on these
// small, smooth cases, so 1e-6 leaves room for libm-class ops and still catches a wrong rule.
constexpr double kGradStep = 1e-6;
constexpr double kGradTolerance = 1e-6;

// Ops of the table that can carry a gradient: at least one input, defined for floats, and a
// float-valued first output (not bool or an index). Grad mode has a case for each.
bool differentiable_in_table(const sdk::OpInfo& op);

// Every grad case ("grad/<op>/f64/<variant>", source "grad"), in op-table order.
std::vector<CaseInfo> grad_cases();

// Ops that differentiable_in_table selects and no grad case covers (the reports name them).
std::vector<std::string> grad_uncovered_ops();

// Runs one grad case on ctx.device. Sets status (PASS, FAIL, XFAIL, XPASS, UNSUPPORTED), the
// message, and for FAIL the error, the bound and the worst element. Throws wick::Error for an
// unknown case id.
void run_grad_case(const ExecContext& ctx, const std::string& id, Result& r);

}  // namespace wick::conformance
