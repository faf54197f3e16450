//===- AbiCheck.cpp - pfrt.h against pfrt_abi.def, at compile time --------===//
//
// Every row of pfrt_abi.def must describe the declaration in pfrt.h: a
// function whose arguments or result differ from its row (or that pfrt.h
// lacks) stops the runtime's build here. The compiler and the Python front
// end read the same rows, so the three cannot drift apart.
//
//===----------------------------------------------------------------------===//

#include "pfrt/AbiTraits.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"
#include <type_traits>

namespace pfrt_abi {
#define PFRT_FN(NAME, RET, ...)                                                \
  static_assert(Matches<decltype(::NAME), RET, ##__VA_ARGS__>::value,          \
                #NAME " in pfrt.h does not match its row in pfrt_abi.def");
#include "pfrt/pfrt_abi.def"

// A device twin has exactly its host row's C signature (pfrt_device.def).
#define PFRT_DEVICE_TWIN(HOST, DEVICE)                                         \
  static_assert(std::is_same_v<decltype(::HOST), decltype(::DEVICE)>,          \
                #DEVICE " does not have the signature of " #HOST);
#include "pfrt/pfrt_device.def"
} // namespace pfrt_abi
