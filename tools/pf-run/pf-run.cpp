//===- pf-run.cpp - launches PipeFlow's per-rank executables --------------===//
//
// pf-run -n N DIR [options]   (pf-run --help lists them)
//
// Checks DIR/manifest.json (its format, its world size against N, the
// artifacts it names), then starts one process per rank through MPICH's
// mpiexec (MPMD: rank r runs DIR/rank<r>), on this node or on the nodes of
// an MPICH host file or host list. The exit code is the job's: a rank that
// fails ends the whole job. Usage errors exit with 2. Under Slurm,
// --srun-multi-prog writes the job for `srun --multi-prog` instead.
//
// mpiexec's output passes through pf-run (two FIFOs in a job directory):
// when a rank dies without saying why (killed, say), MPICH's launcher
// names only its process id, and pf-run names the rank from the file each
// rank leaves in the job directory at pfrt_init (PF_RUN_JOB_DIR; ranks on
// other nodes cannot, and are named by process id and host only).
//
//===----------------------------------------------------------------------===//

#include "pf/Target/ManifestFormat.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <regex>
#include <set>
#include <string>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace llvm;

static cl::OptionCategory runCategory("pf-run options");

static cl::opt<std::string> artifactDir(cl::Positional, cl::Required,
                                        cl::desc("<artifact directory>"),
                                        cl::cat(runCategory));

static cl::opt<unsigned>
    numRanks("n", cl::Required, cl::value_desc("N"),
             cl::desc("Number of ranks: the manifest's world size"),
             cl::cat(runCategory));

static cl::opt<unsigned> steps("steps", cl::init(1), cl::value_desc("K"),
                               cl::desc("Training steps to run"),
                               cl::cat(runCategory));

static cl::opt<uint64_t>
    seed("seed", cl::init(0), cl::value_desc("S"),
         cl::desc("Seed of parameter initialisation and of random ops"),
         cl::cat(runCategory));

static cl::opt<std::string> lr("lr", cl::init("0.001"), cl::value_desc("X"),
                               cl::desc("Learning rate (the scalar 'lr')"),
                               cl::cat(runCategory));

static cl::list<std::string>
    scalars("scalar", cl::value_desc("NAME=X"),
            cl::desc("Run-time scalar NAME, such as a parameter group's "
                     "learning rate lr.head (repeatable)"),
            cl::cat(runCategory));

static cl::opt<unsigned> threads("threads", cl::init(1), cl::value_desc("T"),
                                 cl::desc("BLAS threads per rank"),
                                 cl::cat(runCategory));

static cl::opt<std::string>
    lossOut("loss-out", cl::value_desc("file"),
            cl::desc("Append each step's loss to this file"),
            cl::cat(runCategory));

static cl::opt<std::string>
    traceDir("trace", cl::value_desc("directory"),
             cl::desc("Write each rank's Chrome trace into this directory "
                      "(PF_TRACE for the ranks)"),
             cl::cat(runCategory));

static cl::opt<std::string>
    dataDir("data", cl::value_desc("directory"),
            cl::desc("Input i of the step from <directory>/input<i>.npy (its "
                     "logical shape, or [N, ...] batches used in turn)"),
            cl::cat(runCategory));

static cl::opt<std::string>
    loadDir("load", cl::value_desc("checkpoint"),
            cl::desc("Start from this checkpoint (saved under any layout)"),
            cl::cat(runCategory));

static cl::opt<std::string>
    saveDir("save", cl::value_desc("checkpoint"),
            cl::desc("Save a checkpoint after the last step"),
            cl::cat(runCategory));

static cl::opt<bool> noCudaGraph(
    "no-cuda-graph",
    cl::desc("GPU ranks run every step uncaptured (default: each captures "
             "its second step as a CUDA graph and replays it)"),
    cl::cat(runCategory));

static cl::opt<bool>
    tf32("tf32",
         cl::desc("GPU ranks' GEMMs may use TF32 tensor cores (default: exact "
                  "float32)"),
         cl::cat(runCategory));

static cl::opt<std::string> gemmTune(
    "gemm-tune", cl::value_desc("file|1"),
    cl::desc("GPU ranks time up to 8 of cuBLASLt's algorithms for each GEMM "
             "shape and keep the fastest; a file keeps the choices for later "
             "runs (the same algorithms, the same bits), 1 this run only"),
    cl::cat(runCategory));

static cl::opt<std::string> gemmPrecision(
    "gemm-precision", cl::value_desc("fp32|3xtf32"),
    cl::desc("GPU ranks' GEMMs: fp32 (default, exact float32) or 3xtf32 "
             "(three TF32 tensor-core GEMMs on split operands: float32's "
             "accuracy at tensor-core speed)"),
    cl::cat(runCategory));

static cl::opt<bool> memoryReport(
    "memory-report",
    cl::desc("Each rank prints its planned arena, the arena's measured "
             "high-water mark, its peak RSS and the RSS before the arena "
             "(PF_MEMORY_REPORT for the ranks)"),
    cl::cat(runCategory));

static cl::opt<bool> commReport(
    "comm-report",
    cl::desc("Rank 0 prints each rank's communication at the end: calls and "
             "bytes a collective kind over NCCL and MPI, host round-trips, "
             "exposed communication time a kind: host time blocked in MPI, "
             "GPU compute-stream time waiting for communication in "
             "uncaptured steps (PF_COMM_REPORT for the ranks)"),
    cl::cat(runCategory));

static cl::opt<unsigned>
    timeout("timeout", cl::init(0), cl::value_desc("seconds"),
            cl::desc("Kill the job after this many seconds (0: no limit)"),
            cl::cat(runCategory));

static cl::opt<std::string> mpiexec("mpiexec", cl::init("mpiexec"),
                                    cl::value_desc("path"),
                                    cl::desc("The MPI launcher to run"),
                                    cl::cat(runCategory));

static cl::opt<std::string> hostfile(
    "hostfile", cl::value_desc("file"),
    cl::desc("Several nodes: MPICH's host file (mpiexec -f), one host[:slots] "
             "a line"),
    cl::cat(runCategory));
static cl::alias hostfileShort("f", cl::desc("Alias for --hostfile"),
                               cl::aliasopt(hostfile), cl::cat(runCategory));

static cl::opt<std::string>
    hosts("hosts", cl::value_desc("h1,h2,..."),
          cl::desc("Several nodes: the hosts to start ranks on (mpiexec "
                   "-hosts); ranks fill them in order"),
          cl::cat(runCategory));

static cl::opt<unsigned>
    ppn("ppn", cl::init(0), cl::value_desc("P"),
        cl::desc("Ranks per node (mpiexec -ppn; 0: MPICH's default)"),
        cl::cat(runCategory));

static cl::opt<bool> printCommand(
    "print-command",
    cl::desc("Print the mpiexec command line (one argument a line) instead of "
             "running it"),
    cl::cat(runCategory));

static cl::opt<std::string> srunMultiProg(
    "srun-multi-prog", cl::value_desc("file"),
    cl::desc("Write Slurm's --multi-prog configuration of the job (rank r "
             "runs DIR/rank<r> with the job's flags) to <file> instead of "
             "running it; then: srun --mpi=pmi2 -n N --multi-prog <file>"),
    cl::cat(runCategory));

[[noreturn]] static void fail(const Twine &message, int code = 2) {
  errs() << "pf-run: " << message << "\n";
  std::exit(code);
}

extern char **environ;

/// Whether `text` is a finite number, as the rank driver will read it.
static bool isNumber(StringRef text) {
  double v;
  return !text.trim().empty() && !text.getAsDouble(v) && std::isfinite(v);
}

/// Parses the command line; usage errors end the process with exit code 2.
static void parseCommandLine(int argc, char **argv) {
  // `-h`, which the launcher has always accepted: --help's short form.
  static cl::alias shortHelp("h", cl::desc("Alias for --help"),
                             cl::aliasopt(*cl::getRegisteredOptions()["help"]));
  cl::HideUnrelatedOptions(runCategory);
  std::string errors;
  raw_string_ostream errorStream(errors);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "PipeFlow launcher: checks DIR/manifest.json (written by "
          "pf-translate --pf-emit-rank-artifacts --pf-artifact-dir=DIR) and "
          "runs DIR/rank<r> on N ranks under mpiexec\n",
          &errorStream)) {
    errs() << errors;
    if (!StringRef(errors).contains("--help"))
      errs() << "pf-run: see pf-run --help\n";
    std::exit(2);
  }
  if (numRanks < 1)
    fail("-n needs at least 1 rank");
  if (threads < 1)
    fail("--threads needs at least 1 thread");
  if (!isNumber(lr))
    fail("--lr needs a number, got '" + lr + "'");
  for (StringRef sc : scalars) {
    auto [name, value] = sc.split('=');
    if (name.empty() || !sc.contains('=') || !isNumber(value))
      fail("--scalar needs NAME=X with X a number, got '" + sc + "'");
  }
  if (!gemmPrecision.empty() && gemmPrecision != "fp32" &&
      gemmPrecision != "3xtf32")
    fail("--gemm-precision needs fp32 or 3xtf32, got '" + gemmPrecision + "'");
  if (!hostfile.empty() && !hosts.empty())
    fail("--hostfile and --hosts both name the nodes: give one");
  if (!hostfile.empty() && !sys::fs::is_regular_file(hostfile))
    fail("--hostfile " + hostfile + ": no such file");
  if (!hosts.empty()) {
    SmallVector<StringRef> names;
    StringRef(hosts).split(names, ',');
    if (llvm::any_of(names, [](StringRef h) { return h.trim().empty(); }))
      fail("--hosts needs comma-separated host names, got '" + hosts + "'");
  }
  if (!srunMultiProg.empty() &&
      (!hostfile.empty() || !hosts.empty() || ppn != 0))
    fail("--srun-multi-prog: Slurm places the ranks (its allocation), so "
         "--hostfile, --hosts and --ppn do not apply");
}

/// Slurm's --multi-prog line for one rank: the rank, then the command.
/// Slurm splits the line at blanks and expands %t and %o, so an argument
/// holding a blank, a quote, '%' or '#' cannot be written: a usage error
/// naming it.
static std::string multiProgLine(unsigned rank, ArrayRef<std::string> cmd) {
  std::string line = std::to_string(rank);
  for (const std::string &a : cmd) {
    if (a.find_first_of(" \t\n'\"%#\\") != std::string::npos)
      fail("--srun-multi-prog: the argument '" + a +
           "' cannot be written to Slurm's configuration (blanks, quotes, "
           "'%', '#' and '\\' have meanings there)");
    line += " " + a;
  }
  return line;
}

/// Checks DIR/manifest.json: its format first, then its world size.
static void checkManifest() {
  SmallString<256> manifestPath(artifactDir);
  sys::path::append(manifestPath, "manifest.json");
  std::string compile = "with pf-translate --pf-emit-rank-artifacts "
                        "--pf-artifact-dir=" +
                        artifactDir + ")";
  auto buffer = MemoryBuffer::getFile(manifestPath);
  if (!buffer)
    fail(manifestPath + ": " + buffer.getError().message() + " (compile " +
         compile);
  Expected<json::Value> manifest = json::parse((*buffer)->getBuffer());
  if (!manifest)
    fail(manifestPath + ": not valid JSON: " + toString(manifest.takeError()));
  const json::Object *root = manifest->getAsObject();
  if (!root)
    fail(manifestPath + ": not a JSON object");

  // The format first: a manifest of another version may mean anything.
  StringRef expected = mlir::pf::kRankArtifactsFormat;
  std::optional<StringRef> format = root->getString("format");
  if (!format)
    fail(manifestPath + ": no \"format\" field, expected \"" + expected +
         "\" (recompile " + compile);
  if (*format != expected)
    fail(manifestPath + ": format \"" + *format + "\", expected \"" + expected +
         "\" (recompile " + compile);

  std::optional<int64_t> world = root->getInteger("world_size");
  if (!world || !root->getArray("ranks"))
    fail(manifestPath + ": missing world_size or ranks");
  if (*world != numRanks.getValue())
    fail("the artifacts in " + artifactDir + " are for " + Twine(*world) +
         " ranks, but -n " + Twine(numRanks.getValue()) + " was given");
}

namespace {

/// What MPICH's launcher said about the process that ended the job.
struct Culprit {
  std::string pid, host, exitString;
};

/// Forwards one of mpiexec's streams (a FIFO) to ours, watching its lines
/// for the launcher's report of a process that died.
struct Stream {
  int in = -1;     // read end
  int keeper = -1; // our own write end: no EOF before mpiexec opens its own
  int out = -1;
  std::string line;

  void scan(Culprit &c) {
    static const std::regex pid("PID ([0-9]+) RUNNING AT ([^ ]+)");
    static const std::regex exitString("EXIT STRING: (.*)$");
    std::smatch m;
    if (c.pid.empty() && std::regex_search(line, m, pid)) {
      c.pid = m[1];
      c.host = m[2];
    } else if (c.exitString.empty() && std::regex_search(line, m, exitString))
      c.exitString = m[1];
  }

  /// Reads what is there; false at end of stream.
  bool pump(Culprit &c) {
    char buf[65536];
    ssize_t n = read(in, buf, sizeof(buf));
    if (n < 0)
      return errno == EINTR || errno == EAGAIN;
    if (n == 0)
      return false;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out, buf + done, size_t(n - done));
      if (w < 0 && errno != EINTR)
        break; // our own output is gone: keep draining mpiexec's
      done += w > 0 ? w : 0;
    }
    for (ssize_t k = 0; k < n; ++k) {
      if (buf[k] == '\n') {
        scan(c);
        line.clear();
      } else if (line.size() < 4096) {
        line.push_back(buf[k]);
      }
    }
    return true;
  }
};

/// Makes DIR/NAME a FIFO and opens both of its ends here.
Stream openStream(StringRef dir, StringRef name, int out,
                  SmallString<128> &path) {
  path = dir;
  sys::path::append(path, name);
  Stream s;
  s.out = out;
  if (mkfifo(path.c_str(), 0600) != 0 ||
      (s.in = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
      (s.keeper = open(path.c_str(), O_WRONLY | O_CLOEXEC)) < 0)
    fail("cannot make " + path + ": " + std::strerror(errno));
  return s;
}

/// A pid file pfrt_init leaves (runtime/src/mpi/Bootstrap.cpp): the rank,
/// then how it ended ("finalized", "failed"; "" while it runs). Empty
/// fields where the file cannot be read.
std::pair<std::string, std::string> readPidFile(StringRef path) {
  auto text = MemoryBuffer::getFile(path);
  if (!text)
    return {};
  auto [rank, end] = (*text)->getBuffer().split('\n');
  return {rank.trim().str(), end.trim().str()};
}

/// The rank whose pfrt_init left DIR/pid.<pid>.<host> (or any host).
std::optional<std::string> rankOfProcess(StringRef dir, const Culprit &c) {
  std::optional<std::string> anyHost;
  std::error_code ec;
  for (sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    StringRef name = sys::path::filename(it->path());
    if (!name.consume_front("pid." + c.pid + "."))
      continue;
    std::string rank = readPidFile(it->path()).first;
    if (rank.empty())
      continue;
    if (name == c.host)
      return rank;
    anyHost = rank;
  }
  return anyHost;
}

/// Watches this host's ranks (their pid files in the job directory) with
/// pidfds, to tell which one ended the job: when a rank dies, MPICH's
/// launcher kills the others and then names one bad termination, which
/// need not be the first (two ranks killed by SIGKILL look alike to it).
/// A pid file's second line says how its rank ended: "finalized" (well)
/// or "failed" (a fatal error of the runtime, written before its abort).
struct RankWatch {
  struct Rank {
    std::string pid, rank, file;
  };
  /// Whether every rank in `ranks` has a pidfd (one gone before its file
  /// was seen, or a kernel without pidfds, has none).
  bool allWatched = true;
  std::string host;
  std::vector<int> fds; // one per ranks[k]; -1 once no longer watched
  std::vector<Rank> ranks;
  std::set<std::string> seen;
  /// The rank(s) seen ending first (several: they ended in one poll), and
  /// the ranks whose files said "failed" then (a rank's own fatal error
  /// marks it before its abort; one that a peer's end caused, say an NCCL
  /// watchdog's, only after that end).
  std::vector<size_t> firstEnded, failedAtFirstEnd;
  bool decided = false;

  RankWatch() {
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    host = name;
  }
  ~RankWatch() {
    for (int fd : fds)
      if (fd >= 0)
        close(fd);
  }

  /// The second line of rank k's pid file ("" while it runs).
  std::string endOf(size_t k) const {
    return readPidFile(ranks[k].file).second;
  }

  /// Picks up the pid files written since the last call (the runtime
  /// writes each under another name and renames it: never half written).
  void scan(StringRef dir, size_t expected) {
    if (seen.size() >= expected)
      return;
    std::error_code ec;
    for (sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec)) {
      StringRef name = sys::path::filename(it->path());
      if (!name.starts_with("pid.") || seen.count(name.str()))
        continue;
      auto [pid, fileHost] = name.drop_front(4).split('.');
      if (fileHost != host)
        continue;
      std::string rank = readPidFile(it->path()).first;
      if (rank.empty())
        continue; // not written yet: next time
      seen.insert(name.str());
      // Gone already, or no pidfds: known (its file may say "failed"),
      // but not watched.
      int fd = int(syscall(SYS_pidfd_open, std::atoi(pid.str().c_str()), 0));
      if (fd < 0)
        allWatched = false;
      fds.push_back(fd);
      ranks.push_back({pid.str(), rank, it->path()});
    }
  }

  /// After a poll over fds (revents in `polled`, in fds' order): which
  /// ranks ended first, leaving out those that finalized.
  void check(const struct pollfd *polled) {
    if (decided)
      return;
    std::vector<size_t> ended;
    for (size_t k = 0; k < fds.size(); ++k)
      if (fds[k] >= 0 && (polled[k].revents & (POLLIN | POLLHUP | POLLERR))) {
        // A rank that got through pfrt_finalize ended well: no longer
        // watched, the job goes on.
        if (endOf(k) == "finalized") {
          close(fds[k]);
          fds[k] = -1;
        } else {
          ended.push_back(k);
        }
      }
    if (ended.empty())
      return;
    decided = true;
    firstEnded = ended;
    for (size_t k = 0; k < ranks.size(); ++k)
      if (endOf(k) == "failed")
        failedAtFirstEnd.push_back(k);
  }

  /// "rank R (process P on H)"; for several, "ranks R1, R2 (processes P1,
  /// P2 on H)".
  std::string describe(ArrayRef<size_t> which) const {
    std::string r, p;
    for (size_t k : which) {
      r += (r.empty() ? "" : ", ") + ranks[k].rank;
      p += (p.empty() ? "" : ", ") + ranks[k].pid;
    }
    bool one = which.size() == 1;
    return (one ? "rank " : "ranks ") + r +
           (one ? " (process " : " (processes ") + p + " on " + host + ")";
  }

  /// When every rank ran here (`numRanks` watched), what pf-run says
  /// instead of MPICH's report naming `culprit` ("" to let it stand): a
  /// rank that failed, if the report names another; else the rank(s) that
  /// ended first, if the report names one its cleanup killed.
  std::string blame(const Culprit &culprit, size_t numRanks) const {
    if (culprit.pid.empty() || ranks.size() != numRanks)
      return "";
    auto named = [&](ArrayRef<size_t> which) {
      for (size_t k : which)
        if (ranks[k].pid == culprit.pid)
          return true;
      return false;
    };
    std::string report =
        " (mpiexec reported process " + culprit.pid +
        (culprit.exitString.empty() ? "" : ": " + culprit.exitString) + ")";
    // The ranks that failed of their own accord: marked when the first
    // ended (or the first itself, marked just before it ended; every mark
    // if none was seen ending).
    std::vector<size_t> failed = failedAtFirstEnd, failedFirst;
    for (size_t k = 0; k < ranks.size(); ++k)
      if ((!decided || llvm::is_contained(firstEnded, k)) &&
          !llvm::is_contained(failed, k) && endOf(k) == "failed")
        failed.push_back(k);
    if (!failed.empty()) {
      if (named(failed))
        return "";
      for (size_t k : firstEnded)
        if (llvm::is_contained(failed, k))
          failedFirst.push_back(k);
      size_t pick = failedFirst.empty() ? failed[0] : failedFirst[0];
      return describe(pick) + " ended the job with an error" + report;
    }
    // A rank killed by MPICH's cleanup reads "Killed (signal 9)"; another
    // end (an exit code, another signal) is the report's own finding.
    bool killed = culprit.exitString.find("signal 9") != std::string::npos;
    if (firstEnded.empty() || !killed || !allWatched)
      return "";
    if (firstEnded.size() == 1)
      return named(firstEnded)
                 ? ""
                 : describe(firstEnded) + " ended the job first" + report;
    return describe(firstEnded) + " ended the job together" + report;
  }
};

/// Runs mpiexec with its output through pf-run; returns its exit code (or
/// exits: it could not start, it ran past --timeout).
int runJob(StringRef launcher, ArrayRef<std::string> args,
           std::vector<std::string> env) {
  SmallString<128> jobDir;
  if (std::error_code ec = sys::fs::createUniqueDirectory("pf-run", jobDir))
    fail("cannot make a job directory: " + ec.message());
  auto removeJobDir = [&] {
    // (sys::fs::remove refuses FIFOs)
    std::error_code ec;
    std::vector<std::string> files;
    for (sys::fs::directory_iterator it(jobDir, ec), end; it != end && !ec;
         it.increment(ec))
      files.push_back(it->path());
    for (const std::string &f : files)
      unlink(f.c_str());
    rmdir(jobDir.c_str());
  };
  // (fail() exits without unwinding: each way out removes it)
  scope_exit cleanup(removeJobDir);
  SmallString<128> outPath, errPath;
  Stream streams[2] = {openStream(jobDir, "stdout", STDOUT_FILENO, outPath),
                       openStream(jobDir, "stderr", STDERR_FILENO, errPath)};
  for (Stream &s : streams)
    fcntl(s.in, F_SETFL, fcntl(s.in, F_GETFL) & ~O_NONBLOCK);
  env.push_back("PF_RUN_JOB_DIR=" + std::string(jobDir));

  std::vector<StringRef> argRefs(args.begin(), args.end());
  std::vector<StringRef> envRefs(env.begin(), env.end());
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(outPath),
                                          StringRef(errPath)};
  std::string error;
  bool failedToRun = false;
  sys::ProcessInfo pi = sys::ExecuteNoWait(launcher, argRefs, envRefs,
                                           redirects, 0, &error, &failedToRun);
  if (failedToRun || pi.Pid <= 0) {
    removeJobDir();
    fail("cannot start " + launcher + ": " + error);
  }

  Culprit culprit;
  RankWatch watch;
  auto start = std::chrono::steady_clock::now();
  bool exited = false, timedOut = false, open[2] = {true, true};
  int status = 0;
  std::vector<struct pollfd> fds;
  while (open[0] || open[1]) {
    if (!exited && !watch.decided)
      watch.scan(jobDir, numRanks.getValue());
    fds.clear();
    for (int k = 0; k < 2; ++k)
      fds.push_back({open[k] ? streams[k].in : -1, POLLIN, 0});
    if (!watch.decided)
      for (int fd : watch.fds)
        fds.push_back({fd, POLLIN, 0});
    int ready = poll(fds.data(), nfds_t(fds.size()), 100);
    if (ready > 0 && fds.size() > 2)
      watch.check(fds.data() + 2);
    for (int k = 0; k < 2 && ready > 0; ++k)
      if (fds[k].revents & (POLLIN | POLLHUP | POLLERR))
        open[k] = streams[k].pump(culprit);
    if (exited) {
      // What mpiexec wrote is in the FIFOs: once they are empty, stop, even
      // if a process it left behind still holds them open.
      if (ready == 0)
        break;
      continue;
    }
    pid_t got = waitpid(pi.Pid, &status, WNOHANG);
    if (got == pi.Pid || (got < 0 && errno != EINTR)) {
      exited = true;
      // mpiexec is gone: its output ends when the last of its processes
      // closes it.
      for (Stream &s : streams)
        close(s.keeper);
      continue;
    }
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (timeout != 0 && elapsed > double(timeout) && !timedOut) {
      timedOut = true;
      kill(pi.Pid, SIGKILL);
    }
  }
  for (Stream &s : streams)
    close(s.in);
  if (timedOut) {
    removeJobDir();
    fail("the job ran past --timeout " + Twine(timeout) + " s and was killed",
         124);
  }
  int rc = WIFEXITED(status)     ? WEXITSTATUS(status)
           : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                 : 1;
  // Every rank ran here: the watch may know better than MPICH's report
  // which one ended the job. (With ranks on other nodes, one of them may
  // have ended first unseen: the report stands.)
  std::string blame =
      rc != 0 ? watch.blame(culprit, size_t(numRanks.getValue())) : "";
  if (!blame.empty()) {
    errs() << "pf-run: " << blame << "\n";
  } else if (rc != 0 && !culprit.pid.empty()) {
    std::optional<std::string> rank = rankOfProcess(jobDir, culprit);
    errs() << "pf-run: " << (rank ? "rank " + *rank : std::string("a rank"))
           << " (process " << culprit.pid << " on " << culprit.host
           << ") ended the job"
           << (culprit.exitString.empty() ? std::string()
                                          : ": " + culprit.exitString)
           << "\n";
  }
  return rc;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  parseCommandLine(argc, argv);
  checkManifest();

  if (!loadDir.empty()) {
    SmallString<256> index(loadDir);
    sys::path::append(index, "index.json");
    if (!sys::fs::exists(index))
      fail("--load " + loadDir + ": no checkpoint there (" + index +
           " does not exist)");
  }
  if (!dataDir.empty() && !sys::fs::is_directory(dataDir))
    fail("--data " + dataDir + ": not a directory");

  // Each rank's command: DIR/rank<r> and the job's flags.
  std::vector<std::vector<std::string>> commands;
  for (unsigned r = 0; r < numRanks; ++r) {
    SmallString<256> exe(artifactDir);
    sys::path::append(exe, "rank" + Twine(r));
    if (!sys::fs::can_execute(exe))
      fail("missing artifact " + exe);
    if (!srunMultiProg.empty())
      sys::fs::make_absolute(exe); // srun may start it elsewhere
    std::vector<std::string> &args = commands.emplace_back();
    args.push_back(std::string(exe));
    args.push_back("--steps=" + std::to_string(steps.getValue()));
    args.push_back("--seed=" + std::to_string(seed.getValue()));
    args.push_back("--lr=" + lr);
    args.push_back("--threads=" + std::to_string(threads.getValue()));
    if (!lossOut.empty())
      args.push_back("--loss-out=" + lossOut);
    if (noCudaGraph)
      args.push_back("--no-cuda-graph");
    if (tf32)
      args.push_back("--tf32");
    // Under Slurm the report is a flag of the ranks (srun's environment is
    // the job's, not pf-run's); mpiexec's ranks get PF_COMM_REPORT.
    if (commReport && !srunMultiProg.empty())
      args.emplace_back("--comm-report");
    if (!gemmPrecision.empty())
      args.push_back("--gemm-precision=" + gemmPrecision);
    if (!gemmTune.empty()) {
      // (absolute: the ranks may start elsewhere)
      SmallString<256> path(gemmTune.getValue());
      if (gemmTune != "1")
        sys::fs::make_absolute(path);
      args.push_back("--gemm-tune=" + std::string(path));
    }
    for (auto [flag, value] :
         {std::pair<const char *, const std::string *>{"--data=", &dataDir},
          {"--load=", &loadDir},
          {"--save=", &saveDir}})
      if (!value->empty())
        args.push_back(flag + *value);
    for (const std::string &sc : scalars)
      args.push_back("--scalar=" + sc);
  }

  if (!srunMultiProg.empty()) {
    std::string text = "# PipeFlow job " + artifactDir.getValue() + " (" +
                       std::to_string(numRanks.getValue()) +
                       " ranks): srun --mpi=pmi2 -n " +
                       std::to_string(numRanks.getValue()) + " --multi-prog " +
                       srunMultiProg.getValue() + "\n";
    for (auto [r, cmd] : llvm::enumerate(commands))
      text += multiProgLine(r, cmd) + "\n"; // may fail: write nothing then
    std::error_code ec;
    raw_fd_ostream out(srunMultiProg, ec, sys::fs::OF_Text);
    if (ec)
      fail("--srun-multi-prog " + srunMultiProg + ": " + ec.message());
    out << text;
    return 0;
  }

  ErrorOr<std::string> launcher = sys::findProgramByName(mpiexec);
  if (!launcher)
    fail("cannot find " + mpiexec + " (install mpich)");

  // MPMD: `mpiexec [-f HOSTS] -n 1 DIR/rank0 FLAGS : -n 1 DIR/rank1 ...`;
  // the host options are global and come first.
  std::vector<std::string> args = {*launcher};
  if (!hostfile.empty())
    args.insert(args.end(), {"-f", hostfile});
  if (!hosts.empty())
    args.insert(args.end(), {"-hosts", hosts});
  if (ppn != 0)
    args.insert(args.end(), {"-ppn", std::to_string(ppn.getValue())});
  for (auto [r, cmd] : llvm::enumerate(commands)) {
    if (r > 0)
      args.push_back(":");
    args.insert(args.end(), {"-n", "1"});
    args.insert(args.end(), cmd.begin(), cmd.end());
  }
  if (printCommand) {
    for (const std::string &a : args)
      outs() << a << "\n";
    return 0;
  }

  // The ranks inherit the environment; --trace replaces any PF_TRACE.
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e)
    if (!StringRef(*e).starts_with("PF_TRACE=") &&
        !StringRef(*e).starts_with("PF_RUN_JOB_DIR="))
      env.push_back(*e);
  if (!traceDir.empty())
    env.push_back("PF_TRACE=" + traceDir);
  if (memoryReport)
    env.push_back("PF_MEMORY_REPORT=1");
  if (commReport)
    env.emplace_back("PF_COMM_REPORT=1");

  int rc = runJob(*launcher, args, std::move(env));
  if (rc != 0) {
    errs() << "pf-run: the job failed (exit code " << rc
           << "); the failing rank's message is above\n";
    return rc < 0 ? 1 : rc;
  }
  return 0;
}
