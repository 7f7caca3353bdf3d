# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

# Installs BUILD_DIR into a fresh PREFIX with `cmake --install` and checks
# the files consumers need (and the kvrt program when CLI names it); writes
# the C struct layout file LAYOUT_FILE.
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc})")
endif()
foreach(f include/kvrt/kvrt.h include/kvrt/common.h include/kvrt/cache.h include/kvrt/model.h
          include/kvrt/context.h include/kvrt/ced.h
          ${LIBDIR}/libkvrt.so ${LIBDIR}/libkvrt.so.0 ${LIBDIR}/libkvrt.a
          ${LIBDIR}/pkgconfig/kvrt.pc ${LIBDIR}/cmake/kvrt/kvrtConfig.cmake
          ${LIBDIR}/cmake/kvrt/kvrtConfigVersion.cmake ${LIBDIR}/cmake/kvrt/kvrtTargets.cmake
          share/doc/kvrt/LICENSE share/doc/kvrt/THIRD_PARTY_NOTICES
          ${CLI})
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "the installed prefix lacks ${f}")
  endif()
endforeach()
# The exported CMake target must not drag the build machine's private
# dependencies (dnnl, mimalloc, OpenMP) into consumers.
# (IMPORTED_LINK_DEPENDENT_LIBRARIES may name them: CMake uses it only for
# -rpath-link and skips names that are not targets.)
file(STRINGS ${PREFIX}/${LIBDIR}/cmake/kvrt/kvrtTargets.cmake iface REGEX "INTERFACE_LINK_LIBRARIES")
if(iface MATCHES "DNNL::|mimalloc|OpenMP::")
  message(FATAL_ERROR "kvrt::kvrt's INTERFACE_LINK_LIBRARIES names a private dependency: ${iface}")
endif()
execute_process(COMMAND ${LAYOUT_EXE} OUTPUT_FILE ${LAYOUT_FILE} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${LAYOUT_EXE} failed")
endif()
message(STATUS "installed into ${PREFIX}")
