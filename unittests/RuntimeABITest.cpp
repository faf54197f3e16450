//===- RuntimeABITest.cpp - calls of libpfrt's rows for CPU and GPU ranks -===//

#include "pf/Conversion/Common/RuntimeABI.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

struct RuntimeABITest : ::testing::Test {
  RuntimeABITest() {
    context.loadDialect<LLVM::LLVMDialect>();
    loc = FileLineColLoc::get(&context, "step.mlir", 7, 9);
    module = ModuleOp::create(loc);
  }
  ~RuntimeABITest() override { module->erase(); }

  MLIRContext context;
  Location loc = UnknownLoc::get(&context);
  ModuleOp module;
};

TEST_F(RuntimeABITest, DeviceRowsAreTwinsOrHostRows) {
  using rt::Fn;
  EXPECT_EQ(rt::deviceRow(Fn::pfrt_broadcast_i64), Fn::pfrt_cuda_broadcast_i64);
  EXPECT_EQ(rt::deviceRow(Fn::pfrt_zero_partial_input),
            Fn::pfrt_cuda_zero_partial_input);
  EXPECT_EQ(rt::deviceRow(Fn::pfrt_trace_begin), Fn::pfrt_trace_begin);
  EXPECT_EQ(rt::deviceRow(Fn::pfrt_cuda_gemm), Fn::pfrt_cuda_gemm);
  // A host kernel no lowering calls on a GPU rank: none.
  EXPECT_EQ(rt::deviceRow(Fn::pfrt_sgemm), std::nullopt);
}

TEST_F(RuntimeABITest, ACallWithoutADeviceTwinIsALocatedError) {
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    llvm::raw_string_ostream os(message);
    os << d.getLocation() << ": " << d.str();
    return success();
  });
  OpBuilder b(&context);
  b.setInsertionPointToEnd(module.getBody());
  rt::RuntimeABI device(module, rt::Target::Device);
  device.setCaller("pf.test_op");
  Value buf = device.nullPtr(b, loc);
  device.pfrt_broadcast_i64(b, loc, buf, int64_t(4), int64_t(0), buf,
                            int64_t(2));
  EXPECT_FALSE(device.hadError()) << message;
  EXPECT_TRUE(module.lookupSymbol("pfrt_cuda_broadcast_i64"));
  EXPECT_FALSE(module.lookupSymbol("pfrt_broadcast_i64"));

  // pfrt_sgemm has no twin: an error at the op's location naming the op,
  // the row and where the twins are listed; nothing is declared.
  device.pfrt_sgemm(b, loc, int32_t(0), int32_t(0), int64_t(1), int64_t(1),
                    int64_t(1), 1.0f, buf, int64_t(1), buf, int64_t(1), 0.0f,
                    buf, int64_t(1));
  EXPECT_TRUE(device.hadError());
  EXPECT_NE(message.find("loc(\"step.mlir\":7:9)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("'pf.test_op' has no GPU lowering yet: libpfrt's "
                         "pfrt_sgemm has no device twin "
                         "(runtime/include/pfrt/pfrt_device.def)"),
            std::string::npos)
      << message;
  EXPECT_FALSE(module.lookupSymbol("pfrt_sgemm"));

  // The same row for a CPU rank is an ordinary call.
  rt::RuntimeABI host(module, rt::Target::Host);
  host.pfrt_broadcast_i64(b, loc, buf, int64_t(4), int64_t(0), buf, int64_t(2));
  EXPECT_FALSE(host.hadError());
  EXPECT_TRUE(module.lookupSymbol("pfrt_broadcast_i64"));
}

} // namespace
