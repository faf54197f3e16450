//===- RuntimeABI.h - typed calls into libpfrt ------------------*- C++ -*-===//
//
// The compiler's side of runtime/include/pfrt/pfrt_abi.def. Every runtime
// function is declared with exactly the LLVM type of its row, and has a
// typed emitter of the same name:
//
//   rt.pfrt_k_add(b, loc, a, c, out, count(x));
//
// A call site with the wrong number of arguments, or a C++ integer where
// the row wants a pointer (or a float where it wants an integer), does not
// compile. mlir::Values are checked against the row when the call is built;
// a mismatch is a located error and the conversion fails (hadError()).
//
// Shared by every conversion that calls the runtime. A GPU rank's module
// (convert-pf-to-gpu) sets Target::Device: each call of a host row becomes
// a call of its device twin (runtime/include/pfrt/pfrt_device.def), rows
// that touch no buffer stay, and any other row is a located error naming
// the row, so no host code ever runs on device addresses.
//
//===----------------------------------------------------------------------===//

#ifndef PF_CONVERSION_COMMON_RUNTIMEABI_H
#define PF_CONVERSION_COMMON_RUNTIMEABI_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <optional>
#include <type_traits>
#include <vector>

namespace mlir::pf::rt {

/// One enumerator per row of pfrt_abi.def.
enum class Fn : unsigned {
#define PFRT_FN(NAME, ...) NAME,
#include "pfrt/pfrt_abi.def"
};

/// The runtime function's C name.
StringRef getName(Fn fn);

/// Whose addresses the buffers a module's calls pass are.
enum class Target { Host, Device };

/// The row a GPU rank calls for host row `fn`: its device twin, `fn` itself
/// when it touches no buffer or is a device row (pfrt_cuda_*), or none.
std::optional<Fn> deviceRow(Fn fn);

/// The LLVM function type of `fn`'s row.
LLVM::LLVMFunctionType getFunctionType(MLIRContext *ctx, Fn fn);

/// The rows' type tags as argument kinds of the typed emitters.
namespace arg {
/// A pointer: only an mlir::Value (of type !llvm.ptr).
struct PTR {
  PTR(Value v) : value(v) {}
  Value materialize(OpBuilder &, Location) const { return value; }
  Value value;
};

/// An integer of `Bits` bits: a Value, or a C++ integer (a constant).
template <unsigned Bits> struct Int {
  Int(Value v) : value(v) {}
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                             int> = 0>
  Int(T c) : constant(static_cast<int64_t>(c)) {}
  /// Flags (nesterov, transposes) are integers in the C ABI.
  Int(bool c) : constant(c ? 1 : 0) {}
  Value materialize(OpBuilder &b, Location loc) const;
  Value value;
  std::optional<int64_t> constant;
};
using I32 = Int<32>;
using I64 = Int<64>;
using U64 = Int<64>;

/// A float of `Bits` bits: a Value, or a C++ floating-point number.
template <unsigned Bits> struct Float {
  Float(Value v) : value(v) {}
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Float(T c) : constant(static_cast<double>(c)) {}
  Value materialize(OpBuilder &b, Location loc) const;
  Value value;
  std::optional<double> constant;
};
using F32 = Float<32>;
using F64 = Float<64>;

/// Results only.
struct VOID {};
} // namespace arg

class RuntimeABI;

namespace detail {
/// One row's emitter: a non-template function of exactly the row's
/// parameters, so arity and argument kinds are checked by the C++ compiler.
template <typename Ret, typename... Args> struct Row {
  static Value call(RuntimeABI &rt, OpBuilder &b, Location loc, Fn fn,
                    Args... args);
};
} // namespace detail

/// Declarations, calls and the module-level constants calls need (strings,
/// shape arrays), for one module.
class RuntimeABI {
public:
  explicit RuntimeABI(ModuleOp module, Target target = Target::Host)
      : module(module), target(target) {}

  Target getTarget() const { return target; }
  /// The op whose lowering makes the next calls (named in errors).
  void setCaller(StringRef opName) { caller = opName.str(); }

  /// The declaration of `fn` in the module (made on first use).
  LLVM::LLVMFuncOp declare(OpBuilder &b, Fn fn);

  /// A call of `fn` with already materialized arguments; the result, or a
  /// null Value for void functions. Checks every argument's type against
  /// the row: a mismatch is a located error (see hadError()). For
  /// Target::Device, `fn`'s device row (deviceRow) is called; a row
  /// without one is a located error.
  Value call(OpBuilder &b, Location loc, Fn fn, ArrayRef<Value> args);

  /// Typed emitters, one per row: rt.NAME(builder, loc, args...).
#define PFRT_FN(NAME, RET, ...)                                                \
  template <typename... A> Value NAME(OpBuilder &b, Location loc, A &&...a) {  \
    return detail::Row<arg::RET, ##__VA_ARGS__>::call(*this, b, loc, Fn::NAME, \
                                                      std::forward<A>(a)...);  \
  }
  using PTR = arg::PTR;
  using I32 = arg::I32;
  using I64 = arg::I64;
  using U64 = arg::U64;
  using F32 = arg::F32;
  using F64 = arg::F64;
#include "pfrt/pfrt_abi.def"

  /// A NUL-terminated string constant (one global per distinct string).
  Value str(OpBuilder &b, Location loc, StringRef s);
  /// Constant arrays (private globals, one per distinct content); an empty
  /// i64 array is a null ptr.
  Value i64Array(OpBuilder &b, Location loc, ArrayRef<int64_t> values);
  Value i8Array(OpBuilder &b, Location loc, ArrayRef<int8_t> values);
  Value nullPtr(OpBuilder &b, Location loc);
  /// The address of `global` in the function being built: made once at the
  /// function's entry and shared by every later use there (outside a
  /// function, a new address each time).
  Value addressOf(OpBuilder &b, Location loc, LLVM::GlobalOp global);
  /// Drops the shared addresses (before a pass erases or moves the ops of a
  /// function built with them). The cache also assumes no conversion rolls
  /// back the op that made one: every pattern failure here is fatal.
  void forgetAddresses() { addresses.clear(); }

  /// Whether a call was built with arguments of the wrong type.
  bool hadError() const { return error; }
  ModuleOp getModule() const { return module; }

private:
  ModuleOp module;
  Target target;
  std::string caller;
  llvm::DenseMap<unsigned, LLVM::LLVMFuncOp> decls;
  llvm::StringMap<LLVM::GlobalOp> strings;
  llvm::DenseMap<std::pair<Operation *, Operation *>, Value> addresses;
  /// Arrays by element width and content.
  std::map<std::pair<unsigned, std::vector<int64_t>>, LLVM::GlobalOp> arrays;
  unsigned constants = 0;
  bool error = false;
};

namespace detail {
template <typename Ret, typename... Args>
Value Row<Ret, Args...>::call(RuntimeABI &rt, OpBuilder &b, Location loc, Fn fn,
                              Args... args) {
  return rt.call(b, loc, fn, {args.materialize(b, loc)...});
}
} // namespace detail

} // namespace mlir::pf::rt

#endif // PF_CONVERSION_COMMON_RUNTIMEABI_H
