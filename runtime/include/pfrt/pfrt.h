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
 *    random-number, npy, sgemm, CPU-kernel and memory functions,
 *    pfrt_box_slice and pfrt_copy_box before pfrt_init or after
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
 *    order their blocks by group position, not by world rank. Every member must
 * call a collective with the same list (same order) and the same count; calling
 * a collective on a rank that is not in the group is an error. One MPI
 * communicator is created per distinct list on first use (only the members take
 * part) and cached until pfrt_finalize.
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

/* pfrt_init for a program on world ranks 0..size-1 of a job of at least
 * `size` processes (size <= 0: the whole job, as pfrt_init). Its
 * communicator holds those ranks only, numbered as in the world: nothing the
 * program does (collectives, the barrier of pfrt_finalize) involves the
 * ranks outside, and two programs never mix their messages. Only those ranks
 * call it; a process outside them is a fatal error. Initialises MPI unless
 * the host process already did (every process of the job must then, as with
 * MPI_Init). pfrt_rank is the world rank, pfrt_world_size is `size`. */
int pfrt_init_program(int64_t size);

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

/* pfrt_all_reduce_sum split in two, so that the step computes while the
 * sum travels: the start begins it and returns at once, the wait (with
 * the same slot) finishes it; until then neither `in` nor `out` may be
 * touched. slot in [0, PFRT_MAX_ASYNC_SLOTS); a slot in flight cannot be
 * started again, and one that is not cannot be waited for (both fatal,
 * and so is a slot still in flight at pfrt_finalize). On the host
 * (MPI_Iallreduce) MPI moves the data inside MPI calls, so without an MPI
 * progress thread most of the work happens at the wait; the device twins
 * overlap it with the compute stream (NCCL on a stream of its own). */
#define PFRT_MAX_ASYNC_SLOTS 64
int pfrt_all_reduce_start(const float *in, float *out, int64_t count,
                          const int64_t *ranks, int64_t n, int64_t slot);
int pfrt_all_reduce_wait(int64_t slot);

/* pfrt_all_reduce_sum and _start of `dtype` elements: PFRT_DTYPE_F32 (the
 * same as those), PFRT_DTYPE_BF16 or PFRT_DTYPE_F16 (the gradient
 * all-reduces of gradient-dtype=bf16|f16: 2 bytes an element on the wire;
 * other dtypes are fatal). The low types are summed in their own type:
 * MPI has no bf16, so a user-defined MPI_Op over the uint16 payloads adds
 * each pair of elements in float32 (exact unless their exponents are far
 * apart) and rounds the sum to nearest even (HalfMath.h; f16 overflows to
 * +-inf). Two members give round(a + b); more round at each pairwise step
 * of MPI's reduction tree (with MPICH every member gets the same bits, as
 * for float32). pfrt_all_reduce_wait ends a started one. */
int pfrt_all_reduce_sum_dtype(const void *in, void *out, int64_t count,
                              int32_t dtype, const int64_t *ranks, int64_t n);
int pfrt_all_reduce_start_dtype(const void *in, void *out, int64_t count,
                                int32_t dtype, const int64_t *ranks, int64_t n,
                                int64_t slot);

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
int pfrt_broadcast(float *buf, int64_t count, int64_t rootWorldRank,
                   const int64_t *ranks, int64_t n);

/* int64 variant of pfrt_broadcast (labels, indices, step counters). */
int pfrt_broadcast_i64(int64_t *buf, int64_t count, int64_t rootWorldRank,
                       const int64_t *ranks, int64_t n);

/* Root (a WORLD rank in the group) gets out[i] = sum over members of in[i].
 * out is only written on the root and may be NULL elsewhere; in == out is
 * allowed on the root. */
int pfrt_reduce_sum(const float *in, float *out, int64_t count,
                    int64_t rootWorldRank, const int64_t *ranks, int64_t n);

/* pfrt_broadcast and pfrt_reduce_sum of `count` elements of `dtype`:
 * a broadcast moves any dtype's bits (PFRT_DTYPE_F32, _I64, _I32, _BOOL,
 * _BF16, _F16), a reduce sums PFRT_DTYPE_F32 (the same as pfrt_reduce_sum),
 * _BF16 or _F16 in their own type (as pfrt_all_reduce_sum_dtype: each
 * pairwise step of MPI's reduction in float32, rounded to nearest even);
 * other dtypes are fatal. The device twins go over NCCL in that type
 * (ncclBfloat16, ncclFloat16, ...) where every member has its own GPU. */
int pfrt_broadcast_dtype(void *buf, int64_t count, int32_t dtype, int64_t root,
                         const int64_t *ranks, int64_t n);
int pfrt_reduce_sum_dtype(const void *in, void *out, int64_t count,
                          int32_t dtype, int64_t root, const int64_t *ranks,
                          int64_t n);

/* Barrier over the members of a group. */
int pfrt_group_barrier(const int64_t *ranks, int64_t n);

/* Megatron's vocabulary-parallel softmax cross-entropy. The group's members
 * hold column blocks of the same rows of logits [n, classes]: this rank's
 * block is [n, c] starting at column `offset`. Each row's maximum is
 * all-reduced (MPI_MAX, n floats), then its sum of exp(x - max) and the
 * label's logit (0 where the label lies in another member's block) are
 * all-reduced (SUM, 2n doubles); the logits never move. Every member gets
 * the same loss: mode 0 the mean over the rows (every label in
 * [0, classes)), mode 1 the mean over the rows whose label is not
 * ignore_index, mode 2 their sum. */
int pfrt_softmax_xent_vocab(const float *logits, const int64_t *labels,
                            float *loss, int64_t n, int64_t c, int64_t offset,
                            int64_t classes, int64_t ignore_index, int64_t mode,
                            const int64_t *ranks, int64_t nranks);

/* Its gradient with respect to this rank's block of logits: the max and the
 * sum of exponentials are all-reduced again (n floats, n doubles), then
 * dlogits = (softmax - onehot(label)) * dloss (/ rows kept for the means),
 * zero on ignored rows. */
int pfrt_softmax_xent_vocab_grad(const float *logits, const int64_t *labels,
                                 const float *dloss, float *dlogits, int64_t n,
                                 int64_t c, int64_t offset, int64_t classes,
                                 int64_t ignore_index, int64_t mode,
                                 const int64_t *ranks, int64_t nranks);

/*===----------------------------------------------------------------------===
 * Point to point (WORLD ranks; 0 <= tag <= 32767 is always valid)
 *===----------------------------------------------------------------------===*/

/* Blocking send/receive. The receive must name the same count as the send;
 * a size mismatch is an error, not a partial read. */
int pfrt_send(const float *buf, int64_t count, int32_t dst, int32_t tag);
int pfrt_recv(float *buf, int64_t count, int32_t src, int32_t tag);
/* Non-blocking send: the buffer must stay valid and unchanged until
 * pfrt_wait_sends, which completes every send posted so far. Pipeline
 * schedules use it so that only receives block (as the schedule simulator
 * assumes). */
int pfrt_isend(const float *buf, int64_t count, int32_t dst, int32_t tag);
int pfrt_wait_sends(void);
/* The same send, returning a handle for pfrt_wait_send: the compiler
 * proves from the static schedule where a send has certainly been received
 * (its peer has since sent this rank something this rank has received, or
 * entered a collective this rank has completed) and waits for it there, so
 * its buffer is reused before the end of the step. pfrt_wait_sends still
 * completes whatever is left; handles are valid until then. */
int64_t pfrt_isend_tracked(const float *buf, int64_t count, int32_t dst,
                           int32_t tag);
int pfrt_wait_send(int64_t handle);

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

/* Communication counters (pf-run --comm-report). Per kind of collective,
 * the calls and bytes this rank moved over MPI (the host rows, on CPU ranks
 * and in GPU ranks' host-staged calls) and over NCCL (GPU ranks' device
 * twins; a captured CUDA graph's calls count at each replay). Bytes are the
 * collective's buffer on this rank, as the trace gives them (the reduced or
 * broadcast buffer, the gathered output, the scattered or exchanged input,
 * a message), not the bytes on the wire. host_round_trips counts a GPU
 * rank's host-staged calls (device -> host -> device), their bytes both
 * ways; exposed_us is the host time spent blocked in MPI calls (waits
 * included; by kind in pfrt_comm_exposed, with the time a GPU rank's
 * compute stream waited for communication). Set-up traffic
 * (communicators, NCCL's ids) is not counted. */
enum {
  PFRT_COMM_ALL_REDUCE = 0,
  PFRT_COMM_ALL_GATHER = 1,
  PFRT_COMM_REDUCE_SCATTER = 2,
  PFRT_COMM_ALL_TO_ALL = 3,
  PFRT_COMM_SEND = 4,
  PFRT_COMM_RECV = 5,
  PFRT_COMM_BROADCAST = 6,
  PFRT_COMM_REDUCE = 7,
  PFRT_COMM_KINDS = 8
};
/* NOLINTBEGIN(modernize-use-using, readability-identifier-naming): C. */
typedef struct pfrt_comm_counters {
  int64_t mpi_calls[PFRT_COMM_KINDS];
  int64_t mpi_bytes[PFRT_COMM_KINDS];
  int64_t nccl_calls[PFRT_COMM_KINDS];
  int64_t nccl_bytes[PFRT_COMM_KINDS];
  int64_t host_round_trips;
  int64_t host_round_trip_bytes;
  double exposed_us;
} pfrt_comm_counters;
/* NOLINTEND(modernize-use-using, readability-identifier-naming) */
/* This rank's counters since the start (or the last reset). */
void pfrt_comm_counters_get(pfrt_comm_counters *out);
void pfrt_comm_counters_reset(void);
/* Exposed communication time per kind (a struct of its own, so that
 * pfrt_comm_counters keeps its layout for existing callers): host_us, the
 * host time blocked in MPI calls of that kind (pfrt_comm_counters'
 * exposed_us, split by kind; a split collective's wait counts for its kind,
 * pfrt_wait_send(s) for sends, a p2p batch for receives), device_us, the
 * time a GPU rank's compute stream waited for communication of that kind:
 * an NCCL collective or receive it runs, or its wait for a collective or
 * send on another stream, timed by events recorded around the wait on the
 * compute stream and read after the step's synchronization, in uncaptured
 * steps only (device_steps of them; device_spans waits timed). *_other_us:
 * what no kind owns (barriers, a split boxing collective's wait). pfrt_comm_
 * counters_reset resets them too. */
/* NOLINTBEGIN(modernize-use-using, readability-identifier-naming): C. */
typedef struct pfrt_comm_exposed {
  double host_us[PFRT_COMM_KINDS];
  double device_us[PFRT_COMM_KINDS];
  double host_other_us;
  double device_other_us;
  int64_t device_steps;
  int64_t device_spans;
} pfrt_comm_exposed;
/* NOLINTEND(modernize-use-using, readability-identifier-naming) */
void pfrt_comm_exposed_get(pfrt_comm_exposed *out);
/* A call of every rank: rank 0 prints every rank's counters on stdout in
 * rank order, a block a rank: "comm rank R of N: host_round_trips C bytes
 * B exposed_mpi_ms T", then a line a kind: "comm rank R KIND nccl_calls C
 * nccl_bytes B mpi_calls C mpi_bytes B exposed_host_ms T exposed_device_ms
 * T" (pfrt_comm_exposed; the first line ends with the time no kind owns and
 * the device-timed steps). pfrt_main calls it at the end of the run under
 * PF_COMM_REPORT=1. */
int pfrt_comm_report(void);

/*===----------------------------------------------------------------------===
 * Boxing: layout changes of local tensors
 *
 * A global (logical) tensor is laid out over a group in SBP form: S(k) =
 * split along axis k (group position p holds block p of n equal blocks
 * along k), B = broadcast (every member holds the whole tensor), P =
 * partial sum (every member holds a tensor of the logical shape; the
 * logical tensor is their element-wise sum). The functions below change
 * that layout on each rank's LOCAL tensor: row-major, contiguous, of
 * `ndim` (0..32) dimensions. Shapes and `axis` arguments describe the
 * caller's input; the output shape follows from them as stated, and the
 * caller allocates it. `dtype` is PFRT_DTYPE_F32, PFRT_DTYPE_I64 or
 * PFRT_DTYPE_I32 (data movement is bit-exact); reductions are float32 only.
 *
 * The group functions are collectives (see the conventions at the top):
 * every member calls them with the same ranks, dtype, ndim, in_shape and
 * axes; a non-member calling is fatal. Their input and output must not
 * overlap. Every bad argument is fatal, naming the function and the cause
 * (a bad rank or axis, a dimension that does not divide, a NULL buffer for
 * a non-empty tensor). pfrt_box_slice, pfrt_box_unslice and pfrt_copy_box
 * are local (no MPI) and usable without pfrt_init.
 *===----------------------------------------------------------------------===*/

/* S(axis) -> B: gathers the blocks of the group along axis. in has shape
 * in_shape; out has in_shape with out_shape[axis] = n * in_shape[axis], its
 * block [p * in_shape[axis], (p + 1) * in_shape[axis]) along axis coming
 * from group position p. ndim >= 1 and 0 <= axis < ndim. */
int pfrt_box_all_gather(const void *in, void *out, int32_t dtype, int64_t ndim,
                        const int64_t *in_shape, int64_t axis,
                        const int64_t *ranks, int64_t n);

/* P -> S(axis), float32: in (shape in_shape) is this member's partial; out
 * (in_shape with out_shape[axis] = in_shape[axis] / n) is the sum over all
 * members of their block `pos` along axis, pos = this member's group
 * position. in_shape[axis] % n must be 0; ndim >= 1 and 0 <= axis < ndim.
 * The summation order is MPI's (as pfrt_reduce_scatter_sum). */
int pfrt_box_reduce_scatter(const float *in, float *out, int64_t ndim,
                            const int64_t *in_shape, int64_t axis,
                            const int64_t *ranks, int64_t n);

/* pfrt_box_reduce_scatter of `dtype` elements: PFRT_DTYPE_F32 (the same as
 * it), PFRT_DTYPE_BF16 or PFRT_DTYPE_F16 (the gradient reduce-scatters of
 * gradient-dtype=bf16|f16 under ZeRO-2/3: 2 bytes an element on the wire),
 * summed in their own type as pfrt_all_reduce_sum_dtype sums them (each
 * pair added in float32 and rounded to nearest even); other dtypes are
 * fatal. */
int pfrt_box_reduce_scatter_dtype(const void *in, void *out, int32_t dtype,
                                  int64_t ndim, const int64_t *inShape,
                                  int64_t axis, const int64_t *ranks,
                                  int64_t n);

/* pfrt_box_all_gather and pfrt_box_reduce_scatter_dtype split in two, as
 * pfrt_all_reduce_start and _wait are (pf-overlap-collectives): the start
 * begins the collective and returns, pfrt_box_collective_wait with the same
 * slot finishes it; until then neither in nor out may be touched. Their
 * slots are a table of their own, [0, PFRT_MAX_ASYNC_SLOTS): a slot in
 * flight cannot be started again, one that is not cannot be waited for,
 * one still in flight at pfrt_finalize is fatal. Members start them in the
 * same order relative to every other collective of the group. The host
 * rows post MPI_Iallgather / MPI_Ireduce_scatter_block (the repack of an
 * inner axis around them as the blocking rows do: the scatter's at the
 * start, the gather's at the wait), so the data move inside MPI calls; the
 * device twins run NCCL on the split all-reduce's stream. Same arguments,
 * errors and results as the blocking rows (the sums in MPI's order). */
int pfrt_box_all_gather_start(const void *in, void *out, int32_t dtype,
                              int64_t ndim, const int64_t *inShape,
                              int64_t axis, const int64_t *ranks, int64_t n,
                              int64_t slot);
int pfrt_box_reduce_scatter_start(const void *in, void *out, int32_t dtype,
                                  int64_t ndim, const int64_t *inShape,
                                  int64_t axis, const int64_t *ranks, int64_t n,
                                  int64_t slot);
int pfrt_box_collective_wait(int64_t slot);

/* S(concat_axis) -> S(split_axis): group position p holds block p along
 * concat_axis of the logical tensor, whole along split_axis (shape
 * in_shape). Afterwards it holds block p along split_axis, whole along
 * concat_axis: out has in_shape with out_shape[split_axis] =
 * in_shape[split_axis] / n and out_shape[concat_axis] =
 * n * in_shape[concat_axis]. Equivalently: the local input is split along
 * split_axis into n blocks, block q goes to position q, and the block
 * received from position p lands at block position p along concat_axis.
 * Needs 0 <= split_axis, concat_axis < ndim, split_axis != concat_axis and
 * in_shape[split_axis] % n == 0. */
int pfrt_box_all_to_all(const void *in, void *out, int32_t dtype, int64_t ndim,
                        const int64_t *in_shape, int64_t split_axis,
                        int64_t concat_axis, const int64_t *ranks, int64_t n);

/* B -> S(axis), local: out (in_shape with out_shape[axis] = in_shape[axis]
 * / n) is block `index` of n equal blocks of in along axis, i.e. elements
 * [index * in_shape[axis] / n, (index + 1) * in_shape[axis] / n) along axis.
 * Needs ndim >= 1, 0 <= axis < ndim, n >= 1, 0 <= index < n and
 * in_shape[axis] % n == 0. in and out must not overlap. */
int pfrt_box_slice(const void *in, void *out, int32_t dtype, int64_t ndim,
                   const int64_t *in_shape, int64_t axis, int64_t index,
                   int64_t n);

/* S(axis) -> P, local (the inverse of pfrt_box_slice): out (in_shape with
 * out_shape[axis] = n * in_shape[axis]) is zero except block `index` of its
 * n equal blocks along axis, which is in. Summed over the n members of a
 * group (index = group position) the outs give the gathered tensor, so the
 * layout change moves no byte. Needs ndim >= 1, 0 <= axis < ndim, n >= 1
 * and 0 <= index < n; in and out must not overlap. */
int pfrt_box_unslice(const void *in, void *out, int32_t dtype, int64_t ndim,
                     const int64_t *in_shape, int64_t axis, int64_t index,
                     int64_t n);

/* Local sub-box copy: for every multi-index i with 0 <= i[d] < sizes[d],
 *     dst[dst_offset + i] = src[src_offset + i]
 * where src and dst are row-major tensors of shapes src_shape and
 * dst_shape; nothing else of dst is written. NULL offsets mean all zeros.
 * Needs 0 <= offset[d] and offset[d] + sizes[d] <= shape[d] in both
 * tensors for every d (sizes[d] >= 0), and the memory spans of the two
 * boxes (from their first to their last element) must not overlap. ndim 0
 * copies one element (the shape, offset and sizes pointers may then be
 * NULL). */
int pfrt_copy_box(const void *src, const int64_t *src_shape,
                  const int64_t *src_offset, void *dst,
                  const int64_t *dst_shape, const int64_t *dst_offset,
                  const int64_t *sizes, int64_t ndim, int32_t dtype);

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
 *     h = stream; for j in 0..7: h = (h ^ ((step >> 8j) & 0xff)) *
 * 0x100000001b3
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
int pfrt_init_param(float *out, int32_t kind, double a, double b, uint64_t seed,
                    uint64_t stream, int64_t rank_ndim,
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

/* Element types of tensors and .npy files (little-endian only). A bool is
 * one byte, 0 or 1. bf16 and f16 are storage types of 2 bytes (the
 * manifest's dtype names "bf16" and "f16"): kernels compute in float32, and
 * pfrt_k_cast converts to them rounding to nearest even. NumPy has no
 * bfloat16: a bf16 tensor's .npy file, input or output holds its raw bits
 * as '<u2' (numpy.uint16, the top 16 bits of the float32), an f16 one is
 * '<f2' (numpy.float16). */
enum {
  PFRT_DTYPE_F32 = 0,  /* '<f4' */
  PFRT_DTYPE_I64 = 1,  /* '<i8' */
  PFRT_DTYPE_I32 = 2,  /* '<i4' */
  PFRT_DTYPE_BOOL = 3, /* '|b1' */
  PFRT_DTYPE_BF16 = 4, /* '<u2': bfloat16's bits */
  PFRT_DTYPE_F16 = 5   /* '<f2' */
};

/* Reads the shard [shard_offset, shard_offset + shard_shape) of the .npy file
 * at path into out (row-major). The file must be format version 1.0 or 2.0,
 * have descr equal to the expected dtype, fortran_order False, a shape equal
 * to logical_shape, and exactly header + data bytes; any mismatch is fatal
 * with a message naming the file and what is wrong. NULL offset/shape mean
 * the whole tensor, as in pfrt_init_param. */
int pfrt_npy_read_shard(const char *path, int32_t dtype, int64_t rank_ndim,
                        const int64_t *logical_shape,
                        const int64_t *shard_offset, const int64_t *shard_shape,
                        void *out);

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
 * Persistent state: parameters and optimizer states of a compiled program
 *===----------------------------------------------------------------------===*/

/* Registers (or, by name, re-registers) a tensor this rank keeps across
 * steps: its logical shape and the box of it this rank holds (offset NULL =
 * zeros, box_shape NULL = the logical shape), data pointing at the box
 * (row-major) for as long as the program runs. The generated pf_init_params
 * registers every parameter and optimizer state (not gradient buffers). */
int pfrt_state_register(const char *name, int32_t dtype, int64_t rank_ndim,
                        const int64_t *logical_shape, const int64_t *offset,
                        const int64_t *box_shape, void *data);

/* Adds a part to `name`'s registration on this rank: another box of the
 * registered box shape, at `offset` in the logical tensor, stored at data.
 * A grouped split S(axis, g) holds g such parts (one per block); gather,
 * set, save and load treat the parts as the rank's boxes. At most 16 parts;
 * fatal if name is not registered or the part repeats one. */
int pfrt_state_add_part(const char *name, const int64_t *offset, void *data);

/* Forgets every registration (before the registered storage is freed). */
void pfrt_state_clear(void);

/* Not collective: what this rank holds of `name` (dtype, rank, logical
 * shape, its (first) box's offset and shape; arrays of at least 32 entries, any
 * may be NULL). Returns 0, or -1 (writing nothing) if this rank holds no such
 * tensor. */
int pfrt_state_info(const char *name, int32_t *dtype, int64_t *rank_ndim,
                    int64_t *logical_shape, int64_t *offset,
                    int64_t *box_shape);

/* This rank's registered tensors, in name order. */
int64_t pfrt_state_count(void);
const char *pfrt_state_name(int64_t k);

/* Collective over WORLD (every rank, same name): assembles the logical value
 * of `name` from the ranks' boxes (replicas sent once) and copies it to out
 * on every rank; bytes must be its logical size. Fatal if no rank holds it,
 * holders disagree on dtype or logical shape, or the boxes do not cover it. */
int pfrt_state_gather(const char *name, void *out, int64_t bytes);

/* Not collective: copies this rank's box of `name` out of `logical` (the
 * whole logical tensor, bytes long). Fatal if this rank holds no such
 * tensor or the size differs. */
int pfrt_state_set(const char *name, const void *logical, int64_t bytes);

/* Collective over WORLD: writes a checkpoint in logical form to dir: one
 * <name>.npy per tensor registered on any rank (gathered on world rank 0 one
 * tensor at a time, written by it) and last dir/index.json:
 *   {"format": "pipeflow-checkpoint", "version": 1, "step": <step>,
 *    "tensors": [{"name": .., "dtype": "f32", "shape": [..]}, ...]}
 * step is the number of steps taken so far. */
int pfrt_state_save(const char *dir, int64_t step);

/* Collective over WORLD: every rank reads its box of every tensor it
 * registered from dir/<name>.npy (any layout of the saving run; the files
 * hold logical tensors) and stores index.json's step in *step (if not
 * NULL). A missing index or file, or a dtype or shape mismatch, is fatal
 * naming the file. */
int pfrt_state_load(const char *dir, int64_t *step);

/* Real data for executables: with a directory set, the input with index i
 * is read from dir/input<i>.npy instead of synthetic data. The file holds
 * either the step's whole logical input (the same batch every step) or N
 * batches, shape [N, <logical shape>...], step k using batch k mod N. Each
 * rank reads only its boxes. NULL or "" switches back to synthetic data. */
int pfrt_set_data_dir(const char *dir);

/* One micro-batch of an input: part `part` of `num_parts` equal, contiguous
 * parts (bytes each) of what pfrt_load_input_boxes would load with the same
 * boxes. The parts either group whole boxes (num_boxes a multiple of
 * num_parts) or split each box's first axis evenly (num_parts a multiple of
 * num_boxes); anything else is an error. User data (pfrt_set_input) holds
 * the whole input and the part is copied from it; synthetic and .npy data
 * are drawn for the part's boxes only. The compiler loads each micro-batch
 * just before its first use, so an input never occupies more than the
 * micro-batches in flight. */
int pfrt_load_input_part(int64_t index, void *out, int64_t bytes, int64_t part,
                         int64_t num_parts, int32_t dtype, int64_t num_classes,
                         uint64_t seed, uint64_t stream, int64_t ndim,
                         const int64_t *logical_shape, int64_t num_boxes,
                         const int64_t *offsets, const int64_t *box_shape);

/* After pfrt_load_input_boxes of a partial-sum (P) input on a rank off
 * coordinate 0 of a P dimension: zeros the buffer when the data came from a
 * source of logical values (synthetic, .npy); user inputs (a host program's
 * pfrt_set_input) are the rank's own addends and are left as given. */
int pfrt_zero_partial_input(void *buf, int64_t bytes);

/* Dropout: y[i] = u[i] >= (float)p ? x[i] * (float)(1 / (1 - p)) : 0 (all
 * zeros when p == 1), where u is exactly pfrt_init_param(UNIFORM, 0, 1,
 * seed, s, ...) over this box of the logical tensor with
 *   s = pfrt_stream_for_step(pfrt_stream_for_step(stream, step), microbatch)
 * and step the current data step (pfrt_set_data_step / pfrt_begin_step).
 * The mask depends on logical indices only, so every layout drops the same
 * elements; the gradient is the same call on dy. x == y is allowed. */
int pfrt_k_dropout(const float *x, float *y, int64_t n, double p, uint64_t seed,
                   uint64_t stream, int64_t microbatch, int64_t rank_ndim,
                   const int64_t *logical_shape, const int64_t *offset,
                   const int64_t *shape);

/* The step whose inputs pfrt_load_input* load (pfrt_begin_step and the
 * driver set it). */
void pfrt_set_data_step(int64_t step);

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

/*===----------------------------------------------------------------------===
 * CPU kernels
 *
 * One call per op of the per-rank program. float32, row-major, contiguous;
 * outputs are caller-allocated and fully overwritten (nothing accumulates
 * into an output unless stated). Inputs and outputs must not overlap unless
 * stated; where aliasing is allowed it means the SAME pointer, never a
 * partial overlap. Sizes are int64_t elements; a negative size, a NULL
 * pointer for a non-empty tensor or an inconsistent shape is fatal (naming
 * the kernel). Single-threaded (the BLAS calls inside use the
 * pfrt_set_num_threads threads); usable without pfrt_init.
 *
 * Sums (reductions, softmax denominators, batch-norm statistics, pooling
 * windows) are accumulated in float64 and rounded to float32 once, so they
 * match a float64 reference to ~1e-7 relative; GEMM-shaped work (matmul,
 * conv) goes through pfrt_sgemm and accumulates in float32.
 *===----------------------------------------------------------------------===*/

/* y = f(x) and dx = f'(x) * dy for the activation `kind`: 0 GELU (erf
 * form), 1 GELU (tanh approximation), 2 tanh, 3 sigmoid (pf.activation's
 * kinds in order). Computed in double, rounded once to float. In place
 * (y == x, dx == dy) is allowed. */
void pfrt_k_activation(int32_t kind, const float *x, float *y, int64_t n);

/* Embedding: y[i, :] = table[ids[i], :] for n ids into a [v, d] table (an id
 * outside [0, v) is fatal, naming it); its gradient dtable = 0, then
 * dtable[ids[i], :] += dy[i, :] in order i = 0..n-1 (deterministic). */
void pfrt_k_embedding(const float *table, const int64_t *ids, float *y,
                      int64_t n, int64_t v, int64_t d);
void pfrt_k_embedding_grad(const int64_t *ids, const float *dy, float *dtable,
                           int64_t n, int64_t v, int64_t d);

/* Vocabulary-parallel embedding: this rank holds rows [row0, row0 + v) of a
 * [vocab, d] table. y[i, :] = table[ids[i] - row0, :] for the ids in those
 * rows and 0 for the others (the ranks' outputs add up to the embedding);
 * an id outside [0, vocab) is fatal. Its gradient: dtable = 0, then
 * dtable[ids[i] - row0, :] += dy[i, :] for the ids in the rows, in order. */
void pfrt_k_embedding_rows(const float *table, const int64_t *ids, float *y,
                           int64_t n, int64_t v, int64_t d, int64_t row0,
                           int64_t vocab);
void pfrt_k_embedding_grad_rows(const int64_t *ids, const float *dy,
                                float *dtable, int64_t n, int64_t v, int64_t d,
                                int64_t row0, int64_t vocab);

/* Layer norm of `rows` rows of `c` elements (the last axis): y = xhat * gamma
 * + beta with each row's mean and biased variance (double inside); its
 * input gradient dx = invstd / c * (c g - sum(g) - xhat sum(g xhat)),
 * g = dy * gamma; and dgamma = sum over rows of dy * xhat, dbeta = sum of
 * dy. */
void pfrt_k_layer_norm(const float *x, const float *gamma, const float *beta,
                       float *y, int64_t rows, int64_t c, double eps);
void pfrt_k_layer_norm_grad_input(const float *x, const float *gamma,
                                  const float *dy, float *dx, int64_t rows,
                                  int64_t c, double eps);
void pfrt_k_layer_norm_grad_params(const float *x, const float *dy,
                                   float *dgamma, float *dbeta, int64_t rows,
                                   int64_t c, double eps);

/* Softmax along the middle axis of [outer, n, inner] (log-softmax when
 * log != 0), and its gradient from the forward output y: softmax
 * dx = y (dy - sum(dy y)), log-softmax dx = dy - exp(y) sum(dy). Sums and
 * the normaliser in double. */
void pfrt_k_softmax(const float *x, float *y, int64_t outer, int64_t n,
                    int64_t inner, int32_t log);
void pfrt_k_softmax_grad(const float *y, const float *dy, float *dx,
                         int64_t outer, int64_t n, int64_t inner, int32_t log);
/* The attention softmax fused with what precedes and follows it, over rows
 * of n (the last axis), each result bit for bit that of the separate
 * kernels:
 *   softmax_masked       y = softmax(mask ? fill : x * (float)scale) by
 *                        rows, as pfrt_k_scale, pfrt_k_masked_fill and
 *                        pfrt_k_softmax; the mask (of maskDtype, a
 *                        PFRT_DTYPE_*; null for none) holds mask_rows rows
 *                        of n repeated over the rows (row r reads row
 *                        r % mask_rows: a mask broadcast over the leading
 *                        axes), mask_rows dividing rows;
 *   softmax_grad_scaled  dx = (float)scale * pfrt_k_softmax_grad(y, dy).
 * CPU only: the compiler fuses them on CPU ranks. */
void pfrt_k_softmax_masked(const float *x, const void *mask, int32_t maskDtype,
                           int64_t mask_rows, double scale, double fill,
                           float *y, int64_t rows, int64_t n, int32_t log);
void pfrt_k_softmax_grad_scaled(const float *y, const float *dy, float *dx,
                                int64_t rows, int64_t n, int32_t log,
                                double scale);
/* Scaled dot-product attention without a [T, S] buffer (tiled, online
 * softmax). Local blocks, row-major: q [B, H, T, D], k [B, H, S, D],
 * v [B, H, S, Dv], out [B, H, T, Dv], lse [B, H, T] (float32: the
 * log-sum-exp of each query row's scaled, masked scores; the backward reads
 * it). dims = {B, H, T, S, D, Dv} (D >= 1, the others >= 0).
 * score(t, s) = scale * q[t] . k[s] (+ mask if additive); key s takes part
 * in query t's row unless causal and s > t0 + t (torch's is_causal: the
 * lower triangle of an [L, S] ones matrix, top-left aligned), or a bool
 * mask is 0 there.
 * mask: null, or of maskDtype PFRT_DTYPE_F32 (added to the scores; -inf
 * excludes) or PFRT_DTYPE_BOOL (one byte, nonzero = takes part, as torch's
 * bool attn_mask); element (b, h, t, s) at
 * mask[b*ms[0] + h*ms[1] + t*ms[2] + s*ms[3]] with maskStrides ms (a stride
 * 0 broadcasts that axis).
 * Dropout (dropoutP > 0): the probability p(t, s) is kept iff u >= dropoutP
 * and then divided by (1 - dropoutP), u being the runtime's Philox uniform
 * at the logical index (b0 + b, h0 + h, t0 + t, s) of a tensor of logical
 * shape {LB, LH, LT, S}, under `seed` and the sub-stream
 * pfrt_stream_for_step(pfrt_stream_for_step(stream, data step), microbatch)
 * exactly as pfrt_k_dropout draws it (float(dropoutP) the threshold,
 * float(1 / (1 - dropoutP)) the factor): so fused attention with dropout
 * equals pf.dropout applied to the materialised probabilities
 * [LB, LH, LT, S], bit for bit in the mask.
 * logical = {LB, LH, LT, S, b0, h0, t0, 0} (null: the local block is the
 * whole tensor, offsets 0).
 * A query row in which no key takes part gives out = 0 and lse = -inf.
 * Returns 0, or a clear fatal error on bad arguments (the checks shared
 * with the device twin). Float32 products (BLAS tiles) and accumulators,
 * the running sums in double; deterministic. */
int pfrt_k_attention(const float *q, const float *k, const float *v,
                     const void *mask, int32_t maskDtype,
                     const int64_t *maskStrides, float *out, float *lse,
                     const int64_t *dims, double scale, int32_t causal,
                     double dropoutP, uint64_t seed, uint64_t stream,
                     int64_t microbatch, const int64_t *logical);
/* Its gradient (flash-attention backward: probabilities recomputed from q,
 * k and lse tile by tile; delta = rowsum(dout * out)). Writes dq [B,H,T,D],
 * dk [B,H,S,D], dv [B,H,S,Dv] (overwrites, does not accumulate). Same mask,
 * dropout (same u, same keep set) and causal rules as the forward. */
int pfrt_k_attention_grad(const float *q, const float *k, const float *v,
                          const void *mask, int32_t maskDtype,
                          const int64_t *maskStrides, const float *out,
                          const float *lse, const float *dout, float *dq,
                          float *dk, float *dv, const int64_t *dims,
                          double scale, int32_t causal, double dropoutP,
                          uint64_t seed, uint64_t stream, int64_t microbatch,
                          const int64_t *logical);
void pfrt_k_activation_grad(int32_t kind, const float *x, const float *dy,
                            float *dx, int64_t n);

/* Element-wise over n elements:
 *   relu       y = x < 0 ? 0 : x  (NaN stays NaN)
 *   relu_grad  dx = y > 0 ? dy : 0  (y is relu's output)
 *   add        out = a + b
 *   scale      y = x * (float)s
 *   copy       y = x
 *   fill       y = (float)v
 * relu, relu_grad, add and scale (and bias_add below) also allow the output
 * to alias any input; copy allows y == x. */
void pfrt_k_relu(const float *x, float *y, int64_t n);
void pfrt_k_relu_grad(const float *y, const float *dy, float *dx, int64_t n);
/* out = a * b element-wise (out may alias a or b). */
void pfrt_k_mul(const float *a, const float *b, float *out, int64_t n);
void pfrt_k_add(const float *a, const float *b, float *out, int64_t n);
/* out = a - b, out = a / b element-wise (out may alias a or b). */
void pfrt_k_sub(const float *a, const float *b, float *out, int64_t n);
void pfrt_k_div(const float *a, const float *b, float *out, int64_t n);
/* NumPy broadcasting of x (in_shape) to y (out_shape), both of `rank` axes
 * (in_shape[d] == out_shape[d] or 1); elements of elem_bytes (1, 4 or 8)
 * bytes. x and y must not overlap. */
void pfrt_k_broadcast(const void *x, void *y, int64_t rank,
                      const int64_t *in_shape, const int64_t *out_shape,
                      int64_t elem_bytes);
/* y = mask != 0 ? value : x; the mask's element type is maskDtype (a
 * PFRT_DTYPE_*) (y may alias x). */
void pfrt_k_masked_fill(const float *x, const void *mask, float *y, int64_t n,
                        int32_t maskDtype, double value);
void pfrt_k_scale(const float *x, float *y, int64_t n, double s);
void pfrt_k_copy(const float *x, float *y, int64_t n);
void pfrt_k_fill(float *y, int64_t n, double v);

/* Comparisons and boolean tensors (src/cpu/Logical.cpp), element-wise over
 * n elements; `dtype` is a PFRT_DTYPE_*, a bool one byte (0 or 1; any
 * non-zero byte reads as true). The output may alias an input of its size.
 *   compare  out = a <predicate> b: 0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge
 *            (a NaN compares false but for ne), a and b of `dtype`;
 *   logical  out = a <kind> b: 0 and, 1 or, 2 xor, 3 not (b unused, may be
 *            NULL);
 *   where    out = cond ? a : b, a, b and out of `dtype`;
 *   cast     y = x converted from xDtype to yDtype: to bool x != 0 (NaN
 *            is true); from bool 0 or 1; float to integer toward zero (NaN
 *            gives 0, out-of-range values the nearest representable one);
 *            integer to integer keeps the low bits; to bf16 or f16
 *            round to nearest even (an integer through float32; NaN stays
 *            NaN, f16 overflows to inf and has subnormals), from them
 *            exact. */
void pfrt_k_compare(const void *a, const void *b, uint8_t *out, int64_t n,
                    int32_t dtype, int32_t predicate);
void pfrt_k_logical(const uint8_t *a, const uint8_t *b, uint8_t *out, int64_t n,
                    int32_t kind);
void pfrt_k_where(const uint8_t *cond, const void *a, const void *b, void *out,
                  int64_t n, int32_t dtype);
void pfrt_k_cast(const void *x, int32_t xDtype, void *y, int32_t yDtype,
                 int64_t n);

/* y[o, c, i] = x[o, c, i] + b[c], x viewed as [outer, c, inner]. */
void pfrt_k_bias_add(const float *x, const float *b, float *y, int64_t outer,
                     int64_t c, int64_t inner);
/* The same followed by ReLU in one pass, bit for bit pfrt_k_relu of
 * pfrt_k_bias_add's result (s < 0 ? 0 : s, so NaN and -0 pass through). */
void pfrt_k_bias_add_relu(const float *x, const float *b, float *y,
                          int64_t outer, int64_t c, int64_t inner);

/* x has `rank` (0..32) dims `shape`; reduce[i] != 0 marks a reduced axis.
 * y is x with those axes dropped (kept axes in order); an output element
 * whose reduced extent is empty is 0. */
void pfrt_k_reduce_sum(const float *x, float *y, int64_t rank,
                       const int64_t *shape, const int8_t *reduce);

/* y has shape[perm[i]] as dim i, and y axis i is x axis perm[i]; perm is a
 * permutation of 0..rank-1 (rank 0..32). */
void pfrt_k_transpose(const float *x, float *y, int64_t rank,
                      const int64_t *shape, const int64_t *perm);

/* C[b] = op(A[b]) * op(B[b or 0]) for b < batch, op(X) = X^T if tX != 0.
 * A is batch x (ta ? K x M : M x K); B is batchB x (tb ? N x K : K x N)
 * with batchB == batch or batchB == 1 (one B shared by every batch
 * entry); C is batch x M x N. Through pfrt_sgemm (float32 accumulation). */
void pfrt_k_matmul(const float *a, const float *b, float *c, int64_t batch,
                   int64_t batchB, int64_t m, int64_t n, int64_t k, int32_t ta,
                   int32_t tb);
/* The same with C += op(A) * op(B) (beta = 1): a weight gradient
 * accumulated over micro-batches straight into its buffer. */
void pfrt_k_matmul_acc(const float *a, const float *b, float *c, int64_t batch,
                       int64_t batchB, int64_t m, int64_t n, int64_t k,
                       int32_t ta, int32_t tb);
/* The same with C[b] = op(A[b]) * op(B[b or 0]) + bias, bias[N] added to
 * every row: C is filled with the bias rows, then the GEMM accumulates
 * into it (beta = 1), one pass over C less than a GEMM and a bias_add. */
void pfrt_k_matmul_bias(const float *a, const float *b, const float *bias,
                        float *c, int64_t batch, int64_t batchB, int64_t m,
                        int64_t n, int64_t k, int32_t ta, int32_t tb);
/* A Linear's weight gradient and bias gradient in one call: C = A^T B
 * (A k x m, B k x n, C m x n, row-major; accumulate != 0 adds into C as
 * pfrt_k_matmul_acc does) and dbias[i] = the sum over the k rows of A's
 * column i, as pfrt_k_reduce_sum sums axis 0 (GPU ranks: cuBLASLt's BGRADB
 * epilogue). */
void pfrt_k_matmul_bgrad(const float *a, const float *b, float *c, float *dbias,
                         int64_t m, int64_t n, int64_t k, int32_t accumulate);
/* The same followed by a ReLU: C = max(op(A) op(B) + bias, 0), a Linear and
 * its ReLU in one call (GPU ranks: cuBLASLt's RELU_BIAS epilogue). */
void pfrt_k_matmul_bias_relu(const float *a, const float *b, const float *bias,
                             float *c, int64_t batch, int64_t batchB, int64_t m,
                             int64_t n, int64_t k, int32_t ta, int32_t tb);
/* pfrt_k_matmul (accumulate = 0) or pfrt_k_matmul_acc (1) with element
 * types: A and B of abDtype, C of cDtype (PFRT_DTYPE_F32, _BF16 or _F16;
 * C float32 or A's type). The products are summed in float32 from the
 * exact values of the operands, and C (beta = 1: C's value added) is
 * rounded once to cDtype, to nearest even. GPU ranks call its twin,
 * cuBLASLt's bf16/f16 GEMM on tensor cores with float32 compute
 * (pf-widen-low-precision{keep-gemms}); CPU ranks widen their GEMMs and
 * never call it, but it is the same arithmetic (the twins' reference). */
void pfrt_k_matmul_typed(const void *a, const void *b, void *c, int64_t batch,
                         int64_t batchB, int64_t m, int64_t n, int64_t k,
                         int32_t ta, int32_t tb, int32_t abDtype,
                         int32_t cDtype, int32_t accumulate);
/* Attention on bf16/f16 tensors (dtype PFRT_DTYPE_BF16 or _F16): q, k, v,
 * out (and dout, dq, dk, dv) [B, H, T|S, D|Dv] packed in dtype, lse [B, H,
 * T] float32, mask NULL or an additive float32 bias broadcast over B and H
 * only (maskStrides packed over [T, S]), dims = {B, H, T, S, D, Dv}, D and
 * Dv multiples of 8 up to 128; causal without offset; no dropout. The
 * host rows widen the operands exactly, run pfrt_k_attention(_grad) and
 * round the outputs once to dtype (the reference of the twins). GPU ranks
 * call the twins, cuDNN 9's fused flash attention
 * (pfrt_cuda_cudnn_attention(_grad)); the compiler emits them for the ops
 * pf-select-cudnn-attention marks (pf.cudnn_attention = "bf16"/"f16"),
 * which only GPU pipelines run. */
int pfrt_k_attention_typed(const void *q, const void *k, const void *v,
                           const float *mask, const int64_t *maskStrides,
                           void *out, float *lse, const int64_t *dims,
                           int32_t dtype, double scale, int32_t causal);
int pfrt_k_attention_typed_grad(const void *q, const void *k, const void *v,
                                const float *mask, const int64_t *maskStrides,
                                const void *out, const float *lse,
                                const void *dout, void *dq, void *dk, void *dv,
                                const int64_t *dims, int32_t dtype,
                                double scale, int32_t causal);
/* C = A * B over strided views, what the compiler emits on CPU ranks when
 * an operand is a slice, reshape or transpose of a buffer (attention's
 * q, k and v are column ranges of one projection, heads moved to the
 * front): the view's strides go to the GEMM instead of a copy. For every
 * index (i_0 .. i_{r-1}) < batch_shape (r = rank, 0..8), A's matrix starts
 * at a + sum_d i_d a_strides[d] and is M x K with element (i, j) at
 * i a_strides[r] + j a_strides[r + 1]; B likewise (K x N, b_strides), C
 * (M x N, c_strides). Strides count elements, are >= 0, and one of each
 * matrix's two is 1 (row-major, or the transpose of row-major: C is then
 * computed as B^T A^T), its rows (columns) not overlapping. Through
 * pfrt_sgemm. */
void pfrt_k_matmul_strided(const float *a, const float *b, float *c,
                           int64_t rank, const int64_t *batch_shape,
                           const int64_t *a_strides, const int64_t *b_strides,
                           const int64_t *c_strides, int64_t m, int64_t n,
                           int64_t k);

/* loss[0] = mean over the n rows of logsumexp(logits[r]) - logits[r][label]
 * (c classes, max-subtracted, float64 sums). labels are int64 in [0, c); an
 * out-of-range label is fatal, naming the row and the value. n, c >= 1. */
void pfrt_k_softmax_xent(const float *logits, const int64_t *labels,
                         float *loss, int64_t n, int64_t c);
/* dlogits = (softmax(logits) - onehot(labels)) * dloss[0] / n. */
void pfrt_k_softmax_xent_grad(const float *logits, const int64_t *labels,
                              const float *dloss, float *dlogits, int64_t n,
                              int64_t c);
/* The same over the rows whose label is not ignore_index (torch's
 * ignore_index): the mean divides by the number of such rows (NaN when there
 * are none), ignored rows get zero gradients, and only the other labels must
 * lie in [0, c). */
void pfrt_k_softmax_xent_ignore(const float *logits, const int64_t *labels,
                                float *loss, int64_t n, int64_t c,
                                int64_t ignore_index);
void pfrt_k_softmax_xent_grad_ignore(const float *logits, const int64_t *labels,
                                     const float *dloss, float *dlogits,
                                     int64_t n, int64_t c,
                                     int64_t ignore_index);
/* The sum instead of the mean over the kept rows (NaN-free: 0 when every
 * row is ignored), and its gradient (dlogits scaled by dloss[0] alone);
 * count[0] = the number of labels other than ignore_index (n >= 0). Over
 * a split batch each rank's sum and count are partial sums of the
 * batch's. */
void pfrt_k_softmax_xent_sum(const float *logits, const int64_t *labels,
                             float *loss, int64_t n, int64_t c,
                             int64_t ignore_index);
void pfrt_k_softmax_xent_grad_sum(const float *logits, const int64_t *labels,
                                  const float *dloss, float *dlogits, int64_t n,
                                  int64_t c, int64_t ignore_index);
void pfrt_k_count_kept(const int64_t *labels, float *count, int64_t n,
                       int64_t ignore_index);

/* 2-D convolution, NCHW, no bias (im2col + pfrt_sgemm per image and group).
 *   dims = {N, C, H, W, O, KH, KW, OH, OW, stride_h, stride_w, pad_h,
 *           pad_w, dil_h, dil_w, groups}
 * x [N, C, H, W], w [O, C/groups, KH, KW], y [N, O, OH, OW]; zero padding;
 * groups divides C and O; strides and dilations >= 1, pads >= 0; OH and OW
 * must equal (H + 2 pad_h - dil_h (KH - 1) - 1) / stride_h + 1 (floor; same
 * for W), anything else is fatal. grad_input writes dx [N, C, H, W] and
 * grad_weight writes dw [O, C/groups, KH, KW] (both overwritten, summed over
 * the batch). */
void pfrt_k_conv2d(const float *x, const float *w, float *y,
                   const int64_t dims[16]);
void pfrt_k_conv2d_grad_input(const float *dy, const float *w, float *dx,
                              const int64_t dims[16]);
void pfrt_k_conv2d_grad_weight(const float *x, const float *dy, float *dw,
                               const int64_t dims[16]);

/* 2-D pooling, NCHW.
 *   dims = {N, C, H, W, OH, OW, KH, KW, stride_h, stride_w, pad_h, pad_w}
 * Window (oh, ow) covers rows oh*stride_h - pad_h + [0, KH) and columns
 * ow*stride_w - pad_w + [0, KW). Strides and kernel sizes >= 1,
 * 0 <= pad <= kernel / 2, and OH = (H + 2 pad_h - KH) / stride_h + 1
 * (floor, i.e. ceil_mode=False; same for W), anything else is fatal.
 * Max: padding never wins; NaN propagates. Its gradient sends dy to the
 * FIRST maximum of each window in row-major scan order (ties and
 * overlapping windows accumulate into dx, which is overwritten first).
 * Avg: count_include_pad=True, i.e. the window sum divided by KH*KW. */
void pfrt_k_max_pool2d(const float *x, float *y, const int64_t dims[12]);
void pfrt_k_max_pool2d_grad(const float *x, const float *dy, float *dx,
                            const int64_t dims[12]);
void pfrt_k_avg_pool2d(const float *x, float *y, const int64_t dims[12]);
void pfrt_k_avg_pool2d_grad(const float *dy, float *dx, const int64_t dims[12]);
/* y[n, c] = mean of x[n, c, 0..hw); the gradient spreads dy[n, c] / hw. */
void pfrt_k_global_avg_pool(const float *x, float *y, int64_t n, int64_t c,
                            int64_t hw);
void pfrt_k_global_avg_pool_grad(const float *dy, float *dx, int64_t n,
                                 int64_t c, int64_t hw);

/* Training-mode batch norm over x viewed as [N, C, HW] (HW = 1 for 2-D
 * input); statistics per channel over M = N*HW values, M >= 2 (as PyTorch):
 *   mean = sum(x) / M,  var = sum((x - mean)^2) / M   (biased, normalises)
 *   y = (x - mean) / sqrt(var + eps) * gamma + beta
 *   new_mean = (1 - momentum) * rmean + momentum * mean
 *   new_var  = (1 - momentum) * rvar  + momentum * var * M / (M - 1)
 * gamma == NULL means 1 and beta == NULL means 0 (affine=False); rmean,
 * rvar, new_mean and new_var may all be NULL (no running statistics), and
 * new_mean/new_var may alias rmean/rvar. The gradients recompute the batch
 * statistics from x (same eps); with xhat = (x - mean) / sqrt(var + eps)
 * and means over the M values of a channel:
 *   dx     = gamma / sqrt(var + eps) * (dy - mean(dy) - xhat mean(dy xhat))
 *   dgamma = sum(dy * xhat),  dbeta = sum(dy)
 */
void pfrt_k_batch_norm(const float *x, const float *gamma, const float *beta,
                       const float *rmean, const float *rvar, float *y,
                       float *new_mean, float *new_var, int64_t n, int64_t c,
                       int64_t hw, double eps, double momentum);

/* Batch norm in eval mode: y = (x - rmean) / sqrt(rvar + eps) * gamma +
 * beta per channel, with the running statistics (gamma/beta NULL: 1/0);
 * nothing is updated. */
void pfrt_k_batch_norm_eval(const float *x, const float *gamma,
                            const float *beta, const float *rmean,
                            const float *rvar, float *y, int64_t n, int64_t c,
                            int64_t hw, double eps);
void pfrt_k_batch_norm_grad_input(const float *x, const float *gamma,
                                  const float *dy, float *dx, int64_t n,
                                  int64_t c, int64_t hw, double eps);
void pfrt_k_batch_norm_grad_params(const float *x, const float *dy,
                                   float *dgamma, float *dbeta, int64_t n,
                                   int64_t c, int64_t hw, double eps);

/* Optimizer updates with torch.optim semantics, element-wise in float32;
 * *lr is the learning rate and *step the 1-based step count t, both read
 * at every call. Every new_* may alias its old counterpart (in place).
 * SGD (torch.optim.SGD, maximize=False):
 *   g = grad + weight_decay * p                (if weight_decay != 0)
 *   if momentum != 0:
 *     buf = t == 1 ? g : momentum * buf + (1 - dampening) * g
 *     g   = nesterov ? g + momentum * buf : buf
 *   new_p = p - lr * g
 * buf and new_buf are only touched when momentum != 0 (else they may be
 * NULL, and so may step); at t == 1 the incoming buf is ignored. nesterov
 * needs momentum > 0 and dampening == 0 (PyTorch's rule), else fatal.
 * Adam (torch.optim.Adam; AdamW when decoupled != 0; amsgrad=False):
 *   decoupled:  p = p * (1 - lr * weight_decay)
 *   otherwise:  g = grad + weight_decay * p    (if weight_decay != 0)
 *   m = lerp(m, g, 1 - beta1),  v = beta2 * v + (1 - beta2) * g * g
 *   bias_correction != 0:  step_size = lr / (1 - beta1^t),
 *                          denom = sqrt(v) / sqrt(1 - beta2^t) + eps
 *   bias_correction == 0:  step_size = lr,  denom = sqrt(v) + eps
 *   new_p = p - step_size * m / denom
 * (with bias correction, t < 1 is fatal).
 * (m and v start at 0 in PyTorch; the caller passes whatever state it has.) */
void pfrt_k_sgd(const float *p, const float *g, const float *lr,
                const float *buf, const float *step, float *new_p,
                float *new_buf, int64_t n, double momentum, double dampening,
                double weight_decay, int32_t nesterov);
void pfrt_k_adam(const float *p, const float *g, const float *m, const float *v,
                 const float *lr, const float *step, float *new_p, float *new_m,
                 float *new_v, int64_t n, double beta1, double beta2,
                 double eps, double weight_decay, int32_t decoupled,
                 int32_t bias_correction);
/* Multi-tensor updates: `count` tensors of one optimizer with one lr, step
 * and set of hyper-parameters, tensor i being pfrt_k_sgd's (p, g, buf,
 * new_p, new_buf) = ptrs[5 i .. 5 i + 4], or pfrt_k_adam's (p, g, m, v,
 * new_p, new_m, new_v) = ptrs[7 i .. 7 i + 6], of n[i] elements. The
 * arithmetic is the single update's, tensor by tensor. Where clear_grad
 * is not NULL and clear_grad[i] != 0, tensor i's g is zeroed after it is
 * read (the gradient's reset for the next step); g must then alias no
 * other tensor of the call. The device twins run each call as one launch
 * (per 48 tensors): the compiler groups a GPU rank's updates this way. */
void pfrt_k_sgd_multi(void *const *ptrs, const int64_t *n,
                      const int8_t *clear_grad, int64_t count, const float *lr,
                      const float *step, double momentum, double dampening,
                      double weight_decay, int32_t nesterov);
void pfrt_k_adam_multi(void *const *ptrs, const int64_t *n,
                       const int8_t *clear_grad, int64_t count, const float *lr,
                       const float *step, double beta1, double beta2,
                       double eps, double weight_decay, int32_t decoupled,
                       int32_t bias_correction);

/*===----------------------------------------------------------------------===
 * Memory, run-time scalars and losses (for compiled per-rank programs)
 *
 * Usable without pfrt_init; single-threaded like the rest of the runtime.
 *===----------------------------------------------------------------------===*/

/* Step-scoped bump allocator for every temporary of one step. Returns a
 * 64-byte-aligned, non-NULL block of `bytes` (>= 0) bytes, not zeroed,
 * valid until the next pfrt_arena_reset. Live blocks never move or
 * overlap; when the current chunk is full a new one is added, and the next
 * reset merges the chunks into one block big enough for the whole step, so
 * a steady-state step reuses the same memory without calling malloc. */
void *pfrt_arena_alloc(int64_t bytes);
/* Frees every arena block at once (the memory is kept for the next step)
 * and starts a new step for pfrt_report_loss. */
void pfrt_arena_reset(void);

/* The arena of the compiler's static memory plan: one block of `bytes`
 * bytes, 64-byte aligned and zeroed, allocated once (pf_init_params calls
 * it before anything else). Parameters, gradient buffers and optimizer
 * states sit at its start; every buffer of the step at an offset the
 * compiler chose. A second call with at most the planned size is a no-op
 * (the block and every pointer into it stay); a larger one is an error.
 * When the memory cannot be had the error names the rank, the bytes asked
 * and the bytes the machine has available. */
int pfrt_arena_plan(int64_t bytes);
/* The planned arena's address at `offset` for a buffer of `bytes` bytes;
 * records the high-water mark (the largest offset + bytes handed out). A
 * range outside the plan is an error, never a silent overrun. */
void *pfrt_arena_at(int64_t offset, int64_t bytes);
/* The planned size (0 before pfrt_arena_plan) and the high-water mark. */
int64_t pfrt_arena_planned_bytes(void);
int64_t pfrt_arena_high_water(void);
/* The process's peak resident set size in bytes (getrusage). */
int64_t pfrt_peak_rss_bytes(void);

/* Persistent allocation (parameters, optimizer state): 64-byte aligned,
 * zeroed, non-NULL, never freed. bytes >= 0. */
void *pfrt_alloc_persistent(int64_t bytes);

/* Named run-time float32 scalar ("lr", "step", ...): created as 0.0f on
 * first use; the pointer stays valid and the same for the program's life. */
float *pfrt_scalar(const char *name);

/* The rank that holds the loss reports *loss for micro-batch microbatch
 * (>= 0) of the current step; the value is copied at the call. Reporting
 * the same micro-batch twice in one step (between two pfrt_arena_reset
 * calls) is fatal. */
void pfrt_report_loss(const float *loss, int32_t microbatch);
/* A rank holding (its local part of) result `index` (>= 0, its position
 * among the step function's results; for a training step result 0 is the
 * loss) reports its `bytes` (>= 0) bytes of local data, in the result's
 * local row-major layout; copied at the call. Reporting an index twice in
 * one step (between two pfrt_arena_reset calls) is fatal. */
void pfrt_report_output(int32_t index, const void *data, int64_t bytes);

/*===----------------------------------------------------------------------===
 * Inputs and steps of compiled programs driven by a host (Python)
 *===----------------------------------------------------------------------===*/

/* With on != 0 every input a step needs must be given with pfrt_set_input
 * (a missing one is fatal); with 0 (the default, executables) steps make
 * the seed program's fixed synthetic batch: pfrt_synthetic_batch /
 * pfrt_synthetic_labels with data step 0. */
void pfrt_use_user_inputs(int32_t on);
/* Copies `bytes` bytes of this rank's local data of input `index` (its
 * position in the step function's global signature); used by every later
 * step until set again. */
int pfrt_set_input(int64_t index, const void *data, int64_t bytes);
/* Called by generated code: fills `out` with input `index` (user data of
 * exactly `bytes` bytes, or synthetic data of `dtype`: PFRT_DTYPE_F32
 * normals (PFRT_DTYPE_BF16 / _F16: those normals rounded),
 * PFRT_DTYPE_I64 / PFRT_DTYPE_I32 labels in [0, num_classes) (2 when
 * num_classes is 0 for int32), PFRT_DTYPE_BOOL 0 or 1). */
int pfrt_load_input(int64_t index, void *out, int64_t bytes, int32_t dtype,
                    int64_t num_classes, uint64_t seed, uint64_t stream,
                    int64_t ndim, const int64_t *shape);
/* As pfrt_load_input, for a rank holding `num_boxes` boxes of the logical
 * input (shape logical_shape[0..ndim)), each of shape box_shape, at
 * offsets[b*ndim .. b*ndim+ndim) for box b; the boxes lie one after another
 * in out (bytes in all). Synthetic data draws each box's logical elements,
 * so every layout sees the same logical batch; user data is this rank's
 * local data, already in box order. offsets may be NULL when ndim is 0.
 * Synthetic data is the same batch every step: it is generated into `out`
 * once, and a later load of the same input into the same `out` does
 * nothing, so the caller must not write `out` between loads (the
 * compiler's memory plan keeps inputs resident and read-only). */
int pfrt_load_input_boxes(int64_t index, void *out, int64_t bytes,
                          int32_t dtype, int64_t num_classes, uint64_t seed,
                          uint64_t stream, int64_t ndim,
                          const int64_t *logical_shape, int64_t num_boxes,
                          const int64_t *offsets, const int64_t *box_shape);
/* Before a step: arena reset, reported losses cleared, scalar "step" set to
 * step + 1. After it, pfrt_end_step makes the step's losses readable. */
void pfrt_begin_step(int64_t step);
void pfrt_end_step(void);
/* Losses this rank reported in the last step ended by pfrt_end_step, one
 * per micro-batch in order (0 on ranks without the loss). */
int32_t pfrt_loss_count(void);
float pfrt_loss_value(int32_t k);
/* Results this rank reported with pfrt_report_output in the last step ended
 * by pfrt_end_step: one more than the largest index reported (0: none),
 * the bytes of result `index` (-1 when this rank did not report it), and
 * a copy of them into `out` (`bytes` must be pfrt_output_bytes(index)). */
int32_t pfrt_output_count(void);
int64_t pfrt_output_bytes(int32_t index);
int pfrt_output_copy(int32_t index, void *out, int64_t bytes);

/*===----------------------------------------------------------------------===
 * Driver (static library pfrt_main; link -lpfrt_main -lpfrt)
 *===----------------------------------------------------------------------===*/

/* Generated code provides both functions; init_params may be NULL. */
typedef struct pfrt_program {
  void (*init_params)(uint64_t seed);
  void (*step)(int64_t step);
} pfrt_program;

/* The compiler's generated element-wise kernels (one table a rank):
 * `count` kernels, kernel i named names[i], taking num_pointers[i] buffers
 * (its outputs, then its inputs) and the element count. host_twins[i] is
 * its host build, void(void **buffers, int64_t n); `image` (image_bytes
 * bytes: a fatbin, a cubin, or NUL-terminated PTX; may be empty) holds the
 * device builds a GPU rank launches (pfrt_cuda_generated_kernels). The
 * compiled pf_init_params registers its rank's table; registering again
 * replaces it. */
typedef void (*pfrt_host_kernel)(void **buffers, int64_t n);
int pfrt_generated_kernels(const void *image, int64_t image_bytes,
                           int64_t count, const char *const *names,
                           const pfrt_host_kernel *host_twins,
                           const int64_t *num_pointers);
/* Runs generated kernel `index` over n elements with its buffers p0..
 * (num_pointers of them, as registered; the rest NULL): here its host
 * twin. Fatal for an unknown index, a wrong pointer count or a NULL
 * buffer. */
int pfrt_launch_generated(int64_t index, int64_t n, int64_t num_pointers,
                          void *p0, void *p1, void *p2, void *p3, void *p4,
                          void *p5, void *p6, void *p7);

/* Runs a job: pfrt_init; parses the flags
 *   --steps K      number of steps (default 1, K >= 0)
 *   --seed S       seed passed to init_params (default 0, uint64)
 *   --lr X         sets scalar "lr" (default 0.001)
 *   --threads T    BLAS threads (default 1)
 *   --loss-out F   append each step's losses to file F as one line of
 *                  space-separated %.9g values (only ranks that reported)
 *   --load DIR     pfrt_state_load(DIR) after init_params; steps go on from
 *                  the checkpoint's step k0 (default k0 = 0)
 *   --save DIR     pfrt_state_save(DIR, k0 + K) after the last step
 *   --data DIR     pfrt_set_data_dir(DIR)
 * (also --flag=value; --help prints the usage and returns 0); sets "lr",
 * calls init_params(seed), then for step k = k0..k0+K-1: sets scalar "step"
 * to k + 1 and the data step to k, pfrt_arena_reset(), times
 * program->step(k), and on a rank that
 * reported losses prints
 *   step <k> loss <v0> [<v1> ...] time_ms <t>
 * to stdout (k 0-based as passed to step(); one %.9g value per micro-batch
 * in micro-batch order; micro-batches 0..max must all be reported, a gap is
 * fatal). Finally pfrt_finalize; returns 0. An unknown flag, a missing or
 * malformed value ends every rank with exit status 2 and a usage message
 * on stderr (rank 0), after pfrt_finalize. */
int pfrt_main(int argc, char **argv, const pfrt_program *program);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PFRT_PFRT_H */
