//===- FakeKernels.cpp - the host build of Kernels.cu (PFRT_CUDA_FAKE) ----===//
//
// Kernels.cu compiled as host C++ for the emulated device (FakeDevice.h):
// `__global__` functions become ordinary functions, the thread and block
// indices are the emulation's, `__shared__` variables are statics (one
// block runs at a time, thread 0 first) and `__syncthreads` does nothing.
// Every kernel the device twins look up must be listed in kHostKernels: a
// missing one makes the emulated module load fail, naming it.
//
//===----------------------------------------------------------------------===//

#include "FakeDevice.h"

#include <cstdint>
#include <tuple>
#include <utility>

using pfrt::fake::blockDim;
using pfrt::fake::blockIdx;
using pfrt::fake::gridDim;
using pfrt::fake::threadIdx;

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __syncthreads() ((void)0)

// Host names of their own: a kernel and a libpfrt function may share a
// name (the kernel pfrt_cuda_reduce_sum and the collective's twin).
#define pfrt_cuda_relu pfrt_fake_relu
#define pfrt_cuda_relu_grad pfrt_fake_relu_grad
#define pfrt_cuda_add pfrt_fake_add
#define pfrt_cuda_mul pfrt_fake_mul
#define pfrt_cuda_scale pfrt_fake_scale
#define pfrt_cuda_copy pfrt_fake_copy
#define pfrt_cuda_fill pfrt_fake_fill
#define pfrt_cuda_split_tf32 pfrt_fake_split_tf32
#define pfrt_cuda_bias_add pfrt_fake_bias_add
#define pfrt_cuda_bias_rows pfrt_fake_bias_rows
#define pfrt_cuda_reduce_sum pfrt_fake_reduce_sum
#define pfrt_cuda_reduce_column_part pfrt_fake_reduce_column_part
#define pfrt_cuda_reduce_run_part pfrt_fake_reduce_run_part
#define pfrt_cuda_reduce_parts_sum pfrt_fake_reduce_parts_sum
#define pfrt_cuda_xent_rows pfrt_fake_xent_rows
#define pfrt_cuda_xent_total pfrt_fake_xent_total
#define pfrt_cuda_xent_check_labels pfrt_fake_xent_check_labels
#define pfrt_cuda_xent_stats pfrt_fake_xent_stats
#define pfrt_cuda_xent_grad pfrt_fake_xent_grad
#define pfrt_cuda_sgd pfrt_fake_sgd
#define pfrt_cuda_adam pfrt_fake_adam
#define pfrt_cuda_sgd_multi pfrt_fake_sgd_multi
#define pfrt_cuda_adam_multi pfrt_fake_adam_multi
#define pfrt_cuda_activation pfrt_fake_activation
#define pfrt_cuda_transpose pfrt_fake_transpose
#define pfrt_cuda_im2col pfrt_fake_im2col
#define pfrt_cuda_col2im pfrt_fake_col2im
#define pfrt_cuda_sum_images pfrt_fake_sum_images
#define pfrt_cuda_max_pool pfrt_fake_max_pool
#define pfrt_cuda_max_pool_arg pfrt_fake_max_pool_arg
#define pfrt_cuda_max_pool_grad pfrt_fake_max_pool_grad
#define pfrt_cuda_avg_pool pfrt_fake_avg_pool
#define pfrt_cuda_avg_pool_grad pfrt_fake_avg_pool_grad
#define pfrt_cuda_global_avg_pool pfrt_fake_global_avg_pool
#define pfrt_cuda_bn_runs pfrt_fake_bn_runs
#define pfrt_cuda_bn_train_channels pfrt_fake_bn_train_channels
#define pfrt_cuda_bn_eval_channels pfrt_fake_bn_eval_channels
#define pfrt_cuda_bn_affine pfrt_fake_bn_affine
#define pfrt_cuda_bn_grad_input pfrt_fake_bn_grad_input
#define pfrt_cuda_set_scalar pfrt_fake_set_scalar
#define pfrt_cuda_sub pfrt_fake_sub
#define pfrt_cuda_div pfrt_fake_div
#define pfrt_cuda_masked_fill pfrt_fake_masked_fill
#define pfrt_cuda_compare pfrt_fake_compare
#define pfrt_cuda_logical pfrt_fake_logical
#define pfrt_cuda_where pfrt_fake_where
#define pfrt_cuda_cast pfrt_fake_cast
#define pfrt_cuda_softmax pfrt_fake_softmax
#define pfrt_cuda_softmax_grad pfrt_fake_softmax_grad
#define pfrt_cuda_ln_stats pfrt_fake_ln_stats
#define pfrt_cuda_ln_affine pfrt_fake_ln_affine
#define pfrt_cuda_ln_grad_input pfrt_fake_ln_grad_input
#define pfrt_cuda_ln_grad_params pfrt_fake_ln_grad_params
#define pfrt_cuda_copy_elems pfrt_fake_copy_elems
#define pfrt_cuda_copy_blocks pfrt_fake_copy_blocks
#define pfrt_cuda_embedding_check pfrt_fake_embedding_check
#define pfrt_cuda_embedding pfrt_fake_embedding
#define pfrt_cuda_embedding_index pfrt_fake_embedding_index
#define pfrt_cuda_embedding_grad pfrt_fake_embedding_grad
#define pfrt_cuda_xent_rows_ignore pfrt_fake_xent_rows_ignore
#define pfrt_cuda_xent_total_ignore pfrt_fake_xent_total_ignore
#define pfrt_cuda_xent_grad_scale pfrt_fake_xent_grad_scale
#define pfrt_cuda_xent_grad_ignore pfrt_fake_xent_grad_ignore
#define pfrt_cuda_count_kept pfrt_fake_count_kept
#define pfrt_cuda_vxent_max pfrt_fake_vxent_max
#define pfrt_cuda_vxent_sums pfrt_fake_vxent_sums
#define pfrt_cuda_vxent_loss pfrt_fake_vxent_loss
#define pfrt_cuda_vxent_scale pfrt_fake_vxent_scale
#define pfrt_cuda_vxent_grad pfrt_fake_vxent_grad
#define pfrt_cuda_dropout pfrt_fake_dropout
#define pfrt_cuda_attention pfrt_fake_attention
#define pfrt_cuda_attention_delta pfrt_fake_attention_delta
#define pfrt_cuda_attention_grad_kv pfrt_fake_attention_grad_kv
#define pfrt_cuda_attention_grad_q pfrt_fake_attention_grad_q

#include "../kernels/Kernels.cu"

namespace {

template <class... A, size_t... I>
std::function<void()> bindArgs(void (*f)(A...), void **args,
                               std::index_sequence<I...>) {
  // The argument values now: cuLaunchKernel copies them at the call.
  auto values = std::make_tuple(*static_cast<std::decay_t<A> *>(args[I])...);
  return [f, values] { std::apply(f, values); };
}

template <class... A>
std::function<std::function<void()>(void **)> hostKernel(void (*f)(A...)) {
  return [f](void **args) {
    return bindArgs(f, args, std::index_sequence_for<A...>{});
  };
}

} // namespace

namespace pfrt {
namespace fake {
const HostKernel kHostKernels[] = {
    {"pfrt_cuda_relu", hostKernel(pfrt_cuda_relu)},
    {"pfrt_cuda_relu_grad", hostKernel(pfrt_cuda_relu_grad)},
    {"pfrt_cuda_add", hostKernel(pfrt_cuda_add)},
    {"pfrt_cuda_mul", hostKernel(pfrt_cuda_mul)},
    {"pfrt_cuda_scale", hostKernel(pfrt_cuda_scale)},
    {"pfrt_cuda_copy", hostKernel(pfrt_cuda_copy)},
    {"pfrt_cuda_fill", hostKernel(pfrt_cuda_fill)},
    {"pfrt_cuda_split_tf32", hostKernel(pfrt_cuda_split_tf32)},
    {"pfrt_cuda_bias_add", hostKernel(pfrt_cuda_bias_add)},
    {"pfrt_cuda_bias_rows", hostKernel(pfrt_cuda_bias_rows)},
    {"pfrt_cuda_reduce_sum", hostKernel(pfrt_cuda_reduce_sum)},
    {"pfrt_cuda_reduce_column_part", hostKernel(pfrt_cuda_reduce_column_part)},
    {"pfrt_cuda_reduce_run_part", hostKernel(pfrt_cuda_reduce_run_part)},
    {"pfrt_cuda_reduce_parts_sum", hostKernel(pfrt_cuda_reduce_parts_sum)},
    {"pfrt_cuda_xent_rows", hostKernel(pfrt_cuda_xent_rows)},
    {"pfrt_cuda_xent_total", hostKernel(pfrt_cuda_xent_total)},
    {"pfrt_cuda_xent_check_labels", hostKernel(pfrt_cuda_xent_check_labels)},
    {"pfrt_cuda_xent_stats", hostKernel(pfrt_cuda_xent_stats)},
    {"pfrt_cuda_xent_grad", hostKernel(pfrt_cuda_xent_grad)},
    {"pfrt_cuda_sgd", hostKernel(pfrt_cuda_sgd)},
    {"pfrt_cuda_sgd_multi", hostKernel(pfrt_cuda_sgd_multi)},
    {"pfrt_cuda_adam_multi", hostKernel(pfrt_cuda_adam_multi)},
    {"pfrt_cuda_adam", hostKernel(pfrt_cuda_adam)},
    {"pfrt_cuda_activation", hostKernel(pfrt_cuda_activation)},
    {"pfrt_cuda_transpose", hostKernel(pfrt_cuda_transpose)},
    {"pfrt_cuda_im2col", hostKernel(pfrt_cuda_im2col)},
    {"pfrt_cuda_col2im", hostKernel(pfrt_cuda_col2im)},
    {"pfrt_cuda_sum_images", hostKernel(pfrt_cuda_sum_images)},
    {"pfrt_cuda_max_pool", hostKernel(pfrt_cuda_max_pool)},
    {"pfrt_cuda_max_pool_arg", hostKernel(pfrt_cuda_max_pool_arg)},
    {"pfrt_cuda_max_pool_grad", hostKernel(pfrt_cuda_max_pool_grad)},
    {"pfrt_cuda_avg_pool", hostKernel(pfrt_cuda_avg_pool)},
    {"pfrt_cuda_avg_pool_grad", hostKernel(pfrt_cuda_avg_pool_grad)},
    {"pfrt_cuda_global_avg_pool", hostKernel(pfrt_cuda_global_avg_pool)},
    {"pfrt_cuda_global_avg_pool_grad",
     hostKernel(pfrt_cuda_global_avg_pool_grad)},
    {"pfrt_cuda_bn_runs", hostKernel(pfrt_cuda_bn_runs)},
    {"pfrt_cuda_bn_train_channels", hostKernel(pfrt_cuda_bn_train_channels)},
    {"pfrt_cuda_bn_eval_channels", hostKernel(pfrt_cuda_bn_eval_channels)},
    {"pfrt_cuda_bn_grad_input_channels",
     hostKernel(pfrt_cuda_bn_grad_input_channels)},
    {"pfrt_cuda_bn_grad_params_channels",
     hostKernel(pfrt_cuda_bn_grad_params_channels)},
    {"pfrt_cuda_bn_affine", hostKernel(pfrt_cuda_bn_affine)},
    {"pfrt_cuda_bn_grad_input", hostKernel(pfrt_cuda_bn_grad_input)},
    {"pfrt_cuda_set_scalar", hostKernel(pfrt_cuda_set_scalar)},
    {"pfrt_cuda_sub", hostKernel(pfrt_cuda_sub)},
    {"pfrt_cuda_div", hostKernel(pfrt_cuda_div)},
    {"pfrt_cuda_masked_fill", hostKernel(pfrt_cuda_masked_fill)},
    {"pfrt_cuda_softmax", hostKernel(pfrt_cuda_softmax)},
    {"pfrt_cuda_softmax_grad", hostKernel(pfrt_cuda_softmax_grad)},
    {"pfrt_cuda_ln_stats", hostKernel(pfrt_cuda_ln_stats)},
    {"pfrt_cuda_ln_affine", hostKernel(pfrt_cuda_ln_affine)},
    {"pfrt_cuda_ln_grad_input", hostKernel(pfrt_cuda_ln_grad_input)},
    {"pfrt_cuda_ln_grad_params", hostKernel(pfrt_cuda_ln_grad_params)},
    {"pfrt_cuda_copy_elems", hostKernel(pfrt_cuda_copy_elems)},
    {"pfrt_cuda_copy_blocks", hostKernel(pfrt_cuda_copy_blocks)},
    {"pfrt_cuda_embedding_check", hostKernel(pfrt_cuda_embedding_check)},
    {"pfrt_cuda_embedding", hostKernel(pfrt_cuda_embedding)},
    {"pfrt_cuda_embedding_index", hostKernel(pfrt_cuda_embedding_index)},
    {"pfrt_cuda_embedding_grad", hostKernel(pfrt_cuda_embedding_grad)},
    {"pfrt_cuda_xent_rows_ignore", hostKernel(pfrt_cuda_xent_rows_ignore)},
    {"pfrt_cuda_xent_total_ignore", hostKernel(pfrt_cuda_xent_total_ignore)},
    {"pfrt_cuda_xent_grad_scale", hostKernel(pfrt_cuda_xent_grad_scale)},
    {"pfrt_cuda_xent_grad_ignore", hostKernel(pfrt_cuda_xent_grad_ignore)},
    {"pfrt_cuda_count_kept", hostKernel(pfrt_cuda_count_kept)},
    {"pfrt_cuda_vxent_max", hostKernel(pfrt_cuda_vxent_max)},
    {"pfrt_cuda_vxent_sums", hostKernel(pfrt_cuda_vxent_sums)},
    {"pfrt_cuda_vxent_loss", hostKernel(pfrt_cuda_vxent_loss)},
    {"pfrt_cuda_vxent_scale", hostKernel(pfrt_cuda_vxent_scale)},
    {"pfrt_cuda_vxent_grad", hostKernel(pfrt_cuda_vxent_grad)},
    {"pfrt_cuda_dropout", hostKernel(pfrt_cuda_dropout)},
    {"pfrt_cuda_attention", hostKernel(pfrt_cuda_attention)},
    {"pfrt_cuda_attention_delta", hostKernel(pfrt_cuda_attention_delta)},
    {"pfrt_cuda_attention_grad_kv", hostKernel(pfrt_cuda_attention_grad_kv)},
    {"pfrt_cuda_attention_grad_q", hostKernel(pfrt_cuda_attention_grad_q)},
    {"pfrt_cuda_compare", hostKernel(pfrt_cuda_compare)},
    {"pfrt_cuda_logical", hostKernel(pfrt_cuda_logical)},
    {"pfrt_cuda_where", hostKernel(pfrt_cuda_where)},
    {"pfrt_cuda_cast", hostKernel(pfrt_cuda_cast)},
    {nullptr, nullptr},
};
} // namespace fake
} // namespace pfrt
