// nccl.hpp — the collectives of CUDA tensors on NCCL (the module of nccl_abi.h), for
// collectives.cpp: the header exchange stays on the transport, the data moves on the device.
#pragma once

#include "engine.hpp"

#include <optional>

namespace wick::distributed {

// Each returns nullopt where the collective is staged instead: a tensor without CUDA memory
// (Tensor::native_memory), NCCL off or (Auto) not loadable, a dtype or reduction NCCL does not
// compute as Wick defines it (i16; float max and min), a CUDA device other than the one the group's
// communicator is on. NcclMode::On turns "not loadable" and "another device" into errors.
std::optional<Work> nccl_all_reduce(Tensor& t, ReduceOp op);
std::optional<Work> nccl_broadcast(Tensor& t, int root);
std::optional<Work> nccl_all_gather(const Tensor& t);
std::optional<Work> nccl_reduce_scatter(const Tensor& t, ReduceOp op);

// Frees the group's communicator, if it has one (ProcessGroup's destructor, before the transport).
void release_nccl(ProcessGroup& g);

}  // namespace wick::distributed
