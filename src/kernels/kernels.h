// The integer kernels of the runtime. Each exists as a scalar reference and SIMD
// variants (src/kernels/scalar; src/kernels/avx2 and, for some, src/kernels/avx512 on
// x86-64; src/kernels/neon on AArch64); all must agree bit for bit.
// 4-D activations are NHWC; "bytes" hold uint8 or int8 values per `is_signed`.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qnnpy {

// PyTorch's element-wise kernels run SIMD over blocks of this many 8-bit
// elements and a scalar loop over the rest (aten/src/ATen/native/cpu/Loops.h).
constexpr int64_t kTorchVectorBlock = 64;

// Avx512Vnni: the AVX2 set with the AVX-512 kernels swapped in (VNNI GEMM and depthwise;
// add, max/average pools on zmm: src/kernels/avx512, kept where measured faster).
// AvxVnni: the AVX2 set with the u8 x s8 GEMM and the depthwise quads on vpdpbusd over ymm
// (src/kernels/avxvnni), for CPUs with AVX-VNNI and no AVX-512 (Intel Alder Lake and later cores).
// Amx: the Avx512Vnni set with the u8 x s8 GEMM on Intel AMX tiles (tdpbusd; src/kernels/amx), for
// Xeons from Sapphire Rapids on. AmxModel: the same GEMM driver on a software model of the tiles, over
// the best other x86 set; for tests (it runs on any x86-64 CPU, slowly), never chosen automatically.
// NeonDot: the NEON kernels with the GEMM on sdot (the Armv8.2 dot-product extension).
enum class Isa { Scalar, Avx2, Avx512Vnni, AvxVnni, Amx, AmxModel, Neon, NeonDot };

bool cpu_has_avx2();      // false off x86-64
// AVX-512 F/BW/VL and VNNI reported by cpuid, and the zmm state enabled by the OS (xgetbv); false off x86-64.
bool cpu_has_avx512_vnni();
// AVX-VNNI (vpdpbusd on ymm, VEX-encoded) reported by cpuid, with AVX2 and the ymm state; false off x86-64.
bool cpu_has_avx_vnni();
bool cpu_has_neon_dot();  // Linux: HWCAP_ASIMDDP; macOS: hw.optional.arm.FEAT_DotProd; false off AArch64
// Why the amx set cannot run here ("" where it can): it needs AMX-TILE and AMX-INT8 (cpuid leaf 7 edx
// bits 24, 25), AVX-512 VNNI, the tile state enabled by the OS (XCR0 bits 17, 18) and Linux's grant of
// the tile data to this process (arch_prctl ARCH_REQ_XCOMP_PERM, asked once, process-wide).
std::string amx_unavailable_reason();
bool cpu_has_amx();  // amx_unavailable_reason() is ""
// The ISA to use: QNNPY_ISA=scalar|avx2|avxvnni|avx512vnni|amx|amx_model|neon|neon_dot forces one;
// otherwise the best the CPU runs among those built for its architecture (amx, avx512vnni, avxvnni,
// avx2 or scalar; neon_dot or neon). avxvnni runs on CPUs with AVX-VNNI or with AVX-512 VNNI (its
// EVEX encoding). amx and avxvnni are checked against the scalar GEMM at their first use.
Isa default_isa();
// "scalar", "avx2", "avxvnni", "avx512vnni", "amx", "amx_model", "neon", "neon_dot" or "auto"
Isa parse_isa(const std::string& name);
const char* isa_name(Isa isa);
// The SIMD ISAs of this build that this CPU runs (those parse_isa admits, amx_model aside): avx2,
// avxvnni, avx512vnni, amx; neon, neon_dot.
std::vector<Isa> runnable_simd_isas();

// B (k x n int16, row-major) packed for gemm_s16: n padded to kGemmNR columns,
// k padded to even; for each block of kGemmNR columns and each k pair, kGemmNR
// pairs (b[2p][j], b[2p+1][j]).
constexpr int kGemmNR = 16;
int64_t packed_b_size(int64_t k, int64_t n);
void pack_b(const int16_t* b, int64_t k, int64_t n, int16_t* packed);

// B (k x n int8, row-major) packed for gemm_u8s8: n padded to kGemmNR columns,
// k padded to a multiple of 4; for each block of kGemmNR columns and each k quad,
// kGemmNR quads (b[4q][j], ..., b[4q+3][j]). Padding is 0.
int64_t packed_b_u8s8_size(int64_t k, int64_t n);
constexpr int64_t kClampBlock = 32;
void pack_b_u8s8(const int8_t* b, int64_t k, int64_t n, int8_t* packed);

// Requantization of int32 accumulators (acc + ibias[j] wraps in int32), then clamp to [lo, hi]:
//   float (fixed_multiplier null):  t = float(acc + ibias[j]) + fbias[j];  y = cvtps(fl(t * mult[j])) + zp
//     (int32_bias / qnnpack: ibias = int32 bias, fbias = 0; fbgemm: ibias = 0, fbias = bias / (s_x s_w))
//   fixed point (fixed_point profile): fbias and mult unused,
//     y = MultiplyByQuantizedMultiplier(acc + ibias[j], fixed_multiplier[j], fixed_shift[j]) + zp
//     (kernels/fixed_point.h; the + zp and the clamp are exact, in int64)
//   oneDNN (w_scale not null; profiles onednn and x86): oneDNN's int8 output pipeline as PyTorch sets it up
//     (ref: oneDNN's brgemm post-ops: scales, bias, dst scale, dst zero point, all in fp32),
//     t = fl(fl(fl(float(acc + ibias[j]) * src_scale) * w_scale[j]) + fbias[j]);
//     y = cvtps(clamp(fl(fl(t * mult[j]) + zp), lo, hi))
//     (ibias: 0, or the raw-x correction; fbias: the float bias; mult: oneDNN's reciprocal of s_y; the zero
//     point is added in float before rounding, which moves a value a step where fl(t * mult) + zp rounds)
struct RequantParams {
  const int32_t* ibias;
  const float* fbias;
  const float* mult;
  int32_t zp, lo, hi;
  const int32_t* fixed_multiplier = nullptr;
  const int32_t* fixed_shift = nullptr;
  const float* w_scale = nullptr;  // oneDNN's order: the weight scale per column
  float src_scale = 0.0f;          // and the input scale, as oneDNN holds them

  // The same parameters for the columns from j on.
  RequantParams columns_from(int64_t j) const {
    const bool fixed = fixed_multiplier != nullptr;
    return {ibias + j,   fixed ? nullptr : fbias + j, fixed ? nullptr : mult + j, zp, lo, hi,
            fixed ? fixed_multiplier + j : nullptr, fixed ? fixed_shift + j : nullptr,
            w_scale ? w_scale + j : nullptr, src_scale};
  }
};

// A requantization kernel (KernelSet::requantize): rows of m x n accumulators ld_acc apart into rows
// of out ld_out apart.
using RequantizeKernel = void (*)(const int32_t* acc, int64_t m, int64_t n, int64_t ld_acc, const RequantParams& p,
                                  uint8_t* out, int64_t ld_out);

// Element-wise add of two quantized tensors, each dequantized to float.
struct AddFloatParams {
  float a_scale, b_scale, inv_out_scale;
  int32_t a_zp, b_zp, out_zp, lo, hi;
  bool relu;
};

// QNNPACK's fixed-point add (see scalar/elementwise.cpp for the formula).
struct AddFixedParams {
  int32_t a_mult, b_mult, zp_term, shift, out_zp, lo, hi;
};

// Which of PyTorch's quantized adaptive-average-pool kernels to reproduce.
enum class AvgPoolRule : uint8_t {
  FbgemmNhwc,  // channels_last input: acc = sum - zp*cnt; m = fl(fl(s_in/s_out)/cnt); y = zp + rne(acc * fl(1/fl(1/m)))
  FbgemmNchw,  // contiguous input: y = rne(fl(sum * fl(fl(1/kh)/kw))), raw values, no zero point
  Qnnpack,     // acc = sum - zp*cnt; m = fl(s_in / fl(s_out * cnt)); y = cvtps(fl(acc * m)) + zp
};

struct AdaptivePoolParams {
  AvgPoolRule rule;
  float in_scale, out_scale;
  int32_t zp, lo, hi;
};

// Start and end of adaptive window `o` of `out` over `in`, computed in float as PyTorch does.
inline int64_t adaptive_start(int64_t o, int64_t in, int64_t out) {
  return static_cast<int64_t>(std::floor(static_cast<float>(o * in) / static_cast<float>(out)));
}
inline int64_t adaptive_end(int64_t o, int64_t in, int64_t out) {
  return static_cast<int64_t>(std::ceil(static_cast<float>((o + 1) * in) / static_cast<float>(out)));
}
float adaptive_multiplier(const AdaptivePoolParams& p, int64_t kh, int64_t kw);
// The same for a window of kd x kh x kw (PyTorch's 2-D pools are its 3-D ones with kd = 1; the contiguous
// rule's multiplier is fl(fl(fl(1.0 / kd) / kh) / kw), AdaptiveAveragePooling.cpp).
float adaptive_multiplier3d(const AdaptivePoolParams& p, int64_t kd, int64_t kh, int64_t kw);

// PyTorch's quantized avg_pool2d (AveragePool2d.cpp, QuantizedOpKernels.cpp). Per
// output pixel: acc = sum - zp * taps (in-bounds taps); divisor = divisor_override,
// else the window clipped to the padded input (count_include_pad) or the taps.
//   Nhwc: channels [0, 8 floor(C/8)) y = cvtps(fl(acc * m)) + zp, m = fl(fl(s_in / s_out) / divisor);
//         the other channels use fl(1 / fl(1 / m)) instead of m (quantize_val of the reciprocal)
//   Nchw: y = nearbyint(fl(fl(acc * m) + zp)), m = (float)(1.0 / divisor)  (zp added before rounding)
//   Qnnpack (QNNPACK's average-pooling.c): y = cvtps(fl(acc * m)) + zp in every channel, with
//         m = qnnpack_mult = fl(s_in / fl(s_out * kh * kw)): the divisor is always the whole window
enum class AvgPool2dRule : uint8_t { Nhwc, Nchw, Qnnpack };

struct AvgPool2dParams {
  AvgPool2dRule rule;
  bool count_include_pad;
  int32_t divisor_override;  // 0: none
  int32_t zp, lo, hi;
  float qnnpack_mult = 0.0f;  // the Qnnpack rule's multiplier
};

// The window of output `o` along one axis: [start, end) clipped to the input, and
// the size of the window clipped to the padded input.
struct PoolWindow {
  int64_t start, end, padded_size;
};
inline PoolWindow avg_pool_window(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  const int64_t start = o * stride - pad, end = std::min(start + kernel, in + pad);
  return {std::max<int64_t>(start, 0), std::min(end, in), end - start};
}
// {multiplier of the vector channels, multiplier of the others} for a divisor.
std::pair<float, float> avg_pool2d_multipliers(AvgPool2dRule rule, int64_t divisor);

// A 3-D pool over NCDHW storage (the runtime's order of rank-5 values): input, output, window.
struct Pool3dShape {
  int64_t n, c, d, h, w;
  int64_t od, oh, ow;
  int64_t kd, kh, kw, sd, sh, sw, pd, ph, pw;
};

// Output row oy reads input rows oy * sh - ph + ky * dh, those within [0, h). max_pool2d takes a
// negative ph too: a call for the output rows from row r on passes ph - r * sh (ops/pool_ops.cpp).
struct Pool2dShape {
  int64_t n, h, w, c;          // input, NHWC
  int64_t oh, ow;              // output
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

// The taps [first, last) of a window along one axis whose input coordinate start + t * dilation
// lies in [0, size): consecutive, since the coordinate grows with t.
inline void taps_inside(int64_t start, int64_t dilation, int64_t taps, int64_t size, int64_t& first, int64_t& last) {
  first = 0;
  while (first < taps && start + first * dilation < 0) ++first;
  last = taps;
  while (last > first && start + (last - 1) * dilation >= size) --last;
}

// Element-wise multiply of two quantized tensors (PyTorch's qmul):
//   y = clamp(cvtps(fl(float((a - a_zp) * (b - b_zp)) * mult)) + out_zp, lo, hi)
struct MulParams {
  float mult;
  int32_t a_zp, b_zp, out_zp, lo, hi;
};

// PyTorch's quantized batch norm (q_batch_norm_kernel) over NHWC rows of c channels:
//   channels [0, 8 floor(c/8)): v = fma(alpha[ch], float(q - in_zp), beta[ch])   (vector lanes)
//   the rest:                   v = fl(fl(alpha[ch] * float(q - in_zp)) + beta[ch])  (scalar tail)
//   y = clamp(rne(v) + out_zp, lo, hi)
struct BatchNormParams {
  const float* alpha;
  const float* beta;
  int32_t in_zp, out_zp, lo, hi;
};

// Geometry of one depthwise output row: x points at the top-left input of its first
// window; rows of x are `row_stride` bytes apart (the input is padded beforehand).
struct DepthwiseRow {
  int64_t c, ow, kh, kw, sw, dh, dw, row_stride;
};
// w (taps x c int16, tap-major) as pairs of taps: out[(p * c + ch) * 2 + h] = w[2p + h][ch],
// 0 for the missing tap of an odd count. out holds (taps + 1) / 2 * 2 * c values.
void pack_depthwise_pairs(const int16_t* w, int64_t taps, int64_t c, int16_t* out);

// A depthwise conv over input rows interleaved in quads (runtime/conv_runner.cpp): the kernel
// rows of a window are taken four at a time (`groups` quads of rows, dh apart; slots past the
// window meet zero weights), and interleave4 lays out the four padded input rows of a quad as
// z[px][ch][j] = row_j[px][ch] (clamped where the set is not u8s8_exact), so that one 32-bit lane
// holds one channel's four bytes: a u8 x s8 dot product of four (vpmaddubsw + vpmaddwd with ones,
// or vpdpbusd), with no shuffle in the conv's inner loop. Group g's interleaved row starts at
// z + g * group_stride. `rows` output rows (1 to 4) read the same z with weights w[r] (shift r: for
// a stride-1 conv the window of the next output row starts one slot further down the quad), laid
// out w[r][((g * kw + kx) * c + ch) * 4 + j]:
//   acc[r][ox * c + ch] = sum over g, kx, j of z[g][((ox * sw + kx * dw) * c + ch) * 4 + j] * w[r][...].
// Exact when every pair sum z[2i] w[2i] + z[2i + 1] w[2i + 1] fits in int16 (AVX2's vpmaddubsw
// saturates it; the caller clamps the input as for the GEMM, runtime/u8s8_input.h), or for any
// byte where the set is u8s8_exact.
struct DepthwiseQuads {
  int64_t c, ow, kw, sw, dw, groups, group_stride;
};
// w (taps x c int16, tap-major, each within int8) as the quads of `shifts` output rows:
// out[(((r * groups + g) * kw + kx) * c + ch) * 4 + j] = w[ky * kw + kx][ch] for ky = 4 g + j - r
// within [0, kh), else 0. out holds shifts * groups * kw * c * 4 values.
void pack_depthwise_quads(const int16_t* w, int64_t kh, int64_t kw, int64_t c, int64_t groups, int64_t shifts,
                          int8_t* out);

// A of gemm_u8s8_runs, read where it lies: row i (of m) is `runs` runs of run_len bytes
// (a multiple of 4), run s at rows[i] + s * run_stride; B is packed for k = runs * run_len.
// A conv passes, per output pixel, its window's top-left byte in the padded NHWC input: each
// kernel row's kw * cin bytes are contiguous there (dilation 1 along x), so no im2col copy is
// made. Rounding kw * cin up to 4 reads up to 3 bytes past each run, which meet zero weights.
struct U8RowRuns {
  const uint8_t* const* rows;
  int64_t runs, run_len, run_stride;
};

// Bytes past its output that KernelSet::window_columns may write.
constexpr int64_t kWindowColumnsSlack = 16;

// Integer Winograd F(2x2, 3x3) (runtime/conv_runner.cpp): per channel, a 4x4 input tile d gives
// 2x2 outputs Y = A^T [U . V] A / 4, V = B^T d B, U = Gs g Gs^T (prepared_layer.cpp) with
//   B^T = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]], Gs = 2 G = [[2,0,0],[1,1,1],[1,-1,1],[0,0,2]],
//   A^T = [[1,1,1,0],[0,1,-1,-1]]  (Lavin & Gray's F(2x2, 3x3) with G scaled by 2 to stay in integers),
// so 4 Y is exactly 4 times the conv's sum (x - zx)(w - zw): the wrapping int32 sums of the output
// transform are exact whenever that fits in int32 (the layer checks it), and >> 2 divides exactly.
// The 16 transformed planes e = 4 i + j hold one value per (tile, channel), planes `plane` apart.
// Input: tile t of a row has its top-left byte at x + 2 t c (NHWC, rows row_stride bytes apart,
// zx at padding); d = x - zx, V[e] (|V| <= 4 * 255, int16) at v + e * plane + t * c + ch.
// Output: M[e] at m + e * plane + t * n + ch (int32, the GEMM of V[e] and U[e]); Y[dy][dx] at
// y + dy * y_row + (2 t + dx) * n + ch.
struct WinogradInput {
  int64_t tiles, c, row_stride, plane;
  bool is_signed;
  int32_t zx;
};
struct WinogradOutput {
  int64_t tiles, n, plane, y_row;
};

// One group's share of a grouped-int8 linear's float sums (torchao's 8da4w, runtime/affine_linear.cpp): for
// j < n, sums[j] = fl(sums[j] + fl(scale[j] * float(acc[j] - offset * w_sum[j] - w_zero_point[j] * centered))),
// the int32 arithmetic wrapping (acc: the group's GEMM of the offset input, w_sum and w_zero_point: the weight's
// group sums and zero points, offset and centered: the row's terms).
struct GroupSumParams {
  const int32_t* w_sum;
  const int32_t* w_zero_point;
  const float* scale;
  int32_t offset, centered;
};

// The grouped linear on int4 weights (torchao's 8da4w, runtime/affine_linear.cpp), for rows r < m and columns j < n:
//   S[r][g][j] = sum_{i < group} (q[r][g group + i] - zx[r]) * (w[j][g group + i] - zw[g][j])   exact int32
//   sums[r][j] = fl(... fl(fl(0 + fl(scale[0][j] * float(S[r][0][j]))) + fl(scale[1][j] * float(S[r][1][j]))) ...),
// the groups in order (what add_group_sums computes group by group, in one pass over the weights). q: m rows of k
// int8 values (row stride k); q_centered[r * groups + g] = sum_i q[r][g group + i] - group * zx[r]; w: values in
// [-8, 7] packed by pack_int4_groups; scale and zero_point (nullptr: all 0) laid out [block][g][kInt4Block], zero
// past n; sums: m rows, ld_sums apart. group is a multiple of 8 and divides k.
struct Int4Groups {
  const int8_t* q;
  const int32_t* q_centered;
  const int32_t* zx;
  int64_t m, k, group;
  const uint8_t* w;
  const float* scale;
  const int32_t* zero_point;
  int64_t n;
  float* sums;
  int64_t ld_sums;
};
// pack_int4_groups: block b (columns kInt4Block b ..), then for each 8 values of k at k0 = 8 p, 64 bytes: byte 4 j + t
// holds w[j][k0 + t] + 8 in its low nibble and w[j][k0 + 4 + t] + 8 in its high one (j the column in the block;
// columns past n hold 0). A block is 8 k bytes, in one run; 64 bytes are 16 columns of one vpdpbusd quad each nibble.
constexpr int64_t kInt4Block = 16;
int64_t packed_int4_size(int64_t k, int64_t n);
void pack_int4_groups(const int8_t* w, int64_t n, int64_t k, uint8_t* packed);  // w: n rows of k values

struct KernelSet {
  // c[m][j] = sum_k a[m][k] * b[k][j]; a is m x kp int16 (kp even), b packed by pack_b.
  void (*gemm_s16)(const int16_t* a, int64_t m, int64_t kp, const int16_t* b_packed, int64_t n, int32_t* c, int64_t ldc);
  RequantizeKernel requantize;
  // One output row of a depthwise conv over raw 8-bit NHWC input (see DepthwiseRow):
  // acc[ox][c] = sum over taps t = (ky, kx) of x[ky * dh][ox * sw + kx * dw][c] * w_t[c],
  // weights in pairs of taps as packed by pack_depthwise_pairs.
  void (*depthwise_row)(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs, int32_t* acc);
  // y = clamp(cvtps(min(x * inv_scale, bound)) + zp)
  void (*quantize)(const float* x, int64_t n, float inv_scale, int32_t zp, int32_t lo, int32_t hi, uint8_t* out);
  void (*dequantize)(const uint8_t* q, int64_t n, bool is_signed, float scale, int32_t zp, float* out);
  void (*add_float)(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFloatParams& p, uint8_t* out);
  void (*add_fixed)(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFixedParams& p, uint8_t* out);
  void (*relu)(const uint8_t* x, int64_t n, bool is_signed, int32_t zp, uint8_t* out);
  void (*max_pool2d)(const uint8_t* x, const Pool2dShape& s, bool is_signed, uint8_t* out);
  void (*adaptive_avg_pool2d)(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AdaptivePoolParams& p,
                              uint8_t* out);
  // out[i] = table[x[i]] over raw bytes: any function of one 8-bit value (activations, requantization).
  void (*lookup)(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* out);
  void (*mul)(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const MulParams& p, uint8_t* out);
  // s carries kernel, stride and padding (dilation 1).
  void (*avg_pool2d)(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AvgPool2dParams& p, uint8_t* out);
  void (*batch_norm)(const uint8_t* x, int64_t pixels, int64_t c, bool is_signed, const BatchNormParams& p,
                     uint8_t* out);

  // c[m][j] = sum_k a[m][k] * b[k][j]; a is m x kq uint8 (kq a multiple of 4), b packed by
  // pack_b_u8s8. Exact only when every pair sum a[2p] b[2p][j] + a[2p+1] b[2p+1][j] fits
  // in int16 (the AVX2 variant's vpmaddubsw saturates it): the caller checks this.
  void (*gemm_u8s8)(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                    int64_t ldc);
  // out[i] = min(x[i], bound) (unsigned); flags[b] = 1 when a byte of block b (bytes
  // [kClampBlock * b, kClampBlock * (b + 1)) of x) exceeds bound, else 0. Returns the number of flagged blocks.
  int64_t (*clamp_u8)(const uint8_t* x, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags);
  // gemm_u8s8, gemm_u8s8_runs and depthwise_quads are exact for any uint8 input (no int16
  // pair sums): their input needs no clamp.
  bool u8s8_exact;
  // gemm_u8s8 with A read in place (U8RowRuns), for the implicit-GEMM conv; null in the
  // sets that have none (the runtime then copies im2col rows for gemm_u8s8).
  void (*gemm_u8s8_runs)(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc);
  // The window columns of one output row for gemm_u8s8_runs (runtime PreparedLayer::window_columns):
  // from kh rows of c bytes per pixel, dst[(px * kh + ky) * c + ch] = rows[ky][px * c + ch] for
  // px < width, so that a kw x kh window is one run of kw * kh * c bytes. Reads nothing past a row's
  // width * c bytes; may write up to kWindowColumnsSlack bytes past dst's kh * c * width (callers
  // leave room). Null where gemm_u8s8_runs is.
  void (*window_columns)(const uint8_t* const* rows, int64_t kh, int64_t c, int64_t width, uint8_t* dst);
  // Winograd F(2x2, 3x3) transforms of one row of tiles (WinogradInput / WinogradOutput above).
  void (*winograd_input)(const uint8_t* x, const WinogradInput& s, int16_t* v);
  void (*winograd_output)(const int32_t* m, const WinogradOutput& s, int32_t* y);
  // 3x3 stride-1 convs run Winograd (its 16 int16 GEMMs) rather than the direct GEMM: where the
  // int16 GEMM is nearly as fast as the u8 x s8 one (AVX2), not where vpdpbusd doubles it.
  bool winograd_faster;
  // out[4 i + j] = min(rows[j][i], bound) for i < n: four rows interleaved byte by byte and
  // clamped (DepthwiseQuads); a null row gives zeros (a slot whose weights are all 0).
  // flags[j * blocks + b] = 1 when a byte of block b (bytes [kClampBlock * b, kClampBlock * (b + 1)))
  // of row j exceeds bound, else 0, for the blocks = ceil(n / kClampBlock) blocks of each row.
  // Returns the number of flagged blocks.
  int64_t (*interleave4)(const uint8_t* const* rows, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags);
  // The depthwise conv of `rows` output rows over interleaved quads of input rows (DepthwiseQuads).
  void (*depthwise_quads)(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                          int32_t* const* acc);
  // Depthwise convs of stride 1 over uint8 inputs run on the quads rather than depthwise_row (the
  // scalar set keeps depthwise_row, so that comparing sets compares the two ways).
  bool depthwise_quads_faster;
  // dst[p * c + ch] = planes[ch * plane_stride + p] for p < pixels, ch < c: c planes of bytes side by
  // side as pixels (NCHW to NHWC: the quantize node's blocks, runtime/ops/quantize_ops.cpp).
  void (*interleave_planes)(const uint8_t* planes, int64_t plane_stride, int64_t pixels, int64_t c, uint8_t* dst);
  // gemm_u8s8_runs with the requantization fused (null in the sets without it): each block of
  // accumulators, while in cache, is requantized by `requantize` (the set's own, passed by the caller)
  // with p (columns from 0) into rows of out, ld_out bytes apart, instead of stored as int32 for a
  // later pass. The results equal gemm_u8s8_runs followed by requantize.
  void (*gemm_u8s8_runs_requantized)(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n,
                                     const RequantParams& p, RequantizeKernel requantize, uint8_t* out,
                                     int64_t ld_out);
  // The gemm_u8s8 for fewer than kFewRows rows (an LLM's decode step: one row), where the set's own is slow
  // there; null: gemm_u8s8. The amx set's tiles hold 16 rows and are configured per call, so a one-row GEMM
  // computes 16 and pays the configuration each time: it uses the avx512vnni GEMM (measured on an Intel Xeon:
  // a 2048 x 5632 8da4w linear of one row, 7.4 ms on the tiles, 1.4 ms on vpdpbusd).
  void (*gemm_u8s8_few_rows)(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                             int64_t ldc) = nullptr;
  // GroupSumParams above.
  void (*add_group_sums)(const int32_t* acc, int64_t n, const GroupSumParams& p, float* sums) = nullptr;
  // Int4Groups above.
  void (*int4_group_sums)(const Int4Groups& a) = nullptr;
  // Attention's float loops (runtime/ops/float_attention.cpp), in one order on every set: out[j] = the dot of x
  // with the n floats at rows + j * ld, for j < count, product i added into partial sum i % 8, the eight sums
  // then added pairwise (4 apart, 2 apart, 1 apart).
  void (*float_dots)(const float* x, const float* rows, int64_t ld, int64_t count, int64_t n, float* out) = nullptr;
  // out[i] = the sum over j < count in order, from 0, of w[j] * rows[j * ld + i] for i < n; a row whose weight is
  // 0 is skipped (so a value there that is not finite does not reach out).
  void (*weighted_rows)(const float* w, const float* rows, int64_t ld, int64_t count, int64_t n, float* out) = nullptr;
};

constexpr int64_t kFewRows = 16;

const KernelSet& kernel_set(Isa isa);
const KernelSet& scalar_kernels();
const KernelSet& avx2_kernels();         // x86-64 builds with QNNPY_SIMD only
const KernelSet& avx512_vnni_kernels();  // the AVX2 set with its AVX-512 kernels swapped in; x86-64 builds only
const KernelSet& amx_model_kernels();    // the AMX GEMM on the tile model over the best other set; x86-64 builds only
const KernelSet& neon_kernels();         // AArch64 builds with QNNPY_SIMD only
const KernelSet& neon_dot_kernels();     // AArch64 builds with QNNPY_SIMD only

}  // namespace qnnpy
