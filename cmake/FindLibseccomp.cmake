# libseccomp (Debian: libseccomp-dev) ships a pkg-config file, not a CMake config.
# LIBSECCOMP_LIBRARY_NAMES may name the static archive (libseccomp.a) instead of the shared library.
find_package(PkgConfig REQUIRED)
pkg_check_modules(PC_LIBSECCOMP QUIET libseccomp)
if(NOT LIBSECCOMP_LIBRARY_NAMES)
  set(LIBSECCOMP_LIBRARY_NAMES seccomp)
endif()
find_path(LIBSECCOMP_INCLUDE_DIR NAMES seccomp.h HINTS ${PC_LIBSECCOMP_INCLUDE_DIRS})
find_library(LIBSECCOMP_LIBRARY NAMES ${LIBSECCOMP_LIBRARY_NAMES} HINTS ${PC_LIBSECCOMP_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Libseccomp REQUIRED_VARS LIBSECCOMP_LIBRARY LIBSECCOMP_INCLUDE_DIR)
if(Libseccomp_FOUND AND NOT TARGET Libseccomp::seccomp)
  add_library(Libseccomp::seccomp UNKNOWN IMPORTED)
  set_target_properties(Libseccomp::seccomp PROPERTIES
    IMPORTED_LOCATION "${LIBSECCOMP_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LIBSECCOMP_INCLUDE_DIR}")
endif()
