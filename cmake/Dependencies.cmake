# Every library comes from Debian's archive and is found with find_package.
#
# MPES_STATIC_DEPS=ON (the Python wheel) leaves the binaries needing only what every glibc Linux
# has (libc, libstdc++, libgcc_s): libseccomp and libcrypto are linked from their static archives
# and spdlog, fmt and toml++ are used header-only. The zygote is bind-mounted alone into its
# sandbox, so it can carry no shared library of its own; and Debian's libspdlog.so needs a newer
# libstdc++ (GLIBCXX_3.4.30) than our own code does, which would narrow the wheel's platform tag.
option(MPES_STATIC_DEPS "Link libseccomp and libcrypto statically, use spdlog/fmt/toml++ header-only (the wheel)" OFF)

find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
if(MPES_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
find_package(Asio REQUIRED)
find_package(Threads REQUIRED)
# RESTinio (librestinio-dev) serves the Streamable HTTP transport on the server's own io_context,
# with http-parser (libhttp-parser-dev) underneath and fmt. Its CMake target would also define
# ASIO_DISABLE_STD_STRING_VIEW in the files that use it only, compiling asio two ways in one
# program; mpes_restinio takes just its headers and libraries (static http-parser and header-only
# fmt for the wheel).
find_package(restinio REQUIRED)  # its version file accepts exact versions only (0.6.16)
find_package(fmt REQUIRED)
if(MPES_STATIC_DEPS)
  find_library(HTTP_PARSER_LIBRARY NAMES libhttp_parser.a REQUIRED)
  set(MPES_FMT_TARGET fmt::fmt-header-only)
else()
  find_library(HTTP_PARSER_LIBRARY NAMES http_parser REQUIRED)
  set(MPES_FMT_TARGET fmt::fmt)
endif()
get_target_property(MPES_RESTINIO_INCLUDES restinio::restinio INTERFACE_INCLUDE_DIRECTORIES)
add_library(mpes_restinio INTERFACE)
target_include_directories(mpes_restinio SYSTEM INTERFACE ${MPES_RESTINIO_INCLUDES})
target_link_libraries(mpes_restinio INTERFACE ${MPES_FMT_TARGET} ${HTTP_PARSER_LIBRARY})

# libnl-route (libnl-route-3-dev): the routing-socket calls that link each run's network
# namespace into its zygote's user-mode network (sandbox/netlink.h). No CMake config of its own:
# its headers from pkg-config, its libraries static for the wheel.
find_package(PkgConfig REQUIRED)
pkg_check_modules(MPES_LIBNL REQUIRED libnl-3.0 libnl-route-3.0)
add_library(mpes_libnl INTERFACE)
target_include_directories(mpes_libnl SYSTEM INTERFACE ${MPES_LIBNL_INCLUDE_DIRS})
if(MPES_STATIC_DEPS)
  find_library(MPES_LIBNL_ROUTE_A NAMES libnl-route-3.a REQUIRED)
  find_library(MPES_LIBNL_A NAMES libnl-3.a REQUIRED)
  target_link_libraries(mpes_libnl INTERFACE ${MPES_LIBNL_ROUTE_A} ${MPES_LIBNL_A} Threads::Threads m)
else()
  target_link_libraries(mpes_libnl INTERFACE ${MPES_LIBNL_LINK_LIBRARIES})
endif()

if(NOT MPES_STATIC_DEPS)
  find_package(spdlog REQUIRED)
  find_package(tomlplusplus REQUIRED)
  find_package(Libseccomp REQUIRED)
  find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)
  return()
endif()

# spdlog over fmt, both header-only (Debian's spdlog::spdlog_header_only still links libfmt.so),
# under the target names the rest of the build links.
find_path(MPES_SPDLOG_INCLUDE_DIR NAMES spdlog/spdlog.h REQUIRED)
add_library(spdlog::spdlog INTERFACE IMPORTED)
set_target_properties(spdlog::spdlog PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${MPES_SPDLOG_INCLUDE_DIR}"
  INTERFACE_COMPILE_DEFINITIONS "SPDLOG_FMT_EXTERNAL"
  INTERFACE_LINK_LIBRARIES "fmt::fmt-header-only;Threads::Threads")

# toml++ is header-only unless told otherwise (Debian's config file links libtomlplusplus.so).
find_path(MPES_TOMLPLUSPLUS_INCLUDE_DIR NAMES toml++/toml.h REQUIRED)
add_library(tomlplusplus::tomlplusplus INTERFACE IMPORTED)
set_target_properties(tomlplusplus::tomlplusplus PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${MPES_TOMLPLUSPLUS_INCLUDE_DIR}"
  INTERFACE_COMPILE_DEFINITIONS "TOML_HEADER_ONLY=1")

set(LIBSECCOMP_LIBRARY_NAMES libseccomp.a)
find_package(Libseccomp REQUIRED)
set(OPENSSL_USE_STATIC_LIBS TRUE)
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)
