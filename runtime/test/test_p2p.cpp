//===- test_p2p.cpp - Blocking and batched ring exchanges -----------------===//
//
// Needs at least 2 ranks. Message sizes differ per sender so a receiver
// posting the wrong count, or data landing in the wrong buffer, fails.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

uint64_t gSeed;

/// Size of the message `sender` sends in exchange `round`: odd sizes.
int64_t msgCount(int64_t sender, int round) {
  return 1000 + 37 * sender + 131 * round;
}

std::vector<float> payload(int64_t sender, int64_t receiver, int tag, int round,
                           int64_t count) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] = pt_value(gSeed, uint64_t(round) * 1000 + tag,
                    uint64_t(sender * 64 + receiver), uint64_t(i));
  return v;
}

} // namespace

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  int r = pfrt_rank(), n = pfrt_world_size();
  gSeed = pt_seed("p2p");
  CHECK(n >= 2, "p2p test needs at least 2 ranks");
  int right = (r + 1) % n, left = (r + n - 1) % n;

  // Blocking ring: even ranks send first, odd ranks receive first.
  for (int round = 0; round < 3; ++round) {
    int tag = 5 + round;
    std::vector<float> out = payload(r, right, tag, round, msgCount(r, round));
    std::vector<float> in(msgCount(left, round), NAN);
    if (r % 2 == 0) {
      pfrt_send(out.data(), int64_t(out.size()), right, tag);
      pfrt_recv(in.data(), int64_t(in.size()), left, tag);
    } else {
      pfrt_recv(in.data(), int64_t(in.size()), left, tag);
      pfrt_send(out.data(), int64_t(out.size()), right, tag);
    }
    std::vector<float> want =
        payload(left, r, tag, round, msgCount(left, round));
    CHECK(pt_bits_equal(in.data(), want.data(), int64_t(in.size())),
          "blocking ring round %d: data from rank %d is wrong", round, left);
  }

  // Batched: both directions at once, plus two messages on the same
  // (peer, tag) that must arrive in posting order, plus an empty message.
  // Receives are posted before and after the sends to mix the order.
  for (int round = 0; round < 3; ++round) {
    const int tRight = 11, tLeft = 12, tTwice = 13, tEmpty = 14;
    std::vector<float> toRight =
        payload(r, right, tRight, round, msgCount(r, round));
    std::vector<float> toLeft =
        payload(r, left, tLeft, round, msgCount(r, round) + 3);
    std::vector<float> first = payload(r, right, tTwice, round, 17);
    std::vector<float> second = payload(r, right, tTwice + 100, round, 17);
    std::vector<float> fromLeft(msgCount(left, round), NAN);
    std::vector<float> fromRight(msgCount(right, round) + 3, NAN);
    std::vector<float> got1(17, NAN), got2(17, NAN);
    float dummy = 0;
    std::vector<pfrt_p2p_op> ops = {
        {0, left, tRight, fromLeft.data(), int64_t(fromLeft.size())},
        {1, right, tRight, toRight.data(), int64_t(toRight.size())},
        {1, right, tTwice, first.data(), 17},
        {1, right, tTwice, second.data(), 17},
        {1, left, tLeft, toLeft.data(), int64_t(toLeft.size())},
        {0, left, tTwice, got1.data(), 17},
        {0, left, tTwice, got2.data(), 17},
        {0, right, tLeft, fromRight.data(), int64_t(fromRight.size())},
        {1, right, tEmpty, &dummy, 0},
        {0, left, tEmpty, nullptr, 0},
    };
    pfrt_p2p_batch(ops.data(), int64_t(ops.size()));
    CHECK(pt_bits_equal(
              fromLeft.data(),
              payload(left, r, tRight, round, msgCount(left, round)).data(),
              int64_t(fromLeft.size())),
          "batch round %d: rightward data from %d wrong", round, left);
    CHECK(
        pt_bits_equal(
            fromRight.data(),
            payload(right, r, tLeft, round, msgCount(right, round) + 3).data(),
            int64_t(fromRight.size())),
        "batch round %d: leftward data from %d wrong", round, right);
    CHECK(pt_bits_equal(got1.data(), payload(left, r, tTwice, round, 17).data(),
                        17),
          "batch round %d: first same-tag message out of order", round);
    CHECK(pt_bits_equal(got2.data(),
                        payload(left, r, tTwice + 100, round, 17).data(), 17),
          "batch round %d: second same-tag message out of order", round);
  }

  // A large message (4 MiB) takes MPI's rendezvous path.
  {
    int64_t big = int64_t(1) << 20;
    std::vector<float> out = payload(r, right, 21, 9, big);
    std::vector<float> in(big, NAN);
    pfrt_p2p_op ops[2] = {{0, left, 21, in.data(), big},
                          {1, right, 21, out.data(), big}};
    pfrt_p2p_batch(ops, 2);
    CHECK(pt_bits_equal(in.data(), payload(left, r, 21, 9, big).data(), big),
          "large batched message from %d wrong", left);
  }

  // Tracked non-blocking sends (the compiler's early completion): every
  // rank sends a large message right, receives from the left, then waits
  // for its own send by handle and may overwrite the buffer; a second
  // round reuses it. pfrt_wait_sends afterwards has nothing left to do.
  for (int round = 0; round < 2; ++round) {
    int64_t big = (int64_t(1) << 18) + 17 * r;
    int64_t fromLeft = (int64_t(1) << 18) + 17 * left;
    std::vector<float> out = payload(r, right, 30 + round, 11, big);
    std::vector<float> in(fromLeft, NAN);
    int64_t handle = pfrt_isend_tracked(out.data(), big, right, 30 + round);
    pfrt_recv(in.data(), fromLeft, left, 30 + round);
    pfrt_wait_send(handle);
    std::fill(out.begin(), out.end(), NAN); // the send is complete
    CHECK(pt_bits_equal(in.data(),
                        payload(left, r, 30 + round, 11, fromLeft).data(),
                        fromLeft),
          "tracked send round %d from %d wrong", round, left);
  }
  pfrt_wait_sends();

  pfrt_barrier();
  return pt_finish(r, "p2p ok\n");
}
