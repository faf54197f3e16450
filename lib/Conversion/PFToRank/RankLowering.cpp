//===- RankLowering.cpp - per-rank pf programs to LLVM over libpfrt -------===//
//
// Every value of the step becomes a buffer (an !llvm.ptr) from the runtime's
// step arena and every op a call into libpfrt's CPU kernels; parameters are
// persistent buffers behind globals. The generated code owns no policy:
// kernels, communication, data and the driver loop live in the runtime.
//
// The rank lowering of both targets (lowerRankModules): the functions
// around the step (parameter initialisation, input loading, main) and the
// dialect conversion of the step's body, whose patterns live in one file
// per op family. The passes are convert-pf-to-cpu (lib/Conversion/PFToCPU)
// and convert-pf-to-gpu (lib/Conversion/PFToGPU): a target is
// RankLoweringOptions::target, whose differences the lowering state names
// (RankLoweringState::onDevice and the runtime ABI's device twins).
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/PFToRank/RankLowering.h"
#include "pf/Conversion/Common/SendCompletion.h"
#include "pf/Conversion/Common/StepOutlining.h"
#include "pf/Conversion/Passes.h"
#include "pf/Dialect/PF/IR/LowPrecision.h"
#include "pf/Support/RankParallel.h"
#include "pf/Target/ArtifactAttrs.h"

#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <set>
#include <vector>

#define DEBUG_TYPE "rank-lowering"

using namespace mlir;
using namespace mlir::pf;

//===----------------------------------------------------------------------===//
// One rank module
//===----------------------------------------------------------------------===//

namespace {

class RankLowering {
public:
  RankLowering(ModuleOp module, func::FuncOp step,
               const llvm::DenseMap<Operation *, Operation *> &sendDone,
               const RankLoweringOptions &options, ArrayRef<int64_t> commGroups,
               std::optional<SmallVector<int64_t>> p2pPlan)
      : module(module), step(step), commGroups(commGroups),
        p2pPlan(std::move(p2pPlan)), b(module.getContext()),
        state(module, step.getBody().front(), options.target,
              options.generatedKernels),
        outline(options.outlineActions), passName(options.passName) {
    state.sendDone = sendDone;
    state.reportOutputs = options.reportOutputs;
    bool reportOutputs = options.reportOutputs;
    for (unsigned i = 0; i < step.getNumResults(); ++i) {
      auto index = step.getResultAttrOfType<IntegerAttr>(
          i, PFDialect::OutputAttrHelper::getNameStr());
      state.outputIndices.push_back(index ? index.getInt() : i);
      if (!reportOutputs && state.outputIndices.back() == 0)
        state.lossIndex = i;
    }
  }

  LogicalResult run();

private:
  LLVM::GlobalOp ptrGlobal(StringRef name);
  LogicalResult checkPlacements();
  LogicalResult checkLowPrecision();
  ArrayAttr outputsAttr();
  LogicalResult lowerParams();
  FailureOr<Value> lowerInput(BlockArgument arg, PartInput &part);
  LogicalResult lowerStep();
  void emitMain();

  ModuleOp module;
  func::FuncOp step;
  /// The job's collective groups, flat (pfrt_cuda_comm_groups' table).
  ArrayRef<int64_t> commGroups;
  /// This rank's point-to-point messages in step order (pfrt_cuda_p2p_plan's
  /// table), where the job's GPU ranks plan theirs at start-up.
  std::optional<SmallVector<int64_t>> p2pPlan;
  OpBuilder b;
  RankLoweringState state;
  /// Whether the step becomes a loop over its actions (StepOutlining.h).
  bool outline;
  StringRef passName;
  /// What a host program needs to know about this rank's inputs.
  SmallVector<Attribute> inputs;
};

LLVM::GlobalOp RankLowering::ptrGlobal(StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto global = LLVM::GlobalOp::create(
      b, module.getLoc(), state.ptrType(),
      /*isConstant=*/false, LLVM::Linkage::Internal, name, Attribute());
  Block *init = b.createBlock(&global.getInitializerRegion());
  b.setInsertionPointToStart(init);
  LLVM::ReturnOp::create(b, module.getLoc(),
                         ValueRange{state.rt.nullPtr(b, module.getLoc())});
  return global;
}

/// pf_init_params(seed): every parameter's persistent buffer, initialised
/// from its #pf.init over logical indices and registered as state.
LogicalResult RankLowering::lowerParams() {
  rt::RuntimeABI &rt = state.rt;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    state.seedGlobal = LLVM::GlobalOp::create(
        b, module.getLoc(), b.getI64Type(), false, LLVM::Linkage::Internal,
        "__pf_seed", b.getI64IntegerAttr(0));
  }
  b.setInsertionPointToEnd(module.getBody());
  Location loc = module.getLoc();
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, "pf_init_params",
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                  {b.getI64Type()}));
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  Value seed = entry->getArgument(0);
  LLVM::StoreOp::create(b, loc, seed,
                        LLVM::AddressOfOp::create(b, loc, state.seedGlobal));
  // The whole plan at once: parameters first, then the step's buffers.
  rt.pfrt_arena_plan(b, loc, state.plan->arenaBytes);
  // A GPU rank makes the job's communicators before anything communicates
  // (every rank calls it here, with the same table).
  if (state.makesCommunicators() && !commGroups.empty())
    rt.pfrt_cuda_comm_groups(b, loc, rt.i64Array(b, loc, commGroups),
                             static_cast<int64_t>(commGroups.size()));
  // And its point-to-point plan (every rank, so that the pairs' NCCL
  // communicators exist before the first step).
  if (state.makesCommunicators() && p2pPlan)
    rt.pfrt_cuda_p2p_plan(b, loc, rt.i64Array(b, loc, *p2pPlan),
                          static_cast<int64_t>(p2pPlan->size()));
  unsigned index = 0;
  for (auto param : module.getOps<ParamOp>()) {
    GlobalType type = param.getGlobalType();
    if (!type.getElementType().isF32())
      return param.emitOpError("convert-pf-to-cpu supports f32 parameters");
    LLVM::GlobalOp global = ptrGlobal(("__pf_param" + Twine(index++)).str());
    state.paramGlobals[param.getSymName()] = global;
    Location ploc = param.getLoc();
    Value buffer =
        rt.pfrt_arena_at(b, ploc, state.plan->paramOffset(param.getSymName()),
                         4 * type.getNumElements());
    LLVM::StoreOp::create(b, ploc, buffer,
                          LLVM::AddressOfOp::create(b, ploc, global));
    InitAttr init = param.getInit();
    Value stream =
        rt.pfrt_stream_id(b, ploc, rt.str(b, ploc, param.getSymName()));
    // A shard (after pf-partition-ranks) draws its logical elements.
    auto logical = param->getAttrOfType<DenseI64ArrayAttr>(
        PFDialect::LogicalShapeAttrHelper::getNameStr());
    auto offset = param->getAttrOfType<DenseI64ArrayAttr>(
        PFDialect::ShardOffsetAttrHelper::getNameStr());
    ArrayRef<int64_t> logicalShape =
        logical ? logical.asArrayRef() : type.getShape();
    auto offsetPtr = [&] {
      return offset ? rt.i64Array(b, ploc, offset.asArrayRef())
                    : rt.nullPtr(b, ploc);
    };
    InitKind kind = param->hasAttr(PFDialect::ZeroInitAttrHelper::getNameStr())
                        ? InitKind::Zeros
                        : init.getKind();
    // A grouped split's shard is parts one after the other, each drawn
    // and registered as its own box of the logical tensor.
    auto groups = param->getAttrOfType<DenseI64ArrayAttr>(
        PFDialect::ShardGroupsAttrHelper::getNameStr());
    int64_t parts = groups ? groups[1] : 1;
    SmallVector<int64_t> partShape(type.getShape());
    if (groups)
      partShape[groups[0]] /= parts;
    int64_t partElems = type.getNumElements() / parts;
    for (int64_t k = 0; k < parts; ++k) {
      // Part k starts k * partElems floats into the buffer: an address
      // computed here (a part need not start on the arena's 64-byte grid).
      Value part = k == 0
                       ? buffer
                       : LLVM::GEPOp::create(
                             b, ploc, state.ptrType(), b.getF32Type(), buffer,
                             ValueRange{LLVM::ConstantOp::create(
                                 b, ploc, b.getI64Type(), k * partElems)});
      auto partOffset = [&]() -> Value {
        if (!groups)
          return offsetPtr();
        SmallVector<int64_t> off(offset.asArrayRef());
        off[groups[0]] += k * groups[2];
        return rt.i64Array(b, ploc, off);
      };
      rt.pfrt_init_param(b, ploc, part, static_cast<int32_t>(kind),
                         init.getFirst(), init.getSecond(), seed, stream,
                         type.getRank(), rt.i64Array(b, ploc, logicalShape),
                         partOffset(), rt.i64Array(b, ploc, partShape));
      // Parameters, optimizer states and running statistics persist across
      // steps: the runtime reads, saves and loads them by name. Gradient
      // buffers are per-step scratch.
      if (param->hasAttr(PFDialect::GradOfAttrHelper::getNameStr()))
        continue;
      Value name = rt.str(b, ploc, param.getSymName());
      if (k == 0)
        rt.pfrt_state_register(b, ploc, name, int32_t{0}, type.getRank(),
                               rt.i64Array(b, ploc, logicalShape), partOffset(),
                               rt.i64Array(b, ploc, partShape), part);
      else
        rt.pfrt_state_add_part(b, ploc, name, partOffset(), part);
    }
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return success();
}

/// The number of classes of an i64 input (labels): the loss that reads it
/// gives the range of its synthetic data.
static int64_t classesOf(Value input) {
  // Split by class, the logical shape counts every rank's classes.
  auto classes = [](Operation *op, Value logits) {
    if (auto logical = op->getAttrOfType<DenseI64ArrayAttr>(
            PFDialect::LogicalShapeAttrHelper::getNameStr()))
      return logical[1];
    return localShape(logits)[1];
  };
  SmallVector<Value> worklist = {input};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (auto ce = dyn_cast<SoftmaxCrossEntropyOp>(user))
        return classes(ce, ce.getLogits());
      if (auto ceg = dyn_cast<SoftmaxCrossEntropyGradOp>(user))
        return classes(ceg, ceg.getLogits());
      if (isa<MicrobatchOp, ShardOp, AllGatherOp, AllToAllOp, ExtractBoxOp,
              ToGlobalOp, BroadcastOp>(user))
        worklist.push_back(user->getResult(0));
    }
  }
  return 0;
}

/// Loads one input of the step (this rank's boxes of the logical input, one
/// per micro-batch when the batch is split, or the whole tensor) into its
/// planned buffer and records it for the manifest. An input loaded by parts
/// gets no buffer: `part` receives how its micro-batches load.
FailureOr<Value> RankLowering::lowerInput(BlockArgument arg, PartInput &part) {
  rt::RuntimeABI &rt = state.rt;
  Location loc = arg.getLoc();
  auto type = cast<GlobalType>(arg.getType());
  unsigned argNo = arg.getArgNumber();
  auto index = step.getArgAttrOfType<IntegerAttr>(
      argNo, PFDialect::InputAttrHelper::getNameStr());
  int64_t input = index ? index.getInt() : argNo;
  FailureOr<int64_t> bytes = elementBytes(step, type);
  if (failed(bytes))
    return failure();
  StringRef dtype = rankDType(type.getElementType())->name;
  SmallVector<NamedAttribute> facts = {
      b.getNamedAttr(artifact::input::kIndex, b.getI64IntegerAttr(input)),
      b.getNamedAttr(artifact::input::kShape,
                     b.getDenseI64ArrayAttr(type.getShape())),
      b.getNamedAttr(artifact::input::kDtype, b.getStringAttr(dtype))};
  for (auto [attr, key] :
       {std::pair{PFDialect::LogicalShapeAttrHelper::getNameStr(),
                  artifact::input::kLogicalShape},
        std::pair{PFDialect::BoxesAttrHelper::getNameStr(),
                  artifact::input::kBoxes},
        std::pair{PFDialect::BoxShapeAttrHelper::getNameStr(),
                  artifact::input::kBoxShape}})
    if (Attribute a = step.getArgAttr(argNo, attr))
      facts.push_back(b.getNamedAttr(key, a));
  inputs.push_back(b.getDictionaryAttr(facts));

  auto logical = step.getArgAttrOfType<DenseI64ArrayAttr>(
      argNo, PFDialect::LogicalShapeAttrHelper::getNameStr());
  auto boxes = step.getArgAttrOfType<ArrayAttr>(
      argNo, PFDialect::BoxesAttrHelper::getNameStr());
  auto boxShape = step.getArgAttrOfType<DenseI64ArrayAttr>(
      argNo, PFDialect::BoxShapeAttrHelper::getNameStr());
  part.index = input;
  part.dtype = dtypeCode(arg);
  part.classes = classesOf(arg);
  part.logicalShape.assign(logical ? logical.asArrayRef() : type.getShape());
  if (boxes)
    for (Attribute a : boxes)
      llvm::append_range(part.offsets, cast<DenseI64ArrayAttr>(a).asArrayRef());
  else
    part.offsets.assign(type.getRank(), 0);
  part.boxShape.assign(boxShape ? boxShape.asArrayRef() : type.getShape());
  part.numBoxes = boxes ? static_cast<int64_t>(boxes.size()) : 1;
  // A partial-sum input from a source of logical values (synthetic data,
  // .npy files): ranks off coordinate 0 of a P dimension hold zeros. Inputs a
  // host program gives are the rank's own addends and stay as given.
  part.zero = static_cast<bool>(
      step.getArgAttr(argNo, PFDialect::ZeroInputAttrHelper::getNameStr()));
  if (state.buffers.isPartLoadedInput(arg))
    return rt.nullPtr(b, loc);

  Value buffer = rt.pfrt_arena_at(b, loc, state.plan->offsetOf(arg),
                                  state.plan->bytesOf(arg));
  int64_t total = *bytes * type.getNumElements();
  Value stream =
      rt.pfrt_stream_id(b, loc, rt.str(b, loc, ("input" + Twine(input)).str()));
  rt.pfrt_load_input_boxes(
      b, loc, input, buffer, total, part.dtype, part.classes,
      state.seed(b, loc), stream, type.getRank(),
      rt.i64Array(b, loc, part.logicalShape), part.numBoxes,
      part.offsets.empty() ? rt.nullPtr(b, loc)
                           : rt.i64Array(b, loc, part.offsets),
      rt.i64Array(b, loc, part.boxShape));
  if (part.zero)
    rt.pfrt_zero_partial_input(b, loc, buffer, total);
  return buffer;
}

/// pf_step(step): the inputs are loaded, then the step's body moves into
/// the function and the patterns convert it op by op, in program order.
LogicalResult RankLowering::lowerStep() {
  if (!step.getBody().hasOneBlock())
    return step.emitOpError("convert-pf-to-cpu expects one block");
  Block &body = step.getBody().front();
  MLIRContext *ctx = module.getContext();
  state.lossReplica =
      step->hasAttr(PFDialect::LossReplicaAttrHelper::getNameStr());

  b.setInsertionPointToEnd(module.getBody());
  auto fn = LLVM::LLVMFuncOp::create(
      b, step.getLoc(), "pf_step",
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                  {b.getI64Type()}));
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  for (BlockArgument arg : body.getArguments()) {
    PartInput part;
    FailureOr<Value> buffer = lowerInput(arg, part);
    if (failed(buffer))
      return failure();
    auto cast = UnrealizedConversionCastOp::create(b, arg.getLoc(),
                                                   arg.getType(), *buffer);
    if (state.buffers.isPartLoadedInput(arg))
      state.partInputs[cast.getResult(0)] = std::move(part);
    arg.replaceAllUsesWith(cast.getResult(0));
  }
  entry->getOperations().splice(entry->end(), body.getOperations());

  RankTypeConverter converter(ctx);
  ConversionTarget target(*ctx);
  target.addLegalDialect<LLVM::LLVMDialect>();
  target.addLegalOp<UnrealizedConversionCastOp>();
  target.addIllegalDialect<PFDialect>();
  target.addIllegalOp<func::ReturnOp>();
  RewritePatternSet patterns(ctx);
  populateRankLoweringPatterns(converter, patterns, state);
  if (failed(applyFullConversion(fn, target, std::move(patterns))) ||
      state.rt.hadError())
    return failure();
  SmallVector<UnrealizedConversionCastOp> casts;
  fn.walk([&](UnrealizedConversionCastOp c) { casts.push_back(c); });
  reconcileUnrealizedCasts(casts);
  // The step as a loop over its actions (one function per shape of action).
  // Outlining erases the step's ops, the shared addresses among them.
  state.rt.forgetAddresses();
  OutlineStats stats;
  if (outline &&
      outlineStepActions(module, fn, RankLoweringState::kActionMarker, stats))
    module->setAttr(
        artifact::kActionsAttrName,
        b.getDictionaryAttr(
            {b.getNamedAttr("actions", b.getI64IntegerAttr(stats.actions)),
             b.getNamedAttr("functions",
                            b.getI64IntegerAttr(stats.functions))}));
  if (auto marker = module.lookupSymbol<LLVM::LLVMFuncOp>(
          RankLoweringState::kActionMarker)) {
    // Without outlining the markers are all that refers to it.
    SmallVector<Operation *> calls;
    fn.walk([&](LLVM::CallOp call) {
      if (call.getCallee() == RankLoweringState::kActionMarker)
        calls.push_back(call);
    });
    for (Operation *call : calls)
      call->erase();
    marker.erase();
  }
  return success();
}

/// main(argc, argv) hands both functions to the runtime's driver.
void RankLowering::emitMain() {
  Location loc = module.getLoc();
  Type ptrTy = state.ptrType(), i32Ty = b.getI32Type();
  b.setInsertionPointToEnd(module.getBody());
  auto programTy =
      LLVM::LLVMStructType::getLiteral(module.getContext(), {ptrTy, ptrTy});
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
  Value rc = state.rt.pfrt_main(
      b, loc, entry->getArgument(0), entry->getArgument(1),
      LLVM::AddressOfOp::create(b, loc, program).getResult());
  LLVM::ReturnOp::create(b, loc, ValueRange{rc});
}

/// What a host program needs to rebuild an inference step's results: per
/// result, its local shape, element type, placement and SBP as compiled.
ArrayAttr RankLowering::outputsAttr() {
  SmallVector<Attribute> outputs;
  for (auto [i, type] : llvm::enumerate(step.getResultTypes())) {
    auto local = cast<GlobalType>(type);
    // The placement and SBP of the global result this rank holds a part of.
    auto globalType = step.getResultAttrOfType<TypeAttr>(
        i, PFDialect::GlobalTypeAttrHelper::getNameStr());
    auto global = globalType ? cast<GlobalType>(globalType.getValue()) : local;
    std::optional<RankDType> d = rankDType(global.getElementType());
    StringRef dtype = d ? d->name : StringRef("?");
    std::string placement, sbp;
    llvm::raw_string_ostream(placement) << global.getPlacement();
    if (global.getSbp())
      llvm::raw_string_ostream(sbp) << global.getSbp();
    outputs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(artifact::output::kIndex,
                        b.getI64IntegerAttr(state.outputIndices[i])),
         b.getNamedAttr(artifact::output::kLocalShape,
                        b.getDenseI64ArrayAttr(local.getShape())),
         b.getNamedAttr(artifact::output::kShape,
                        b.getDenseI64ArrayAttr(global.getShape())),
         b.getNamedAttr(artifact::output::kDtype, b.getStringAttr(dtype)),
         b.getNamedAttr(artifact::output::kPlacement,
                        b.getStringAttr(placement)),
         b.getNamedAttr(artifact::output::kSbp, b.getStringAttr(sbp))}));
  }
  return b.getArrayAttr(outputs);
}

/// No silent fallback: a value placed on "cuda" is not compiled as CPU
/// code (the front end maps "cuda" to "cpu" only when the user asks), nor
/// a value placed on "cpu" as GPU code.
LogicalResult RankLowering::checkPlacements() {
  bool device = state.onDevice();
  auto onCuda = [&](Type t) {
    auto g = dyn_cast<GlobalType>(t);
    return g && g.getPlacement() && g.getPlacement().isCuda() != device;
  };
  WalkResult walk = module.walk([&](Operation *op) {
    bool cuda = llvm::any_of(op->getResultTypes(), onCuda);
    if (auto param = dyn_cast<ParamOp>(op))
      cuda |= onCuda(param.getType());
    if (auto fn = dyn_cast<func::FuncOp>(op))
      cuda |= llvm::any_of(fn.getArgumentTypes(), onCuda);
    if (!cuda)
      return WalkResult::advance();
    if (device)
      op->emitOpError("is placed on 'cpu', but convert-pf-to-gpu compiles "
                      "GPU ranks: place it on \"cuda\", or compile with "
                      "pf-compile-cpu-pipeline");
    else
      op->emitOpError("is placed on 'cuda', but convert-pf-to-cpu compiles "
                      "CPU ranks: compile with pf-compile-gpu-pipeline, or "
                      "place it on \"cpu\" (the Python front end does so "
                      "with PIPEFLOW_CUDA_AS_CPU=1)");
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

/// bf16 and f16 are storage types: only pf.cast and the ops that move bytes
/// (LowPrecision.h) meet them here, pf-widen-low-precision having made
/// every other op a float32 one.
LogicalResult RankLowering::checkLowPrecision() {
  WalkResult walk = module.walk([&](Operation *op) {
    // (And the typed GEMMs pf-widen-low-precision{keep-gemms} kept.)
    if (keepsLowPrecision(op) || !touchesLowPrecision(op) ||
        (isa<MatmulOp>(op) && op->hasAttr("pf.typed_gemm")))
      return WalkResult::advance();
    op->emitOpError("computes on bf16/f16 values, which the rank lowering "
                    "does not take: run pf-widen-low-precision first (the "
                    "compile pipelines do), which computes it in float32 "
                    "between pf.casts");
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult RankLowering::run() {
  if (auto r = module->getAttrOfType<IntegerAttr>(
          PFDialect::RankAttrHelper::getNameStr()))
    state.rankId = r.getInt();
  // For the artifact manifest (the host reads it to feed the inputs).
  int64_t microbatches = 0;
  if (state.lossIndex >= 0 &&
      !step->hasAttr(PFDialect::LossReplicaAttrHelper::getNameStr()))
    microbatches = std::max<int64_t>(
        1, cast<GlobalType>(step.getResultTypes()[state.lossIndex])
               .getNumElements());
  if (failed(checkPlacements()) || failed(checkLowPrecision()))
    return failure();
  FailureOr<MemoryPlan> plan = MemoryPlan::build(module, step.getBody().front(),
                                                 state.buffers, state.sendDone);
  if (failed(plan))
    return failure();
  state.plan = std::move(*plan);
  if (failed(lowerParams()) || failed(lowerStep()) || state.rt.hadError())
    return failure();
  state.emitKernelTable(b, module.getLoc());
  emitMain();
  module->setAttr(artifact::kInputsAttrName, b.getArrayAttr(inputs));
  module->setAttr(artifact::kReportsLossAttrName,
                  b.getBoolAttr(microbatches > 0));
  // Inference results, and a training step's outputs besides the loss.
  if (state.reportOutputs ||
      llvm::any_of(state.outputIndices, [](int32_t i) { return i != 0; }))
    module->setAttr(artifact::kOutputsAttrName, outputsAttr());
  module->setAttr(artifact::kMemoryAttrName,
                  state.plan->toAttr(module.getContext()));
  module->setAttr(artifact::kNumMicrobatchesAttrName,
                  b.getI64IntegerAttr(std::max<int64_t>(microbatches, 1)));
  module->setAttr(artifact::kBackendAttrName,
                  b.getStringAttr(state.deviceName()));
  // The pf program is now fully described by the LLVM functions.
  step.erase();
  for (auto p : llvm::make_early_inc_range(module.getOps<ParamOp>()))
    p.erase();
  return success();
}

/// Every group of two or more ranks an all-reduce, broadcast or reduce of
/// the job runs over (any rank's program lists its dimension's groups), in
/// one sorted order, flat: each group's size, then its ranks.
SmallVector<int64_t> jobCommGroups(ArrayRef<ModuleOp> ranks) {
  std::set<std::vector<int64_t>> groups;
  auto add = [&](ArrayRef<int64_t> g) {
    if (g.size() >= 2)
      groups.insert(std::vector<int64_t>(g.begin(), g.end()));
  };
  // Only these reach NCCL on GPU ranks; the other group ops (gathers,
  // scatters, all-to-all, slices) lower to host-staged boxing rows.
  for (ModuleOp m : ranks)
    m.walk([&](Operation *op) {
      if (auto ar = dyn_cast<AllReduceOp>(op))
        for (Attribute g : ar.getGroups())
          add(cast<DenseI64ArrayAttr>(g).asArrayRef());
      else if (auto bc = dyn_cast<BroadcastOp>(op))
        add(bc.getRanks());
      else if (auto rd = dyn_cast<ReduceOp>(op))
        add(rd.getRanks());
    });
  SmallVector<int64_t> flat;
  for (const std::vector<int64_t> &g : groups) {
    flat.push_back(static_cast<int64_t>(g.size()));
    llvm::append_range(flat, g);
  }
  return flat;
}

/// Each rank's point-to-point messages in the order its step posts them
/// (pfrt_cuda_p2p_plan's table: peer, 1 for a send or 0 for a receive,
/// tag, count in 4-byte words), by the rank's position in `steps`; none
/// where the job has no point-to-point, or one of its sends or receives is
/// not in its step's block (its order would not be the block's).
std::optional<SmallVector<SmallVector<int64_t>>>
jobPointToPointPlans(ArrayRef<std::pair<ModuleOp, func::FuncOp>> steps) {
  SmallVector<SmallVector<int64_t>> plans(steps.size());
  bool any = false, inBlock = true;
  for (size_t i = 0; i < steps.size(); ++i) {
    func::FuncOp step = steps[i].second;
    Block *top = &step.getBody().front();
    SmallVector<int64_t> &plan = plans[i];
    step.walk([&](Operation *op) {
      auto add = [&](int64_t peer, int64_t isSend, int64_t tag, Value v) {
        any = true;
        inBlock &= op->getBlock() == top;
        plan.append({peer, isSend, tag, localWords(v)});
      };
      if (auto send = dyn_cast<SendOp>(op))
        add(send.getPeer(), 1, send.getTag(), send.getValue());
      else if (auto recv = dyn_cast<RecvOp>(op))
        add(recv.getPeer(), 0, recv.getTag(), recv.getResult());
    });
  }
  if (!any || !inBlock)
    return std::nullopt;
  return plans;
}

} // namespace

LogicalResult mlir::pf::lowerRankModules(ModuleOp top,
                                         const RankLoweringOptions &options) {
  SmallVector<ModuleOp> ranks;
  if (top->hasAttr(PFDialect::RankAttrHelper::getNameStr()))
    ranks.push_back(top);
  for (auto m : top.getOps<ModuleOp>())
    if (m->hasAttr(PFDialect::RankAttrHelper::getNameStr()))
      ranks.push_back(m);
  if (ranks.empty())
    return top.emitError()
           << options.passName
           << " expects per-rank modules: run pf-partition-ranks first";
  if (ranks.size() > 1 && ranks.front() == top)
    return top.emitError() << options.passName
                           << ": a rank module (pf.rank) holds rank modules";
  // Every rank's step first: where a send completes depends on its peer.
  SmallVector<std::pair<ModuleOp, func::FuncOp>> steps;
  RankSteps blocks;
  for (ModuleOp m : ranks) {
    SmallVector<func::FuncOp> funcs;
    for (auto f : m.getOps<func::FuncOp>())
      if (!f.isExternal())
        funcs.push_back(f);
    if (funcs.size() != 1 || !funcs.front().getBody().hasOneBlock())
      return m.emitOpError()
             << options.passName
             << " expects exactly one step function of one block per rank, "
                "found "
             << funcs.size() << " functions";
    steps.push_back({m, funcs.front()});
    blocks[m->getAttrOfType<IntegerAttr>(
                PFDialect::RankAttrHelper::getNameStr())
               .getInt()] = &funcs.front().getBody().front();
  }
  llvm::DenseMap<Operation *, Operation *> sendDone =
      analyzeSendCompletion(blocks);
  SmallVector<int64_t> commGroups;
  std::optional<SmallVector<SmallVector<int64_t>>> p2pPlans;
  if (options.target == rt::Target::Device) {
    commGroups = jobCommGroups(ranks);
    p2pPlans = jobPointToPointPlans(steps);
  }
  return forEachRankInOrder(top.getContext(), steps.size(), [&](size_t i) {
    auto [m, step] = steps[i];
    std::optional<SmallVector<int64_t>> plan;
    if (p2pPlans)
      plan = (*p2pPlans)[i];
    return RankLowering(m, step, sendDone, options, commGroups, plan).run();
  });
}
