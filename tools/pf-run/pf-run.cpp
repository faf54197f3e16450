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
//===----------------------------------------------------------------------===//

#include "pf/Target/ManifestFormat.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <optional>
#include <string>
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

static cl::opt<bool> memoryReport(
    "memory-report",
    cl::desc("Each rank prints its planned arena, the arena's measured "
             "high-water mark, its peak RSS and the RSS before the arena "
             "(PF_MEMORY_REPORT for the ranks)"),
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
    if (!StringRef(*e).starts_with("PF_TRACE="))
      env.push_back(*e);
  if (!traceDir.empty())
    env.push_back("PF_TRACE=" + traceDir);
  if (memoryReport)
    env.push_back("PF_MEMORY_REPORT=1");

  std::vector<StringRef> argRefs(args.begin(), args.end());
  std::vector<StringRef> envRefs(env.begin(), env.end());
  std::string error;
  bool failedToRun = false;
  int rc = sys::ExecuteAndWait(*launcher, argRefs, envRefs, {}, timeout, 0,
                               &error, &failedToRun);
  if (failedToRun)
    fail("cannot start " + *launcher + ": " + error);
  if (rc == -2)
    fail("the job ran past --timeout " + Twine(timeout) + " s and was killed",
         124);
  if (rc != 0) {
    errs() << "pf-run: the job failed (exit code " << rc
           << "); the failing rank's message is above\n";
    return rc < 0 ? 1 : rc;
  }
  return 0;
}
