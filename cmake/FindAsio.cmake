# Standalone asio (Debian: libasio-dev) is header-only and ships no CMake config. Its deprecated
# names stay available (no ASIO_NO_DEPRECATED): RESTinio uses them, and every file of the program
# must see asio compiled the same way.
find_path(ASIO_INCLUDE_DIR NAMES asio.hpp)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Asio REQUIRED_VARS ASIO_INCLUDE_DIR)
if(Asio_FOUND AND NOT TARGET Asio::asio)
  add_library(Asio::asio INTERFACE IMPORTED)
  set_target_properties(Asio::asio PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${ASIO_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "ASIO_STANDALONE")
endif()
