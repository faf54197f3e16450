//===- test_k_xent.cpp - Softmax cross-entropy and its gradient -----------===//
//
// Includes rows with large logits (|x| ~ 1e2..1e3: without the max
// subtraction exp overflows) and a 1000-class case.
//
//===----------------------------------------------------------------------===//

#include "KernelTest.h"

int main(int argc, char **argv) {
  kt::Harness h("k-xent", argc, argv);
  struct Case {
    int64_t n, c;
    float lo, hi;
    int fd;
  };
  const Case cases[] = {{1, 1, -1, 1, 0},      {7, 10, -3, 3, 1},
                        {33, 1000, -5, 5, 0},  {5, 3, 80, 120, 1},
                        {4, 17, -900, 900, 0}, {64, 10, -2, 2, 0},
                        {3, 2, -1, 1, 1}};
  for (const Case &cs : cases) {
    std::string id = h.newCase();
    auto x = h.uniform(cs.n * cs.c, cs.lo, cs.hi);
    std::vector<int64_t> labels(size_t(cs.n));
    for (auto &l : labels)
      l = h.randint(0, cs.c - 1);
    float dloss = float(h.uniform1(0.25, 2.0));
    float loss = -1.0f;
    std::vector<float> dl(size_t(cs.n * cs.c));
    pfrt_k_softmax_xent(x.data(), labels.data(), &loss, cs.n, cs.c);
    pfrt_k_softmax_xent_grad(x.data(), labels.data(), &dloss, dl.data(), cs.n,
                             cs.c);
    h.save(id, "logits", {cs.n, cs.c}, x);
    h.saveI64(id, "labels", {cs.n}, labels);
    h.save(id, "loss", {}, &loss);
    h.save(id, "dloss", {}, &dloss);
    h.save(id, "dlogits", {cs.n, cs.c}, dl);
    h.record("softmax_xent", id, "n=%lld c=%lld fd=%d", (long long)cs.n,
             (long long)cs.c, cs.fd);
  }
  // ignore_index: about a third of the rows carry it (-1 or a class id);
  // those rows drop out of the mean and get zero gradients.
  const Case ignoring[] = {{9, 10, -3, 3, 1}, {40, 7, -2, 2, 0}};
  for (const Case &cs : ignoring)
    for (int64_t ignore : {int64_t(-1), int64_t(2)}) {
      std::string id = h.newCase();
      auto x = h.uniform(cs.n * cs.c, cs.lo, cs.hi);
      std::vector<int64_t> labels(size_t(cs.n));
      for (auto &l : labels)
        l = h.randint(0, 2) == 0 ? ignore : h.randint(0, cs.c - 1);
      labels[0] = ignore == 2 ? 3 : 0; // at least one row counts
      float dloss = float(h.uniform1(0.25, 2.0));
      float loss = -1.0f;
      std::vector<float> dl(size_t(cs.n * cs.c), -7.0f);
      pfrt_k_softmax_xent_ignore(x.data(), labels.data(), &loss, cs.n, cs.c,
                                 ignore);
      pfrt_k_softmax_xent_grad_ignore(x.data(), labels.data(), &dloss,
                                      dl.data(), cs.n, cs.c, ignore);
      h.save(id, "logits", {cs.n, cs.c}, x);
      h.saveI64(id, "labels", {cs.n}, labels);
      h.save(id, "loss", {}, &loss);
      h.save(id, "dloss", {}, &dloss);
      h.save(id, "dlogits", {cs.n, cs.c}, dl);
      h.record("softmax_xent", id, "n=%lld c=%lld fd=%d ignore=%lld",
               (long long)cs.n, (long long)cs.c, cs.fd, (long long)ignore);
      // The sum over the kept rows, its gradient, and their count (what
      // pf-decompose-losses divides).
      std::string sid = h.newCase();
      float sum = -1.0f, count = -1.0f;
      std::vector<float> ds(size_t(cs.n * cs.c), -7.0f);
      pfrt_k_softmax_xent_sum(x.data(), labels.data(), &sum, cs.n, cs.c,
                              ignore);
      pfrt_k_softmax_xent_grad_sum(x.data(), labels.data(), &dloss, ds.data(),
                                   cs.n, cs.c, ignore);
      pfrt_k_count_kept(labels.data(), &count, cs.n, ignore);
      h.save(sid, "logits", {cs.n, cs.c}, x);
      h.saveI64(sid, "labels", {cs.n}, labels);
      h.save(sid, "loss", {}, &sum);
      h.save(sid, "count", {}, &count);
      h.save(sid, "dloss", {}, &dloss);
      h.save(sid, "dlogits", {cs.n, cs.c}, ds);
      h.record("softmax_xent", sid, "n=%lld c=%lld fd=%d ignore=%lld sum=1",
               (long long)cs.n, (long long)cs.c, cs.fd, (long long)ignore);
    }
  return 0;
}
