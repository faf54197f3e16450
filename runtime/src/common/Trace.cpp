//===- Trace.cpp - In-memory events written as Chrome trace JSON ----------===//
//
// Events are buffered in memory (no I/O on the training path) and written
// once at pfrt_finalize, one file per rank, pid = rank so that Perfetto or
// chrome://tracing shows the ranks as rows when the files are loaded
// together.
//
// On a GPU rank (device hooks set by cuda/Stream.cpp) the ops' events are also
// timed on the device: a timing event is recorded on the compute stream at
// each begin and end, and once the device has passed them the event gets
// the device's times (thread 1, "GPU compute stream") instead of the
// host's, which only say when the work was enqueued. Spans on the
// communication streams (thread 2) come the same way; communication the
// host does itself (MPI) stays on thread 0 with host times.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "pfrt/pfrt.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace pfrt;

namespace {

struct Event {
  std::string name, cat;
  double ts, dur;
  int32_t microbatch, stage;
  // Comm events only (-1 = absent).
  int64_t bytes = -1, groupSize = -1, peer = -1;
  // 0: host; 1: the GPU's compute stream; 2: its communication streams.
  int tid = 0;
  // Device marks not yet resolved into ts and dur (null: none).
  void *devBegin = nullptr, *devEnd = nullptr;
};

struct Open {
  std::string name, cat;
  double ts;
  int32_t microbatch, stage;
  void *devBegin = nullptr;
};

struct Tracer {
  bool on = false;
  std::string dir;
  std::vector<Event> events;
  std::vector<Open> stack;
  size_t maxEvents = 4u << 20;
  size_t dropped = 0;
  const pfrt::DeviceTraceHooks *device = nullptr;
  // Events with device marks still to resolve.
  std::vector<size_t> unresolved;

  void add(Event &&e) {
    if (events.size() < maxEvents) {
      if (e.devBegin)
        unresolved.push_back(events.size());
      events.push_back(std::move(e));
    } else {
      ++dropped;
      if (device && e.devBegin) {
        device->release(e.devBegin);
        device->release(e.devEnd);
      }
    }
  }
};

Tracer &tracer() {
  static Tracer t;
  return t;
}

void appendJsonString(std::string &out, const std::string &s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
    }
  }
  out += '"';
}

/// A transfer belongs to the innermost user event (its micro-batch, stage).
void attribute(const Tracer &t, Event &e) {
  e.microbatch = t.stack.empty() ? -1 : t.stack.back().microbatch;
  e.stage = t.stack.empty() ? -1 : t.stack.back().stage;
}

void appendNumber(std::string &out, double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.3f", v);
  out += buf;
}

} // namespace

namespace pfrt {

bool traceOn() { return tracer().on; }

void traceInit() {
  Tracer &t = tracer();
  const char *dir = getenv("PF_TRACE");
  t.on = dir && *dir;
  if (t.on)
    t.dir = dir;
  if (const char *cap = getenv("PF_TRACE_MAX_EVENTS"))
    t.maxEvents = size_t(strtoull(cap, nullptr, 10));
}

void traceComm(const char *name, double beginUs, int64_t bytes,
               int64_t groupSize, int64_t peer) {
  Tracer &t = tracer();
  double end = monotonicUs();
  Event e;
  e.name = name;
  e.cat = "comm";
  e.ts = beginUs - state().epochUs;
  e.dur = end - beginUs;
  attribute(t, e);
  e.bytes = bytes;
  e.groupSize = groupSize;
  e.peer = peer;
  t.add(std::move(e));
}

void setDeviceTraceHooks(const DeviceTraceHooks *hooks) {
  tracer().device = hooks;
}

bool deviceTraceOn() {
  Tracer &t = tracer();
  return t.on && t.device;
}

void traceDeviceSpan(const char *name, void *begin, void *end, int64_t bytes,
                     int64_t groupSize) {
  Tracer &t = tracer();
  if (!t.on || !t.device || !begin || !end)
    return;
  Event e;
  e.name = name;
  e.cat = "comm";
  e.ts = e.dur = 0;
  attribute(t, e);
  e.bytes = bytes;
  e.groupSize = groupSize;
  e.tid = 2;
  e.devBegin = begin;
  e.devEnd = end;
  t.add(std::move(e));
}

void traceResolveDevice() {
  Tracer &t = tracer();
  if (!t.device)
    return;
  for (size_t i : t.unresolved) {
    Event &e = t.events[i];
    e.ts = t.device->resolveUs(e.devBegin) - state().epochUs;
    e.dur = t.device->elapsedUs(e.devBegin, e.devEnd);
    t.device->release(e.devBegin);
    t.device->release(e.devEnd);
    e.devBegin = e.devEnd = nullptr;
  }
  t.unresolved.clear();
  t.device->reanchor();
}

void traceFinalize() {
  Tracer &t = tracer();
  if (!t.on)
    return;
  // The device's marks since the last step (a run that is not stepped by
  // pfrt_cuda_run_step): resolved now, the device still being there.
  traceResolveDevice();
  if (!t.stack.empty())
    fprintf(stderr,
            "pfrt: rank %d: warning: %zu trace event(s) still open at "
            "pfrt_finalize (innermost '%s'); dropped\n",
            state().rank, t.stack.size(), t.stack.back().name.c_str());
  int rank = state().rank;
  std::string out = "{\"traceEvents\":[\n";
  char buf[256];
  snprintf(buf, sizeof(buf),
           "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
           "\"args\":{\"name\":\"rank %d\"}}",
           rank, rank);
  out += buf;
  if (t.device) {
    static const char *const kThreads[] = {"host", "GPU compute stream",
                                           "GPU communication streams"};
    for (int tid = 0; tid < 3; ++tid) {
      snprintf(buf, sizeof(buf),
               ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,"
               "\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
               rank, tid, kThreads[tid]);
      out += buf;
    }
  }
  for (const Event &e : t.events) {
    out += ",\n{\"name\":";
    appendJsonString(out, e.name);
    out += ",\"cat\":";
    appendJsonString(out, e.cat);
    out += ",\"ph\":\"X\",\"ts\":";
    appendNumber(out, e.ts);
    out += ",\"dur\":";
    appendNumber(out, e.dur < 0 ? 0 : e.dur);
    snprintf(buf, sizeof(buf),
             ",\"pid\":%d,\"tid\":%d,\"args\":{\"microbatch\":%d,"
             "\"stage\":%d",
             rank, e.tid, e.microbatch, e.stage);
    out += buf;
    if (e.bytes >= 0) {
      snprintf(buf, sizeof(buf), ",\"bytes\":%lld", (long long)e.bytes);
      out += buf;
    }
    if (e.groupSize >= 0) {
      snprintf(buf, sizeof(buf), ",\"group_size\":%lld",
               (long long)e.groupSize);
      out += buf;
    }
    if (e.peer >= 0) {
      snprintf(buf, sizeof(buf), ",\"peer\":%lld", (long long)e.peer);
      out += buf;
    }
    out += "}}";
  }
  out += "\n],\"displayTimeUnit\":\"ms\"";
  if (t.dropped) {
    snprintf(buf, sizeof(buf), ",\"pfrtDroppedEvents\":%zu", t.dropped);
    out += buf;
  }
  out += "}\n";

  makeDirs(t.dir, "pfrt_finalize (PF_TRACE)");
  std::string path = t.dir + "/trace_rank" + std::to_string(rank) + ".json";
  FILE *f = fopen(path.c_str(), "wb");
  if (!f)
    fatal("pfrt_finalize: cannot write trace '%s': %s", path.c_str(),
          strerror(errno));
  bool ok = fwrite(out.data(), 1, out.size(), f) == out.size();
  ok = (fclose(f) == 0) && ok;
  if (!ok)
    fatal("pfrt_finalize: writing trace '%s' failed: %s", path.c_str(),
          strerror(errno));
  t.events.clear();
  t.stack.clear();
  t.on = false;
}

} // namespace pfrt

extern "C" {

int pfrt_trace_enabled(void) { return tracer().on ? 1 : 0; }

int pfrt_trace_begin(const char *name, const char *cat, int32_t microbatch,
                     int32_t stage) {
  Tracer &t = tracer();
  if (!t.on)
    return 0;
  if (!name)
    fatal("pfrt_trace_begin: name is NULL");
  t.stack.push_back({name, cat ? cat : "compute", monotonicUs(), microbatch,
                     stage, t.device ? t.device->mark(nullptr) : nullptr});
  return 0;
}

int pfrt_trace_end(void) {
  Tracer &t = tracer();
  if (!t.on)
    return 0;
  if (t.stack.empty())
    fatal("pfrt_trace_end: no open pfrt_trace_begin");
  Open o = std::move(t.stack.back());
  t.stack.pop_back();
  Event e;
  e.name = std::move(o.name);
  e.cat = std::move(o.cat);
  e.ts = o.ts - state().epochUs;
  e.dur = monotonicUs() - o.ts;
  e.microbatch = o.microbatch;
  e.stage = o.stage;
  if (t.device && o.devBegin) {
    e.tid = 1;
    e.devBegin = o.devBegin;
    e.devEnd = t.device->mark(nullptr);
  }
  t.add(std::move(e));
  return 0;
}

} // extern "C"
