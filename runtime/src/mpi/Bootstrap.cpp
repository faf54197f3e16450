//===- Bootstrap.cpp - MPI start-up, shut-down and fatal errors -----------===//

#include "../common/Internal.h"
#include "MpiInternal.h"
#include "pfrt/pfrt.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>
#include <vector>

namespace pfrt {
namespace {
MPI_Comm gWorld = MPI_COMM_NULL;

// Best guess of our rank for messages printed before or after MPI.
int rankForMessages() {
  State &st = state();
  if (st.initialized)
    return st.rank;
  int up = 0, down = 0;
  MPI_Initialized(&up);
  MPI_Finalized(&down);
  if (up && !down) {
    int r = 0;
    if (MPI_Comm_rank(MPI_COMM_WORLD, &r) == MPI_SUCCESS)
      return r;
  }
  // Hydra and Slurm export the rank before MPI starts.
  for (const char *var : {"PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char *v = getenv(var))
      return atoi(v);
  return 0;
}

std::vector<void (*)()> &finalizeHooks() {
  static std::vector<void (*)()> hooks;
  return hooks;
}

/// Under pf-run: leaves PF_RUN_JOB_DIR/pid.<pid>.<host> holding our rank,
/// so that pf-run can name a rank that dies without a word (killed, say)
/// from the process id MPICH's launcher reports. Best effort: a rank on
/// another node has no such directory. A second line says how the rank
/// ended: "finalized" (pfrt_finalize: not a failure) or "failed" (a fatal
/// error, written before the abort: this rank ended the job, whichever
/// process the launcher's cleanup killed first). The file is written
/// under another name and renamed, so a reader never sees it half written.
void leaveProcessFile(int rank, const char *end = nullptr) {
  const char *dir = getenv("PF_RUN_JOB_DIR");
  if (!dir || !*dir)
    return;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  char path[4096], tmp[4200];
  snprintf(path, sizeof(path), "%s/pid.%ld.%s", dir, long(getpid()), host);
  snprintf(tmp, sizeof(tmp), "%s/tmp.%ld.%s", dir, long(getpid()), host);
  if (FILE *f = fopen(tmp, "w")) {
    fprintf(f, "%d\n%s%s", rank, end ? end : "", end ? "\n" : "");
    if (fclose(f) == 0)
      rename(tmp, path);
    else
      unlink(tmp);
  }
}

[[noreturn]] void vfatal(const char *fmt, va_list ap) {
  char msg[4096];
  int n = snprintf(msg, sizeof(msg), "pfrt: rank %d: ", rankForMessages());
  if (n < 0)
    n = 0;
  vsnprintf(msg + n, sizeof(msg) - n - 1, fmt, ap);
  size_t len = strnlen(msg, sizeof(msg) - 2);
  msg[len++] = '\n';
  // One write so lines from different ranks do not interleave mid-line.
  ssize_t w = write(STDERR_FILENO, msg, len);
  (void)w;
  const State &st = state();
  if (st.initialized && !st.finalized)
    leaveProcessFile(st.rank, "failed");
  int up = 0, down = 0;
  MPI_Initialized(&up);
  MPI_Finalized(&down);
  if (up && !down) {
    // Under mpiexec our stderr is a pipe to the launcher, which stops
    // forwarding output once the abort tears the job down; without a pause
    // the one line that says what went wrong is sometimes lost.
    struct timespec pause = {0, 250 * 1000 * 1000};
    nanosleep(&pause, nullptr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  _exit(1);
}

int64_t readMaxMsgElems() {
  const char *v = getenv("PFRT_MAX_MSG_ELEMS");
  if (!v || !*v)
    return INT_MAX;
  errno = 0;
  char *end = nullptr;
  long long x = strtoll(v, &end, 10);
  if (errno || *end || x < 1 || x > INT_MAX)
    fatal("PFRT_MAX_MSG_ELEMS='%s' is not an integer in [1, %d]", v, INT_MAX);
  return x;
}
/// The communicator of a program on world ranks 0..size-1 (size <= 0: the
/// whole world). Created from MPI_COMM_WORLD over those ranks in order, so a
/// rank keeps its world number; only they take part (MPI_Comm_create_group),
/// and every program has its own context: two programs never mix messages.
MPI_Comm programComm(int worldRank, int worldSize, int64_t size) {
  MPI_Comm comm = MPI_COMM_NULL;
  if (size <= 0 || size == worldSize) {
    PFRT_MPI_AS("pfrt_init", MPI_Comm_dup, (MPI_COMM_WORLD, &comm));
    return comm;
  }
  if (size > worldSize || worldRank >= size)
    fatal("pfrt_init_program: a program on ranks 0..%lld, but this process is "
          "rank %d of a job of %d",
          (long long)size - 1, worldRank, worldSize);
  MPI_Group world, members;
  int range[1][3] = {{0, int(size) - 1, 1}};
  PFRT_MPI_AS("pfrt_init_program", MPI_Comm_group, (MPI_COMM_WORLD, &world));
  PFRT_MPI_AS("pfrt_init_program", MPI_Group_range_incl,
              (world, 1, range, &members));
  PFRT_MPI_AS("pfrt_init_program", MPI_Comm_create_group,
              (MPI_COMM_WORLD, members, 0x5046, &comm));
  PFRT_MPI_AS("pfrt_init_program", MPI_Group_free, (&members));
  PFRT_MPI_AS("pfrt_init_program", MPI_Group_free, (&world));
  return comm;
}

int initProgram(int *argc, char ***argv, int64_t size) {
  State &st = state();
  if (st.finalized)
    fatal("pfrt_init called after pfrt_finalize");
  if (st.initialized)
    return 0;
  int up = 0;
  MPI_Initialized(&up);
  if (!up) {
    int provided = 0;
    // Default handler is fatal here, which is what we want for start-up.
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    st.ownsMpi = true;
    if (provided < MPI_THREAD_FUNNELED)
      fatal("pfrt_init: MPI provides thread level %d, need FUNNELED", provided);
  }
  // Return codes are checked everywhere; a fatal handler would kill the job
  // without saying which pfrt call failed.
  PFRT_MPI(MPI_Comm_set_errhandler, (MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int worldRank = 0, worldSize = 1;
  PFRT_MPI(MPI_Comm_rank, (MPI_COMM_WORLD, &worldRank));
  PFRT_MPI(MPI_Comm_size, (MPI_COMM_WORLD, &worldSize));
  // A private world keeps our point-to-point traffic apart from any other
  // MPI user in the process (e.g. mpi4py in the Python front end, another
  // program): the whole job's, or a program's on part of it.
  gWorld = programComm(worldRank, worldSize, size);
  PFRT_MPI(MPI_Comm_set_errhandler, (gWorld, MPI_ERRORS_RETURN));
  PFRT_MPI(MPI_Comm_rank, (gWorld, &st.rank));
  PFRT_MPI(MPI_Comm_size, (gWorld, &st.size));
  // The ranks on this node, whatever the launcher exports (Hydra's
  // MPI_LOCALRANKID, Slurm's SLURM_LOCALID, none under a singleton): which
  // GPU a rank takes.
  MPI_Comm node = MPI_COMM_NULL;
  PFRT_MPI(MPI_Comm_split_type,
           (gWorld, MPI_COMM_TYPE_SHARED, st.rank, MPI_INFO_NULL, &node));
  PFRT_MPI(MPI_Comm_rank, (node, &st.localRank));
  PFRT_MPI(MPI_Comm_size, (node, &st.localSize));
  PFRT_MPI(MPI_Comm_free, (&node));
  st.initialized = true;
  leaveProcessFile(st.rank);
  st.maxMsgElems = readMaxMsgElems();
  double epoch = monotonicUs();
  PFRT_MPI(MPI_Bcast, (&epoch, 1, MPI_DOUBLE, 0, gWorld));
  st.epochUs = epoch;
  traceInit();
  return 0;
}
} // namespace

State &state() {
  static State st;
  return st;
}

void fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfatal(fmt, ap);
}

void fatalFromThread(const char *fmt, ...) {
  char msg[4096];
  int n = snprintf(msg, sizeof(msg), "pfrt: rank %d: ", state().rank);
  if (n < 0)
    n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof(msg) - n - 1, fmt, ap);
  va_end(ap);
  size_t len = strnlen(msg, sizeof(msg) - 2);
  msg[len++] = '\n';
  ssize_t w = write(STDERR_FILENO, msg, len);
  (void)w;
  if (state().initialized && !state().finalized)
    leaveProcessFile(state().rank, "failed");
  _exit(1);
}

void addFinalizeHook(void (*hook)()) {
  auto &hooks = finalizeHooks();
  if (std::find(hooks.begin(), hooks.end(), hook) == hooks.end())
    hooks.push_back(hook);
}

void requireInit(const char *fn) {
  const State &st = state();
  if (!st.initialized)
    fatal("%s called before pfrt_init", fn);
  if (st.finalized)
    fatal("%s called after pfrt_finalize", fn);
}

void mpiCheck(int rc, const char *call, const char *fn) {
  if (rc == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING + 1] = {0};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
    snprintf(text, sizeof(text), "MPI error code %d", rc);
  fatal("%s: %s failed: %s", fn, call, text);
}

MPI_Comm worldComm() { return gWorld; }

} // namespace pfrt

using namespace pfrt;

extern "C" {

void pfrt_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfatal(fmt, ap);
}

int pfrt_abi_version(void) { return PFRT_ABI_VERSION; }

int pfrt_init(int *argc, char ***argv) { return initProgram(argc, argv, 0); }

int pfrt_init_program(int64_t size) {
  return initProgram(nullptr, nullptr, size);
}

int pfrt_finalize(void) {
  requireInit("pfrt_finalize");
  State &st = state();
  // Every rank waits here, progressing its messages, until all have
  // arrived: MPI_Finalize may stop progressing them (MPICH over UCX waits
  // in its process manager's barrier), so a rank whose last send still
  // needed its sender's progress (a rendezvous) would wait forever for a
  // peer already finalizing. Seen on a GPU machine whose UCX lacked its
  // shared-memory modules: 4 ranks, the first stage spinning in its last
  // receives, the last stage in MPI_Finalize.
  for (void (*hook)() : finalizeHooks())
    hook();
  checkNoReduceInFlight("pfrt_finalize");
  PFRT_MPI(MPI_Barrier, (gWorld));
  traceFinalize();
  // Group communicators are left to MPI_Finalize: freeing them here would
  // add collective calls whose order would have to match across ranks.
  PFRT_MPI(MPI_Comm_free, (&gWorld));
  if (st.ownsMpi)
    PFRT_MPI(MPI_Finalize, ());
  st.finalized = true;
  leaveProcessFile(st.rank, "finalized");
  return 0;
}

int pfrt_rank(void) {
  requireInit("pfrt_rank");
  return state().rank;
}

int pfrt_world_size(void) {
  requireInit("pfrt_world_size");
  return state().size;
}

int pfrt_barrier(void) {
  requireInit("pfrt_barrier");
  CommScope trace("barrier", 0, state().size, -1);
  PFRT_MPI(MPI_Barrier, (gWorld));
  return 0;
}

} // extern "C"
