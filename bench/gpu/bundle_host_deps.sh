#!/usr/bin/env bash
# Packs, on a Debian 12 build machine, what a GPU host without apt (the H100 device
# machine: Ubuntu 24.04, PyTorch, no PostgreSQL, no libpqxx, no cpprest) needs to run
# kforge end to end: a mini-/usr prefix with
#   - PostgreSQL 15's server binaries and share files (lib/postgresql/15/bin: initdb, postgres...),
#   - kforge-server and the kforge CLI built here (they need no libtorch),
#   - the libpqxx / libpq headers, libraries and pkg-config files, nlohmann-json and
#     GoogleTest, so the GPU host builds the worker and the tests against its PyTorch,
#   - the shared libraries of all of the above that Ubuntu 24.04 lacks (runtime/).
# Output: .devcarry/gpu-deps.tar.xz (ignored by git; named in the device call's carry).
# Usage: bash bench/gpu/bundle_host_deps.sh [BUILD_DIR]   (after `make build`)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
out=$root/.devcarry
stage=$(mktemp -d)
prefix=$stage/deps
trap 'rm -rf "$stage"' EXIT
mkdir -p "$prefix"/{bin,runtime} "$out"

# Copies /usr/<path> into the prefix at the same relative path.
mirror() { for path in "$@"; do mkdir -p "$prefix/$(dirname "${path#/usr/}")"; cp -a "$path" "$prefix/${path#/usr/}"; done; }

multiarch=lib/x86_64-linux-gnu
mirror /usr/include/pqxx /usr/include/postgresql /usr/include/nlohmann /usr/include/gtest /usr/include/gmock \
  /usr/$multiarch/libpqxx-6.4.so /usr/$multiarch/libpqxx.so /usr/$multiarch/libpq.so /usr/$multiarch/libpq.so.5* \
  /usr/$multiarch/pkgconfig/libpqxx.pc /usr/$multiarch/pkgconfig/libpq.pc \
  /usr/$multiarch/libgtest.a /usr/$multiarch/libgtest_main.a /usr/$multiarch/libgmock.a /usr/$multiarch/libgmock_main.a \
  /usr/$multiarch/cmake/GTest /usr/share/cmake/nlohmann_json
# The .pc files name /usr: point them at the prefix (fixed up again where it lands).
sed -i 's#^prefix=/usr#prefix=@DEPS@#; s#-L/usr/lib/x86_64-linux-gnu##; s#-I/usr/include/postgresql#-I${prefix}/include/postgresql#' \
  "$prefix/$multiarch/pkgconfig/libpqxx.pc" "$prefix/$multiarch/pkgconfig/libpq.pc"

# PostgreSQL finds its share files relative to its binaries: keep /usr's layout.
mirror /usr/lib/postgresql/15 /usr/share/postgresql/15
# JIT (LLVM bitcode) stays behind: kforge's queries never need it, and it is most of the size.
rm -rf "$prefix/lib/postgresql/15/lib/bitcode" "$prefix"/lib/postgresql/15/lib/llvmjit*
cp "$build/bin/kforge-server" "$build/bin/kforge" "$prefix/bin/"

# Shared libraries those programs load, less the ones every Ubuntu 24.04 has (glibc,
# libstdc++, OpenSSL 3, zlib, compression, Kerberos, systemd, GnuTLS...): carrying those
# would put Debian's builds ahead of the host's in every process that uses runtime/.
present='^(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64|libstdc\+\+|libgcc_s|libssl|libcrypto|libz|libzstd|liblzma|liblz4|libbz2|libsystemd|libcap|libcap-ng|libgcrypt|libgpg-error|libp11-kit|libidn2|libunistring|libtasn1|libnettle|libhogweed|libgmp|libffi|libgnutls|libkrb5|libkrb5support|libk5crypto|libcom_err|libkeyutils|libaudit|libpam|libbrotlicommon|libbrotlidec|libbrotlienc|libxml2|libsasl2|libgssapi_krb5|libselinux|libpcre2-8|libuuid|libxslt|libexslt)\.so'
for exe in "$prefix"/lib/postgresql/15/bin/{postgres,initdb,pg_ctl,psql} "$prefix"/bin/kforge-server "$prefix"/bin/kforge \
           /usr/$multiarch/libpqxx-6.4.so; do
  ldd "$exe" | awk '/=>/ {print $3}'
done | sort -u | while read -r lib; do
  name=$(basename "$lib")
  [[ "$name" =~ $present ]] || cp -L "$lib" "$prefix/runtime/"
done

tar -C "$stage" -cJf "$out/gpu-deps.tar.xz" deps
echo "bundle: $out/gpu-deps.tar.xz ($(du -h "$out/gpu-deps.tar.xz" | cut -f1)); runtime libraries: $(ls "$prefix/runtime" | tr '\n' ' ')"
