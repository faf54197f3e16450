/*===- pfrt/pfrt.h - PipeFlow runtime C ABI ------------------------------===*
 *
 * The contract between code emitted by the PipeFlow compiler and libpfrt.
 * Pure C (C99 and later, and C++ through extern "C"); no MLIR, MPI or BLAS
 * headers leak through it, so generated objects only need this file.
 *
 * Conventions
 * -----------
 *  - Functions returning an `int` status return 0 on success (pfrt_rank,
 *    pfrt_world_size, pfrt_abi_version and pfrt_trace_enabled return
 *    values instead). Calling anything but pfrt_fatal, pfrt_now_us, the
 *    random-number, npy and sgemm functions before pfrt_init or after
 *    pfrt_finalize is an error. Every error
 *    (a failed MPI call, a bad argument, a bad file) is fatal: the runtime
 *    prints `pfrt: rank R: <cause>` to stderr and ends the whole job with
 *    MPI_Abort(MPI_COMM_WORLD, 1) (exit(1) when MPI is not running), so a
 *    failing rank never leaves the others hanging. The `int` is kept so that
 *    a recoverable mode can be added without changing the ABI.
 *  - Element counts, shapes and world ranks in groups are int64_t. Tensor
 *    data is float32 unless a name says otherwise (`_i64`).
 *  - A *group* is an ordered list of distinct world ranks
 *    (`const int64_t *ranks, int64_t n`). The position of a rank in that list
 *    is its *group position*; all_gather, reduce_scatter and all_to_all
 *    order their blocks by group position, not by world rank. Every member must call a collective with
 *    the same list (same order) and the same count; calling a collective on a
 *    rank that is not in the group is an error. One MPI communicator is
 *    created per distinct list on first use (only the members take part) and
 *    cached until pfrt_finalize.
 *  - Messages larger than INT_MAX elements are split into several MPI calls
 *    internally; nothing is truncated. (The environment variable
 *    PFRT_MAX_MSG_ELEMS lowers the split size; it exists for tests and must
 *    be the same on every rank.)
 *  - All calls must come from the thread that called pfrt_init
 *    (MPI_THREAD_FUNNELED); the runtime keeps no locks.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PFRT_PFRT_H
#define PFRT_PFRT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PFRT_NORETURN __attribute__((noreturn))
#define PFRT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define PFRT_NORETURN
#define PFRT_PRINTF(fmt, args)
#endif

/* Bumped on any incompatible change to this header. */
#define PFRT_ABI_VERSION 1

/*===----------------------------------------------------------------------===
 * Bootstrap
 *===----------------------------------------------------------------------===*/

/* Initialises MPI (MPI_Init_thread, MPI_THREAD_FUNNELED) unless the host
 * process already did, and reads PF_TRACE. A program started without
 * mpiexec runs as world size 1. argc/argv may be NULL. Calling it again is a
 * no-op. */
int pfrt_init(int *argc, char ***argv);

/* Writes the trace (if PF_TRACE is set) and finalises MPI if pfrt_init
 * initialised it. Collective over the world. */
int pfrt_finalize(void);

/* World rank and world size. Valid after pfrt_init. */
int pfrt_rank(void);
int pfrt_world_size(void);

/* Barrier over the whole world. */
int pfrt_barrier(void);

/* The PFRT_ABI_VERSION the library was built with; generated code compares
 * it against the header it was compiled with. */
int pfrt_abi_version(void);

/*===----------------------------------------------------------------------===
 * Errors
 *===----------------------------------------------------------------------===*/

/* Prints `pfrt: rank R: <formatted message>` to stderr and aborts the whole
 * job (MPI_Abort(MPI_COMM_WORLD, 1), or exit(1) without MPI). Never
 * returns. Usable before pfrt_init. */
PFRT_NORETURN void pfrt_fatal(const char *fmt, ...) PFRT_PRINTF(1, 2);

/*===----------------------------------------------------------------------===
 * Collectives over a group (float32 buffers, count in elements)
 *===----------------------------------------------------------------------===*/

/* out[i] = sum over members of in[i], i < count. in == out is allowed
 * (in place); other overlap is an error. The summation order is MPI's, so
 * results may differ from a serial sum in the last bits; all members get
 * bit-identical results with MPICH (the tests check this; the MPI standard
 * only recommends it). */
int pfrt_all_reduce_sum(const float *in, float *out, int64_t count,
                        const int64_t *ranks, int64_t n);

/* Each member contributes `count` elements; out holds n*count elements,
 * block p (elements [p*count, (p+1)*count)) coming from group position p.
 * in and out must not overlap. */
int pfrt_all_gather(const float *in, float *out, int64_t count,
                    const int64_t *ranks, int64_t n);

/* in holds n*count elements; the member at group position p receives in
 * out[0..count) the sum over members of their block p. No overlap. */
int pfrt_reduce_scatter_sum(const float *in, float *out, int64_t count,
                            const int64_t *ranks, int64_t n);

/* in holds n blocks of count elements; block j goes to group position j,
 * where it lands in out block p (p = the sender's group position).
 * No overlap. */
int pfrt_all_to_all(const float *in, float *out, int64_t count,
                    const int64_t *ranks, int64_t n);

/* Copies root's buf[0..count) to every member. root is a WORLD rank and
 * must be in the group. */
int pfrt_broadcast(float *buf, int64_t count, int64_t root_world_rank,
                   const int64_t *ranks, int64_t n);

/* int64 variant of pfrt_broadcast (labels, indices, step counters). */
int pfrt_broadcast_i64(int64_t *buf, int64_t count, int64_t root_world_rank,
                       const int64_t *ranks, int64_t n);

/* Root (a WORLD rank in the group) gets out[i] = sum over members of in[i].
 * out is only written on the root and may be NULL elsewhere; in == out is
 * allowed on the root. */
int pfrt_reduce_sum(const float *in, float *out, int64_t count,
                    int64_t root_world_rank, const int64_t *ranks, int64_t n);

/* Barrier over the members of a group. */
int pfrt_group_barrier(const int64_t *ranks, int64_t n);

/*===----------------------------------------------------------------------===
 * Point to point (WORLD ranks; 0 <= tag <= 32767 is always valid)
 *===----------------------------------------------------------------------===*/

/* Blocking send/receive. The receive must name the same count as the send;
 * a size mismatch is an error, not a partial read. */
int pfrt_send(const float *buf, int64_t count, int32_t dst, int32_t tag);
int pfrt_recv(float *buf, int64_t count, int32_t src, int32_t tag);

/* One entry of a batch; is_send != 0 sends buf to peer, otherwise receives
 * into buf from peer. */
typedef struct pfrt_p2p_op {
  int32_t is_send;
  int32_t peer;
  int32_t tag;
  float *buf;
  int64_t count;
} pfrt_p2p_op;

/* Posts every op non-blocking (MPI_Isend/MPI_Irecv, in array order) and
 * waits for all of them, so a stage can exchange activations and gradients
 * with both neighbours without ordering deadlocks. Ops with the same peer
 * and tag match in array order. Every op is validated before any is posted;
 * a receive whose matching send has a different count is fatal. A count of
 * 0 still sends/receives an empty message (buf may then be NULL). */
int pfrt_p2p_batch(const pfrt_p2p_op *ops, int64_t nops);

/*===----------------------------------------------------------------------===
 * Counter-based random numbers: Philox4x32-10
 *
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11). State: counter c[4], key k[2], all uint32. One round:
 *     p0 = 0xD2511F53 * c[0]   (full 64-bit product)
 *     p1 = 0xCD9E8D57 * c[2]
 *     c  = { hi(p1) ^ c[1] ^ k[0],  lo(p1),  hi(p0) ^ c[3] ^ k[1],  lo(p0) }
 * Ten rounds; between consecutive rounds the key is bumped:
 *     k[0] += 0x9E3779B9,  k[1] += 0xBB67AE85   (mod 2^32)
 * The output block x[4] is the counter after round 10.
 *
 * PipeFlow's use of it (a tensor element is a function of its LOGICAL
 * position only, so every layout of a tensor gets the same values):
 *     key     = { seed & 0xffffffff, seed >> 32 }
 *     counter = { i & 0xffffffff, i >> 32, stream & 0xffffffff, stream >> 32 }
 * where i is the row-major linear index of the element in the LOGICAL
 * tensor and stream identifies the tensor (pfrt_stream_id). The stream sits
 * in the upper counter words because the Philox4x32 key is only 64 bits.
 * Exactly one block is drawn per element; x[2] and x[3] are unused.
 * Uniform doubles from a word x are u(x) = ((double)x + 0.5) * 2^-32, which
 * is exact and lies in (0, 1).
 *
 * All arithmetic below is IEEE float64 evaluated in the order written (the
 * library is built with -ffp-contract=off), and the final value is rounded
 * to float32 with round-to-nearest-even. log, cos and sqrt are the C
 * library's; the NumPy twin (runtime/python/pfrt_philox.py) calls the same
 * libm through Python's math module to stay bit-exact.
 *===----------------------------------------------------------------------===*/

/* Raw block function, exposed for known-answer tests and other backends. */
int pfrt_philox4x32_10(const uint32_t counter[4], const uint32_t key[2],
                       uint32_t out[4]);

/* 64-bit FNV-1a of the bytes of name (no terminator):
 *     h = 0xcbf29ce484222325; for each byte b: h = (h ^ b) * 0x100000001b3
 * (mod 2^64). */
uint64_t pfrt_stream_id(const char *param_name);

/* Per-step stream for data: FNV-1a continued from h = stream over the eight
 * little-endian bytes of step:
 *     h = stream; for j in 0..7: h = (h ^ ((step >> 8j) & 0xff)) * 0x100000001b3
 */
uint64_t pfrt_stream_for_step(uint64_t stream, uint64_t step);

/* Initialiser kinds for pfrt_init_param. With u0 = u(x[0]), u1 = u(x[1]):
 *   ZEROS            0.0f
 *   ONES             1.0f
 *   CONSTANT         (float)a
 *   UNIFORM          (float)(a + (b - a) * u0)       a = low <= b = high
 *   NORMAL           z = sqrt(-2.0 * log(u0)) * cos(6.283185307179586 * u1)
 *                    (float)(a + b * z)              a = mean, b = std >= 0
 *   KAIMING_UNIFORM  bound = 1.0 / sqrt(a); low = -bound; high = bound;
 *                    (float)(low + (high - low) * u0)       a = fan_in > 0
 *                    This is PyTorch nn.Linear's default for both weight
 *                    (kaiming_uniform_ with a=sqrt(5)) and bias. b unused.
 * The constant is 2*pi rounded to double. a and b must be finite; a
 * violated constraint or an unknown kind is fatal. */
enum {
  PFRT_INIT_ZEROS = 0,
  PFRT_INIT_ONES = 1,
  PFRT_INIT_CONSTANT = 2,
  PFRT_INIT_UNIFORM = 3,
  PFRT_INIT_NORMAL = 4,
  PFRT_INIT_KAIMING_UNIFORM = 5
};

/* Fills out (the shard, row-major, prod(shard_shape) floats) with the
 * elements of the logical tensor of shape logical_shape[0..rank_ndim) whose
 * logical multi-index is shard_offset + local multi-index. rank_ndim may be
 * 0 (a scalar). shard_offset == NULL means all zeros; shard_shape == NULL
 * means the whole logical shape. Requires 0 <= offset, 0 <= shape and
 * offset + shape <= logical shape in every dimension. */
int pfrt_init_param(float *out, int32_t kind, double a, double b,
                    uint64_t seed, uint64_t stream, int64_t rank_ndim,
                    const int64_t *logical_shape, const int64_t *shard_offset,
                    const int64_t *shard_shape);

/*===----------------------------------------------------------------------===
 * Data input
 *===----------------------------------------------------------------------===*/

/* Synthetic input: exactly pfrt_init_param(out, PFRT_INIT_NORMAL, 0.0, 1.0,
 * seed, pfrt_stream_for_step(stream, step), ...). stream is normally
 * pfrt_stream_id(<input name>). */
int pfrt_synthetic_batch(float *out, uint64_t seed, uint64_t stream,
                         uint64_t step, int64_t rank_ndim,
                         const int64_t *logical_shape,
                         const int64_t *shard_offset,
                         const int64_t *shard_shape);

/* Synthetic integer labels in [0, num_classes), 1 <= num_classes < 2^31:
 *     label = ((uint64_t)x[0] * num_classes) >> 32
 * with the block drawn as above from key seed and stream
 * pfrt_stream_for_step(stream, step). */
int pfrt_synthetic_labels(int64_t *out, int64_t num_classes, uint64_t seed,
                          uint64_t stream, uint64_t step, int64_t rank_ndim,
                          const int64_t *logical_shape,
                          const int64_t *shard_offset,
                          const int64_t *shard_shape);

/* Element types of .npy files (little-endian only). */
enum {
  PFRT_DTYPE_F32 = 0, /* '<f4' */
  PFRT_DTYPE_I64 = 1, /* '<i8' */
  PFRT_DTYPE_I32 = 2  /* '<i4' */
};

/* Reads the shard [shard_offset, shard_offset + shard_shape) of the .npy file
 * at path into out (row-major). The file must be format version 1.0 or 2.0,
 * have descr equal to the expected dtype, fortran_order False, a shape equal
 * to logical_shape, and exactly header + data bytes; any mismatch is fatal
 * with a message naming the file and what is wrong. NULL offset/shape mean
 * the whole tensor, as in pfrt_init_param. */
int pfrt_npy_read_shard(const char *path, int32_t dtype, int64_t rank_ndim,
                        const int64_t *logical_shape,
                        const int64_t *shard_offset,
                        const int64_t *shard_shape, void *out);

/* Writes a whole tensor as a version 1.0 .npy file (2.0 if the header needs
 * it). Writes to a temporary file in the same directory and renames, so a
 * crash never leaves a half-written file under path. Not collective: the
 * caller decides which rank writes (normally the group's first rank, after
 * gathering the logical tensor). */
int pfrt_npy_write(const char *path, int32_t dtype, int64_t rank_ndim,
                   const int64_t *shape, const void *data);

/*===----------------------------------------------------------------------===
 * Checkpoints (logical form: one .npy per tensor, loadable into any layout)
 *===----------------------------------------------------------------------===*/

/* Creates dir (and parents) if needed and writes <dir>/<name>.npy. name must
 * be non-empty and contain no '/'. */
int pfrt_checkpoint_save(const char *dir, const char *name, int32_t dtype,
                         int64_t rank_ndim, const int64_t *shape,
                         const void *data);

/* pfrt_npy_read_shard of <dir>/<name>.npy. */
int pfrt_checkpoint_load(const char *dir, const char *name, int32_t dtype,
                         int64_t rank_ndim, const int64_t *logical_shape,
                         const int64_t *shard_offset,
                         const int64_t *shard_shape, void *out);

/* Creates dir if needed and writes json_text verbatim to <dir>/index.json
 * (atomically, via rename). The compiler owns the schema. */
int pfrt_checkpoint_write_index(const char *dir, const char *json_text);

/*===----------------------------------------------------------------------===
 * Timing and traces
 *===----------------------------------------------------------------------===*/

/* Monotonic microseconds. After pfrt_init the zero point is rank 0's clock at
 * pfrt_init (broadcast), so traces of ranks on one machine line up. */
double pfrt_now_us(void);

/* When the environment variable PF_TRACE=<dir> is set at pfrt_init, events
 * are kept in memory (at most PF_TRACE_MAX_EVENTS, default 4M; the number
 * dropped beyond that is written as "pfrtDroppedEvents") and pfrt_finalize
 * creates <dir> and writes <dir>/trace_rank<R>.json in Chrome trace format:
 *   {"traceEvents":[{"name":..,"cat":..,"ph":"X","ts":..,"dur":..,"pid":R,
 *                    "tid":0,"args":{"microbatch":..,"stage":..}}, ...]}
 * ts and dur are in microseconds. begin/end pairs nest; an end closes the
 * innermost open begin. Collectives and point-to-point calls record
 * themselves (cat "comm", with bytes and group size or peer in args), taking
 * microbatch/stage from the innermost open event (-1 if none). cat NULL
 * means "compute". An end without an open begin is fatal; events still open
 * at pfrt_finalize are dropped with a warning. Without PF_TRACE both calls
 * are no-ops. */
int pfrt_trace_begin(const char *name, const char *cat, int32_t microbatch,
                     int32_t stage);
int pfrt_trace_end(void);

/* 1 if PF_TRACE was set at pfrt_init, else 0. */
int pfrt_trace_enabled(void);

/*===----------------------------------------------------------------------===
 * CPU compute
 *===----------------------------------------------------------------------===*/

/* Row-major C = alpha * op(A) * op(B) + beta * C through cblas_sgemm, where
 * op(X) = X^T if trans_x != 0. op(A) is M x K, op(B) is K x N, C is M x N;
 * lda/ldb/ldc are row strides in elements. Dimensions above INT_MAX are
 * rejected (32-bit BLAS). */
int pfrt_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
               float alpha, const float *A, int64_t lda, const float *B,
               int64_t ldb, float beta, float *C, int64_t ldc);

/* Sets the BLAS thread count (openblas_set_num_threads); n >= 1. */
int pfrt_set_num_threads(int n);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PFRT_PFRT_H */
