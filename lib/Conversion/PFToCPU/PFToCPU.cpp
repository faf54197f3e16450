//===- PFToCPU.cpp - per-rank pf programs to LLVM over libpfrt ------------===//
//
// Every value of the step becomes a buffer (an !llvm.ptr) from the runtime's
// step arena and every op a call into libpfrt's CPU kernels; parameters are
// persistent buffers behind globals. The generated code owns no policy:
// kernels, communication, data and the driver loop live in the runtime.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/Passes.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#define DEBUG_TYPE "convert-pf-to-cpu"

namespace mlir::pf {
#define GEN_PASS_DEF_CONVERTPFTOCPUPASS
#include "pf/Conversion/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

class RankLowering {
public:
  explicit RankLowering(ModuleOp module)
      : module(module), ctx(module.getContext()), b(ctx),
        ptrTy(LLVM::LLVMPointerType::get(ctx)), i64Ty(b.getI64Type()),
        i32Ty(b.getI32Type()), i8Ty(b.getI8Type()), f64Ty(b.getF64Type()),
        voidTy(LLVM::LLVMVoidType::get(ctx)) {}

  LogicalResult run();

private:
  // Module-level helpers.
  LLVM::LLVMFuncOp declare(StringRef name, Type result, TypeRange args);
  Value call(Location loc, StringRef name, Type result, ValueRange args);
  Value str(Location loc, StringRef s);
  Value i64Array(Location loc, ArrayRef<int64_t> values);
  Value i8Array(Location loc, ArrayRef<int8_t> values);
  Value constI64(Location loc, int64_t v);
  Value constI32(Location loc, int32_t v);
  Value constF64(Location loc, double v);
  Value nullPtr(Location loc);
  LLVM::GlobalOp ptrGlobal(StringRef name);

  LogicalResult lowerParams();
  LogicalResult lowerStep(func::FuncOp func);
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerInput(BlockArgument arg, func::FuncOp func);
  void emitMain();

  /// A fresh step-arena buffer for `v`'s local data.
  FailureOr<Value> alloc(Location loc, Value v);
  FailureOr<int64_t> elementBytes(Operation *op, Type t);
  Value get(Value v) { return values.lookup(v); }
  static ArrayRef<int64_t> shape(Value v) {
    return cast<GlobalType>(v.getType()).getShape();
  }
  static int64_t count(Value v) {
    return cast<GlobalType>(v.getType()).getNumElements();
  }

  ModuleOp module;
  MLIRContext *ctx;
  OpBuilder b;
  Type ptrTy, i64Ty, i32Ty, i8Ty, f64Ty, voidTy;
  llvm::StringMap<LLVM::LLVMFuncOp> decls;
  llvm::StringMap<LLVM::GlobalOp> strings;
  unsigned constants = 0;
  llvm::StringMap<LLVM::GlobalOp> paramGlobals;
  LLVM::GlobalOp seedGlobal;
  DenseMap<Value, Value> values;
  /// What a host program needs to know about this rank's inputs.
  SmallVector<Attribute> inputs;
  /// This module's world rank.
  int64_t rankId = 0;
  /// Reads of a parameter that must copy (a write to it happens before a
  /// later use of the read).
  llvm::DenseSet<Operation *> copyingReads;
  /// Optimizer results computed straight into the parameter (or state)
  /// buffer they are written back to; their write_param is then a no-op.
  llvm::DenseMap<Value, StringRef> inPlace;
  /// Relus computed by the bias_add before them (pfrt_k_bias_add_relu).
  llvm::DenseSet<Operation *> fusedRelus;
};

LLVM::LLVMFuncOp RankLowering::declare(StringRef name, Type result,
                                       TypeRange args) {
  if (auto it = decls.find(name); it != decls.end())
    return it->second;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto fn = LLVM::LLVMFuncOp::create(
      b, module.getLoc(), name, LLVM::LLVMFunctionType::get(result, SmallVector<Type>(args)));
  decls[name] = fn;
  return fn;
}

Value RankLowering::call(Location loc, StringRef name, Type result,
                         ValueRange args) {
  auto fn = declare(name, result, args.getTypes());
  auto op = LLVM::CallOp::create(b, loc, fn, args);
  return isa<LLVM::LLVMVoidType>(result) ? Value() : op.getResult();
}

Value RankLowering::str(Location loc, StringRef s) {
  auto it = strings.find(s);
  LLVM::GlobalOp global;
  if (it != strings.end()) {
    global = it->second;
  } else {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    std::string data = s.str();
    data.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(i8Ty, data.size());
    global = LLVM::GlobalOp::create(
        b, loc, type, /*isConstant=*/true, LLVM::Linkage::Private,
        ("__pf_str" + Twine(strings.size())).str(), b.getStringAttr(data));
    strings[s] = global;
  }
  return LLVM::AddressOfOp::create(b, loc, global);
}

Value RankLowering::i64Array(Location loc, ArrayRef<int64_t> values) {
  if (values.empty())
    return nullPtr(loc);
  auto global = [&] {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto type = LLVM::LLVMArrayType::get(i64Ty, values.size());
  return LLVM::GlobalOp::create(
      b, loc, type, /*isConstant=*/true, LLVM::Linkage::Private,
      ("__pf_dims" + Twine(constants++)).str(),
      DenseIntElementsAttr::get(
          RankedTensorType::get({(int64_t)values.size()}, i64Ty), values));
  }();
  return LLVM::AddressOfOp::create(b, loc, global);
}

Value RankLowering::i8Array(Location loc, ArrayRef<int8_t> values) {
  auto global = [&] {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto type = LLVM::LLVMArrayType::get(i8Ty, values.size());
  return LLVM::GlobalOp::create(
      b, loc, type, /*isConstant=*/true, LLVM::Linkage::Private,
      ("__pf_mask" + Twine(constants++)).str(),
      DenseIntElementsAttr::get(
          RankedTensorType::get({(int64_t)values.size()}, i8Ty), values));
  }();
  return LLVM::AddressOfOp::create(b, loc, global);
}

Value RankLowering::constI64(Location loc, int64_t v) {
  return LLVM::ConstantOp::create(b, loc, i64Ty, b.getI64IntegerAttr(v));
}
Value RankLowering::constI32(Location loc, int32_t v) {
  return LLVM::ConstantOp::create(b, loc, i32Ty, b.getI32IntegerAttr(v));
}
Value RankLowering::constF64(Location loc, double v) {
  return LLVM::ConstantOp::create(b, loc, f64Ty, b.getF64FloatAttr(v));
}
Value RankLowering::nullPtr(Location loc) {
  return LLVM::ZeroOp::create(b, loc, ptrTy);
}

LLVM::GlobalOp RankLowering::ptrGlobal(StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto global = LLVM::GlobalOp::create(b, module.getLoc(), ptrTy,
                                       /*isConstant=*/false,
                                       LLVM::Linkage::Internal, name,
                                       Attribute());
  Block *init = b.createBlock(&global.getInitializerRegion());
  b.setInsertionPointToStart(init);
  LLVM::ReturnOp::create(b, module.getLoc(),
                         ValueRange{nullPtr(module.getLoc())});
  return global;
}

FailureOr<int64_t> RankLowering::elementBytes(Operation *op, Type t) {
  Type elem = cast<GlobalType>(t).getElementType();
  if (elem.isF32())
    return 4;
  if (elem.isInteger(64))
    return 8;
  return op->emitOpError() << "convert-pf-to-cpu supports f32 tensors and "
                              "i64 labels, got "
                           << elem;
}

FailureOr<Value> RankLowering::alloc(Location loc, Value v) {
  FailureOr<int64_t> bytes = elementBytes(v.getDefiningOp() ? v.getDefiningOp()
                                                            : module,
                                          v.getType());
  if (failed(bytes))
    return failure();
  return call(loc, "pfrt_arena_alloc", ptrTy,
              {constI64(loc, *bytes * count(v))});
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

LogicalResult RankLowering::lowerParams() {
  // The seed lives in an i64 global written by pf_init_params.
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    seedGlobal = LLVM::GlobalOp::create(b, module.getLoc(), i64Ty, false,
                                        LLVM::Linkage::Internal, "__pf_seed",
                                        b.getI64IntegerAttr(0));
  }
  b.setInsertionPointToEnd(module.getBody());
  Location loc = module.getLoc();
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, "pf_init_params", LLVM::LLVMFunctionType::get(voidTy, {i64Ty}));
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  Value seed = entry->getArgument(0);
  LLVM::StoreOp::create(b, loc, seed,
                        LLVM::AddressOfOp::create(b, loc, seedGlobal));
  unsigned index = 0;
  for (auto param : module.getOps<ParamOp>()) {
    GlobalType type = param.getGlobalType();
    if (type.getElementType() != b.getF32Type())
      return param.emitOpError("convert-pf-to-cpu supports f32 parameters");
    LLVM::GlobalOp global;
    {
      OpBuilder::InsertionGuard guard(b);
      global = ptrGlobal(("__pf_param" + Twine(index++)).str());
    }
    paramGlobals[param.getSymName()] = global;
    Location ploc = param.getLoc();
    Value buffer = call(ploc, "pfrt_alloc_persistent", ptrTy,
                        {constI64(ploc, 4 * type.getNumElements())});
    LLVM::StoreOp::create(b, ploc, buffer,
                          LLVM::AddressOfOp::create(b, ploc, global));
    InitAttr init = param.getInit();
    Value stream = call(ploc, "pfrt_stream_id", i64Ty,
                        {str(ploc, param.getSymName())});
    // A shard (after pf-partition-ranks) draws its logical elements.
    auto logical = param->getAttrOfType<DenseI64ArrayAttr>("pf.logical_shape");
    auto offset = param->getAttrOfType<DenseI64ArrayAttr>("pf.shard_offset");
    InitKind kind = param->hasAttr("pf.zero_init") ? InitKind::Zeros
                                                   : init.getKind();
    call(ploc, "pfrt_init_param", i32Ty,
         {buffer, constI32(ploc, static_cast<int32_t>(kind)),
          constF64(ploc, init.getFirst()), constF64(ploc, init.getSecond()),
          seed, stream, constI64(ploc, type.getRank()),
          i64Array(ploc, logical ? logical.asArrayRef() : type.getShape()),
          offset ? i64Array(ploc, offset.asArrayRef()) : nullPtr(ploc),
          i64Array(ploc, type.getShape())});
    // Parameters, optimizer states and running statistics persist across
    // steps: the runtime reads, saves and loads them by name. Gradient
    // buffers are per-step scratch.
    if (!param->hasAttr("pf.grad_of"))
      call(ploc, "pfrt_state_register", i32Ty,
           {str(ploc, param.getSymName()), constI32(ploc, 0),
            constI64(ploc, type.getRank()),
            i64Array(ploc, logical ? logical.asArrayRef() : type.getShape()),
            offset ? i64Array(ploc, offset.asArrayRef()) : nullPtr(ploc),
            i64Array(ploc, type.getShape()), buffer});
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return success();
}

//===----------------------------------------------------------------------===//
// The step
//===----------------------------------------------------------------------===//

LogicalResult RankLowering::lowerInput(BlockArgument arg, func::FuncOp func) {
  Location loc = arg.getLoc();
  auto type = cast<GlobalType>(arg.getType());
  auto index = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                  "pf.input");
  int64_t input = index ? index.getInt() : arg.getArgNumber();
  FailureOr<int64_t> bytes = elementBytes(func, type);
  FailureOr<Value> buffer = alloc(loc, arg);
  if (failed(bytes) || failed(buffer))
    return failure();
  // Integer inputs are labels: the loss that reads them gives the range of
  // their synthetic data (executables); a host program gives real data.
  int64_t classes = 0;
  SmallVector<Value> worklist = {arg};
  while (!worklist.empty() && classes == 0) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (auto ce = dyn_cast<SoftmaxCrossEntropyOp>(user))
        classes = shape(ce.getLogits())[1];
      else if (auto ceg = dyn_cast<SoftmaxCrossEntropyGradOp>(user))
        classes = shape(ceg.getLogits())[1];
      else if (isa<MicrobatchOp, ShardOp, AllGatherOp, AllToAllOp,
                   ExtractBoxOp, ToGlobalOp, BroadcastOp>(user))
        worklist.push_back(user->getResult(0));
    }
  }
  bool isFloat = type.getElementType().isF32();
  {
    SmallVector<NamedAttribute> facts = {
        b.getNamedAttr("index", b.getI64IntegerAttr(input)),
        b.getNamedAttr("shape", b.getDenseI64ArrayAttr(type.getShape())),
        b.getNamedAttr("dtype", b.getStringAttr(isFloat ? "f32" : "i64"))};
    unsigned n = arg.getArgNumber();
    for (StringRef name : {"pf.logical_shape", "pf.boxes", "pf.box_shape"})
      if (Attribute a = func.getArgAttr(n, name))
        facts.push_back(b.getNamedAttr(name.drop_front(3), a));
    inputs.push_back(b.getDictionaryAttr(facts));
  }
  Value seed = LLVM::LoadOp::create(
      b, loc, i64Ty, LLVM::AddressOfOp::create(b, loc, seedGlobal));
  Value stream = call(loc, "pfrt_stream_id", i64Ty,
                      {str(loc, ("input" + Twine(input)).str())});
  // This rank's boxes of the logical input (one per micro-batch when the
  // batch is split), or the whole tensor.
  unsigned argNo = arg.getArgNumber();
  auto logical = func.getArgAttrOfType<DenseI64ArrayAttr>(argNo, "pf.logical_shape");
  auto boxes = func.getArgAttrOfType<ArrayAttr>(argNo, "pf.boxes");
  auto boxShape = func.getArgAttrOfType<DenseI64ArrayAttr>(argNo, "pf.box_shape");
  SmallVector<int64_t> offsets;
  if (boxes)
    for (Attribute a : boxes)
      llvm::append_range(offsets, cast<DenseI64ArrayAttr>(a).asArrayRef());
  else
    offsets.assign(type.getRank(), 0);
  ArrayRef<int64_t> logicalShape = logical ? logical.asArrayRef() : type.getShape();
  ArrayRef<int64_t> oneBox = boxShape ? boxShape.asArrayRef() : type.getShape();
  int64_t numBoxes = boxes ? boxes.size() : 1;
  call(loc, "pfrt_load_input_boxes", i32Ty,
       {constI64(loc, input), *buffer,
        constI64(loc, *bytes * type.getNumElements()),
        constI32(loc, isFloat ? 0 : 1), constI64(loc, classes), seed, stream,
        constI64(loc, type.getRank()), i64Array(loc, logicalShape),
        constI64(loc, numBoxes),
        offsets.empty() ? nullPtr(loc) : i64Array(loc, offsets),
        i64Array(loc, oneBox)});
  // A partial-sum input from a source of logical values (synthetic data,
  // .npy files): ranks off coordinate 0 of a P dimension hold zeros. Inputs a
  // host program gives are the rank's own addends and stay as given.
  if (func.getArgAttr(argNo, "pf.zero_input"))
    call(loc, "pfrt_zero_partial_input", i32Ty,
         {*buffer, constI64(loc, *bytes * type.getNumElements())});
  values[arg] = *buffer;
  return success();
}

LogicalResult RankLowering::lowerStep(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("convert-pf-to-cpu expects one block");
  Block &block = func.getBody().front();

  // Parameter reads alias the parameter's buffer unless the parameter is
  // written before the read's last use.
  llvm::DenseMap<Operation *, unsigned> order;
  unsigned position = 0;
  for (Operation &op : block)
    order[&op] = position++;
  for (auto read : block.getOps<ReadParamOp>()) {
    unsigned lastUse = order[read];
    for (Operation *user : read->getUsers())
      lastUse = std::max(lastUse, order[user]);
    for (auto write : block.getOps<WriteParamOp>())
      if (write.getParam() == read.getParam() && order[write] > order[read] &&
          order[write] < lastUse)
        copyingReads.insert(read);
  }

  // Element-wise optimizer updates may write their results straight into
  // the buffer a write_param stores them to (the kernels allow out == in),
  // unless the old value is still read after the update or a read between
  // the update and the store would see the new value early.
  for (Operation &op : block) {
    if (!isa<SGDUpdateOp, AdamUpdateOp>(op))
      continue;
    unsigned p = order[&op];
    for (Value r : op.getResults()) {
      if (!r.hasOneUse())
        continue;
      auto write = dyn_cast<WriteParamOp>(*r.getUsers().begin());
      if (!write || r.getType() != write.getValue().getType())
        continue;
      unsigned q = order[write];
      bool safe = true;
      for (Operation &other : block) {
        if (auto read = dyn_cast<ReadParamOp>(other);
            read && read.getParam() == write.getParam()) {
          unsigned at = order[read];
          if (at > p && at < q)
            safe = false;
          if (!copyingReads.contains(read))
            for (Operation *user : read->getUsers())
              if (user != &op && order[user] > p)
                safe = false;
        } else if (auto w = dyn_cast<WriteParamOp>(other);
                   w && w != write && w.getParam() == write.getParam() &&
                   order[w] > p && order[w] < q) {
          safe = false;
        }
      }
      if (safe)
        inPlace[r] = write.getParam();
    }
  }

  b.setInsertionPointToEnd(module.getBody());
  Location loc = func.getLoc();
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, "pf_step", LLVM::LLVMFunctionType::get(voidTy, {i64Ty}));
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  for (BlockArgument arg : block.getArguments())
    if (failed(lowerInput(arg, func)))
      return failure();
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      call(ret.getLoc(), "pfrt_wait_sends", i32Ty, {});
      // The loss, per micro-batch when pf-microbatch packed it.
      // A loss held by several ranks is reported by the first of them.
      if (ret.getNumOperands() > 0 && !func->hasAttr("pf.loss_replica")) {
        // One loss per element (per micro-batch when packed).
        Value loss = ret.getOperand(0);
        Location rl = ret.getLoc();
        for (int64_t k = 0, e = count(loss); k < e; ++k) {
          Value at = LLVM::GEPOp::create(b, rl, ptrTy, b.getF32Type(),
                                         get(loss),
                                         ValueRange{constI64(rl, k)});
          call(rl, "pfrt_report_loss", voidTy, {at, constI32(rl, k)});
        }
      }
      LLVM::ReturnOp::create(b, ret.getLoc(), ValueRange{});
      continue;
    }
    bool traced = !isa<ReadParamOp, ScalarInputOp, ReshapeOp, FlattenOp,
                       ToGlobalOp, ConstantOp, MicrobatchOp>(op);
    if (traced) {
      auto stage = op.getAttrOfType<IntegerAttr>(PFDialect::getStageAttrName());
      auto phase = op.getAttrOfType<StringAttr>(PFDialect::getPhaseAttrName());
      StringRef category = isa<SendOp, RecvOp, AllReduceOp, AllGatherOp,
                               ReduceScatterOp, AllToAllOp, BroadcastOp,
                               ReduceOp>(op)
                               ? "comm"
                           : phase                  ? phase.getValue()
                                                    : "forward";
      auto microbatch =
          op.getAttrOfType<IntegerAttr>(PFDialect::getMicrobatchAttrName());
      call(op.getLoc(), "pfrt_trace_begin", i32Ty,
           {str(op.getLoc(), op.getName().getStringRef()),
            str(op.getLoc(), category),
            constI32(op.getLoc(), microbatch ? microbatch.getInt() : -1),
            constI32(op.getLoc(), stage ? stage.getInt() : -1)});
    }
    if (failed(lowerOp(&op)))
      return failure();
    if (traced)
      call(op.getLoc(), "pfrt_trace_end", i32Ty, {});
  }
  return success();
}

LogicalResult RankLowering::lowerOp(Operation *op) {
  Location loc = op->getLoc();
  auto paramPtr = [&](StringRef name) -> Value {
    return LLVM::LoadOp::create(
        b, loc, ptrTy,
        LLVM::AddressOfOp::create(b, loc, paramGlobals.lookup(name)));
  };
  auto result = [&](unsigned i = 0) -> FailureOr<Value> {
    if (auto it = inPlace.find(op->getResult(i)); it != inPlace.end()) {
      Value buffer = paramPtr(it->second);
      values[op->getResult(i)] = buffer;
      return buffer;
    }
    FailureOr<Value> buffer = alloc(loc, op->getResult(i));
    if (succeeded(buffer))
      values[op->getResult(i)] = *buffer;
    return buffer;
  };
  auto kernel = [&](StringRef name, ValueRange args) {
    call(loc, name, voidTy, args);
  };
  // A mean over a batch split `split` ways: the local mean is split times
  // this rank's share of the global one.
  auto scaleForBatchSplit = [&](Operation *o, Value out, int64_t n) {
    auto split = o->getAttrOfType<IntegerAttr>("pf.batch_split");
    if (split && split.getInt() > 1)
      kernel("pfrt_k_scale", {out, out, constI64(loc, n),
                              constF64(loc, 1.0 / split.getInt())});
  };
  // This rank's group among `groups` and its position there.
  auto myGroup = [&](ArrayAttr groups) -> std::pair<ArrayRef<int64_t>, int64_t> {
    for (Attribute g : groups) {
      ArrayRef<int64_t> ranks = cast<DenseI64ArrayAttr>(g).asArrayRef();
      for (auto [i, r] : llvm::enumerate(ranks))
        if (r == rankId)
          return {ranks, static_cast<int64_t>(i)};
    }
    return {ArrayRef<int64_t>(), -1};
  };
  auto dtypeOf = [&](Value v) {
    return constI32(loc, cast<GlobalType>(v.getType()).getElementType().isF32() ? 0 : 1);
  };

  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ReadParamOp read) -> LogicalResult {
        if (!paramGlobals.count(read.getParam()))
          return read.emitOpError("reads a parameter this rank does not hold");
        Value ptr = paramPtr(read.getParam());
        if (copyingReads.contains(read)) {
          FailureOr<Value> copy = result();
          if (failed(copy))
            return failure();
          kernel("pfrt_k_copy", {ptr, *copy, constI64(loc, count(read))});
          return success();
        }
        values[read.getResult()] = ptr;
        return success();
      })
      .Case([&](WriteParamOp write) -> LogicalResult {
        if (inPlace.count(write.getValue()))
          return success(); // computed in place
        Value dst = paramPtr(write.getParam());
        Value n = constI64(loc, count(write.getValue()));
        // Clearing a gradient buffer: fill in place, no temporary.
        if (auto c = write.getValue().getDefiningOp<ConstantOp>())
          if (auto dense = dyn_cast<SplatElementsAttr>(c.getValue())) {
            kernel("pfrt_k_fill",
                   {dst, n,
                    constF64(loc, dense.getSplatValue<APFloat>()
                                      .convertToDouble())});
            return success();
          }
        kernel("pfrt_k_copy", {get(write.getValue()), dst, n});
        return success();
      })
      .Case([&](ConstantOp c) -> LogicalResult {
        auto dense = dyn_cast<SplatElementsAttr>(c.getValue());
        if (!dense || !c.getType().getElementType().isF32())
          return c.emitOpError(
              "convert-pf-to-cpu supports f32 splat constants");
        // Constants only read by write_param are filled in place there.
        if (llvm::all_of(c->getUsers(),
                         [](Operation *u) { return isa<WriteParamOp>(u); }))
          return success();
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        kernel("pfrt_k_fill",
               {*out, constI64(loc, count(c)),
                constF64(loc,
                         dense.getSplatValue<APFloat>().convertToDouble())});
        return success();
      })
      .Case([&](ScalarInputOp s) -> LogicalResult {
        values[s.getResult()] =
            call(loc, "pfrt_scalar", ptrTy, {str(loc, s.getName())});
        return success();
      })
      .Case([&](MicrobatchOp mb) -> LogicalResult {
        // Micro-batch k is a contiguous block of rows: no copy.
        FailureOr<int64_t> bytes = elementBytes(mb, mb.getType());
        if (failed(bytes))
          return failure();
        Value offset = constI64(loc, mb.getIndex() * count(mb.getResult()) *
                                         *bytes);
        values[mb.getResult()] = LLVM::GEPOp::create(
            b, loc, ptrTy, i8Ty, get(mb.getInput()), ValueRange{offset});
        return success();
      })
      .Case([&](PackOp pack) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        for (auto [k, e] : llvm::enumerate(pack.getElements())) {
          Value dst = LLVM::GEPOp::create(b, loc, ptrTy, b.getF32Type(), *out,
                                          ValueRange{constI64(loc, k)});
          kernel("pfrt_k_copy", {get(e), dst, constI64(loc, 1)});
        }
        return success();
      })
      .Case<ReshapeOp, FlattenOp, ToGlobalOp>([&](Operation *o) {
        // Same local data, another view of it.
        values[o->getResult(0)] = get(o->getOperand(0));
        return success();
      })
      .Case([&](TransposeOp t) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        kernel("pfrt_k_transpose",
               {get(t.getInput()), *out, constI64(loc, shape(t.getInput()).size()),
                i64Array(loc, shape(t.getInput())), i64Array(loc, t.getPerm())});
        return success();
      })
      .Case([&](MatmulOp m) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        ArrayRef<int64_t> as = shape(m.getA()), bs = shape(m.getB()),
                          cs = shape(m.getResult());
        int64_t batch = product(cs.drop_back(2));
        int64_t batchB = product(bs.drop_back(2));
        int64_t k = m.getTransposeA() ? as[as.size() - 2] : as.back();
        kernel("pfrt_k_matmul",
               {get(m.getA()), get(m.getB()), *out, constI64(loc, batch),
                constI64(loc, batchB), constI64(loc, cs[cs.size() - 2]),
                constI64(loc, cs.back()), constI64(loc, k),
                constI32(loc, m.getTransposeA()),
                constI32(loc, m.getTransposeB())});
        return success();
      })
      .Case([&](BiasAddOp ba) -> LogicalResult {
        // bias_add feeding only a relu: one fused pass into the relu's
        // buffer (the pre-activation is never stored).
        ReluOp relu;
        if (ba->hasOneUse())
          relu = dyn_cast<ReluOp>(*ba->getUsers().begin());
        FailureOr<Value> out;
        if (relu) {
          out = alloc(loc, relu.getResult());
          if (succeeded(out)) {
            values[relu.getResult()] = *out;
            fusedRelus.insert(relu);
          }
        } else {
          out = result();
        }
        if (failed(out))
          return failure();
        ArrayRef<int64_t> s = shape(ba.getInput());
        int64_t axis = ba.getAxis();
        kernel(relu ? "pfrt_k_bias_add_relu" : "pfrt_k_bias_add",
               {get(ba.getInput()), get(ba.getBias()), *out,
                constI64(loc, product(s.take_front(axis))),
                constI64(loc, s[axis]),
                constI64(loc, product(s.drop_front(axis + 1)))});
        return success();
      })
      .Case([&](AddOp a) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        kernel("pfrt_k_add", {get(a.getLhs()), get(a.getRhs()), *out,
                              constI64(loc, count(a))});
        return success();
      })
      .Case([&](MulScalarOp m) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        kernel("pfrt_k_scale",
               {get(m.getInput()), *out, constI64(loc, count(m)),
                constF64(loc, m.getScalar().convertToDouble())});
        return success();
      })
      .Case([&](DropoutOp d) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        auto logical =
            d->getAttrOfType<DenseI64ArrayAttr>("pf.logical_shape");
        auto offset = d->getAttrOfType<DenseI64ArrayAttr>("pf.shard_offset");
        ArrayRef<int64_t> local = shape(d.getInput());
        auto mb = d->getAttrOfType<IntegerAttr>(
            PFDialect::getMicrobatchAttrName());
        Value seed = LLVM::LoadOp::create(
            b, loc, i64Ty, LLVM::AddressOfOp::create(b, loc, seedGlobal));
        call(loc, "pfrt_k_dropout", i32Ty,
             {get(d.getInput()), *out, constI64(loc, count(d)),
              constF64(loc, d.getP().convertToDouble()), seed,
              constI64(loc, d.getStream()), constI64(loc, mb ? mb.getInt() : 0),
              constI64(loc, local.size()),
              i64Array(loc, logical ? logical.asArrayRef() : local),
              offset ? i64Array(loc, offset.asArrayRef()) : nullPtr(loc),
              i64Array(loc, local)});
        return success();
      })
      .Case([&](ReluOp r) -> LogicalResult {
        if (fusedRelus.contains(r))
          return success(); // computed with its bias_add
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        kernel("pfrt_k_relu", {get(r.getInput()), *out, constI64(loc, count(r))});
        return success();
      })
      .Case([&](ReluGradOp r) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        kernel("pfrt_k_relu_grad", {get(r.getOutput()), get(r.getResultGrad()),
                                    *out, constI64(loc, count(r))});
        return success();
      })
      .Case([&](ReduceSumOp r) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        ArrayRef<int64_t> s = shape(r.getInput());
        SmallVector<int8_t> mask(s.size(), 0);
        for (int64_t axis : r.getAxes())
          mask[axis] = 1;
        kernel("pfrt_k_reduce_sum",
               {get(r.getInput()), *out, constI64(loc, s.size()),
                i64Array(loc, s), i8Array(loc, mask)});
        return success();
      })
      .Case([&](SoftmaxCrossEntropyOp ce) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        ArrayRef<int64_t> s = shape(ce.getLogits());
        kernel("pfrt_k_softmax_xent",
               {get(ce.getLogits()), get(ce.getLabels()), *out,
                constI64(loc, s[0]), constI64(loc, s[1])});
        scaleForBatchSplit(ce, *out, 1);
        return success();
      })
      .Case([&](SoftmaxCrossEntropyGradOp ce) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        ArrayRef<int64_t> s = shape(ce.getLogits());
        kernel("pfrt_k_softmax_xent_grad",
               {get(ce.getLogits()), get(ce.getLabels()), get(ce.getLossGrad()),
                *out, constI64(loc, s[0]), constI64(loc, s[1])});
        scaleForBatchSplit(ce, *out, s[0] * s[1]);
        return success();
      })
      .Case<Conv2DOp, Conv2DGradInputOp, Conv2DGradWeightOp>(
          [&](Operation *o) -> LogicalResult {
            FailureOr<Value> out = result();
            if (failed(out))
              return failure();
            // dims = {N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, g}
            ArrayRef<int64_t> x, w, y;
            ArrayRef<int64_t> stride, pad, dil;
            int64_t groups;
            StringRef name;
            SmallVector<Value, 2> ins;
            if (auto c = dyn_cast<Conv2DOp>(o)) {
              x = shape(c.getInput()), w = shape(c.getWeight()),
              y = shape(c.getResult());
              stride = c.getStride(), pad = c.getPadding(),
              dil = c.getDilation(), groups = c.getGroups();
              name = "pfrt_k_conv2d";
              ins = {get(c.getInput()), get(c.getWeight())};
            } else if (auto c = dyn_cast<Conv2DGradInputOp>(o)) {
              x = shape(c.getResult()), w = shape(c.getWeight()),
              y = shape(c.getResultGrad());
              stride = c.getStride(), pad = c.getPadding(),
              dil = c.getDilation(), groups = c.getGroups();
              name = "pfrt_k_conv2d_grad_input";
              ins = {get(c.getResultGrad()), get(c.getWeight())};
            } else {
              auto gw = cast<Conv2DGradWeightOp>(o);
              x = shape(gw.getInput()), w = shape(gw.getResult()),
              y = shape(gw.getResultGrad());
              stride = gw.getStride(), pad = gw.getPadding(),
              dil = gw.getDilation(), groups = gw.getGroups();
              name = "pfrt_k_conv2d_grad_weight";
              ins = {get(gw.getInput()), get(gw.getResultGrad())};
            }
            SmallVector<int64_t> dims = {x[0],      x[1],      x[2],   x[3],
                                         w[0],      w[2],      w[3],   y[2],
                                         y[3],      stride[0], stride[1],
                                         pad[0],    pad[1],    dil[0], dil[1],
                                         groups};
            kernel(name, {ins[0], ins[1], *out, i64Array(loc, dims)});
            return success();
          })
      .Case<MaxPool2DOp, AvgPool2DOp, MaxPool2DGradOp, AvgPool2DGradOp>(
          [&](Operation *o) -> LogicalResult {
            FailureOr<Value> out = result();
            if (failed(out))
              return failure();
            auto kernelAttr = o->getAttrOfType<DenseI64ArrayAttr>("kernel");
            auto strideAttr = o->getAttrOfType<DenseI64ArrayAttr>("stride");
            auto padAttr = o->getAttrOfType<DenseI64ArrayAttr>("padding");
            ArrayRef<int64_t> k = kernelAttr.asArrayRef();
            ArrayRef<int64_t> s = strideAttr ? strideAttr.asArrayRef() : k;
            static const int64_t kNoPad[2] = {0, 0};
            ArrayRef<int64_t> p =
                padAttr ? padAttr.asArrayRef() : ArrayRef<int64_t>(kNoPad);
            bool backward = isa<MaxPool2DGradOp, AvgPool2DGradOp>(o);
            // Forward input and output shapes.
            ArrayRef<int64_t> in = backward ? shape(o->getResult(0))
                                            : shape(o->getOperand(0));
            ArrayRef<int64_t> outShape = backward
                                             ? shape(o->getOperands().back())
                                             : shape(o->getResult(0));
            SmallVector<int64_t> dims = {in[0], in[1], in[2], in[3],
                                         outShape[2], outShape[3], k[0], k[1],
                                         s[0], s[1], p[0], p[1]};
            Value d = i64Array(loc, dims);
            if (isa<MaxPool2DOp>(o))
              kernel("pfrt_k_max_pool2d", {get(o->getOperand(0)), *out, d});
            else if (isa<AvgPool2DOp>(o))
              kernel("pfrt_k_avg_pool2d", {get(o->getOperand(0)), *out, d});
            else if (isa<MaxPool2DGradOp>(o))
              kernel("pfrt_k_max_pool2d_grad",
                     {get(o->getOperand(0)), get(o->getOperand(1)), *out, d});
            else
              kernel("pfrt_k_avg_pool2d_grad", {get(o->getOperand(0)), *out, d});
            return success();
          })
      .Case([&](GlobalAvgPoolOp g) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        ArrayRef<int64_t> s = shape(g.getInput());
        kernel("pfrt_k_global_avg_pool",
               {get(g.getInput()), *out, constI64(loc, s[0]),
                constI64(loc, s[1]), constI64(loc, s[2] * s[3])});
        return success();
      })
      .Case([&](GlobalAvgPoolGradOp g) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        ArrayRef<int64_t> s = shape(g.getResult());
        kernel("pfrt_k_global_avg_pool_grad",
               {get(g.getResultGrad()), *out, constI64(loc, s[0]),
                constI64(loc, s[1]), constI64(loc, s[2] * s[3])});
        return success();
      })
      .Case([&](BatchNormOp bn) -> LogicalResult {
        FailureOr<Value> y = result(0), m = result(1), v = result(2);
        if (failed(y) || failed(m) || failed(v))
          return failure();
        ArrayRef<int64_t> s = shape(bn.getInput());
        int64_t hw = s.size() == 4 ? s[2] * s[3] : 1;
        kernel("pfrt_k_batch_norm",
               {get(bn.getInput()), get(bn.getGamma()), get(bn.getBeta()),
                get(bn.getRunningMean()), get(bn.getRunningVar()), *y, *m, *v,
                constI64(loc, s[0]), constI64(loc, s[1]), constI64(loc, hw),
                constF64(loc, bn.getEpsilon().convertToDouble()),
                constF64(loc, bn.getMomentum().convertToDouble())});
        return success();
      })
      .Case([&](BatchNormGradInputOp bn) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        ArrayRef<int64_t> s = shape(bn.getInput());
        int64_t hw = s.size() == 4 ? s[2] * s[3] : 1;
        kernel("pfrt_k_batch_norm_grad_input",
               {get(bn.getInput()), get(bn.getGamma()), get(bn.getResultGrad()),
                *out, constI64(loc, s[0]), constI64(loc, s[1]),
                constI64(loc, hw),
                constF64(loc, bn.getEpsilon().convertToDouble())});
        return success();
      })
      .Case([&](BatchNormGradParamsOp bn) -> LogicalResult {
        FailureOr<Value> dg = result(0), db = result(1);
        if (failed(dg) || failed(db))
          return failure();
        ArrayRef<int64_t> s = shape(bn.getInput());
        int64_t hw = s.size() == 4 ? s[2] * s[3] : 1;
        kernel("pfrt_k_batch_norm_grad_params",
               {get(bn.getInput()), get(bn.getResultGrad()), *dg, *db,
                constI64(loc, s[0]), constI64(loc, s[1]), constI64(loc, hw),
                constF64(loc, bn.getEpsilon().convertToDouble())});
        return success();
      })
      .Case([&](SGDUpdateOp u) -> LogicalResult {
        FailureOr<Value> p = result(0);
        if (failed(p))
          return failure();
        Value buf = nullPtr(loc), step = nullPtr(loc), newBuf = nullPtr(loc);
        if (u.getMomentumBuffer()) {
          FailureOr<Value> nb = result(1);
          if (failed(nb))
            return failure();
          buf = get(u.getMomentumBuffer()), step = get(u.getStep());
          newBuf = *nb;
        }
        kernel("pfrt_k_sgd",
               {get(u.getParam()), get(u.getGrad()), get(u.getLr()), buf, step,
                *p, newBuf, constI64(loc, count(u.getParam())),
                constF64(loc, u.getMomentum().convertToDouble()),
                constF64(loc, u.getDampening().convertToDouble()),
                constF64(loc, u.getWeightDecay().convertToDouble()),
                constI32(loc, u.getNesterov())});
        return success();
      })
      .Case([&](AdamUpdateOp u) -> LogicalResult {
        FailureOr<Value> p = result(0), m = result(1), v = result(2);
        if (failed(p) || failed(m) || failed(v))
          return failure();
        kernel("pfrt_k_adam",
               {get(u.getParam()), get(u.getGrad()), get(u.getExpAvg()),
                get(u.getExpAvgSq()), get(u.getLr()), get(u.getStep()), *p, *m,
                *v, constI64(loc, count(u.getParam())),
                constF64(loc, u.getBeta1().convertToDouble()),
                constF64(loc, u.getBeta2().convertToDouble()),
                constF64(loc, u.getEpsilon().convertToDouble()),
                constF64(loc, u.getWeightDecay().convertToDouble()),
                constI32(loc, u.getDecoupled()),
                constI32(loc, u.getBiasCorrection())});
        return success();
      })
      .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, ShardOp>(
          [&](Operation *o) -> LogicalResult {
            auto groups = o->getAttrOfType<ArrayAttr>("groups");
            auto [ranks, pos] = myGroup(groups);
            if (pos < 0)
              return o->emitOpError("rank ")
                     << rankId << " is in none of the op's groups";
            FailureOr<Value> out = result();
            if (failed(out))
              return failure();
            Value in = get(o->getOperand(0));
            Value ranksPtr = i64Array(loc, ranks);
            Value n = constI64(loc, ranks.size());
            ArrayRef<int64_t> inShape = shape(o->getOperand(0));
            Value ndim = constI64(loc, inShape.size());
            Value shapePtr = i64Array(loc, inShape);
            auto axisOf = [&](StringRef name) {
              return constI64(loc, o->getAttrOfType<IntegerAttr>(name).getInt());
            };
            if (isa<AllReduceOp>(o)) {
              if (!cast<GlobalType>(o->getOperand(0).getType())
                       .getElementType()
                       .isF32())
                return o->emitOpError("sums f32 tensors only");
              call(loc, "pfrt_all_reduce_sum", i32Ty,
                   {in, *out, constI64(loc, count(o->getOperand(0))),
                    ranksPtr, n});
            } else if (isa<AllGatherOp>(o)) {
              call(loc, "pfrt_box_all_gather", i32Ty,
                   {in, *out, dtypeOf(o->getOperand(0)), ndim, shapePtr,
                    axisOf("axis"), ranksPtr, n});
            } else if (isa<ReduceScatterOp>(o)) {
              call(loc, "pfrt_box_reduce_scatter", i32Ty,
                   {in, *out, ndim, shapePtr, axisOf("axis"), ranksPtr, n});
            } else if (isa<AllToAllOp>(o)) {
              call(loc, "pfrt_box_all_to_all", i32Ty,
                   {in, *out, dtypeOf(o->getOperand(0)), ndim, shapePtr,
                    axisOf("split_axis"), axisOf("concat_axis"), ranksPtr, n});
            } else {
              call(loc, "pfrt_box_slice", i32Ty,
                   {in, *out, dtypeOf(o->getOperand(0)), ndim, shapePtr,
                    axisOf("axis"), constI64(loc, pos), n});
            }
            return success();
          })
      .Case([&](BroadcastOp bc) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        bool isF32 = bc.getType().getElementType().isF32();
        int64_t n = count(bc.getResult());
        if (bc.getInput())
          kernel("pfrt_k_copy", {get(bc.getInput()), *out,
                                 constI64(loc, isF32 ? n : 2 * n)});
        call(loc, isF32 ? "pfrt_broadcast" : "pfrt_broadcast_i64", i32Ty,
             {*out, constI64(loc, n), constI64(loc, bc.getRoot()),
              i64Array(loc, bc.getRanks()), constI64(loc, bc.getRanks().size())});
        return success();
      })
      .Case([&](ReduceOp red) -> LogicalResult {
        Value out = nullPtr(loc);
        if (red.getResult()) {
          FailureOr<Value> buf = result();
          if (failed(buf))
            return failure();
          out = *buf;
        }
        call(loc, "pfrt_reduce_sum", i32Ty,
             {get(red.getInput()), out, constI64(loc, count(red.getInput())),
              constI64(loc, red.getRoot()), i64Array(loc, red.getRanks()),
              constI64(loc, red.getRanks().size())});
        return success();
      })
      .Case([&](ExtractBoxOp ex) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        ArrayRef<int64_t> outShape = shape(ex.getResult());
        call(loc, "pfrt_copy_box", i32Ty,
             {get(ex.getInput()), i64Array(loc, shape(ex.getInput())),
              i64Array(loc, ex.getOffsets()), *out, i64Array(loc, outShape),
              nullPtr(loc), i64Array(loc, outShape),
              constI64(loc, outShape.size()), dtypeOf(ex.getInput())});
        return success();
      })
      .Case([&](AssembleOp as) -> LogicalResult {
        FailureOr<Value> out = result();
        if (failed(out))
          return failure();
        ArrayRef<int64_t> outShape = shape(as.getResult());
        for (auto [piece, off] : llvm::zip(as.getPieces(), as.getOffsets())) {
          ArrayRef<int64_t> ps = shape(piece);
          call(loc, "pfrt_copy_box", i32Ty,
               {get(piece), i64Array(loc, ps), nullPtr(loc), *out,
                i64Array(loc, outShape),
                i64Array(loc, cast<DenseI64ArrayAttr>(off).asArrayRef()),
                i64Array(loc, ps), constI64(loc, outShape.size()),
                dtypeOf(piece)});
        }
        return success();
      })
      .Case([&](SendOp s) -> LogicalResult {
        FailureOr<int64_t> bytes = elementBytes(s, s.getValue().getType());
        if (failed(bytes))
          return failure();
        // Non-blocking: only receives block, as the schedule simulator
        // assumes; every send completes at the end of the step, so its
        // buffer must not change before then. A parameter's own buffer
        // could (the update writes it), so that is sent from a copy.
        Value data = get(s.getValue());
        int64_t floats = count(s.getValue()) * (*bytes / 4);
        Operation *def = s.getValue().getDefiningOp();
        while (isa_and_nonnull<ReshapeOp, FlattenOp, ToGlobalOp>(def))
          def = def->getOperand(0).getDefiningOp();
        if (isa_and_nonnull<ReadParamOp>(def)) {
          Value copy = call(loc, "pfrt_arena_alloc", ptrTy,
                            {constI64(loc, 4 * floats)});
          kernel("pfrt_k_copy", {data, copy, constI64(loc, floats)});
          data = copy;
        }
        // Counts are in floats; 8-byte elements travel as two floats each.
        call(loc, "pfrt_isend", i32Ty,
             {data, constI64(loc, floats), constI32(loc, s.getPeer()),
              constI32(loc, s.getTag())});
        return success();
      })
      .Case([&](RecvOp r) -> LogicalResult {
        FailureOr<Value> out = result();
        FailureOr<int64_t> bytes = elementBytes(r, r.getType());
        if (failed(out) || failed(bytes))
          return failure();
        call(loc, "pfrt_recv", i32Ty,
             {*out, constI64(loc, count(r.getResult()) * (*bytes / 4)),
              constI32(loc, r.getPeer()), constI32(loc, r.getTag())});
        return success();
      })
      .Default([&](Operation *o) {
        return o->emitOpError("convert-pf-to-cpu has no lowering for this op");
      });
}

void RankLowering::emitMain() {
  Location loc = module.getLoc();
  b.setInsertionPointToEnd(module.getBody());
  auto programTy = LLVM::LLVMStructType::getLiteral(ctx, {ptrTy, ptrTy});
  auto program = LLVM::GlobalOp::create(b, loc, programTy, /*isConstant=*/true,
                                        LLVM::Linkage::Internal, "__pf_program",
                                        Attribute());
  {
    OpBuilder::InsertionGuard guard(b);
    Block *init = b.createBlock(&program.getInitializerRegion());
    b.setInsertionPointToStart(init);
    Value s = LLVM::UndefOp::create(b, loc, programTy);
    Value initFn = LLVM::AddressOfOp::create(b, loc, ptrTy, "pf_init_params");
    Value stepFn = LLVM::AddressOfOp::create(b, loc, ptrTy, "pf_step");
    s = LLVM::InsertValueOp::create(b, loc, s, initFn, ArrayRef<int64_t>{0});
    s = LLVM::InsertValueOp::create(b, loc, s, stepFn, ArrayRef<int64_t>{1});
    LLVM::ReturnOp::create(b, loc, ValueRange{s});
  }
  b.setInsertionPointToEnd(module.getBody());
  auto mainFn = LLVM::LLVMFuncOp::create(
      b, loc, "main", LLVM::LLVMFunctionType::get(i32Ty, {i32Ty, ptrTy}));
  Block *entry = mainFn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  Value rc = call(loc, "pfrt_main", i32Ty,
                  {entry->getArgument(0), entry->getArgument(1),
                   LLVM::AddressOfOp::create(b, loc, program)});
  LLVM::ReturnOp::create(b, loc, ValueRange{rc});
}

LogicalResult RankLowering::run() {
  SmallVector<func::FuncOp> funcs;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal())
      funcs.push_back(f);
  if (funcs.size() != 1)
    return module.emitOpError("convert-pf-to-cpu expects exactly one step "
                              "function per rank, found ")
           << funcs.size();
  if (auto r = module->getAttrOfType<IntegerAttr>(PFDialect::getRankAttrName()))
    rankId = r.getInt();
  if (failed(lowerParams()) || failed(lowerStep(funcs.front())))
    return failure();
  emitMain();
  // For the artifact manifest (the host reads it to feed the inputs).
  func::FuncOp step = funcs.front();
  int64_t microbatches = 0;
  if (step.getNumResults() > 0 && !step->hasAttr("pf.loss_replica"))
    microbatches = std::max<int64_t>(
        1, cast<GlobalType>(step.getResultTypes()[0]).getNumElements());
  module->setAttr("pfrt.inputs", b.getArrayAttr(inputs));
  module->setAttr("pfrt.reports_loss", b.getBoolAttr(microbatches > 0));
  module->setAttr("pfrt.num_microbatches",
                  b.getI64IntegerAttr(std::max<int64_t>(microbatches, 1)));
  // The pf program is now fully described by the LLVM functions.
  funcs.front().erase();
  for (auto p : llvm::make_early_inc_range(module.getOps<ParamOp>()))
    p.erase();
  return success();
}

struct ConvertPFToCPUPass
    : public pf::impl::ConvertPFToCPUPassBase<ConvertPFToCPUPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    SmallVector<ModuleOp> ranks;
    if (top->hasAttr(PFDialect::getRankAttrName()))
      ranks.push_back(top);
    for (auto m : top.getOps<ModuleOp>())
      if (m->hasAttr(PFDialect::getRankAttrName()))
        ranks.push_back(m);
    if (ranks.empty()) {
      top.emitError("convert-pf-to-cpu expects per-rank modules: run "
                    "pf-partition-ranks first");
      return signalPassFailure();
    }
    for (ModuleOp m : ranks)
      if (failed(RankLowering(m).run()))
        return signalPassFailure();
  }
};
} // namespace
