//===- Main.cpp - pfrt_main: the driver of a compiled per-rank program ----===//
//
// Its own static library (pfrt_main) so that shared-object builds of a rank
// program, which the Python front end drives itself, can leave it out.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  int64_t steps = 1;
  uint64_t seed = 0;
  double lr = 0.001;
  int threads = 1;
  std::string lossOut;
  std::string save, load, data;
  std::vector<std::pair<std::string, double>> scalars;
  bool help = false;
  bool noCudaGraph = false;
  bool tf32 = false;
  bool commReport = false;
  std::string gemmTune, gemmPrecision;
};

const char *kUsage =
    "usage: %s [--steps K] [--seed S] [--lr X] [--threads T] "
    "[--loss-out FILE]\n"
    "          [--load DIR] [--save DIR] [--data DIR] [--no-cuda-graph]\n"
    "          [--tf32] [--gemm-tune FILE|1] [--gemm-precision fp32|3xtf32]\n"
    "          [--comm-report]\n"
    "  --steps K        number of training steps (default 1)\n"
    "  --seed S         parameter-initialisation seed, uint64 (default 0)\n"
    "  --lr X           learning rate, run-time scalar \"lr\" (default 0.001)\n"
    "  --threads T      BLAS threads per rank (default 1)\n"
    "  --loss-out FILE  append each step's losses as one line to FILE\n"
    "  --load DIR       start from the checkpoint in DIR (any layout) and go\n"
    "                   on from its step\n"
    "  --save DIR       write a checkpoint (logical .npy per parameter and\n"
    "                   optimizer state, index.json) after the last step\n"
    "  --scalar NAME=X  sets run-time scalar NAME (e.g. a parameter group's\n"
    "                   learning rate \"lr.head\"); repeatable\n"
    "  --data DIR       read input i from DIR/input<i>.npy (the step's\n"
    "                   logical input, or [N, ...] batches used in turn)\n"
    "  --no-cuda-graph  a GPU rank runs every step uncaptured (default: the\n"
    "                   second step is captured as a CUDA graph, replayed\n"
    "                   from then on; also PFRT_NO_CUDA_GRAPH=1)\n"
    "  --tf32           a GPU rank's GEMMs may use TF32 tensor cores "
    "(default:\n"
    "                   exact float32; also PFRT_CUDA_TF32=1)\n"
    "  --gemm-tune F    a GPU rank times up to 8 of cuBLASLt's algorithms for\n"
    "                   each GEMM shape at its first use and keeps the\n"
    "                   fastest; with a FILE the choices are kept there and\n"
    "                   reused by later runs (same algorithms, same bits); 1:\n"
    "                   for this run only (also PFRT_CUDA_GEMM_TUNE)\n"
    "  --gemm-precision P  fp32 (default): a GPU rank's GEMMs in exact\n"
    "                   float32; 3xtf32: each as three TF32 tensor-core\n"
    "                   GEMMs on operands split into a TF32 part and the\n"
    "                   rest, float32's accuracy at tensor-core speed (also\n"
    "                   PFRT_CUDA_GEMM_PRECISION)\n"
    "  --comm-report    rank 0 prints every rank's communication at the end\n"
    "                   (pf-run --comm-report; also PF_COMM_REPORT=1)\n"
    "  --help           print this message\n"
    "Flags also accept --flag=value.\n";

bool parseI64(const char *s, int64_t lo, int64_t hi, int64_t &out) {
  if (!*s)
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return false;
  out = v;
  return true;
}

bool parseU64(const char *s, uint64_t &out) {
  if (!*s || *s == '-' || *s == '+')
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end)
    return false;
  out = v;
  return true;
}

bool parseDouble(const char *s, double &out) {
  if (!*s)
    return false;
  errno = 0;
  char *end = nullptr;
  double v = strtod(s, &end);
  if (errno || *end || !std::isfinite(v))
    return false;
  out = v;
  return true;
}

/// Parses argv into o; on failure returns false with a message in err.
bool parseArgs(int argc, char **argv, Options &o, std::string &err) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg == "--no-cuda-graph") {
      o.noCudaGraph = true;
      continue;
    }
    if (arg == "--tf32") {
      o.tf32 = true;
      continue;
    }
    if (arg == "--comm-report") {
      o.commReport = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      err = "unexpected argument '" + arg + "'";
      return false;
    }
    std::string name = arg, value;
    bool haveValue = false;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      haveValue = true;
    }
    if (name != "--steps" && name != "--seed" && name != "--lr" &&
        name != "--threads" && name != "--loss-out" && name != "--save" &&
        name != "--load" && name != "--data" && name != "--scalar" &&
        name != "--gemm-tune" && name != "--gemm-precision") {
      err = "unknown flag '" + name + "'";
      return false;
    }
    if (!haveValue) {
      if (i + 1 >= argc) {
        err = "flag '" + name + "' needs a value";
        return false;
      }
      value = argv[++i];
    }
    const char *v = value.c_str();
    bool ok = true;
    int64_t iv = 0;
    if (name == "--steps") {
      ok = parseI64(v, 0, INT64_MAX, o.steps);
    } else if (name == "--seed") {
      ok = parseU64(v, o.seed);
    } else if (name == "--lr") {
      ok = parseDouble(v, o.lr);
    } else if (name == "--threads") {
      ok = parseI64(v, 1, 4096, iv);
      o.threads = int(iv);
    } else if (name == "--scalar") {
      size_t at = value.find('=');
      double x = 0;
      ok = at != std::string::npos && at > 0 &&
           parseDouble(value.c_str() + at + 1, x);
      if (ok)
        o.scalars.push_back({value.substr(0, at), x});
    } else if (name == "--gemm-precision") {
      ok = value == "fp32" || value == "3xtf32";
      o.gemmPrecision = value;
    } else { // --loss-out, --save, --load, --data, --gemm-tune: non-empty
      ok = !value.empty();
      (name == "--loss-out"    ? o.lossOut
       : name == "--save"      ? o.save
       : name == "--load"      ? o.load
       : name == "--gemm-tune" ? o.gemmTune
                               : o.data) = value;
    }
    if (!ok) {
      err = "bad value '" + value + "' for flag '" + name + "'";
      return false;
    }
  }
  return true;
}

void appendLine(const std::string &path, const std::string &line) {
  // One fwrite + fflush per line: with O_APPEND the line lands whole even if
  // several ranks append to the same file.
  FILE *f = fopen(path.c_str(), "a");
  if (!f)
    pfrt::fatal("pfrt_main: cannot open --loss-out file '%s': %s", path.c_str(),
                strerror(errno));
  if (fwrite(line.data(), 1, line.size(), f) != line.size() || fflush(f) ||
      fclose(f))
    pfrt::fatal("pfrt_main: cannot write --loss-out file '%s': %s",
                path.c_str(), strerror(errno));
}

std::string formatLosses(const std::vector<float> &losses) {
  std::string s;
  char buf[64];
  for (size_t i = 0; i < losses.size(); ++i) {
    snprintf(buf, sizeof(buf), "%s%.9g", i ? " " : "", double(losses[i]));
    s += buf;
  }
  return s;
}

} // namespace

extern "C" int pfrt_main(int argc, char **argv, const pfrt_program *program) {
  pfrt_init(&argc, &argv);
  if (!program || !program->step)
    pfrt::fatal("pfrt_main: program or program->step is NULL");
  const char *prog = argc > 0 && argv && argv[0] ? argv[0] : "pfrt_main";
  Options o;
  std::string err;
  bool ok = parseArgs(argc, argv, o, err);
  if (!ok || o.help) {
    // Every rank parsed the same arguments and ends the same way.
    if (pfrt_rank() == 0) {
      FILE *out = ok ? stdout : stderr;
      if (!ok)
        fprintf(out, "%s: %s\n", prog, err.c_str());
      fprintf(out, kUsage, prog);
      fflush(out);
    }
    pfrt_finalize();
    if (!ok)
      exit(2);
    return 0;
  }
  pfrt_set_num_threads(o.threads);
  if (o.noCudaGraph)
    setenv("PFRT_NO_CUDA_GRAPH", "1", 1);
  if (o.tf32)
    setenv("PFRT_CUDA_TF32", "1", 1);
  if (!o.gemmTune.empty())
    setenv("PFRT_CUDA_GEMM_TUNE", o.gemmTune.c_str(), 1);
  if (!o.gemmPrecision.empty())
    setenv("PFRT_CUDA_GEMM_PRECISION", o.gemmPrecision.c_str(), 1);
  *pfrt_scalar("lr") = float(o.lr);
  for (auto &[name, value] : o.scalars)
    *pfrt_scalar(name.c_str()) = float(value);
  float *stepScalar = pfrt_scalar("step");
  // The process before its arena: libraries, MPI, the runtime's tables.
  int64_t baselineRss = pfrt_peak_rss_bytes();
  if (program->init_params)
    program->init_params(o.seed);
  int64_t first = 0;
  if (!o.load.empty())
    pfrt_state_load(o.load.c_str(), &first);
  if (!o.data.empty())
    pfrt_set_data_dir(o.data.c_str());
  for (int64_t k = first; k < first + o.steps; ++k) {
    *stepScalar = float(k + 1);
    pfrt_set_data_step(k);
    pfrt_arena_reset();
    double t0 = pfrt_now_us();
    // A GPU rank: captured once, then replayed; the time includes the
    // device's work (pfrt_cuda_run_step waits for it).
    if (pfrt_cuda_active())
      pfrt_cuda_run_step(program->step, k);
    else
      program->step(k);
    double ms = (pfrt_now_us() - t0) * 1e-3;
    std::vector<float> losses = pfrt::stepLosses();
    if (losses.empty())
      continue;
    std::string vals = formatLosses(losses);
    printf("step %" PRId64 " loss %s time_ms %.3f\n", k, vals.c_str(), ms);
    fflush(stdout);
    if (!o.lossOut.empty())
      appendLine(o.lossOut, vals + "\n");
  }
  if (!o.save.empty())
    pfrt_state_save(o.save.c_str(), first + o.steps);
  // PF_MEMORY_REPORT (pf-run --memory-report): the plan against what ran.
  if (const char *report = getenv("PF_MEMORY_REPORT");
      report && *report && strcmp(report, "0") != 0) {
    printf("memory rank %d planned_bytes %" PRId64 " high_water_bytes %" PRId64
           " peak_rss_bytes %" PRId64 " baseline_rss_bytes %" PRId64 "\n",
           pfrt_rank(), pfrt_arena_planned_bytes(), pfrt_arena_high_water(),
           pfrt_peak_rss_bytes(), baselineRss);
    fflush(stdout);
  }
  // --comm-report or PF_COMM_REPORT (pf-run --comm-report): every rank's
  // communication, printed by rank 0 (a call of every rank).
  const char *commEnv = getenv("PF_COMM_REPORT");
  if (o.commReport || (commEnv && *commEnv && strcmp(commEnv, "0") != 0))
    pfrt_comm_report();
  pfrt_finalize();
  return 0;
}
