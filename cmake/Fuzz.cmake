# MPES_FUZZ=ON builds the libFuzzer targets in fuzz/ (clang only), with everything they link
# instrumented for coverage and ASan+UBSan. Nothing else changes; scripts/fuzz.sh drives it.
option(MPES_FUZZ "Build the libFuzzer targets (clang only)" OFF)
if(MPES_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MPES_FUZZ needs clang (e.g. CXX=clang++-14); ${CMAKE_CXX_COMPILER_ID} has no libFuzzer")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()
