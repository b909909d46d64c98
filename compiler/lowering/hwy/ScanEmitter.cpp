//===- ScanEmitter.cpp - Mamba's conv and scan -> Highway C++ -------------===//
//
// The sequence part of a Mamba mixer in FunctionEmitter: tfm.causal_conv1d
// and tfm.selective_scan (the mixer's GEMMs are GemmEmitter's). Both run a
// sequence's rows in order with the vector lanes across channels; the
// threads take blocks of channels, never the rows, so the result is the
// same for any thread count.
//
//===----------------------------------------------------------------------===//

#include "FunctionEmitter.h"

using namespace mlir;
using namespace mlir::tfm;

namespace tfm::hwy {

namespace {

/// Channels a task takes: a multiple of every target's lanes (16, 8, 4);
/// wide enough that each visit of a row (rows are channels apart, so each
/// is a TLB miss) reads 512 bytes, and narrow enough that a layer's
/// channels (768 and up) spread over the threads.
constexpr int64_t kChannelsPerTask = 128;

/// Opens the tasks of a sequence op over `x` ([..., seq, C]): one per
/// sequence and block of kChannelsPerTask channels, never a split of the
/// rows. In the task, `seq` is the rows, `b` the sequence and `c0` the
/// block's first channel. closeChannelTasks closes the task and the block.
void openChannelTasks(mlir::raw_indented_ostream &os, const Buffer &x,
                      int64_t channels, const Twine &comment) {
  ArrayRef<Dim> dims(x.dims);
  int64_t tasks = (channels + kChannelsPerTask - 1) / kChannelsPerTask;
  os << "{ // " << comment << "\n";
  os.indent();
  os << "const int64_t seq = " << dims[dims.size() - 2].expr << ";\n";
  os << "pool.parallelFor(" << product(dims.drop_back(2)) << " * " << tasks
     << ", [&](int64_t task) {\n";
  os.indent();
  os << "const int64_t b = task / " << tasks << ", c0 = task % " << tasks
     << " * " << kChannelsPerTask << ";\n";
}

void closeChannelTasks(mlir::raw_indented_ostream &os) {
  os.unindent();
  os << "});\n";
  os.unindent();
  os << "}\n";
}

} // namespace

LogicalResult FunctionEmitter::emitCausalConv1d(CausalConv1dOp op) {
  Buffer in = buffers[op.getInput()];
  int64_t channels = op.getInput().getType().getShape().back();
  int64_t width = op.getWeight().getType().getDimSize(2);
  Buffer out = allocate(op.getResult(), in.dims);
  TypedValue<MambaStateType> state = op.getState();
  openChannelTasks(os, in, channels,
                   "causal depthwise conv (width " + Twine(width) +
                       "), its bias and SiLU: one pass over each sequence's "
                       "rows");
  std::string window = "nullptr", newWindow = "nullptr";
  if (state) {
    // The window of sequence b; what it holds at offset 0 is an earlier
    // sequence's, read as zeros.
    os << "float *window = " << buffers[state].ptr << " + b * "
       << state.getType().getWindowFloats() << ";\n";
    window = "(" + scalars[op.getOffset()] + " == 0 ? nullptr : window)";
    newWindow = "window";
  }
  os << "k::CausalConv1dSilu(" << in.ptr << " + b * seq * " << channels
     << ", seq, " << channels << ", " << buffers[op.getWeight()].ptr << ", "
     << width << ", " << buffers[op.getBias()].ptr << ", " << window << ", "
     << newWindow << ", " << out.ptr << " + b * seq * " << channels
     << ", c0, std::min<int64_t>(" << kChannelsPerTask << ", " << channels
     << " - c0));\n";
  closeChannelTasks(os);
  remark(op, "causal depthwise conv, bias and SiLU in one pass over each "
             "sequence's rows, vectors across channels, " +
                 std::to_string(kChannelsPerTask) + " channels a task" +
                 (state ? "; the last " + std::to_string(width - 1) +
                              " inputs kept in the mixer's state"
                        : std::string()));
  return success();
}

LogicalResult FunctionEmitter::emitSelectiveScan(SelectiveScanOp op) {
  Buffer u = buffers[op.getInput()];
  int64_t channels = op.getInput().getType().getShape().back();
  int64_t states = op.getALog().getType().getDimSize(1);
  Buffer out = allocate(op.getResult(), u.dims);
  TypedValue<MambaStateType> state = op.getState();
  openChannelTasks(os, u, channels,
                   "selective scan over " + Twine(states) +
                       " states a channel: softplus, exp(dt A), the "
                       "recurrence, C . h, the D skip and the SiLU gate in "
                       "one pass over each sequence's rows");
  std::string h = "nullptr", newH = "nullptr";
  if (state) {
    MambaStateType type = state.getType();
    os << "float *h = " << buffers[state].ptr << " + " << type.getScanOffset()
       << " + b * " << type.getScanFloats() << ";\n";
    h = "(" + scalars[op.getOffset()] + " == 0 ? nullptr : h)";
    newH = "h";
  }
  std::string rows = " + b * seq * " + std::to_string(channels);
  std::string stateRows = " + b * seq * " + std::to_string(states);
  os << "k::SelectiveScanGated(" << u.ptr << rows << ", "
     << buffers[op.getDelta()].ptr << rows << ", " << buffers[op.getGate()].ptr
     << rows << ", seq, " << channels << ", " << buffers[op.getB()].ptr
     << stateRows << ", " << buffers[op.getC()].ptr << stateRows << ", "
     << states << ", " << buffers[op.getALog()].ptr << ", "
     << buffers[op.getD()].ptr << ", " << h << ", " << newH << ", " << out.ptr
     << rows << ", c0, std::min<int64_t>(" << kChannelsPerTask << ", "
     << channels << " - c0));\n";
  closeChannelTasks(os);
  remark(op, "selective scan: softplus, the discretisation, the recurrence, "
             "C . h, the D skip and the SiLU(z) gate fused in one pass over "
             "each sequence's rows, vectors across channels (" +
                 std::to_string(states) + " states a channel), " +
                 std::to_string(kChannelsPerTask) +
                 " channels a task, never the rows split" +
                 (state ? "; h kept in the mixer's state" : std::string()));
  return success();
}

} // namespace tfm::hwy
