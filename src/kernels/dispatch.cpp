// CPU feature detection, ISA selection, and the shared helpers of the kernel sets.
// Only the target architecture's SIMD kernels are compiled (CMakeLists.txt), which then
// defines QNNPY_AVX2_KERNELS or QNNPY_NEON_KERNELS; the compiler's architecture macros
// are checked too, so other architectures' intrinsics headers are never included.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/scalar/scalar_kernels.h"
#include "kernels/self_check.h"
#if defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif
#if defined(__x86_64__) && defined(QNNPY_AVX2_KERNELS)
#define QNNPY_X86_SIMD 1
#include <cpuid.h>

#include <cerrno>

#include "kernels/amx/amx_kernels.h"
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx512/avx512_kernels.h"
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(QNNPY_AVXVNNI_KERNELS)
#include "kernels/avxvnni/avxvnni_kernels.h"
#endif
#elif defined(__aarch64__) && defined(QNNPY_NEON_KERNELS)
#define QNNPY_ARM_SIMD 1
#include "kernels/neon/neon_kernels.h"
#endif

namespace qnnpy {

bool cpu_has_avx2() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

#if defined(QNNPY_X86_SIMD)
namespace {

// XCR0's low word, the register states the OS saves; 0 where xgetbv is unusable (leaf 1, ecx bit 27:
// OSXSAVE clear).
unsigned os_saved_states() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) return 0;
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  return xcr0_lo;
}

}  // namespace
#endif

bool cpu_has_avx512_vnni() {
#if defined(QNNPY_X86_SIMD)
  unsigned eax, ebx, ecx, edx;
  // Leaf 7 subleaf 0: ebx bits 16 (AVX512F), 30 (AVX512BW), 31 (AVX512VL); ecx bit 11 (AVX512_VNNI).
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const unsigned ebx_bits = (1u << 16) | (1u << 30) | (1u << 31);
  if ((ebx & ebx_bits) != ebx_bits || !(ecx & (1u << 11))) return false;
  // XCR0 bits 1-2 (xmm, ymm) and 5-7 (opmask, upper halves of zmm0-15, zmm16-31): 0xE6.
  return (os_saved_states() & 0xE6u) == 0xE6u && cpu_has_avx2();
#else
  return false;
#endif
}

bool cpu_has_avx_vnni() {
#if defined(QNNPY_X86_SIMD)
  unsigned eax, ebx, ecx, edx;
  // XCR0 bits 1-2: the xmm and ymm state.
  if (!cpu_has_avx2() || (os_saved_states() & 0x6u) != 0x6u) return false;
  // Leaf 7 subleaf 1: eax bit 4 (AVX-VNNI).
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4));
#else
  return false;
#endif
}

std::string amx_unavailable_reason() {
#if !defined(QNNPY_X86_SIMD)
  return "qnnpy was built without the x86-64 SIMD kernels";
#elif !defined(QNNPY_AMX_KERNELS)
  return "qnnpy was built without the amx kernels (an x86-64 build whose compiler and assembler know AMX has them)";
#else
  static const std::string reason = []() -> std::string {
    unsigned eax, ebx, ecx, edx;
    // Leaf 7 subleaf 0: edx bits 24 (AMX-TILE) and 25 (AMX-INT8).
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || (edx & (3u << 24)) != (3u << 24)) {
      return "this CPU has no AMX-INT8 (cpuid: amx_tile, amx_int8)";
    }
    if (!cpu_has_avx512_vnni()) return "this CPU (or OS) has no AVX-512 VNNI, which the amx set's other kernels use";
    // XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA): the OS saves the tile state.
    if ((os_saved_states() & (3u << 17)) != (3u << 17)) return "the OS does not enable the AMX tile state (XCR0)";
#if defined(__linux__)
    // The first tile instruction faults until the process has asked for the tile data (Linux 5.16 and
    // later, Documentation/arch/x86/xstate.rst); the permission covers all of the process's threads.
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
      return std::string("Linux refused this process the AMX tile data (arch_prctl ARCH_REQ_XCOMP_PERM: ") +
             std::strerror(errno) + ")";
    }
    return "";
#else
    return "the amx kernels ask Linux for the tile data; other systems are not supported";
#endif
  }();
  return reason;
#endif
}

bool cpu_has_amx() { return amx_unavailable_reason().empty(); }

bool cpu_has_neon_dot() {
#if defined(__aarch64__) && defined(__APPLE__)
  int has = 0;
  size_t size = sizeof has;
  return sysctlbyname("hw.optional.arm.FEAT_DotProd", &has, &size, nullptr, 0) == 0 && has != 0;
#elif defined(__aarch64__)
  constexpr unsigned long kHwcapAsimdDp = 1UL << 20;  // HWCAP_ASIMDDP, linux/arch/arm64/include/uapi/asm/hwcap.h
  return (getauxval(AT_HWCAP) & kHwcapAsimdDp) != 0;
#else
  return false;
#endif
}

namespace {

#if defined(QNNPY_AVXVNNI_KERNELS)
bool avx_vnni_passes_self_check();
#endif

Isa best_isa() {
#if defined(QNNPY_X86_SIMD)
#if defined(QNNPY_AMX_KERNELS)
  if (cpu_has_amx()) {
    if (amx_passes_self_check()) return Isa::Amx;
    static const bool warned = [] {
      std::fprintf(stderr, "qnnpy: the amx kernels disagree with the scalar ones on this CPU (a bug: please report "
                           "it); using the avx512vnni kernels\n");
      return true;
    }();
    (void)warned;
  }
#endif
  if (cpu_has_avx512_vnni()) return Isa::Avx512Vnni;
#if defined(QNNPY_AVXVNNI_KERNELS)
  if (cpu_has_avx_vnni()) {
    if (avx_vnni_passes_self_check()) return Isa::AvxVnni;
    static const bool warned = [] {
      std::fprintf(stderr, "qnnpy: the avxvnni kernels disagree with the scalar ones on this CPU (a bug: please "
                           "report it); using the avx2 kernels\n");
      return true;
    }();
    (void)warned;
  }
#endif
  return cpu_has_avx2() ? Isa::Avx2 : Isa::Scalar;
#elif defined(QNNPY_ARM_SIMD)
  return cpu_has_neon_dot() ? Isa::NeonDot : Isa::Neon;
#else
  return Isa::Scalar;
#endif
}

}  // namespace

Isa parse_isa(const std::string& name) {
  if (name == "scalar") return Isa::Scalar;
  if (name == "avx2") {
#if defined(QNNPY_X86_SIMD)
    if (!cpu_has_avx2()) throw std::invalid_argument("isa 'avx2' requested but this CPU has no AVX2+FMA");
    return Isa::Avx2;
#else
    throw std::invalid_argument("isa 'avx2' requested but qnnpy was built without the x86-64 AVX2 kernels");
#endif
  }
  if (name == "avx512vnni") {
#if defined(QNNPY_X86_SIMD)
    if (!cpu_has_avx512_vnni()) {
      throw std::invalid_argument("isa 'avx512vnni' requested but this CPU (or OS) has no AVX-512 F/BW/VL + VNNI");
    }
    return Isa::Avx512Vnni;
#else
    throw std::invalid_argument("isa 'avx512vnni' requested but qnnpy was built without the x86-64 SIMD kernels");
#endif
  }
  if (name == "avxvnni") {
#if defined(QNNPY_AVXVNNI_KERNELS)
    if (!cpu_has_avx_vnni() && !cpu_has_avx512_vnni()) {
      throw std::invalid_argument("isa 'avxvnni' requested but this CPU (or OS) has neither AVX-VNNI nor AVX-512 VNNI");
    }
    if (!avx_vnni_passes_self_check()) {
      throw std::invalid_argument("isa 'avxvnni' requested but its kernels disagree with the scalar ones on this CPU "
                                  "(a bug: please report it)");
    }
    return Isa::AvxVnni;
#else
    throw std::invalid_argument("isa 'avxvnni' requested but qnnpy was built without the avxvnni kernels (an x86-64 "
                                "build whose assembler knows AVX-VNNI's vpdpbusd has them)");
#endif
  }
  if (name == "amx") {
#if defined(QNNPY_AMX_KERNELS)
    const std::string reason = amx_unavailable_reason();
    if (!reason.empty()) throw std::invalid_argument("isa 'amx' requested but " + reason);
    if (!amx_passes_self_check()) {
      throw std::invalid_argument("isa 'amx' requested but its kernels disagree with the scalar ones on this CPU (a "
                                  "bug: please report it)");
    }
    return Isa::Amx;
#else
    throw std::invalid_argument("isa 'amx' requested but " + amx_unavailable_reason());
#endif
  }
  if (name == "amx_model") {
#if defined(QNNPY_X86_SIMD)
    return Isa::AmxModel;
#else
    throw std::invalid_argument("isa 'amx_model' requested but qnnpy was built without the x86-64 SIMD kernels");
#endif
  }
  if (name == "neon" || name == "neon_dot") {
#if defined(QNNPY_ARM_SIMD)
    if (name == "neon") return Isa::Neon;
    if (!cpu_has_neon_dot()) {
      throw std::invalid_argument("isa 'neon_dot' requested but this CPU has no dot-product extension (asimddp)");
    }
    return Isa::NeonDot;
#else
    throw std::invalid_argument("isa '" + name + "' requested but qnnpy was built without the AArch64 NEON kernels");
#endif
  }
  if (name == "auto" || name.empty()) return best_isa();
  throw std::invalid_argument("unknown isa '" + name +
                              "' (expected auto, scalar, avx2, avxvnni, avx512vnni, amx, amx_model, neon or neon_dot)");
}

std::vector<Isa> runnable_simd_isas() {
  std::vector<Isa> isas;
  for (const char* name : {"avx2", "avxvnni", "avx512vnni", "amx", "neon", "neon_dot"}) {
    try {
      isas.push_back(parse_isa(name));
    } catch (const std::invalid_argument&) {
      // not built for this architecture, or not run by this CPU
    }
  }
  return isas;
}

Isa default_isa() {
  const char* env = std::getenv("QNNPY_ISA");
  if (!env) return best_isa();
  try {
    return parse_isa(env);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("QNNPY_ISA=") + env + ": " + e.what());
  }
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512Vnni: return "avx512vnni";
    case Isa::AvxVnni: return "avxvnni";
    case Isa::Amx: return "amx";
    case Isa::AmxModel: return "amx_model";
    case Isa::Neon: return "neon";
    case Isa::NeonDot: return "neon_dot";
  }
  throw std::logic_error("unknown isa");
}

int64_t packed_b_size(int64_t k, int64_t n) {
  const int64_t kp = (k + 1) / 2 * 2, np = (n + kGemmNR - 1) / kGemmNR * kGemmNR;
  return kp * np;
}

void pack_b(const int16_t* b, int64_t k, int64_t n, int16_t* packed) {
  const int64_t pairs = (k + 1) / 2, blocks = (n + kGemmNR - 1) / kGemmNR;
  for (int64_t nb = 0; nb < blocks; ++nb)
    for (int64_t p = 0; p < pairs; ++p)
      for (int64_t j = 0; j < kGemmNR; ++j)
        for (int64_t h = 0; h < 2; ++h) {
          const int64_t row = 2 * p + h, col = nb * kGemmNR + j;
          packed[((nb * pairs + p) * kGemmNR + j) * 2 + h] = (row < k && col < n) ? b[row * n + col] : 0;
        }
}

float adaptive_multiplier(const AdaptivePoolParams& p, int64_t kh, int64_t kw) {
  return adaptive_multiplier3d(p, 1, kh, kw);
}

float adaptive_multiplier3d(const AdaptivePoolParams& p, int64_t kd, int64_t kh, int64_t kw) {
  switch (p.rule) {
    case AvgPoolRule::FbgemmNhwc: {
      // quantize_val(1.0f / m, zp, acc) multiplies by 1.0f / float(1.0f / m).
      const float m = (p.in_scale / p.out_scale) / static_cast<float>(kd * kh * kw);
      return 1.0f / (1.0f / m);
    }
    case AvgPoolRule::FbgemmNchw:
      return (static_cast<float>(1.0 / static_cast<double>(kd)) / static_cast<float>(kh)) / static_cast<float>(kw);
    case AvgPoolRule::Qnnpack:
      return p.in_scale / (p.out_scale * static_cast<float>(kd * kh * kw));
  }
  throw std::logic_error("unknown average-pool rule");
}

std::pair<float, float> avg_pool2d_multipliers(AvgPool2dRule rule, int64_t divisor) {
  if (rule == AvgPool2dRule::Qnnpack) throw std::logic_error("the Qnnpack avg_pool2d multiplier is AvgPool2dParams::qnnpack_mult");
  if (rule == AvgPool2dRule::Nchw) {
    const float m = static_cast<float>(1.0 / static_cast<double>(divisor));
    return {m, m};
  }
  // Equal input and output scales: fl(s_in / s_out) = 1.
  const float m = 1.0f / static_cast<float>(divisor);
  return {m, 1.0f / (1.0f / m)};
}

const KernelSet& scalar_kernels() {
  static const KernelSet k = {gemm_s16_scalar,  requantize_scalar, depthwise_row_scalar, quantize_scalar,
                              dequantize_scalar, add_float_scalar, add_fixed_scalar,    relu_scalar,
                              max_pool2d_scalar, adaptive_avg_pool2d_scalar, lookup_scalar, mul_scalar,
                              avg_pool2d_scalar, batch_norm_scalar, gemm_u8s8_scalar, clamp_u8_scalar,
                              false,             gemm_u8s8_runs_scalar, window_columns_scalar, winograd_input_scalar,
                              winograd_output_scalar, false,   interleave4_scalar,
                              depthwise_quads_scalar, false,   interleave_planes_scalar, nullptr,
                              nullptr,           add_group_sums_scalar, int4_group_sums_scalar,
                              float_dots_scalar, weighted_rows_scalar};
  return k;
}

#if defined(QNNPY_X86_SIMD)
const KernelSet& avx2_kernels() {
  static const KernelSet k = {gemm_s16_avx2,  requantize_avx2, depthwise_row_avx2, quantize_avx2,
                              dequantize_avx2, add_float_avx2, add_fixed_avx2,    relu_avx2,
                              max_pool2d_avx2, adaptive_avg_pool2d_avx2, lookup_avx2, mul_avx2,
                              avg_pool2d_avx2, batch_norm_avx2, gemm_u8s8_avx2, clamp_u8_avx2,
                              false,           gemm_u8s8_runs_avx2, window_columns_avx2, winograd_input_avx2,
                              winograd_output_avx2, true,      interleave4_avx2,
                              depthwise_quads_avx2, true,      interleave_planes_avx2, nullptr,
                              nullptr,        add_group_sums_avx2, int4_group_sums_avx2,
                              float_dots_avx2, weighted_rows_avx2};
  return k;
}

const KernelSet& avx512_vnni_kernels() {
  static const KernelSet k = [] {
    KernelSet s = avx2_kernels();
    s.gemm_u8s8 = gemm_u8s8_avx512vnni;
    s.u8s8_exact = true;
    s.gemm_u8s8_runs = gemm_u8s8_runs_avx512vnni;
    s.winograd_faster = false;  // the direct vpdpbusd GEMM does twice the int16 rate
    s.depthwise_row = depthwise_row_avx512vnni;
    s.depthwise_quads = depthwise_quads_avx512vnni;
    s.add_float = add_float_avx512;
    s.add_fixed = add_fixed_avx512;
    s.max_pool2d = max_pool2d_avx512;
    s.adaptive_avg_pool2d = adaptive_avg_pool2d_avx512;
    s.avg_pool2d = avg_pool2d_avx512;
    s.int4_group_sums = int4_group_sums_avx512vnni;
    return s;
  }();
  return k;
}
#endif

#if defined(QNNPY_AVXVNNI_KERNELS)
// The AVX2 set with vpdpbusd on ymm: the VEX encoding where the CPU has AVX-VNNI, else the EVEX one
// (AVX-512 VL + VNNI; parse_isa admits the set only where one of the two runs).
template <VnniEncoding E>
KernelSet avx_vnni_kernels_encoded() {
  KernelSet s = avx2_kernels();
  s.gemm_u8s8 = gemm_u8s8_avxvnni<E>;
  s.u8s8_exact = true;
  s.gemm_u8s8_runs = gemm_u8s8_runs_avxvnni<E>;
  // 3x3 convs stay on the direct GEMM: vpdpbusd does twice the int16 GEMM's multiply-adds per
  // instruction, as on the avx512vnni set.
  s.winograd_faster = false;
  s.depthwise_quads = depthwise_quads_avxvnni<E>;
  return s;
}

const KernelSet& avx_vnni_kernels() {
  static const KernelSet k = cpu_has_avx_vnni() ? avx_vnni_kernels_encoded<VnniEncoding::Vex>()
                                                : avx_vnni_kernels_encoded<VnniEncoding::Evex>();
  return k;
}

namespace {

// Whether the avxvnni GEMM equals the scalar one on a small problem: 7 rows (a full tile and one row
// more), 20 columns (a full block and 4 more), every byte value, weights from -128 to 127. The set's
// VEX code runs only on CPUs with AVX-VNNI, which the project's test machines lack, so it is checked
// on the machine that runs it, once, before it is used.
bool avx_vnni_passes_self_check() {
  static const bool passes = gemm_u8s8_matches_scalar(avx_vnni_kernels().gemm_u8s8, 7, 64, 20);
  return passes;
}

}  // namespace
#endif

const KernelSet& kernel_set(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return scalar_kernels();
#if defined(QNNPY_X86_SIMD)
    case Isa::Avx2: return avx2_kernels();
    case Isa::Avx512Vnni: return avx512_vnni_kernels();
    case Isa::AmxModel: return amx_model_kernels();
#endif
#if defined(QNNPY_AMX_KERNELS)
    case Isa::Amx: return amx_kernels();
#endif
#if defined(QNNPY_AVXVNNI_KERNELS)
    case Isa::AvxVnni: return avx_vnni_kernels();
#endif
#if defined(QNNPY_ARM_SIMD)
    case Isa::Neon: return neon_kernels();
    case Isa::NeonDot: return neon_dot_kernels();
#endif
    default: break;
  }
  throw std::invalid_argument(std::string("isa '") + isa_name(isa) + "' is not built for this architecture");
}

}  // namespace qnnpy
