# SPDX-License-Identifier: BSD-3-Clause
# `cmake --install`: the programs (mini5d, mini5d-plan), the libraries and headers, and
# an exported package so that downstream tools can write
#     find_package(mini5d 0.1 REQUIRED)
#     target_link_libraries(tool PRIVATE mini5d::mini5d)       # and/or mini5d::mini5d_plan
# with CMAKE_PREFIX_PATH (or mini5d_DIR) pointing at the install. The package config
# finds mini5d's dependencies again (Kokkos through the same Mini5dKokkos.cmake, which
# also repairs Debian's Kokkos there). tests/install checks it with a small project
# built against a staged install.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(MINI5D_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/mini5d)

# Link-only helpers of the static libraries must be in the export set too; they carry
# no usage requirements to consumers (PRIVATE), only their names. The planner is one
# library per folder of src/mini5d/plan and mini5d_plan, the interface library over
# them all (MINI5D_PLAN_LIBRARIES, src/mini5d/plan/CMakeLists.txt).
set(mini5d_export_targets ${MINI5D_PLAN_LIBRARIES} mini5d_deck mini5d_rules mini5d_warnings)
foreach(exe mini5d-app mini5d-plan)
  if(TARGET ${exe})
    # Keep the paths of libraries outside the system's (Debian's MPICH HDF5, Spack's
    # prefixes), so the installed programs run without LD_LIBRARY_PATH.
    set_target_properties(${exe} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
    install(TARGETS ${exe} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
if(NOT MINI5D_PLAN_ONLY)
  list(APPEND mini5d_export_targets mini5d mini5d_tuning)
endif()
install(TARGETS ${mini5d_export_targets} EXPORT mini5dTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/mini5d DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(EXPORT mini5dTargets NAMESPACE mini5d:: DESTINATION ${MINI5D_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/mini5dConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mini5dConfig.cmake INSTALL_DESTINATION ${MINI5D_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mini5dConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mini5dConfig.cmake ${PROJECT_BINARY_DIR}/mini5dConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/Mini5dKokkos.cmake
        DESTINATION ${MINI5D_INSTALL_CMAKEDIR})
if(MINI5D_NATIVE)
  # Said at install time, where the ISA starts to travel.
  install(CODE "message(WARNING \"mini5d was built with -march=native (MINI5D_NATIVE=ON): the \
installed programs and libraries need the build host's CPU; configure with -DMINI5D_NATIVE=OFF for an install \
that other nodes run\")")
endif()
