//===- CudaStub.cpp - pfrt_cuda_* in a runtime built without CUDA ---------===//
//
// The ABI stays the same: pfrt_cuda_init says why it cannot run (exit 2),
// the rest are unreachable without it and fatal if called.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdio>
#include <cstdlib>

using namespace pfrt;

namespace {
[[noreturn]] void noCuda(const char *fn) {
  fatal("%s: libpfrt was built without CUDA support (PFRT_ENABLE_CUDA=OFF)",
        fn);
}
} // namespace

extern "C" {
int pfrt_cuda_device_count(void) { return 0; }
int pfrt_cuda_init(int64_t) {
  std::fprintf(stderr, "pfrt: rank 0: libpfrt was built without CUDA support "
                       "(PFRT_ENABLE_CUDA=OFF)\n");
  std::exit(2);
}
int pfrt_cuda_finalize(void) { return 0; }
int pfrt_cuda_arena_init(int64_t) { noCuda("pfrt_cuda_arena_init"); }
void *pfrt_cuda_arena_ptr(int64_t, int64_t) { noCuda("pfrt_cuda_arena_ptr"); }
int64_t pfrt_cuda_arena_high_water(void) { return 0; }
int pfrt_cuda_h2d(void *, const void *, int64_t) { noCuda("pfrt_cuda_h2d"); }
int pfrt_cuda_d2h(void *, const void *, int64_t) { noCuda("pfrt_cuda_d2h"); }
int pfrt_cuda_memset(void *, int32_t, int64_t) { noCuda("pfrt_cuda_memset"); }
int pfrt_cuda_synchronize(void) { noCuda("pfrt_cuda_synchronize"); }
void *pfrt_cuda_module_load(const void *) { noCuda("pfrt_cuda_module_load"); }
void *pfrt_cuda_function(void *, const char *) { noCuda("pfrt_cuda_function"); }
int pfrt_cuda_launch(void *, int64_t, int64_t, int64_t, int64_t, int64_t,
                     int64_t, int64_t, void **) {
  noCuda("pfrt_cuda_launch");
}
int pfrt_cuda_gemm(int32_t, int32_t, int64_t, int64_t, int64_t, float,
                   const void *, int64_t, const void *, int64_t, float, void *,
                   int64_t, int64_t, int64_t, int64_t, int64_t, int32_t, void *,
                   const void *, int32_t) {
  noCuda("pfrt_cuda_gemm");
}
int pfrt_cuda_gemm_typed(int32_t, int32_t, int32_t, int32_t, int64_t, int64_t,
                         int64_t, float, const void *, int64_t, const void *,
                         int64_t, float, void *, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int32_t, void *, const void *,
                         int32_t) {
  noCuda("pfrt_cuda_gemm_typed");
}
int pfrt_cuda_graphs_enabled(void) { return 0; }
int pfrt_cuda_graph_begin(void) { noCuda("pfrt_cuda_graph_begin"); }
int pfrt_cuda_graph_end(void) { noCuda("pfrt_cuda_graph_end"); }
int pfrt_cuda_graph_launch(void) { noCuda("pfrt_cuda_graph_launch"); }

// The device twins (pfrt_device.def). pfrt_cuda_arena_plan is where a GPU
// rank starts, so it fails like pfrt_cuda_init (exit 2, one line).
int pfrt_cuda_arena_plan(int64_t) { return pfrt_cuda_init(0); }
int pfrt_cuda_active(void) { return 0; }
int pfrt_cuda_comm_groups(const int64_t *, int64_t) {
  noCuda("pfrt_cuda_comm_groups");
}
int pfrt_cuda_p2p_plan(const int64_t *, int64_t) {
  noCuda("pfrt_cuda_p2p_plan");
}
int pfrt_cuda_broadcast_dtype(void *, int64_t, int32_t, int64_t,
                              const int64_t *, int64_t) {
  noCuda("pfrt_cuda_broadcast_dtype");
}
int pfrt_cuda_reduce_sum_dtype(const void *, void *, int64_t, int32_t, int64_t,
                               const int64_t *, int64_t) {
  noCuda("pfrt_cuda_reduce_sum_dtype");
}
int pfrt_cuda_all_reduce_sum(const float *, float *, int64_t, const int64_t *,
                             int64_t) {
  noCuda("pfrt_cuda_all_reduce_sum");
}
int pfrt_cuda_all_reduce_start(const float *, float *, int64_t, const int64_t *,
                               int64_t, int64_t) {
  noCuda("pfrt_cuda_all_reduce_start");
}
int pfrt_cuda_all_reduce_wait(int64_t) { noCuda("pfrt_cuda_all_reduce_wait"); }
int pfrt_cuda_all_reduce_sum_dtype(const void *, void *, int64_t, int32_t,
                                   const int64_t *, int64_t) {
  noCuda("pfrt_cuda_all_reduce_sum_dtype");
}
int pfrt_cuda_all_reduce_start_dtype(const void *, void *, int64_t, int32_t,
                                     const int64_t *, int64_t, int64_t) {
  noCuda("pfrt_cuda_all_reduce_start_dtype");
}
int pfrt_cuda_all_gather(const float *, float *, int64_t, const int64_t *,
                         int64_t) {
  noCuda("pfrt_cuda_all_gather");
}
int pfrt_cuda_reduce_scatter_sum(const float *, float *, int64_t,
                                 const int64_t *, int64_t) {
  noCuda("pfrt_cuda_reduce_scatter_sum");
}
int pfrt_cuda_all_to_all(const float *, float *, int64_t, const int64_t *,
                         int64_t) {
  noCuda("pfrt_cuda_all_to_all");
}
int pfrt_cuda_broadcast_i64(int64_t *, int64_t, int64_t, const int64_t *,
                            int64_t) {
  noCuda("pfrt_cuda_broadcast_i64");
}
int pfrt_cuda_broadcast(float *, int64_t, int64_t, const int64_t *, int64_t) {
  noCuda("pfrt_cuda_broadcast");
}
int pfrt_cuda_reduce_sum(const float *, float *, int64_t, int64_t,
                         const int64_t *, int64_t) {
  noCuda("pfrt_cuda_reduce_sum");
}
int pfrt_cuda_send(const float *, int64_t, int32_t, int32_t) {
  noCuda("pfrt_cuda_send");
}
int pfrt_cuda_recv(float *, int64_t, int32_t, int32_t) {
  noCuda("pfrt_cuda_recv");
}
int pfrt_cuda_isend(const float *, int64_t, int32_t, int32_t) {
  noCuda("pfrt_cuda_isend");
}
int64_t pfrt_cuda_isend_tracked(const float *, int64_t, int32_t, int32_t) {
  noCuda("pfrt_cuda_isend_tracked");
}
int pfrt_cuda_wait_send(int64_t) { noCuda("pfrt_cuda_wait_send"); }
int pfrt_cuda_wait_sends(void) { noCuda("pfrt_cuda_wait_sends"); }
int pfrt_cuda_p2p_batch(const pfrt_p2p_op *, int64_t) {
  noCuda("pfrt_cuda_p2p_batch");
}
int pfrt_cuda_box_all_gather(const void *, void *, int32_t, int64_t,
                             const int64_t *, int64_t, const int64_t *,
                             int64_t) {
  noCuda("pfrt_cuda_box_all_gather");
}
int pfrt_cuda_box_reduce_scatter(const float *, float *, int64_t,
                                 const int64_t *, int64_t, const int64_t *,
                                 int64_t) {
  noCuda("pfrt_cuda_box_reduce_scatter");
}
int pfrt_cuda_box_reduce_scatter_dtype(const void *, void *, int32_t, int64_t,
                                       const int64_t *, int64_t,
                                       const int64_t *, int64_t) {
  noCuda("pfrt_cuda_box_reduce_scatter_dtype");
}
int pfrt_cuda_box_all_to_all(const void *, void *, int32_t, int64_t,
                             const int64_t *, int64_t, int64_t, const int64_t *,
                             int64_t) {
  noCuda("pfrt_cuda_box_all_to_all");
}
int pfrt_cuda_box_slice(const void *, void *, int32_t, int64_t, const int64_t *,
                        int64_t, int64_t, int64_t) {
  noCuda("pfrt_cuda_box_slice");
}
int pfrt_cuda_box_unslice(const void *, void *, int32_t, int64_t,
                          const int64_t *, int64_t, int64_t, int64_t) {
  noCuda("pfrt_cuda_box_unslice");
}
int pfrt_cuda_softmax_xent_vocab(const float *, const int64_t *, float *,
                                 int64_t, int64_t, int64_t, int64_t, int64_t,
                                 int64_t, const int64_t *, int64_t) {
  noCuda("pfrt_cuda_softmax_xent_vocab");
}
int pfrt_cuda_softmax_xent_vocab_grad(const float *, const int64_t *,
                                      const float *, float *, int64_t, int64_t,
                                      int64_t, int64_t, int64_t, int64_t,
                                      const int64_t *, int64_t) {
  noCuda("pfrt_cuda_softmax_xent_vocab_grad");
}
int pfrt_cuda_state_add_part(const char *, const int64_t *, void *) {
  noCuda("pfrt_cuda_state_add_part");
}
int pfrt_cuda_run_step(void (*)(int64_t), int64_t) {
  noCuda("pfrt_cuda_run_step");
}
int pfrt_cuda_generated_kernels(const void *, int64_t, int64_t,
                                const char *const *, const pfrt_host_kernel *,
                                const int64_t *) {
  noCuda("pfrt_cuda_generated_kernels");
}
int pfrt_cuda_launch_generated(int64_t, int64_t, int64_t, void *, void *,
                               void *, void *, void *, void *, void *, void *) {
  noCuda("pfrt_cuda_launch_generated");
}
int pfrt_cuda_init_param(float *, int32_t, double, double, uint64_t, uint64_t,
                         int64_t, const int64_t *, const int64_t *,
                         const int64_t *) {
  noCuda("pfrt_cuda_init_param");
}
int pfrt_cuda_state_register(const char *, int32_t, int64_t, const int64_t *,
                             const int64_t *, const int64_t *, void *) {
  noCuda("pfrt_cuda_state_register");
}
float *pfrt_cuda_scalar(const char *) { noCuda("pfrt_cuda_scalar"); }
void pfrt_cuda_report_loss(const float *, int32_t) {
  noCuda("pfrt_cuda_report_loss");
}
void pfrt_cuda_report_output(int32_t, const void *, int64_t) {
  noCuda("pfrt_cuda_report_output");
}
int pfrt_cuda_load_input(int64_t, void *, int64_t, int32_t, int64_t, uint64_t,
                         uint64_t, int64_t, const int64_t *) {
  noCuda("pfrt_cuda_load_input");
}
int pfrt_cuda_zero_partial_input(void *, int64_t) {
  noCuda("pfrt_cuda_zero_partial_input");
}
int pfrt_cuda_load_input_boxes(int64_t, void *, int64_t, int32_t, int64_t,
                               uint64_t, uint64_t, int64_t, const int64_t *,
                               int64_t, const int64_t *, const int64_t *) {
  noCuda("pfrt_cuda_load_input_boxes");
}
int pfrt_cuda_load_input_part(int64_t, void *, int64_t, int64_t, int64_t,
                              int32_t, int64_t, uint64_t, uint64_t, int64_t,
                              const int64_t *, int64_t, const int64_t *,
                              const int64_t *) {
  noCuda("pfrt_cuda_load_input_part");
}
void pfrt_cuda_k_relu(const float *, float *, int64_t) {
  noCuda("pfrt_cuda_k_relu");
}
void pfrt_cuda_k_relu_grad(const float *, const float *, float *, int64_t) {
  noCuda("pfrt_cuda_k_relu_grad");
}
void pfrt_cuda_k_add(const float *, const float *, float *, int64_t) {
  noCuda("pfrt_cuda_k_add");
}
void pfrt_cuda_k_mul(const float *, const float *, float *, int64_t) {
  noCuda("pfrt_cuda_k_mul");
}
void pfrt_cuda_k_sub(const float *, const float *, float *, int64_t) {
  noCuda("pfrt_cuda_k_sub");
}
void pfrt_cuda_k_div(const float *, const float *, float *, int64_t) {
  noCuda("pfrt_cuda_k_div");
}
void pfrt_cuda_k_masked_fill(const float *, const void *, float *, int64_t,
                             int32_t, double) {
  noCuda("pfrt_cuda_k_masked_fill");
}
void pfrt_cuda_k_compare(const void *, const void *, uint8_t *, int64_t,
                         int32_t, int32_t) {
  noCuda("pfrt_cuda_k_compare");
}
void pfrt_cuda_k_logical(const uint8_t *, const uint8_t *, uint8_t *, int64_t,
                         int32_t) {
  noCuda("pfrt_cuda_k_logical");
}
void pfrt_cuda_k_where(const uint8_t *, const void *, const void *, void *,
                       int64_t, int32_t) {
  noCuda("pfrt_cuda_k_where");
}
void pfrt_cuda_k_cast(const void *, int32_t, void *, int32_t, int64_t) {
  noCuda("pfrt_cuda_k_cast");
}
void pfrt_cuda_k_softmax(const float *, float *, int64_t, int64_t, int64_t,
                         int32_t) {
  noCuda("pfrt_cuda_k_softmax");
}
void pfrt_cuda_k_softmax_grad(const float *, const float *, float *, int64_t,
                              int64_t, int64_t, int32_t) {
  noCuda("pfrt_cuda_k_softmax_grad");
}
void pfrt_cuda_k_layer_norm(const float *, const float *, const float *,
                            float *, int64_t, int64_t, double) {
  noCuda("pfrt_cuda_k_layer_norm");
}
void pfrt_cuda_k_layer_norm_grad_input(const float *, const float *,
                                       const float *, float *, int64_t, int64_t,
                                       double) {
  noCuda("pfrt_cuda_k_layer_norm_grad_input");
}
void pfrt_cuda_k_layer_norm_grad_params(const float *, const float *, float *,
                                        float *, int64_t, int64_t, double) {
  noCuda("pfrt_cuda_k_layer_norm_grad_params");
}
void pfrt_cuda_k_scale(const float *, float *, int64_t, double) {
  noCuda("pfrt_cuda_k_scale");
}
void pfrt_cuda_k_copy(const float *, float *, int64_t) {
  noCuda("pfrt_cuda_k_copy");
}
void pfrt_cuda_k_fill(float *, int64_t, double) { noCuda("pfrt_cuda_k_fill"); }
void pfrt_cuda_k_bias_add(const float *, const float *, float *, int64_t,
                          int64_t, int64_t) {
  noCuda("pfrt_cuda_k_bias_add");
}
void pfrt_cuda_k_bias_add_relu(const float *, const float *, float *, int64_t,
                               int64_t, int64_t) {
  noCuda("pfrt_cuda_k_bias_add_relu");
}
void pfrt_cuda_k_reduce_sum(const float *, float *, int64_t, const int64_t *,
                            const int8_t *) {
  noCuda("pfrt_cuda_k_reduce_sum");
}
void pfrt_cuda_k_matmul(const float *, const float *, float *, int64_t, int64_t,
                        int64_t, int64_t, int64_t, int32_t, int32_t) {
  noCuda("pfrt_cuda_k_matmul");
}
void pfrt_cuda_k_matmul_acc(const float *, const float *, float *, int64_t,
                            int64_t, int64_t, int64_t, int64_t, int32_t,
                            int32_t) {
  noCuda("pfrt_cuda_k_matmul_acc");
}
void pfrt_cuda_k_matmul_bias(const float *, const float *, const float *,
                             float *, int64_t, int64_t, int64_t, int64_t,
                             int64_t, int32_t, int32_t) {
  noCuda("pfrt_cuda_k_matmul_bias");
}
void pfrt_cuda_k_matmul_bgrad(const float *, const float *, float *, float *,
                              int64_t, int64_t, int64_t, int32_t) {
  noCuda("pfrt_cuda_k_matmul_bgrad");
}
void pfrt_cuda_k_matmul_bias_relu(const float *, const float *, const float *,
                                  float *, int64_t, int64_t, int64_t, int64_t,
                                  int64_t, int32_t, int32_t) {
  noCuda("pfrt_cuda_k_matmul_bias_relu");
}
void pfrt_cuda_k_matmul_typed(const void *, const void *, void *, int64_t,
                              int64_t, int64_t, int64_t, int64_t, int32_t,
                              int32_t, int32_t, int32_t, int32_t) {
  noCuda("pfrt_cuda_k_matmul_typed");
}
void pfrt_cuda_k_softmax_xent(const float *, const int64_t *, float *, int64_t,
                              int64_t) {
  noCuda("pfrt_cuda_k_softmax_xent");
}
void pfrt_cuda_k_softmax_xent_grad(const float *, const int64_t *,
                                   const float *, float *, int64_t, int64_t) {
  noCuda("pfrt_cuda_k_softmax_xent_grad");
}
void pfrt_cuda_k_softmax_xent_ignore(const float *, const int64_t *, float *,
                                     int64_t, int64_t, int64_t) {
  noCuda("pfrt_cuda_k_softmax_xent_ignore");
}
void pfrt_cuda_k_softmax_xent_grad_ignore(const float *, const int64_t *,
                                          const float *, float *, int64_t,
                                          int64_t, int64_t) {
  noCuda("pfrt_cuda_k_softmax_xent_grad_ignore");
}
void pfrt_cuda_k_softmax_xent_sum(const float *, const int64_t *, float *,
                                  int64_t, int64_t, int64_t) {
  noCuda("pfrt_cuda_k_softmax_xent_sum");
}
void pfrt_cuda_k_softmax_xent_grad_sum(const float *, const int64_t *,
                                       const float *, float *, int64_t, int64_t,
                                       int64_t) {
  noCuda("pfrt_cuda_k_softmax_xent_grad_sum");
}
void pfrt_cuda_k_count_kept(const int64_t *, float *, int64_t, int64_t) {
  noCuda("pfrt_cuda_k_count_kept");
}
void pfrt_cuda_k_embedding(const float *, const int64_t *, float *, int64_t,
                           int64_t, int64_t) {
  noCuda("pfrt_cuda_k_embedding");
}
void pfrt_cuda_k_embedding_grad(const int64_t *, const float *, float *,
                                int64_t, int64_t, int64_t) {
  noCuda("pfrt_cuda_k_embedding_grad");
}
void pfrt_cuda_k_embedding_rows(const float *, const int64_t *, float *,
                                int64_t, int64_t, int64_t, int64_t, int64_t) {
  noCuda("pfrt_cuda_k_embedding_rows");
}
void pfrt_cuda_k_embedding_grad_rows(const int64_t *, const float *, float *,
                                     int64_t, int64_t, int64_t, int64_t,
                                     int64_t) {
  noCuda("pfrt_cuda_k_embedding_grad_rows");
}
void pfrt_cuda_k_broadcast(const void *, void *, int64_t, const int64_t *,
                           const int64_t *, int64_t) {
  noCuda("pfrt_cuda_k_broadcast");
}
int pfrt_cuda_copy_box(const void *, const int64_t *, const int64_t *, void *,
                       const int64_t *, const int64_t *, const int64_t *,
                       int64_t, int32_t) {
  noCuda("pfrt_cuda_copy_box");
}
int pfrt_cuda_k_dropout(const float *, float *, int64_t, double, uint64_t,
                        uint64_t, int64_t, int64_t, const int64_t *,
                        const int64_t *, const int64_t *) {
  noCuda("pfrt_cuda_k_dropout");
}
int pfrt_cuda_k_attention(const float *, const float *, const float *,
                          const void *, int32_t, const int64_t *, float *,
                          float *, const int64_t *, double, int32_t, double,
                          uint64_t, uint64_t, int64_t, const int64_t *) {
  noCuda("pfrt_cuda_k_attention");
}
int pfrt_cuda_k_attention_grad(const float *, const float *, const float *,
                               const void *, int32_t, const int64_t *,
                               const float *, const float *, const float *,
                               float *, float *, float *, const int64_t *,
                               double, int32_t, double, uint64_t, uint64_t,
                               int64_t, const int64_t *) {
  noCuda("pfrt_cuda_k_attention_grad");
}
int pfrt_cuda_cudnn_attention(const void *, const void *, const void *,
                              const float *, const int64_t *, void *, float *,
                              const int64_t *, int32_t, double, int32_t) {
  noCuda("pfrt_cuda_cudnn_attention");
}
int pfrt_cuda_cudnn_attention_grad(const void *, const void *, const void *,
                                   const float *, const int64_t *, const void *,
                                   const float *, const void *, void *, void *,
                                   void *, const int64_t *, int32_t, double,
                                   int32_t) {
  noCuda("pfrt_cuda_cudnn_attention_grad");
}
int64_t pfrt_cuda_cudnn_plans_built(void) { return 0; }
void pfrt_cuda_k_sgd(const float *, const float *, const float *, const float *,
                     const float *, float *, float *, int64_t, double, double,
                     double, int32_t) {
  noCuda("pfrt_cuda_k_sgd");
}
void pfrt_cuda_k_adam(const float *, const float *, const float *,
                      const float *, const float *, const float *, float *,
                      float *, float *, int64_t, double, double, double, double,
                      int32_t, int32_t) {
  noCuda("pfrt_cuda_k_adam");
}
void pfrt_cuda_k_sgd_multi(void *const *, const int64_t *, const int8_t *,
                           int64_t, const float *, const float *, double,
                           double, double, int32_t) {
  noCuda("pfrt_cuda_k_sgd_multi");
}
void pfrt_cuda_k_adam_multi(void *const *, const int64_t *, const int8_t *,
                            int64_t, const float *, const float *, double,
                            double, double, double, int32_t, int32_t) {
  noCuda("pfrt_cuda_k_adam_multi");
}
void pfrt_cuda_k_activation(int32_t, const float *, float *, int64_t) {
  noCuda("pfrt_cuda_k_activation");
}
void pfrt_cuda_k_activation_grad(int32_t, const float *, const float *, float *,
                                 int64_t) {
  noCuda("pfrt_cuda_k_activation_grad");
}
void pfrt_cuda_k_transpose(const float *, float *, int64_t, const int64_t *,
                           const int64_t *) {
  noCuda("pfrt_cuda_k_transpose");
}
void pfrt_cuda_k_conv2d(const float *, const float *, float *,
                        const int64_t[16]) {
  noCuda("pfrt_cuda_k_conv2d");
}
void pfrt_cuda_k_conv2d_grad_input(const float *, const float *, float *,
                                   const int64_t[16]) {
  noCuda("pfrt_cuda_k_conv2d_grad_input");
}
void pfrt_cuda_k_conv2d_grad_weight(const float *, const float *, float *,
                                    const int64_t[16]) {
  noCuda("pfrt_cuda_k_conv2d_grad_weight");
}
void pfrt_cuda_k_max_pool2d(const float *, float *, const int64_t[12]) {
  noCuda("pfrt_cuda_k_max_pool2d");
}
void pfrt_cuda_k_max_pool2d_grad(const float *, const float *, float *,
                                 const int64_t[12]) {
  noCuda("pfrt_cuda_k_max_pool2d_grad");
}
void pfrt_cuda_k_avg_pool2d(const float *, float *, const int64_t[12]) {
  noCuda("pfrt_cuda_k_avg_pool2d");
}
void pfrt_cuda_k_avg_pool2d_grad(const float *, float *, const int64_t[12]) {
  noCuda("pfrt_cuda_k_avg_pool2d_grad");
}
void pfrt_cuda_k_global_avg_pool(const float *, float *, int64_t, int64_t,
                                 int64_t) {
  noCuda("pfrt_cuda_k_global_avg_pool");
}
void pfrt_cuda_k_global_avg_pool_grad(const float *, float *, int64_t, int64_t,
                                      int64_t) {
  noCuda("pfrt_cuda_k_global_avg_pool_grad");
}
void pfrt_cuda_k_batch_norm(const float *, const float *, const float *,
                            const float *, const float *, float *, float *,
                            float *, int64_t, int64_t, int64_t, double,
                            double) {
  noCuda("pfrt_cuda_k_batch_norm");
}
void pfrt_cuda_k_batch_norm_eval(const float *, const float *, const float *,
                                 const float *, const float *, float *, int64_t,
                                 int64_t, int64_t, double) {
  noCuda("pfrt_cuda_k_batch_norm_eval");
}
void pfrt_cuda_k_batch_norm_grad_input(const float *, const float *,
                                       const float *, float *, int64_t, int64_t,
                                       int64_t, double) {
  noCuda("pfrt_cuda_k_batch_norm_grad_input");
}
void pfrt_cuda_k_batch_norm_grad_params(const float *, const float *, float *,
                                        float *, int64_t, int64_t, int64_t,
                                        double) {
  noCuda("pfrt_cuda_k_batch_norm_grad_params");
}
} // extern "C"
