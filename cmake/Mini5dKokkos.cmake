# SPDX-License-Identifier: BSD-3-Clause
# Finds Kokkos and Kokkos Kernels and leaves two usable targets, Kokkos::kokkos and
# Kokkos::kokkoskernels, whichever kind of install is present.
#
# Upstream Kokkos >= 4 (Spack, cluster installs) exports both targets correctly.
# Debian 12's Trilinos-flavoured packages (Kokkos 3.4.01) are broken in two ways,
# and both are repaired here and nowhere else:
#   1. KokkosKernels exports only trilinos_kokkoskernels (and trilinos_kokkoscore),
#      targets without any include directory; there is no Kokkos::kokkoskernels.
#   2. Their Kokkos::kokkos shim points INTERFACE_INCLUDE_DIRECTORIES at
#      "${prefix}/include" computed from the wrong prefix (/usr/lib/include, which does
#      not exist), so CMake refuses to generate; the headers are in
#      /usr/include/trilinos.

#
# Used by mini5d's own build and by the installed mini5dConfig.cmake. The latter sets
#   MINI5D_KOKKOS_HINTS      the Kokkos_DIR and KokkosKernels_DIR this install was built
#                            with, searched after the consumer's own paths (HINTS), so a
#                            downstream project finds the same Kokkos without being told;
#   MINI5D_KOKKOS_OPTIONAL   ON under find_package(mini5d) without REQUIRED: a missing or
#                            unusable Kokkos then sets MINI5D_KOKKOS_FOUND FALSE and
#                            MINI5D_KOKKOS_WHY instead of stopping the consumer's configure.
if(MINI5D_KOKKOS_OPTIONAL)
  set(mini5d_kokkos_mode QUIET)
else()
  set(mini5d_kokkos_mode REQUIRED)
endif()
set(MINI5D_KOKKOS_FOUND FALSE)
macro(mini5d_kokkos_fail why)
  if(MINI5D_KOKKOS_OPTIONAL)
    set(MINI5D_KOKKOS_WHY "${why}")
    return()
  endif()
  message(FATAL_ERROR "${why}")
endmacro()

find_package(Kokkos CONFIG ${mini5d_kokkos_mode} HINTS ${MINI5D_KOKKOS_HINTS})
find_package(KokkosKernels CONFIG ${mini5d_kokkos_mode} HINTS ${MINI5D_KOKKOS_HINTS})
if(NOT Kokkos_FOUND OR NOT KokkosKernels_FOUND)
  mini5d_kokkos_fail("mini5d: Kokkos and Kokkos Kernels not found (searched also ${MINI5D_KOKKOS_HINTS})")
endif()

if(TARGET Kokkos::kokkoskernels)
  set(MINI5D_KOKKOS_FLAVOUR "upstream ${Kokkos_VERSION}")
elseif(TARGET trilinos_kokkoskernels)
  find_path(MINI5D_KOKKOS_INCLUDE_DIR Kokkos_Core.hpp
            HINTS ${KokkosKernels_INCLUDE_DIRS} ${Kokkos_INCLUDE_DIRS}
            PATHS /usr/include/trilinos
            NO_DEFAULT_PATH)
  if(NOT MINI5D_KOKKOS_INCLUDE_DIR)
    string(JOIN ", " mini5d_kokkos_searched ${KokkosKernels_INCLUDE_DIRS} /usr/include/trilinos)
    mini5d_kokkos_fail("mini5d: Trilinos Kokkos found (${KokkosKernels_DIR}) but Kokkos_Core.hpp is in none of ${mini5d_kokkos_searched}")
  endif()
  if(NOT TARGET Kokkos::kokkos)
    add_library(Kokkos::kokkos INTERFACE IMPORTED)
  endif()
  # Replace, not append: the shim's own include path does not exist (break 2).
  set_target_properties(Kokkos::kokkos PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${MINI5D_KOKKOS_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "trilinos_kokkoscontainers;trilinos_kokkoscore")
  add_library(Kokkos::kokkoskernels INTERFACE IMPORTED)
  set_target_properties(Kokkos::kokkoskernels PROPERTIES
    INTERFACE_LINK_LIBRARIES "trilinos_kokkoskernels;Kokkos::kokkos")
  set(MINI5D_KOKKOS_FLAVOUR "Debian/Trilinos ${Kokkos_VERSION}")
else()
  mini5d_kokkos_fail("mini5d: found KokkosKernels at ${KokkosKernels_DIR} but it defines neither Kokkos::kokkoskernels nor trilinos_kokkoskernels")
endif()
set(MINI5D_KOKKOS_FOUND TRUE)
message(STATUS "mini5d: Kokkos ${MINI5D_KOKKOS_FLAVOUR}")
