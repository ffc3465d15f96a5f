# MPES_WERROR=ON (CI) turns every warning into an error.
option(MPES_WERROR "Treat warnings as errors" OFF)
function(mpes_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
    -Wno-sign-conversion -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
    -Wnull-dereference -Wimplicit-fallthrough)
  if(MPES_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
