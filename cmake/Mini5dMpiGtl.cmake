# SPDX-License-Identifier: BSD-3-Clause
# Cray MPICH's GPU transport layer (GTL: libmpi_gtl_cuda for NVIDIA GPUs, libmpi_gtl_hsa
# for AMD ones): with MPICH_GPU_SUPPORT_ENABLED=1, Cray MPICH's MPI_Init aborts unless
# the GTL is part of the program. Cray's compiler wrappers link it when a GPU target module is loaded; a build
# with plain compilers (Spack's, nvcc_wrapper) must name it. MINI5D_MPI_GTL_LINK holds
# the link items, e.g. "-L<gtl dir>;-Wl,-rpath,<gtl dir>;-lmpi_gtl_cuda" (or -lmpi_gtl_hsa;
# the Spack recipe passes cray-mpich's gtl_lib flags for cray-mpich +cuda or +rocm);
# empty, nothing is added.
# `mini5d version` says whether a GTL is loaded (comm/mpi_gtl.hpp): batch scripts export
# MPICH_GPU_SUPPORT_ENABLED=1 only when it is.
set(MINI5D_MPI_GTL_LINK "" CACHE STRING
    "Link items of Cray MPICH's GPU transport library (-L<dir>;-lmpi_gtl_cuda or -lmpi_gtl_hsa), empty for none")

function(mini5d_link_mpi_gtl target)
  if(NOT MINI5D_MPI_GTL_LINK)
    return()
  endif()
  if(NOT MINI5D_MPI_GTL_LINK MATCHES "(^|;)(-l)?[^;]*mpi_gtl_")
    message(FATAL_ERROR "MINI5D_MPI_GTL_LINK='${MINI5D_MPI_GTL_LINK}' names no mpi_gtl_* library")
  endif()
  # No mini5d code calls into the GTL (MPI_Init looks for it in the process), so a
  # linker that drops unreferenced libraries (--as-needed, the default on some
  # distributions) would drop it: keep it needed, and restore the linker's state after.
  target_link_libraries(${target} PRIVATE "-Wl,--push-state,--no-as-needed" ${MINI5D_MPI_GTL_LINK}
                        "-Wl,--pop-state")
  message(STATUS "mini5d: Cray MPICH GTL linked: ${MINI5D_MPI_GTL_LINK}")
endfunction()
