//===- Elementwise.cpp - element-wise kernels, one body per op ------------===//

#include "pf/Conversion/Kernels/Elementwise.h"

#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::pf;
using namespace mlir::pf::kernels;

Value MathEmitter::call(OpBuilder &b, Location loc, StringRef fn, Value x) {
  if (target == Target::Device) {
    if (fn == "erf")
      return math::ErfOp::create(b, loc, x);
    if (fn == "exp")
      return math::ExpOp::create(b, loc, x);
    return math::TanhOp::create(b, loc, x);
  }
  Type f64 = b.getF64Type();
  auto type = LLVM::LLVMFunctionType::get(f64, {f64});
  if (!symbols.lookupSymbol<LLVM::LLVMFuncOp>(fn)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(symbols.getBody());
    LLVM::LLVMFuncOp::create(b, loc, fn, type);
  }
  return LLVM::CallOp::create(b, loc, type, fn, ValueRange{x}).getResult();
}

namespace {

/// Scalar arithmetic in the LLVM dialect (legal on both sides:
/// convert-gpu-to-nvvm keeps it).
struct Scalar {
  OpBuilder &b;
  Location loc;
  Value f64(double v) {
    return LLVM::ConstantOp::create(b, loc, b.getF64Type(),
                                    b.getF64FloatAttr(v));
  }
  Value f32(float v) {
    return LLVM::ConstantOp::create(b, loc, b.getF32Type(),
                                    b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return LLVM::FAddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return LLVM::FSubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return LLVM::FMulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return LLVM::FDivOp::create(b, loc, x, y); }
  Value neg(Value x) { return LLVM::FNegOp::create(b, loc, x); }
  Value widen(Value x) {
    return LLVM::FPExtOp::create(b, loc, b.getF64Type(), x);
  }
  Value narrow(Value x) {
    return LLVM::FPTruncOp::create(b, loc, b.getF32Type(), x);
  }
  Value select(LLVM::FCmpPredicate p, Value x, Value y, Value t, Value f) {
    Value c = LLVM::FCmpOp::create(b, loc, p, x, y);
    return LLVM::SelectOp::create(b, loc, c, t, f);
  }
};

/// f(x) and f'(x) of activation kind `kind` (activationKindCode), in
/// double: the formulas of libpfrt's pfrt_k_activation.
std::pair<Value, Value> activation(Scalar &s, MathEmitter &math, int32_t kind,
                                   Value x) {
  constexpr double kInvSqrt2 = 0.70710678118654752440;
  constexpr double kInvSqrt2Pi = 0.39894228040143267794;
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  switch (kind) {
  case 0: { // x Phi(x)
    Value cdf = s.mul(
        s.f64(0.5),
        s.add(s.f64(1.0), math.erf(s.b, s.loc, s.mul(x, s.f64(kInvSqrt2)))));
    Value pdf = math.exp(s.b, s.loc, s.mul(s.f64(-0.5), s.mul(x, x)));
    return {s.mul(x, cdf),
            s.add(cdf, s.mul(s.mul(x, s.f64(kInvSqrt2Pi)), pdf))};
  }
  case 1: { // x (1 + tanh(u)) / 2, u = sqrt(2/pi) (x + 0.044715 x^3)
    Value x2 = s.mul(x, x);
    Value u = s.mul(s.f64(kSqrt2OverPi),
                    s.add(x, s.mul(s.f64(0.044715), s.mul(x2, x))));
    Value t = math.tanh(s.b, s.loc, u);
    Value half1t = s.mul(s.f64(0.5), s.add(s.f64(1.0), t));
    Value du = s.mul(s.f64(kSqrt2OverPi),
                     s.add(s.f64(1.0), s.mul(s.f64(3 * 0.044715), x2)));
    Value df = s.add(
        half1t,
        s.mul(s.mul(s.mul(s.f64(0.5), x), s.sub(s.f64(1.0), s.mul(t, t))), du));
    return {s.mul(x, half1t), df};
  }
  case 2: {
    Value t = math.tanh(s.b, s.loc, x);
    return {t, s.sub(s.f64(1.0), s.mul(t, t))};
  }
  default: {
    Value e = math.exp(s.b, s.loc, s.neg(x));
    Value sg = s.div(s.f64(1.0), s.add(s.f64(1.0), e));
    return {sg, s.mul(sg, s.sub(s.f64(1.0), sg))};
  }
  }
}

ElementwiseKernel activationKernel(StringRef kindName, bool grad) {
  int32_t kind = activationKindCode(kindName);
  ElementwiseKernel k;
  k.name = ("pf_ew_activation" + Twine(grad ? "_grad_" : "_") + kindName).str();
  k.numInputs = grad ? 2 : 1;
  k.body = [kind, grad](OpBuilder &b, Location loc, MathEmitter &math,
                        ValueRange in) -> SmallVector<Value> {
    Scalar s{b, loc};
    auto [f, df] = activation(s, math, kind, s.widen(in[0]));
    return {s.narrow(grad ? s.mul(df, s.widen(in[1])) : f)};
  };
  return k;
}

} // namespace

std::optional<ElementwiseKernel>
mlir::pf::kernels::elementwiseKernelFor(Operation *op) {
  using Body =
      std::function<Value(OpBuilder &, Location, MathEmitter &, ValueRange)>;
  auto make = [](StringRef name, unsigned inputs, Body body) {
    ElementwiseKernel k;
    k.name = name.str();
    k.numInputs = inputs;
    k.body = [body = std::move(body)](OpBuilder &b, Location loc,
                                      MathEmitter &math,
                                      ValueRange in) -> SmallVector<Value> {
      return {body(b, loc, math, in)};
    };
    return k;
  };
  return llvm::TypeSwitch<Operation *, std::optional<ElementwiseKernel>>(op)
      .Case([&](ReluOp) {
        return make(
            "pf_ew_relu", 1,
            [](OpBuilder &b, Location loc, MathEmitter &, ValueRange in) {
              Scalar s{b, loc};
              return s.select(LLVM::FCmpPredicate::olt, in[0], s.f32(0),
                              s.f32(0), in[0]);
            });
      })
      .Case([&](ReluGradOp) {
        // in: (y, dy); dx = y > 0 ? dy : 0.
        return make(
            "pf_ew_relu_grad", 2,
            [](OpBuilder &b, Location loc, MathEmitter &, ValueRange in) {
              Scalar s{b, loc};
              return s.select(LLVM::FCmpPredicate::ogt, in[0], s.f32(0), in[1],
                              s.f32(0));
            });
      })
      .Case([&](AddOp) {
        return make(
            "pf_ew_add", 2,
            [](OpBuilder &b, Location loc, MathEmitter &, ValueRange in) {
              return Scalar{b, loc}.add(in[0], in[1]);
            });
      })
      .Case([&](MulOp) {
        return make(
            "pf_ew_mul", 2,
            [](OpBuilder &b, Location loc, MathEmitter &, ValueRange in) {
              return Scalar{b, loc}.mul(in[0], in[1]);
            });
      })
      .Case([&](SubOp) {
        return make(
            "pf_ew_sub", 2,
            [](OpBuilder &b, Location loc, MathEmitter &, ValueRange in) {
              return Scalar{b, loc}.sub(in[0], in[1]);
            });
      })
      .Case([&](DivOp) {
        return make(
            "pf_ew_div", 2,
            [](OpBuilder &b, Location loc, MathEmitter &, ValueRange in) {
              return Scalar{b, loc}.div(in[0], in[1]);
            });
      })
      .Case([&](ActivationOp a) {
        return activationKernel(a.getKind(), /*grad=*/false);
      })
      .Case([&](ActivationGradOp a) {
        return activationKernel(a.getKind(), /*grad=*/true);
      })
      .Default([](Operation *) { return std::nullopt; });
}

ElementwiseKernel mlir::pf::kernels::fuseElementwise(StringRef name,
                                                     ArrayRef<Operation *> ops,
                                                     ArrayRef<Value> inputs,
                                                     ArrayRef<Value> outputs) {
  SmallVector<ElementwiseKernel> parts;
  for (Operation *op : ops) {
    std::optional<ElementwiseKernel> k = elementwiseKernelFor(op);
    assert(k && "fused op without an element-wise kernel");
    parts.push_back(std::move(*k));
  }
  ElementwiseKernel fused;
  fused.name = name.str();
  fused.numInputs = inputs.size();
  fused.numOutputs = outputs.size();
  SmallVector<Operation *> opList(ops);
  SmallVector<Value> inputList(inputs), outputList(outputs);
  fused.body = [parts = std::move(parts), opList, inputList,
                outputList](OpBuilder &b, Location loc, MathEmitter &math,
                            ValueRange in) -> SmallVector<Value> {
    llvm::DenseMap<Value, Value> element;
    for (auto [v, e] : llvm::zip_equal(inputList, in))
      element[v] = e;
    for (auto [op, k] : llvm::zip_equal(opList, parts)) {
      SmallVector<Value> operands;
      for (Value v : op->getOperands())
        operands.push_back(element.lookup(v));
      element[op->getResult(0)] = k.body(b, loc, math, operands).front();
    }
    SmallVector<Value> out;
    for (Value v : outputList)
      out.push_back(element.lookup(v));
    return out;
  };
  return fused;
}

std::string mlir::pf::kernels::fusionKey(ArrayRef<Operation *> ops,
                                         ArrayRef<Value> inputs,
                                         ArrayRef<Value> outputs) {
  llvm::DenseMap<Value, std::string> ref;
  for (auto [i, v] : llvm::enumerate(inputs))
    ref[v] = "i" + std::to_string(i);
  std::string key;
  for (auto [j, op] : llvm::enumerate(ops)) {
    key += elementwiseKernelFor(op)->name + "(";
    for (Value v : op->getOperands())
      key += ref.lookup(v) + ",";
    key += ");";
    ref[op->getResult(0)] = "v" + std::to_string(j);
  }
  key += "->";
  for (Value v : outputs)
    key += ref.lookup(v) + ",";
  return key;
}

namespace {

/// The signature both twins share: (ptr out..., ptr in..., i64 n).
SmallVector<Type> kernelArgs(MLIRContext *ctx, const ElementwiseKernel &k) {
  SmallVector<Type> args(k.numPointers(), LLVM::LLVMPointerType::get(ctx));
  args.push_back(IntegerType::get(ctx, 64));
  return args;
}

/// out_j[i] = body_j(in...[i]) at the builder's point, `i` an i64.
void emitElement(OpBuilder &b, Location loc, MathEmitter &math,
                 const ElementwiseKernel &k, ValueRange args, Value i) {
  Type f32 = b.getF32Type();
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto at = [&](Value base) {
    return LLVM::GEPOp::create(b, loc, ptr, f32, base, ValueRange{i});
  };
  SmallVector<Value> in;
  for (unsigned j = 0; j < k.numInputs; ++j)
    in.push_back(LLVM::LoadOp::create(b, loc, f32, at(args[k.numOutputs + j])));
  SmallVector<Value> out = k.body(b, loc, math, in);
  assert(out.size() == k.numOutputs && "a body gives one value an output");
  for (unsigned j = 0; j < k.numOutputs; ++j)
    LLVM::StoreOp::create(b, loc, out[j], at(args[j]));
}

} // namespace

namespace {
/// `parent`'s function `kernel.name`, or the one `create(b, loc, args)`
/// builds at `parent`'s end.
template <typename FnOp, typename ParentOp, typename Create>
FnOp getOrCreate(ParentOp parent, const ElementwiseKernel &kernel,
                 Create &&create) {
  if (auto f = parent.template lookupSymbol<FnOp>(kernel.name))
    return f;
  OpBuilder b(parent.getContext());
  b.setInsertionPointToEnd(parent.getBody());
  return create(b, parent.getLoc(), kernelArgs(parent.getContext(), kernel));
}
} // namespace

LLVM::LLVMFuncOp
mlir::pf::kernels::getOrCreateHostKernel(ModuleOp module,
                                         const ElementwiseKernel &kernel) {
  return getOrCreate<LLVM::LLVMFuncOp>(
      module, kernel, [&](OpBuilder &b, Location loc, ArrayRef<Type> argTypes) {
        MLIRContext *ctx = b.getContext();
        auto type =
            LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), argTypes);
        auto fn = LLVM::LLVMFuncOp::create(b, loc, kernel.name, type,
                                           LLVM::Linkage::Internal);
        Block *entry = fn.addEntryBlock(b);
        Region &body = fn.getBody();
        Type i64 = b.getI64Type();
        Block *header = b.createBlock(&body, body.end(), {i64}, {loc});
        Block *loop = b.createBlock(&body, body.end());
        Block *exit = b.createBlock(&body, body.end());
        ValueRange args = entry->getArguments();
        Value n = args.back();
        b.setInsertionPointToEnd(entry);
        LLVM::BrOp::create(b, loc,
                           ValueRange{LLVM::ConstantOp::create(b, loc, i64, 0)},
                           header);
        b.setInsertionPointToEnd(header);
        Value i = header->getArgument(0);
        LLVM::CondBrOp::create(
            b, loc,
            LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, i, n), loop,
            exit);
        b.setInsertionPointToEnd(loop);
        MathEmitter math(module, Target::Host);
        emitElement(b, loc, math, kernel, args, i);
        Value next = LLVM::AddOp::create(
            b, loc, i, LLVM::ConstantOp::create(b, loc, i64, 1));
        LLVM::BrOp::create(b, loc, ValueRange{next}, header);
        b.setInsertionPointToEnd(exit);
        LLVM::ReturnOp::create(b, loc, ValueRange{});
        return fn;
      });
}

LLVM::LLVMFuncOp mlir::pf::kernels::getOrCreatePackedHostKernel(
    ModuleOp module, const ElementwiseKernel &kernel) {
  std::string name = kernel.name + "_packed";
  if (auto f = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return f;
  LLVM::LLVMFuncOp twin = getOrCreateHostKernel(module, kernel);
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  Location loc = module.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, name,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, i64}),
      LLVM::Linkage::Internal);
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  SmallVector<Value> args;
  for (unsigned j = 0; j < kernel.numPointers(); ++j) {
    Value slot =
        LLVM::GEPOp::create(b, loc, ptr, ptr, entry->getArgument(0),
                            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(j)});
    args.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
  }
  args.push_back(entry->getArgument(1));
  LLVM::CallOp::create(b, loc, twin, args);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return fn;
}

gpu::GPUModuleOp mlir::pf::kernels::getOrCreateKernelModule(ModuleOp module) {
  if (auto kernels = module.lookupSymbol<gpu::GPUModuleOp>("pf_kernels"))
    return kernels;
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  return gpu::GPUModuleOp::create(b, module.getLoc(), "pf_kernels");
}

gpu::GPUFuncOp
mlir::pf::kernels::getOrCreateDeviceKernel(gpu::GPUModuleOp kernels,
                                           const ElementwiseKernel &kernel) {
  return getOrCreate<gpu::GPUFuncOp>(
      kernels, kernel,
      [&](OpBuilder &b, Location loc, ArrayRef<Type> argTypes) {
        auto fn = gpu::GPUFuncOp::create(b, loc, kernel.name,
                                         b.getFunctionType(argTypes, {}));
        fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
        fn.setKnownBlockSizeAttr(
            b.getDenseI32ArrayAttr({static_cast<int32_t>(kBlockSize), 1, 1}));
        Block *entry = &fn.getBody().front();
        Region &body = fn.getBody();
        Block *work = b.createBlock(&body, body.end());
        Block *exit = b.createBlock(&body, body.end());
        ValueRange args = entry->getArguments();
        b.setInsertionPointToEnd(entry);
        Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
        Value size = gpu::BlockDimOp::create(b, loc, gpu::Dimension::x);
        Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
        Type i64 = b.getI64Type();
        auto toI64 = [&](Value v) {
          return arith::IndexCastOp::create(b, loc, i64, v).getResult();
        };
        Value i = LLVM::AddOp::create(
            b, loc, LLVM::MulOp::create(b, loc, toI64(block), toI64(size)),
            toI64(thread));
        Value inside = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, i,
                                            args.back());
        LLVM::CondBrOp::create(b, loc, inside, work, exit);
        b.setInsertionPointToEnd(work);
        ModuleOp none;
        MathEmitter math(none, Target::Device);
        emitElement(b, loc, math, kernel, args, i);
        LLVM::BrOp::create(b, loc, ValueRange{}, exit);
        b.setInsertionPointToEnd(exit);
        gpu::ReturnOp::create(b, loc);
        return fn;
      });
}
