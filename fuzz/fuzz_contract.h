// What every fuzz target checks besides the sanitizers: bad input is refused with
// std::invalid_argument (ValueError in Python) and nothing else. Any other exception
// escaping qnnpy is a finding, reported with its message before aborting.
// With QNNPY_FUZZ_TRACE set, every refusal is printed too.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>

namespace qnnpy::fuzz {

template <class F>
void expect_clean_refusal(const char* target, F&& body) {
  try {
    body();
  } catch (const std::invalid_argument& e) {
    // The documented refusal of bad data; QNNPY_FUZZ_TRACE=1 prints it (to check what seeds reach).
    if (std::getenv("QNNPY_FUZZ_TRACE")) std::fprintf(stderr, "%s: refused: %s\n", target, e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: unexpected exception (not std::invalid_argument): %s\n", target, e.what());
    std::abort();
  }
}

[[noreturn]] inline void finding(const char* target, const char* what) {
  std::fprintf(stderr, "%s: %s\n", target, what);
  std::abort();
}

}  // namespace qnnpy::fuzz
