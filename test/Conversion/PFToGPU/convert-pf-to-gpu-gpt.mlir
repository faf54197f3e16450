// A one-layer GPT on a GPU rank (Inputs/cuda-gpt.mlir: token and position
// embeddings, the positions broadcast over the batch, q/k/v sliced out of
// one projection, the causal mask broadcast and filled, dropout, a GELU
// MLP, the vocabulary head's cross-entropy with ignore_index) compiles with
// the embedding, broadcast, copy_box, dropout, summed cross-entropy and
// count_kept device twins (pfrt_device.def), forward and backward, and
// AdamW; no host kernel or host copy_box is called.
// RUN: pf-opt %S/Inputs/cuda-gpt.mlir -pf-compile-gpu-pipeline="optimizer=adamw" \
// RUN:   | FileCheck %s
// RUN: pf-opt %S/Inputs/cuda-gpt.mlir -pf-compile-gpu-pipeline="optimizer=adamw" \
// RUN:   | FileCheck %s --check-prefix=HOST

// CHECK: module @rank0 attributes {{.*}}pfrt.backend = "cuda"

// Forward.
// CHECK: llvm.call @pfrt_cuda_k_embedding(
// CHECK: llvm.call @pfrt_cuda_k_embedding(
// CHECK: llvm.call @pfrt_cuda_k_broadcast(
// CHECK: llvm.call @pfrt_cuda_k_layer_norm(
// CHECK: llvm.call @pfrt_cuda_copy_box(
// CHECK: llvm.call @pfrt_cuda_copy_box(
// CHECK: llvm.call @pfrt_cuda_copy_box(
// CHECK: llvm.call @pfrt_cuda_k_broadcast(
// CHECK: llvm.call @pfrt_cuda_k_masked_fill(
// CHECK: llvm.call @pfrt_cuda_k_softmax(
// CHECK: llvm.call @pfrt_cuda_k_dropout(
// CHECK: llvm.call @pfrt_cuda_k_dropout(
// CHECK: llvm.call @pfrt_cuda_k_softmax_xent_sum(
// CHECK: llvm.call @pfrt_cuda_k_count_kept(

// Backward: the cross-entropy, the dropouts' masks again, the slices'
// gradients (pads: copy_box into zeros), the embeddings' gradients.
// CHECK: llvm.call @pfrt_cuda_k_softmax_xent_grad_sum(
// CHECK: llvm.call @pfrt_cuda_k_dropout(
// CHECK: llvm.call @pfrt_cuda_k_softmax_grad(
// CHECK: llvm.call @pfrt_cuda_copy_box(
// CHECK: llvm.call @pfrt_cuda_k_embedding_grad(
// CHECK: llvm.call @pfrt_cuda_k_embedding_grad(
// The 17 AdamW updates are one multi-tensor call (a table of 17 x 7
// pointers).
// CHECK: llvm.alloca %{{.+}} x !llvm.array<119 x ptr>
// CHECK-NOT: llvm.call @pfrt_cuda_k_adam(
// CHECK: llvm.call @pfrt_cuda_k_adam_multi(
// CHECK-NOT: llvm.call @pfrt_cuda_k_adam(
// CHECK: llvm.call @pfrt_cuda_report_loss(

// HOST-NOT: llvm.call @pfrt_k_
// HOST-NOT: llvm.call @pfrt_copy_box(
