//===- pf-run.cpp - launches PipeFlow's per-rank executables --------------===//
//
// pf-run -n N DIR [--steps K] [--seed S] [--lr X] [--threads T]
//        [--loss-out FILE] [--trace TRACEDIR] [--timeout SEC]
//        [--data DATADIR] [--load CKPT] [--save CKPT]
//
// Checks DIR/manifest.json against N and the artifacts, then starts one
// process per rank through MPICH's mpiexec (MPMD: rank r runs DIR/rank<r>).
// The exit code is the job's: a rank that fails ends the whole job.
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <unistd.h>
#include <string>
#include <vector>

using namespace llvm;

[[noreturn]] static void fail(const Twine &message, int code = 2);

namespace {
struct Options {
  int numRanks = 0;
  std::string artifacts;
  int steps = 1;
  std::string seed = "0";
  std::string lr = "0.001";
  int threads = 1;
  std::string lossOut, trace, data, load, save;
  std::vector<std::string> scalars;
  unsigned timeout = 0;
  std::string mpiexec = "mpiexec";
};
} // namespace

static const char *kUsage =
    "usage: pf-run -n N DIR [--steps K] [--seed S] [--lr X] [--threads T]\n"
    "              [--loss-out FILE] [--trace TRACEDIR] [--timeout SEC]\n"
    "              [--data DATADIR] [--load CKPT] [--save CKPT]\n"
    "              [--mpiexec PATH]\n"
    "  --data DATADIR  input i of the step from DATADIR/input<i>.npy (its\n"
    "                  logical shape, or [N, ...] batches used in turn)\n"
    "  --load CKPT     start from checkpoint CKPT (saved under any layout)\n"
    "  --save CKPT     save a checkpoint after the last step\n"
    "  --scalar N=X    run-time scalar N (a parameter group's learning rate\n"
    "                  such as lr.head); repeatable\n";

[[noreturn]] static void fail(const Twine &message, int code) {
  errs() << "pf-run: " << message << "\n";
  std::exit(code);
}

extern char **environ;

static Options parse(int argc, char **argv) {
  Options o;
  auto number = [](StringRef flag, StringRef text) {
    long long v;
    if (text.getAsInteger(10, v) || v < 0)
      fail(flag + " needs a non-negative integer, got '" + text + "'\n" +
           kUsage);
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    StringRef flag = arg, value;
    bool hasValue = false;
    if (arg.starts_with("--") && arg.contains('=')) {
      std::tie(flag, value) = arg.split('=');
      hasValue = true;
    }
    auto next = [&]() -> StringRef {
      if (hasValue)
        return value;
      if (i + 1 >= argc)
        fail(flag + " needs a value\n" + kUsage);
      return argv[++i];
    };
    if (flag == "-n")
      o.numRanks = number(flag, next());
    else if (flag == "--steps")
      o.steps = number(flag, next());
    else if (flag == "--seed")
      o.seed = std::to_string(number(flag, next()));
    else if (flag == "--lr")
      o.lr = next().str();
    else if (flag == "--threads")
      o.threads = number(flag, next());
    else if (flag == "--loss-out")
      o.lossOut = next().str();
    else if (flag == "--scalar")
      o.scalars.push_back(next().str());
    else if (flag == "--data")
      o.data = next().str();
    else if (flag == "--load")
      o.load = next().str();
    else if (flag == "--save")
      o.save = next().str();
    else if (flag == "--trace")
      o.trace = next().str();
    else if (flag == "--timeout")
      o.timeout = number(flag, next());
    else if (flag == "--mpiexec")
      o.mpiexec = next().str();
    else if (flag == "-h" || flag == "--help") {
      outs() << kUsage;
      std::exit(0);
    } else if (flag.starts_with("-"))
      fail("unknown option '" + arg + "'\n" + kUsage);
    else if (o.artifacts.empty())
      o.artifacts = arg.str();
    else
      fail("more than one artifact directory given\n" + Twine(kUsage));
  }
  if (o.numRanks < 1)
    fail("-n N (the number of ranks, at least 1) is required\n" +
         Twine(kUsage));
  if (o.artifacts.empty())
    fail("the artifact directory is required\n" + Twine(kUsage));
  return o;
}

int main(int argc, char **argv) {
  Options o = parse(argc, argv);
  int numRanks = o.numRanks;
  const std::string &artifacts = o.artifacts;
  const std::string &mpiexec = o.mpiexec;
  const std::string &lr = o.lr;
  const std::string &lossOut = o.lossOut;
  const std::string &trace = o.trace;
  unsigned timeout = o.timeout;

  SmallString<256> manifestPath(artifacts);
  sys::path::append(manifestPath, "manifest.json");
  auto buffer = MemoryBuffer::getFile(manifestPath);
  if (!buffer)
    fail(manifestPath + ": " + buffer.getError().message() +
         " (compile with pf-translate --pf-emit-rank-artifacts -o " +
         artifacts + ")");
  Expected<json::Value> manifest = json::parse((*buffer)->getBuffer());
  if (!manifest)
    fail(manifestPath + ": not valid JSON: " + toString(manifest.takeError()));
  const json::Object *root = manifest->getAsObject();
  std::optional<int64_t> world = root ? root->getInteger("world_size")
                                      : std::nullopt;
  const json::Array *ranks = root ? root->getArray("ranks") : nullptr;
  if (!world || !ranks)
    fail(manifestPath + ": missing world_size or ranks");
  if (*world != numRanks)
    fail("the artifacts in " + artifacts + " are for " + Twine(*world) +
         " ranks, but -n " + Twine(numRanks) + " was given");

  if (!o.load.empty()) {
    SmallString<256> index(o.load);
    sys::path::append(index, "index.json");
    if (!sys::fs::exists(index))
      fail("--load " + o.load + ": no checkpoint there (" + index +
           " does not exist)");
  }
  if (!o.data.empty() && !sys::fs::is_directory(o.data))
    fail("--data " + o.data + ": not a directory");

  ErrorOr<std::string> found = sys::findProgramByName(mpiexec);
  if (!found)
    fail("cannot find " + mpiexec + " (install mpich)");
  std::optional<std::string> launcher = *found;

  std::vector<std::string> args = {*launcher};
  for (int r = 0; r < numRanks; ++r) {
    SmallString<256> exe(artifacts);
    sys::path::append(exe, "rank" + Twine(r));
    if (!sys::fs::can_execute(exe))
      fail("missing artifact " + exe);
    if (r > 0)
      args.push_back(":");
    for (const char *a : {"-n", "1"})
      args.push_back(a);
    args.push_back(std::string(exe));
    args.push_back("--steps=" + std::to_string(o.steps));
    args.push_back("--seed=" + o.seed);
    args.push_back("--lr=" + lr);
    args.push_back("--threads=" + std::to_string(o.threads));
    if (!lossOut.empty())
      args.push_back("--loss-out=" + lossOut);
    for (auto [flag, value] : {std::pair<const char *, std::string *>{
                                   "--data=", &o.data},
                               {"--load=", &o.load},
                               {"--save=", &o.save}})
      if (!value->empty())
        args.push_back(flag + *value);
    for (const std::string &sc : o.scalars)
      args.push_back("--scalar=" + sc);
  }

  std::vector<std::string> env;
  for (char **e = environ; *e; ++e)
    if (!StringRef(*e).starts_with("PF_TRACE="))
      env.push_back(*e);
  if (!trace.empty())
    env.push_back("PF_TRACE=" + trace);

  std::vector<StringRef> argRefs(args.begin(), args.end());
  std::vector<StringRef> envRefs(env.begin(), env.end());
  std::string error;
  bool failedToRun = false;
  int rc = sys::ExecuteAndWait(*launcher, argRefs, envRefs, {}, timeout, 0,
                               &error, &failedToRun);
  if (failedToRun)
    fail("cannot start " + *launcher + ": " + error);
  if (rc == -2)
    fail("the job ran past --timeout " + Twine(timeout) +
             " s and was killed",
         124);
  if (rc != 0) {
    errs() << "pf-run: the job failed (exit code " << rc
           << "); the failing rank's message is above\n";
    return rc < 0 ? 1 : rc;
  }
  return 0;
}
