# Install layout, man page and the Debian package (CPack). Two layouts, one rule each:
#   the Python wheel (scikit-build-core sets SKBUILD): the binaries in the Python package's bin/;
#   everything else (cmake --install, the .deb): /usr/lib/mcp-python-exec-sandbox/ for the
#   binaries, the command in /usr/bin as a symlink to the server.
# The server finds its zygote, the builds' interpreter stand-in and its network agent next to its own executable
# (/proc/self/exe resolves the symlink), so both layouts keep the binaries side by side.
set(MPES_BINARIES mcp-python-exec-sandbox mcp-python-exec-sandbox-zygote
  mcp-python-exec-sandbox-build-python mcp-python-exec-sandbox-network)

if(SKBUILD)
  install(TARGETS ${MPES_BINARIES} RUNTIME DESTINATION mcp_python_exec_sandbox_cpp/bin COMPONENT server)
  return()
endif()

include(GNUInstallDirs)
set(MPES_PRIVATE_DIR "lib/${PROJECT_NAME}")
install(TARGETS ${MPES_BINARIES} RUNTIME DESTINATION "${MPES_PRIVATE_DIR}" COMPONENT server)

set(MPES_PACKAGING_DIR "${CMAKE_BINARY_DIR}/packaging")
file(MAKE_DIRECTORY "${MPES_PACKAGING_DIR}")
file(CREATE_LINK "../${MPES_PRIVATE_DIR}/${PROJECT_NAME}" "${MPES_PACKAGING_DIR}/${PROJECT_NAME}" SYMBOLIC)
install(FILES "${MPES_PACKAGING_DIR}/${PROJECT_NAME}" DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT server)

# The man page, generated from --help and --version (help2man) plus packaging/debian/*.h2m.
find_program(MPES_HELP2MAN help2man)
if(MPES_HELP2MAN)
  set(man "${MPES_PACKAGING_DIR}/${PROJECT_NAME}.1")
  set(h2m "${PROJECT_SOURCE_DIR}/packaging/debian/${PROJECT_NAME}.h2m")
  add_custom_command(OUTPUT "${man}.gz"
    COMMAND "${MPES_HELP2MAN}" --no-info
            --name "MCP server that runs untrusted Python in a sandbox"
            --include "${h2m}" --output "${man}" "$<TARGET_FILE:mcp-python-exec-sandbox>"
    COMMAND gzip -9nf "${man}"
    DEPENDS mcp-python-exec-sandbox "${h2m}"
    COMMENT "Generating the man page (help2man)"
    VERBATIM)
  add_custom_target(man ALL DEPENDS "${man}.gz")
  install(FILES "${man}.gz" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1" COMPONENT server)
else()
  message(STATUS "help2man not found: no man page (the .deb needs one: apt install help2man)")
endif()

# The systemd unit for the HTTP transport, bound to 127.0.0.1; installed, not enabled.
install(FILES "${PROJECT_SOURCE_DIR}/packaging/debian/${PROJECT_NAME}.service"
        DESTINATION lib/systemd/system COMPONENT server)
install(FILES "${PROJECT_SOURCE_DIR}/README.md" "${PROJECT_SOURCE_DIR}/CHANGELOG.md"
        DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT server)

# The .deb: `cpack -G DEB` in a build directory (scripts/package.sh deb).
# Depends: bubblewrap (the sandbox), the host's default CPython and its shared libpython (what the
# server runs scripts with by default), and what dpkg-shlibdeps finds the binaries linked to.
set(MPES_DEB_DEPENDS "bubblewrap, python3 (>= 3.9)")
find_program(MPES_DEFAULT_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(MPES_DPKG_QUERY dpkg-query)
if(MPES_DEFAULT_PYTHON AND MPES_DPKG_QUERY)
  execute_process(
    COMMAND "${MPES_DEFAULT_PYTHON}" -c
            "import os, sysconfig; v = sysconfig.get_config_var; d = v('LIBDIR'); n = v('INSTSONAME'); print(next((p for p in (os.path.join(d, n), os.path.join(d, v('MULTIARCH') or '', n)) if os.path.exists(p)), ''))"
    OUTPUT_VARIABLE libpython OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND EXISTS "${libpython}")
    execute_process(COMMAND "${MPES_DPKG_QUERY}" --search "${libpython}"
                    OUTPUT_VARIABLE owner OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0 AND owner MATCHES "^([^:, ]+)")
      string(APPEND MPES_DEB_DEPENDS ", ${CMAKE_MATCH_1}")
    endif()
  endif()
  if(NOT MPES_DEB_DEPENDS MATCHES "libpython")
    message(STATUS "no installed package provides /usr/bin/python3's shared libpython: "
                   "the .deb will not depend on one (apt install libpython3-dev to add it)")
  endif()
endif()

set(MPES_PACKAGE_MAINTAINER "mcp-python-exec-sandbox maintainers" CACHE STRING
    "Maintainer field of the .deb")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME "${PROJECT_NAME}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "${MPES_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "MCP server that runs untrusted Python in a sandbox")
set(CPACK_PACKAGE_DESCRIPTION
    "An MCP (Model Context Protocol) server, written in C++, that runs untrusted Python for AI agents: \
sandboxed with bubblewrap, fresh namespaces per run, seccomp and resource limits, with PEP 723 inline \
dependencies, on any CPython >= 3.9 installed on the host. Every run is forked from a pre-warmed \
embedded interpreter. A drop-in replacement for the Python server of the same name.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${MPES_DEB_DEPENDS}")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# passt (pasta) and nftables give --network on runs a user-mode network each, as root.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-pip, passt, nftables")
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CHECKSUM SHA256)
include(CPack)
