// SPDX-License-Identifier: BSD-3-Clause
// Empty: the translation unit the test binaries' precompiled header is built from
// (tests/support/CMakeLists.txt).
