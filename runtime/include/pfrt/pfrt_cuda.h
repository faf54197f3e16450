/*===- pfrt/pfrt_cuda.h - PipeFlow runtime: one GPU per rank -------------===*
 *
 * The GPU side of libpfrt's C ABI, for code the GPU lowering emits and for
 * tests. Pure C; no CUDA header leaks through it (device addresses are
 * `void *`, modules and functions opaque handles).
 *
 * Conventions
 * -----------
 *  - The CUDA driver (libcuda.so.1) and cuBLASLt (libcublasLt.so.13) are
 *    loaded at run time, never linked: every executable starts on a machine
 *    without a GPU. Search order: the directories in PFRT_CUDA_LIB_DIR
 *    (colon-separated), then the loader's default path (skipped when
 *    PFRT_CUDA_NO_DEFAULT_PATH=1), then the NVIDIA pip wheels' lib
 *    directories (.../site-packages/nvidia/<package>/lib under the system's
 *    and the user's Python prefixes).
 *  - pfrt_cuda_init is the only entry point that may fail for lack of a GPU:
 *    without a driver, without cuBLASLt, or without a device it prints one
 *    line, `pfrt: rank R: <what is missing and where it looked>`, and the
 *    process exits with status 2. Every other error (a failed CUDA or
 *    cuBLASLt call, a bad argument) is fatal like the rest of the runtime
 *    (pfrt.h), naming the call and CUDA's error name.
 *  - One device per process, one compute stream; every operation is
 *    enqueued on that stream (copies are asynchronous; pfrt_cuda_d2h waits
 *    for its copy). Single-threaded, like the rest of the runtime.
 *  - Built without CUDA support (PFRT_ENABLE_CUDA=OFF), the functions exist
 *    and pfrt_cuda_init fails with status 2 saying so.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PFRT_PFRT_CUDA_H
#define PFRT_PFRT_CUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Devices the driver sees; 0 without a driver (never fails). */
int pfrt_cuda_device_count(void);

/* Loads the driver and cuBLASLt, makes `device`'s primary context current
 * and creates the compute stream and a cuBLASLt handle with its workspace.
 * The caller picks the device (the lowering uses rank mod device count).
 * Exits with status 2, naming what is missing, on a machine without them. */
int pfrt_cuda_init(int64_t device);
int pfrt_cuda_finalize(void);

/* The device arena of the static memory plan: one cuMemAlloc of `bytes`
 * at start-up (an error naming the bytes asked and the device's free and
 * total bytes when it cannot), zeroed. pfrt_cuda_arena_ptr gives base +
 * offset for a buffer of `bytes`, checked against the plan, and records the
 * high-water mark. */
int pfrt_cuda_arena_init(int64_t bytes);
void *pfrt_cuda_arena_ptr(int64_t offset, int64_t bytes);
int64_t pfrt_cuda_arena_high_water(void);

/* Host <-> device copies and fills on the compute stream; d2h waits. */
int pfrt_cuda_h2d(void *dst, const void *src, int64_t bytes);
int pfrt_cuda_d2h(void *dst, const void *src, int64_t bytes);
int pfrt_cuda_memset(void *dst, int32_t value, int64_t bytes);
int pfrt_cuda_synchronize(void);

/* Kernels: a module from an image (PTX text, NUL-terminated, or a cubin),
 * a function of it by name, and a launch on the compute stream with
 * `args` as cuLaunchKernel takes them (an array of pointers to each
 * argument). */
void *pfrt_cuda_module_load(const void *image);
void *pfrt_cuda_function(void *module, const char *name);
int pfrt_cuda_launch(void *function, int64_t gx, int64_t gy, int64_t gz,
                     int64_t bx, int64_t by, int64_t bz, int64_t shared_bytes,
                     void **args);

/* Epilogues of pfrt_cuda_gemm (cuBLASLt's): */
#define PFRT_EPILOGUE_NONE 0
#define PFRT_EPILOGUE_RELU 1        /* C = relu(AB + beta C) */
#define PFRT_EPILOGUE_BIAS 2        /* C = AB + bias (bias per column n) */
#define PFRT_EPILOGUE_RELU_BIAS 3   /* C = relu(AB + bias) */
#define PFRT_EPILOGUE_DRELU_BGRAD 4 /* C = (AB) * relu'(aux); bias = colsum */
#define PFRT_EPILOGUE_BGRADB 5      /* C = AB; bias = the sums of B's rows */

/* Row-major float32 GEMM on the compute stream:
 *   C[b] = alpha op(A[b]) op(B[b]) + beta C[b],  b < batch,
 * op(X) = X^T when tX; A is M x K after op, B is K x N, C is M x N; lda,
 * ldb, ldc are row strides and strideA/b/c the batch strides (elements).
 * beta = 1 accumulates (the weight gradient into its buffer). `bias` and
 * `aux` as the epilogue needs them (else NULL). tf32 != 0 allows TF32
 * tensor-core math (CUBLAS_COMPUTE_32F_FAST_TF32); 0 is exact float32
 * unless the run asks for TF32 everywhere (PFRT_CUDA_TF32=1: pf-run --tf32,
 * an executable's --tf32).
 * Descriptors and the chosen algorithm are cached per shape, so a replayed
 * step does no setup. The algorithm is cuBLASLt's heuristic's first
 * answer, or under PFRT_CUDA_GEMM_TUNE (pf-run --gemm-tune) the fastest of
 * up to 8 answers timed on scratch buffers at the shape's first use; with
 * a file's path there the choices are kept in it (keyed by device and
 * cuBLASLt version) and reused, so runs with one file give the same bits.  *
 * Returns 0, or 1 without running anything for the BGRADB epilogue when
 * cuBLASLt has no algorithm for it (the caller computes the GEMM and the
 * reduction itself). */
int pfrt_cuda_gemm(int32_t ta, int32_t tb, int64_t m, int64_t n, int64_t k,
                   float alpha, const void *a, int64_t lda, const void *b,
                   int64_t ldb, float beta, void *c, int64_t ldc, int64_t batch,
                   int64_t strideA, int64_t strideB, int64_t strideC,
                   int32_t epilogue, void *bias, const void *aux, int32_t tf32);
/* pfrt_cuda_gemm with element types (the mixed-precision GEMMs): A and B
 * of abDtype, C (and D, C's buffer) of cDtype, each PFRT_DTYPE_F32,
 * _BF16 or _F16; compute and scale float32 (CUBLAS_COMPUTE_32F: bf16/f16
 * operands run on tensor cores), a bf16/f16 C rounded to nearest even.
 * cuBLASLt's table decides which pairs run (A/B bf16 with C bf16 or f32,
 * A/B f16 with C f16 or f32, all f32); another is fatal, naming the
 * types. A bf16/f16 GEMM's epilogue is NONE, RELU, BIAS or RELU_BIAS
 * (the bias of C's type, cuBLASLt's default) and each of its matrices
 * must be 16-byte aligned (pointer, leading dimension and batch stride
 * in bytes), else fatal. Plans and the tuner's choices are keyed by the
 * types too. pfrt_cuda_gemm is this with F32, F32. */
int pfrt_cuda_gemm_typed(int32_t abDtype, int32_t cDtype, int32_t ta,
                         int32_t tb, int64_t m, int64_t n, int64_t k,
                         float alpha, const void *a, int64_t lda, const void *b,
                         int64_t ldb, float beta, void *c, int64_t ldc,
                         int64_t batch, int64_t strideA, int64_t strideB,
                         int64_t strideC, int32_t epilogue, void *bias,
                         const void *aux, int32_t tf32);

/* CUDA graphs of the compute stream: capture between begin and end, then
 * replay. With PFRT_NO_CUDA_GRAPH=1 (or before end) pfrt_cuda_graph_launch
 * is an error and callers run uncaptured; pfrt_cuda_graphs_enabled says
 * which. The host work a captured twin leaves for each replay (input loads
 * and scalar refreshes before it, reports after it) runs only under
 * pfrt_cuda_run_step, not around a bare pfrt_cuda_graph_launch. */
int pfrt_cuda_graphs_enabled(void);
int pfrt_cuda_graph_begin(void);
int pfrt_cuda_graph_end(void);
int pfrt_cuda_graph_launch(void);

/*===----------------------------------------------------------------------===
 * Device twins (pfrt_device.def): what convert-pf-to-gpu calls where the
 * CPU lowering calls the host row of the same name without `cuda_`. Each
 * has its host row's C signature and meaning (pfrt.h), with device
 * addresses for buffers; host arrays (shapes, offsets, names) stay host.
 * Everything is enqueued on the compute stream.
 *===----------------------------------------------------------------------===*/

/* The device arena of the plan: initialises the GPU on first use (local
 * rank mod the node's device count: MPI_LOCALRANKID / PMI_LOCAL_RANK, else
 * the world rank), then pfrt_cuda_arena_init; a second call with at most
 * the planned size is a no-op. */
int pfrt_cuda_arena_plan(int64_t bytes);
/* Whether this process's program runs on a GPU (pfrt_cuda_arena_plan ran:
 * the compiled pf_init_params of a GPU rank calls it). */
int pfrt_cuda_active(void);
/* One step of a GPU program, for its driver (pfrt_main, the Python front
 * end): `step` (the compiled pf_step) runs uncaptured on the first call, as
 * it allocates what a capture may not (scratch, scalar slots, cuBLASLt
 * plans); the second call captures it as a CUDA graph, and every call from
 * then on replays the graph (PFRT_NO_CUDA_GRAPH=1: every call runs it
 * uncaptured). What the captured step does on the host runs on the calling
 * thread around each replay: its inputs are loaded into page-locked buffers
 * before (the captured copies read them), its losses and outputs reported
 * after. Waits for the device, and makes an error the kernels recorded (an
 * out-of-range label) fatal, before returning. The step function must
 * enqueue the same work every step (the compiled step does: its argument is
 * unused). */
int pfrt_cuda_run_step(void (*step)(int64_t), int64_t k);
/* The generated kernels' table (pfrt_generated_kernels' twin). The device
 * image is loaded at the first launch (the uncaptured first step); with
 * PFRT_CUDA_FAKE=1 a launch runs the kernel's host twin instead, so CI
 * runs the generated arithmetic through the GPU path. */
int pfrt_cuda_generated_kernels(const void *image, int64_t image_bytes,
                                int64_t count, const char *const *names,
                                const pfrt_host_kernel *host_twins,
                                const int64_t *num_pointers);
/* Launches generated kernel `index` on the compute stream: one thread an
 * element, blocks of PFRT_GENERATED_BLOCK threads (the block size the
 * compiler builds the kernels for). */
#define PFRT_GENERATED_BLOCK 256
int pfrt_cuda_launch_generated(int64_t index, int64_t n, int64_t num_pointers,
                               void *p0, void *p1, void *p2, void *p3, void *p4,
                               void *p5, void *p6, void *p7);
/* The job's collective groups, made once at start-up: `table` holds, for
 * each group, its size then its world ranks in group order (len entries in
 * all), the same table on every rank of the job (the compiler emits it from
 * every rank's program into pf_init_params). A call of every rank. Where
 * NCCL serves every rank and no two ranks share a GPU, rank 0's NCCL unique
 * id is broadcast over MPI, the world communicator is made and each group's
 * communicator is split from it (ncclCommSplit); elsewhere the groups are
 * made (or host-staged) at their first collective, as without this call.
 * Called again with the same table (pf_init_params on a checkpoint load) it
 * does nothing; a malformed table or another table is fatal. */
int pfrt_cuda_comm_groups(const int64_t *table, int64_t len);
/* This rank's point-to-point plan, made once at start-up: `table` holds,
 * for each message its step posts, in order, 4 entries: the peer's world
 * rank, 1 for a send or 0 for a receive, the tag, the count (4-byte words)
 * (the compiler emits it from the rank's step into pf_init_params). A call
 * of every rank of the job, each with its own table. Where NCCL serves
 * every rank, no two ranks of a pair share a GPU and every pair's plans
 * agree (a's sends to b are b's receives from a, in order), each pair's
 * NCCL communicators are made here and every step's point-to-point goes
 * over NCCL, the first included, each message checked against the plan
 * (fatal where the step posts another); elsewhere it stays host-staged for
 * the whole run. Called again with the same table it does nothing; a
 * malformed table or another table is fatal. */
int pfrt_cuda_p2p_plan(const int64_t *table, int64_t len);
/* Communication of GPU ranks on the host-staged transport: the device data
 * is copied to the host, the host row (pfrt.h) moves it over MPI, the result
 * is copied back, waiting for the copies; a send's host copy lives until
 * its wait. Any ranks, any GPUs (several ranks may share one). A step that
 * calls them is never captured as a CUDA graph. NCCL is issue 15's. */
int pfrt_cuda_all_reduce_sum(const float *in, float *out, int64_t count,
                             const int64_t *ranks, int64_t n);
/* The split all-reduce (pfrt.h). Over NCCL the start enqueues the sum on
 * a communication stream that waits for the compute stream's work so far,
 * and the wait makes the compute stream wait for it (events: inside a
 * capture, a fork and a join); host-staged, the start runs the whole
 * staged all-reduce and the wait only checks the slot. */
int pfrt_cuda_all_reduce_start(const float *in, float *out, int64_t count,
                               const int64_t *ranks, int64_t n, int64_t slot);
int pfrt_cuda_all_reduce_wait(int64_t slot);
/* pfrt_all_reduce_sum_dtype and _start_dtype (pfrt.h) of device data: over
 * NCCL, ncclBfloat16/ncclFloat16 (NCCL's own sum, in its order); host-staged,
 * the host row's sum, the start running the whole staged all-reduce (the
 * wait only checks the slot). PFRT_DTYPE_F32 is pfrt_cuda_all_reduce_sum's
 * and _start's. */
int pfrt_cuda_all_reduce_sum_dtype(const void *in, void *out, int64_t count,
                                   int32_t dtype, const int64_t *ranks,
                                   int64_t n);
int pfrt_cuda_all_reduce_start_dtype(const void *in, void *out, int64_t count,
                                     int32_t dtype, const int64_t *ranks,
                                     int64_t n, int64_t slot);
int pfrt_cuda_all_gather(const float *in, float *out, int64_t count,
                         const int64_t *ranks, int64_t n);
int pfrt_cuda_reduce_scatter_sum(const float *in, float *out, int64_t count,
                                 const int64_t *ranks, int64_t n);
int pfrt_cuda_all_to_all(const float *in, float *out, int64_t count,
                         const int64_t *ranks, int64_t n);
int pfrt_cuda_broadcast(float *buf, int64_t count, int64_t rootWorldRank,
                        const int64_t *ranks, int64_t n);
int pfrt_cuda_broadcast_i64(int64_t *buf, int64_t count, int64_t rootWorldRank,
                            const int64_t *ranks, int64_t n);
int pfrt_cuda_reduce_sum(const float *in, float *out, int64_t count,
                         int64_t rootWorldRank, const int64_t *ranks,
                         int64_t n);
/* pfrt_broadcast_dtype and pfrt_reduce_sum_dtype (pfrt.h) of device data:
 * over NCCL in the dtype's own NCCL type where every member has a GPU of
 * its own, host-staged otherwise. */
int pfrt_cuda_broadcast_dtype(void *buf, int64_t count, int32_t dtype,
                              int64_t root, const int64_t *ranks, int64_t n);
int pfrt_cuda_reduce_sum_dtype(const void *in, void *out, int64_t count,
                               int32_t dtype, int64_t root,
                               const int64_t *ranks, int64_t n);
int pfrt_cuda_send(const float *buf, int64_t count, int32_t dst, int32_t tag);
int pfrt_cuda_recv(float *buf, int64_t count, int32_t src, int32_t tag);
int pfrt_cuda_isend(const float *buf, int64_t count, int32_t dst, int32_t tag);
int64_t pfrt_cuda_isend_tracked(const float *buf, int64_t count, int32_t dst,
                                int32_t tag);
int pfrt_cuda_wait_send(int64_t handle);
int pfrt_cuda_wait_sends(void);
/* The same transport for the batched point-to-point, the n-D boxing rows
 * and the vocabulary-parallel cross-entropy: shapes, groups and the batch's
 * descriptors stay host arrays (pfrt.h's), only the buffers (each op's buf,
 * in, out, logits, labels, loss, dloss, dlogits) are device addresses.
 * Argument errors are the host rows'. The slices are local but staged the
 * same way (a step calling them is not captured either). */
int pfrt_cuda_p2p_batch(const pfrt_p2p_op *ops, int64_t nops);
int pfrt_cuda_box_all_gather(const void *in, void *out, int32_t dtype,
                             int64_t ndim, const int64_t *inShape, int64_t axis,
                             const int64_t *ranks, int64_t n);
int pfrt_cuda_box_reduce_scatter(const float *in, float *out, int64_t ndim,
                                 const int64_t *inShape, int64_t axis,
                                 const int64_t *ranks, int64_t n);
/* bf16/f16 host-staged like the f32 one (the host row's sum in that type);
 * PFRT_DTYPE_F32 is pfrt_cuda_box_reduce_scatter's. */
int pfrt_cuda_box_reduce_scatter_dtype(const void *in, void *out, int32_t dtype,
                                       int64_t ndim, const int64_t *inShape,
                                       int64_t axis, const int64_t *ranks,
                                       int64_t n);
/* The split boxing collectives (pfrt.h): over NCCL the start enqueues the
 * collective on the split all-reduce's stream after the compute stream's
 * work so far (an inner axis's pack first, on the compute stream, into the
 * slot's own device buffer; a gather's unpack at the wait), the wait makes
 * the compute stream wait for it (inside a capture a fork and a join);
 * host-staged, the start runs the whole blocking twin and the wait only
 * checks the slot. */
int pfrt_cuda_box_all_gather_start(const void *in, void *out, int32_t dtype,
                                   int64_t ndim, const int64_t *inShape,
                                   int64_t axis, const int64_t *ranks,
                                   int64_t n, int64_t slot);
int pfrt_cuda_box_reduce_scatter_start(const void *in, void *out, int32_t dtype,
                                       int64_t ndim, const int64_t *inShape,
                                       int64_t axis, const int64_t *ranks,
                                       int64_t n, int64_t slot);
int pfrt_cuda_box_collective_wait(int64_t slot);
int pfrt_cuda_box_all_to_all(const void *in, void *out, int32_t dtype,
                             int64_t ndim, const int64_t *inShape,
                             int64_t splitAxis, int64_t concatAxis,
                             const int64_t *ranks, int64_t n);
int pfrt_cuda_box_slice(const void *in, void *out, int32_t dtype, int64_t ndim,
                        const int64_t *inShape, int64_t axis, int64_t index,
                        int64_t n);
int pfrt_cuda_box_unslice(const void *in, void *out, int32_t dtype,
                          int64_t ndim, const int64_t *inShape, int64_t axis,
                          int64_t index, int64_t n);
int pfrt_cuda_softmax_xent_vocab(const float *logits, const int64_t *labels,
                                 float *loss, int64_t n, int64_t c,
                                 int64_t offset, int64_t classes,
                                 int64_t ignoreIndex, int64_t mode,
                                 const int64_t *ranks, int64_t nranks);
int pfrt_cuda_softmax_xent_vocab_grad(const float *logits,
                                      const int64_t *labels, const float *dloss,
                                      float *dlogits, int64_t n, int64_t c,
                                      int64_t offset, int64_t classes,
                                      int64_t ignoreIndex, int64_t mode,
                                      const int64_t *ranks, int64_t nranks);
/* Another part (pfrt_state_add_part) of a tensor registered with
 * pfrt_cuda_state_register: data is a device address. */
int pfrt_cuda_state_add_part(const char *name, const int64_t *offset,
                             void *data);
/* Initialised on the host (bit-identical to the CPU run), then copied. */
int pfrt_cuda_init_param(float *out, int32_t kind, double a, double b,
                         uint64_t seed, uint64_t stream, int64_t rank_ndim,
                         const int64_t *logical_shape,
                         const int64_t *shard_offset,
                         const int64_t *shard_shape);
/* Registers device-resident state: checkpoints (pfrt_state_gather, _set,
 * _save, _load) copy through the host. */
int pfrt_cuda_state_register(const char *name, int32_t dtype, int64_t rank_ndim,
                             const int64_t *logical_shape,
                             const int64_t *offset, const int64_t *box_shape,
                             void *data);
/* A device float mirroring pfrt_scalar(name): every call enqueues a copy of
 * the host value (a captured graph re-reads it on each replay). Uncaptured,
 * the value copied is the one at the call; captured, the host float is
 * page-locked and read when the replay runs, so the host must not change it
 * while an earlier replay is still queued. The first call for a name
 * allocates its slot and must not be inside a capture. */
float *pfrt_cuda_scalar(const char *name);
/* Copy to the host (waits), then pfrt_report_loss / pfrt_report_output.
 * pfrt_cuda_report_loss first checks the kernels' error flag (an
 * out-of-range label: fatal, naming the row and the value). */
void pfrt_cuda_report_loss(const float *loss, int32_t microbatch);
void pfrt_cuda_report_output(int32_t index, const void *data, int64_t bytes);
/* Loaded on the host exactly as pfrt_load_input[_boxes|_part], then copied. */
int pfrt_cuda_load_input(int64_t index, void *out, int64_t bytes, int32_t dtype,
                         int64_t num_classes, uint64_t seed, uint64_t stream,
                         int64_t ndim, const int64_t *shape);
int pfrt_cuda_load_input_boxes(int64_t index, void *out, int64_t bytes,
                               int32_t dtype, int64_t num_classes,
                               uint64_t seed, uint64_t stream, int64_t ndim,
                               const int64_t *logical_shape, int64_t num_boxes,
                               const int64_t *offsets,
                               const int64_t *box_shape);
int pfrt_cuda_load_input_part(int64_t index, void *out, int64_t bytes,
                              int64_t part, int64_t num_parts, int32_t dtype,
                              int64_t num_classes, uint64_t seed,
                              uint64_t stream, int64_t ndim,
                              const int64_t *logical_shape, int64_t num_boxes,
                              const int64_t *offsets, const int64_t *box_shape);
/* pfrt_zero_partial_input on the device: zeroes the buffer unless the
 * inputs are the user's (pfrt_use_user_inputs). */
int pfrt_cuda_zero_partial_input(void *buf, int64_t bytes);

/* Kernels: the CPU kernels' arithmetic (runtime/src/cuda/kernels/ holds
 * the per-element and per-row bodies both builds share, a header a
 * family). GEMMs go through pfrt_cuda_gemm (exact float32). Reductions are
 * deterministic: a fixed order per output element, no atomics. */
void pfrt_cuda_k_relu(const float *x, float *y, int64_t n);
void pfrt_cuda_k_relu_grad(const float *y, const float *dy, float *dx,
                           int64_t n);
void pfrt_cuda_k_add(const float *a, const float *b, float *out, int64_t n);
void pfrt_cuda_k_mul(const float *a, const float *b, float *out, int64_t n);
void pfrt_cuda_k_scale(const float *x, float *y, int64_t n, double s);
void pfrt_cuda_k_layer_norm(const float *x, const float *gamma,
                            const float *beta, float *y, int64_t rows,
                            int64_t c, double eps);
void pfrt_cuda_k_layer_norm_grad_input(const float *x, const float *gamma,
                                       const float *dy, float *dx, int64_t rows,
                                       int64_t c, double eps);
void pfrt_cuda_k_layer_norm_grad_params(const float *x, const float *dy,
                                        float *dgamma, float *dbeta,
                                        int64_t rows, int64_t c, double eps);
void pfrt_cuda_k_sub(const float *a, const float *b, float *out, int64_t n);
void pfrt_cuda_k_div(const float *a, const float *b, float *out, int64_t n);
void pfrt_cuda_k_masked_fill(const float *x, const void *mask, float *y,
                             int64_t n, int32_t maskDtype, double value);
void pfrt_cuda_k_compare(const void *a, const void *b, uint8_t *out, int64_t n,
                         int32_t dtype, int32_t predicate);
void pfrt_cuda_k_logical(const uint8_t *a, const uint8_t *b, uint8_t *out,
                         int64_t n, int32_t kind);
void pfrt_cuda_k_where(const uint8_t *cond, const void *a, const void *b,
                       void *out, int64_t n, int32_t dtype);
void pfrt_cuda_k_cast(const void *x, int32_t xDtype, void *y, int32_t yDtype,
                      int64_t n);
void pfrt_cuda_k_softmax(const float *x, float *y, int64_t outer, int64_t n,
                         int64_t inner, int32_t log);
void pfrt_cuda_k_softmax_grad(const float *y, const float *dy, float *dx,
                              int64_t outer, int64_t n, int64_t inner,
                              int32_t log);
void pfrt_cuda_k_copy(const float *x, float *y, int64_t n);
void pfrt_cuda_k_fill(float *y, int64_t n, double v);
void pfrt_cuda_k_bias_add(const float *x, const float *b, float *y,
                          int64_t outer, int64_t c, int64_t inner);
void pfrt_cuda_k_bias_add_relu(const float *x, const float *b, float *y,
                               int64_t outer, int64_t c, int64_t inner);
void pfrt_cuda_k_reduce_sum(const float *x, float *y, int64_t rank,
                            const int64_t *shape, const int8_t *reduce);
void pfrt_cuda_k_matmul(const float *a, const float *b, float *c, int64_t batch,
                        int64_t batchB, int64_t m, int64_t n, int64_t k,
                        int32_t ta, int32_t tb);
void pfrt_cuda_k_matmul_acc(const float *a, const float *b, float *c,
                            int64_t batch, int64_t batchB, int64_t m, int64_t n,
                            int64_t k, int32_t ta, int32_t tb);
void pfrt_cuda_k_matmul_bias(const float *a, const float *b, const float *bias,
                             float *c, int64_t batch, int64_t batchB, int64_t m,
                             int64_t n, int64_t k, int32_t ta, int32_t tb);
/* cuBLASLt's BGRADB epilogue: the weight gradient and the bias gradient
 * (the column sums of A) in one GEMM; where cuBLASLt has no algorithm for
 * it, the GEMM and pfrt_cuda_k_reduce_sum (PFRT_CUDA_VERBOSE=1 says so). */
void pfrt_cuda_k_matmul_bgrad(const float *a, const float *b, float *c,
                              float *dbias, int64_t m, int64_t n, int64_t k,
                              int32_t accumulate);
/* cuBLASLt's RELU_BIAS epilogue: max(op(A) op(B) + bias, 0) in the GEMM. */
void pfrt_cuda_k_matmul_bias_relu(const float *a, const float *b,
                                  const float *bias, float *c, int64_t batch,
                                  int64_t batchB, int64_t m, int64_t n,
                                  int64_t k, int32_t ta, int32_t tb);
/* pfrt_k_matmul_typed's twin: pfrt_cuda_gemm_typed (beta = accumulate). */
void pfrt_cuda_k_matmul_typed(const void *a, const void *b, void *c,
                              int64_t batch, int64_t batchB, int64_t m,
                              int64_t n, int64_t k, int32_t ta, int32_t tb,
                              int32_t abDtype, int32_t cDtype,
                              int32_t accumulate);
void pfrt_cuda_k_softmax_xent(const float *logits, const int64_t *labels,
                              float *loss, int64_t n, int64_t c);
void pfrt_cuda_k_softmax_xent_grad(const float *logits, const int64_t *labels,
                                   const float *dloss, float *dlogits,
                                   int64_t n, int64_t c);
/* The cross-entropy with ignore_index (mean of the kept rows) or summed,
 * and the count of kept rows: one thread per row, then the rows' losses
 * (or, for the gradient, the kept rows' count) in row order by one thread,
 * as the CPU sums them; a kept row's out-of-range label is recorded on the
 * device and fatal when reported, as for pfrt_cuda_k_softmax_xent. */
void pfrt_cuda_k_softmax_xent_ignore(const float *logits, const int64_t *labels,
                                     float *loss, int64_t n, int64_t c,
                                     int64_t ignore_index);
void pfrt_cuda_k_softmax_xent_grad_ignore(const float *logits,
                                          const int64_t *labels,
                                          const float *dloss, float *dlogits,
                                          int64_t n, int64_t c,
                                          int64_t ignore_index);
void pfrt_cuda_k_softmax_xent_sum(const float *logits, const int64_t *labels,
                                  float *loss, int64_t n, int64_t c,
                                  int64_t ignore_index);
void pfrt_cuda_k_softmax_xent_grad_sum(const float *logits,
                                       const int64_t *labels,
                                       const float *dloss, float *dlogits,
                                       int64_t n, int64_t c,
                                       int64_t ignore_index);
void pfrt_cuda_k_count_kept(const int64_t *labels, float *count, int64_t n,
                            int64_t ignore_index);
/* Embeddings: an id outside [0, vocab) is recorded on the device and fatal
 * when reported. The gradients index each table row's positions first (one
 * thread), then sum each element's dy rows in position order (float32, the
 * CPU's order; no atomics). */
void pfrt_cuda_k_embedding(const float *table, const int64_t *ids, float *y,
                           int64_t n, int64_t v, int64_t d);
void pfrt_cuda_k_embedding_grad(const int64_t *ids, const float *dy,
                                float *dtable, int64_t n, int64_t v, int64_t d);
void pfrt_cuda_k_embedding_rows(const float *table, const int64_t *ids,
                                float *y, int64_t n, int64_t v, int64_t d,
                                int64_t row0, int64_t vocab);
void pfrt_cuda_k_embedding_grad_rows(const int64_t *ids, const float *dy,
                                     float *dtable, int64_t n, int64_t v,
                                     int64_t d, int64_t row0, int64_t vocab);
/* Broadcasts and sub-box copies (slices, pads, concatenation): one thread
 * per element, 4- or 8-byte elements copied bit for bit; shapes, offsets
 * and sizes stay host arrays. */
void pfrt_cuda_k_broadcast(const void *x, void *y, int64_t rank,
                           const int64_t *in_shape, const int64_t *out_shape,
                           int64_t elem_bytes);
int pfrt_cuda_copy_box(const void *src, const int64_t *src_shape,
                       const int64_t *src_offset, void *dst,
                       const int64_t *dst_shape, const int64_t *dst_offset,
                       const int64_t *sizes, int64_t ndim, int32_t dtype);
/* Dropout: pfrt_k_dropout's mask drawn on the device from the same Philox
 * stream (the same bits); the data step is read when the kernel runs, so a
 * replayed graph draws each step's own mask. */
int pfrt_cuda_k_dropout(const float *x, float *y, int64_t n, double p,
                        uint64_t seed, uint64_t stream, int64_t microbatch,
                        int64_t rank_ndim, const int64_t *logical_shape,
                        const int64_t *offset, const int64_t *shape);
/* Attention and its gradient (pfrt_k_attention(_grad)): the same checks,
 * mask, causal and dropout rules (dropout's mask drawn on the device from
 * the same Philox stream, the data step read when the kernel runs);
 * maskStrides, dims and logical stay host arrays. One thread block per
 * (b, h, tile of query rows), one thread a row, an online softmax over
 * tiles of keys; the gradient in three passes (delta, dK and dV a thread
 * per key row, dQ a thread per query row): fixed orders, no atomics. */
int pfrt_cuda_k_attention(const float *q, const float *k, const float *v,
                          const void *mask, int32_t maskDtype,
                          const int64_t *maskStrides, float *out, float *lse,
                          const int64_t *dims, double scale, int32_t causal,
                          double dropoutP, uint64_t seed, uint64_t stream,
                          int64_t microbatch, const int64_t *logical);
int pfrt_cuda_k_attention_grad(const float *q, const float *k, const float *v,
                               const void *mask, int32_t maskDtype,
                               const int64_t *maskStrides, const float *out,
                               const float *lse, const float *dout, float *dq,
                               float *dk, float *dv, const int64_t *dims,
                               double scale, int32_t causal, double dropoutP,
                               uint64_t seed, uint64_t stream,
                               int64_t microbatch, const int64_t *logical);
/* cuDNN 9's fused flash attention (its graph API; libcudnn.so.9 and
 * libcudnn_graph.so.9 loaded at the first call from the directories above,
 * absent: one line naming them, exit 2). q, k, v, out (and dout, dq, dk, dv)
 * are [B, H, T|S, D|Dv] packed in `dtype` (PFRT_DTYPE_BF16 or _F16), lse
 * [B, H, T] float32 (the softmax's log-sum-exp, which the gradient reads);
 * dims = {B, H, T, S, D, Dv}, D and Dv multiples of 8 up to 128; every
 * buffer 16-byte aligned. mask: NULL or an additive float32 bias whose
 * maskStrides broadcast B and H only (0) and are packed over [T, S].
 * causal: key s > query t is out (no offset: the queries are whole). No
 * dropout. One plan a (shape, dtype, causal, mask, direction), built at
 * its first call, which must not be captured (the compiled step's first,
 * uncaptured run builds it); the work is enqueued on the compute stream. */
int pfrt_cuda_cudnn_attention(const void *q, const void *k, const void *v,
                              const float *mask, const int64_t *maskStrides,
                              void *out, float *lse, const int64_t *dims,
                              int32_t dtype, double scale, int32_t causal);
int pfrt_cuda_cudnn_attention_grad(const void *q, const void *k, const void *v,
                                   const float *mask,
                                   const int64_t *maskStrides, const void *out,
                                   const float *lse, const void *dout, void *dq,
                                   void *dk, void *dv, const int64_t *dims,
                                   int32_t dtype, double scale, int32_t causal);
/* The cuDNN plans built so far (a test of the plan cache). */
int64_t pfrt_cuda_cudnn_plans_built(void);
/* Unlike pfrt_k_sgd, buf must not be NULL when momentum != 0, even at step
 * 1 (whether a step is the first is only known on the device). */
void pfrt_cuda_k_sgd(const float *p, const float *g, const float *lr,
                     const float *buf, const float *step, float *new_p,
                     float *new_buf, int64_t n, double momentum,
                     double dampening, double weight_decay, int32_t nesterov);
void pfrt_cuda_k_adam(const float *p, const float *g, const float *m,
                      const float *v, const float *lr, const float *step,
                      float *new_p, float *new_m, float *new_v, int64_t n,
                      double beta1, double beta2, double eps,
                      double weight_decay, int32_t decoupled,
                      int32_t bias_correction);
/* pfrt_k_sgd_multi / pfrt_k_adam_multi on the device: one launch per 48
 * tensors, each block working on one tensor's range (the blocks' tensors
 * found from a table passed by value, so a captured launch keeps it). */
void pfrt_cuda_k_sgd_multi(void *const *ptrs, const int64_t *n,
                           const int8_t *clear_grad, int64_t count,
                           const float *lr, const float *step, double momentum,
                           double dampening, double weight_decay,
                           int32_t nesterov);
void pfrt_cuda_k_adam_multi(void *const *ptrs, const int64_t *n,
                            const int8_t *clear_grad, int64_t count,
                            const float *lr, const float *step, double beta1,
                            double beta2, double eps, double weight_decay,
                            int32_t decoupled, int32_t bias_correction);
/* Activations: the CPU's float32 / float64 expressions, operation for
 * operation (no libm call; in place allowed as for the host rows). */
void pfrt_cuda_k_activation(int32_t kind, const float *x, float *y, int64_t n);
void pfrt_cuda_k_activation_grad(int32_t kind, const float *x, const float *dy,
                                 float *dx, int64_t n);
void pfrt_cuda_k_transpose(const float *x, float *y, int64_t rank,
                           const int64_t *shape, const int64_t *perm);
/* Convolutions: im2col of a run of images into device scratch, then one
 * strided-batched pfrt_cuda_gemm per group (exact float32; the direct path
 * of 1x1 stride-1 unpadded kernels reads x itself); the input gradient's
 * col2im gathers, one thread per input element in the CPU's order; the
 * weight gradient sums the images' products in image order (float32, as
 * the CPU's SGEMMs accumulate them). Runs hold as many images as fit in
 * 256 MiB of column scratch (PFRT_CUDA_CONV_SCRATCH=bytes, read once,
 * overrides it), at least one. Results differ from the CPU's by GEMM
 * summation order only. dims stays a host array. */
void pfrt_cuda_k_conv2d(const float *x, const float *w, float *y,
                        const int64_t dims[16]);
void pfrt_cuda_k_conv2d_grad_input(const float *dy, const float *w, float *dx,
                                   const int64_t dims[16]);
void pfrt_cuda_k_conv2d_grad_weight(const float *x, const float *dy, float *dw,
                                    const int64_t dims[16]);
/* Pooling: bit for bit the CPU's (window scans in row-major order, float64
 * sums; max-pool gradients go to the FIRST maximum of each window, gathered
 * per input element in the CPU's scatter order). dims stays a host array. */
void pfrt_cuda_k_max_pool2d(const float *x, float *y, const int64_t dims[12]);
void pfrt_cuda_k_max_pool2d_grad(const float *x, const float *dy, float *dx,
                                 const int64_t dims[12]);
void pfrt_cuda_k_avg_pool2d(const float *x, float *y, const int64_t dims[12]);
void pfrt_cuda_k_avg_pool2d_grad(const float *dy, float *dx,
                                 const int64_t dims[12]);
void pfrt_cuda_k_global_avg_pool(const float *x, float *y, int64_t n, int64_t c,
                                 int64_t hw);
void pfrt_cuda_k_global_avg_pool_grad(const float *dy, float *dx, int64_t n,
                                      int64_t c, int64_t hw);
/* Batch norm: each channel's float64 statistics summed in the CPU's order
 * (one thread a channel over the rows' partial sums: correctness first, not
 * a parallel reduction), then one thread per element. gamma, beta and the
 * running statistics as for the host rows (NULL allowed, new_* may alias
 * rmean / rvar). */
void pfrt_cuda_k_batch_norm(const float *x, const float *gamma,
                            const float *beta, const float *rmean,
                            const float *rvar, float *y, float *new_mean,
                            float *new_var, int64_t n, int64_t c, int64_t hw,
                            double eps, double momentum);
void pfrt_cuda_k_batch_norm_eval(const float *x, const float *gamma,
                                 const float *beta, const float *rmean,
                                 const float *rvar, float *y, int64_t n,
                                 int64_t c, int64_t hw, double eps);
void pfrt_cuda_k_batch_norm_grad_input(const float *x, const float *gamma,
                                       const float *dy, float *dx, int64_t n,
                                       int64_t c, int64_t hw, double eps);
void pfrt_cuda_k_batch_norm_grad_params(const float *x, const float *dy,
                                        float *dgamma, float *dbeta, int64_t n,
                                        int64_t c, int64_t hw, double eps);

#ifdef __cplusplus
}
#endif

#endif /* PFRT_PFRT_CUDA_H */
