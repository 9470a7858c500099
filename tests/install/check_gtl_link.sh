#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MINI5D_MPI_GTL_LINK (cmake/Mini5dMpiGtl.cmake) against a stand-in libmpi_gtl_cuda.so
# that nothing calls: linked with --as-needed, the program must still load it (Cray
# MPICH's MPI_Init looks for it in the process) and comm/mpi_gtl.cpp must find it; with
# the variable empty nothing is linked; a value naming no mpi_gtl_ library is refused.
# usage: check_gtl_link.sh WORKDIR SOURCE_DIR
set -u
work=$1 src=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work/gtl" || exit 1
echo 'int mpi_gtl_stand_in(void) { return 0; }' > "$work/gtl/stand_in.c"
cc -shared -fPIC -o "$work/gtl/libmpi_gtl_cuda.so" "$work/gtl/stand_in.c" || fail "building the stand-in GTL"
configure() {  # BUILD_DIR GTL_LINK
  cmake -S "$src/tests/install/gtl" -B "$1" -DMINI5D_SOURCE_DIR="$src" -DMINI5D_MPI_GTL_LINK="$2" \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed > "$1.log" 2>&1
}
configure "$work/linked" "-L$work/gtl;-Wl,-rpath,$work/gtl;-lmpi_gtl_cuda" || { tail -n 20 "$work/linked.log"; fail "configure with the GTL"; }
cmake --build "$work/linked" >> "$work/linked.log" 2>&1 || { tail -n 20 "$work/linked.log"; fail "build with the GTL"; }
out=$("$work/linked/gtl_probe") || fail "the linked program does not run"
[[ $out == "$work/gtl/libmpi_gtl_cuda.so" ]] || fail "with MINI5D_MPI_GTL_LINK under --as-needed, the probe found '$out'"
configure "$work/plain" "" || { tail -n 20 "$work/plain.log"; fail "configure without the GTL"; }
cmake --build "$work/plain" >> "$work/plain.log" 2>&1 || { tail -n 20 "$work/plain.log"; fail "build without the GTL"; }
out=$("$work/plain/gtl_probe") || fail "the plain program does not run"
[[ $out == none ]] || fail "without MINI5D_MPI_GTL_LINK, the probe found '$out'"
configure "$work/wrong" "-lm" && fail "MINI5D_MPI_GTL_LINK=-lm (no mpi_gtl_ library) was accepted"
grep -q "names no mpi_gtl_" "$work/wrong.log" || { tail -n 20 "$work/wrong.log"; fail "MINI5D_MPI_GTL_LINK=-lm refused without the reason"; }
echo "ok: GTL linked and found under --as-needed; none without MINI5D_MPI_GTL_LINK; -lm refused"
