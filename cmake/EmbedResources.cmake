# mpes_embed_resources(<target> <namespace> <files...>): compiles text files into a static library
# exposing `std::string_view <namespace>::<stem>()` so nothing is read from the source tree at run
# time. Header: "<target>.h" in the build tree, included as "python_stubs/<target>.h" style.
function(mpes_embed_resources target ns header_dir)
  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/generated")
  set(header "${gen_dir}/${header_dir}/${target}.h")
  set(source "${gen_dir}/${target}.cpp")
  set(inputs ${ARGN})
  add_custom_command(
    OUTPUT "${header}" "${source}"
    COMMAND ${CMAKE_COMMAND} -DNS=${ns} -DHEADER=${header} -DSOURCE=${source}
            -DHEADER_INCLUDE=${header_dir}/${target}.h "-DINPUTS=${inputs}"
            -P "${PROJECT_SOURCE_DIR}/cmake/embed_resources_gen.cmake"
    DEPENDS ${inputs} "${PROJECT_SOURCE_DIR}/cmake/embed_resources_gen.cmake"
    COMMENT "Embedding ${target}"
    VERBATIM)
  add_library(${target} STATIC "${source}" "${header}")
  target_include_directories(${target} PUBLIC "${gen_dir}")
endfunction()
